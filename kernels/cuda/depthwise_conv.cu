// Hand-written depthwise convolution on NHWC fp32 or bf16 tensors (f32 filters and accumulation) (kernels/depthwise_conv.h): forward,
// backward data (transposed conv) and a deterministic weight/bias gradient.
// Compiled as C++17 by nvcc: includes only core/tensor.h, core/error.h, kernels/*.h, kernels/cuda/*.h.
//
// Thread mapping (forward and backward data). In NHWC the C channels of one pixel are contiguous,
// and a depthwise conv never mixes channels, so the lanes of a warp take consecutive channel
// vectors (V = 4 channels as one float4 when C % 4 == 0 and the pointers are 16-byte aligned,
// else V = 1): every load and store of a warp is one contiguous run of memory (coalesced). Each
// thread owns TW consecutive output pixels of one output row for its V channels (a "tile"): for
// each kernel row it loads the input window those TW outputs need once into registers (TW + K - 1
// pixels at stride 1) and applies all K taps of that row to all TW outputs, so each input value
// loaded is used up to K times from registers instead of being re-read per tap. threadIdx.y
// walks neighbouring tiles of the same row, whose windows overlap (L1 hits), and neighbouring
// blocks take the next rows (their kernel-row windows overlap in L2). The block's channels' K x K
// filters are staged once into shared memory as [tap][channel] so a warp reads one tap of its
// channels as one conflict-free contiguous row (registers could not hold 49 float4 weights per
// thread next to the window and the accumulators). K = 3, 5, 7 are template constants (window and
// accumulators in registers, all register-array indices compile-time); other K take a run-time-K
// path that loads each input value per tap (slower, same mapping).
//
// Backward data is the transposed conv: gx[h, w] = sum over taps (p, q) with (h + pad - p) and
// (w + pad - q) divisible by the stride of gy[(h + pad - p)/s, (w + pad - q)/s] * w[p, q]. For
// stride 2 a thread's tile holds outputs of one column parity (w = 2m + par), so all of them use
// the same tap columns q = q0, q0+2, ... and read consecutive gy columns: a stride-1 window again,
// with no zero-stuffed gy and no wasted multiplies.
//
// Weight gradient (deterministic, no atomics): block (32 channels, kWgradWarps warps) x slice z of
// the N*OH output rows. A thread (one channel) keeps all K*K sums in registers and slides a
// K x K window of x along one gy row (S new x columns per output column), so each gy value is
// loaded once and feeds K*K FMAs. Warps take the slice's rows round-robin (fixed assignment); the
// block sums its warps in a fixed order through shared memory and writes partial[z][c][tap]; a
// second kernel sums the slices in order z = 0, 1, ... The slice count depends only on the shape,
// so the result is bit-identical run to run. The bias gradient comes from the same pass. At stride 1
// (ConvNeXt's case) wgrad_staged_kernel stages the rows in shared memory first (see there).
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/tensor.h"
#include "kernels/cuda/bf16.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/dispatch_k.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/reduce_slices.cuh"
#include "kernels/cuda/staged_rows.cuh"
#include "kernels/depthwise_conv.h"

namespace hg::kernels::cuda {
namespace {

constexpr int kThreads = 256;          // forward / backward-data block size (upper bound)
constexpr int kSmemFloats = 12288;     // 48 KB: the staged filters must fit the default limit
constexpr int kWgradWarps = kStagedWarps;  // warps per weight-gradient / staged block
constexpr int kWgradBlocksPerSM = 8;   // weight-gradient blocks wanted per SM: fills the GPU

/// Sizes passed to the kernels (all fit int32: depthwise_conv_supported checks).
struct Dims {
  int N, H, W, C, OH, OW, K, pad;
};

// ---- storage I/O: V channels of storage type T <-> V floats. A bf16 specialisation is all that
// mixed precision needs here (accumulation stays float). -----------------------------------------
template <typename T, int V>
struct Io;
template <>
struct Io<float, 1> {
  static __device__ __forceinline__ void load(const float* p, float (&v)[1]) { v[0] = __ldg(p); }
  static __device__ __forceinline__ void store(float* p, const float (&v)[1]) { *p = v[0]; }
};
template <>
struct Io<float, 4> {
  static __device__ __forceinline__ void load(const float* p, float (&v)[4]) { load4(p, v); }
  static __device__ __forceinline__ void store(float* p, const float (&v)[4]) { store4(p, v); }
};

template <>
struct Io<__nv_bfloat16, 1> {
  // Through the native unsigned-short __ldg: cuda_bf16.hpp's __ldg(const __nv_bfloat16*) is
  // inline asm, which the compiler cannot schedule ahead of use (measured: 3x slower wgrad).
  static __device__ __forceinline__ void load(const __nv_bfloat16* p, float (&v)[1]) {
    v[0] = __bfloat162float(__ushort_as_bfloat16(__ldg(reinterpret_cast<const unsigned short*>(p))));
  }
  static __device__ __forceinline__ void store(__nv_bfloat16* p, const float (&v)[1]) {
    *p = __float2bfloat16_rn(v[0]);
  }
};
template <>
struct Io<__nv_bfloat16, 4> {  // 4 bf16 = one 8-byte access
  static __device__ __forceinline__ void load(const __nv_bfloat16* p, float (&v)[4]) {
    load4(p, v);
  }
  static __device__ __forceinline__ void store(__nv_bfloat16* p, const float (&v)[4]) {
    store4(p, v);
  }
};

/// A filter value as the math uses it: f32 for f32 activations, rounded to bf16 for bf16 ones
/// (the contract of kernels/conv2d.h, which the CPU reference follows).
template <typename T>
__device__ __forceinline__ float filter_value(float w) {
  if constexpr (std::is_same_v<T, float>) return w;
  else return __bfloat162float(__float2bfloat16_rn(w));
}

/// v = row[col * C .. + V) when 0 <= col < width, else zeros (the conv's zero padding).
template <typename T, int V>
__device__ __forceinline__ void load_or_zero(const T* row, int col, int width, int C,
                                             float (&v)[V]) {
  if (col >= 0 && col < width) {
    Io<T, V>::load(row + int64_t(col) * C, v);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] = 0.f;
  }
}

/// V consecutive floats from shared memory (16-byte aligned when V == 4).
template <int V>
__device__ __forceinline__ void load_shared(const float* p, float (&v)[V]) {
  if constexpr (V == 4) {
    const float4 t = *reinterpret_cast<const float4*>(p);
    v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] = p[e];
  }
}

template <int V>
__device__ __forceinline__ void fma_v(float (&acc)[V], const float (&w)[V], const float (&x)[V]) {
#pragma unroll
  for (int e = 0; e < V; ++e) acc[e] = fmaf(w[e], x[e], acc[e]);
}

/// Copies the filters of channels [c0, c0 + CB) from w (C, K*K) into wsm[tap][CB] (zeros for
/// channels past C). Global reads are contiguous in the loop index.
template <typename T>
__device__ __forceinline__ void stage_filters(const float* __restrict__ w, int C, int KK, int c0,
                                              int CB, float* wsm) {
  const int nthreads = blockDim.x * blockDim.y, tid = threadIdx.y * blockDim.x + threadIdx.x;
  const int present = min(CB, C - c0);
  for (int e = tid; e < CB * KK; e += nthreads) {
    const int cl = e / KK, k = e % KK;
    wsm[k * CB + cl] = cl < present ? filter_value<T>(w[int64_t(c0 + cl) * KK + k]) : 0.f;
  }
}

// Tile widths (outputs per thread along W): wide enough that a window is reused K times, small
// enough that window + accumulators (+ V-wide) stay well inside the register file.
template <int S>
constexpr int forward_tile() { return S == 1 ? 8 : 4; }
constexpr int kBackwardTile = 8;

// ---- forward ------------------------------------------------------------------------------------
// Block (CVB, TY): channel vector cv = blockIdx.y*CVB + threadIdx.x (channels V*cv ..), tile
// blockIdx.x*TY + threadIdx.y = (n*OH + i)*ntw + tw: outputs j = tw*TW .. tw*TW + TW - 1 of row i.
template <typename T, int V, int KT, int S, int TW>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(const T* __restrict__ x, const float* __restrict__ w,
                   const float* __restrict__ bias, Dims d, T* __restrict__ y) {
  extern __shared__ float4 smem_f4[];  // float4 so the base is 16-byte aligned
  float* wsm = reinterpret_cast<float*>(smem_f4);
  const int K = KT > 0 ? KT : d.K;
  const int CB = blockDim.x * V, c0 = blockIdx.y * CB;
  stage_filters<T>(w, d.C, K * K, c0, CB, wsm);
  __syncthreads();

  const int cl = threadIdx.x * V, c = c0 + cl;
  const int ntw = (d.OW + TW - 1) / TW;
  const int64_t tile = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  if (c >= d.C || tile >= int64_t(d.N) * d.OH * ntw) return;
  const int tw = int(tile % ntw);
  const int64_t ni = tile / ntw;
  const int i = int(ni % d.OH), n = int(ni / d.OH);
  const int j0 = tw * TW;
  const int col0 = j0 * S - d.pad;  // input column of window slot 0

  float acc[TW][V];
#pragma unroll
  for (int e = 0; e < V; ++e) {
    const float b = bias ? bias[c + e] : 0.f;
#pragma unroll
    for (int t = 0; t < TW; ++t) acc[t][e] = b;
  }
  for (int kh = 0; kh < K; ++kh) {
    const int ii = i * S - d.pad + kh;
    if (ii < 0 || ii >= d.H) continue;  // a zero-padding row adds nothing
    const T* row = x + (int64_t(n) * d.H + ii) * d.W * d.C + c;
    const float* wrow = wsm + kh * K * CB + cl;
    if constexpr (KT > 0) {
      // slot m = input column col0 + m; output t, tap kw reads slot t*S + kw
      constexpr int NW = (TW - 1) * S + KT;
      float win[NW][V];
#pragma unroll
      for (int m = 0; m < NW; ++m) load_or_zero<T, V>(row, col0 + m, d.W, d.C, win[m]);
#pragma unroll
      for (int kw = 0; kw < KT; ++kw) {
        float wv[V];
        load_shared<V>(wrow + kw * CB, wv);
#pragma unroll
        for (int t = 0; t < TW; ++t) fma_v<V>(acc[t], wv, win[t * S + kw]);
      }
    } else {
      for (int kw = 0; kw < K; ++kw) {
        float wv[V];
        load_shared<V>(wrow + kw * CB, wv);
#pragma unroll
        for (int t = 0; t < TW; ++t) {
          float xv[V];
          load_or_zero<T, V>(row, col0 + t * S + kw, d.W, d.C, xv);
          fma_v<V>(acc[t], wv, xv);
        }
      }
    }
  }
  T* out = y + (int64_t(n) * d.OH + i) * d.OW * d.C + c;
#pragma unroll
  for (int t = 0; t < TW; ++t)
    if (j0 + t < d.OW) Io<T, V>::store(out + int64_t(j0 + t) * d.C, acc[t]);
}

// ---- backward data ------------------------------------------------------------------------------
// Same block layout; tile = ((n*H + h)*S + par)*nmb + mb holds gx[n, h, S*m + par, c..] for
// m = mb*TW + t. Taps: rows p = p0, p0+S, ... with p0 = (h + pad) % S read gy row (h + pad - p)/S;
// columns q = q0 + S*u with q0 = (par + pad) % S read gy column m + A - u, A = (par + pad - q0)/S.
template <typename T, int V, int KT, int S, int TW>
__global__ void __launch_bounds__(kThreads)
    backward_data_kernel(const T* __restrict__ gy, const float* __restrict__ w, Dims d,
                         T* __restrict__ gx) {
  extern __shared__ float4 smem_f4[];
  float* wsm = reinterpret_cast<float*>(smem_f4);
  const int K = KT > 0 ? KT : d.K;
  const int CB = blockDim.x * V, c0 = blockIdx.y * CB;
  stage_filters<T>(w, d.C, K * K, c0, CB, wsm);
  __syncthreads();

  const int cl = threadIdx.x * V, c = c0 + cl;
  const int nmb = ((d.W + S - 1) / S + TW - 1) / TW;
  const int64_t tile = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  if (c >= d.C || tile >= int64_t(d.N) * d.H * S * nmb) return;
  const int mb = int(tile % nmb);
  int64_t rest = tile / nmb;
  const int par = int(rest % S);
  rest /= S;
  const int h = int(rest % d.H), n = int(rest / d.H);
  const int m0 = mb * TW;
  const int p0 = (h + d.pad) % S, q0 = (par + d.pad) % S;
  const int A = (par + d.pad - q0) / S;

  float acc[TW][V];
#pragma unroll
  for (int t = 0; t < TW; ++t)
#pragma unroll
    for (int e = 0; e < V; ++e) acc[t][e] = 0.f;
  for (int p = p0; p < K; p += S) {
    const int num = h + d.pad - p;  // divisible by S by the choice of p0
    if (num < 0) break;             // larger p only go further up
    const int i = num / S;
    if (i >= d.OH) continue;
    const T* row = gy + (int64_t(n) * d.OH + i) * d.OW * d.C + c;
    const float* wrow = wsm + p * K * CB + cl;
    if constexpr (KT > 0) {
      // UA = most column taps of one parity; slot s = gy column m0 + A - (UA-1) + s, and
      // output t, tap u reads slot t + UA - 1 - u (compile-time indices for every parity).
      constexpr int UA = (KT + S - 1) / S;
      constexpr int NW = TW + UA - 1;
      const int jb = m0 + A - (UA - 1);
      float win[NW][V];
#pragma unroll
      for (int s = 0; s < NW; ++s) load_or_zero<T, V>(row, jb + s, d.OW, d.C, win[s]);
#pragma unroll
      for (int u = 0; u < UA; ++u) {
        const int q = q0 + S * u;
        if (q >= KT) break;
        float wv[V];
        load_shared<V>(wrow + q * CB, wv);
#pragma unroll
        for (int t = 0; t < TW; ++t) fma_v<V>(acc[t], wv, win[t + UA - 1 - u]);
      }
    } else {
      for (int q = q0, u = 0; q < K; q += S, ++u) {
        float wv[V];
        load_shared<V>(wrow + q * CB, wv);
#pragma unroll
        for (int t = 0; t < TW; ++t) {
          float gv[V];
          load_or_zero<T, V>(row, m0 + t + A - u, d.OW, d.C, gv);
          fma_v<V>(acc[t], wv, gv);
        }
      }
    }
  }
  T* out = gx + (int64_t(n) * d.H + h) * d.W * d.C + c;
#pragma unroll
  for (int t = 0; t < TW; ++t) {
    const int col = S * (m0 + t) + par;
    if (col < d.W) Io<T, V>::store(out + int64_t(col) * d.C, acc[t]);
  }
}

// ---- weight (+ bias) gradient -------------------------------------------------------------------
/// One scalar of storage type T as float (the wgrad kernels run one channel per thread).
template <typename T>
__device__ __forceinline__ float load1(const T* p) {
  float v[1];
  Io<T, 1>::load(p, v);
  return v[0];
}

// The end of both weight-gradient kernels: sums the block's warps in a fixed order and writes the
// block's slice partial[z][c][tap] (the chunk's channels are one contiguous run of C*KK, so the
// writes are contiguous) and, when asked, bias_partial[z][c]. acc is this thread's K x K sums.
template <int K>
__device__ __forceinline__ void store_block_sums(float (&red)[kWgradWarps][K * K][33],
                                                 const float (&acc)[K][K], float gsum, const Dims& d,
                                                 float* __restrict__ partial,
                                                 float* __restrict__ bias_partial) {
  constexpr int KK = K * K;
  const int lane = threadIdx.x, warp = threadIdx.y, c = blockIdx.x * 32 + lane;
#pragma unroll
  for (int p = 0; p < K; ++p)
#pragma unroll
    for (int q = 0; q < K; ++q) red[warp][p * K + q][lane] = acc[p][q];
  __syncthreads();
  const int tid = warp * 32 + lane;
  const int present = min(32, d.C - int(blockIdx.x) * 32);
  float* out = partial + int64_t(blockIdx.y) * d.C * KK + int64_t(blockIdx.x) * 32 * KK;
  for (int e = tid; e < present * KK; e += 32 * kWgradWarps) {
    const int cl = e / KK, k = e % KK;
    float sum = 0.f;
    for (int wp = 0; wp < kWgradWarps; ++wp) sum += red[wp][k][cl];
    out[e] = sum;
  }
  if (bias_partial) {
    __syncthreads();  // red is reused
    red[warp][0][lane] = gsum;
    __syncthreads();
    if (warp == 0 && c < d.C) {
      float sum = 0.f;
      for (int wp = 0; wp < kWgradWarps; ++wp) sum += red[wp][0][lane];
      bias_partial[int64_t(blockIdx.y) * d.C + c] = sum;
    }
  }
}

// Block (32, kWgradWarps): channel c = blockIdx.x*32 + lane; slice z = blockIdx.y covers gy rows
// r = (n*OH + i) in [z*rows, (z+1)*rows). win[p][q] = x[n, i*S - pad + p, j*S - pad + q, c] for
// the current output column j; each step shifts it by S columns and loads S new ones per row.
template <typename T, int KT, int S>
__global__ void __launch_bounds__(32 * kWgradWarps)
    wgrad_kernel(const T* __restrict__ x, const T* __restrict__ gy, Dims d, int rows_per_block,
                 float* __restrict__ partial, float* __restrict__ bias_partial) {
  constexpr int K = KT, KK = KT * KT;
  __shared__ float red[kWgradWarps][KK][33];  // pitch 33: the summing loop reads along taps
  const int lane = threadIdx.x, warp = threadIdx.y;
  const int c = blockIdx.x * 32 + lane;
  float acc[K][K];
#pragma unroll
  for (int p = 0; p < K; ++p)
#pragma unroll
    for (int q = 0; q < K; ++q) acc[p][q] = 0.f;
  float gsum = 0.f;
  const int64_t R = int64_t(d.N) * d.OH;
  const int64_t r0 = int64_t(blockIdx.y) * rows_per_block;
  const int64_t r1 = std::min<int64_t>(R, r0 + rows_per_block);
  if (c < d.C) {
    for (int64_t r = r0 + warp; r < r1; r += kWgradWarps) {
      const int n = int(r / d.OH), i = int(r % d.OH);
      const T* xr[K];
      bool rok[K];
#pragma unroll
      for (int p = 0; p < K; ++p) {
        const int ii = i * S - d.pad + p;
        rok[p] = ii >= 0 && ii < d.H;
        xr[p] = x + (int64_t(n) * d.H + (rok[p] ? ii : 0)) * d.W * d.C + c;
      }
      const T* gr = gy + r * d.OW * d.C + c;
      float win[K][K];
      // the window "at j = -1": slots q >= S are shifted into slots q - S by the first step
#pragma unroll
      for (int p = 0; p < K; ++p)
#pragma unroll
        for (int q = 0; q < K; ++q) {
          const int col = -S - d.pad + q;
          win[p][q] = (q >= S && rok[p] && col >= 0 && col < d.W)
                          ? load1(xr[p] + int64_t(col) * d.C)
                          : 0.f;
        }
      // unrolled by K so the register shifts become renames
#pragma unroll (KT)
      for (int j = 0; j < d.OW; ++j) {
        const int cb = j * S - d.pad;
#pragma unroll
        for (int p = 0; p < K; ++p)
#pragma unroll
          for (int q = 0; q < K; ++q) {
            if (q + S < K) {
              win[p][q] = win[p][q + S];
            } else {
              const int col = cb + q;
              win[p][q] =
                  (rok[p] && col >= 0 && col < d.W) ? load1(xr[p] + int64_t(col) * d.C) : 0.f;
            }
          }
        const float g = load1(gr + int64_t(j) * d.C);
        gsum += g;
#pragma unroll
        for (int p = 0; p < K; ++p)
#pragma unroll
          for (int q = 0; q < K; ++q) acc[p][q] = fmaf(g, win[p][q], acc[p][q]);
      }
    }
  }
  store_block_sums<K>(red, acc, gsum, d, partial, bias_partial);
}

// Stride 1, staged through shared memory. Work unit: a "row group" of 2 * PR consecutive output
// rows of one image (PR row pairs). The block copies the group's gy rows and the 2 * PR + K - 1
// input rows they read, over the whole padded width (OW + K - 1 columns; rows and columns outside
// the image, and channels past C, are staged as zeros), for its 32 channels, into shared memory
// with 16-byte loads, in the storage type. Every warp then takes one (row pair, column strip) of
// the group: PR pairs x kWgradWarps / PR strips (PR grows as OW shrinks, so strips stay long).
// A thread (one channel) slides a (K + 1) x K window of x along its strip: rows i and i + 1 share
// K of their K + 1 input rows, so K + 3 shared-memory reads feed 2 K^2 FMAs, with no bounds
// checks (the padding is staged). Reading shared memory instead of global memory is what makes
// this fast: the previous kernel (same window, loads from global memory, 226 registers, 2 blocks
// per SM) waited on load latency most of the time. Groups are split into slices by the shape
// and the device only, and the block's sums are reduced in a fixed order (store_block_sums):
// deterministic. A block walks its slice's groups with the next group's rows copied (cp.async)
// into a second buffer while it computes this one (where two fit: staged_buffers): staging had
// left its warps waiting on loads (Nsight: long scoreboard the largest stall). The grid is the
// blocks that fit at once. The staging and the window are
// kernels/cuda/staged_rows.cuh (shared with the WTConv synthesis).

/// Shared memory of wgrad_staged_kernel with nb buffers: the staged rows, or the block's warp sums
/// (reused).
template <typename T>
size_t wgrad_staged_smem(int K, int PR, int OW, int nb) {
  const size_t staged =
      size_t(nb) * sizeof(T) * 32 * (size_t(2 * PR + K - 1) * (OW + K - 1) + size_t(2 * PR) * OW);
  const size_t sums = sizeof(float) * kWgradWarps * K * K * 33;
  return std::max(staged, sums);
}

template <typename T, int KT, int NB>
__global__ void __launch_bounds__(32 * kWgradWarps)
    wgrad_staged_kernel(const T* __restrict__ x, const T* __restrict__ gy, Dims d, int PR,
                        int groups_per_block, float* __restrict__ partial,
                        float* __restrict__ bias_partial) {
  constexpr int K = KT, KR = KT + 1;
  constexpr int kThreads = 32 * kWgradWarps;
  extern __shared__ uint4 stage[];
  const int RS = 2 * PR + K - 1, WS = d.OW + K - 1;  // staged x rows and columns
  // a buffer: x rows [RS][WS][32], then gy rows [2 * PR][OW][32] (16-byte units)
  const int x_vec = RS * WS * 32 * int(sizeof(T)) / 16,
            buf_vec = x_vec + 2 * PR * d.OW * 32 * int(sizeof(T)) / 16;
  const int lane = threadIdx.x, warp = threadIdx.y, c0 = blockIdx.x * 32;
  const int strips = kWgradWarps / PR, pair = warp / strips, strip = warp % strips;
  const int SW = (d.OW + strips - 1) / strips, ja = strip * SW, jb = min(d.OW, ja + SW);
  const int G = (d.OH + 2 * PR - 1) / (2 * PR);  // groups per image
  // group indices in int32 (the host checks N G < 2^31): a 64-bit division is ~70 instructions
  const int g0 = int(blockIdx.y) * groups_per_block;
  const int g1 = int(std::min<int64_t>(int64_t(d.N) * G, int64_t(g0) + groups_per_block));
  const auto walk_x = stage_walk<T, kThreads>(WS), walk_gy = stage_walk<T, kThreads>(d.OW);
  auto stage_group = [&](int64_t g, int buf) {
    const int n = int(g) / G, i0 = int(g) % G * 2 * PR;
    uint4* dst = stage + buf * buf_vec;
    stage_rows_async<T, kThreads>(x + int64_t(n) * d.H * d.W * d.C, d.H, d.W, d.C, i0 - d.pad, RS,
                                  -d.pad, WS, c0, dst, walk_x);
    stage_rows_async<T, kThreads>(gy + int64_t(n) * d.OH * d.OW * d.C, d.OH, d.OW, d.C, i0, 2 * PR,
                                  0, d.OW, c0, dst + x_vec, walk_gy);
  };
  float acc[K][K];
#pragma unroll
  for (int p = 0; p < K; ++p)
#pragma unroll
    for (int q = 0; q < K; ++q) acc[p][q] = 0.f;
  float gsum = 0.f;
  staged_items<NB>(g0, 1, g1, stage_group, [&](int64_t g, int buf) {
    const int i0 = int(g) % G * 2 * PR;
    if (c0 + lane >= d.C || i0 + 2 * pair >= d.OH || ja >= jb) return;
    const T* xs = reinterpret_cast<const T*>(stage + buf * buf_vec);
    const T* gs = reinterpret_cast<const T*>(stage + buf * buf_vec + x_vec);
    const T* xr = xs + 2 * pair * WS * 32 + lane;  // input row m of the pair: xr + m * WS * 32
    const T* ga_row = gs + 2 * pair * d.OW * 32 + lane;
    const T* gb_row = ga_row + d.OW * 32;  // zeros past OH (staged)
    float win[KR][K];
    window_start<T, K>(xr, WS, ja, win);
#pragma unroll (KT)
    for (int j = ja; j < jb; ++j) {
      window_advance<T, K>(xr, WS, j, win);
      const float ga = staged_value(ga_row + j * 32), gb = staged_value(gb_row + j * 32);
      gsum += ga + gb;
#pragma unroll
      for (int p = 0; p < K; ++p)
#pragma unroll
        for (int q = 0; q < K; ++q)
          acc[p][q] = fmaf(gb, win[p + 1][q], fmaf(ga, win[p][q], acc[p][q]));
    }
  });
  __syncthreads();  // the staged rows are dead: their memory takes the warp sums
  using Sums = float[kWgradWarps][K * K][33];
  store_block_sums<K>(*reinterpret_cast<Sums*>(stage), acc, gsum, d, partial, bias_partial);
}

/// wgrad_staged_kernel with nb staging buffers (staged_buffers: one for f32 only, so bf16 has no
/// one-buffer instantiation).
template <typename T, int KT>
auto wgrad_staged(int nb) {
  if constexpr (sizeof(T) == 4)
    if (nb == 1) return wgrad_staged_kernel<T, KT, 1>;
  return wgrad_staged_kernel<T, KT, 2>;
}

// Stride 1, staged: the forward and, as a forward conv of gy with the filter rotated by 180
// degrees and padding K - 1 - pad, the backward data (gx[h, w] = sum_{p,q} gy[h + pad - p,
// w + pad - q] w[p, q]). Block (32 channels, kWgradWarps warps) = output rows [i0, i0 + 2 PR) of
// one image, every column. The block stages the 2 PR + K - 1 input rows they read over the padded
// width (OW + K - 1 columns, zeros outside the image and past C) with 16-byte loads, as
// wgrad_staged_kernel does; each warp then takes one (row pair, column strip). A thread (one
// channel) holds its K x K filter in registers and slides a (K + 1) x K window along its strip:
// K + 1 shared-memory reads feed 2 K^2 FMAs, with no bounds checks and no global loads in the
// loop. (The tile kernels above load every tap's input from global memory with a bounds check:
// ~3 instructions per FMA, ~15% of the fp32 FMA rate on the H200; perf notes, fourth session.)
template <typename T, int KT>
__global__ void __launch_bounds__(32 * kWgradWarps)
    conv_staged_kernel(const T* __restrict__ x, const float* __restrict__ w,
                       const float* __restrict__ bias, Dims d, int PR, bool flip,
                       T* __restrict__ y) {
  constexpr int K = KT, KR = KT + 1, KK = KT * KT;
  extern __shared__ uint4 stage[];
  const int RS = 2 * PR + K - 1, WS = d.OW + K - 1;  // staged rows and columns
  const T* xs = reinterpret_cast<const T*>(stage);   // [RS][WS][32]
  const int lane = threadIdx.x, warp = threadIdx.y, c0 = blockIdx.y * 32, c = c0 + lane;
  const int strips = kWgradWarps / PR, pair = warp / strips, strip = warp % strips;
  const int SW = (d.OW + strips - 1) / strips, ja = strip * SW, jb = min(d.OW, ja + SW);
  const int G = (d.OH + 2 * PR - 1) / (2 * PR);  // row groups per image; blockIdx.x = n * G + group
  const int n = int(blockIdx.x / G), i0 = int(blockIdx.x % G) * 2 * PR;
  stage_rows<T>(x + int64_t(n) * d.H * d.W * d.C, d.H, d.W, d.C, i0 - d.pad, RS, -d.pad, WS, c0,
                stage);
  float wr[K][K];
#pragma unroll
  for (int p = 0; p < K; ++p)
#pragma unroll
    for (int q = 0; q < K; ++q) {
      const int k = flip ? KK - 1 - (p * K + q) : p * K + q;
      wr[p][q] = c < d.C ? filter_value<T>(w[int64_t(c) * KK + k]) : 0.f;
    }
  const float b = bias && c < d.C ? bias[c] : 0.f;
  __syncthreads();
  const int ia = i0 + 2 * pair;  // this warp's output rows: ia and ia + 1
  if (c >= d.C || ia >= d.OH || ja >= jb) return;
  const bool second = ia + 1 < d.OH;
  const T* xr = xs + 2 * pair * WS * 32 + lane;  // staged input row m of the pair: xr + m * WS * 32
  T* ya = y + (int64_t(n) * d.OH + ia) * d.OW * d.C + c;
  T* yb = ya + int64_t(d.OW) * d.C;
  float win[KR][K];
  window_start<T, K>(xr, WS, ja, win);
#pragma unroll(KT)
  for (int j = ja; j < jb; ++j) {
    window_advance<T, K>(xr, WS, j, win);
    float a0 = b, a1 = b;
    pair_taps<K>(wr, win, a0, a1);
    const float v0[1] = {a0}, v1[1] = {a1};
    Io<T, 1>::store(ya + int64_t(j) * d.C, v0);
    if (second) Io<T, 1>::store(yb + int64_t(j) * d.C, v1);
  }
}

/// Rows per group of conv_staged_kernel: 2 PR output rows (PR row pairs), more when rows are short.
int conv_staged_pairs(int OW) { return OW >= 16 ? 2 : 4; }

/// Shared memory of conv_staged_kernel: the staged input rows.
template <typename T>
size_t conv_staged_smem(int K, int PR, int OW) {
  return sizeof(T) * 32 * size_t(2 * PR + K - 1) * size_t(OW + K - 1);
}

// Run-time K (any K up to kDepthwiseMaxK, any stride): one tap per block row, blockIdx.z = tap
// (p, q); one running sum per thread; same slices, same fixed-order reductions. The bias sum is
// taken by the tap-0 blocks.
template <typename T>
__global__ void __launch_bounds__(32 * kWgradWarps)
    wgrad_generic_kernel(const T* __restrict__ x, const T* __restrict__ gy, Dims d, int S,
                         int rows_per_block, float* __restrict__ partial,
                         float* __restrict__ bias_partial) {
  __shared__ float red[2][kWgradWarps][32];
  const int lane = threadIdx.x, warp = threadIdx.y;
  const int c = blockIdx.x * 32 + lane;
  const int k = blockIdx.z, p = k / d.K, q = k % d.K, KK = d.K * d.K;
  const bool want_bias = bias_partial && k == 0;
  float acc = 0.f, gsum = 0.f;
  const int64_t R = int64_t(d.N) * d.OH;
  const int64_t r0 = int64_t(blockIdx.y) * rows_per_block;
  const int64_t r1 = std::min<int64_t>(R, r0 + rows_per_block);
  if (c < d.C) {
    for (int64_t r = r0 + warp; r < r1; r += kWgradWarps) {
      const int n = int(r / d.OH), i = int(r % d.OH);
      const int ii = i * S - d.pad + p;
      const bool rok = ii >= 0 && ii < d.H;
      if (!rok && !want_bias) continue;
      const T* xr = x + (int64_t(n) * d.H + (rok ? ii : 0)) * d.W * d.C + c;
      const T* gr = gy + r * d.OW * d.C + c;
      for (int j = 0; j < d.OW; ++j) {
        const float g = load1(gr + int64_t(j) * d.C);
        gsum += g;
        const int col = j * S - d.pad + q;
        if (rok && col >= 0 && col < d.W) acc = fmaf(g, load1(xr + int64_t(col) * d.C), acc);
      }
    }
  }
  red[0][warp][lane] = acc;
  red[1][warp][lane] = gsum;
  __syncthreads();
  if (warp == 0 && c < d.C) {
    float s = 0.f, b = 0.f;
    for (int wp = 0; wp < kWgradWarps; ++wp) s += red[0][wp][lane], b += red[1][wp][lane];
    partial[int64_t(blockIdx.y) * d.C * KK + int64_t(c) * KK + k] = s;
    if (want_bias) bias_partial[int64_t(blockIdx.y) * d.C + c] = b;
  }
}

// ---- host side ----------------------------------------------------------------------------------
bool fits_int(int64_t v) { return v >= 0 && v <= INT32_MAX; }

Dims dims_of(const Conv2dShape& s) {
  return Dims{int(s.N), int(s.H), int(s.W), int(s.C), int(s.OH), int(s.OW), int(s.KH),
              int(s.pad)};
}

void check_supported(const char* op, const Conv2dShape& s) {
  HG_CHECK(depthwise_conv_supported(s), op, ": unsupported shape N ", s.N, " H ", s.H, " W ", s.W,
           " C ", s.C, " O ", s.O, " groups ", s.groups, " kernel ", s.KH, "x", s.KW, " stride ",
           s.stride, " pad ", s.pad, " (needs groups == C == O, square K <= ", kDepthwiseMaxK,
           ", stride 1 or 2)");
}

template <class F>
void dispatch_s(int S, F&& f) {
  if (S == 1)
    f(std::integral_constant<int, 1>{});
  else
    f(std::integral_constant<int, 2>{});
}

/// Calls f(integral_constant<int, V>) with the channel vector: V = 4 (16 bytes of float, 8 of bf16)
/// when C % 4 == 0 and the arrays are 16-byte aligned, else V = 1.
/// (V = 8 for bf16, one 16-byte access, measured slower on the H200: B=64, 96/56, 7x7 forward
/// 0.18 -> 0.37 ms with twice the registers per thread and half the threads.)
template <class F>
void dispatch_v(int64_t C, bool aligned, F&& f) {
  if (aligned && C % 4 == 0) return f(std::integral_constant<int, 4>{});
  f(std::integral_constant<int, 1>{});
}

/// Grid and block for the tile kernels: blockDim.x = channel vectors per block (at most a warp,
/// fewer when the staged filters would not fit 48 KB), blockDim.y = tiles per block.
struct TileLaunch {
  dim3 grid, block;
  size_t smem;
};
TileLaunch tile_launch(int C, int V, int KK, int64_t tiles) {
  const int cv = C / V;
  int cvb = std::min(cv, 32);
  cvb = std::max(1, std::min(cvb, kSmemFloats / (KK * V)));
  const int ty = std::max(1, kThreads / cvb);
  const int64_t gx = (tiles + ty - 1) / ty, gy = (cv + cvb - 1) / cvb;
  HG_CHECK(gx <= INT32_MAX && gy <= 65535, "depthwise_conv: grid (", gx, ", ", gy,
           ") too large for C ", C, " and ", tiles, " tiles");
  return TileLaunch{dim3(unsigned(gx), unsigned(gy)), dim3(unsigned(cvb), unsigned(ty)),
                    sizeof(float) * size_t(KK) * size_t(cvb) * size_t(V)};
}

/// Runs conv_staged_kernel (d: d.H x d.W in, d.OH x d.OW out, stride 1) when it takes the shape:
/// K = 3, 5 or 7, C a multiple of one 16-byte vector, a 16-byte aligned input, and staged rows that
/// fit the device's shared memory. Returns false, having done nothing, otherwise.
template <typename D>
bool try_conv_staged(const Dims& d, const D* in, const float* w, const float* bias, bool flip,
                     D* out) {
  const int PR = conv_staged_pairs(d.OW);
  const size_t smem = conv_staged_smem<D>(d.K, PR, d.OW);
  if (!(d.K == 3 || d.K == 5 || d.K == 7) || d.C % (16 / int(sizeof(D))) != 0 || !aligned16(in) ||
      smem > hg::cuda::max_dynamic_smem())
    return false;
  const int64_t groups = int64_t(d.N) * ((d.OH + 2 * PR - 1) / (2 * PR));
  if (groups > INT32_MAX || (d.C + 31) / 32 > 65535) return false;
  bool launched = false;
  dispatch_k(kDepthwiseKs, d.K, [&](auto kt) {
    constexpr int KT = decltype(kt)::value;
    if constexpr (KT > 0) {
      const auto kernel = conv_staged_kernel<D, KT>;
      hg::cuda::allow_max_dynamic_smem(reinterpret_cast<const void*>(kernel));
      kernel<<<dim3(unsigned(groups), unsigned((d.C + 31) / 32)), dim3(32, kWgradWarps), smem,
               hg::cuda::stream()>>>(in, w, bias, d, PR, flip, out);
      HG_CUDA_LAUNCH_CHECK();
      launched = true;
    }
  });
  return launched;
}

}  // namespace

bool depthwise_conv_supported(const Conv2dShape& s) {
  return s.depthwise() && s.KH == s.KW && s.KH >= 1 && s.KH <= kDepthwiseMaxK &&
         (s.stride == 1 || s.stride == 2) && s.pad >= 0 && fits_int(s.N) && fits_int(s.H) &&
         fits_int(s.W) && fits_int(s.C) && fits_int(s.OH) && fits_int(s.OW) &&
         fits_int(s.H + 2 * s.pad);
}

template <typename T>
void depthwise_conv_forward(const Conv2dShape& s, const T* x_in, const float* weight,
                            const float* bias, T* y_in) {
  const auto* x = dev(x_in);
  auto* y = dev(y_in);
  using D = device_t<T>;
  check_supported("depthwise_conv_forward", s);
  if (s.N == 0 || s.C == 0 || s.OH <= 0 || s.OW <= 0) return;
  const Dims d = dims_of(s);
  if (s.stride == 1 && try_conv_staged<D>(d, x, weight, bias, /*flip=*/false, y)) return;
  auto launch = [&](auto vc) {
    constexpr int V = decltype(vc)::value;
    dispatch_k(kDepthwiseKs, d.K, [&](auto kt) {
      dispatch_s(int(s.stride), [&](auto st) {
        constexpr int KT = decltype(kt)::value, S = decltype(st)::value, TW = forward_tile<S>();
        const int64_t tiles = s.N * s.OH * ((s.OW + TW - 1) / TW);
        const TileLaunch l = tile_launch(d.C, V, d.K * d.K, tiles);
        forward_kernel<D, V, KT, S, TW>
            <<<l.grid, l.block, l.smem, hg::cuda::stream()>>>(x, weight, bias, d, y);
        HG_CUDA_LAUNCH_CHECK();
      });
    });
  };
  dispatch_v(s.C, aligned16(x) && aligned16(y), launch);
}

template <typename T>
void depthwise_conv_backward_data(const Conv2dShape& s, const T* grad_y_in, const float* weight,
                                  T* grad_x_in) {
  const auto* grad_y = dev(grad_y_in);
  auto* grad_x = dev(grad_x_in);
  using D = device_t<T>;
  check_supported("depthwise_conv_backward_data", s);
  const int64_t nx = s.N * s.H * s.W * s.C;
  if (nx == 0) return;
  if (s.OH <= 0 || s.OW <= 0) {  // no output: nothing flows back
    HG_CUDA_CHECK(cudaMemsetAsync(grad_x, 0, size_t(nx) * sizeof(T), hg::cuda::stream()));
    return;
  }
  const Dims d = dims_of(s);
  if (s.stride == 1 && s.pad <= s.KH - 1) {
    // the forward conv of gy (OH x OW) with the rotated filter and padding K - 1 - pad gives H x W
    const Dims t{d.N, d.OH, d.OW, d.C, d.H, d.W, d.K, d.K - 1 - d.pad};
    if (try_conv_staged<D>(t, grad_y, weight, nullptr, /*flip=*/true, grad_x)) return;
  }
  auto launch = [&](auto vc) {
    constexpr int V = decltype(vc)::value;
    dispatch_k(kDepthwiseKs, d.K, [&](auto kt) {
      dispatch_s(int(s.stride), [&](auto st) {
        constexpr int KT = decltype(kt)::value, S = decltype(st)::value, TW = kBackwardTile;
        const int64_t nmb = ((s.W + S - 1) / S + TW - 1) / TW;
        const int64_t tiles = s.N * s.H * S * nmb;
        const TileLaunch l = tile_launch(d.C, V, d.K * d.K, tiles);
        backward_data_kernel<D, V, KT, S, TW>
            <<<l.grid, l.block, l.smem, hg::cuda::stream()>>>(grad_y, weight, d, grad_x);
        HG_CUDA_LAUNCH_CHECK();
      });
    });
  };
  dispatch_v(s.C, aligned16(grad_y) && aligned16(grad_x), launch);
}

template <typename T>
void depthwise_conv_backward_weight(const Conv2dShape& s, const T* x_in, const T* grad_y_in,
                                    float* grad_weight, float* grad_bias) {
  const auto* x = dev(x_in);
  const auto* grad_y = dev(grad_y_in);
  using D = device_t<T>;
  check_supported("depthwise_conv_backward_weight", s);
  const int64_t KK = s.KH * s.KW, nw = s.C * KK;
  if (s.C == 0) return;
  if (s.N == 0 || s.OH <= 0 || s.OW <= 0) {  // empty sums
    HG_CUDA_CHECK(cudaMemsetAsync(grad_weight, 0, size_t(nw) * sizeof(float), hg::cuda::stream()));
    if (grad_bias)
      HG_CUDA_CHECK(cudaMemsetAsync(grad_bias, 0, size_t(s.C) * sizeof(float), hg::cuda::stream()));
    return;
  }
  const Dims d = dims_of(s);
  const bool compiled = d.K == 3 || d.K == 5 || d.K == 7;
  const int chunks = (d.C + 31) / 32;
  // stride 1 with 16-byte channel vectors takes the staged kernel: its units are row groups of
  // 2 * PR output rows (PR row pairs: more when the rows are short, so warps keep long strips)
  const int PR = d.OW >= 32 ? 1 : d.OW >= 16 ? 2 : 4;
  const int nb = staged_buffers<D>([&](int n) { return wgrad_staged_smem<D>(d.K, PR, d.OW, n); });
  const size_t staged_smem = wgrad_staged_smem<D>(d.K, PR, d.OW, std::max(nb, 1));
  const bool staged = compiled && s.stride == 1 && s.C % (16 / int64_t(sizeof(D))) == 0 &&
                      aligned16(x) && aligned16(grad_y) && nb > 0 &&
                      int64_t(s.H) * s.W * s.C < INT32_MAX &&  // int32 offsets in one image
                      int64_t(s.OH) * s.OW * s.C < INT32_MAX &&
                      int64_t(s.N) * ((s.OH + 2 * PR - 1) / (2 * PR)) < INT32_MAX;  // groups
  // Slices: enough blocks to fill the GPU; a function of the shape and the device only, so the
  // sums are reduced in the same order run to run (determinism).
  const int64_t R = staged ? s.N * ((s.OH + 2 * PR - 1) / (2 * PR)) : s.N * s.OH;
  const int64_t blocks_per_slice = compiled ? chunks : int64_t(chunks) * KK;
  // the staged kernel: the blocks that fit at once (one wave; each block's groups pipelined)
  int per_sm = kWgradBlocksPerSM;
  if (staged)
    dispatch_k(kDepthwiseKs, d.K, [&](auto kt) {
      constexpr int KT = decltype(kt)::value;
      if constexpr (KT > 0) {
        const auto kernel = wgrad_staged<D, KT>(nb);
        per_sm = std::max(1, hg::cuda::resident_blocks(reinterpret_cast<const void*>(kernel),
                                                       32 * kWgradWarps, staged_smem));
      }
    });
  const int64_t target = int64_t(per_sm) * hg::cuda::multiprocessor_count();
  const int64_t want = std::max<int64_t>(1, target / blocks_per_slice);
  const int64_t rows_per_block = (R + std::min(R, want) - 1) / std::min(R, want);
  const int slices = int((R + rows_per_block - 1) / rows_per_block);
  HG_CHECK(rows_per_block <= INT32_MAX, "depthwise_conv_backward_weight: ", R, " rows");

  std::shared_ptr<void> part = scratch(sizeof(float) * size_t(slices) * size_t(nw));
  std::shared_ptr<void> bpart =
      grad_bias ? scratch(sizeof(float) * size_t(slices) * size_t(s.C)) : nullptr;
  float* partial = static_cast<float*>(part.get());
  float* bias_partial = static_cast<float*>(bpart.get());
  const dim3 block(32, kWgradWarps);
  if (staged) {
    dispatch_k(kDepthwiseKs, d.K, [&](auto kt) {
      constexpr int KT = decltype(kt)::value;
      if constexpr (KT > 0) {
        const auto kernel = wgrad_staged<D, KT>(nb);
        hg::cuda::allow_max_dynamic_smem(reinterpret_cast<const void*>(kernel));
        kernel<<<dim3(unsigned(chunks), unsigned(slices)), block, staged_smem,
                 hg::cuda::stream()>>>(x, grad_y, d, PR, int(rows_per_block), partial,
                                       bias_partial);
        HG_CUDA_LAUNCH_CHECK();
      }
    });
  } else if (compiled) {
    dispatch_k(kDepthwiseKs, d.K, [&](auto kt) {
      constexpr int KT = decltype(kt)::value;
      if constexpr (KT > 0) {
        dispatch_s(int(s.stride), [&](auto st) {
          constexpr int S = decltype(st)::value;
          wgrad_kernel<D, KT, S>
              <<<dim3(unsigned(chunks), unsigned(slices)), block, 0, hg::cuda::stream()>>>(
                  x, grad_y, d, int(rows_per_block), partial, bias_partial);
          HG_CUDA_LAUNCH_CHECK();
        });
      }
    });
  } else {
    wgrad_generic_kernel<D>
        <<<dim3(unsigned(chunks), unsigned(slices), unsigned(KK)), block, 0, hg::cuda::stream()>>>(
            x, grad_y, d, int(s.stride), int(rows_per_block), partial, bias_partial);
    HG_CUDA_LAUNCH_CHECK();
  }
  // the weights' and the bias's sums in one launch
  std::vector<SliceSum<float>> sums{{partial, slices, nw, grad_weight}};
  if (grad_bias) sums.push_back({bias_partial, slices, s.C, grad_bias});
  reduce_slices(sums);
}

#define HG_INSTANTIATE(T)                                                                        \
  template void depthwise_conv_forward<T>(const Conv2dShape&, const T*, const float*, const float*,\
                                          T*);                                                   \
  template void depthwise_conv_backward_data<T>(const Conv2dShape&, const T*, const float*, T*);  \
  template void depthwise_conv_backward_weight<T>(const Conv2dShape&, const T*, const T*, float*,  \
                                                  float*);
HG_INSTANTIATE(float)
HG_INSTANTIATE(hg::bf16)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cuda
