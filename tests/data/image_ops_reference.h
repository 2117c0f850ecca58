// The 8-bit ops as first written: plain per-pixel loops in double / float, the oracle the fast ops of
// data/image_ops.cpp must match bit for bit (image_ops_fast_test.cpp). Same signatures and semantics
// as data/image_ops.h; kept readable, never optimised.
#pragma once

#include "data/image_ops.h"

namespace hg::data::reference {

Image auto_contrast(const Image& img);
Image equalize(const Image& img);
Image invert(const Image& img);
Image posterize(const Image& img, int bits);
Image solarize(const Image& img, int threshold);
Image solarize_add(const Image& img, int add, int threshold = 128);
Image adjust_color(const Image& img, double factor);
Image adjust_contrast(const Image& img, double factor);
Image adjust_brightness(const Image& img, double factor);
Image adjust_sharpness(const Image& img, double factor);
Image affine(const Image& img, const std::array<double, 6>& m, Interp interp, const Fill& fill);

/// Transform's 8-bit rounding of a resampled value: lround, clamped to [0, 255].
uint8_t round_to_u8(float v);

}  // namespace hg::data::reference
