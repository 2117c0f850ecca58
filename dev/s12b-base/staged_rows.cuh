// Rows of an NHWC image staged in shared memory, and the sliding register window over them: the
// building blocks of the stride-1 "staged" depthwise kernels (kernels/cuda/depthwise_conv.cu: the
// forward, backward data and weight gradient) and of the fused WTConv synthesis
// (kernels/cuda/wtconv_staged.cuh). A block is 32 channels (one per lane) x kStagedWarps warps;
// it copies the input rows its outputs read, over the padded width, into shared memory with 16-byte
// loads (zeros outside the image), and each thread then slides a (K + 1) x K window along its
// column strip: K + 1 shared-memory reads per column feed two output rows of K x K taps.
// Compiled as C++17 by nvcc: include only core/tensor.h, core/error.h, kernels/*.h,
// kernels/cuda/*.h.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>

namespace hg::kernels::cuda {

/// Warps per staged block (block shape (32, kStagedWarps)).
constexpr int kStagedWarps = 4;

/// A staged element as f32 (bf16 widens exactly: its 16 bits are the top of an f32).
template <typename T>
__device__ __forceinline__ float staged_value(const T* p) {
  if constexpr (std::is_same_v<T, float>)
    return *p;
  else
    return __uint_as_float(uint32_t(*reinterpret_cast<const unsigned short*>(p)) << 16);
}

/// Copies rows [row0, row0 + nrows) x columns [col0, col0 + ncols) x channels [c0, c0 + 32) of the
/// NHWC image `img` (rows H, columns W, channels C) into dst[nrows][ncols][32], zeros outside.
/// 16-byte vectors: needs C a multiple of 16 / sizeof(T) and a 16-byte aligned img. Every thread of
/// the (32, kStagedWarps) block takes part; the caller synchronises before reading dst.
template <typename T>
__device__ __forceinline__ void stage_rows(const T* __restrict__ img, int H, int W, int C, int row0,
                                           int nrows, int col0, int ncols, int c0, uint4* dst) {
  constexpr int VE = 16 / int(sizeof(T)), VPP = 32 / VE;  // elements per vector, vectors per pixel
  const int n = nrows * ncols * VPP, tid = threadIdx.y * 32 + threadIdx.x;
  for (int e = tid; e < n; e += 32 * kStagedWarps) {
    const int v = e % VPP, pix = e / VPP;
    const int r = row0 + pix / ncols, col = col0 + pix % ncols, cc = c0 + v * VE;
    uint4 val = make_uint4(0, 0, 0, 0);
    if (r >= 0 && r < H && col >= 0 && col < W && cc < C)
      val = __ldg(reinterpret_cast<const uint4*>(img + (int64_t(r) * W + col) * C + cc));
    dst[e] = val;
  }
}

/// The (K + 1) x K window slid along a column strip of staged rows (xr: staged row 0 at this
/// thread's channel; WS staged columns of 32 channels): win[m][q] = staged row m, column j + q.
/// window_start sets it "at j = ja - 1" (slots q >= 1); window_advance moves it to column j (the
/// shifts become register renames once unrolled) and reads the new column j + K - 1.
template <typename T, int K>
__device__ __forceinline__ void window_start(const T* xr, int WS, int ja, float (&win)[K + 1][K]) {
#pragma unroll
  for (int m = 0; m < K + 1; ++m)
#pragma unroll
    for (int q = 1; q < K; ++q) win[m][q] = staged_value(xr + (m * WS + ja - 1 + q) * 32);
}
template <typename T, int K>
__device__ __forceinline__ void window_advance(const T* xr, int WS, int j, float (&win)[K + 1][K]) {
#pragma unroll
  for (int m = 0; m < K + 1; ++m) {
#pragma unroll
    for (int q = 0; q + 1 < K; ++q) win[m][q] = win[m][q + 1];
    win[m][K - 1] = staged_value(xr + (m * WS + j + K - 1) * 32);
  }
}

/// The K x K taps w at the window's column for both rows of a pair: a0 += sum w[p][q] win[p][q]
/// (the pair's first output row), a1 += sum w[p][q] win[p + 1][q] (its second): 2 K^2 FMAs on the
/// window's K + 1 rows, in row-major tap order.
template <int K>
__device__ __forceinline__ void pair_taps(const float (&w)[K][K], const float (&win)[K + 1][K],
                                          float& a0, float& a1) {
#pragma unroll
  for (int p = 0; p < K; ++p)
#pragma unroll
    for (int q = 0; q < K; ++q) {
      a0 = fmaf(w[p][q], win[p][q], a0);
      a1 = fmaf(w[p][q], win[p + 1][q], a1);
    }
}

}  // namespace hg::kernels::cuda
