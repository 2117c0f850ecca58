// Packing regions for kernels::cuda::crop_resize_normalize (see gpu_augment.h).
#include "data/gpu_augment.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#ifdef HAARGRAD_WITH_CUDA
#include "kernels/cuda/context.h"
#endif

namespace hg::data {

void check_gpu_augment(const TransformOptions& o) {
  HG_CHECK(o.auto_augment.empty(), "gpu_augment: RandAugment (aa '", o.auto_augment,
           "') runs on the CPU only; set aa to '' or gpu_augment to false");
  const bool jitter =
      std::any_of(o.color_jitter.begin(), o.color_jitter.end(), [](double s) { return s > 0; });
  HG_CHECK(!jitter || !o.train, "gpu_augment: color_jitter ", color_jitter_text(o.color_jitter),
           " runs on the CPU only; set color_jitter to 0 or gpu_augment to false");
  HG_CHECK(o.random_erasing.probability <= 0 || !o.train, "gpu_augment: random erasing (reprob ",
           o.random_erasing.probability, ") runs on the CPU only; set reprob to 0 or gpu_augment to false");
}

kernels::CropResizeItem crop_item(const CropPlan& plan, int64_t height, int64_t width, int64_t offset) {
  const CropBox& b = plan.box;
  HG_CHECK(b.w > 0 && b.h > 0 && b.x < static_cast<double>(width) && b.y < static_cast<double>(height) &&
               b.x + b.w > 0 && b.y + b.h > 0,
           "gpu augment: box (", b.x, ", ", b.y, ", ", b.w, ", ", b.h, ") misses the ", height, "x", width, " image");
  HG_CHECK(height > 0 && width > 0 && height < (1 << 30) && width < (1 << 30), "gpu augment: bad image size ", height,
           "x", width);
  kernels::CropResizeItem it;
  it.offset = offset;
  it.height = static_cast<int32_t>(height);
  it.width = static_cast<int32_t>(width);
  it.box_x = b.x;
  it.box_y = b.y;
  it.box_w = b.w;
  it.box_h = b.h;
  it.flip = plan.flip ? 1 : 0;
  it.interp = static_cast<int32_t>(plan.interp);
  set_padding(it, plan.pad);
  return it;
}

void set_padding(kernels::CropResizeItem& it, const CropPadding& pad) {
  HG_CHECK(pad.top >= 0 && pad.bottom >= 0 && pad.left >= 0 && pad.right >= 0 &&
               pad.top < (1 << 30) && pad.bottom < (1 << 30) && pad.left < (1 << 30) &&
               pad.right < (1 << 30),
           "gpu augment: bad padding (top ", pad.top, ", bottom ", pad.bottom, ", left ", pad.left,
           ", right ", pad.right, ")");
  it.pad_top = static_cast<int32_t>(pad.top);
  it.pad_bottom = static_cast<int32_t>(pad.bottom);
  it.pad_left = static_cast<int32_t>(pad.left);
  it.pad_right = static_cast<int32_t>(pad.right);
}

void resample_on_gpu(const Tensor& pixels, const std::vector<kernels::CropResizeItem>& items, const Transform& t,
                     Tensor& out) {
#ifndef HAARGRAD_WITH_CUDA
  (void)pixels, (void)items, (void)t, (void)out;
  throw Error("resample_on_gpu: this build has no CUDA backend (configure with -DHAARGRAD_CUDA=ON)");
#else
  HG_CHECK(cuda::available(), "resample_on_gpu: no usable CUDA device");
  const TransformOptions& o = t.options();
  const auto C = static_cast<int64_t>(o.mean.size());
  const auto N = static_cast<int64_t>(items.size());
  HG_CHECK(C >= 1 && C <= 4, "resample_on_gpu: ", C, " channels (1 to 4 supported)");
  HG_CHECK(pixels.device() == Device::cuda && pixels.dtype() == DType::u8 && pixels.is_contiguous(),
           "resample_on_gpu: pixels must be a contiguous CUDA u8 tensor");
  HG_CHECK(out.device() == Device::cuda && (out.dtype() == DType::f32 || out.dtype() == DType::bf16) &&
               out.is_contiguous() && out.shape() == Shape({N, o.img_size, o.img_size, C}),
           "resample_on_gpu: out must be a contiguous CUDA f32/bf16 tensor (", N, ", ", o.img_size, ", ", o.img_size,
           ", ", C, "), got ", shape_str(out.shape()), " ", dtype_name(out.dtype()));
  for (int64_t i = 0; i < N; ++i) {
    const kernels::CropResizeItem& it = items[size_t(i)];
    HG_CHECK(it.height > 0 && it.width > 0 && it.offset >= 0 &&
                 it.offset + int64_t(it.height) * it.width * C <= pixels.numel(),
             "resample_on_gpu: item ", i, " (", it.height, "x", it.width, "x", C, " at byte ", it.offset,
             ") lies outside the ", pixels.numel(), " bytes of pixels");
    HG_CHECK(it.interp >= 0 && it.interp <= 2, "resample_on_gpu: item ", i, " has filter ", it.interp);
    HG_CHECK(it.pad_top >= 0 && it.pad_bottom >= 0 && it.pad_left >= 0 && it.pad_right >= 0 &&
                 int64_t(it.pad_top) + it.pad_bottom <= o.img_size &&
                 int64_t(it.pad_left) + it.pad_right <= o.img_size,
             "resample_on_gpu: item ", i, " has padding (top ", it.pad_top, ", bottom ",
             it.pad_bottom, ", left ", it.pad_left, ", right ", it.pad_right,
             ") that does not fit the ", o.img_size, "x", o.img_size, " output");
    HG_CHECK(std::isfinite(it.box_x) && std::isfinite(it.box_y) && std::isfinite(it.box_w) &&
                 std::isfinite(it.box_h),
             "resample_on_gpu: item ", i, " has a box that is not finite");
    HG_CHECK(it.box_w > 0 && it.box_h > 0 && it.box_x < it.width && it.box_y < it.height && it.box_x + it.box_w > 0 &&
                 it.box_y + it.box_h > 0,
             "resample_on_gpu: item ", i, " box misses its ", it.height, "x", it.width, " image");
  }
  if (N == 0) return;
  int64_t max_taps = 1;
  for (const kernels::CropResizeItem& it : items)
    max_taps = std::max(max_taps, kernels::crop_resize_max_taps(it, o.img_size));
  // Through page-locked memory: the upload is queued; one from pageable memory would first wait for
  // everything queued on the training stream (a host sync per batch).
  const auto item_bytes = static_cast<int64_t>(items.size() * sizeof(kernels::CropResizeItem));
  Tensor item_host = Tensor::empty_pinned({item_bytes}, DType::u8);
  std::memcpy(item_host.data_ptr(), items.data(), static_cast<size_t>(item_bytes));
  const Tensor item_t = item_host.to(Device::cuda);
  kernels::ChannelAffine affine;
  for (int64_t c = 0; c < C; ++c) {
    affine.gain[c] = static_cast<float>(1.0 / (255.0 * o.std[size_t(c)]));
    affine.bias[c] = static_cast<float>(-o.mean[size_t(c)] / o.std[size_t(c)]);
  }
  kernels::cuda::crop_resize_normalize(
      static_cast<const uint8_t*>(pixels.data_ptr()),
      static_cast<const kernels::CropResizeItem*>(item_t.data_ptr()), N, C, o.img_size, max_taps,
      affine, out.data_ptr(), out.dtype());
#endif
}

Tensor augment_on_gpu(const std::vector<const Image*>& images, const std::vector<CropPlan>& plans, const Transform& t,
                      DType dtype) {
#ifndef HAARGRAD_WITH_CUDA
  (void)images, (void)plans, (void)t, (void)dtype;
  throw Error("augment_on_gpu: this build has no CUDA backend (configure with -DHAARGRAD_CUDA=ON)");
#else
  HG_CHECK(cuda::available(), "augment_on_gpu: no usable CUDA device");
  HG_CHECK(images.size() == plans.size(), "augment_on_gpu: ", images.size(), " images but ", plans.size(), " plans");
  HG_CHECK(dtype == DType::f32 || dtype == DType::bf16, "augment_on_gpu: dtype must be f32 or bf16, got ",
           dtype_name(dtype));
  const TransformOptions& o = t.options();
  const auto C = static_cast<int64_t>(o.mean.size());
  const auto N = static_cast<int64_t>(images.size());
  std::vector<kernels::CropResizeItem> items;
  items.reserve(images.size());
  int64_t bytes = 0;
  for (int64_t i = 0; i < N; ++i) {
    const Image& img = *images[size_t(i)];
    HG_CHECK(img.channels == C && img.height > 0 && img.width > 0 &&
                 img.pixels.size() == static_cast<size_t>(img.height * img.width * C),
             "augment_on_gpu: image ", i, " is ", img.height, "x", img.width, "x", img.channels, " with ",
             img.pixels.size(), " bytes; expected ", C, " channels");
    items.push_back(crop_item(plans[size_t(i)], img.height, img.width, bytes));
    bytes += static_cast<int64_t>(img.pixels.size());
  }
  // One page-locked staging buffer and one copy of the pixels.
  Tensor host = Tensor::empty_pinned({std::max<int64_t>(bytes, 1)}, DType::u8);
  auto* dst = static_cast<uint8_t*>(host.data_ptr());
  for (int64_t i = 0; i < N; ++i)
    std::memcpy(dst + items[size_t(i)].offset, images[size_t(i)]->pixels.data(), images[size_t(i)]->pixels.size());
  const Tensor pixels = host.to(Device::cuda);
  Tensor out = Tensor::empty({N, o.img_size, o.img_size, C}, dtype, Device::cuda);
  resample_on_gpu(pixels, items, t, out);
  return out;
#endif
}

}  // namespace hg::data
