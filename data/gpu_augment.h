// The GPU side of the transform: a batch of 8-bit images (decoded regions on the host, or pixels
// already on the GPU from nvJPEG) and their crop plans becomes one normalised NHWC batch on the GPU
// (kernels/crop_resize.h), so only uint8 pixels cross the bus. The CPU transform (data/transforms.h,
// Transform::apply_plan) is the reference it is tested against: equal within 1e-4 in f32 (float
// summation order), within bf16's rounding (2^-8 relative) in bf16.
#pragma once

#include <vector>

#include "core/tensor.h"
#include "data/transforms.h"
#include "kernels/crop_resize.h"

namespace hg::data {

/// Throws hg::Error naming the config key when `o` asks for something the GPU transform lacks:
/// RandAugment (aa), ColorJitter (color_jitter) or random erasing (reprob) run on the CPU only.
void check_gpu_augment(const TransformOptions& o);

/// images[i] (channels == t's mean/std length, at most 4) resampled from plans[i].box (in
/// images[i]'s pixels) with plans[i].interp, padded per plans[i].pad, flipped per plans[i].flip,
/// normalised with t's mean/std: a CUDA tensor (N, img_size, img_size, C) of `dtype` (f32 or bf16).
/// Throws hg::Error for mismatched inputs, a box that misses its image, or when the CUDA build or a
/// GPU is missing.
Tensor augment_on_gpu(const std::vector<const Image*>& images, const std::vector<CropPlan>& plans,
                      const Transform& t, DType dtype = DType::f32);

/// As augment_on_gpu, from pixels already on the GPU: `pixels` a CUDA u8 tensor holding every item's
/// (height, width, C) image at its byte offset. Writes `out`, a contiguous CUDA tensor (N, img_size,
/// img_size, C) of f32 or bf16, on the current (training) stream. Throws hg::Error when an item's
/// image lies outside `pixels`, its box misses the image, its filter is unknown, or out's shape differs.
void resample_on_gpu(const Tensor& pixels, const std::vector<kernels::CropResizeItem>& items, const Transform& t,
                     Tensor& out);

/// The kernel item for `plan` on an image of (height, width) stored at byte `offset` (its padding
/// included).
kernels::CropResizeItem crop_item(const CropPlan& plan, int64_t height, int64_t width, int64_t offset);
/// Copies `pad` (a plan's padding) into the kernel item. Throws hg::Error for a negative side.
void set_padding(kernels::CropResizeItem& it, const CropPadding& pad);

}  // namespace hg::data
