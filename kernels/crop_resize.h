// Batched crop + resize + flip + normalise of 8-bit images into one NHWC batch on the GPU: the
// train / eval transform of data/transforms.h (Transform::apply_plan) for a whole batch in one
// kernel, so the loader can hand over uint8 crops (a quarter of the bytes of fp32) and the GPU does
// the rest.
//
// For item n, output pixel (oy, ox) and channel c:
//   out[n, oy, flip ? S-1-ox : ox, c] = gain[c] * sum_{y,x} wy(y) wx(x) img_n[y, x, c] + bias[c]
// with the antialiased filters of data/transforms.cpp: input pixel j (center j + 0.5) weighs
// f((j + 0.5 - center) / stretch), center = box.x + (ox + 0.5) * box.w / S, stretch = max(box.w /
// S, 1), f = triangle (bilinear, support 1) or Keys' cubic a = -0.5 (bicubic, support 2), weights
// renormalised over the pixels inside the image (same in y); nearest takes pixel floor(center).
// An output column ox < pad_left or >= S - pad_right, or row oy < pad_top or >= S - pad_bottom (ox
// before the flip), sums no pixel: out = bias[c], the zero pixel normalised (torchvision's
// CenterCrop padding of an image smaller than the crop, evaluation with crop_pct > 1). Tap
// positions and weights in double, sums in float, like the CPU reference; the GPU result equals
// Transform::apply_plan up to float summation order (tests/gpu/crop_resize_test.cpp: < 1e-4).
// The CUDA version computes each output row's and column's taps once per batch (a weight table of
// crop_resize_max_taps entries per row / column), not once per output pixel.
//
// Shapes: pixels = the N images packed, item n at byte offset items[n].offset, (height, width, C)
// row-major; out (N, S, S, C) dense, f32 or bf16 (rounded to nearest even), OVERWRITTEN. C in 1..4.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/dtype.h"

namespace hg::kernels {

/// One image of a batch: where its pixels are, which box of them to resample, and the flip.
struct CropResizeItem {
  int64_t offset = 0;             ///< bytes from the start of the packed pixels
  int32_t height = 0, width = 0;  ///< of the stored image (a decoded region, maybe at reduced scale)
  double box_x = 0, box_y = 0, box_w = 0, box_h = 0;  ///< source box in the stored image's pixels
  int32_t flip = 0;               ///< mirror the output left-right
  int32_t interp = 1;             ///< filter: 0 nearest, 1 bilinear, 2 bicubic (data::Interp's order)
  /// output pixels on each side left at the zero pixel (data::CropPadding; sides before the flip)
  int32_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
};

/// Per-channel affine after resampling: out = pixel * gain[c] + bias[c] (pixel in [0, 255]).
struct ChannelAffine {
  float gain[4] = {1, 1, 1, 1};
  float bias[4] = {0, 0, 0, 0};
};

/// The most input pixels one output pixel of `it` reads along either axis at output side S: at most
/// 2 * support + 2 for a filter of support (1 bilinear, 2 bicubic) * max(box side / S, 1); 1 for
/// nearest. Sizes the CUDA kernel's weight table.
inline int64_t crop_resize_max_taps(const CropResizeItem& it, int64_t S) {
  if (it.interp == 0) return 1;
  const double radius = it.interp == 2 ? 2.0 : 1.0;
  const double scale = std::max(it.box_w, it.box_h) / static_cast<double>(S);
  return static_cast<int64_t>(std::ceil(2 * radius * std::max(scale, 1.0))) + 2;
}

#ifdef HAARGRAD_WITH_CUDA
namespace cuda {
/// Device pointers `pixels`, `items` (N entries), `out` (N*S*S*C of `out_dtype`: f32 or bf16). Runs
/// on the current stream. max_taps: at least crop_resize_max_taps of every item (the weight table's
/// row length; a workspace of N * 2S * (max_taps + 2) * 4 bytes). Throws hg::Error for C
/// outside 1..4, S < 1, max_taps < 1 or another out_dtype. Items' boxes must overlap their images
/// and interp be 0..2 (checked by the host caller, data/gpu_augment.cpp).
void crop_resize_normalize(const uint8_t* pixels, const CropResizeItem* items, int64_t N, int64_t C,
                           int64_t S, int64_t max_taps, const ChannelAffine& affine, void* out,
                           DType out_dtype);
}  // namespace cuda
#endif

}  // namespace hg::kernels
