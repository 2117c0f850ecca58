// Model EMA (see model_ema.h).
#include "train/model_ema.h"

#include <cmath>
#include <cstring>

#include "core/autograd.h"
#include "kernels/ema.h"
#include "models/checkpoint.h"

namespace hg::train {

ModelEma::ModelEma(const ConvNeXt& model, double decay, bool warmup)
    : decay_(decay), warmup_(warmup) {
  HG_CHECK(decay >= 0 && decay <= 1, "model EMA: model_ema_decay must be in [0, 1], got ", decay);
  HG_CHECK(model.dtype == DType::f32, "model EMA: needs an f32 model, got ",
           dtype_name(model.dtype));
  ema_ = std::make_unique<ConvNeXt>(model.config, 0, DType::f32, model.device);
  ema_->skip_level_advice();  // the model says it (the EMA's evaluation would say it again)
  const std::vector<ParamRef> src = model.named_tensors(), dst = ema_->named_tensors();
  std::vector<float*> ema_ptrs;
  std::vector<const float*> model_ptrs;
  std::vector<int64_t> numel;
  for (size_t i = 0; i < src.size(); ++i) {
    HG_CHECK(src[i].tensor.dtype() == DType::f32 && src[i].tensor.is_contiguous(),
             "model EMA: tensor ", src[i].name, " must be contiguous f32, got ",
             src[i].tensor.describe());
    model_ptrs_.push_back(src[i].tensor.data_ptr());
    ema_ptrs.push_back(dst[i].tensor.data<float>());
    model_ptrs.push_back(src[i].tensor.data<float>());
    numel.push_back(src[i].tensor.numel());
  }
  set(model);
  if (model.device == Device::cuda) {
    const std::vector<kernels::EmaChunk> chunks = kernels::ema_chunks(ema_ptrs, model_ptrs, numel);
    num_chunks_ = static_cast<int64_t>(chunks.size());
    const int64_t bytes = num_chunks_ * static_cast<int64_t>(sizeof(kernels::EmaChunk));
    chunk_table_ = Tensor::from_bytes({bytes}, DType::u8, chunks.data(), Device::cuda);
  }
}

double ModelEma::decay_at(int64_t step) const {
  const int64_t s = std::max<int64_t>(0, step - 1);
  if (s <= 0) return 0.0;
  if (!warmup_) return decay_;
  const double d = 1.0 - std::pow(1.0 + static_cast<double>(s), -2.0 / 3.0);
  return std::clamp(d, 0.0, decay_);
}

void ModelEma::update(const ConvNeXt& model, int64_t step) {
  const std::vector<ParamRef> src = model.named_tensors(), dst = ema_->named_tensors();
  HG_CHECK(src.size() == model_ptrs_.size(), "model EMA: the model has ", src.size(),
           " tensors, the EMA ", model_ptrs_.size());
  for (size_t i = 0; i < src.size(); ++i)
    HG_CHECK(src[i].tensor.data_ptr() == model_ptrs_[i], "model EMA: tensor ", src[i].name,
             " moved since the EMA was made from this model");
  const auto weight = static_cast<float>(1.0 - decay_at(step));
  if (model.device == Device::cuda) {
    kernels::cuda::ema_update(static_cast<const kernels::EmaChunk*>(chunk_table_.data_ptr()),
                              num_chunks_, weight);
    return;
  }
  for (size_t i = 0; i < src.size(); ++i)
    kernels::cpu::ema_update(dst[i].tensor.data<float>(), src[i].tensor.data<float>(),
                             src[i].tensor.numel(), weight);
}

void ModelEma::set(const ConvNeXt& model) {
  autograd::NoGradGuard no_grad;
  const std::vector<ParamRef> src = model.named_tensors(), dst = ema_->named_tensors();
  HG_CHECK(src.size() == dst.size(), "model EMA: the model has ", src.size(), " tensors, the EMA ",
           dst.size());
  for (size_t i = 0; i < src.size(); ++i) {
    Tensor d = dst[i].tensor;
    d.copy_(src[i].tensor);
  }
}

}  // namespace hg::train
