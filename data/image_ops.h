// 8-bit image operations with PIL's semantics: the building blocks of RandAugment and ColorJitter,
// which timm applies to the PIL image between the random resized crop and the normalisation.
//
// Every op takes an Image with 1 (gray) or 3 (RGB) channels and returns a new one of the same size.
// What PIL does, and so what these do:
//   point ops    a 256-entry table per channel (auto_contrast, equalize, invert, posterize,
//                solarize, solarize_add); table values are clamped to [0, 255].
//   enhance ops  blend(degenerate, img, factor) = degenerate + factor * (img - degenerate),
//                in float, clamped to [0, 255] and truncated (PIL's ImagingBlend). The degenerate
//                image is: color: the luma gray (L = (19595 R + 38470 G + 7471 B + 32768) >> 16);
//                contrast: the rounded mean luma everywhere; brightness: black; sharpness: the
//                image smoothed by [[1 1 1] [1 5 1] [1 1 1]] / 13 (rounded), borders unchanged.
//                On a gray image, color is the identity.
//   geometry     output pixel (x, y) samples the input at p = M (x + 0.5, y + 0.5) (pixel centres,
//                M a 2x3 affine matrix, PIL's Image.transform(AFFINE)); p outside [0, W) x [0, H)
//                gives `fill`. bilinear: the 2x2 neighbours of p - 0.5, edge-clamped, truncated;
//                bicubic: the 4x4 neighbours with the a = -1 cubic, clamped and truncated; nearest:
//                the pixel containing p. Integer translations therefore copy pixels exactly.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "data/image.h"

namespace hg::data {

/// Resampling filter (timm's train_interpolation names).
enum class Interp { nearest, bilinear, bicubic };
/// "nearest" | "bilinear" | "bicubic"; throws hg::Error naming the value otherwise.
Interp parse_interp(const std::string& name);
const char* interp_name(Interp interp);

/// Fill colour for pixels a geometric op brings in from outside (channel c uses fill[c]).
using Fill = std::array<uint8_t, 3>;

/// PIL's luma of one RGB pixel (ITU-R 601-2 weights in 16-bit fixed point, rounded).
uint8_t luma(uint8_t r, uint8_t g, uint8_t b);

// ---- point ops ----------------------------------------------------------------------------------
/// Per channel: stretches [min, max] to [0, 255] (lut = int(v * 255 / (max - min) - min * scale));
/// a channel with one value is unchanged (ImageOps.autocontrast, cutoff 0).
Image auto_contrast(const Image& img);
/// Per channel histogram equalisation (ImageOps.equalize).
Image equalize(const Image& img);
/// 255 - v.
Image invert(const Image& img);
/// Keeps the `bits` most significant bits, bits in [0, 8] (ImageOps.posterize).
Image posterize(const Image& img, int bits);
/// v < threshold ? v : 255 - v, threshold in [0, 256] (ImageOps.solarize).
Image solarize(const Image& img, int threshold);
/// v < threshold ? min(255, v + add) : v (timm's solarize_add).
Image solarize_add(const Image& img, int add, int threshold = 128);

// ---- enhance ops (factor 1 = unchanged, 0 = the degenerate image) -------------------------------
Image adjust_color(const Image& img, double factor);       ///< saturation (ImageEnhance.Color)
Image adjust_contrast(const Image& img, double factor);    ///< ImageEnhance.Contrast
Image adjust_brightness(const Image& img, double factor);  ///< ImageEnhance.Brightness
Image adjust_sharpness(const Image& img, double factor);   ///< ImageEnhance.Sharpness
/// torchvision's adjust_hue of a PIL image (ColorJitter's hue), factor in [-0.5, 0.5]: PIL's 8-bit
/// HSV conversion, the hue byte shifted by uint8(trunc(factor * 255)) with wrap-around, back to
/// RGB (lossy even at factor 0, as PIL's conversion is). A gray image is unchanged.
Image adjust_hue(const Image& img, double factor);

// ---- geometry -----------------------------------------------------------------------------------
/// Output (x, y) = input at (m[0] u + m[1] v + m[2], m[3] u + m[4] v + m[5]),
/// u = x + 0.5, v = y + 0.5.
Image affine(const Image& img, const std::array<double, 6>& m, Interp interp, const Fill& fill);
/// Tests only (not thread-safe): false makes affine use its scalar path where it would use AVX2
/// (true: AVX2 again, if the CPU has it). Returns the previous setting. Both give the same pixels.
bool affine_simd_for_tests(bool on);
/// Counter-clockwise by `degrees` about the image centre (W / 2, H / 2), same size (PIL rotate).
Image rotate(const Image& img, double degrees, Interp interp, const Fill& fill);
/// Input x = x + factor * y (PIL transform (1, factor, 0, 0, 1, 0)).
Image shear_x(const Image& img, double factor, Interp interp, const Fill& fill);
/// Input y = y + factor * x.
Image shear_y(const Image& img, double factor, Interp interp, const Fill& fill);
/// Input x = x + pixels: the content moves left by `pixels`.
Image translate_x(const Image& img, double pixels, Interp interp, const Fill& fill);
/// Input y = y + pixels: the content moves up by `pixels`.
Image translate_y(const Image& img, double pixels, Interp interp, const Fill& fill);

}  // namespace hg::data
