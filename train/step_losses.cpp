// Per-step losses read back in groups (see step_losses.h).
#include "train/step_losses.h"

#include "core/autograd.h"
#include "core/memory.h"

namespace hg::train {

StepLosses::StepLosses(int64_t capacity, Device device) : capacity_(capacity) {
  HG_CHECK(capacity >= 1, "StepLosses: capacity must be >= 1, got ", capacity);
  memory::CategoryScope scope(Category::workspace);
  buffer_ = Tensor::empty({capacity}, DType::f32, device);
  // read back into page-locked memory: a direct copy from the GPU (no staging through a bounce
  // buffer), made once
  if (device == Device::cuda) host_ = Tensor::empty_pinned({capacity}, DType::f32);
}

void StepLosses::add(const Tensor& loss, int64_t step, int64_t images) {
  HG_CHECK(!full(), "StepLosses: ", capacity_, " steps pending; take() them first");
  HG_CHECK(loss.numel() == 1 && loss.dtype() == DType::f32 && loss.device() == buffer_.device(),
           "StepLosses: the loss must be one f32 element on ", device_name(buffer_.device()),
           ", got ", loss.describe());
  autograd::NoGradGuard no_grad;  // a copy of the value, not part of the step's graph
  const auto k = pending();
  buffer_.slice(0, k, k + 1).copy_(loss.reshape({1}));  // queued in stream order: no wait
  steps_.push_back(step);
  images_.push_back(images);
}

StepLosses::Read StepLosses::take() {
  Read r;
  if (steps_.empty()) return r;
  const int64_t n = pending();
  const Tensor losses = buffer_.slice(0, 0, n);
  if (host_.defined()) host_.slice(0, 0, n).copy_(losses);  // waits for those steps
  const float* v = (host_.defined() ? host_ : buffer_).data<float>();
  r.losses.assign(v, v + n);
  r.steps = std::move(steps_);
  r.images = std::move(images_);
  steps_.clear();
  images_.clear();
  return r;
}

}  // namespace hg::train
