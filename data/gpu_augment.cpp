// Packing regions for kernels::cuda::crop_resize_normalize (see gpu_augment.h).
#include "data/gpu_augment.h"

#include <cstring>

#include "kernels/crop_resize.h"
#ifdef HAARGRAD_WITH_CUDA
#include "kernels/cuda/context.h"
#endif

namespace hg::data {

Tensor augment_on_gpu(const std::vector<const Image*>& images, const std::vector<CropPlan>& plans, const Transform& t,
                      DType dtype) {
#ifndef HAARGRAD_WITH_CUDA
  (void)images, (void)plans, (void)t, (void)dtype;
  throw Error("augment_on_gpu: this build has no CUDA backend (configure with -DHAARGRAD_CUDA=ON)");
#else
  HG_CHECK(cuda::available(), "augment_on_gpu: no usable CUDA device");
  HG_CHECK(images.size() == plans.size(), "augment_on_gpu: ", images.size(), " images but ", plans.size(), " plans");
  const TransformOptions& o = t.options();
  const auto C = static_cast<int64_t>(o.mean.size());
  HG_CHECK(C >= 1 && C <= 4, "augment_on_gpu: ", C, " channels (1 to 4 supported)");
  const auto N = static_cast<int64_t>(images.size());
  std::vector<kernels::CropResizeItem> items(static_cast<size_t>(N));
  int64_t bytes = 0;
  for (int64_t i = 0; i < N; ++i) {
    const Image& img = *images[size_t(i)];
    HG_CHECK(img.channels == C && img.height > 0 && img.width > 0 &&
                 img.pixels.size() == static_cast<size_t>(img.height * img.width * C),
             "augment_on_gpu: image ", i, " is ", img.height, "x", img.width, "x", img.channels, " with ",
             img.pixels.size(), " bytes; expected ", C, " channels");
    const CropBox& b = plans[size_t(i)].box;
    HG_CHECK(b.w > 0 && b.h > 0, "augment_on_gpu: empty box for image ", i);
    auto& it = items[size_t(i)];
    it.offset = bytes;
    it.height = static_cast<int32_t>(img.height);
    it.width = static_cast<int32_t>(img.width);
    it.box_x = b.x;
    it.box_y = b.y;
    it.box_w = b.w;
    it.box_h = b.h;
    it.flip = plans[size_t(i)].flip ? 1 : 0;
    bytes += static_cast<int64_t>(img.pixels.size());
  }
  // One page-locked staging buffer, one copy of the pixels and one of the items.
  Tensor host = Tensor::empty_pinned({std::max<int64_t>(bytes, 1)}, DType::u8);
  auto* dst = static_cast<uint8_t*>(host.data_ptr());
  for (int64_t i = 0; i < N; ++i)
    std::memcpy(dst + items[size_t(i)].offset, images[size_t(i)]->pixels.data(), images[size_t(i)]->pixels.size());
  const Tensor pixels = host.to(Device::cuda);
  const Tensor item_t = Tensor::from_bytes({static_cast<int64_t>(items.size() * sizeof(kernels::CropResizeItem))},
                                           DType::u8, items.data(), Device::cuda);
  kernels::ChannelAffine affine;
  for (int64_t c = 0; c < C; ++c) {
    HG_CHECK(o.std[size_t(c)] > 0, "augment_on_gpu: std[", c, "] must be > 0");
    affine.gain[c] = static_cast<float>(1.0 / (255.0 * o.std[size_t(c)]));
    affine.bias[c] = static_cast<float>(-o.mean[size_t(c)] / o.std[size_t(c)]);
  }
  Tensor out = Tensor::empty({N, o.img_size, o.img_size, C}, dtype, Device::cuda);
  kernels::cuda::crop_resize_normalize(static_cast<const uint8_t*>(pixels.data_ptr()),
                                       static_cast<const kernels::CropResizeItem*>(item_t.data_ptr()), N, C,
                                       o.img_size, affine, out.data_ptr(), dtype);
  return out;
#endif
}

}  // namespace hg::data
