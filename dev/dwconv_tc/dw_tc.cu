// Kernel lab (fourteenth session): a depthwise K x K "same" convolution (stride 1, NHWC, bf16 in
// and out, f32 accumulation) on the tensor cores, against the product's staged FMA kernel
// (kernels/cuda/depthwise_conv.cu, conv_staged_kernel).
//
// Why: issue 12 asks WTConv's kernels to be 1.19x as efficient per multiply-add as our 7x7, and
// the product's depthwise kernels run the FP32 pipe at ~1.1 outputs a clock per multiprocessor at
// K = 5 (7.4 T multiply-adds/s, docs/perf-notes.md, thirteenth session): latency and issue bound,
// 1.2 TB/s. A tensor-core form has ~10x the multiply-add rate even wasting two thirds of it, so
// the kernel would be bound by memory (~3x faster at 3.5 TB/s).
//
// The form (per channel; the filter is rounded to bf16, as the product does for bf16 activations):
// for a tile of 16 output rows x 8 output columns of one channel and filter row p,
//   D[m][n] += sum_k A_p[m][k] B_p[k][n],  A_p[m][k] = x(r0 + m + p - pad, j0 + k - pad),
//   B_p[k][n] = w[p][k - n] for 0 <= k - n < K, else 0,
// one mma.sync m16n8k16 per filter row (k = n + q <= 7 + K - 1 <= 15: K <= 9), K of them per tile:
// 16 x 8 x K^2 useful of 16 x 8 x 16 x K multiply-adds (K / 16: 31% at K = 5, 44% at K = 7).
// A block stages 16 + K - 1 input rows of 16 channels as per-channel planes in shared memory
// (ldmatrix wants 8 consecutive columns of one channel in 16 bytes), each warp runs 4 channels'
// tiles, and the outputs go back through shared memory as NHWC for 16-byte stores.
//
// Not in the product: the mma sums in another order (and the tensor core's f32 accumulation is its
// own), so outputs differ from the product's fmaf chain by rounding; the CPU references that
// reproduce that chain bit for bit (kernels/depthwise_conv.h) would have to take a tolerance.
//
// Usage: build/dev/dwconv_tc/dwconv_tc_lab [reps]: checks odd shapes and every K in {3, 5, 7, 9}
// against a CPU loop in double, then times the WTConvNeXt-T / ConvNeXt-T shapes (B = 64) against
// the product's depthwise_conv_forward<bf16>. Exit status 1 when a check fails.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "dev/lab_util.cuh"
#include "kernels/conv2d.h"
#include "kernels/depthwise_conv.h"

namespace {

constexpr int kCB = 16;    // channels per block
constexpr int kWarps = 4;  // each warp: kCB / kWarps channels
constexpr int kTR = 16;    // output rows per block (the mma's M)

/// Staged row pitch in elements: at least `cols`, and 16 bytes past a multiple of 128 bytes, so the
/// 8 rows an ldmatrix reads fall on 8 different 16-byte bank groups.
__host__ __device__ inline int plane_pitch(int cols) { return (cols + 55) / 64 * 64 + 8; }

struct Geom {
  int N, H, W, C, K, pad;
  int NB;     // 8-column output blocks
  int RS;     // staged rows: kTR + K - 1
  int WSP;    // staged columns used: 8 NB + 8
  int PITCH;  // staged row pitch (elements)
};

Geom geom(int N, int H, int W, int C, int K) {
  Geom g{N, H, W, C, K, K / 2, (W + 7) / 8, kTR + K - 1, 0, 0};
  g.WSP = 8 * g.NB + 8;
  g.PITCH = plane_pitch(g.WSP);
  return g;
}

size_t smem_bytes(const Geom& g) {
  const size_t in = size_t(kCB) * g.RS * g.PITCH * 2;     // planes
  const size_t out = size_t(kTR) * (8 * g.NB) * kCB * 2;  // [row][col][ch] bf16
  return in + out;
}

__device__ inline uint32_t pack_bf16(float lo, float hi) {
  const uint32_t l = __bfloat16_as_ushort(__float2bfloat16_rn(lo));
  const uint32_t h = __bfloat16_as_ushort(__float2bfloat16_rn(hi));
  return l | (h << 16);
}

/// The B fragments of channel c's filter rows (m16n8k16, .col): b[p][0] holds B_p[k][n] for
/// k = 2 tig, 2 tig + 1, b[p][1] for k = 2 tig + 8, 2 tig + 9, n = grp, where B_p[k][n] =
/// w[p][k - n] for 0 <= k - n < K, else 0. flip: the filter rotated by 180 degrees (backward data:
/// grad_x = conv(grad_y, rot(w))).
template <int K>
__device__ __forceinline__ void toeplitz_b(const float* __restrict__ w, int c, int grp, int tig,
                                           bool flip, uint32_t (&b)[K][2]) {
#pragma unroll
  for (int p = 0; p < K; ++p) {
    float v[4];
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      const int k = 2 * tig + (h & 1) + 8 * (h >> 1), q = k - grp;
      const int pp = flip ? K - 1 - p : p, qq = flip ? K - 1 - q : q;
      v[h] = (q >= 0 && q < K) ? w[(int64_t(c) * K + pp) * K + qq] : 0.f;
    }
    b[p][0] = pack_bf16(v[0], v[1]);
    b[p][1] = pack_bf16(v[2], v[3]);
  }
}

template <int K>
__global__ void __launch_bounds__(32 * kWarps)
    dw_fwd_tc_kernel(const __nv_bfloat16* __restrict__ x, const float* __restrict__ w,
                     const float* __restrict__ bias, Geom g, __nv_bfloat16* __restrict__ y) {
  extern __shared__ __align__(16) unsigned char smem[];
  __nv_bfloat16* planes = reinterpret_cast<__nv_bfloat16*>(smem);  // [kCB][RS][PITCH]
  __nv_bfloat16* outs = planes + size_t(kCB) * g.RS * g.PITCH;     // [kTR][8 NB][kCB]
  const int tiles = (g.H + kTR - 1) / kTR;
  const int n = blockIdx.x / tiles, r0 = (blockIdx.x % tiles) * kTR, c0 = blockIdx.y * kCB;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  // 1. stage rows r0 - pad .. r0 - pad + RS - 1, staged column s = input column s - pad, as planes;
  //    16-byte loads of 8 channels, 8 in flight per thread, zeros outside the image.
  const int vecs = g.RS * g.WSP * 2;
  for (int e0 = tid; e0 < vecs; e0 += 8 * 32 * kWarps) {
    uint4 v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int e = e0 + u * 32 * kWarps, half = e & 1, pix = e >> 1;
      const int sr = pix / g.WSP, sc = pix % g.WSP;
      const int r = r0 - g.pad + sr, col = sc - g.pad;
      v[u] = make_uint4(0, 0, 0, 0);
      if (e < vecs && r >= 0 && r < g.H && col >= 0 && col < g.W)
        v[u] = __ldg(reinterpret_cast<const uint4*>(x + ((int64_t(n) * g.H + r) * g.W + col) * g.C +
                                                    c0 + 8 * half));
    }
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int e = e0 + u * 32 * kWarps;
      if (e >= vecs) break;
      const int half = e & 1, pix = e >> 1, sr = pix / g.WSP, sc = pix % g.WSP;
      const __nv_bfloat16* h = reinterpret_cast<const __nv_bfloat16*>(&v[u]);
#pragma unroll
      for (int k = 0; k < 8; ++k) planes[(size_t(8 * half + k) * g.RS + sr) * g.PITCH + sc] = h[k];
    }
  }
  __syncthreads();

  // 2. per channel of this warp: the Toeplitz B fragments of each filter row, then the tiles.
  const int grp = lane >> 2, tig = lane & 3;
  const int mi = lane >> 3, rr = lane & 7;  // ldmatrix: this lane's matrix and row
  const int a_row = rr + 8 * (mi & 1), a_col = 8 * (mi >> 1);
  for (int cl = warp; cl < kCB; cl += kWarps) {
    const int c = c0 + cl;
    uint32_t b[K][2];
    toeplitz_b<K>(w, c, grp, tig, /*flip=*/false, b);
    const float b0 = bias ? bias[c] : 0.f;
    const __nv_bfloat16* plane = planes + size_t(cl) * g.RS * g.PITCH;
    for (int nb = 0; nb < g.NB; ++nb) {
      float d[4] = {b0, b0, b0, b0};
#pragma unroll
      for (int p = 0; p < K; ++p) {
        uint32_t a[4];
        const unsigned addr = static_cast<unsigned>(
            __cvta_generic_to_shared(plane + (p + a_row) * g.PITCH + 8 * nb + a_col));
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                     : "r"(addr));
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[p][0]), "r"(b[p][1]));
      }
      // d0, d1: row grp, columns 2 tig, 2 tig + 1; d2, d3: row grp + 8
#pragma unroll
      for (int h = 0; h < 4; ++h) {
        const int row = grp + 8 * (h >> 1), col = 8 * nb + 2 * tig + (h & 1);
        outs[(size_t(row) * (8 * g.NB) + col) * kCB + cl] = __float2bfloat16_rn(d[h]);
      }
    }
  }
  __syncthreads();

  // 3. the tile back to NHWC: 16 channels of a pixel = two 16-byte stores.
  const int pix_vecs = kTR * g.W * 2;
  for (int e = tid; e < pix_vecs; e += 32 * kWarps) {
    const int half = e & 1, pix = e >> 1, row = pix / g.W, col = pix % g.W;
    if (r0 + row >= g.H) continue;
    const uint4 v =
        *reinterpret_cast<const uint4*>(outs + (size_t(row) * (8 * g.NB) + col) * kCB + 8 * half);
    *reinterpret_cast<uint4*>(y + ((int64_t(n) * g.H + r0 + row) * g.W + col) * g.C + c0 +
                              8 * half) = v;
  }
}

// ---- variant 2: the same form with its shared-memory traffic cut (v1 measured 0.5-0.9x the
// product on the H200, fourteenth session: 2-way conflicts in the staging's 2-byte stores, 8-way in
// the output's, a full ldmatrix.x4 per tile and filter row, 75 KB a block):
//   - staging writes pairs of columns as 4-byte words, one half (8 channels) per warp instruction:
//     conflict-free;
//   - tile nb + 1 reads columns 8 nb + 8 .. 8 nb + 23: its first half is tile nb's second, kept in
//     registers, so each tile loads one ldmatrix.x2 per filter row;
//   - the outputs go back into the channel's own input plane with stmatrix (rows 0-15, the columns
//     the warp no longer reads), then to NHWC: 46-51 KB a block, 4 blocks a multiprocessor.
template <int K>
__global__ void __launch_bounds__(32 * kWarps)
    dw_fwd_tc2_kernel(const __nv_bfloat16* __restrict__ x, const float* __restrict__ w,
                      const float* __restrict__ bias, Geom g, bool flip,
                      __nv_bfloat16* __restrict__ y) {
  extern __shared__ __align__(16) unsigned char smem[];
  __nv_bfloat16* planes = reinterpret_cast<__nv_bfloat16*>(smem);  // [kCB][RS][PITCH]
  const int PS = g.RS * g.PITCH;                                   // plane stride
  const int tiles = (g.H + kTR - 1) / kTR;
  const int n = blockIdx.x / tiles, r0 = (blockIdx.x % tiles) * kTR, c0 = blockIdx.y * kCB;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  // 1. staging: item e = (pair of columns, half); a warp's 32 lanes take 32 pairs of one half.
  const int half_cols = g.WSP / 2, pairs = g.RS * half_cols, padded = (pairs + 31) / 32 * 32;
  constexpr int kBatch = 4;
  for (int e0 = tid; e0 < 2 * padded; e0 += kBatch * 32 * kWarps) {
    uint4 v[kBatch][2];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int e = e0 + u * 32 * kWarps, half = (e >> 5) & 1, pair = (e >> 6) * 32 + (e & 31);
      const int sr = pair / half_cols, sc = 2 * (pair % half_cols), r = r0 - g.pad + sr;
#pragma unroll
      for (int t = 0; t < 2; ++t) {
        const int col = sc + t - g.pad;
        v[u][t] = make_uint4(0, 0, 0, 0);
        if (e < 2 * padded && pair < pairs && r >= 0 && r < g.H && col >= 0 && col < g.W)
          v[u][t] = __ldg(reinterpret_cast<const uint4*>(
              x + ((int64_t(n) * g.H + r) * g.W + col) * g.C + c0 + 8 * half));
      }
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int e = e0 + u * 32 * kWarps, half = (e >> 5) & 1, pair = (e >> 6) * 32 + (e & 31);
      if (e >= 2 * padded || pair >= pairs) continue;
      const int sr = pair / half_cols, sc = 2 * (pair % half_cols);
      const unsigned short* a = reinterpret_cast<const unsigned short*>(&v[u][0]);
      const unsigned short* b = reinterpret_cast<const unsigned short*>(&v[u][1]);
#pragma unroll
      for (int k = 0; k < 8; ++k)
        *reinterpret_cast<uint32_t*>(planes + (8 * half + k) * PS + sr * g.PITCH + sc) =
            uint32_t(a[k]) | (uint32_t(b[k]) << 16);
    }
  }
  __syncthreads();

  // 2. per channel: B fragments, then the tiles left to right.
  const int grp = lane >> 2, tig = lane & 3;
  const int mi = lane >> 3, rr = lane & 7;
  const int a_row = rr + 8 * (mi & 1), a_col = 8 * (mi >> 1);  // ldmatrix.x4 (tile 0)
  const int h_row = rr + 8 * (mi & 1);                         // ldmatrix.x2: lanes 0-15
  for (int cl = warp; cl < kCB; cl += kWarps) {
    const int c = c0 + cl;
    uint32_t b[K][2];
    toeplitz_b<K>(w, c, grp, tig, flip, b);
    const float b0 = bias ? bias[c] : 0.f;
    __nv_bfloat16* plane = planes + cl * PS;
    uint32_t lo[K]
               [2];  // the A matrices of columns 0-7 of this tile (rows 0-7, 8-15), per filter row
    for (int nb = 0; nb < g.NB; ++nb) {
      float d[4] = {b0, b0, b0, b0};
#pragma unroll
      for (int p = 0; p < K; ++p) {
        uint32_t a[4];
        if (nb == 0) {
          const unsigned addr = static_cast<unsigned>(
              __cvta_generic_to_shared(plane + (p + a_row) * g.PITCH + a_col));
          asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                       : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                       : "r"(addr));
        } else {
          a[0] = lo[p][0];
          a[1] = lo[p][1];
          const unsigned addr = static_cast<unsigned>(
              __cvta_generic_to_shared(plane + (p + h_row) * g.PITCH + 8 * nb + 8));
          asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                       : "=r"(a[2]), "=r"(a[3])
                       : "r"(addr));
        }
        lo[p][0] = a[2];
        lo[p][1] = a[3];
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[p][0]), "r"(b[p][1]));
      }
      // rows 0-15, columns 8 nb .. 8 nb + 7 of this plane: read for the last time above
      __syncwarp();
      const uint32_t s0 = pack_bf16(d[0], d[1]), s1 = pack_bf16(d[2], d[3]);
      const unsigned addr =
          static_cast<unsigned>(__cvta_generic_to_shared(plane + h_row * g.PITCH + 8 * nb));
      asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1,%2};" ::"r"(addr), "r"(s0),
                   "r"(s1)
                   : "memory");
    }
  }
  __syncthreads();

  // 3. to NHWC: item = (pixel, half), a warp's lanes 32 pixels of one half; 8 channels gathered
  //    from the planes, one 16-byte store.
  const int pixels = min(kTR, g.H - r0) * g.W, ppad = (pixels + 31) / 32 * 32;
  for (int e = tid; e < 2 * ppad; e += 32 * kWarps) {
    const int half = (e >> 5) & 1, pix = (e >> 6) * 32 + (e & 31);
    if (pix >= pixels) continue;
    const int row = pix / g.W, col = pix % g.W;
    unsigned short h[8];
#pragma unroll
    for (int k = 0; k < 8; ++k)
      h[k] = __bfloat16_as_ushort(planes[(8 * half + k) * PS + row * g.PITCH + col]);
    uint4 v;
    v.x = uint32_t(h[0]) | (uint32_t(h[1]) << 16);
    v.y = uint32_t(h[2]) | (uint32_t(h[3]) << 16);
    v.z = uint32_t(h[4]) | (uint32_t(h[5]) << 16);
    v.w = uint32_t(h[6]) | (uint32_t(h[7]) << 16);
    *reinterpret_cast<uint4*>(y + ((int64_t(n) * g.H + r0 + row) * g.W + col) * g.C + c0 +
                              8 * half) = v;
  }
}

// ---- variant 3 (twenty-sixth session): two channels per mma, read straight from NHWC ----------
// v1 / v2 lose to the product in the layout change (per-channel planes in, NHWC out: ~16 shared
// accesses per 16 bytes moved). Here k and n interleave a channel pair, so every A and D element
// pair is one 32-bit word of NHWC (channels 2q, 2q + 1 of one pixel):
//   k = 2 j + ch (j: window column 0..7), n = 2 o + ch (o: output column 0..3),
//   A_p[m][k] = x(r0 + m + p - pad, c0 + j - pad, 2q + ch),
//   B_p[k][n] = w_{2q+ch}[p][j - o] when ch(k) == ch(n) and 0 <= j - o < K, else 0,
// so one mma gives 16 rows x 4 columns x 2 channels (K <= 5: the window of 4 outputs is 4 + K - 1
// <= 8 columns); useful work K / 16 of the mma, as in v1 / v2. The block stages its rows as NHWC
// (cp.async, 16 bytes, zero fill), each lane loads its A words for 4 channel pairs with one 16-byte
// shared load (row pitch 16 bytes past a multiple of 32: the 8 lanes of a quarter warp hit 8
// different 16-byte bank groups), and a tile's columns t + 4 are the next tile's columns t, so each
// tile loads 2 x 16 bytes a lane per filter row for 4 mma. D goes out as one 16-byte store per lane
// and row (4 pairs = 8 channels of one pixel). No barrier after the staging's one.
constexpr int kCB3 = 16;  // channels per block: two warps (4 pairs each) per row group / columns
// Variants 6 and 7 (v5 and v3 with one row group of 16 rows a block: half the shared memory, twice
// the blocks) set this while they build their geometry.
bool g_rg1 = false;
struct Geom3 {
  int N, H, W, C, K, pad;
  int RG;  // row groups of 16 output rows per block (1 or 2)
  int CG;  // column groups (4 / RG): warps = 2 x RG x CG = 8
  int NT;  // 4-column output tiles: ceil(W / 4)
  int RS;  // staged rows: 16 RG + K - 1
  int WS;  // staged columns: 4 NT + 4
  int RP;  // staged row pitch in 32-bit words: 8 WS + 4 (16-byte units odd)
};
Geom3 geom3(int N, int H, int W, int C, int K) {
  Geom3 g{N, H, W, C, K, K / 2, H > 16 && !g_rg1 ? 2 : 1, 0, (W + 3) / 4, 0, 0, 0};
  g.CG = 4 / g.RG;
  g.RS = 16 * g.RG + K - 1;
  g.WS = 4 * g.NT + 4;
  g.RP = 8 * g.WS + 4;
  return g;
}
size_t smem3(const Geom3& g) { return size_t(g.RS) * g.RP * 4; }

__device__ __forceinline__ uint4 lds128(unsigned addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr));
  return v;
}
__device__ __forceinline__ uint32_t u4(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
__device__ __forceinline__ void mma_bf16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// ---- pieces of variants 3-9 ---------------------------------------------------------------------
// Staged rows: NHWC with the block's 16 channels a pixel (8 words), row pitch RP words.
struct Staging {
  int H, W, C, pad, RS, WS, RP;
};

/// Copies rows r0 - pad .. r0 - pad + RS - 1 of image n (staged column s = input column s - pad),
/// channels cb .. cb + 15, to the shared address `dst`: one 16-byte cp.async per (row, column,
/// half), zeros outside the image; commits them as one group.
__device__ __forceinline__ void stage_rows16(const __nv_bfloat16* __restrict__ x, const Staging& s,
                                             int n, int r0, int cb, unsigned dst, int tid,
                                             int threads) {
  const int chunks = s.RS * s.WS * 2;
  for (int e = tid; e < chunks; e += threads) {
    const int sr = e / (2 * s.WS), rem = e - sr * 2 * s.WS, sc = rem >> 1, half = rem & 1;
    const int r = r0 - s.pad + sr, col = sc - s.pad;
    const bool in = r >= 0 && r < s.H && col >= 0 && col < s.W;
    const __nv_bfloat16* src =
        in ? x + ((int64_t(n) * s.H + r) * s.W + col) * s.C + cb + 8 * half : x;
    const unsigned to = dst + unsigned(sr * s.RP + sc * 8 + 4 * half) * 4u;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(to), "l"(src),
                 "r"(in ? 16 : 0));
  }
  asm volatile("cp.async.commit_group;");
}

/// A B-fragment word of channel pair (c, c + 1) for the lane of n = grp (output column o = grp / 2,
/// channel chn = grp % 2) and window column j: tap w[chn][p][j - o] (rotated by 180 degrees when
/// flip) in the half of k = 2 j + ch with ch == chn, 0 in the other half and outside the filter.
template <int K>
__device__ __forceinline__ uint32_t b_word(const float* __restrict__ w, int c, int grp, int j,
                                           int p, bool flip) {
  const int o = grp >> 1, chn = grp & 1, q = j - o, ch = c + chn;
  float v = 0.f;
  if (q >= 0 && q < K)
    v = flip ? w[(int64_t(ch) * K + K - 1 - p) * K + K - 1 - q] : w[(int64_t(ch) * K + p) * K + q];
  return chn == 0 ? pack_bf16(v, 0.f) : pack_bf16(0.f, v);
}

/// Bias of the 4 pairs of half `half` (channels cb + 8 half ..): lo for d0 / d2 (channel 2i), hi
/// for d1 / d3 (channel 2i + 1).
__device__ __forceinline__ void pair_bias(const float* __restrict__ bias, int cb, int half,
                                          float (&lo)[4], float (&hi)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int c = cb + 8 * half + 2 * i;
    lo[i] = bias ? bias[c] : 0.f;
    hi[i] = bias ? bias[c + 1] : 0.f;
  }
}

__device__ __forceinline__ void acc_from_bias(float (&d)[4][4], const float (&lo)[4],
                                              const float (&hi)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    d[i][0] = d[i][2] = lo[i];
    d[i][1] = d[i][3] = hi[i];
  }
}

/// One tile's D of 4 pairs to NHWC: rows row and row + 8 at column ocol, one 16-byte store each
/// (8 channels from cb + 8 half), those inside the image only.
__device__ __forceinline__ void store_tile(__nv_bfloat16* __restrict__ y, const float (&d)[4][4],
                                           int n, int H, int W, int C, int cb, int half, int row,
                                           int ocol) {
  if (ocol >= W) return;
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    if (row + 8 * rr >= H) continue;
    uint4 v;
    v.x = pack_bf16(d[0][2 * rr], d[0][2 * rr + 1]);
    v.y = pack_bf16(d[1][2 * rr], d[1][2 * rr + 1]);
    v.z = pack_bf16(d[2][2 * rr], d[2][2 * rr + 1]);
    v.w = pack_bf16(d[3][2 * rr], d[3][2 * rr + 1]);
    *reinterpret_cast<uint4*>(y + ((int64_t(n) * H + row + 8 * rr) * W + ocol) * C + cb +
                              8 * half) = v;
  }
}

/// v5 / v9's B table in shared memory: [8 pairs][K][32 lanes] of {window columns tig, tig + 4,
/// tig + 8, 0}, for the block's channels cb ..
template <int K>
__device__ __forceinline__ void fill_b_table(const float* __restrict__ w, int cb, bool flip,
                                             uint4* btab, int tid, int threads) {
  for (int e = tid; e < 8 * K * 32; e += threads) {
    const int l = e & 31, p = (e >> 5) % K, pr = (e >> 5) / K, grp = l >> 2, tig = l & 3;
    const int c = cb + 2 * pr;
    btab[e] = make_uint4(b_word<K>(w, c, grp, tig, p, flip), b_word<K>(w, c, grp, tig + 4, p, flip),
                         b_word<K>(w, c, grp, tig + 8, p, flip), 0u);
  }
}

/// v5 / v9's compute of two adjacent tiles (8 output columns x 16 rows) of 4 pairs: `base` is the
/// lane's shared address of staged row grp (filter row 0), column 4 t + tig, its half's words.
template <int K>
__device__ __forceinline__ void tile_pair_mma(float (&d)[2][4][4], unsigned base,
                                              unsigned row_bytes, unsigned down8, const uint4* btab,
                                              int half, int lane) {
  constexpr bool kTwo = K > 5;           // a second mma per filter row (window columns 8 ..)
  constexpr int kGroups = kTwo ? 4 : 3;  // column groups of the two tiles' windows
#pragma unroll
  for (int p = 0; p < K; ++p) {
    uint4 a[kGroups][2];
#pragma unroll
    for (int c = 0; c < kGroups; ++c) {
      const unsigned ad = base + unsigned(p) * row_bytes + unsigned(c) * 128u;
      a[c][0] = lds128(ad);
      a[c][1] = lds128(ad + down8);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint4 bb = btab[((4 * half + i) * K + p) * 32 + lane];
#pragma unroll
      for (int tt = 0; tt < 2; ++tt) {
        mma_bf16(d[tt][i], u4(a[tt][0], i), u4(a[tt][1], i), u4(a[tt + 1][0], i),
                 u4(a[tt + 1][1], i), bb.x, bb.y);
        if constexpr (kTwo)
          mma_bf16(d[tt][i], u4(a[tt + 2][0], i), u4(a[tt + 2][1], i), 0u, 0u, bb.z, 0u);
      }
    }
  }
}

/// v3 / v8's B fragments in registers: b[i][p][hi] for pair 4 half + i, filter row p, window
/// columns tig (+ 4 for hi).
template <int K>
__device__ __forceinline__ void b_registers(const float* __restrict__ w, int cb, int half, int lane,
                                            bool flip, uint32_t (&b)[4][K][2]) {
  const int grp = lane >> 2, tig = lane & 3;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int p = 0; p < K; ++p)
#pragma unroll
      for (int hi = 0; hi < 2; ++hi)
        b[i][p][hi] = b_word<K>(w, cb + 8 * half + 2 * i, grp, tig + 4 * hi, p, flip);
}

template <int K, bool kCarry>
__global__ void __launch_bounds__(256, 2)
    dw_fwd_tc3_kernel(const __nv_bfloat16* __restrict__ x, const float* __restrict__ w,
                      const float* __restrict__ bias, Geom3 g, bool flip,
                      __nv_bfloat16* __restrict__ y) {
  static_assert(K <= 5, "4 outputs and K taps fill the 8-column window");
  extern __shared__ __align__(16) unsigned char smem[];
  const int cb = blockIdx.x * kCB3;  // the block's first channel
  const int tiles_h = (g.H + 16 * g.RG - 1) / (16 * g.RG);
  const int n = blockIdx.y / tiles_h, r0 = (blockIdx.y % tiles_h) * 16 * g.RG;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const unsigned sbase = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  stage_rows16(x, Staging{g.H, g.W, g.C, g.pad, g.RS, g.WS, g.RP}, n, r0, cb, sbase, tid, 256);

  // while the rows arrive: this warp's B fragments (4 pairs x K filter rows) and bias
  const int half = warp & 1, cgi = (warp >> 1) % g.CG, rg = (warp >> 1) / g.CG;
  const int grp = lane >> 2, tig = lane & 3;
  uint32_t b[4][K][2];
  b_registers<K>(w, cb, half, lane, flip, b);
  float bias_lo[4], bias_hi[4];
  pair_bias(bias, cb, half, bias_lo, bias_hi);
  asm volatile("cp.async.wait_group 0;");
  __syncthreads();

  // this warp's column tiles, left to right, 16 output rows from r0 + 16 rg
  const int per = (g.NT + g.CG - 1) / g.CG, t0 = cgi * per, t1 = min(g.NT, t0 + per);
  if (t0 >= t1) return;
  // the lane's word address of staged (row 16 rg + grp + p, column s) for its 4 pairs
  auto addr = [&](int p, int s) {
    return sbase + unsigned((16 * rg + grp + p) * g.RP + s * 8 + 4 * half) * 4u;
  };
  const unsigned down8 = unsigned(8 * g.RP) * 4u;
  // kCarry: columns 4 tile + tig of rows grp, grp + 8 kept from the tile before (per filter row);
  // else loaded again (2 more 16-byte loads a filter row, 5 K x 8 fewer registers)
  uint4 lo[kCarry ? K : 1][2];
  if (kCarry) {
#pragma unroll
    for (int p = 0; p < K; ++p) {
      lo[kCarry ? p : 0][0] = lds128(addr(p, 4 * t0 + tig));
      lo[kCarry ? p : 0][1] = lds128(addr(p, 4 * t0 + tig) + down8);
    }
  }
  for (int t = t0; t < t1; ++t) {
    float d[4][4];
    acc_from_bias(d, bias_lo, bias_hi);
#pragma unroll
    for (int p = 0; p < K; ++p) {
      const int pc = kCarry ? p : 0;
      if (!kCarry) {
        lo[0][0] = lds128(addr(p, 4 * t + tig));
        lo[0][1] = lds128(addr(p, 4 * t + tig) + down8);
      }
      const uint4 h0 = lds128(addr(p, 4 * t + 4 + tig));
      const uint4 h1 = lds128(addr(p, 4 * t + 4 + tig) + down8);
#pragma unroll
      for (int i = 0; i < 4; ++i)
        mma_bf16(d[i], u4(lo[pc][0], i), u4(lo[pc][1], i), u4(h0, i), u4(h1, i), b[i][p][0],
                 b[i][p][1]);
      if (kCarry) {
        lo[pc][0] = h0;
        lo[pc][1] = h1;
      }
    }
    store_tile(y, d, n, g.H, g.W, g.C, cb, half, r0 + 16 * rg + grp, 4 * t + tig);
  }
}

void dw_fwd_tc3(const Geom3& g, const __nv_bfloat16* x, const float* w, const float* bias,
                __nv_bfloat16* y, bool flip, bool carry) {
  if (g.C % kCB3 != 0) {
    std::fprintf(stderr, "v3: C %% 16 != 0\n");
    std::exit(2);
  }
  const int tiles_h = (g.H + 16 * g.RG - 1) / (16 * g.RG);
  const dim3 grid(unsigned(g.C / kCB3), unsigned(g.N * tiles_h));
  const size_t smem = smem3(g);
  auto launch = [&](auto kernel) {
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    kernel<<<grid, 256, smem, cudaStreamPerThread>>>(x, w, bias, g, flip, y);
    CK(cudaGetLastError());
  };
  switch (g.K * 2 + carry) {
    case 6: launch(dw_fwd_tc3_kernel<3, false>); break;
    case 7: launch(dw_fwd_tc3_kernel<3, true>); break;
    case 10: launch(dw_fwd_tc3_kernel<5, false>); break;
    case 11: launch(dw_fwd_tc3_kernel<5, true>); break;
    default: std::fprintf(stderr, "v3: K %d not built\n", g.K); std::exit(2);
  }
}

// ---- variant 5 (twenty-sixth session): v3's form for K <= 9 -----------------------------------
// 4 outputs need a window of 4 + K - 1 columns: up to 8 in one mma (K <= 5); for K = 7, 9 a second
// mma over window columns 8 .. 11 (its A's columns 12 .. 15 are never used: zero registers, and
// its B only in the first register). The B fragments (3 words a lane, pair and filter row) are
// built once a block into a table in shared memory and read with one 16-byte load per pair and
// filter row, shared by two tiles: a warp computes two adjacent tiles per item (8 output columns),
// whose windows overlap, so a filter row loads 4 (K > 5) or 3 column groups x 2 rows of A for 4
// pairs.
struct Geom5 {
  int N, H, W, C, K, pad;
  int RG, CG;  // row groups of 16 rows (1 or 2) and column groups (4 / RG) per block
  int NT2;     // 4-column tiles, rounded up to pairs
  int RS, WS, RP;
};
Geom5 geom5(int N, int H, int W, int C, int K) {
  Geom5 g{N, H, W, C, K, K / 2, H > 16 && !g_rg1 ? 2 : 1, 0, 0, 0, 0, 0};
  g.CG = 4 / g.RG;
  g.NT2 = ((W + 3) / 4 + 1) / 2 * 2;
  g.RS = 16 * g.RG + K - 1;
  g.WS = 4 * g.NT2 + 8;
  g.RP = 8 * g.WS + 4;
  return g;
}
size_t smem5(const Geom5& g) { return size_t(8) * g.K * 32 * 16 + size_t(g.RS) * g.RP * 4; }

template <int K>
__global__ void __launch_bounds__(256, 2)
    dw_fwd_tc5_kernel(const __nv_bfloat16* __restrict__ x, const float* __restrict__ w,
                      const float* __restrict__ bias, Geom5 g, bool flip,
                      __nv_bfloat16* __restrict__ y) {
  static_assert(K <= 9, "taps j - o <= 8 + 3 - 0 for the second window's first register");
  extern __shared__ __align__(16) unsigned char smem[];
  uint4* btab = reinterpret_cast<uint4*>(smem);  // [8 pairs][K][32 lanes]
  const unsigned sbase =
      static_cast<unsigned>(__cvta_generic_to_shared(smem)) + unsigned(8 * K * 32 * 16);
  const int cb = blockIdx.x * kCB3;
  const int tiles_h = (g.H + 16 * g.RG - 1) / (16 * g.RG);
  const int n = blockIdx.y / tiles_h, r0 = (blockIdx.y % tiles_h) * 16 * g.RG;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  stage_rows16(x, Staging{g.H, g.W, g.C, g.pad, g.RS, g.WS, g.RP}, n, r0, cb, sbase, tid, 256);
  fill_b_table<K>(w, cb, flip, btab, tid, 256);
  const int half = warp & 1, cgi = (warp >> 1) % g.CG, rg = (warp >> 1) / g.CG;
  const int grp = lane >> 2, tig = lane & 3;
  float bias_lo[4], bias_hi[4];
  pair_bias(bias, cb, half, bias_lo, bias_hi);
  asm volatile("cp.async.wait_group 0;");
  __syncthreads();

  const unsigned lane_base = sbase + unsigned((16 * rg + grp) * g.RP + tig * 8 + 4 * half) * 4u;
  const unsigned down8 = unsigned(8 * g.RP) * 4u, row_bytes = unsigned(g.RP) * 4u;
  for (int tp = cgi; 2 * tp < g.NT2; tp += g.CG) {
    const int t = 2 * tp;
    float d[2][4][4];
    acc_from_bias(d[0], bias_lo, bias_hi);
    acc_from_bias(d[1], bias_lo, bias_hi);
    tile_pair_mma<K>(d, lane_base + unsigned(4 * t * 8) * 4u, row_bytes, down8, btab, half, lane);
    for (int tt = 0; tt < 2; ++tt)
      store_tile(y, d[tt], n, g.H, g.W, g.C, cb, half, r0 + 16 * rg + grp, 4 * (t + tt) + tig);
  }
}

void dw_fwd_tc5(const Geom5& g, const __nv_bfloat16* x, const float* w, const float* bias,
                __nv_bfloat16* y, bool flip) {
  if (g.C % kCB3 != 0) {
    std::fprintf(stderr, "v5: C %% 16 != 0\n");
    std::exit(2);
  }
  const int tiles_h = (g.H + 16 * g.RG - 1) / (16 * g.RG);
  const dim3 grid(unsigned(g.C / kCB3), unsigned(g.N * tiles_h));
  const size_t smem = smem5(g);
  auto launch = [&](auto kernel) {
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    kernel<<<grid, 256, smem, cudaStreamPerThread>>>(x, w, bias, g, flip, y);
    CK(cudaGetLastError());
  };
  switch (g.K) {
    case 3: launch(dw_fwd_tc5_kernel<3>); break;
    case 5: launch(dw_fwd_tc5_kernel<5>); break;
    case 7: launch(dw_fwd_tc5_kernel<7>); break;
    case 9: launch(dw_fwd_tc5_kernel<9>); break;
    default: std::fprintf(stderr, "v5: K %d not built\n", g.K); std::exit(2);
  }
}

// ---- variant 8 (twenty-sixth session): v3's compute with the staging pipelined ------------------
// v3 - v7 stage a block's whole tile, then compute, then store: ~1.1 TB/s, like the product. Here
// a block keeps its 16 channels and walks strips of 16 output rows (items (image, strip), strided
// by the blocks of its channel group), copying the next strip's rows (cp.async) into the second
// buffer while its warps compute the current one; the grid is the blocks that fit at once. B
// fragments in registers (K <= 5), built once a block; A from one 16-byte shared load per lane,
// filter row and column group, as v3.
struct Geom8 {
  int N, H, W, C, K, pad;
  int NT;         // 4-column output tiles
  int RS;         // staged rows: 16 + K - 1
  int WS;         // staged columns: 4 NT + 4
  int RP;         // row pitch in 32-bit words: 8 WS + 4
  int strips;     // 16-row strips per image
  int per_group;  // blocks per channel group (gridDim.y)
};
Geom8 geom8(int N, int H, int W, int C, int K, int sms) {
  Geom8 g{N, H, W, C, K, K / 2, (W + 3) / 4, 16 + K - 1, 0, 0, (H + 15) / 16, 0};
  g.WS = 4 * g.NT + 4;
  g.RP = 8 * g.WS + 4;
  const int groups = C / kCB3, items = N * g.strips;
  g.per_group = std::max(1, std::min(items, (2 * sms + groups - 1) / groups));
  return g;
}
size_t smem8(const Geom8& g) { return 2 * size_t(g.RS) * g.RP * 4; }

/// The pipelined walk of v8 / v9: this block's strips (items blockIdx.y, + gridDim.y, ...), each
/// copied into one of the two buffers at buf0 while the strip before is computed from the other.
/// setup() runs once while the first strip arrives; compute(buffer, n, r0) once per strip.
template <class Setup, class Compute>
__device__ __forceinline__ void walk_strips(const __nv_bfloat16* __restrict__ x, const Geom8& g,
                                            int cb, unsigned buf0, int tid, Setup&& setup,
                                            Compute&& compute) {
  const Staging s{g.H, g.W, g.C, g.pad, g.RS, g.WS, g.RP};
  const unsigned buf_bytes = unsigned(g.RS * g.RP) * 4u;
  const int items = g.N * g.strips;
  auto stage = [&](int item, unsigned buf) {
    stage_rows16(x, s, item / g.strips, (item % g.strips) * 16, cb, buf, tid, 256);
  };
  int item = blockIdx.y;
  if (item >= items) return;
  stage(item, buf0);
  setup();
  for (int k = 0;; ++k) {
    const int next = item + int(gridDim.y);
    if (next < items) {
      stage(next, buf0 + ((k + 1) & 1) * buf_bytes);
      asm volatile("cp.async.wait_group 1;");
    } else {
      asm volatile("cp.async.wait_group 0;");
    }
    __syncthreads();  // the current strip's rows are in
    compute(buf0 + (k & 1) * buf_bytes, item / g.strips, (item % g.strips) * 16);
    if (next >= items) break;
    __syncthreads();  // every warp is done with this buffer before the strip after next goes in
    item = next;
  }
}

template <int K>
__global__ void __launch_bounds__(256, 2)
    dw_fwd_tc8_kernel(const __nv_bfloat16* __restrict__ x, const float* __restrict__ w,
                      const float* __restrict__ bias, Geom8 g, bool flip,
                      __nv_bfloat16* __restrict__ y) {
  static_assert(K <= 5, "4 outputs and K taps fill the 8-column window");
  extern __shared__ __align__(16) unsigned char smem[];
  const int cb = blockIdx.x * kCB3;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int half = warp & 1, wq = warp >> 1;  // wq: this warp's tiles wq, wq + 4, ...
  const int grp = lane >> 2, tig = lane & 3;
  const unsigned lane_off = unsigned(grp * g.RP + tig * 8 + 4 * half) * 4u;
  const unsigned down8 = unsigned(8 * g.RP) * 4u, row_bytes = unsigned(g.RP) * 4u;
  uint32_t b[4][K][2];
  float bias_lo[4], bias_hi[4];
  auto setup = [&] {
    b_registers<K>(w, cb, half, lane, flip, b);
    pair_bias(bias, cb, half, bias_lo, bias_hi);
  };
  auto compute = [&](unsigned cur, int n, int r0) {
    for (int t = wq; t < g.NT; t += 4) {
      float d[4][4];
      acc_from_bias(d, bias_lo, bias_hi);
      const unsigned base = cur + lane_off + unsigned(4 * t * 8) * 4u;
#pragma unroll
      for (int p = 0; p < K; ++p) {
        const unsigned a = base + unsigned(p) * row_bytes;
        const uint4 l0 = lds128(a), l1 = lds128(a + down8);
        const uint4 h0 = lds128(a + 4u * 32u), h1 = lds128(a + down8 + 4u * 32u);
#pragma unroll
        for (int i = 0; i < 4; ++i)
          mma_bf16(d[i], u4(l0, i), u4(l1, i), u4(h0, i), u4(h1, i), b[i][p][0], b[i][p][1]);
      }
      store_tile(y, d, n, g.H, g.W, g.C, cb, half, r0 + grp, 4 * t + tig);
    }
  };
  walk_strips(x, g, cb, static_cast<unsigned>(__cvta_generic_to_shared(smem)), tid, setup, compute);
}

void dw_fwd_tc8(const Geom8& g, const __nv_bfloat16* x, const float* w, const float* bias,
                __nv_bfloat16* y, bool flip) {
  if (g.C % kCB3 != 0) {
    std::fprintf(stderr, "v8: C %% 16 != 0\n");
    std::exit(2);
  }
  const dim3 grid(unsigned(g.C / kCB3), unsigned(g.per_group));
  const size_t smem = smem8(g);
  auto launch = [&](auto kernel) {
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    kernel<<<grid, 256, smem, cudaStreamPerThread>>>(x, w, bias, g, flip, y);
    CK(cudaGetLastError());
  };
  switch (g.K) {
    case 3: launch(dw_fwd_tc8_kernel<3>); break;
    case 5: launch(dw_fwd_tc8_kernel<5>); break;
    default: std::fprintf(stderr, "v8: K %d not built\n", g.K); std::exit(2);
  }
}

// ---- variant 9: v5's compute (any K <= 9, B table, tile pairs) with v8's pipelined staging ------
size_t smem9(const Geom8& g) { return size_t(8) * g.K * 32 * 16 + 2 * size_t(g.RS) * g.RP * 4; }
Geom8 geom9(int N, int H, int W, int C, int K, int sms) {
  Geom8 g = geom8(N, H, W, C, K, sms);
  g.NT = ((W + 3) / 4 + 1) / 2 * 2;  // tiles rounded up to pairs
  g.WS = 4 * g.NT + 8;
  g.RP = 8 * g.WS + 4;
  const int groups = C / kCB3, items = N * g.strips;
  const int per_sm = smem9(g) * 2 <= 227 * 1024 ? 2 : 1;
  g.per_group = std::max(1, std::min(items, (per_sm * sms + groups - 1) / groups));
  return g;
}

template <int K>
__global__ void __launch_bounds__(256, 2)
    dw_fwd_tc9_kernel(const __nv_bfloat16* __restrict__ x, const float* __restrict__ w,
                      const float* __restrict__ bias, Geom8 g, bool flip,
                      __nv_bfloat16* __restrict__ y) {
  extern __shared__ __align__(16) unsigned char smem[];
  uint4* btab = reinterpret_cast<uint4*>(smem);  // [8 pairs][K][32 lanes]
  const int cb = blockIdx.x * kCB3;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int half = warp & 1, wq = warp >> 1;
  const int grp = lane >> 2, tig = lane & 3;
  const unsigned lane_off = unsigned(grp * g.RP + tig * 8 + 4 * half) * 4u;
  const unsigned down8 = unsigned(8 * g.RP) * 4u, row_bytes = unsigned(g.RP) * 4u;
  float bias_lo[4], bias_hi[4];
  auto setup = [&] {
    fill_b_table<K>(w, cb, flip, btab, tid, 256);  // read after walk_strips' first barrier
    pair_bias(bias, cb, half, bias_lo, bias_hi);
  };
  auto compute = [&](unsigned cur, int n, int r0) {
    for (int tp = wq; 2 * tp < g.NT; tp += 4) {
      const int t = 2 * tp;
      float d[2][4][4];
      acc_from_bias(d[0], bias_lo, bias_hi);
      acc_from_bias(d[1], bias_lo, bias_hi);
      tile_pair_mma<K>(d, cur + lane_off + unsigned(4 * t * 8) * 4u, row_bytes, down8, btab, half,
                       lane);
      for (int tt = 0; tt < 2; ++tt)
        store_tile(y, d[tt], n, g.H, g.W, g.C, cb, half, r0 + grp, 4 * (t + tt) + tig);
    }
  };
  walk_strips(x, g, cb,
              static_cast<unsigned>(__cvta_generic_to_shared(smem)) + unsigned(8 * K * 32 * 16),
              tid, setup, compute);
}

void dw_fwd_tc9(const Geom8& g, const __nv_bfloat16* x, const float* w, const float* bias,
                __nv_bfloat16* y, bool flip) {
  const dim3 grid(unsigned(g.C / kCB3), unsigned(g.per_group));
  const size_t smem = smem9(g);
  auto launch = [&](auto kernel) {
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    kernel<<<grid, 256, smem, cudaStreamPerThread>>>(x, w, bias, g, flip, y);
    CK(cudaGetLastError());
  };
  switch (g.K) {
    case 3: launch(dw_fwd_tc9_kernel<3>); break;
    case 5: launch(dw_fwd_tc9_kernel<5>); break;
    case 7: launch(dw_fwd_tc9_kernel<7>); break;
    case 9: launch(dw_fwd_tc9_kernel<9>); break;
    default: std::fprintf(stderr, "v9: K %d not built\n", g.K); std::exit(2);
  }
}

/// variant 1: dw_fwd_tc_kernel; 2: dw_fwd_tc2_kernel (flip: the filter rotated, variant 2 only).
void dw_fwd_tc(int variant, const Geom& g, const __nv_bfloat16* x, const float* w,
               const float* bias, __nv_bfloat16* y, bool flip = false) {
  const dim3 grid(unsigned(g.N * ((g.H + kTR - 1) / kTR)), unsigned(g.C / kCB));
  const size_t smem = variant == 1 ? smem_bytes(g) : size_t(kCB) * g.RS * g.PITCH * 2;
  auto launch = [&](auto kernel) {  // on the product's stream
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    kernel<<<grid, 32 * kWarps, smem, cudaStreamPerThread>>>(x, w, bias, g, y);
    CK(cudaGetLastError());
  };
  auto launch2 = [&](auto kernel) {
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    kernel<<<grid, 32 * kWarps, smem, cudaStreamPerThread>>>(x, w, bias, g, flip, y);
    CK(cudaGetLastError());
  };
  if (variant == 8 || variant == 9) {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    if (variant == 8)
      dw_fwd_tc8(geom8(g.N, g.H, g.W, g.C, g.K, sms), x, w, bias, y, flip);
    else
      dw_fwd_tc9(geom9(g.N, g.H, g.W, g.C, g.K, sms), x, w, bias, y, flip);
    return;
  }
  g_rg1 = variant == 6 || variant == 7;
  if (variant == 5 || variant == 6) {
    dw_fwd_tc5(geom5(g.N, g.H, g.W, g.C, g.K), x, w, bias, y, flip);
    return;
  }
  if (variant == 3 || variant == 4 || variant == 7) {  // 4: v3, columns carried tile to tile
    dw_fwd_tc3(geom3(g.N, g.H, g.W, g.C, g.K), x, w, bias, y, flip, variant == 4);
    return;
  }
  if (flip && variant != 2) {  // (3 and 4 returned above)
    std::fprintf(stderr, "flip: variants 2 and 3 only\n");
    std::exit(2);
  }
  switch (g.K * 10 + variant) {
    case 31: launch(dw_fwd_tc_kernel<3>); break;
    case 51: launch(dw_fwd_tc_kernel<5>); break;
    case 71: launch(dw_fwd_tc_kernel<7>); break;
    case 91: launch(dw_fwd_tc_kernel<9>); break;
    case 32: launch2(dw_fwd_tc2_kernel<3>); break;
    case 52: launch2(dw_fwd_tc2_kernel<5>); break;
    case 72: launch2(dw_fwd_tc2_kernel<7>); break;
    case 92: launch2(dw_fwd_tc2_kernel<9>); break;
    default: std::fprintf(stderr, "K %d variant %d not built\n", g.K, variant); std::exit(2);
  }
}

// ---- the weight gradient on the tensor cores (variant w1) ------------------------------------
// dW[c][p][q] = sum_{n,i,j} G(n,i,j,c) x(n, i+p-pad, j+q-pad, c). With u = j + q (a staged column
// of x) and one output row i at a time: D[p][q] += sum_u Xs[i + p][u] G[i][u - q], an mma with
// A[p][u] = 16 staged rows from row i (only p < K kept), B[u][q] = G's row i as a Toeplitz band
// (q < 8: K <= 7), k = 16 staged columns per mma. Useful: 16 x K^2 of 2048 multiply-adds (20% at
// K = 5, 38% at K = 7; the same mma count for both). A block: 8 channels x 16 output rows; each
// warp's two channels accumulate over the block's rows in registers, then atomicAdd into dW (the
// lab's shortcut: the product would write per-slice partials and sum them in a fixed order).
constexpr int kCBW = 8;

struct WGeom {
  int N, H, W, C, K, pad;
  int NCH;     // 16-column chunks of u: ceil((W + K - 1) / 16)
  int RS;      // staged x rows: kTR + K - 1 (A reads 15 rows past a row; the tail is zeroed)
  int XPITCH;  // x plane row pitch (>= 16 NCH, 16 bytes past a multiple of 128 bytes)
  int GPITCH;  // G plane row pitch: column j at j + 8 (8 zeros before column 0), >= 16 NCH + 8
};

WGeom wgeom(int N, int H, int W, int C, int K) {
  WGeom g{N, H, W, C, K, K / 2, (W + K - 1 + 15) / 16, kTR + K - 1, 0, 0};
  g.XPITCH = plane_pitch(16 * g.NCH);
  g.GPITCH = 16 * g.NCH + 8;
  return g;
}

// x planes [kCBW][RS][XPITCH], then 16 zero rows, then G planes [kCBW][kTR][GPITCH]
size_t wgrad_smem(const WGeom& g) {
  return (size_t(kCBW * g.RS + kTR) * g.XPITCH + size_t(kCBW) * kTR * g.GPITCH) * 2;
}

template <int K>
__global__ void __launch_bounds__(32 * kWarps)
    dw_wgrad_tc_kernel(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ gy,
                       WGeom g, float* __restrict__ dw) {
  static_assert(K <= 7, "the Toeplitz B holds q < 8");
  extern __shared__ __align__(16) unsigned char smem[];
  __nv_bfloat16* xs = reinterpret_cast<__nv_bfloat16*>(smem);
  const int XS = g.RS * g.XPITCH;  // x plane stride
  __nv_bfloat16* gs = xs + (kCBW * g.RS + kTR) * g.XPITCH;
  const int GS = kTR * g.GPITCH;
  const int tiles = (g.H + kTR - 1) / kTR;
  const int n = blockIdx.x / tiles, r0 = (blockIdx.x % tiles) * kTR, c0 = blockIdx.y * kCBW;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  // 1. staging as column pairs (4-byte words per channel plane): x rows r0 - pad .. + RS - 1,
  //    staged column s = input column s - pad; G rows r0 .. r0 + 15, column j at j + 8.
  const int xpairs = g.RS * (g.XPITCH / 2), gpairs = kTR * (g.GPITCH / 2);
  for (int e = tid; e < xpairs + gpairs; e += 32 * kWarps) {
    const bool isx = e < xpairs;
    const int f = isx ? e : e - xpairs, half_cols = (isx ? g.XPITCH : g.GPITCH) / 2;
    const int sr = f / half_cols, sc = 2 * (f % half_cols);
    const int r = isx ? r0 - g.pad + sr : r0 + sr;
    uint4 v[2];
#pragma unroll
    for (int t = 0; t < 2; ++t) {
      const int col = isx ? sc + t - g.pad : sc + t - 8;
      v[t] = make_uint4(0, 0, 0, 0);
      if (r >= 0 && r < g.H && col >= 0 && col < g.W)
        v[t] = __ldg(reinterpret_cast<const uint4*>(
            (isx ? x : gy) + ((int64_t(n) * g.H + r) * g.W + col) * g.C + c0));
    }
    const unsigned short* a = reinterpret_cast<const unsigned short*>(&v[0]);
    const unsigned short* b = reinterpret_cast<const unsigned short*>(&v[1]);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      __nv_bfloat16* dst =
          isx ? xs + k * XS + sr * g.XPITCH + sc : gs + k * GS + sr * g.GPITCH + sc;
      *reinterpret_cast<uint32_t*>(dst) = uint32_t(a[k]) | (uint32_t(b[k]) << 16);
    }
  }
  for (int e = tid; e < kTR * g.XPITCH / 2; e += 32 * kWarps)  // the zero tail after the x planes
    reinterpret_cast<uint32_t*>(xs + kCBW * XS)[e] = 0u;
  __syncthreads();

  // 2. per channel: A from the x plane (ldmatrix.x4), B gathered from G's row, D in registers.
  const int grp = lane >> 2, tig = lane & 3;
  const int mi = lane >> 3, rr = lane & 7;
  const int a_row = rr + 8 * (mi & 1), a_col = 8 * (mi >> 1);
  const int rows = min(kTR, g.H - r0);
  for (int cl = warp; cl < kCBW; cl += kWarps) {
    const __nv_bfloat16* xp = xs + cl * XS;
    const unsigned short* gp = reinterpret_cast<const unsigned short*>(gs + cl * GS);
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    for (int i = 0; i < rows; ++i) {
      const unsigned short* grow =
          gp + i * g.GPITCH + 8 - grp + 2 * tig;  // G[i][u - grp], u = 2 tig
      for (int ch = 0; ch < g.NCH; ++ch) {
        uint32_t a[4];
        const unsigned addr = static_cast<unsigned>(
            __cvta_generic_to_shared(xp + (i + a_row) * g.XPITCH + 16 * ch + a_col));
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                     : "r"(addr));
        const unsigned short* gq = grow + 16 * ch;
        // b0: k = 2 tig, 2 tig + 1; b1: k = 2 tig + 8, 2 tig + 9; n = q = grp: B[k][q] = G[i][16 ch
        // + k - q]
        const uint32_t b0 = uint32_t(gq[0]) | (uint32_t(gq[1]) << 16);
        const uint32_t b1 = uint32_t(gq[8]) | (uint32_t(gq[9]) << 16);
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
      }
    }
    // D[p][q]: d0, d1 row grp, columns 2 tig, 2 tig + 1; d2, d3 row grp + 8
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      const int p = grp + 8 * (h >> 1), q = 2 * tig + (h & 1);
      if (p < K && q < K) atomicAdd(dw + (int64_t(c0 + cl) * K + p) * K + q, d[h]);
    }
  }
}

/// dw (C, K, K) f32 = the weight gradient of the stride-1 "same" depthwise conv; zeroes it first.
void dw_wgrad_tc(const WGeom& g, const __nv_bfloat16* x, const __nv_bfloat16* gy, float* dw) {
  CK(cudaMemsetAsync(dw, 0, size_t(g.C) * g.K * g.K * 4, cudaStreamPerThread));
  const dim3 grid(unsigned(g.N * ((g.H + kTR - 1) / kTR)), unsigned(g.C / kCBW));
  const size_t smem = wgrad_smem(g);
  auto launch = [&](auto kernel) {
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    kernel<<<grid, 32 * kWarps, smem, cudaStreamPerThread>>>(x, gy, g, dw);
    CK(cudaGetLastError());
  };
  switch (g.K) {
    case 3: launch(dw_wgrad_tc_kernel<3>); break;
    case 5: launch(dw_wgrad_tc_kernel<5>); break;
    case 7: launch(dw_wgrad_tc_kernel<7>); break;
    default: std::fprintf(stderr, "wgrad: K %d not built\n", g.K); std::exit(2);
  }
}

// ---- host: data, reference, timing --------------------------------------------------------------

float round_bf16(float v) { return hg::bf16_to_f32(hg::f32_to_bf16(v)); }

struct Case {
  int N, H, W, C, K;
};

struct Buffers {
  std::vector<uint16_t> x, g;  // bf16 bits: the input, and a gradient of the output (wgrad)
  std::vector<float> w, bias;
  __nv_bfloat16 *dx = nullptr, *dy = nullptr, *dy_ref = nullptr, *dg = nullptr;
  float *dw = nullptr, *db = nullptr, *gw = nullptr, *gw_ref = nullptr;  // filter, bias, dW twice
};

Buffers make(const Case& s, uint32_t seed) {
  Buffers b;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const size_t nx = size_t(s.N) * s.H * s.W * s.C;
  b.x.resize(nx);
  for (auto& e : b.x) e = hg::f32_to_bf16(u(gen));
  b.g.resize(nx);
  for (auto& e : b.g) e = hg::f32_to_bf16(u(gen));
  b.w.resize(size_t(s.C) * s.K * s.K);
  for (auto& e : b.w) e = 0.3f * u(gen);
  b.bias.resize(size_t(s.C));
  for (auto& e : b.bias) e = 0.1f * u(gen);
  CK(cudaMalloc(&b.dx, nx * 2));
  CK(cudaMalloc(&b.dy, nx * 2));
  CK(cudaMalloc(&b.dy_ref, nx * 2));
  CK(cudaMalloc(&b.dg, nx * 2));
  CK(cudaMalloc(&b.gw, b.w.size() * 4 + 4));
  CK(cudaMalloc(&b.gw_ref, b.w.size() * 4 + 4));
  CK(cudaMemcpy(b.dg, b.g.data(), nx * 2, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&b.dw, b.w.size() * 4));
  CK(cudaMalloc(&b.db, b.bias.size() * 4));
  CK(cudaMemcpy(b.dx, b.x.data(), nx * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b.dw, b.w.data(), b.w.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b.db, b.bias.data(), b.bias.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(b.dy, 0xff, nx * 2));  // poisoned: NaN in bf16
  return b;
}

void release(Buffers& b) {
  cudaFree(b.dx);
  cudaFree(b.dy);
  cudaFree(b.dy_ref);
  cudaFree(b.dw);
  cudaFree(b.db);
  cudaFree(b.dg);
  cudaFree(b.gw);
  cudaFree(b.gw_ref);
}

hg::kernels::Conv2dShape shape_of(const Case& s) {
  return hg::kernels::make_conv2d_shape(s.N, s.H, s.W, s.C, s.C, s.K, s.K, 1, s.K / 2, s.C);
}

void product(const Case& s, const Buffers& b, __nv_bfloat16* out) {
  hg::kernels::cuda::depthwise_conv_forward<hg::bf16>(shape_of(s),
                                                      reinterpret_cast<const hg::bf16*>(b.dx), b.dw,
                                                      b.db, reinterpret_cast<hg::bf16*>(out));
}

void product_bwd_data(const Case& s, const Buffers& b, __nv_bfloat16* out) {  // of grad_y = x
  hg::kernels::cuda::depthwise_conv_backward_data<hg::bf16>(
      shape_of(s), reinterpret_cast<const hg::bf16*>(b.dx), b.dw, reinterpret_cast<hg::bf16*>(out));
}

void product_wgrad(const Case& s, const Buffers& b, float* out) {  // x = dx, grad_y = dg
  hg::kernels::cuda::depthwise_conv_backward_weight<hg::bf16>(
      shape_of(s), reinterpret_cast<const hg::bf16*>(b.dx), reinterpret_cast<const hg::bf16*>(b.dg),
      out, nullptr);
}

// Max |got - want| / max |want| against a CPU loop in double over bf16-rounded filters. flip
// (variant 2 only): backward data on grad_y = x, no bias: grad_x(i, j) = sum_pq w[p][q]
// gy(i - p + pad, j - q + pad), against the product's depthwise_conv_backward_data.
bool check(int variant, const Case& s, uint32_t seed, bool flip = false) {
  Buffers b = make(s, seed);
  const Geom g = geom(s.N, s.H, s.W, s.C, s.K);
  dw_fwd_tc(variant, g, b.dx, b.dw, flip ? nullptr : b.db, b.dy, flip);
  if (flip)
    product_bwd_data(s, b, b.dy_ref);
  else
    product(s, b, b.dy_ref);
  CK(cudaDeviceSynchronize());
  const size_t nx = b.x.size();
  std::vector<uint16_t> got(nx), prod(nx);
  CK(cudaMemcpy(got.data(), b.dy, nx * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(prod.data(), b.dy_ref, nx * 2, cudaMemcpyDeviceToHost));
  const int r = s.K / 2, sign = flip ? -1 : 1;
  double err = 0, err_prod = 0, scale = 0, vs_prod = 0;
  for (int n = 0; n < s.N; ++n)
    for (int i = 0; i < s.H; ++i)
      for (int j = 0; j < s.W; ++j)
        for (int c = 0; c < s.C; ++c) {
          double want = flip ? 0.0 : double(b.bias[size_t(c)]);
          for (int p = 0; p < s.K; ++p)
            for (int q = 0; q < s.K; ++q) {
              const int ii = i + sign * (p - r), jj = j + sign * (q - r);
              if (ii < 0 || ii >= s.H || jj < 0 || jj >= s.W) continue;
              want += double(round_bf16(b.w[(size_t(c) * s.K + p) * s.K + q])) *
                      hg::bf16_to_f32(b.x[((size_t(n) * s.H + ii) * s.W + jj) * s.C + c]);
            }
          const size_t o = ((size_t(n) * s.H + i) * s.W + j) * s.C + c;
          const double gv = hg::bf16_to_f32(got[o]), pv = hg::bf16_to_f32(prod[o]);
          err = std::max(err, std::isnan(gv) ? INFINITY : std::abs(gv - want));
          err_prod = std::max(err_prod, std::abs(pv - want));
          vs_prod = std::max(vs_prod, std::isnan(gv) ? INFINITY : std::abs(gv - pv));
          scale = std::max(scale, std::abs(want));
        }
  release(b);
  // bf16 output rounding: 2^-8 relative; the mma's own f32 sums add far less
  const bool ok = err / scale < 8e-3;
  std::printf(
      "check v%d%s N %d H %2d W %2d C %3d K %d: tensor cores %.2e, product %.2e (of max |y| %.2f), "
      "apart %.2e  %s\n",
      variant, flip ? " backward data" : "", s.N, s.H, s.W, s.C, s.K, err / scale, err_prod / scale,
      scale, vs_prod / scale, ok ? "ok" : "FAILED");
  return ok;
}

// Weight gradient: w1 against a CPU loop in double and against the product (f32 sums of bf16
// products: both far inside 1e-3 of max |dW|).
bool check_wgrad(const Case& s, uint32_t seed) {
  Buffers b = make(s, seed);
  const WGeom g = wgeom(s.N, s.H, s.W, s.C, s.K);
  dw_wgrad_tc(g, b.dx, b.dg, b.gw);
  product_wgrad(s, b, b.gw_ref);
  CK(cudaDeviceSynchronize());
  const size_t nw = b.w.size();
  std::vector<float> got(nw), prod(nw);
  CK(cudaMemcpy(got.data(), b.gw, nw * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(prod.data(), b.gw_ref, nw * 4, cudaMemcpyDeviceToHost));
  const int r = s.K / 2;
  double err = 0, err_prod = 0, scale = 0;
  for (int c = 0; c < s.C; ++c)
    for (int p = 0; p < s.K; ++p)
      for (int q = 0; q < s.K; ++q) {
        double want = 0;
        for (int n = 0; n < s.N; ++n)
          for (int i = 0; i < s.H; ++i)
            for (int j = 0; j < s.W; ++j) {
              const int ii = i + p - r, jj = j + q - r;
              if (ii < 0 || ii >= s.H || jj < 0 || jj >= s.W) continue;
              want += double(hg::bf16_to_f32(b.g[((size_t(n) * s.H + i) * s.W + j) * s.C + c])) *
                      hg::bf16_to_f32(b.x[((size_t(n) * s.H + ii) * s.W + jj) * s.C + c]);
            }
        const size_t o = (size_t(c) * s.K + p) * s.K + q;
        err = std::max(err, std::isnan(got[o]) ? INFINITY : std::abs(got[o] - want));
        err_prod = std::max(err_prod, std::abs(prod[o] - want));
        scale = std::max(scale, std::abs(want));
      }
  release(b);
  const bool ok = err / scale < 1e-3;
  std::printf("check wgrad N %d H %2d W %2d C %3d K %d: tensor cores %.2e, product %.2e  %s\n", s.N,
              s.H, s.W, s.C, s.K, err / scale, err_prod / scale, ok ? "ok" : "FAILED");
  return ok;
}

void time_case(const Case& s, int reps) {
  Buffers b = make(s, 7);
  const Geom g = geom(s.N, s.H, s.W, s.C, s.K);
  const float v1 = median_ms([&] { dw_fwd_tc(1, g, b.dx, b.dw, b.db, b.dy); }, reps);
  const float v2 = median_ms([&] { dw_fwd_tc(2, g, b.dx, b.dw, b.db, b.dy); }, reps);
  const float pr = median_ms([&] { product(s, b, b.dy_ref); }, reps);
  const double bytes = 2.0 * 2 * double(b.x.size());
  std::printf(
      "time N %d %3d/%2d K %d: product %.4f ms (%.0f GB/s); tensor cores v1 %.4f ms (%.2fx), "
      "v2 %.4f ms (%.0f GB/s, %.2fx)\n",
      s.N, s.C, s.H, s.K, pr, bytes / pr / 1e6, v1, pr / v1, v2, bytes / v2 / 1e6, pr / v2);
  for (int v : {3, 5, 7, 8, 9}) {
    if (s.K > 5 && v != 5 && v != 9) continue;
    const float v3 = median_ms([&] { dw_fwd_tc(v, g, b.dx, b.dw, b.db, b.dy); }, reps);
    const float v3b = median_ms([&] { dw_fwd_tc(v, g, b.dx, b.dw, nullptr, b.dy, true); }, reps);
    std::printf(
        "     v%d (channel pairs from NHWC%s): %.4f ms (%.0f GB/s, %.2fx the product), "
        "backward data %.4f ms\n",
        v,
        v == 9   ? ", v5 pipelined"
        : v == 8 ? ", v3 pipelined"
        : v == 6 ? ", v5 with 16 rows a block"
        : v == 7 ? ", v3 with 16 rows a block"
        : v == 4 ? ", carried"
        : v == 5 ? ", B table, tile pairs"
                 : "",
        v3, bytes / v3 / 1e6, pr / v3, v3b);
  }
  const float bd = median_ms([&] { dw_fwd_tc(2, g, b.dx, b.dw, nullptr, b.dy, true); }, reps);
  const float bdp = median_ms([&] { product_bwd_data(s, b, b.dy_ref); }, reps);
  std::printf("     backward data: product %.4f ms, tensor cores v2 %.4f ms (%.2fx)\n", bdp, bd,
              bdp / bd);
  if (s.K <= 7) {
    const WGeom wg = wgeom(s.N, s.H, s.W, s.C, s.K);
    const float wt = median_ms([&] { dw_wgrad_tc(wg, b.dx, b.dg, b.gw); }, reps);
    const float wp = median_ms([&] { product_wgrad(s, b, b.gw_ref); }, reps);
    std::printf("     weight gradient: product %.4f ms, tensor cores w1 %.4f ms (%.2fx; atomics)\n",
                wp, wt, wp / wt);
  }
  release(b);
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  bool ok = true;
  for (int v : {1, 2}) {
    for (int K : {3, 5, 7, 9}) ok &= check(v, {2, 13, 19, 32, K}, 11u + unsigned(K));
    ok &= check(v, {1, 17, 8, 16, 5}, 3);
    ok &= check(v, {2, 56, 56, 96, 5}, 5);
    ok &= check(v, {1, 7, 7, 768, 7}, 9);
    ok &= check(v, {1, 33, 41, 48, 7}, 13);
  }
  for (int K : {3, 5}) {
    ok &= check(3, {2, 13, 19, 32, K}, 51u + unsigned(K));
    ok &= check(3, {1, 33, 41, 48, K}, 61u + unsigned(K));
    ok &= check(3, {2, 13, 19, 32, K}, 71u + unsigned(K), /*flip=*/true);
  }
  ok &= check(3, {1, 17, 8, 16, 5}, 81);
  ok &= check(3, {2, 56, 56, 96, 5}, 83);
  ok &= check(3, {3, 7, 7, 64, 5}, 85);
  ok &= check(3, {2, 14, 14, 384, 5}, 87);
  ok &= check(3, {2, 56, 56, 96, 5}, 89, /*flip=*/true);
  for (int K : {3, 5}) {
    ok &= check(4, {1, 33, 41, 48, K}, 91u + unsigned(K));
    ok &= check(4, {2, 13, 19, 32, K}, 93u + unsigned(K), /*flip=*/true);
  }
  ok &= check(4, {2, 56, 56, 96, 5}, 97);
  ok &= check(4, {2, 14, 14, 384, 5}, 99);
  for (int K : {3, 5, 7, 9}) {
    ok &= check(5, {1, 33, 41, 48, K}, 101u + unsigned(K));
    ok &= check(5, {2, 13, 19, 32, K}, 111u + unsigned(K), /*flip=*/true);
  }
  ok &= check(5, {2, 56, 56, 96, 7}, 121);
  ok &= check(5, {3, 7, 7, 64, 7}, 123);
  ok &= check(5, {2, 14, 14, 384, 5}, 125);
  ok &= check(6, {1, 33, 41, 48, 7}, 127);
  ok &= check(6, {2, 56, 56, 96, 5}, 129, /*flip=*/true);
  ok &= check(7, {1, 33, 41, 48, 5}, 131);
  for (int K : {3, 5}) {
    ok &= check(8, {1, 33, 41, 48, K}, 133u + unsigned(K));
    ok &= check(8, {2, 13, 19, 32, K}, 137u + unsigned(K), /*flip=*/true);
  }
  ok &= check(8, {2, 56, 56, 96, 5}, 143);
  ok &= check(8, {3, 7, 7, 64, 5}, 145);
  ok &= check(8, {5, 14, 14, 384, 5}, 147);
  for (int K : {3, 5, 7, 9}) {
    ok &= check(9, {1, 33, 41, 48, K}, 151u + unsigned(K));
    ok &= check(9, {2, 13, 19, 32, K}, 161u + unsigned(K), /*flip=*/true);
  }
  ok &= check(9, {2, 56, 56, 96, 7}, 171);
  ok &= check(9, {3, 7, 7, 64, 7}, 173);
  for (int K : {3, 5, 7, 9}) ok &= check(2, {2, 13, 19, 32, K}, 21u + unsigned(K), /*flip=*/true);
  ok &= check(2, {2, 56, 56, 96, 5}, 23, /*flip=*/true);
  for (int K : {3, 5, 7}) ok &= check_wgrad({2, 13, 19, 32, K}, 31u + unsigned(K));
  ok &= check_wgrad({2, 56, 56, 96, 5}, 37);
  ok &= check_wgrad({3, 7, 7, 64, 7}, 41);
  ok &= check_wgrad({1, 33, 41, 48, 7}, 43);
  for (int K : {5, 7})
    for (Case s : {Case{64, 56, 56, 96, K}, Case{64, 28, 28, 192, K}, Case{64, 14, 14, 384, K},
                   Case{64, 7, 7, 768, K}, Case{64, 28, 28, 384, K}})
      time_case(s, reps);
  return ok ? 0 : 1;
}
