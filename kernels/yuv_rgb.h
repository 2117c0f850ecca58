// YCbCr (JPEG's "YUV") planes to interleaved 8-bit RGB, for a batch of images: what nvJPEG's
// hardware decoder leaves when asked for NVJPEG_OUTPUT_YUV (data/nvjpeg_decoder.cpp). Asked for
// interleaved RGB instead, nvJPEG launches one small conversion kernel per image after the JPEG
// engines, and beside a training step replayed as a CUDA graph those 128 launches a batch wait for
// SMs behind its kernels (dev/nvjpeg_probe.cu, eleventh session: RGBI 13.5-59.7 batches/s beside busy
// kernels, YUV ~119); this does the conversion for the whole batch in one launch.
//
// Per pixel (x, y) of item n (JFIF's full-range BT.601, as libjpeg and nvJPEG convert):
//   Y = y_plane[y * y_pitch + x], Cb, Cr = the chroma planes at (min(y >> shift_y, c_height - 1),
//   min(x >> shift_x, c_width - 1)) (nearest: no interpolation, as nvJPEG's own conversion; libjpeg
//   interpolates, so subsampled chroma differs from it at colour edges), then
//   R = Y + 1.402 (Cr - 128), G = Y - 0.344136 (Cb - 128) - 0.714136 (Cr - 128),
//   B = Y + 1.772 (Cb - 128), each computed in float with explicit fused multiply-adds (so the CPU
//   and the GPU round alike: their results are equal bit for bit), clamped to [0, 255] and rounded
//   to nearest.
//   A grayscale item (gray = 1) takes R = G = B = Y and reads no chroma plane.
// dst: item n's (height, width, 3) bytes at dst + items[n].dst_offset, rows dense.
#pragma once

#include <cmath>
#include <cstdint>

namespace hg::kernels {

/// One image of a batch: byte offsets into the planes' buffer and the destination, its sizes.
struct YuvItem {
  int64_t y_offset = 0, cb_offset = 0, cr_offset = 0;  ///< planes in the source buffer
  int64_t dst_offset = 0;                               ///< (height, width, 3) in dst
  int32_t width = 0, height = 0;                        ///< of the image (the Y plane's content)
  int32_t y_pitch = 0, c_pitch = 0;                     ///< bytes per row of the Y / chroma planes
  int32_t c_width = 0, c_height = 0;                    ///< chroma planes' content (>= 1 unless gray)
  int32_t shift_x = 0, shift_y = 0;                     ///< chroma subsampling: 0 (none), 1 (2x), 2 (4x)
  int32_t gray = 0;                                     ///< 1: one component, R = G = B = Y
};

/// The conversion of one pixel (the formula above), shared by the CPU and CUDA versions.
struct YuvRgb {
  uint8_t r, g, b;
};
#ifdef __CUDACC__
__host__ __device__
#endif
inline YuvRgb yuv_to_rgb_pixel(int y, int cb, int cr) {
  const float Y = static_cast<float>(y), u = static_cast<float>(cb - 128), v = static_cast<float>(cr - 128);
  const auto to_u8 = [](float f) {
    const float r = f < 0.f ? 0.f : (f > 255.f ? 255.f : f);
    return static_cast<uint8_t>(static_cast<int>(r + 0.5f));
  };
  return YuvRgb{to_u8(fmaf(1.402f, v, Y)), to_u8(fmaf(-0.714136f, v, fmaf(-0.344136f, u, Y))),
                to_u8(fmaf(1.772f, u, Y))};
}

namespace cpu {
/// The reference: every item of `items` (n of them) from `src` into `dst` (host memory).
void yuv_to_rgb(const uint8_t* src, const YuvItem* items, int64_t n, uint8_t* dst);
}  // namespace cpu

#ifdef HAARGRAD_WITH_CUDA
namespace cuda {
/// The same on the GPU, one launch for the batch, on `stream` (not haargrad's training stream: the
/// JPEG decoder runs it on its own). src, items (n entries) and dst are device pointers. Throws
/// hg::Error for n outside [0, 65535] or a failed launch.
void yuv_to_rgb(const uint8_t* src, const YuvItem* items, int64_t n, uint8_t* dst, void* stream);
}  // namespace cuda
#endif

}  // namespace hg::kernels
