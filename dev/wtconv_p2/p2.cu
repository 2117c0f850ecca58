// Kernel lab (forty-second session): WTConv's base conv and level-0 branch (K = 5, bf16 NHWC in
// and out, f32 accumulation) as ONE pass on the tensor cores, against the product's fused WTConv
// forward at L = 1 (two passes: haar_conv_kernel, then synth_staged_kernel) and its 7x7 forward.
//
// The form (dev/s42/README.md; its algebra checked in f64 by dev/s42/period2_check.py): per
// channel, y = base conv + bias + inverse Haar(level-0 conv of Haar(x) + R on the LL band) is
//   y[i][j] = bias + R[i / 2][j / 2] / 2 + sum_{di, dj in [-5, 5]} E[i % 2][j % 2][di][dj] x[i +
//   di][j + dj]
// with x zero outside the image (odd sizes included): one 11 x 11 kernel per output parity,
// E = base taps + sum_s sigma_s(p, q) sigma_s(a, b) / 4 wl_s[u][v] at di = 2 (u - 2) + a - p,
// dj = 2 (v - 2) + b - q (parity_kernels below). R is the levels >= 1 term (zero at L = 1).
// On the tensor cores: output rows of one parity p as the mma's M (16 rows two apart), per kernel
// row di a banded B over 32 input columns (two k-chunks) for 8 output columns (B[k][n] =
// E[p][n % 2][di][k - 5 - n]): 22 m16n8k16 a 16 x 8 tile and channel, against the 7x7's 7. The
// rows are staged as they are (cp.async; even and odd rows in two planes, so that a fragment's
// rows two apart are neighbours there), the A fragments formed as in dev/s42's depthwise kernel
// (two 16-byte loads and 8 byte permutes give 8 channels).
//
// Usage: build/dev/wtconv_p2/wtconv_p2_lab [reps]: checks odd shapes against a CPU loop in double
// over E and against the product's fused forward (L = 1, R = 0), then times the WTConvNeXt-T stage
// shapes (B = 64). At the small shapes it also checks the backward data: the same kernel with the
// adjoint's parity kernels (adjoint_kernels) against the adjoint's definition and against the
// product's fused grad_x at L = 1. Then the whole forward at L levels the period-2 way (run_full:
// the LL band, the levels >= 1 by the product, one p2 pass) against the product's forward at L,
// and grad_x the same way against its backward, checked at odd shapes and timed at the stage
// shapes (L = 5, 4, 3, 2); then the weight gradient (run_wgrad). Exit status 1 when a check fails.
// Measured in the forty-fourth session (dev/wtconv_p2/README.md). `wtconv_p2_lab REPS stage` runs
// only the forward variants at 96/56 (for Nsight Compute: dev/s45a.sh).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "dev/lab_util.cuh"
#include "kernels/conv2d.h"
#include "kernels/cuda/staged_rows.cuh"
#include "kernels/depthwise_conv.h"
#include "kernels/wtconv.h"

namespace {

constexpr int kK = 5, kR = 5, kTaps = 2 * kR + 1;  // K, the window radius, its width
constexpr int kCh = 16, kRows = 32, kWarps = 8;    // channels, output rows a block
constexpr int kRS = kRows + 2 * kR;                // staged rows: 42
constexpr int kWords = kTaps + 1;                  // B table words a kernel row: 12

struct Dims {
  int B, H, W, C, T, rw;  // T: 8-column tiles; rw: staged pixels a row (8 T + 24, 1 mod 4)
};
inline int staged_width(int T) { return (8 * T + 24 + 3) / 4 * 4 + 1; }
inline size_t smem_bytes(const Dims& d) {
  return size_t(2) * ((kRS + 1) / 2) * d.rw * 32 + size_t(kCh) * 2 * kTaps * 2 * kWords * 4;
}

__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  return uint32_t(__bfloat16_as_ushort(__float2bfloat16_rn(lo))) |
         (uint32_t(__bfloat16_as_ushort(__float2bfloat16_rn(hi))) << 16);
}

__device__ __forceinline__ void mma(const uint32_t (&a)[4], uint32_t b0, uint32_t b1,
                                    float (&acc)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// A fragments of 8 channels (dev/s42: a_fragments): `px` = the lane's slot at (row g, column
/// 2c) of a plane, rows + 8 at 8 row_slots, columns + 8 at 16 slots, + 1 at 2 slots.
/// Register f of the A fragments of 8 channels from two neighbouring staged pixels (q[0] and
/// q[2]: 8 channels each, channel pairs a word): channel 2k's values of both pixels in a[2k][f],
/// channel 2k + 1's in a[2k + 1][f].
__device__ __forceinline__ void pixel_pair(const uint4* q, int f, uint32_t (&a)[8][4]) {
  const uint4 v0 = q[0], v1 = q[2];
  const uint32_t w0[4] = {v0.x, v0.y, v0.z, v0.w}, w1[4] = {v1.x, v1.y, v1.z, v1.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    a[2 * k][f] = __byte_perm(w0[k], w1[k], 0x5410);
    a[2 * k + 1][f] = __byte_perm(w0[k], w1[k], 0x7632);
  }
}

__device__ __forceinline__ void a_frag(const uint4* px, int row_slots, uint32_t (&a)[8][4]) {
#pragma unroll
  for (int f = 0; f < 4; ++f) pixel_pair(px + (f & 1) * 8 * row_slots + (f >> 1) * 16, f, a);
}

/// One output pixel's channels c .. c + 7 (16 bytes) of image img at (i, j): the sums `a` plus
/// bias and R / 2 (R null: 0; R's pixel (i / 2, j / 2)), rounded to bf16.
__device__ __forceinline__ void store_pixel(const float (&a)[8], const float* __restrict__ bias,
                                            const __nv_bfloat16* __restrict__ R, const Dims& d,
                                            int img, int i, int j, int c,
                                            __nv_bfloat16* __restrict__ y) {
  float r[8] = {};
  if (R) {  // 8 channels, 16 bytes
    const uint4 rv = *reinterpret_cast<const uint4*>(
        R + ((int64_t(img) * ((d.H + 1) / 2) + i / 2) * ((d.W + 1) / 2) + j / 2) * d.C + c);
    const uint32_t rw[4] = {rv.x, rv.y, rv.z, rv.w};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      r[2 * q] = __uint_as_float(rw[q] << 16);
      r[2 * q + 1] = __uint_as_float(rw[q] & 0xffff0000u);
    }
  }
  uint32_t o[4];
#pragma unroll
  for (int q = 0; q < 4; ++q)
    o[q] = pack2(a[2 * q] + bias[c + 2 * q] + 0.5f * r[2 * q],
                 a[2 * q + 1] + bias[c + 2 * q + 1] + 0.5f * r[2 * q + 1]);
  *reinterpret_cast<uint4*>(y + ((int64_t(img) * d.H + i) * d.W + j) * d.C + c) =
      make_uint4(o[0], o[1], o[2], o[3]);
}

/// Block: channels 16 blockIdx.x .. + 15, output rows 32 (blockIdx.y % RT) .. + 31 of image
/// blockIdx.y / RT, every column. E: (C, 2, 2, 11, 11) f32 (E[c][p][q][5 + di][5 + dj]); R:
/// (B, ceil(H / 2), ceil(W / 2), C) bf16 or null.
__global__ void __launch_bounds__(32 * kWarps, 1)
    p2_forward_kernel(const __nv_bfloat16* __restrict__ x, const float* __restrict__ E,
                      const float* __restrict__ bias, const __nv_bfloat16* __restrict__ R, Dims d,
                      __nv_bfloat16* __restrict__ y) {
  extern __shared__ uint4 smem[];
  const int PR = (kRS + 1) / 2, plane_slots = PR * d.rw * 2, row_slots = 2 * d.rw;
  uint4* xs = smem;  // planes [2][PR][rw][2]: staged row r in plane r % 2, row r / 2
  uint32_t* tab = reinterpret_cast<uint32_t*>(smem + 2 * plane_slots);  // [16][2][11][2][12]
  const int tid = threadIdx.y * 32 + threadIdx.x;
  const int c0 = blockIdx.x * kCh, RT = (d.H + kRows - 1) / kRows;
  const int img = blockIdx.y / RT, i0 = blockIdx.y % RT * kRows;
  const int ncols = 8 * d.T + 24;  // staged column s = input column s - 5
  const __nv_bfloat16* xi = x + int64_t(img) * d.H * d.W * d.C + c0;
  for (int e = tid; e < kRS * ncols * 2; e += 32 * kWarps) {
    const int h = e & 1, m = (e >> 1) / ncols, n = (e >> 1) % ncols;
    const int r = i0 - kR + m, col = n - kR;
    const bool ok = r >= 0 && r < d.H && col >= 0 && col < d.W;
    hg::kernels::cuda::copy16_async(
        xs + (m & 1) * plane_slots + ((m >> 1) * d.rw + n) * 2 + (h ^ ((n >> 2) & 1)),
        xi + (ok ? (int64_t(r) * d.W + col) * d.C + 8 * h : 0), ok);
  }
  hg::kernels::cuda::async_commit();
  // B words: (ch, p, di, qn, w) = (lo: tap(w - 1), hi: tap(w)), tap(e) = E[p][qn][di][e], e < 11
  for (int e = tid; e < kCh * 2 * kTaps * 2 * kWords; e += 32 * kWarps) {
    const int w = e % kWords, qn = e / kWords % 2, di = e / (kWords * 2) % kTaps,
              p = e / (kWords * 2 * kTaps) % 2, ch = e / (kWords * 2 * kTaps * 2);
    const float* ek = E + ((int64_t(c0 + ch) * 2 + p) * 2 + qn) * kTaps * kTaps + di * kTaps;
    tab[e] = pack2(w >= 1 && w - 1 < kTaps ? ek[w - 1] : 0.f, w < kTaps ? ek[w] : 0.f);
  }
  hg::kernels::cuda::async_wait<0>();
  __syncthreads();

  const int lane = threadIdx.x, warp = threadIdx.y, g = lane / 4, cq = lane % 4, k0 = 2 * cq;
  for (int u = warp; u < 4 * d.T; u += kWarps) {
    const int t = u / 4, h = (u / 2) & 1, p = u & 1;  // column tile, channel half, row parity
    float acc[8][4] = {};
#pragma unroll 1
    for (int di = -kR; di <= kR; ++di) {
      // fragment row g: output row i0 + 2 g + p reads staged row 2 g + p + di + 5
      const int s = p + di + kR;
      const uint4* plane = xs + (s & 1) * plane_slots + (s >> 1) * row_slots;
      const uint32_t* tb = tab + ((0 * 2 + p) * kTaps + (di + kR)) * 2 * kWords + (g & 1) * kWords;
#pragma unroll
      for (int kc = 0; kc < 2; ++kc) {
        uint32_t a[8][4];
        a_frag(plane + g * row_slots + (8 * t + 16 * kc + k0) * 2 + (h ^ (cq >> 1)), row_slots, a);
        const int w0 = 16 * kc + k0 - g + 1, w1 = w0 + 8;  // B words of b0, b1
        const bool ok0 = w0 >= 0 && w0 < kWords, ok1 = w1 >= 0 && w1 < kWords;
#pragma unroll
        for (int cl = 0; cl < 8; ++cl) {
          const uint32_t* tc = tb + (8 * h + cl) * 2 * kTaps * 2 * kWords;
          mma(a[cl], ok0 ? tc[w0] : 0u, ok1 ? tc[w1] : 0u, acc[cl]);
        }
      }
    }
    // acc[cl]: rows g, g + 8 (output rows i0 + 2 g + p, + 16), columns 8t + k0, + 1
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int i = i0 + 2 * (g + 8 * hh) + p;
      if (i >= d.H) continue;
#pragma unroll
      for (int v = 0; v < 2; ++v) {
        const int j = 8 * t + k0 + v;
        if (j >= d.W) continue;
        float a[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) a[k] = acc[k][2 * hh + v];
        store_pixel(a, bias, R, d, img, i, j, c0 + 8 * h, y);
      }
    }
  }
}

// ---- variant n16 (forty-fourth session): half the shared loads an output -------------------
// The cost model of p2_forward_kernel (dev/wtconv_p2/README.md): a 16 x 8 tile and 8 channels
// takes 16 LDS.128 of A (64 wavefronts) and 32 of B's words a kernel row, ~0.75 wavefronts an
// output and channel: shared-load bound (~100 us at 96/56, B = 64), with one block a
// multiprocessor staging before it computes. Here a warp's tile is 16 x 16: the two k-chunks of
// A (32 input columns) serve both 8-column halves (nt), and of the B words base, base + 8 and
// base + 16 (base = k0 - g + 1) only three are ever inside the 12-word band, so the four mma of
// a kernel row and channel take 4 word loads: ~0.375 wavefronts an output. A block is 16
// channels x 32 rows x 32 columns (the 8 warps: two 16-column halves t, channel halves h, row
// parities p), its B table copied from a table made once per weight set (p2_table) instead of
// built from E: ~97 KB of shared memory, two blocks a multiprocessor, so one block's staging
// overlaps the other's mma.
constexpr int kCols16 = 32;                              // output columns a block
constexpr int kRW16 = 49;                                // staged pixels a plane row (48, 1 mod 4)
constexpr int kTabWords = kCh * 2 * kTaps * 2 * kWords;  // a block's B table: 8448 words
constexpr int kChWords = 2 * kTaps * 2 * kWords;         // one channel's: 528
inline size_t smem16_bytes() { return size_t(2) * ((kRS + 1) / 2) * kRW16 * 32 + kTabWords * 4; }

/// The B table of every channel (host): words (c, p, di, qn, w) = (lo: tap(w - 1), hi: tap(w)) in
/// bf16, tap(e) = E[c][p][qn][di][e] for 0 <= e < 11, else 0: p2_forward_kernel's shared table.
std::vector<uint32_t> p2_table(const std::vector<float>& E, int C) {
  std::vector<uint32_t> t(size_t(C) * kChWords);
  auto b16 = [](float v) { return uint32_t(__bfloat16_as_ushort(__float2bfloat16_rn(v))); };
  for (size_t e = 0; e < t.size(); ++e) {
    const int w = int(e % kWords), qn = int(e / kWords % 2), di = int(e / (kWords * 2) % kTaps),
              p = int(e / (kWords * 2 * kTaps) % 2);
    const size_t c = e / kChWords;
    const float* ek = &E[((c * 2 + p) * 2 + qn) * kTaps * kTaps + di * kTaps];
    t[e] = b16(w >= 1 && w - 1 < kTaps ? ek[w - 1] : 0.f) | b16(w < kTaps ? ek[w] : 0.f) << 16;
  }
  return t;
}

/// Block: channels 16 blockIdx.x .. + 15; blockIdx.y = (image, 32-row tile, 32-column tile),
/// column tiles fastest. tabg: p2_table's words; the rest as p2_forward_kernel. kMinBlocks: the
/// blocks a multiprocessor must hold (2: <= 128 registers, a 56-byte spill; 1: no register cap,
/// so the compiler may keep the next k-chunk's loads in flight, one block of 8 warps).
template <int kMinBlocks>
__global__ void __launch_bounds__(32 * kWarps, kMinBlocks)
    p2_forward16_kernel(const __nv_bfloat16* __restrict__ x, const uint32_t* __restrict__ tabg,
                        const float* __restrict__ bias, const __nv_bfloat16* __restrict__ R, Dims d,
                        __nv_bfloat16* __restrict__ y) {
  extern __shared__ uint4 smem[];
  constexpr int PR = (kRS + 1) / 2, plane_slots = PR * kRW16 * 2, row_slots = 2 * kRW16;
  constexpr int ncols = kCols16 + 16;  // staged column s = input column j0 + s - 5
  uint4* xs = smem;
  uint32_t* tab = reinterpret_cast<uint32_t*>(smem + 2 * plane_slots);
  const int tid = threadIdx.y * 32 + threadIdx.x;
  const int c0 = blockIdx.x * kCh, CT = (d.W + kCols16 - 1) / kCols16,
            RT = (d.H + kRows - 1) / kRows;
  const int ct = blockIdx.y % CT, rt = blockIdx.y / CT % RT, img = blockIdx.y / (CT * RT);
  const int i0 = rt * kRows, j0 = ct * kCols16;
  const __nv_bfloat16* xi = x + int64_t(img) * d.H * d.W * d.C + c0;
  for (int e = tid; e < kRS * ncols * 2; e += 32 * kWarps) {
    const int h = e & 1, m = (e >> 1) / ncols, n = (e >> 1) % ncols;
    const int r = i0 - kR + m, col = j0 + n - kR;
    const bool ok = r >= 0 && r < d.H && col >= 0 && col < d.W;
    hg::kernels::cuda::copy16_async(
        xs + (m & 1) * plane_slots + ((m >> 1) * kRW16 + n) * 2 + (h ^ ((n >> 2) & 1)),
        xi + (ok ? (int64_t(r) * d.W + col) * d.C + 8 * h : 0), ok);
  }
  const uint32_t* tg = tabg + int64_t(c0) * kChWords;  // 16 channels' words, contiguous
  for (int e = tid; e < kTabWords / 4; e += 32 * kWarps)
    hg::kernels::cuda::copy16_async(tab + 4 * e, tg + 4 * e, true);
  hg::kernels::cuda::async_commit();
  hg::kernels::cuda::async_wait<0>();
  __syncthreads();

  const int lane = threadIdx.x, warp = threadIdx.y, g = lane / 4, cq = lane % 4, k0 = 2 * cq;
  const int t = warp >> 2, h = (warp >> 1) & 1, p = warp & 1;
  if (j0 + 16 * t >= d.W) return;  // no barrier follows
  const int base = k0 - g + 1;     // the word of B[k0][g] in chunk 0, half nt = 0
  float acc[8][2][4] = {};
#pragma unroll 1
  for (int di = -kR; di <= kR; ++di) {
    const int s = p + di + kR;
    const uint4* plane = xs + (s & 1) * plane_slots + (s >> 1) * row_slots + g * row_slots +
                         (16 * t + k0) * 2 + (h ^ (cq >> 1));
    const uint32_t* tb = tab + ((p * kTaps + (di + kR)) * 2 + (g & 1)) * kWords + 8 * h * kChWords;
    uint32_t a[8][4];
    // chunk 0 (staged columns 16 t .. + 15): half 0 takes words base, base + 8; half 1 (columns
    // + 8) base - 8 (never in the band) and base
    a_frag(plane, row_slots, a);
#pragma unroll
    for (int cl = 0; cl < 8; ++cl) {
      const uint32_t* tc = tb + cl * kChWords;
      const uint32_t wa = base >= 0 ? tc[base] : 0u, wb = base <= 3 ? tc[base + 8] : 0u;
      mma(a[cl], wa, wb, acc[cl][0]);
      mma(a[cl], 0u, wa, acc[cl][1]);
    }
    // chunk 1 (+ 16 columns): half 0 takes base + 16, base + 24 (never); half 1 base + 8, + 16
    a_frag(plane + 32, row_slots, a);
#pragma unroll
    for (int cl = 0; cl < 8; ++cl) {
      const uint32_t* tc = tb + cl * kChWords;
      const uint32_t wb = base <= 3 ? tc[base + 8] : 0u, wc = base <= -5 ? tc[base + 16] : 0u;
      mma(a[cl], wc, 0u, acc[cl][0]);
      mma(a[cl], wb, wc, acc[cl][1]);
    }
  }
  // acc[cl][nt]: rows g, g + 8 (output rows i0 + 2 g + p, + 16), columns j0 + 16 t + 8 nt + k0, + 1
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int i = i0 + 2 * (g + 8 * hh) + p;
    if (i >= d.H) continue;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int v = 0; v < 2; ++v) {
        const int j = j0 + 16 * t + 8 * nt + k0 + v;
        if (j >= d.W) continue;
        float a[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) a[k] = acc[k][nt][2 * hh + v];
        store_pixel(a, bias, R, d, img, i, j, c0 + 8 * h, y);
      }
  }
}

constexpr int kWRows = 16;  // the measured weight gradient's output rows a tile (8 a parity)

/// The weight gradient's grad_y planes: a staged row's columns c in [-16, 8 T + 24) split by
/// parity (a warp of column parity q reads plane q only), 4 T + 20 pixels a plane row.
__host__ __device__ inline int gy_plane_width(int T) { return 4 * T + 20; }
/// One staging buffer of the weight gradient with `rows` output rows a tile, in 16-byte slots:
/// x's rows + 2 kR rows of rw pixels, then grad_y's two parity planes; 32 bytes a pixel.
__host__ __device__ inline int wgrad_buffer_slots(const Dims& d, int rows) {
  return (rows + 2 * kR) * d.rw * 2 + 2 * rows * gy_plane_width(d.T) * 2;
}
inline size_t wgrad_smem_bytes(const Dims& d, int rows, int buffers) {
  return size_t(buffers) * wgrad_buffer_slots(d, rows) * 16;
}

/// B's 8 channels from one staged grad_y pixel (4 words, channels 2k | 2k + 1 << 16): channel
/// 2k's value alone in its register's low (hi = false) or high half, the other half zero.
__device__ __forceinline__ void b_frag(const uint4 v, bool hi, uint32_t (&b)[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    b[2 * k] = __byte_perm(w[k], 0u, hi ? 0x1044 : 0x4410);
    b[2 * k + 1] = __byte_perm(w[k], 0u, hi ? 0x3244 : 0x4432);
  }
}

/// The weight gradient of the period-2 form: dE[c][p][q][5 + di][5 + dj] = sum over the output
/// pixels (i, j) of parity (p, q) of grad_y[i][j] x[i + di][j + dj]. Per output row i and 16
/// input columns s: D[di][dj] += X[di][s] G[s][dj] with X[m][k] = x[i + m - 5][s0 + k] (M: the
/// 11 kernel rows of 16) and G[k][n] = grad_y[i][s0 + k - dj] masked to the columns of parity q
/// (N: dj in -5..2, then 3..5 of 8): 2 mma a row, 16 columns, channel and q. Warp (p, q, h):
/// rows of parity p, columns of parity q, channels 8 h .. + 7 of the block's 16; blocks walk
/// the (image, 16-row tile) pairs blockIdx.y, + gridDim.y, ... and each writes its own partial
/// sums: part (gridDim.y, C, 2, 2, 16, 16) f32, rows di + 5, columns dj + 5 (11 x 11 used),
/// summed over blockIdx.y in order on the host (deterministic). kTileRows: output rows a tile (the
/// measured kernel: 16); kBuffers: 1 stages each tile after the last one's compute (measured:
/// ~12 tiles a block one after the other, 289 us at 96/56), 2 stages the next tile with cp.async
/// while this one computes (forty-fourth session, not run; with kTileRows = 8, ~71 KB a buffer).
template <int kTileRows, int kBuffers>
__global__ void __launch_bounds__(32 * kWarps, 1)
    p2_wgrad_kernel(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ gy,
                    Dims d, float* __restrict__ part) {
  extern __shared__ uint4 smem[];
  constexpr int XR = kTileRows + 2 * kR;  // staged x rows: 26 at kTileRows = 16
  // x's rows one after the other (a fragment's rows are neighbours: 2 mod 8 slots apart, so a
  // quarter warp's two rows take the other half of the banks), not in parity planes
  const int row_slots = 2 * d.rw;
  const int gw = gy_plane_width(d.T), gcols = 2 * gw;  // gcols = 8 T + 40 staged columns
  const int buffer_slots = wgrad_buffer_slots(d, kTileRows);
  // buffer b: x's rows [XR][rw][2 halves], then grad_y's planes [2 parities][kTileRows][gw][2
  // halves]
  const int tid = threadIdx.y * 32 + threadIdx.x, lane = threadIdx.x, warp = threadIdx.y;
  const int p = warp & 1, q = (warp >> 1) & 1, h = warp >> 2, g = lane / 4, cq = lane % 4;
  const int c0 = blockIdx.x * kCh, RT = (d.H + kTileRows - 1) / kTileRows, ntiles = d.B * RT;
  const int nch = (d.W + 10 + 15) / 16, ncols = 8 * d.T + 24;
  const int bsel = (g ^ q) & 1;  // B's value sits in the register's high half (see below)
  // starts the copies of tile `tile`'s rows into buffer b (the caller commits the group)
  auto stage = [&](int tile, int b) {
    uint4* xs = smem + b * buffer_slots;
    uint4* gs = xs + XR * row_slots;
    const int img = tile / RT, i0 = tile % RT * kTileRows;
    const __nv_bfloat16* xi = x + int64_t(img) * d.H * d.W * d.C + c0;
    const __nv_bfloat16* gi = gy + int64_t(img) * d.H * d.W * d.C + c0;
    for (int e = tid; e < XR * ncols * 2; e += 32 * kWarps) {
      const int hh = e & 1, m = (e >> 1) / ncols, n = (e >> 1) % ncols;
      const int r = i0 - kR + m, col = n - kR;
      const bool ok = r >= 0 && r < d.H && col >= 0 && col < d.W;
      hg::kernels::cuda::copy16_async(xs + (m * d.rw + n) * 2 + (hh ^ ((n >> 2) & 1)),
                                      xi + (ok ? (int64_t(r) * d.W + col) * d.C + 8 * hh : 0), ok);
    }
    for (int e = tid; e < kTileRows * gcols * 2; e += 32 * kWarps) {
      const int hh = e & 1, m = (e >> 1) / gcols, n = (e >> 1) % gcols;
      const int r = i0 + m, col = n - 16, pi = n >> 1;  // col's parity is n's
      const bool ok = r < d.H && col >= 0 && col < d.W;
      hg::kernels::cuda::copy16_async(
          gs + (((n & 1) * kTileRows + m) * gw + pi) * 2 + (hh ^ ((pi >> 2) & 1)),
          gi + (ok ? (int64_t(r) * d.W + col) * d.C + 8 * hh : 0), ok);
    }
  };
  float acc[8][2][4] = {};
  if (kBuffers == 2 && int(blockIdx.y) < ntiles) {
    stage(blockIdx.y, 0);
    hg::kernels::cuda::async_commit();
  }
  int k = 0;
  for (int tile = blockIdx.y; tile < ntiles; tile += gridDim.y, ++k) {
    const int b = kBuffers == 2 ? (k & 1) : 0;
    if (kBuffers == 2) {
      // the next tile's rows into the other buffer (free: the barrier that ended the last
      // iteration), then wait for this tile's (every group but the newest)
      if (tile + int(gridDim.y) < ntiles) stage(tile + gridDim.y, b ^ 1);
      hg::kernels::cuda::async_commit();  // possibly empty: the count stays one a tile
      hg::kernels::cuda::async_wait<1>();
    } else {
      __syncthreads();  // the previous tile's reads are done
      stage(tile, 0);
      hg::kernels::cuda::async_commit();
      hg::kernels::cuda::async_wait<0>();
    }
    __syncthreads();
    const uint4* xs = smem + b * buffer_slots;
    const uint4* gs = xs + XR * row_slots;
    const int i0 = tile % RT * kTileRows;
#pragma unroll 1
    for (int r = 0; r < kTileRows / 2; ++r) {
      const int m = 2 * r + p;  // output row i0 + m; x rows i0 + m - 5 .. + 5 = staged m .. m + 10
      if (i0 + m >= d.H) break;
#pragma unroll 1
      for (int mt = 0; mt < nch; ++mt) {  // input columns s0 = 16 mt - 5 .. + 15 (staged 16 mt ..)
        // A: rows g and g + 8 (zero from 11 on), columns 2 cq, + 1 and + 8, + 9
        uint32_t a[8][4];
#pragma unroll
        for (int f = 0; f < 4; ++f) {
          const int sr = m + g + 8 * (f & 1), n = 16 * mt + 2 * cq + 8 * (f >> 1);
          if (g + 8 * (f & 1) > 2 * kR) {
#pragma unroll
            for (int k = 0; k < 8; ++k) a[k][f] = 0u;
            continue;
          }
          pixel_pair(xs + sr * row_slots + n * 2 + (h ^ (cq >> 1)), f, a);
        }
#pragma unroll
        for (int djc = 0; djc < 2; ++djc) {
          // B[k][g] = grad_y[i][s0 + k - dj0 - g], k = 2 cq, + 1 (b0) and + 8, + 9 (b1): of the
          // two columns the one of parity q; s0 - dj0 is even, so column s0 + 2 cq - dj0 - g has
          // g's parity, and the value is in the high half (k = 2 cq + 1) when g's parity is not q
          const int col = 16 * mt - 5 + 2 * cq - (djc ? 3 : -kR) - g + bsel;
          const int pi = (col + 16) >> 1;  // plane q's pixel; b1's is pi + 4
          const uint4* gr = gs + (q * kTileRows + m) * gw * 2;
          uint32_t b0[8], b1[8];
          b_frag(gr[pi * 2 + (h ^ ((pi >> 2) & 1))], bsel, b0);
          b_frag(gr[(pi + 4) * 2 + (h ^ (((pi + 4) >> 2) & 1))], bsel, b1);
          if (djc == 1 && g >= 3)  // dj = 3 + g > 5: B's column is zero (no branch round the mma)
#pragma unroll
            for (int cl = 0; cl < 8; ++cl) b0[cl] = b1[cl] = 0u;
#pragma unroll
          for (int cl = 0; cl < 8; ++cl) mma(a[cl], b0[cl], b1[cl], acc[cl][djc]);
        }
      }
    }
    if (kBuffers == 2) __syncthreads();  // this buffer's reads are done before it is staged again
  }
  // D[m][n]: lane holds (g, 2 cq), (g, 2 cq + 1), (g + 8, 2 cq), (g + 8, 2 cq + 1)
#pragma unroll
  for (int cl = 0; cl < 8; ++cl)
#pragma unroll
    for (int djc = 0; djc < 2; ++djc)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = g + 8 * (e >> 1), col = 8 * djc + 2 * cq + (e & 1);
        part[(((int64_t(blockIdx.y) * d.C + c0 + 8 * h + cl) * 2 + p) * 2 + q) * 256 + row * 16 +
             col] = acc[cl][djc][e];
      }
}

/// The Haar LL band of x, the input of level 1 (docs/wtconv.md: (a + b + c + d) / 2, x zero
/// outside: odd sizes): ll (B, ceil(H / 2), ceil(W / 2), C) bf16, an f32 sum; a thread 8 channels.
__global__ void ll_kernel(const __nv_bfloat16* __restrict__ x, int B, int H, int W, int C,
                          __nv_bfloat16* __restrict__ ll) {
  const int H2 = (H + 1) / 2, W2 = (W + 1) / 2, C8 = C / 8;
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= int64_t(B) * H2 * W2 * C8) return;
  const int c = int(e % C8) * 8;
  const int64_t px = e / C8;
  const int j = int(px % W2), i = int(px / W2 % H2), b = int(px / (int64_t(W2) * H2));
  float s[8] = {};
  for (int a = 0; a < 2; ++a)
    for (int bb = 0; bb < 2; ++bb) {
      const int ii = 2 * i + a, jj = 2 * j + bb;
      if (ii >= H || jj >= W) continue;
      const uint4 v = *reinterpret_cast<const uint4*>(x + ((int64_t(b) * H + ii) * W + jj) * C + c);
      const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        s[2 * q] += __uint_as_float(w[q] << 16);
        s[2 * q + 1] += __uint_as_float(w[q] & 0xffff0000u);
      }
    }
  uint4 o;
  o.x = pack2(0.5f * s[0], 0.5f * s[1]);
  o.y = pack2(0.5f * s[2], 0.5f * s[3]);
  o.z = pack2(0.5f * s[4], 0.5f * s[5]);
  o.w = pack2(0.5f * s[6], 0.5f * s[7]);
  *reinterpret_cast<uint4*>(ll + e * 8) = o;
}

/// E of every channel (host, double): the base taps plus the level-0 branch through the Haar
/// signs (sigma_s(a, b): s = 0 all +; 1: + top, - bottom; 2: + left, - right; 3: + on the
/// diagonal).
std::vector<float> parity_kernels(const std::vector<float>& wb, const std::vector<float>& wl,
                                  int C) {
  auto sigma = [](int s, int a, int b) {
    return s == 0 ? 1 : s == 1 ? (a ? -1 : 1) : s == 2 ? (b ? -1 : 1) : (a == b ? 1 : -1);
  };
  std::vector<float> E(size_t(C) * 4 * kTaps * kTaps);
  for (int c = 0; c < C; ++c)
    for (int p = 0; p < 2; ++p)
      for (int q = 0; q < 2; ++q) {
        std::vector<double> e(kTaps * kTaps, 0.0);
        for (int di = -2; di <= 2; ++di)
          for (int dj = -2; dj <= 2; ++dj)
            e[(kR + di) * kTaps + kR + dj] += wb[(size_t(c) * kK + 2 + di) * kK + 2 + dj];
        for (int s = 0; s < 4; ++s)
          for (int uu = 0; uu < kK; ++uu)
            for (int vv = 0; vv < kK; ++vv)
              for (int a = 0; a < 2; ++a)
                for (int b = 0; b < 2; ++b) {
                  const int di = 2 * (uu - 2) + a - p, dj = 2 * (vv - 2) + b - q;
                  e[(kR + di) * kTaps + kR + dj] += sigma(s, p, q) * sigma(s, a, b) / 4.0 *
                                                    wl[((size_t(c) * 4 + s) * kK + uu) * kK + vv];
                }
        for (int k = 0; k < kTaps * kTaps; ++k)
          E[((size_t(c) * 2 + p) * 2 + q) * kTaps * kTaps + k] = float(e[k]);
      }
  return E;
}

/// The kernels of the adjoint (the backward data, grad_x from grad_y): the same form with
/// E'[p][q][5 + di][5 + dj] = E[(p + di) % 2][(q + dj) % 2][5 - di][5 - dj] (y[i][j] reads x[i +
/// di][j + dj] with E[i % 2][j % 2][di][dj]; seen from x's pixel, i = a + di' has parity
/// (a + di') % 2 and offset -di'). The levels >= 1 term's adjoint (R's gradient, the 2 x 2 sums of
/// grad_y / 2) and the bias's (the sum of grad_y) are separate reductions, not this pass.
std::vector<float> adjoint_kernels(const std::vector<float>& E, int C) {
  std::vector<float> A(E.size());
  for (int c = 0; c < C; ++c)
    for (int p = 0; p < 2; ++p)
      for (int q = 0; q < 2; ++q)
        for (int di = -kR; di <= kR; ++di)
          for (int dj = -kR; dj <= kR; ++dj)
            A[((size_t(c) * 2 + p) * 2 + q) * kTaps * kTaps + (kR + di) * kTaps + kR + dj] =
                E[((size_t(c) * 2 + ((p + di) & 1)) * 2 + ((q + dj) & 1)) * kTaps * kTaps +
                  (kR - di) * kTaps + kR - dj];
  return A;
}

struct Case {
  int B, H, W, C;
};

float bf(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }

/// The product's weights of one level (L = 1) with scales 1: base (C, 1, 5, 5) and bias (C), the
/// level's (4C, 1, 5, 5), f32 on the GPU.
hg::kernels::WTConvWeights product_weights(const std::vector<float>& wb,
                                           const std::vector<float>& wl,
                                           const std::vector<float>& bias, int C) {
  using hg::Tensor;
  hg::kernels::WTConvWeights w;
  w.base_weight = Tensor::from_vector({C, 1, kK, kK}, wb).to(hg::Device::cuda);
  w.base_bias = Tensor::from_vector({C}, bias).to(hg::Device::cuda);
  w.base_scale = Tensor::full({1, C, 1, 1}, 1.0, hg::DType::f32, hg::Device::cuda);
  w.wavelet_weight.push_back(Tensor::from_vector({4 * C, 1, kK, kK}, wl).to(hg::Device::cuda));
  w.wavelet_scale.push_back(Tensor::full({1, 4 * C, 1, 1}, 1.0, hg::DType::f32, hg::Device::cuda));
  return w;
}

/// `v` (B, H, W, C) as a bf16 tensor on the GPU.
hg::Tensor bf16_on_gpu(const std::vector<float>& v, const Case& c) {
  return hg::Tensor::from_vector({c.B, c.H, c.W, c.C}, v).to(hg::DType::bf16).to(hg::Device::cuda);
}

/// One of the forward kernels (variant 0: p2_forward_kernel; 1: p2_forward16_kernel<2>; 2:
/// p2_forward16_kernel<1>) with its launch geometry and its weights on the GPU (E for variant 0,
/// p2_table's words for the others).
struct P2Forward {
  int variant;
  Dims d{};
  size_t smem = 0;
  dim3 grid;
  float* dE = nullptr;
  uint32_t* dtab = nullptr;
  P2Forward(int v, const Case& c) : variant(v) {
    d = Dims{c.B, c.H, c.W, c.C, (c.W + 7) / 8, 0};
    d.rw = staged_width(d.T);
    const int RT = (c.H + kRows - 1) / kRows, CT = (c.W + kCols16 - 1) / kCols16;
    smem = variant ? smem16_bytes() : smem_bytes(d);
    if (variant == 1)
      CK(cudaFuncSetAttribute(p2_forward16_kernel<2>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              int(smem)));
    else if (variant == 2)
      CK(cudaFuncSetAttribute(p2_forward16_kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              int(smem)));
    else
      CK(cudaFuncSetAttribute(p2_forward_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              int(smem)));
    grid = dim3(unsigned(c.C / kCh), unsigned(c.B * RT * (variant ? CT : 1)));
    CK(cudaMalloc(&dE, size_t(c.C) * 4 * kTaps * kTaps * 4));
    CK(cudaMalloc(&dtab, size_t(c.C) * kChWords * 4));
  }
  ~P2Forward() {
    cudaFree(dE);
    cudaFree(dtab);
  }
  P2Forward(const P2Forward&) = delete;
  P2Forward& operator=(const P2Forward&) = delete;
  const char* name() const { return variant == 2 ? "p2 n16 1blk" : variant ? "p2 n16" : "p2"; }
  void set(const std::vector<float>& E, int C) {
    const std::vector<uint32_t> t = p2_table(E, C);
    CK(cudaMemcpy(dE, E.data(), E.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dtab, t.data(), t.size() * 4, cudaMemcpyHostToDevice));
  }
  void launch(const __nv_bfloat16* x, const float* bias, const __nv_bfloat16* R,
              __nv_bfloat16* y) const {
    if (variant == 1)
      p2_forward16_kernel<2>
          <<<grid, dim3(32, kWarps), smem, cudaStreamPerThread>>>(x, dtab, bias, R, d, y);
    else if (variant == 2)
      p2_forward16_kernel<1>
          <<<grid, dim3(32, kWarps), smem, cudaStreamPerThread>>>(x, dtab, bias, R, d, y);
    else
      p2_forward_kernel<<<grid, dim3(32, kWarps), smem, cudaStreamPerThread>>>(x, dE, bias, R, d,
                                                                               y);
    CK(cudaGetLastError());
  }
};

/// Runs the forward variants on random x, weights and R at `c`; checks each against the E loop
/// in double (relative to max |y|: bf16 rounding of x, E and y) and, with R = 0, against the
/// product's fused forward at L = 1; returns false when a check fails. With reps == 0 also the
/// backward data (each variant with the adjoint's kernels E'); with reps > 0 times both, the
/// product's L = 1 forward and its 7x7 forward.
bool run(const Case& c, unsigned seed, bool with_r, int reps) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  const int H2 = (c.H + 1) / 2, W2 = (c.W + 1) / 2;
  const size_t n = size_t(c.B) * c.H * c.W * c.C, nr = size_t(c.B) * H2 * W2 * c.C;
  std::vector<float> x(n), wb(size_t(c.C) * kK * kK), wl(size_t(c.C) * 4 * kK * kK), bias(c.C),
      R(nr, 0.f);
  for (auto& v : x) v = bf(nd(gen));
  for (auto& v : wb) v = 0.1f * nd(gen);
  for (auto& v : wl) v = 0.1f * nd(gen);
  for (auto& v : bias) v = 0.1f * nd(gen);
  if (with_r)
    for (auto& v : R) v = bf(nd(gen));  // stored as bf16, as the product's level outputs
  const std::vector<float> E = parity_kernels(wb, wl, c.C);
  std::vector<__nv_bfloat16> xh(n);
  for (size_t i = 0; i < n; ++i) xh[i] = __float2bfloat16_rn(x[i]);
  __nv_bfloat16 *dx, *dy;
  float *db, *dz;
  __nv_bfloat16* dR;
  CK(cudaMalloc(&dx, n * 2));
  CK(cudaMalloc(&dy, n * 2));
  CK(cudaMalloc(&db, bias.size() * 4));
  CK(cudaMalloc(&dz, bias.size() * 4));
  CK(cudaMalloc(&dR, nr * 2));
  CK(cudaMemcpy(dx, xh.data(), n * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, bias.data(), bias.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(dz, 0, bias.size() * 4));
  std::vector<__nv_bfloat16> Rh(nr);
  for (size_t i = 0; i < nr; ++i) Rh[i] = __float2bfloat16_rn(R[i]);
  CK(cudaMemcpy(dR, Rh.data(), nr * 2, cudaMemcpyHostToDevice));
  // the E loop in double, on the bf16-rounded E the kernels multiply
  std::vector<double> ref(n);
  double ymax = 0;
  for (int b = 0; b < c.B; ++b)
    for (int i = 0; i < c.H; ++i)
      for (int j = 0; j < c.W; ++j)
        for (int ch = 0; ch < c.C; ++ch) {
          double s = bias[ch] + 0.5 * R[((size_t(b) * H2 + i / 2) * W2 + j / 2) * c.C + ch];
          const float* ek = &E[((size_t(ch) * 2 + i % 2) * 2 + j % 2) * kTaps * kTaps];
          for (int di = -kR; di <= kR; ++di)
            for (int dj = -kR; dj <= kR; ++dj) {
              const int ii = i + di, jj = j + dj;
              if (ii < 0 || ii >= c.H || jj < 0 || jj >= c.W) continue;
              s += double(bf(ek[(kR + di) * kTaps + kR + dj])) *
                   x[((size_t(b) * c.H + ii) * c.W + jj) * c.C + ch];
            }
          ref[((size_t(b) * c.H + i) * c.W + j) * c.C + ch] = s;
          ymax = std::max(ymax, std::fabs(s));
        }
  // the adjoint's definition with the forward's E: gx[a][b] = sum_ij E[i%2][j%2][a-i][b-j] gy[i][j]
  // (grad_y = x here; small shapes only)
  std::vector<double> gref;
  double gmax = 0;
  if (reps == 0) {
    gref.resize(n);
    for (int b = 0; b < c.B; ++b)
      for (int a = 0; a < c.H; ++a)
        for (int bb = 0; bb < c.W; ++bb)
          for (int ch = 0; ch < c.C; ++ch) {
            double sum = 0;
            for (int i = std::max(0, a - kR); i <= std::min(c.H - 1, a + kR); ++i)
              for (int j = std::max(0, bb - kR); j <= std::min(c.W - 1, bb + kR); ++j)
                sum += double(bf(E[((size_t(ch) * 2 + i % 2) * 2 + j % 2) * kTaps * kTaps +
                                   (kR + a - i) * kTaps + kR + bb - j])) *
                       x[((size_t(b) * c.H + i) * c.W + j) * c.C + ch];
            gref[((size_t(b) * c.H + a) * c.W + bb) * c.C + ch] = sum;
            gmax = std::max(gmax, std::fabs(sum));
          }
  }
  // the product: its fused forward and grad_x at L = 1 (scales 1, R = 0), two passes each
  using hg::Tensor;
  namespace K = hg::kernels;
  const K::WTConvWeights w = product_weights(wb, wl, bias, c.C);
  const Tensor xt = bf16_on_gpu(x, c);
  std::vector<float> yp, gp;
  if (!with_r) {
    yp = K::cuda::wtconv_forward(xt, w, 1, K::WTConvMode::fused)
             .to(hg::DType::f32)
             .to_vector<float>();
    if (reps == 0)
      gp = K::cuda::wtconv_backward(xt, w, xt, 1, true, K::WTConvMode::fused)
               .x.to(hg::DType::f32)
               .to_vector<float>();
  }
  // max |got - want| (NaN where a kernel left its poisoned output unwritten: infinite)
  auto max_diff = [&](const std::vector<__nv_bfloat16>& got, const std::vector<double>& want) {
    double e = 0;
    for (size_t i = 0; i < n; ++i) {
      const double v = __bfloat162float(got[i]);
      e = std::max(e, std::isfinite(v) ? std::fabs(v - want[i]) : INFINITY);
    }
    return e;
  };
  auto as_double = [](const std::vector<float>& v) {
    return std::vector<double>(v.begin(), v.end());
  };
  bool ok = true;
  float t[3] = {0.f, 0.f, 0.f};
  for (int variant = 0; variant < 3; ++variant) {
    P2Forward f(variant, c);
    f.set(E, c.C);
    CK(cudaMemset(dy, 0xff, n * 2));  // poisoned: NaN where nothing is written
    f.launch(dx, db, with_r ? dR : nullptr, dy);
    CK(cudaDeviceSynchronize());
    std::vector<__nv_bfloat16> yh(n);
    CK(cudaMemcpy(yh.data(), dy, n * 2, cudaMemcpyDeviceToHost));
    const double err = max_diff(yh, ref);
    const bool okv = err <= 8e-3 * ymax;
    std::printf("%-16s B %d %3dx%-3d C %3d R %d: max |y - loop| %.3g of max |y| %.3g (%s)\n",
                f.name(), c.B, c.H, c.W, c.C, int(with_r), err, ymax, okv ? "ok" : "FAILED");
    ok = ok && okv;
    if (!with_r) {
      const double ep = max_diff(yh, as_double(yp));
      const bool okp = ep <= 1.6e-2 * ymax;
      std::printf("%-16s against the product's fused forward (L = 1): max diff %.3g (%s)\n", "", ep,
                  okp ? "ok" : "FAILED");
      ok = ok && okp;
    }
    if (reps == 0) {  // the backward data: the kernel with E' on grad_y (= x), no bias, no R
      f.set(adjoint_kernels(E, c.C), c.C);
      CK(cudaMemset(dy, 0xff, n * 2));
      f.launch(dx, dz, nullptr, dy);
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(yh.data(), dy, n * 2, cudaMemcpyDeviceToHost));
      const double ea = max_diff(yh, gref);
      const bool oka = ea <= 8e-3 * gmax;
      std::printf("%-16s backward data (E'): max |gx - loop| %.3g of max |gx| %.3g (%s)\n", "", ea,
                  gmax, oka ? "ok" : "FAILED");
      ok = ok && oka;
      if (!with_r) {
        const double eg = max_diff(yh, as_double(gp));
        const bool okg = eg <= 1.6e-2 * gmax;
        std::printf("%-16s against the product's fused grad_x (L = 1): max diff %.3g (%s)\n", "",
                    eg, okg ? "ok" : "FAILED");
        ok = ok && okg;
      }
    } else {
      t[variant] = median_ms([&] { f.launch(dx, db, with_r ? dR : nullptr, dy); }, reps);
    }
  }
  if (reps > 0) {
    const float t_wt =
        median_ms([&] { K::cuda::wtconv_forward(xt, w, 1, K::WTConvMode::fused); }, reps);
    const auto s7 = K::make_conv2d_shape(c.B, c.H, c.W, c.C, c.C, 7, 7, 1, 3, c.C);
    std::vector<float> w7(size_t(c.C) * 49, 0.01f);
    float* dw7;
    CK(cudaMalloc(&dw7, w7.size() * 4));
    CK(cudaMemcpy(dw7, w7.data(), w7.size() * 4, cudaMemcpyHostToDevice));
    const float t_7 = median_ms(
        [&] {
          K::cuda::depthwise_conv_forward<hg::bf16>(s7, reinterpret_cast<const hg::bf16*>(dx), dw7,
                                                    db, reinterpret_cast<hg::bf16*>(dy));
        },
        reps);
    CK(cudaFree(dw7));
    std::printf(
        "%-16s time (ms): p2 %.4f, p2 n16 %.4f (%.0f GB/s at x + y), p2 n16 1blk %.4f, product"
        " WTConv L = 1 forward %.4f, our 7x7 forward %.4f\n",
        "", t[0], t[1], 2.0 * n * 2 / (t[1] * 1e6), t[2], t_wt, t_7);
  }
  CK(cudaFree(dx));
  CK(cudaFree(dy));
  CK(cudaFree(db));
  CK(cudaFree(dz));
  CK(cudaFree(dR));
  return ok;
}

/// The whole forward at L levels the period-2 way, against the product's fused forward at L:
/// ll_1 = Haar LL of x (ll_kernel); R = the levels >= 1 term, here the product's own forward on
/// ll_1 with levels 1 .. L - 1 and a zero base conv and bias (its output is exactly the
/// reconstruction that level 0's LL band receives, docs/wtconv.md); then one p2 pass with R. The
/// timing of that R is pessimistic: the product also runs its zero base conv on ll_1 (a quarter
/// of x). With `adjoint`, grad_x of the same layer (grad_y = a random G) against the product's
/// fused backward: the operator is linear, so grad_x = the p2 pass with the adjoint kernels E' on
/// G, no bias, plus half of T'(LL(G)) at each pixel, T' the levels >= 1's adjoint: the product's
/// grad_x of that zero-base layer with grad_y = LL(G) (the 2 x 2 block sums / 2 are the adjoint of
/// R / 2 at each pixel); pessimistic again, as that backward also forms its weight gradients.
/// Returns false when the result differs from the product's by more than two bf16 roundings.
bool run_full(const Case& c, int L, bool adjoint, unsigned seed, int reps) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  const int H2 = (c.H + 1) / 2, W2 = (c.W + 1) / 2;
  std::vector<float> x(size_t(c.B) * c.H * c.W * c.C), wb(size_t(c.C) * kK * kK), bias(c.C),
      gy(x.size());
  for (auto& v : x) v = bf(nd(gen));
  for (auto& v : gy) v = bf(nd(gen));
  for (auto& v : wb) v = 0.1f * nd(gen);
  for (auto& v : bias) v = 0.1f * nd(gen);
  std::vector<std::vector<float>> wl(L, std::vector<float>(size_t(c.C) * 4 * kK * kK));
  for (auto& lv : wl)
    for (auto& v : lv) v = 0.1f * nd(gen);
  using hg::Tensor;
  namespace K = hg::kernels;
  K::WTConvWeights w = product_weights(wb, wl[0], bias, c.C);
  for (int l = 1; l < L; ++l) {
    w.wavelet_weight.push_back(
        Tensor::from_vector({4 * c.C, 1, kK, kK}, wl[l]).to(hg::Device::cuda));
    w.wavelet_scale.push_back(
        Tensor::full({1, 4 * c.C, 1, 1}, 1.0, hg::DType::f32, hg::Device::cuda));
  }
  // the levels >= 1 alone: zero base conv and bias, levels 1 .. L - 1
  K::WTConvWeights upper;
  upper.base_weight = Tensor::full({c.C, 1, kK, kK}, 0.0, hg::DType::f32, hg::Device::cuda);
  upper.base_bias = Tensor::full({c.C}, 0.0, hg::DType::f32, hg::Device::cuda);
  upper.base_scale = w.base_scale;
  upper.wavelet_weight.assign(w.wavelet_weight.begin() + 1, w.wavelet_weight.end());
  upper.wavelet_scale.assign(w.wavelet_scale.begin() + 1, w.wavelet_scale.end());
  const Tensor xt = bf16_on_gpu(x, c), gt = bf16_on_gpu(gy, c);
  const Tensor in = adjoint ? gt : xt;  // what the pass reads: x, or grad_y for grad_x
  const Tensor ll = Tensor::empty({c.B, H2, W2, c.C}, hg::DType::bf16, hg::Device::cuda);
  const Tensor y = Tensor::empty({c.B, c.H, c.W, c.C}, hg::DType::bf16, hg::Device::cuda);
  const std::vector<float> E = adjoint ? adjoint_kernels(parity_kernels(wb, wl[0], c.C), c.C)
                                       : parity_kernels(wb, wl[0], c.C);
  if (adjoint) std::fill(bias.begin(), bias.end(), 0.f);  // grad_x has no bias term
  float* db;
  CK(cudaMalloc(&db, bias.size() * 4));
  CK(cudaMemcpy(db, bias.data(), bias.size() * 4, cudaMemcpyHostToDevice));
  auto product = [&] {  // the product's forward, or its backward (grad_x and the weights)
    return adjoint ? K::cuda::wtconv_backward(xt, w, gt, 1, true, K::WTConvMode::fused).x
                   : K::cuda::wtconv_forward(xt, w, 1, K::WTConvMode::fused);
  };
  const std::vector<float> ref = product().to(hg::DType::f32).to_vector<float>();
  bool ok = true;
  float t[3] = {0.f, 0.f, 0.f};
  for (int variant = 0; variant < 3; ++variant) {
    P2Forward f(variant, c);
    f.set(E, c.C);
    auto pass = [&] {
      const int64_t n8 = int64_t(c.B) * H2 * W2 * c.C / 8;
      ll_kernel<<<unsigned((n8 + 255) / 256), 256, 0, cudaStreamPerThread>>>(
          reinterpret_cast<const __nv_bfloat16*>(in.data_ptr()), c.B, c.H, c.W, c.C,
          reinterpret_cast<__nv_bfloat16*>(ll.data_ptr()));
      CK(cudaGetLastError());
      Tensor R;  // on cudaStreamPerThread, the product's stream too (core/cuda_stream.h)
      if (L > 1)
        R = adjoint ? K::cuda::wtconv_backward(ll, upper, ll, 1, true, K::WTConvMode::fused).x
                    : K::cuda::wtconv_forward(ll, upper, 1, K::WTConvMode::fused);
      f.launch(reinterpret_cast<const __nv_bfloat16*>(in.data_ptr()), db,
               L > 1 ? reinterpret_cast<const __nv_bfloat16*>(R.data_ptr()) : nullptr,
               reinterpret_cast<__nv_bfloat16*>(y.data_ptr()));
    };
    CK(cudaMemsetAsync(y.data_ptr(), 0xff, size_t(y.numel()) * 2, cudaStreamPerThread));
    pass();  // poisoned above: NaN where unwritten
    CK(cudaStreamSynchronize(cudaStreamPerThread));
    const std::vector<float> got = y.to(hg::DType::f32).to_vector<float>();
    double e = 0, m = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      e = std::max(e, std::isfinite(got[i]) ? std::fabs(double(got[i]) - ref[i]) : INFINITY);
      m = std::max(m, std::fabs(double(ref[i])));
    }
    const bool okv = e <= 1.6e-2 * m;
    std::printf(
        "%-16s B %d %3dx%-3d C %3d L %d (%s): max |out - product| %.3g of max |out| %.3g (%s)\n",
        adjoint ? "p2 full grad_x" : "p2 full forward", c.B, c.H, c.W, c.C, L, f.name(), e, m,
        okv ? "ok" : "FAILED");
    ok = ok && okv;
    if (reps > 0) t[variant] = median_ms(pass, reps);
  }
  if (reps > 0) {
    const float t_wt = median_ms(product, reps);
    std::printf(
        "%-16s time (ms): LL + levels >= 1 (product) + p2 %.4f, the same with p2 n16 %.4f"
        " (1blk %.4f), product WTConv L = %d %s %.4f\n",
        "", t[0], t[1], t[2], L, adjoint ? "backward (grad_x and the weights)" : "forward", t_wt);
  }
  CK(cudaFree(db));
  return ok;
}

/// The filters' gradients from dE (the transpose of parity_kernels): d base[c][u][v] = sum_pq
/// dE[p][q][u - 2][v - 2]; d wl[c][s][u][v] = sum_pqab sigma_s(p, q) sigma_s(a, b) / 4
/// dE[p][q][2 (u - 2) + a - p][2 (v - 2) + b - q]. dE: (C, 2, 2, 16, 16), rows / columns d + 5.
void filter_grads(const std::vector<double>& dE, int C, std::vector<double>& gb,
                  std::vector<double>& gl) {
  auto sigma = [](int s, int a, int b) {
    return s == 0 ? 1 : s == 1 ? (a ? -1 : 1) : s == 2 ? (b ? -1 : 1) : (a == b ? 1 : -1);
  };
  gb.assign(size_t(C) * kK * kK, 0.0);
  gl.assign(size_t(C) * 4 * kK * kK, 0.0);
  auto at = [&](int c, int p, int q, int di, int dj) {
    return dE[((size_t(c) * 2 + p) * 2 + q) * 256 + (kR + di) * 16 + kR + dj];
  };
  for (int c = 0; c < C; ++c)
    for (int p = 0; p < 2; ++p)
      for (int q = 0; q < 2; ++q) {
        for (int u = 0; u < kK; ++u)
          for (int v = 0; v < kK; ++v)
            gb[(size_t(c) * kK + u) * kK + v] += at(c, p, q, u - 2, v - 2);
        for (int s = 0; s < 4; ++s)
          for (int u = 0; u < kK; ++u)
            for (int v = 0; v < kK; ++v)
              for (int a = 0; a < 2; ++a)
                for (int b = 0; b < 2; ++b)
                  gl[((size_t(c) * 4 + s) * kK + u) * kK + v] +=
                      sigma(s, p, q) * sigma(s, a, b) / 4.0 *
                      at(c, p, q, 2 * (u - 2) + a - p, 2 * (v - 2) + b - q);
      }
}

/// Max |a - ref| of the f32 tensor `t` (as a vector) against `ref`, over max |ref|.
double rel_err(const hg::Tensor& t, const std::vector<double>& ref) {
  const std::vector<float> v = t.to(hg::Device::cpu).to_vector<float>();
  double e = 0, m = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    e = std::max(e, std::isfinite(v[i]) ? std::fabs(v[i] - ref[i]) : INFINITY);
    m = std::max(m, std::fabs(ref[i]));
  }
  return e / m;
}

/// The weight gradient on random x and grad_y at `c`: dE against a CPU loop in double (and the
/// unused rows and columns of the partial sums exactly 0), then the filters' gradients against
/// the product's fused backward at L = 1; with reps > 0 times the kernel against the product's
/// L = 1 backward (grad_x and the weights) and our 7x7's weight gradient.
bool run_wgrad(const Case& c, unsigned seed, int reps, int variant) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  const size_t n = size_t(c.B) * c.H * c.W * c.C;
  std::vector<float> x(n), gyv(n);
  for (auto& v : x) v = bf(nd(gen));
  for (auto& v : gyv) v = bf(nd(gen));
  Dims d{c.B, c.H, c.W, c.C, (c.W + 7) / 8, 0};
  d.rw = staged_width(d.T);
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  // variant 0: the measured kernel (16-row tiles, one buffer); 1: 8-row tiles, two buffers
  const int rows = variant ? 8 : kWRows, buffers = variant ? 2 : 1;
  const char* name = variant ? "p2 wgrad 8x2" : "p2 wgrad";
  const auto kernel = variant ? p2_wgrad_kernel<8, 2> : p2_wgrad_kernel<kWRows, 1>;
  const int tiles = c.B * ((c.H + rows - 1) / rows);
  // the checks (reps == 0) use at most 2 blocks a channel group, so that blocks walk several
  // tiles (the two-buffer variant's pipeline); the timings fill the device
  const int S = std::max(1, std::min(tiles, reps == 0 ? 2 : sms / (c.C / kCh)));
  const size_t np = size_t(S) * c.C * 4 * 256;
  std::vector<__nv_bfloat16> xh(n), gh(n);
  for (size_t i = 0; i < n; ++i)
    xh[i] = __float2bfloat16_rn(x[i]), gh[i] = __float2bfloat16_rn(gyv[i]);
  __nv_bfloat16 *dx, *dg;
  float* dp;
  CK(cudaMalloc(&dx, n * 2));
  CK(cudaMalloc(&dg, n * 2));
  CK(cudaMalloc(&dp, np * 4));
  CK(cudaMemcpy(dx, xh.data(), n * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dg, gh.data(), n * 2, cudaMemcpyHostToDevice));
  CK(cudaMemset(dp, 0xff, np * 4));  // poisoned
  const size_t smem = wgrad_smem_bytes(d, rows, buffers);
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const dim3 grid(unsigned(c.C / kCh), unsigned(S));
  auto launch = [&] {
    kernel<<<grid, dim3(32, kWarps), smem, cudaStreamPerThread>>>(dx, dg, d, dp);
    CK(cudaGetLastError());
  };
  launch();
  CK(cudaStreamSynchronize(cudaStreamPerThread));
  std::vector<float> part(np);
  CK(cudaMemcpy(part.data(), dp, np * 4, cudaMemcpyDeviceToHost));
  std::vector<double> dE(size_t(c.C) * 4 * 256, 0.0);
  bool unused_zero = true;
  for (int sI = 0; sI < S; ++sI)
    for (size_t k = 0; k < dE.size(); ++k) {
      const float v = part[size_t(sI) * dE.size() + k];
      const int row = int(k % 256) / 16, col = int(k % 16);
      if (row > 2 * kR || col > 2 * kR) unused_zero = unused_zero && v == 0.f;
      dE[k] += v;
    }
  bool ok = unused_zero;
  if (reps == 0) {  // the loop in double (small shapes only)
    double e = 0, m = 0;
    for (int ch = 0; ch < c.C; ++ch)
      for (int p = 0; p < 2; ++p)
        for (int q = 0; q < 2; ++q)
          for (int di = -kR; di <= kR; ++di)
            for (int dj = -kR; dj <= kR; ++dj) {
              double sum = 0;
              for (int b = 0; b < c.B; ++b)
                for (int i = p; i < c.H; i += 2)
                  for (int j = q; j < c.W; j += 2) {
                    const int ii = i + di, jj = j + dj;
                    if (ii < 0 || ii >= c.H || jj < 0 || jj >= c.W) continue;
                    sum += double(gyv[((size_t(b) * c.H + i) * c.W + j) * c.C + ch]) *
                           x[((size_t(b) * c.H + ii) * c.W + jj) * c.C + ch];
                  }
              const double got =
                  dE[((size_t(ch) * 2 + p) * 2 + q) * 256 + (kR + di) * 16 + kR + dj];
              e = std::max(e, std::isfinite(got) ? std::fabs(got - sum) : INFINITY);
              m = std::max(m, std::fabs(sum));
            }
    const bool okl = e <= 1e-4 * m;
    std::printf(
        "%-16s B %d %3dx%-3d C %3d: max |dE - loop| %.3g of max |dE| %.3g, unused 0: %s (%s)\n",
        name, c.B, c.H, c.W, c.C, e, m, unused_zero ? "yes" : "NO",
        okl && unused_zero ? "ok" : "FAILED");
    ok = ok && okl;
  }
  // the product's weight gradients at L = 1 (random weights: the gradients do not depend on them)
  using hg::Tensor;
  namespace K = hg::kernels;
  std::vector<float> wb(size_t(c.C) * kK * kK), wl(size_t(c.C) * 4 * kK * kK), bias(c.C);
  for (auto& v : wb) v = 0.1f * nd(gen);
  for (auto& v : wl) v = 0.1f * nd(gen);
  for (auto& v : bias) v = 0.1f * nd(gen);
  const K::WTConvWeights w = product_weights(wb, wl, bias, c.C);
  const Tensor xt = bf16_on_gpu(x, c);
  const Tensor gt = bf16_on_gpu(gyv, c);
  const K::WTConvGrads pg = K::cuda::wtconv_backward(xt, w, gt, 1, true, K::WTConvMode::fused);
  std::vector<double> gb, gl;
  filter_grads(dE, c.C, gb, gl);
  const double eb = rel_err(pg.base_weight, gb), el = rel_err(pg.wavelet_weight[0], gl);
  const bool okp = eb <= 1.6e-2 && el <= 1.6e-2;
  std::printf(
      "%-16s against the product's fused weight gradients (L = 1): base %.3g, level 0 %.3g"
      " of max (%s)\n",
      "", eb, el, okp ? "ok" : "FAILED");
  ok = ok && okp;
  if (reps > 0) {
    const float t_p2 = median_ms(launch, reps);
    const float t_wt = median_ms(
        [&] { K::cuda::wtconv_backward(xt, w, gt, 1, true, K::WTConvMode::fused); }, reps);
    const auto s7 = K::make_conv2d_shape(c.B, c.H, c.W, c.C, c.C, 7, 7, 1, 3, c.C);
    float *gw7, *gb7;
    CK(cudaMalloc(&gw7, size_t(c.C) * 49 * 4));
    CK(cudaMalloc(&gb7, size_t(c.C) * 4));
    const float t_7 = median_ms(
        [&] {
          K::cuda::depthwise_conv_backward_weight<hg::bf16>(
              s7, reinterpret_cast<const hg::bf16*>(dx), reinterpret_cast<const hg::bf16*>(dg), gw7,
              gb7);
        },
        reps);
    CK(cudaFree(gw7));
    CK(cudaFree(gb7));
    std::printf(
        "%-16s time (ms): %s %.4f (S = %d partial sets), product WTConv L = 1 backward"
        " (grad_x + weights) %.4f, our 7x7 weight gradient %.4f\n",
        "", name, t_p2, S, t_wt, t_7);
  }
  CK(cudaFree(dx));
  CK(cudaFree(dg));
  CK(cudaFree(dp));
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  // `stage`: the two forward variants at 96/56 only (checked, then timed), for a profiler
  if (argc > 2 && std::string(argv[2]) == "stage")
    return run({64, 56, 56, 96}, 7, false, reps) ? 0 : 1;
  bool ok = true;
  ok &= run({2, 19, 21, 16}, 1, false, 0);
  ok &= run({1, 13, 11, 32}, 2, true, 0);
  ok &= run({2, 7, 9, 48}, 3, false, 0);
  ok &= run({1, 40, 33, 16}, 4, true, 0);
  for (const Case& c :
       {Case{64, 56, 56, 96}, Case{64, 28, 28, 192}, Case{64, 14, 14, 384}, Case{64, 7, 7, 768}})
    ok &= run(c, 7, false, reps);
  for (const bool adjoint : {false, true}) {  // the forward, then grad_x
    ok &= run_full({2, 19, 21, 16}, 3, adjoint, 21, 0);
    ok &= run_full({1, 40, 33, 32}, 4, adjoint, 22, 0);
    ok &= run_full({2, 13, 11, 16}, 1, adjoint, 23, 0);
    for (const auto& [cs, L] :
         {std::pair{Case{64, 56, 56, 96}, 5}, std::pair{Case{64, 28, 28, 192}, 4},
          std::pair{Case{64, 14, 14, 384}, 3}, std::pair{Case{64, 7, 7, 768}, 2}})
      ok &= run_full(cs, L, adjoint, 24, reps);
  }
  for (int variant = 0; variant < 2; ++variant) {  // the measured weight gradient, then 8x2
    ok &= run_wgrad({2, 19, 21, 16}, 11, 0, variant);
    ok &= run_wgrad({1, 13, 11, 32}, 12, 0, variant);
    ok &= run_wgrad({1, 40, 33, 16}, 13, 0, variant);
    ok &= run_wgrad({3, 9, 21, 16}, 14, 0, variant);  // 8-row tiles: 2 a 9-row image, 6 in all
    for (const Case& c :
         {Case{64, 56, 56, 96}, Case{64, 28, 28, 192}, Case{64, 14, 14, 384}, Case{64, 7, 7, 768}})
      ok &= run_wgrad(c, 17, reps, variant);
  }
  std::printf("%s\n", ok ? "all checks passed" : "SOME CHECK FAILED");
  return ok ? 0 : 1;
}
