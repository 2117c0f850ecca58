// The GPU side of the transform: a batch of decoded 8-bit regions and their crop plans becomes one
// normalised NHWC batch on the GPU (kernels/crop_resize.h), so only uint8 pixels cross the bus. The
// CPU transform (data/transforms.h, Transform::apply_plan) is the reference it is tested against.
#pragma once

#include <vector>

#include "core/tensor.h"
#include "data/transforms.h"

namespace hg::data {

/// images[i] (channels == t's mean/std length, at most 4) resampled from plans[i].box (in images[i]'s
/// pixels), flipped per plans[i].flip, normalised with t's mean/std: a CUDA tensor (N, img_size,
/// img_size, C) of `dtype` (f32 or bf16). Equals Transform::apply_plan per image within 1e-4 (f32).
/// Throws hg::Error for mismatched inputs, or when the CUDA build or a GPU is missing.
Tensor augment_on_gpu(const std::vector<const Image*>& images, const std::vector<CropPlan>& plans,
                      const Transform& t, DType dtype = DType::f32);

}  // namespace hg::data
