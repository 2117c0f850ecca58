// Kernel lab (twenty-third session): a bf16 depthwise K x K forward (stride 1, pad K/2, NHWC)
// on the tensor cores, against a plain reference kernel. Standalone: nvcc -O3 -arch=sm_90
// dev/s23/tc_dw.cu -o tc_dw && ./tc_dw N H W C K [TR]
//
// Idea. For one channel and one kernel row kh, an output row segment of 16 columns is a
// Toeplitz matrix times 32 input columns: y[m] += sum_k A_kh[m][k] x[row][c0 - 8 + k],
// A_kh[m][k] = w[kh][k - 8 - m + pad] (zero outside 0..K-1), for K <= 9. Taking N = 8 output rows
// as the mma's n dimension (each column of B is an input row), one m16n8k16 pair applies a kernel
// row to 16 x 8 outputs; K of them the whole filter. The products bf16 x bf16 are exact in f32 and
// the mma accumulates in f32, as the staged kernels do; only the order of the f32 sums differs.
// A (the Toeplitz fragments, 2K of them, 4 registers each) is built once per channel; B comes from
// channel planes in shared memory with one ldmatrix.x4 per (tile, kh).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

constexpr int kWarps = 8;  // each warp takes CB / kWarps channels in turn

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// Shared layout: kCB channel planes of (TR + K - 1) rows x RS bf16 (storage column s = image
// column + 8; RS = Wp + 24, Wp = W rounded up to 16: ldmatrix's 8 row addresses hit distinct
// banks when RS = 8 mod 16), plane stride PW words with PW = 4 mod 8 (so the staging's two
// half-warps, which write planes 4 or 12 apart, hit distinct banks); then the output staging
// [TR][Wp][kCB] bf16.
template <int K, int TR, int kCB>
__global__ void __launch_bounds__(32 * kWarps)
    tc_dw_fwd(const __nv_bfloat16* __restrict__ x, const float* __restrict__ w,
              const float* __restrict__ bias, __nv_bfloat16* __restrict__ y, int H, int W, int C) {
  constexpr int pad = K / 2, NR = TR + K - 1;
  extern __shared__ __align__(16) uint32_t smem[];
  const int Wp = (W + 15) / 16 * 16, RS = Wp + 24, RSW = RS / 2;
  int PW = NR * RSW;
  PW += (12 - PW % 8) % 8;  // PW = 4 mod 8
  uint32_t* planes = smem;
  __nv_bfloat16* out = reinterpret_cast<__nv_bfloat16*>(smem + kCB * PW);

  const int strips = (H + TR - 1) / TR;
  const int n = blockIdx.x / strips, r0 = blockIdx.x % strips * TR;
  const int c0 = blockIdx.y * kCB;
  const int tid = threadIdx.x + 32 * threadIdx.y, lane = threadIdx.x, warp = threadIdx.y;

  // Stage rows r0 - pad .. r0 + TR + pad - 1, columns -8 .. Wp + 16 - 8 as planes (zeros outside).
  // Unit: (row, column pair, channel half): two 16-byte loads, eight 32-bit stores.
  const int pairs = RS / 2;
  constexpr int HALVES = kCB / 8;
  const int units = HALVES == 2 ? (NR * pairs + 15) / 16 * 32 : NR * pairs;
  for (int u = tid; u < units; u += 32 * kWarps) {
    const int h = HALVES == 2 ? (u >> 4) & 1 : 0;  // lanes 0-15 half 0, 16-31 half 1
    const int rest = HALVES == 2 ? (u & 15) | ((u >> 5) << 4) : u;  // (row, pair) index
    if (rest >= NR * pairs) continue;
    const int rr = rest / pairs, p = rest % pairs;
    const int row = r0 - pad + rr, col = 2 * p - 8;
    uint4 a = make_uint4(0, 0, 0, 0), b = make_uint4(0, 0, 0, 0);
    if (row >= 0 && row < H) {
      const __nv_bfloat16* src = x + ((int64_t(n) * H + row) * W) * C + c0 + 8 * h;
      if (col >= 0 && col < W) a = __ldg(reinterpret_cast<const uint4*>(src + int64_t(col) * C));
      if (col + 1 >= 0 && col + 1 < W)
        b = __ldg(reinterpret_cast<const uint4*>(src + int64_t(col + 1) * C));
    }
    // Store s writes channel cc = (s + 4 h) % 8 of the half: the halves write planes 4 or 12
    // apart (distinct banks). Rotating the vectors by h keeps the register indices static.
    const uint32_t av[4] = {h ? a.z : a.x, h ? a.w : a.y, h ? a.x : a.z, h ? a.y : a.w};
    const uint32_t bv[4] = {h ? b.z : b.x, h ? b.w : b.y, h ? b.x : b.z, h ? b.y : b.w};
    uint32_t* dst = planes + 8 * h * PW + rr * RSW + p;
#pragma unroll
    for (int s = 0; s < 8; ++s) {
      const uint32_t lo = (s & 1) ? (av[s >> 1] >> 16) : (av[s >> 1] & 0xffff);
      const uint32_t hi = (s & 1) ? (bv[s >> 1] & 0xffff0000u) : (bv[s >> 1] << 16);
      dst[((s + 4 * h) & 7) * PW] = lo | hi;
    }
  }
  __syncthreads();

  const int g = lane >> 2, t = lane & 3;
  const int mt = Wp / 16;
  for (int ci = warp; ci < kCB; ci += kWarps) {
    const int c = c0 + ci;
    // A fragments: chunk j, kernel row kh: a0 = A[g][2t, 2t+1], a1 = A[g+8][..], a2 = A[g][2t+8,
    // 2t+9], a3 = A[g+8][2t+8, 2t+9]; A[m][k] = w[kh][16 j + k - 8 - m + pad].
    uint32_t af[K][2][4];
    const float* wc = w + int64_t(c) * K * K;
#pragma unroll
    for (int kh = 0; kh < K; ++kh)
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int m = g + 8 * (r & 1), k = 2 * t + 8 * (r >> 1);
          const int q0 = 16 * j + k - 8 - m + pad, q1 = q0 + 1;
          const float v0 = (q0 >= 0 && q0 < K) ? wc[kh * K + q0] : 0.f;
          const float v1 = (q1 >= 0 && q1 < K) ? wc[kh * K + q1] : 0.f;
          af[kh][j][r] = pack_bf16(v0, v1);
        }
    const float bc = bias ? bias[c] : 0.f;
    const uint32_t pbase = static_cast<uint32_t>(__cvta_generic_to_shared(planes + ci * PW)) +
                           ((lane & 7) * RSW) * 4 + (lane >> 3) * 16;
    for (int tile = 0; tile < mt * (TR / 8); ++tile) {
      const int tm = tile % mt, tn = tile / mt;  // columns 16 tm .., rows 8 tn ..
      float acc[4] = {bc, bc, bc, bc};
      uint32_t addr = pbase + ((8 * tn) * RSW) * 4 + tm * 32;
#pragma unroll
      for (int kh = 0; kh < K; ++kh) {
        uint32_t b0, b1, b2, b3;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3)
                     : "r"(addr + kh * RSW * 4));
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
            : "r"(af[kh][0][0]), "r"(af[kh][0][1]), "r"(af[kh][0][2]), "r"(af[kh][0][3]), "r"(b0),
              "r"(b1));
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
            : "r"(af[kh][1][0]), "r"(af[kh][1][1]), "r"(af[kh][1][2]), "r"(af[kh][1][3]), "r"(b2),
              "r"(b3));
      }
      // acc = C[m][n] for (m, n) = (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1):
      // column 16 tm + m, row 8 tn + n.
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int m = g + 8 * (r >> 1), nn = 2 * t + (r & 1);
        out[((8 * tn + nn) * Wp + 16 * tm + m) * kCB + ci] = __float2bfloat16_rn(acc[r]);
      }
    }
  }
  __syncthreads();
  // Write the strip: 16-byte vectors (8 channels of a pixel).
  for (int u = tid; u < TR * Wp * HALVES; u += 32 * kWarps) {
    const int pix = u / HALVES, h = u % HALVES, rr = pix / Wp, col = pix % Wp, row = r0 + rr;
    if (row < H && col < W)
      *reinterpret_cast<uint4*>(y + ((int64_t(n) * H + row) * W + col) * C + c0 + 8 * h) =
          reinterpret_cast<const uint4*>(out)[pix * HALVES + h];
  }
}

// Variant B ("filter in B"): the mma's m = 16 output rows, n = 8 output columns, k = 16 input
// columns [c0 - 4, c0 + 12) of one input row per kernel row p: A[m][k] = x[r0 + m + p - pad][c0 -
// 4 + k] (16 x 16 straight from a plane: one ldmatrix.x4), B_p[k][n] = w[p][k - 4 - n + pad] (a
// Toeplitz of the filter row, zero outside 0..K-1; the 8 + K - 1 input columns fit the 16 for
// K <= 9). K mma a tile, and only 2 K filter registers (built once per channel).
// Planes: storage column = image column + 4, row stride RS = 8 Wn + 8 (+ 8 when Wn is odd, so
// RS = 8 mod 16 and ldmatrix's 8 rows hit distinct banks), Wn = ceil(W / 8) column tiles.
template <int K, int TR, int kCB>
__global__ void __launch_bounds__(32 * kWarps)
    tc_dw_fwd_b(const __nv_bfloat16* __restrict__ x, const float* __restrict__ w,
                const float* __restrict__ bias, __nv_bfloat16* __restrict__ y, int H, int W,
                int C) {
  constexpr int pad = K / 2, NR = TR + K - 1, HALVES = kCB / 8;
  static_assert(TR % 16 == 0, "row tiles of 16");
  extern __shared__ __align__(16) uint32_t smem[];
  const int Wn = (W + 7) / 8, RS = 8 * Wn + 8 + (Wn & 1) * 8, RSW = RS / 2, Wp = 8 * Wn;
  int PW = NR * RSW;
  PW += (12 - PW % 8) % 8;  // PW = 4 mod 8
  uint32_t* planes = smem;
  __nv_bfloat16* out = reinterpret_cast<__nv_bfloat16*>(smem + kCB * PW);
  const int strips = (H + TR - 1) / TR;
  const int n = blockIdx.x / strips, r0 = blockIdx.x % strips * TR;
  const int c0 = blockIdx.y * kCB;
  const int tid = threadIdx.x + 32 * threadIdx.y, lane = threadIdx.x, warp = threadIdx.y;

  const int pairs = RSW;
  const int units = HALVES == 2 ? (NR * pairs + 15) / 16 * 32 : NR * pairs;
  for (int u = tid; u < units; u += 32 * kWarps) {
    const int h = HALVES == 2 ? (u >> 4) & 1 : 0;
    const int rest = HALVES == 2 ? (u & 15) | ((u >> 5) << 4) : u;
    if (rest >= NR * pairs) continue;
    const int rr = rest / pairs, p = rest % pairs;
    const int row = r0 - pad + rr, col = 2 * p - 4;
    uint4 a = make_uint4(0, 0, 0, 0), b = make_uint4(0, 0, 0, 0);
    if (row >= 0 && row < H) {
      const __nv_bfloat16* src = x + ((int64_t(n) * H + row) * W) * C + c0 + 8 * h;
      if (col >= 0 && col < W) a = __ldg(reinterpret_cast<const uint4*>(src + int64_t(col) * C));
      if (col + 1 >= 0 && col + 1 < W)
        b = __ldg(reinterpret_cast<const uint4*>(src + int64_t(col + 1) * C));
    }
    const uint32_t av[4] = {h ? a.z : a.x, h ? a.w : a.y, h ? a.x : a.z, h ? a.y : a.w};
    const uint32_t bv[4] = {h ? b.z : b.x, h ? b.w : b.y, h ? b.x : b.z, h ? b.y : b.w};
    uint32_t* dst = planes + 8 * h * PW + rr * RSW + p;
#pragma unroll
    for (int s = 0; s < 8; ++s) {
      const uint32_t lo = (s & 1) ? (av[s >> 1] >> 16) : (av[s >> 1] & 0xffff);
      const uint32_t hi = (s & 1) ? (bv[s >> 1] & 0xffff0000u) : (bv[s >> 1] << 16);
      dst[((s + 4 * h) & 7) * PW] = lo | hi;
    }
  }
  __syncthreads();

  const int g = lane >> 2, t = lane & 3;
  const int mt = TR / 16;
  for (int ci = warp; ci < kCB; ci += kWarps) {
    const int c = c0 + ci;
    // B fragments: b0 = B[2t, 2t + 1][g], b1 = B[2t + 8, 2t + 9][g], B[k][n] = w[p][k - 4 - n +
    // pad]
    uint32_t bf[K][2];
    const float* wc = w + int64_t(c) * K * K;
#pragma unroll
    for (int pp = 0; pp < K; ++pp)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int q0 = 2 * t + 8 * r - 4 - g + pad, q1 = q0 + 1;
        const float v0 = (q0 >= 0 && q0 < K) ? wc[pp * K + q0] : 0.f;
        const float v1 = (q1 >= 0 && q1 < K) ? wc[pp * K + q1] : 0.f;
        bf[pp][r] = pack_bf16(v0, v1);
      }
    const float bc = bias ? bias[c] : 0.f;
    // lane l addresses row (l & 7) + 8 ((l >> 3) & 1), columns 8 (l >> 4) of the 16 x 16 tile
    const uint32_t pbase = static_cast<uint32_t>(__cvta_generic_to_shared(planes + ci * PW)) +
                           (((lane & 7) + 8 * ((lane >> 3) & 1)) * RSW) * 4 + (lane >> 4) * 16;
    for (int tile = 0; tile < mt * Wn; ++tile) {
      const int tn = tile % Wn, tm = tile / Wn;  // columns 8 tn .., rows 16 tm ..
      float acc[4] = {bc, bc, bc, bc};
      const uint32_t addr = pbase + ((16 * tm) * RSW) * 4 + tn * 16;
#pragma unroll
      for (int pp = 0; pp < K; ++pp) {
        uint32_t a0, a1, a2, a3;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3)
                     : "r"(addr + pp * RSW * 4));
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(bf[pp][0]), "r"(bf[pp][1]));
      }
      // acc: C[g][2t], C[g][2t + 1], C[g + 8][2t], C[g + 8][2t + 1]; row 16 tm + m, column 8 tn + n
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int m = g + 8 * (r >> 1), nn = 2 * t + (r & 1);
        out[((16 * tm + m) * Wp + 8 * tn + nn) * kCB + ci] = __float2bfloat16_rn(acc[r]);
      }
    }
  }
  __syncthreads();
  for (int u = tid; u < TR * Wp * HALVES; u += 32 * kWarps) {
    const int pix = u / HALVES, h = u % HALVES, rr = pix / Wp, col = pix % Wp, row = r0 + rr;
    if (row < H && col < W)
      *reinterpret_cast<uint4*>(y + ((int64_t(n) * H + row) * W + col) * C + c0 + 8 * h) =
          reinterpret_cast<const uint4*>(out)[pix * HALVES + h];
  }
}

__global__ void ref_dw_fwd(const __nv_bfloat16* x, const float* w, const float* bias, float* y,
                           int N, int H, int W, int C, int K) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= int64_t(N) * H * W * C) return;
  const int c = i % C, col = i / C % W, row = i / C / W % H, n = i / C / W / H, pad = K / 2;
  float s = bias ? bias[c] : 0.f;
  for (int p = 0; p < K; ++p)
    for (int q = 0; q < K; ++q) {
      const int r = row + p - pad, cc = col + q - pad;
      if (r < 0 || r >= H || cc < 0 || cc >= W) continue;
      const float wv = __bfloat162float(__float2bfloat16_rn(w[(c * K + p) * K + q]));
      s += wv * __bfloat162float(x[((int64_t(n) * H + r) * W + cc) * C + c]);
    }
  y[i] = s;
}

template <int K, int TR, int kCB>
float run(const __nv_bfloat16* x, const float* w, const float* b, __nv_bfloat16* y, int N, int H,
          int W, int C, int iters) {
  const int Wp = (W + 15) / 16 * 16, RS = Wp + 24, NR = TR + K - 1;
  int PW = NR * RS / 2;
  PW += (12 - PW % 8) % 8;
  const size_t smem = size_t(kCB) * PW * 4 + size_t(TR) * Wp * kCB * 2;
  CK(cudaFuncSetAttribute(tc_dw_fwd<K, TR, kCB>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          int(smem)));
  dim3 grid(N * ((H + TR - 1) / TR), C / kCB), block(32, kWarps);
  std::vector<float> ms;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < iters + 3; ++i) {
    CK(cudaEventRecord(e0));
    tc_dw_fwd<K, TR, kCB><<<grid, block, smem>>>(x, w, b, y, H, W, C);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaGetLastError());
    float t;
    CK(cudaEventElapsedTime(&t, e0, e1));
    if (i >= 3) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  int nb = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, tc_dw_fwd<K, TR, kCB>, 32 * kWarps, smem));
  std::printf("  TR=%d CB=%d smem %zu B, %d blocks/SM: median %.1f us\n", TR, kCB, smem, nb,
              ms[ms.size() / 2] * 1e3);
  return ms[ms.size() / 2];
}

template <int K, int TR, int kCB>
float run_b(const __nv_bfloat16* x, const float* w, const float* b, __nv_bfloat16* y, int N, int H,
            int W, int C, int iters) {
  const int Wn = (W + 7) / 8, RS = 8 * Wn + 8 + (Wn & 1) * 8, NR = TR + K - 1;
  int PW = NR * RS / 2;
  PW += (12 - PW % 8) % 8;
  const size_t smem = size_t(kCB) * PW * 4 + size_t(TR) * 8 * Wn * kCB * 2;
  CK(cudaFuncSetAttribute(tc_dw_fwd_b<K, TR, kCB>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          int(smem)));
  dim3 grid(N * ((H + TR - 1) / TR), C / kCB), block(32, kWarps);
  std::vector<float> ms;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < iters + 3; ++i) {
    CK(cudaEventRecord(e0));
    tc_dw_fwd_b<K, TR, kCB><<<grid, block, smem>>>(x, w, b, y, H, W, C);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaGetLastError());
    float t;
    CK(cudaEventElapsedTime(&t, e0, e1));
    if (i >= 3) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  int nb = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, tc_dw_fwd_b<K, TR, kCB>, 32 * kWarps,
                                                   smem));
  std::printf("  B: TR=%d CB=%d smem %zu B, %d blocks/SM: median %.1f us\n", TR, kCB, smem, nb,
              ms[ms.size() / 2] * 1e3);
  return ms[ms.size() / 2];
}

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: tc_dw N H W C K\n");
    return 2;
  }
  const int N = std::atoi(argv[1]), H = std::atoi(argv[2]), W = std::atoi(argv[3]),
            C = std::atoi(argv[4]), K = std::atoi(argv[5]);
  const int64_t n = int64_t(N) * H * W * C;
  std::vector<__nv_bfloat16> hx(n);
  std::vector<float> hw(size_t(C) * K * K), hb(C);
  uint64_t s = 12345;
  auto rnd = [&] {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return float((s >> 40) & 0xffffff) / float(1 << 24) * 2.f - 1.f;
  };
  for (auto& v : hx) v = __float2bfloat16_rn(rnd());
  for (auto& v : hw) v = rnd() * 0.3f;
  for (auto& v : hb) v = rnd();
  __nv_bfloat16 *dx, *dy;
  float *dw, *db, *dr;
  CK(cudaMalloc(&dx, n * 2));
  CK(cudaMalloc(&dy, n * 2));
  CK(cudaMalloc(&dr, n * 4));
  CK(cudaMalloc(&dw, hw.size() * 4));
  CK(cudaMalloc(&db, hb.size() * 4));
  CK(cudaMemcpy(dx, hx.data(), n * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dw, hw.data(), hw.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice));
  ref_dw_fwd<<<(n + 255) / 256, 256>>>(dx, dw, db, dr, N, H, W, C, K);
  CK(cudaGetLastError());
  std::vector<float> hr(n);
  CK(cudaMemcpy(hr.data(), dr, n * 4, cudaMemcpyDeviceToHost));
  std::printf("tc_dw N=%d H=%d W=%d C=%d K=%d (bf16, %.1f MB in + out)\n", N, H, W, C, K,
              2.0 * n * 2 / 1e6);
  auto check = [&](const char* what) {
    std::vector<__nv_bfloat16> hy(n);
    CK(cudaMemcpy(hy.data(), dy, n * 2, cudaMemcpyDeviceToHost));
    double worst = 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = std::fabs(double(__bfloat162float(hy[i])) - hr[i]);
      const double tol = std::fabs(hr[i]) * (1.0 / 128) + 1e-5;  // bf16 output rounding
      worst = std::max(worst, d / (std::fabs(hr[i]) + 1e-3));
      if (!(d <= tol)) ++bad;
    }
    std::printf("  %s: %lld of %lld outside bf16 rounding, worst rel %.2e\n", what, (long long)bad,
                (long long)n, worst);
  };
  auto one = [&](auto kt, auto trt, auto cbt) {
    constexpr int KK = decltype(kt)::value, TR = decltype(trt)::value, CB = decltype(cbt)::value;
    CK(cudaMemset(dy, 0xff, n * 2));  // poison (bf16 NaN)
    run<KK, TR, CB>(dx, dw, db, dy, N, H, W, C, 20);
    check("");
  };
  auto one_b = [&](auto kt, auto trt, auto cbt) {
    constexpr int KK = decltype(kt)::value, TR = decltype(trt)::value, CB = decltype(cbt)::value;
    CK(cudaMemset(dy, 0xff, n * 2));
    run_b<KK, TR, CB>(dx, dw, db, dy, N, H, W, C, 20);
    check("");
  };
  auto variants = [&](auto kt) {
    using I8 = std::integral_constant<int, 8>;
    using I16 = std::integral_constant<int, 16>;
    using I32 = std::integral_constant<int, 32>;
    one(kt, I8{}, I16{});
    one(kt, I16{}, I16{});
    one(kt, I16{}, I8{});
    one(kt, I32{}, I8{});
    one_b(kt, I16{}, I16{});
    one_b(kt, I32{}, I16{});
    one_b(kt, I16{}, I8{});
    one_b(kt, I32{}, I8{});
  };
  if (K == 3) variants(std::integral_constant<int, 3>{});
  if (K == 5) variants(std::integral_constant<int, 5>{});
  if (K == 7) variants(std::integral_constant<int, 7>{});
  if (K == 9) variants(std::integral_constant<int, 9>{});
  return 0;
}
