// Kernel lab (twenty-seventh session): a small-map WTConv layer as one dense linear operator per
// channel, applied on the tensor cores.
//
// Why (issue 12): at 14 x 14 and 7 x 7 the product runs the whole WTConv layer in one block per
// image (kernels/cuda/wtconv_plane.cuh): a cascade of tiny convolutions, level by level, with a
// barrier between levels; it runs at ~1/3 of our 7x7's efficiency per multiply-add and the 384/14/3
// layer takes 1.74x our 7x7's training step (docs/perf-notes.md). On a map of HW <= 256 pixels the
// whole layer is, for each channel c, a linear map y_c = M_c x_c + b_c with M_c an HW x HW matrix
// (docs/wtconv-operator.md: every step is linear in x). M_c is linear in the folded weights w~
// (docs/wtconv-operator.md, item 3): M_c = sum_k w~[k][c] E_k, where E_k (k < P = K^2 (1 + 4L): the
// base taps, then level l, sub-band s, tap) is the layer's operator with w~ = the k-th unit vector.
// The E_k are exact dyadic numbers (products of Haar coefficients), so exact in bf16, and they
// depend on (H, W, K, L) only: built once by running the CPU reference on impulses. Then a training
// step needs M = E w~ (one GEMM), y = M x (a batched per-channel product: 196 x 196 x B per channel
// at 14 x 14, on the tensor cores), grad_x = M^T G (the same kernel on M^T), and the weight
// gradient dW~ = E^T vec(dM), dM_c = sum_b G_c,b x_c,b^T (dm_kernel: dM tiles on the tensor
// cores, contracted at once with E's nonzeros). Three rounds of kernels live side by side (the
// first H100 run's costs, then the fixes: reorder2, apply2, apply3; docs/perf-notes.md,
// twenty-seventh session): apply3 is the fastest apply, a GEMM for M^T plus reorder2 the fastest
// reorder.
//
// The per-channel product on the tensor cores, reading NHWC as it is (the channel-pair form of
// dev/dwconv_tc variant 3): an mma.sync m16n8k16 takes m = 16 images, k = 8 input pixels x 2
// channels (k = 2 q + ch), n = 4 output pixels x 2 channels (n = 2 o + ch), so an A element pair is
// one 32-bit NHWC word (the two channels of a pixel of an image) and so is a D pair; B is
// block-diagonal over the channel pair (half its entries zero, a price the tensor cores can pay).
// B comes from a fragment-ordered copy of M (`reorder_kernel`: each lane's two values for a k-step
// in one 32-bit word, 128 coalesced bytes a warp), A from per-pair planes in shared memory (one
// ldmatrix.x4 a fragment, conflict-free rows).
//
// Usage: build/dev/wtconv_dense/wtconv_dense_lab [reps] [cpu]: checks y, grad_x and the filters'
// gradients against the CPU reference in double at several shapes (14 x 14 L = 3, 7 x 7 L = 2,
// 13 x 11 L = 2, K = 3 and 5, 16 x 16 L = 4; `cpu`: the basis alone, no GPU),
// then times the pieces against the product's WTConv (fused, bf16) and our 7x7 at B = 64 and 128.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "dev/lab_util.cuh"
#include "kernels/conv2d.h"
#include "kernels/depthwise_conv.h"
#include "kernels/wtconv.h"

namespace {

using hg::Device;
using hg::DType;
using hg::Tensor;
namespace hk = hg::kernels;

struct Case {
  int B, H, W, C, K, L;
  int HW() const { return H * W; }
  int P() const { return K * K * (1 + 4 * L); }
  int NKS() const { return (HW() + 7) / 8; }  // k-steps of 8 input pixels
  int NPT() const { return (HW() + 3) / 4; }  // tiles of 4 output pixels
  // cuBLAS takes its tensor-core kernels for leading dimensions and K that are multiples of 8
  int P8() const { return (P() + 7) / 8 * 8; }
  int HW2p() const { return (HW() * HW() + 7) / 8 * 8; }
};

// ---- the operator basis E (host, CPU reference in double) --------------------------------------

hk::WTConvWeights unit_weights(const Case& s) {  // channel k = weight k of the folded set
  const int P = s.P(), KK = s.K * s.K;
  std::vector<double> bw(size_t(P) * KK, 0.0);
  for (int k = 0; k < KK; ++k) bw[size_t(k) * KK + k] = 1.0;
  hk::WTConvWeights w;
  w.base_weight = Tensor::from_vector<double>({P, 1, s.K, s.K}, bw);
  w.base_bias = Tensor::zeros({P}, DType::f64);
  w.base_scale = Tensor::full({1, P, 1, 1}, 1.0, DType::f64);
  for (int l = 0; l < s.L; ++l) {
    std::vector<double> ww(size_t(4) * P * KK, 0.0);
    for (int sb = 0; sb < 4; ++sb)
      for (int t = 0; t < KK; ++t) {
        const int k = KK + (l * 4 + sb) * KK + t;
        ww[(size_t(4) * k + sb) * KK + t] = 1.0;
      }
    w.wavelet_weight.push_back(Tensor::from_vector<double>({4 * P, 1, s.K, s.K}, ww));
    w.wavelet_scale.push_back(Tensor::full({1, 4 * P, 1, 1}, 1.0, DType::f64));
  }
  return w;
}

/// E as [k][p * HW + q] (k-major: the GEMM's A, column-major HW^2 x P), in double.
std::vector<double> build_basis_uncached(const Case& s) {
  const int HW = s.HW(), P = s.P();
  std::vector<double> xi(size_t(HW) * HW * P,
                         0.0);  // image q: the impulse at pixel q, every channel
  for (int q = 0; q < HW; ++q)
    for (int k = 0; k < P; ++k) xi[(size_t(q) * HW + q) * P + k] = 1.0;
  const Tensor x = Tensor::from_vector<double>({HW, s.H, s.W, P}, xi);
  const Tensor y =
      hk::cpu::wtconv_forward(x, unit_weights(s), 1, hk::WTConvMode::reference).to(DType::f64);
  const double* yp = y.data<double>();
  std::vector<double> E(size_t(P) * HW * HW);
  for (int q = 0; q < HW; ++q)
    for (int p = 0; p < HW; ++p)
      for (int k = 0; k < P; ++k)
        E[size_t(k) * HW * HW + size_t(p) * HW + q] = yp[(size_t(q) * HW + p) * P + k];
  return E;
}

/// build_basis_uncached, once per (H, W, K, L).
const std::vector<double>& build_basis(const Case& s) {
  static std::map<std::array<int, 4>, std::vector<double>> cache;
  const std::array<int, 4> key{s.H, s.W, s.K, s.L};
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, build_basis_uncached(s)).first;
  return it->second;
}

// ---- random layer parameters and their folded form ---------------------------------------------

hk::WTConvWeights random_weights(const Case& s, std::mt19937& rng) {
  std::normal_distribution<float> n(0.f, 1.f);
  auto rnd = [&](hg::Shape sh, float scale, float shift) {
    std::vector<float> v(size_t(hg::shape_numel(sh)));
    for (float& e : v) e = shift + scale * n(rng);
    return Tensor::from_vector<float>(sh, v);
  };
  const float ws = 1.f / float(s.K);
  hk::WTConvWeights w;
  w.base_weight = rnd({s.C, 1, s.K, s.K}, ws, 0.f);
  w.base_bias = rnd({s.C}, 0.5f, 0.f);
  w.base_scale = rnd({1, s.C, 1, 1}, 0.2f, 1.f);
  for (int l = 0; l < s.L; ++l) {
    w.wavelet_weight.push_back(rnd({4 * s.C, 1, s.K, s.K}, ws, 0.f));
    w.wavelet_scale.push_back(rnd({1, 4 * s.C, 1, 1}, 0.1f, 0.3f));
  }
  return w;
}

/// w with every tensor replaced by f(tensor): in double for the CPU reference, on the GPU for the
/// product.
template <class F>
hk::WTConvWeights map_weights(const hk::WTConvWeights& w, F&& f) {
  hk::WTConvWeights o;
  o.base_weight = f(w.base_weight);
  o.base_bias = f(w.base_bias);
  o.base_scale = f(w.base_scale);
  for (const Tensor& t : w.wavelet_weight) o.wavelet_weight.push_back(f(t));
  for (const Tensor& t : w.wavelet_scale) o.wavelet_scale.push_back(f(t));
  return o;
}

/// w~ as [c][k] (the GEMM's B, column-major P x C), and the folded bias.
void fold(const Case& s, const hk::WTConvWeights& w, std::vector<float>& wf,
          std::vector<float>& bias) {
  const int P = s.P(), KK = s.K * s.K;
  wf.assign(size_t(s.C) * P, 0.f);
  bias.assign(size_t(s.C), 0.f);
  const float* bw = w.base_weight.data<float>();
  const float* bs = w.base_scale.data<float>();
  for (int c = 0; c < s.C; ++c) {
    for (int t = 0; t < KK; ++t) wf[size_t(c) * P + t] = bs[c] * bw[size_t(c) * KK + t];
    bias[size_t(c)] = bs[c] * w.base_bias.data<float>()[c];
    for (int l = 0; l < s.L; ++l)
      for (int sb = 0; sb < 4; ++sb)
        for (int t = 0; t < KK; ++t)
          wf[size_t(c) * P + KK + (l * 4 + sb) * KK + t] =
              w.wavelet_scale[size_t(l)].data<float>()[4 * c + sb] *
              w.wavelet_weight[size_t(l)].data<float>()[(size_t(4) * c + sb) * KK + t];
  }
}

// ---- device kernels -----------------------------------------------------------------------------

__device__ __forceinline__ uint16_t bits(__nv_bfloat16 v) { return __bfloat16_as_ushort(v); }

// M (bf16, [c][p][q], from the GEMM) -> fragment order [pair][p-tile][k-step][lane]: lane (g, t)
// gets M_{2 pair + (g & 1)}[4 pt + (g >> 1)][8 ks + t] (low half) and [8 ks + t + 4] (high half);
// transposed (grad_x): M^T, i.e. [q][p] swapped. Zero outside HW.
__global__ void reorder_kernel(const __nv_bfloat16* __restrict__ M, int HW, int64_t cs, int C,
                               bool trans, uint32_t* __restrict__ frag) {
  const int NPT = (HW + 3) / 4, NKS = (HW + 7) / 8;
  const int64_t total = int64_t(C / 2) * NPT * NKS * 32;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int lane = int(i % 32), g = lane >> 2, t = lane & 3;
    const int64_t r = i / 32;
    const int ks = int(r % NKS), pt = int(r / NKS % NPT), cp = int(r / NKS / NPT);
    const int c = 2 * cp + (g & 1), p = 4 * pt + (g >> 1);
    uint32_t word = 0;
    for (int h = 0; h < 2; ++h) {
      const int q = 8 * ks + t + 4 * h;
      if (p < HW && q < HW) {
        const int64_t o = c * cs + (trans ? int64_t(q) * HW + p : int64_t(p) * HW + q);
        word |= uint32_t(bits(M[o])) << (16 * h);
      }
    }
    frag[i] = word;
  }
}

/// Shared plane pitch in 32-bit words: >= HWp and 4 mod 32, so the 8 rows an ldmatrix phase reads
/// start on 8 different 16-byte bank groups.
__host__ __device__ inline int plane_pitch(int hwp) { return hwp + ((4 - hwp) & 31); }

constexpr int kApplyWarps = 8, kPairs = 4;  // a block: 8 channels (4 pairs)

// ---- the mma pieces every kernel below shares
// -----------------------------------------------------

/// A's fragment (16 rows x 8 words) whose row 0, word 0 is at `base` in shared memory, rows `pitch`
/// words apart: one ldmatrix.x4 (lanes 0-15 address rows 0-15 at words 0-3, lanes 16-31 at 4-7).
__device__ __forceinline__ void ldmatrix_a(const uint32_t* base, int pitch, int lane,
                                           uint32_t a[4]) {
  const uint32_t* row = base + (lane & 15) * pitch + (lane >> 4) * 4;
  const unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(sa));
}

/// d += A B, mma.sync m16n8k16, bf16 in, f32 sums.
__device__ __forceinline__ void mma_bf16(float d[4], const uint32_t a[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// B's two registers from a fragment word (two bf16 values of M, reorder_kernel): B is
/// block-diagonal over the channel pair, so each value goes in the half of its channel, g & 1.
__device__ __forceinline__ void b_pair(uint32_t word, int g, uint32_t& r0, uint32_t& r1) {
  const uint32_t lo = word & 0xffffu, hi = word >> 16;
  r0 = (g & 1) ? lo << 16 : lo;
  r1 = (g & 1) ? hi << 16 : hi;
}

/// A block's input as per-pair planes [kPairs][img][pitch] of 32-bit words (a channel pair of one
/// pixel of one image): images [b0, b0 + img) x channels [c0, c0 + 8) from NHWC x, 16-byte loads,
/// zero past HW and past B.
__device__ void stage_pair_planes(const __nv_bfloat16* __restrict__ x, int B, int HW, int C, int c0,
                                  int b0, int img, int HWp, int pitch, uint32_t* planes) {
  for (int i = threadIdx.x; i < img * HWp; i += blockDim.x) {
    const int bl = i / HWp, q = i - bl * HWp, b = b0 + bl;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (b < B && q < HW)
      v = __ldg(reinterpret_cast<const uint4*>(x + (int64_t(b) * HW + q) * C + c0));
    uint32_t* d = planes + bl * pitch + q;
    d[0] = v.x;
    d[img * pitch] = v.y;
    d[2 * img * pitch] = v.z;
    d[3 * img * pitch] = v.w;
  }
}

// y[b][p][c] = sum_q M_c[p][q] x[b][q][c] (+ bias[c]) for a block's 8 channels and 16 MT images.
// Shared: planes [pair][image][pitch] of 32-bit words (a channel pair of one pixel), zero past HW
// and past B. Warp tasks: (pair, output tile of 4 pixels), its NKS B words loaded first.
template <int MT, int NKS>
__global__ void __launch_bounds__(32 * kApplyWarps)
    apply_kernel(const __nv_bfloat16* __restrict__ x, const uint32_t* __restrict__ frag,
                 const float* __restrict__ bias, int B, int HW, int C,
                 __nv_bfloat16* __restrict__ y) {
  extern __shared__ __align__(16) uint32_t planes[];
  constexpr int HWp = 8 * NKS, IMG = 16 * MT;
  const int pitch = plane_pitch(HWp);
  const int c0 = blockIdx.x * 2 * kPairs, b0 = blockIdx.y * IMG;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  stage_pair_planes(x, B, HW, C, c0, b0, IMG, HWp, pitch, planes);
  __syncthreads();
  const int NPT = (HW + 3) / 4;
  for (int task = warp; task < kPairs * NPT; task += kApplyWarps) {
    const int j = task % kPairs, pt = task / kPairs, cp = c0 / 2 + j;
    const uint32_t* fr = frag + (int64_t(cp) * NPT + pt) * NKS * 32 + lane;
    uint32_t bw[NKS];
#pragma unroll
    for (int ks = 0; ks < NKS; ++ks) bw[ks] = __ldg(fr + ks * 32);
    float acc[MT][4];
#pragma unroll
    for (int m = 0; m < MT; ++m) acc[m][0] = acc[m][1] = acc[m][2] = acc[m][3] = 0.f;
    const uint32_t* pj = planes + j * IMG * pitch;
#pragma unroll
    for (int ks = 0; ks < NKS; ++ks) {
      uint32_t r0, r1;
      b_pair(bw[ks], g, r0, r1);
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        uint32_t a[4];
        ldmatrix_a(pj + 16 * m * pitch + ks * 8, pitch, lane, a);
        mma_bf16(acc[m], a, r0, r1);
      }
    }
    const int p = 4 * pt + t, c = c0 + 2 * j;
    if (p >= HW) continue;
    const float bi0 = bias ? bias[c] : 0.f, bi1 = bias ? bias[c + 1] : 0.f;
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int b = b0 + 16 * m + g + 8 * h;
        if (b >= B) continue;
        const __nv_bfloat162 v =
            __floats2bfloat162_rn(acc[m][2 * h] + bi0, acc[m][2 * h + 1] + bi1);
        *reinterpret_cast<__nv_bfloat162*>(y + (int64_t(b) * HW + p) * C + c) = v;
      }
  }
}

// Variant B of the product: one channel pair a block, its images from pair rows [C / 2][B][HW]
// (32-bit words, q contiguous: pair_rows_kernel), so that a warp applies its B words to 16 MT
// images (M read B / (16 MT) times in all instead of B / 16 or B / 32). y still NHWC (one 32-bit
// word per lane, image and pixel).
__global__ void __launch_bounds__(256) pair_rows_kernel(const __nv_bfloat16* __restrict__ x, int B,
                                                        int HW, int C, uint32_t* __restrict__ out) {
  __shared__ uint32_t tile[32][33];  // [pair][pixel]
  const int q0 = blockIdx.x * 32, b = blockIdx.y, cp0 = blockIdx.z * 32;
  const int tid = threadIdx.x, qi = tid / 8, v = tid % 8, q = q0 + qi, c = 2 * cp0 + 8 * v;
  uint4 w = make_uint4(0, 0, 0, 0);
  if (q < HW && c < C) w = __ldg(reinterpret_cast<const uint4*>(x + (int64_t(b) * HW + q) * C + c));
  tile[4 * v][qi] = w.x;
  tile[4 * v + 1][qi] = w.y;
  tile[4 * v + 2][qi] = w.z;
  tile[4 * v + 3][qi] = w.w;
  __syncthreads();
  for (int i = tid; i < 32 * 32; i += 256) {
    const int j = i / 32, qo = i % 32, cp = cp0 + j;
    if (2 * cp < C && q0 + qo < HW) out[(int64_t(cp) * B + b) * HW + q0 + qo] = tile[j][qo];
  }
}

template <int MT, int NKS>
__global__ void __launch_bounds__(32 * kApplyWarps)
    apply_pp_kernel(const uint32_t* __restrict__ xr, const uint32_t* __restrict__ frag,
                    const float* __restrict__ bias, int B, int HW, int C,
                    __nv_bfloat16* __restrict__ y) {
  extern __shared__ __align__(16) uint32_t rows[];
  constexpr int HWp = 8 * NKS, IMG = 16 * MT;
  const int pitch = plane_pitch(HWp);
  const int cp = blockIdx.x, b0 = blockIdx.y * IMG;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const uint32_t* src = xr + int64_t(cp) * B * HW;
  for (int i = tid; i < IMG * HWp; i += 32 * kApplyWarps) {
    const int bl = i / HWp, q = i - bl * HWp, b = b0 + bl;
    rows[bl * pitch + q] = (b < B && q < HW) ? __ldg(src + int64_t(b) * HW + q) : 0u;
  }
  __syncthreads();
  const int NPT = (HW + 3) / 4;
  for (int pt = warp; pt < NPT; pt += kApplyWarps) {
    const uint32_t* fr = frag + (int64_t(cp) * NPT + pt) * NKS * 32 + lane;
    uint32_t bw[NKS];
#pragma unroll
    for (int ks = 0; ks < NKS; ++ks) bw[ks] = __ldg(fr + ks * 32);
    float acc[MT][4];
#pragma unroll
    for (int m = 0; m < MT; ++m) acc[m][0] = acc[m][1] = acc[m][2] = acc[m][3] = 0.f;
#pragma unroll
    for (int ks = 0; ks < NKS; ++ks) {
      uint32_t r0, r1;
      b_pair(bw[ks], g, r0, r1);
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        uint32_t a[4];
        ldmatrix_a(rows + 16 * m * pitch + ks * 8, pitch, lane, a);
        mma_bf16(acc[m], a, r0, r1);
      }
    }
    const int p = 4 * pt + t, c = 2 * cp;
    if (p >= HW) continue;
    const float bi0 = bias ? bias[c] : 0.f, bi1 = bias ? bias[c + 1] : 0.f;
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int b = b0 + 16 * m + g + 8 * h;
        if (b >= B) continue;
        const __nv_bfloat162 v =
            __floats2bfloat162_rn(acc[m][2 * h] + bi0, acc[m][2 * h + 1] + bi1);
        *reinterpret_cast<__nv_bfloat162*>(y + (int64_t(b) * HW + p) * C + c) = v;
      }
  }
}

// ---- the weight gradient: dM_c = sum_b G_c,b x_c,b^T, contracted with E at once
// ------------------

// NHWC (B, HW, C) bf16 -> pair planes [C / 2][HW][Bp] of 32-bit words (a channel pair of one pixel
// of one image), images past B zero. Block: one pixel q, 32 images, 64 channels (32 pairs), through
// shared memory so that both the 16-byte loads and the 4-byte stores are coalesced.
__global__ void __launch_bounds__(256)
    pair_planes_kernel(const __nv_bfloat16* __restrict__ x, int B, int HW, int C, int Bp,
                       uint32_t* __restrict__ out) {
  __shared__ uint32_t tile[32][33];  // [pair][image]
  const int q = blockIdx.x, b0 = blockIdx.y * 32, cp0 = blockIdx.z * 32;
  const int tid = threadIdx.x, bi = tid / 8, v = tid % 8, b = b0 + bi, c = 2 * cp0 + 8 * v;
  uint4 w = make_uint4(0, 0, 0, 0);
  if (b < B && c < C) w = __ldg(reinterpret_cast<const uint4*>(x + (int64_t(b) * HW + q) * C + c));
  tile[4 * v][bi] = w.x;
  tile[4 * v + 1][bi] = w.y;
  tile[4 * v + 2][bi] = w.z;
  tile[4 * v + 3][bi] = w.w;
  __syncthreads();
  for (int i = tid; i < 32 * 32; i += 256) {
    const int j = i / 32, bo = i % 32, cp = cp0 + j;
    if (2 * cp < C && b0 + bo < Bp) out[(int64_t(cp) * HW + q) * Bp + b0 + bo] = tile[j][bo];
  }
}

/// The basis as lists per output tile of dm_kernel: for tile (tp, tq) of kDmTile x kDmTile pixel
/// pairs and weight k, the entries (local index p' * kDmTile + q', E_k[p][q]) with E_k[p][q] != 0.
constexpr int kDmTile = 64, kDmWarps = 8;
struct TileLists {
  int tiles_p = 0, tiles = 0;
  std::vector<int> start;     // [tile][k] -> first entry; [tiles * P] = total
  std::vector<uint16_t> idx;  // local index
  std::vector<float> coef;
};

TileLists tile_lists(const Case& s, const std::vector<double>& E) {
  const int HW = s.HW(), P = s.P();
  TileLists t;
  t.tiles_p = (HW + kDmTile - 1) / kDmTile;
  t.tiles = t.tiles_p * t.tiles_p;
  for (int tp = 0; tp < t.tiles_p; ++tp)
    for (int tq = 0; tq < t.tiles_p; ++tq)
      for (int k = 0; k < P; ++k) {
        t.start.push_back(int(t.idx.size()));
        for (int pl = 0; pl < kDmTile; ++pl)
          for (int ql = 0; ql < kDmTile; ++ql) {
            const int p = tp * kDmTile + pl, q = tq * kDmTile + ql;
            if (p >= HW || q >= HW) continue;
            const double e = E[size_t(k) * HW * HW + size_t(p) * HW + q];
            if (e == 0.0) continue;
            t.idx.push_back(uint16_t(pl * kDmTile + ql));
            t.coef.push_back(float(e));
          }
      }
  t.start.push_back(int(t.idx.size()));
  return t;
}

// Block: channel pair blockIdx.y, output tile blockIdx.x = (tp, tq) of kDmTile output pixels p x
// kDmTile input pixels q, every image. Stages G rows [p][Bp] and x rows [q][Bp] (pair planes; pitch
// 4 mod 32 words), then dM[ch][p][q] = sum_b G[b][p][ch] x[b][q][ch] with m = 16 p, k = 8 images x
// 2 channels, n = 4 q x 2 channels (B block-diagonal: x's word masked to one channel); the tile's
// dM (f32) goes to shared memory and each (k, ch) sums its list in a fixed order into
// partial[pair][tile][k][ch].
__global__ void __launch_bounds__(32 * kDmWarps)
    dm_kernel(const uint32_t* __restrict__ gp, const uint32_t* __restrict__ xp, int HW, int Bp,
              int tiles_p, int P, const int* __restrict__ start, const uint16_t* __restrict__ idx,
              const float* __restrict__ coef, float* __restrict__ partial, bool contract) {
  extern __shared__ __align__(16) uint32_t sm[];
  const int pitch = plane_pitch(Bp);
  uint32_t* gs = sm;                         // [kDmTile][pitch]
  uint32_t* xs = sm + kDmTile * pitch;       // [kDmTile][pitch]
  float* dm = reinterpret_cast<float*>(sm);  // after the products: [2][kDmTile][kDmTile + 1]
  const int tile = blockIdx.x, tp = tile / tiles_p, tq = tile % tiles_p, cp = blockIdx.y;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const int p0 = tp * kDmTile, q0 = tq * kDmTile;
  const uint32_t* gsrc = gp + int64_t(cp) * HW * Bp;
  const uint32_t* xsrc = xp + int64_t(cp) * HW * Bp;
  for (int i = tid; i < kDmTile * Bp / 4; i += 32 * kDmWarps) {  // 16-byte pieces
    const int r = i / (Bp / 4), c4 = (i % (Bp / 4)) * 4;
    uint4 a = make_uint4(0, 0, 0, 0), b = a;
    if (p0 + r < HW) a = __ldg(reinterpret_cast<const uint4*>(gsrc + int64_t(p0 + r) * Bp + c4));
    if (q0 + r < HW) b = __ldg(reinterpret_cast<const uint4*>(xsrc + int64_t(q0 + r) * Bp + c4));
    *reinterpret_cast<uint4*>(gs + r * pitch + c4) = a;
    *reinterpret_cast<uint4*>(xs + r * pitch + c4) = b;
  }
  __syncthreads();
  // warp w: m-tile w % 4 (16 p), n-tiles (w / 4) * 8 .. + 8 (4 q each)
  const int mt = warp % 4, nt0 = (warp / 4) * 8;
  float acc[8][4];
#pragma unroll
  for (int n = 0; n < 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
  const uint32_t keep = (g & 1) ? 0xffff0000u : 0x0000ffffu;
  for (int kb = 0; kb < Bp; kb += 8) {
    uint32_t a[4];
    ldmatrix_a(gs + 16 * mt * pitch + kb, pitch, lane, a);
#pragma unroll
    for (int n = 0; n < 8; ++n) {
      const uint32_t* xr = xs + (4 * (nt0 + n) + (g >> 1)) * pitch + kb + t;
      const uint32_t r0 = xr[0] & keep, r1 = xr[4] & keep;
      mma_bf16(acc[n], a, r0, r1);
    }
  }
  __syncthreads();  // the staged rows are read; dM goes over them
  constexpr int DP = kDmTile + 1;
#pragma unroll
  for (int n = 0; n < 8; ++n) {
    const int q = 4 * (nt0 + n) + t;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int p = 16 * mt + g + 8 * h;
      dm[p * DP + q] = acc[n][2 * h];                     // channel 0
      dm[kDmTile * DP + p * DP + q] = acc[n][2 * h + 1];  // channel 1
    }
  }
  __syncthreads();
  if (!contract) return;  // timing the products alone
  // one warp a (k, ch) list: lanes take every 32nd entry, then a fixed butterfly (deterministic);
  // a thread a list left the long lists of the deep levels' taps to single threads (first run)
  for (int e = warp; e < 2 * P; e += kDmWarps) {
    const int k = e / 2, ch = e % 2;
    const int s0 = start[tile * P + k], s1 = start[tile * P + k + 1];
    const float* d = dm + ch * kDmTile * DP;
    float sum = 0.f;
    for (int i = s0 + lane; i < s1; i += 32) {
      const int li = idx[i];
      sum = fmaf(coef[i], d[(li / kDmTile) * DP + li % kDmTile], sum);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, o);
    if (lane == 0) partial[((int64_t(cp) * gridDim.x + tile) * P + k) * 2 + ch] = sum;
  }
}

// dW~[c][k] = sum over tiles of partial[c / 2][tile][k][c % 2], in tile order.
__global__ void dm_reduce_kernel(const float* __restrict__ partial, int C, int tiles, int P,
                                 float* __restrict__ dw) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= C * P) return;
  const int c = i / P, k = i % P, cp = c / 2, ch = c % 2;
  float s = 0.f;
  for (int tl = 0; tl < tiles; ++tl) s += partial[((int64_t(cp) * tiles + tl) * P + k) * 2 + ch];
  dw[i] = s;
}

// ---- second round: the first H100 run's three costs (docs/perf-notes.md, twenty-seventh session)
// --

// The reorder through shared memory: block (p-tile, pair) reads its 8 rows of M (2 channels x 4
// output pixels, HW values each, coalesced) and writes its NKS x 32 fragment words (coalesced). M^T
// comes from its own GEMM on the transposed basis, so no strided reads.
__global__ void __launch_bounds__(128) reorder2_kernel(const __nv_bfloat16* __restrict__ M, int HW,
                                                       int64_t cs, uint32_t* __restrict__ frag) {
  extern __shared__ __align__(16) uint16_t rowsm[];  // [2 ch][4 o][HWp]
  const int pt = blockIdx.x, cp = blockIdx.y, NPT = gridDim.x, NKS = (HW + 7) / 8, HWp = 8 * NKS;
  for (int i = threadIdx.x; i < 8 * HWp; i += blockDim.x) {
    const int r = i / HWp, q = i % HWp, ch = r / 4, p = 4 * pt + r % 4;
    rowsm[i] = (p < HW && q < HW) ? bits(M[(2 * cp + ch) * cs + int64_t(p) * HW + q]) : uint16_t(0);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < NKS * 32; i += blockDim.x) {
    const int ks = i / 32, lane = i % 32, g = lane >> 2, t = lane & 3;
    const uint16_t* r = rowsm + ((g & 1) * 4 + (g >> 1)) * HWp + 8 * ks + t;
    frag[(int64_t(cp) * NPT + pt) * NKS * 32 + i] = uint32_t(r[0]) | uint32_t(r[4]) << 16;
  }
}

/// One apply task's products: a channel pair's B fragments for two pixel tiles (the second only
/// when `two`; fr at this lane's first word) against the MT 16-image row tiles of its staged pair
/// planes pj: acc[m][u] = A(rows 16 m) x B(tile u), over the NKS k-steps (apply2_kernel,
/// apply3_kernel).
template <int MT, int NKS>
__device__ __forceinline__ void task_products(const uint32_t* __restrict__ fr, bool two,
                                              const uint32_t* pj, int pitch, int lane, int g,
                                              float (&acc)[MT][2][4]) {
  uint32_t bw[2][NKS];
#pragma unroll
  for (int ks = 0; ks < NKS; ++ks) {
    bw[0][ks] = __ldg(fr + ks * 32);
    bw[1][ks] = two ? __ldg(fr + (NKS + ks) * 32) : 0u;
  }
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int u = 0; u < 2; ++u) acc[m][u][0] = acc[m][u][1] = acc[m][u][2] = acc[m][u][3] = 0.f;
#pragma unroll
  for (int ks = 0; ks < NKS; ++ks) {
    uint32_t r[2][2];
#pragma unroll
    for (int u = 0; u < 2; ++u) b_pair(bw[u][ks], g, r[u][0], r[u][1]);
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      uint32_t a[4];
      ldmatrix_a(pj + 16 * m * pitch + ks * 8, pitch, lane, a);
#pragma unroll
      for (int u = 0; u < 2; ++u) mma_bf16(acc[m][u], a, r[u][0], r[u][1]);
    }
  }
}

// apply_kernel with two output tiles a warp task (independent accumulator chains, and each A
// fragment serves both), and the block's tasks split over gridDim.z blocks (more blocks in flight:
// the first run had ~1.5 blocks a multiprocessor at B = 64 and waited on its mma chains).
template <int MT, int NKS>
__global__ void __launch_bounds__(32 * kApplyWarps)
    apply2_kernel(const __nv_bfloat16* __restrict__ x, const uint32_t* __restrict__ frag,
                  const float* __restrict__ bias, int B, int HW, int C,
                  __nv_bfloat16* __restrict__ y) {
  extern __shared__ __align__(16) uint32_t planes[];
  constexpr int HWp = 8 * NKS, IMG = 16 * MT;
  const int pitch = plane_pitch(HWp);
  const int c0 = blockIdx.x * 2 * kPairs, b0 = blockIdx.y * IMG;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  stage_pair_planes(x, B, HW, C, c0, b0, IMG, HWp, pitch, planes);
  __syncthreads();
  const int NPT = (HW + 3) / 4, NPT2 = (NPT + 1) / 2;
  for (int task = blockIdx.z + gridDim.z * warp; task < kPairs * NPT2;
       task += gridDim.z * kApplyWarps) {
    const int j = task % kPairs, pt0 = 2 * (task / kPairs), cp = c0 / 2 + j;
    const bool two = pt0 + 1 < NPT;
    const uint32_t* fr = frag + (int64_t(cp) * NPT + pt0) * NKS * 32 + lane;
    float acc[MT][2][4];
    task_products<MT, NKS>(fr, two, planes + j * IMG * pitch, pitch, lane, g, acc);
    const int c = c0 + 2 * j;
    const float bi0 = bias ? bias[c] : 0.f, bi1 = bias ? bias[c + 1] : 0.f;
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int p = 4 * (pt0 + u) + t;
      if (p >= HW) continue;
#pragma unroll
      for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int b = b0 + 16 * m + g + 8 * h;
          if (b >= B) continue;
          const __nv_bfloat162 v =
              __floats2bfloat162_rn(acc[m][u][2 * h] + bi0, acc[m][u][2 * h + 1] + bi1);
          *reinterpret_cast<__nv_bfloat162*>(y + (int64_t(b) * HW + p) * C + c) = v;
        }
    }
  }
}

// apply2 with the output through shared memory (third round): the second H100 run put apply at
// ~75 us for 9.6 + 9.6 MB whatever its image count a block (MT), mma chains or M traffic, i.e. the
// 4-byte NHWC stores, one 32-byte sector each (9.6 M of them at 384/14, B = 64). Here block z
// takes the output tiles [z NPT / Z, (z + 1) NPT / Z) of all 4 pairs, leaves y as [image][pixel][4
// words] in shared memory (over the planes, after a barrier) and writes 16 bytes an (image, pixel).
template <int MT, int NKS>
__global__ void __launch_bounds__(32 * kApplyWarps)
    apply3_kernel(const __nv_bfloat16* __restrict__ x, const uint32_t* __restrict__ frag,
                  const float* __restrict__ bias, int B, int HW, int C,
                  __nv_bfloat16* __restrict__ y) {
  extern __shared__ __align__(16) uint32_t planes[];
  constexpr int HWp = 8 * NKS, IMG = 16 * MT;
  const int pitch = plane_pitch(HWp);
  const int c0 = blockIdx.x * 2 * kPairs, b0 = blockIdx.y * IMG;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  stage_pair_planes(x, B, HW, C, c0, b0, IMG, HWp, pitch, planes);
  __syncthreads();
  const int NPT = (HW + 3) / 4, Z = gridDim.z;
  const int pt_lo = int(blockIdx.z) * NPT / Z, pt_hi = (int(blockIdx.z) + 1) * NPT / Z;
  const int npt = pt_hi - pt_lo, tasks = kPairs * ((npt + 1) / 2);
  // results of this block: [image][pixel - 4 pt_lo][pair] words, NP = 4 npt pixels
  const int NP = 4 * npt;
  float res[4][MT][2][4];  // up to 4 tasks a warp (tasks <= 4 x 8 warps: NPT / Z <= 16)
  for (int tk = 0; tk < 4; ++tk) {
    const int task = warp + kApplyWarps * tk;
    if (task >= tasks) break;
    const int j = task % kPairs, pt0 = pt_lo + 2 * (task / kPairs), cp = c0 / 2 + j;
    const bool two = pt0 + 1 < pt_hi;
    const uint32_t* fr = frag + (int64_t(cp) * NPT + pt0) * NKS * 32 + lane;
    task_products<MT, NKS>(fr, two, planes + j * IMG * pitch, pitch, lane, g, res[tk]);
  }
  __syncthreads();         // the planes are read: the results go over them
  uint32_t* out = planes;  // [IMG][NP][4]
  for (int tk = 0; tk < 4; ++tk) {
    const int task = warp + kApplyWarps * tk;
    if (task >= tasks) break;
    const int j = task % kPairs, pt0 = pt_lo + 2 * (task / kPairs), c = c0 + 2 * j;
    const float bi0 = bias ? bias[c] : 0.f, bi1 = bias ? bias[c + 1] : 0.f;
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int pl = 4 * (pt0 + u - pt_lo) + t;
      if (pl >= NP) continue;
#pragma unroll
      for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const __nv_bfloat162 v =
              __floats2bfloat162_rn(res[tk][m][u][2 * h] + bi0, res[tk][m][u][2 * h + 1] + bi1);
          out[((16 * m + g + 8 * h) * NP + pl) * 4 + j] = *reinterpret_cast<const uint32_t*>(&v);
        }
    }
  }
  __syncthreads();
  for (int i = tid; i < IMG * NP; i += 32 * kApplyWarps) {
    const int bl = i / NP, pl = i % NP, b = b0 + bl, pp = 4 * pt_lo + pl;
    if (b < B && pp < HW)
      *reinterpret_cast<uint4*>(y + (int64_t(b) * HW + pp) * C + c0) =
          *reinterpret_cast<const uint4*>(out + i * 4);
  }
}

// ---- host side ----------------------------------------------------------------------------------

struct Plan {  // device buffers of one case
  Case s;
  __nv_bfloat16 *E = nullptr, *ET = nullptr, *wf = nullptr, *M = nullptr;  // E, ET: [P8][HW2p]
  float* bias = nullptr;
  uint32_t *frag = nullptr, *fragT = nullptr;
  // weight gradient
  int Bp = 0, tiles = 0, tiles_p = 0;
  uint32_t *gp = nullptr, *xp = nullptr;  // pair planes of G and x
  uint32_t* rows = nullptr;               // pair rows of x (variant B)
  int* start = nullptr;
  uint16_t* idx = nullptr;
  float *coef = nullptr, *partial = nullptr, *dw = nullptr;
};

cublasHandle_t blas() {
  static cublasHandle_t h = [] {
    cublasHandle_t x;
    CB(cublasCreate(&x));
    CB(cublasSetStream(x, cudaStreamPerThread));
    return x;
  }();
  return h;
}

/// Opts `kernel` into `smem` bytes of dynamic shared memory (an attribute of the kernel, set once
/// for the largest size asked).
void allow_smem(const void* kernel, size_t smem) {
  static std::map<const void*, size_t> allowed;
  size_t& have = allowed[kernel];
  if (smem <= have) return;
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  have = smem;
}

template <typename T>
T* dev_copy(const std::vector<T>& v) {
  T* d = nullptr;
  CK(cudaMalloc(&d, v.size() * sizeof(T)));
  CK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

std::vector<__nv_bfloat16> to_bf16(const std::vector<float>& v) {
  std::vector<__nv_bfloat16> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = __float2bfloat16_rn(v[i]);
  return o;
}

Plan make_plan(const Case& s, const std::vector<double>& E, const std::vector<float>& wf,
               const std::vector<float>& bias) {
  Plan p;
  p.s = s;
  const int HWn = s.HW(), P = s.P(), P8 = s.P8(), HW2p = s.HW2p();
  std::vector<float> ef(size_t(P8) * HW2p, 0.f), eft(size_t(P8) * HW2p, 0.f);
  size_t inexact = 0;
  for (int k = 0; k < P; ++k)
    for (int pp = 0; pp < HWn; ++pp)
      for (int q = 0; q < HWn; ++q) {
        const double e = E[(size_t(k) * HWn + pp) * HWn + q];
        ef[size_t(k) * HW2p + size_t(pp) * HWn + q] = float(e);
        eft[size_t(k) * HW2p + size_t(q) * HWn + pp] = float(e);
        inexact += double(__bfloat162float(__float2bfloat16_rn(float(e)))) != e;
      }
  if (inexact) std::printf("  note: %zu basis entries not exact in bf16\n", inexact);
  p.E = dev_copy(to_bf16(ef));
  p.ET = dev_copy(to_bf16(eft));
  std::vector<float> wf8(size_t(s.C) * P8, 0.f);
  for (int c = 0; c < s.C; ++c)
    for (int k = 0; k < P; ++k) wf8[size_t(c) * P8 + k] = wf[size_t(c) * P + k];
  p.wf = dev_copy(to_bf16(wf8));
  p.bias = dev_copy(bias);
  const size_t HW = size_t(s.HW());
  CK(cudaMalloc(&p.M, size_t(s.C) * s.HW2p() * 2));
  const size_t nf = size_t(s.C / 2) * s.NPT() * s.NKS() * 32;
  CK(cudaMalloc(&p.frag, nf * 4));
  CK(cudaMalloc(&p.fragT, nf * 4));
  const TileLists tl = tile_lists(s, E);
  p.Bp = (s.B + 7) / 8 * 8;
  p.tiles = tl.tiles;
  p.tiles_p = tl.tiles_p;
  p.start = dev_copy(tl.start);
  p.idx = dev_copy(tl.idx);
  p.coef = dev_copy(tl.coef);
  const size_t np = size_t(s.C / 2) * HW * p.Bp;
  CK(cudaMalloc(&p.gp, np * 4));
  CK(cudaMalloc(&p.xp, np * 4));
  CK(cudaMalloc(&p.rows, size_t(s.C / 2) * s.B * HW * 4));
  CK(cudaMalloc(&p.partial, size_t(s.C) * p.tiles * s.P() * 4));
  CK(cudaMalloc(&p.dw, size_t(s.C) * s.P() * 4));
  return p;
}

void release(Plan& p) {
  for (void* d : {(void*)p.E, (void*)p.ET, (void*)p.wf, (void*)p.M, (void*)p.bias, (void*)p.frag,
                  (void*)p.fragT, (void*)p.gp, (void*)p.xp, (void*)p.start, (void*)p.idx,
                  (void*)p.coef, (void*)p.partial, (void*)p.dw, (void*)p.rows})
    CK(cudaFree(d));
}

/// M = E w~ (column-major HW2p x C, i.e. [c][p][q] with channel stride HW2p; trans: M^T from the
/// transposed basis), f32 accumulation, bf16 out. K and the leading dimensions padded to multiples
/// of 8 (zeros): the first run's unpadded P = 325 made cuBLAS take a 81 TFLOP/s kernel.
void build_m(const Plan& p, bool trans = false) {
  const float one = 1.f, zero = 0.f;
  const int HW2p = p.s.HW2p();
  CB(cublasGemmEx(blas(), CUBLAS_OP_N, CUBLAS_OP_N, HW2p, p.s.C, p.s.P8(), &one, trans ? p.ET : p.E,
                  CUDA_R_16BF, HW2p, p.wf, CUDA_R_16BF, p.s.P8(), &zero, p.M, CUDA_R_16BF, HW2p,
                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/// Fragment order of what build_m left in p.M, through shared memory, into frag.
void reorder2(const Plan& p, uint32_t* frag) {
  const size_t smem = size_t(8) * 8 * p.s.NKS() * 2;
  reorder2_kernel<<<dim3(unsigned(p.s.NPT()), unsigned(p.s.C / 2)), 128, smem,
                    cudaStreamPerThread>>>(p.M, p.s.HW(), p.s.HW2p(), frag);
  CK(cudaGetLastError());
}

void reorder(const Plan& p, bool trans) {
  reorder_kernel<<<1024, 256, 0, cudaStreamPerThread>>>(p.M, p.s.HW(), p.s.HW2p(), p.s.C, trans,
                                                        trans ? p.fragT : p.frag);
  CK(cudaGetLastError());
}

void pair_planes(const Plan& p, const __nv_bfloat16* in, uint32_t* out) {
  const dim3 grid(unsigned(p.s.HW()), unsigned((p.Bp + 31) / 32), unsigned((p.s.C / 2 + 31) / 32));
  pair_planes_kernel<<<grid, 256, 0, cudaStreamPerThread>>>(in, p.s.B, p.s.HW(), p.s.C, p.Bp, out);
  CK(cudaGetLastError());
}

/// dW~ (p.dw, [c][k]) from G and x already in pair planes.
void dm_contract(const Plan& p, bool contract = true) {
  // the staged rows, then the tile's dM over them
  const size_t smem = std::max(size_t(2) * kDmTile * plane_pitch(p.Bp) * 4,
                               size_t(2) * kDmTile * (kDmTile + 1) * 4);
  allow_smem(reinterpret_cast<const void*>(dm_kernel), smem);
  dm_kernel<<<dim3(unsigned(p.tiles), unsigned(p.s.C / 2)), 32 * kDmWarps, smem,
              cudaStreamPerThread>>>(p.gp, p.xp, p.s.HW(), p.Bp, p.tiles_p, p.s.P(), p.start, p.idx,
                                     p.coef, p.partial, contract);
  CK(cudaGetLastError());
  dm_reduce_kernel<<<(p.s.C * p.s.P() + 255) / 256, 256, 0, cudaStreamPerThread>>>(
      p.partial, p.s.C, p.tiles, p.s.P(), p.dw);
  CK(cudaGetLastError());
}

void weight_grad(const Plan& p, const __nv_bfloat16* x, const __nv_bfloat16* g) {
  pair_planes(p, g, p.gp);
  pair_planes(p, x, p.xp);
  dm_contract(p);
}

void pair_rows(const Plan& p, const __nv_bfloat16* in) {
  const dim3 grid(unsigned((p.s.HW() + 31) / 32), unsigned(p.s.B), unsigned((p.s.C / 2 + 31) / 32));
  pair_rows_kernel<<<grid, 256, 0, cudaStreamPerThread>>>(in, p.s.B, p.s.HW(), p.s.C, p.rows);
  CK(cudaGetLastError());
}

/// Calls f(std::integral_constant<int, NKS>{}) for the case's k-steps: the apply kernels are
/// compiled for the checked and timed map sizes only.
template <class F>
void with_nks(const Plan& p, F&& f) {
  switch (p.s.NKS()) {
    case 7: return f(std::integral_constant<int, 7>{});    // 7 x 7
    case 18: return f(std::integral_constant<int, 18>{});  // 13 x 11
    case 25: return f(std::integral_constant<int, 25>{});  // 14 x 14
    case 32: return f(std::integral_constant<int, 32>{});  // 16 x 16
  }
  std::fprintf(stderr, "no apply kernel for %d k-steps\n", p.s.NKS());
  std::exit(2);
}

/// Shared memory of the apply kernels: per-pair planes of `pairs` pairs x 16 MT images.
size_t apply_smem(int pairs, int MT, int NKS) {
  return size_t(pairs) * 16 * MT * plane_pitch(8 * NKS) * 4;
}

/// y = M x (+ bias), or grad_x = M^T G (trans: fragT, no bias), with apply_kernel (round 1).
template <int MT>
void apply(const Plan& p, const __nv_bfloat16* in, bool trans, __nv_bfloat16* out) {
  with_nks(p, [&](auto nks) {
    const auto kernel = apply_kernel<MT, decltype(nks)::value>;
    const size_t smem = apply_smem(kPairs, MT, nks);
    allow_smem(reinterpret_cast<const void*>(kernel), smem);
    const dim3 grid(unsigned(p.s.C / 8), unsigned((p.s.B + 16 * MT - 1) / (16 * MT)));
    kernel<<<grid, 32 * kApplyWarps, smem, cudaStreamPerThread>>>(
        in, trans ? p.fragT : p.frag, trans ? nullptr : p.bias, p.s.B, p.s.HW(), p.s.C, out);
    CK(cudaGetLastError());
  });
}

/// The same with apply2_kernel (round 2): the tasks split over up to 4 blocks.
template <int MT>
void apply2(const Plan& p, const __nv_bfloat16* in, bool trans, __nv_bfloat16* out) {
  with_nks(p, [&](auto nks) {
    const auto kernel = apply2_kernel<MT, decltype(nks)::value>;
    const size_t smem = apply_smem(kPairs, MT, nks);
    allow_smem(reinterpret_cast<const void*>(kernel), smem);
    const int bx = p.s.C / 8, by = (p.s.B + 16 * MT - 1) / (16 * MT);
    const int split = std::clamp(4 * 132 / (bx * by), 1, 4);  // several blocks a multiprocessor
    const dim3 grid{unsigned(bx), unsigned(by), unsigned(split)};
    kernel<<<grid, 32 * kApplyWarps, smem, cudaStreamPerThread>>>(
        in, trans ? p.fragT : p.frag, trans ? nullptr : p.bias, p.s.B, p.s.HW(), p.s.C, out);
    CK(cudaGetLastError());
  });
}

/// The same with apply3_kernel (round 3): output tiles split over blocks, y through shared memory.
template <int MT>
void apply3(const Plan& p, const __nv_bfloat16* in, bool trans, __nv_bfloat16* out) {
  with_nks(p, [&](auto nks) {
    const auto kernel = apply3_kernel<MT, decltype(nks)::value>;
    const size_t smem = apply_smem(kPairs, MT, nks);
    allow_smem(reinterpret_cast<const void*>(kernel), smem);
    const int bx = p.s.C / 8, by = (p.s.B + 16 * MT - 1) / (16 * MT), NPT = p.s.NPT();
    // p-ranges of at most 16 tiles (4 tasks a warp), and several blocks a multiprocessor
    const int split = std::max((NPT + 15) / 16, std::min(NPT / 2, 4 * 132 / (bx * by)));
    const dim3 grid{unsigned(bx), unsigned(by), unsigned(std::max(split, 1))};
    kernel<<<grid, 32 * kApplyWarps, smem, cudaStreamPerThread>>>(
        in, trans ? p.fragT : p.frag, trans ? nullptr : p.bias, p.s.B, p.s.HW(), p.s.C, out);
    CK(cudaGetLastError());
  });
}

/// Variant B: y from pair rows already made (pair_rows), one pair a block, 64 images (128 at 7 x
/// 7).
void apply_pp(const Plan& p, bool trans, __nv_bfloat16* out) {
  with_nks(p, [&](auto nks) {
    constexpr int NKS = decltype(nks)::value, MT = NKS == 7 ? 8 : 4;
    const auto kernel = apply_pp_kernel<MT, NKS>;
    const size_t smem = apply_smem(1, MT, NKS);
    allow_smem(reinterpret_cast<const void*>(kernel), smem);
    const dim3 grid(unsigned(p.s.C / 2), unsigned((p.s.B + 16 * MT - 1) / (16 * MT)));
    kernel<<<grid, 32 * kApplyWarps, smem, cudaStreamPerThread>>>(
        p.rows, trans ? p.fragT : p.frag, trans ? nullptr : p.bias, p.s.B, p.s.HW(), p.s.C, out);
    CK(cudaGetLastError());
  });
}

std::vector<float> random_bf16_values(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(n);
  for (float& e : v) e = __bfloat162float(__float2bfloat16_rn(d(rng)));
  return v;
}

Tensor as_f64(const std::vector<float>& v, const hg::Shape& sh) {
  return Tensor::from_vector<float>(sh, v).to(DType::f64);
}

std::vector<double> download_bf16(const __nv_bfloat16* d, size_t n) {
  std::vector<__nv_bfloat16> h(n);
  CK(cudaMemcpy(h.data(), d, n * 2, cudaMemcpyDeviceToHost));
  std::vector<double> o(n);
  for (size_t i = 0; i < n; ++i) o[i] = __bfloat162float(h[i]);
  return o;
}

/// Max |got - want| / max |want|; NaN (an unwritten poisoned output) counts as infinite.
double rel_err(const std::vector<double>& got, const double* want, size_t n) {
  double e = 0, m = 0;
  for (size_t i = 0; i < n; ++i) {
    m = std::max(m, std::abs(want[i]));
    e = std::max(e, std::isnan(got[i]) ? INFINITY : std::abs(got[i] - want[i]));
  }
  return e / m;
}

// y and grad_x of the dense form, and of the product's bf16 fused op, against the CPU reference in
// double on the same bf16 inputs. The dense form rounds M (and w~) to bf16 once, the product rounds
// its intermediates: both errors are printed, the check allows 4x the product's.
bool check(Case s, uint32_t seed) {
  std::mt19937 rng(seed);
  const hk::WTConvWeights w = random_weights(s, rng);
  std::vector<float> wf, bias;
  fold(s, w, wf, bias);
  Plan p = make_plan(s, build_basis(s), wf, bias);
  const size_t n = size_t(s.B) * s.HW() * s.C;
  const hg::Shape xs{s.B, s.H, s.W, s.C};
  const std::vector<float> x = random_bf16_values(n, rng), gy = random_bf16_values(n, rng);
  // CPU reference in double
  const hk::WTConvWeights w64 = map_weights(w, [](const Tensor& t) { return t.to(DType::f64); });
  const Tensor y_ref = hk::cpu::wtconv_forward(as_f64(x, xs), w64, 1, hk::WTConvMode::reference);
  const hk::WTConvGrads g_ref = hk::cpu::wtconv_backward(as_f64(x, xs), w64, as_f64(gy, xs), 1,
                                                         true, hk::WTConvMode::reference);
  const Tensor gx_ref = g_ref.x;
  // dense form
  __nv_bfloat16 *dx = dev_copy(to_bf16(x)), *dg = dev_copy(to_bf16(gy)), *dy, *dgx;
  CK(cudaMalloc(&dy, n * 2));
  CK(cudaMalloc(&dgx, n * 2));
  CK(cudaMemset(dy, 0xff, n * 2));  // poisoned: NaN in bf16
  CK(cudaMemset(dgx, 0xff, n * 2));
  build_m(p);
  reorder(p, false);
  reorder(p, true);
  apply<1>(p, dx, false, dy);
  apply<1>(p, dg, true, dgx);
  weight_grad(p, dx, dg);
  CK(cudaStreamSynchronize(cudaStreamPerThread));
  std::vector<float> dwf(size_t(s.C) * s.P());
  CK(cudaMemcpy(dwf.data(), p.dw, dwf.size() * 4, cudaMemcpyDeviceToHost));
  const double ey = rel_err(download_bf16(dy, n), y_ref.data<double>(), n);
  const double eg = rel_err(download_bf16(dgx, n), gx_ref.data<double>(), n);
  CK(cudaMemset(dy, 0xff, n * 2));
  apply<2>(p, dx, false, dy);
  CK(cudaStreamSynchronize(cudaStreamPerThread));
  const double ey2 = rel_err(download_bf16(dy, n), y_ref.data<double>(), n);
  CK(cudaMemset(dy, 0xff, n * 2));
  pair_rows(p, dx);
  apply_pp(p, false, dy);
  CK(cudaStreamSynchronize(cudaStreamPerThread));
  const double eyB = rel_err(download_bf16(dy, n), y_ref.data<double>(), n);
  // second round: M^T from its own GEMM, the reorder through shared memory, apply2
  build_m(p, true);
  reorder2(p, p.fragT);
  build_m(p);
  reorder2(p, p.frag);
  CK(cudaMemset(dy, 0xff, n * 2));
  CK(cudaMemset(dgx, 0xff, n * 2));
  apply2<1>(p, dx, false, dy);
  apply2<1>(p, dg, true, dgx);
  CK(cudaStreamSynchronize(cudaStreamPerThread));
  const double ey3 = rel_err(download_bf16(dy, n), y_ref.data<double>(), n);
  const double eg3 = rel_err(download_bf16(dgx, n), gx_ref.data<double>(), n);
  CK(cudaMemset(dy, 0xff, n * 2));
  apply2<2>(p, dx, false, dy);
  CK(cudaStreamSynchronize(cudaStreamPerThread));
  const double ey4 = rel_err(download_bf16(dy, n), y_ref.data<double>(), n);
  CK(cudaMemset(dy, 0xff, n * 2));
  CK(cudaMemset(dgx, 0xff, n * 2));
  apply3<1>(p, dx, false, dy);
  apply3<1>(p, dg, true, dgx);
  CK(cudaStreamSynchronize(cudaStreamPerThread));
  const double ey5 = rel_err(download_bf16(dy, n), y_ref.data<double>(), n);
  const double eg5 = rel_err(download_bf16(dgx, n), gx_ref.data<double>(), n);
  // the product's bf16 fused op
  const hk::WTConvWeights wd = map_weights(w, [](const Tensor& t) { return t.to(Device::cuda); });
  const Tensor xt = Tensor::from_vector<float>(xs, x).to(DType::bf16).to(Device::cuda);
  const Tensor gt = Tensor::from_vector<float>(xs, gy).to(DType::bf16).to(Device::cuda);
  const Tensor yp =
      hk::cuda::wtconv_forward(xt, wd, 1, hk::WTConvMode::fused).to(Device::cpu).to(DType::f64);
  const hk::WTConvGrads gpr = hk::cuda::wtconv_backward(xt, wd, gt, 1, true, hk::WTConvMode::fused);
  const Tensor gp = gpr.x.to(Device::cpu).to(DType::f64);
  // weight gradients, unfolded (dL/dw = scale dL/dw~), against the reference: the dense form's and
  // the product's, max |error| / max |reference| over the base and every level's filters
  const int KK = s.K * s.K, P = s.P();
  auto werr = [&](auto&& ours) {
    double e = 0, m = 0;
    for (int part = 0; part <= s.L; ++part) {
      const Tensor ref = (part == 0 ? g_ref.base_weight : g_ref.wavelet_weight[size_t(part - 1)]);
      const std::vector<double> got = ours(part);
      for (size_t i = 0; i < got.size(); ++i) {
        m = std::max(m, std::abs(ref.data<double>()[i]));
        e = std::max(e, std::isnan(got[i]) ? INFINITY : std::abs(got[i] - ref.data<double>()[i]));
      }
    }
    return e / m;
  };
  const double ew = werr([&](int part) {
    std::vector<double> o;
    if (part == 0) {
      for (int c = 0; c < s.C; ++c)
        for (int t = 0; t < KK; ++t)
          o.push_back(double(w.base_scale.data<float>()[c]) * dwf[size_t(c) * P + t]);
    } else {
      const int l = part - 1;
      for (int c = 0; c < s.C; ++c)
        for (int sb = 0; sb < 4; ++sb)
          for (int t = 0; t < KK; ++t)
            o.push_back(double(w.wavelet_scale[size_t(l)].data<float>()[4 * c + sb]) *
                        dwf[size_t(c) * P + KK + (l * 4 + sb) * KK + t]);
    }
    return o;
  });
  const double pw = werr([&](int part) {
    const Tensor t = (part == 0 ? gpr.base_weight : gpr.wavelet_weight[size_t(part - 1)])
                         .to(Device::cpu)
                         .to(DType::f64);
    return std::vector<double>(t.data<double>(), t.data<double>() + t.numel());
  });
  std::vector<double> ypv(yp.data<double>(), yp.data<double>() + n),
      gpv(gp.data<double>(), gp.data<double>() + n);
  const double pe = rel_err(ypv, y_ref.data<double>(), n);
  const double pg = rel_err(gpv, gx_ref.data<double>(), n);
  const bool ok = ey <= 4 * pe && ey2 <= 4 * pe && eyB <= 4 * pe && std::isfinite(eyB) &&
                  ey3 <= 4 * pe && ey4 <= 4 * pe && eg3 <= 4 * pg && std::isfinite(ey3) &&
                  std::isfinite(ey4) && std::isfinite(eg3) && ey5 <= 4 * pe && eg5 <= 4 * pg &&
                  std::isfinite(ey5) && std::isfinite(eg5) && eg <= 4 * pg && ew <= 4 * pw + 1e-4 &&
                  std::isfinite(ey) && std::isfinite(eg) && std::isfinite(ey2) && std::isfinite(ew);
  std::printf(
      "check B %d %2dx%2d C %3d K %d L %d: y %.2e (MT 2 %.2e, variant B %.2e), grad_x %.2e, "
      "filters' grads %.2e; "
      "product %.2e, %.2e, %.2e  %s\n",
      s.B, s.H, s.W, s.C, s.K, s.L, ey, ey2, eyB, eg, ew, pe, pg, pw, ok ? "ok" : "FAILED");
  std::printf(
      "     second round: y %.2e (MT 2 %.2e), grad_x %.2e; third round: y %.2e, grad_x %.2e\n", ey3,
      ey4, eg3, ey5, eg5);
  for (void* d : {(void*)dx, (void*)dg, (void*)dy, (void*)dgx}) CK(cudaFree(d));
  release(p);
  return ok;
}

// The basis and the fold on the CPU alone (no GPU): y = M x + b and grad_x = M^T G in double with
// M = E w~ from f32 w~, against the CPU reference, which folds the scales in double: the f32
// products w~ = scale * w (relative 2^-24 each) separate them, hence 1e-6. Also counts the basis
// entries that bf16 does not hold exactly (the GPU path rounds E to bf16).
bool cpu_check(Case s, uint32_t seed) {
  std::mt19937 rng(seed);
  const hk::WTConvWeights w = random_weights(s, rng);
  std::vector<float> wf, bias;
  fold(s, w, wf, bias);
  const std::vector<double>& E = build_basis(s);
  const int HW = s.HW(), P = s.P();
  const size_t n = size_t(s.B) * HW * s.C;
  const hg::Shape xs{s.B, s.H, s.W, s.C};
  const std::vector<float> x = random_bf16_values(n, rng), gy = random_bf16_values(n, rng);
  const hk::WTConvWeights w64 = map_weights(w, [](const Tensor& t) { return t.to(DType::f64); });
  const Tensor y_ref = hk::cpu::wtconv_forward(as_f64(x, xs), w64, 1, hk::WTConvMode::fused);
  const Tensor gx_ref =
      hk::cpu::wtconv_backward(as_f64(x, xs), w64, as_f64(gy, xs), 1, true, hk::WTConvMode::fused)
          .x;
  std::vector<double> y(n), gx(n);
  for (int c = 0; c < s.C; ++c) {
    std::vector<double> M(size_t(HW) * HW, 0.0);
    for (int k = 0; k < P; ++k)
      for (size_t e = 0; e < M.size(); ++e)
        M[e] += E[size_t(k) * HW * HW + e] * wf[size_t(c) * P + k];
    for (int b = 0; b < s.B; ++b)
      for (int p = 0; p < HW; ++p) {
        double a = bias[size_t(c)], ag = 0;
        for (int q = 0; q < HW; ++q) {
          a += M[size_t(p) * HW + q] * x[(size_t(b) * HW + q) * s.C + c];
          ag += M[size_t(q) * HW + p] * gy[(size_t(b) * HW + q) * s.C + c];
        }
        y[(size_t(b) * HW + p) * s.C + c] = a;
        gx[(size_t(b) * HW + p) * s.C + c] = ag;
      }
  }
  const double ey = rel_err(y, y_ref.data<double>(), n), eg = rel_err(gx, gx_ref.data<double>(), n);
  size_t inexact = 0, nonzero = 0;
  for (double e : E) {
    inexact += double(__bfloat162float(__float2bfloat16_rn(float(e)))) != e;
    nonzero += e != 0.0;
  }
  const bool ok = ey < 1e-6 && eg < 1e-6 && inexact == 0;
  std::printf(
      "cpu check B %d %2dx%2d C %3d K %d L %d: y %.2e, grad_x %.2e; basis %zu entries, %zu "
      "nonzero, "
      "%zu not exact in bf16  %s\n",
      s.B, s.H, s.W, s.C, s.K, s.L, ey, eg, E.size(), nonzero, inexact, ok ? "ok" : "FAILED");
  return ok;
}

void time_case(Case s, int reps) {
  std::mt19937 rng(7);
  const hk::WTConvWeights w = random_weights(s, rng);
  std::vector<float> wf, bias;
  fold(s, w, wf, bias);
  Plan p = make_plan(s, build_basis(s), wf, bias);
  const size_t n = size_t(s.B) * s.HW() * s.C;
  const hg::Shape xs{s.B, s.H, s.W, s.C};
  const std::vector<float> x = random_bf16_values(n, rng);
  __nv_bfloat16 *dx = dev_copy(to_bf16(x)), *dy;
  CK(cudaMalloc(&dy, n * 2));
  const float tb = median_ms([&] { build_m(p); }, reps);
  const float tr = median_ms([&] { reorder(p, false); }, reps);
  const float ta1 = median_ms([&] { apply<1>(p, dx, false, dy); }, reps);
  const float ta2 = median_ms([&] { apply<2>(p, dx, false, dy); }, reps);
  const float tpr = median_ms([&] { pair_rows(p, dx); }, reps);
  const float tpp_apply = median_ms([&] { apply_pp(p, false, dy); }, reps);
  // the product: WTConv fused bf16 forward and training step, our 7x7's forward and step
  const hk::WTConvWeights wd = map_weights(w, [](const Tensor& t) { return t.to(Device::cuda); });
  const Tensor xt = Tensor::from_vector<float>(xs, x).to(DType::bf16).to(Device::cuda);
  const float pf =
      median_ms([&] { hk::cuda::wtconv_forward(xt, wd, 1, hk::WTConvMode::fused); }, reps);
  const float pb = median_ms(
      [&] { hk::cuda::wtconv_backward(xt, wd, xt, 1, true, hk::WTConvMode::fused); }, reps);
  const float pbw = median_ms(
      [&] { hk::cuda::wtconv_backward(xt, wd, xt, 1, false, hk::WTConvMode::fused); }, reps);
  const float tbT = median_ms([&] { reorder(p, true); }, reps);
  const float tgx = median_ms([&] { apply<1>(p, dx, true, dy); }, reps);
  const float tpp = median_ms([&] { pair_planes(p, dx, p.gp); }, reps);
  const float tdm = median_ms([&] { dm_contract(p); }, reps);
  const float tdm0 = median_ms([&] { dm_contract(p, false); }, reps);
  const float t2b = median_ms([&] { build_m(p); }, reps);
  const float t2bT = median_ms([&] { build_m(p, true); }, reps);
  const float t2r = median_ms([&] { reorder2(p, p.frag); }, reps);
  reorder2(p, p.fragT);
  const float t2a1 = median_ms([&] { apply2<1>(p, dx, false, dy); }, reps);
  const float t2a2 = median_ms([&] { apply2<2>(p, dx, false, dy); }, reps);
  const float t2g = median_ms([&] { apply2<1>(p, dx, true, dy); }, reps);
  const float t3a1 = median_ms([&] { apply3<1>(p, dx, false, dy); }, reps);
  const float t3a2 = median_ms([&] { apply3<2>(p, dx, false, dy); }, reps);
  std::printf(
      "     THIRD ROUND: apply3 (output through shared memory) MT 1 %.4f ms, MT 2 %.4f ms\n", t3a1,
      t3a2);
  const hk::Conv2dShape cs = hk::make_conv2d_shape(s.B, s.H, s.W, s.C, s.C, 7, 7, 1, 3, s.C);
  float *w7, *b7, *gw7;
  CK(cudaMalloc(&w7, size_t(s.C) * 49 * 4));
  CK(cudaMalloc(&gw7, size_t(s.C) * 49 * 4));
  CK(cudaMalloc(&b7, size_t(s.C) * 4));
  CK(cudaMemset(w7, 0, size_t(s.C) * 49 * 4));
  CK(cudaMemset(b7, 0, size_t(s.C) * 4));
  auto* hx = reinterpret_cast<const hg::bf16*>(dx);
  auto* hy = reinterpret_cast<hg::bf16*>(dy);
  const float d7f =
      median_ms([&] { hk::cuda::depthwise_conv_forward<hg::bf16>(cs, hx, w7, b7, hy); }, reps);
  const float d7b = median_ms(
      [&] {
        hk::cuda::depthwise_conv_backward_data<hg::bf16>(cs, hx, w7, hy);
        hk::cuda::depthwise_conv_backward_weight<hg::bf16>(cs, hx, hx, gw7, nullptr);
      },
      reps);
  const double mb = 2.0 * 2 * double(n) / 1e6;
  const float dense_fwd = tb + tr + std::min(ta1, ta2), dense_bwd = tb + tbT + tgx + 2 * tpp + tdm;
  std::printf(
      "time B %3d %3d/%2d L %d K %d: TRAIN STEP dense %.4f ms (forward %.4f, backward %.4f) | "
      "product "
      "WTConv %.4f | our 7x7 %.4f\n",
      s.B, s.C, s.H, s.L, s.K, dense_fwd + dense_bwd, dense_fwd, dense_bwd, pf + pb, d7f + d7b);
  const float f2 = t2b + t2r + std::min(t2a1, t2a2), b2 = t2bT + t2r + t2g + 2 * tpp + tdm;
  std::printf(
      "     SECOND ROUND: TRAIN STEP dense %.4f ms (forward %.4f: M %.4f, reorder %.4f, apply MT 1 "
      "%.4f / MT 2 %.4f; backward %.4f: M^T %.4f, grad_x apply %.4f, dM etc. %.4f, of which the "
      "products and reduction alone %.4f)\n",
      f2 + b2, f2, t2b, t2r, t2a1, t2a2, b2, t2bT, t2g, tdm, tdm0);
  std::printf("     variant B: pair rows %.4f ms + apply %.4f ms\n", tpr, tpp_apply);
  std::printf(
      "     backward pieces: M again %.4f, reorder M^T %.4f, grad_x apply %.4f, pair planes %.4f "
      "(x2), dM + contraction + reduction %.4f; product backward without grad_x %.4f\n",
      tb, tbT, tgx, tpp, tdm, pbw);
  std::printf(
      "time B %3d %3d/%2d L %d K %d: dense forward: M = E w~ %.4f ms, reorder %.4f, apply MT 1 "
      "%.4f (%.0f GB/s), MT 2 %.4f; product WTConv forward %.4f, backward %.4f; our 7x7 forward "
      "%.4f, backward %.4f\n",
      s.B, s.C, s.H, s.L, s.K, tb, tr, ta1, mb / ta1, ta2, pf, pb, d7f, d7b);
  for (void* d : {(void*)dx, (void*)dy, (void*)w7, (void*)b7, (void*)gw7}) CK(cudaFree(d));
  release(p);
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  bool ok = true;
  if (argc > 2 && std::string(argv[2]) == "cpu") {
    ok &= cpu_check({2, 14, 14, 8, 5, 3}, 1);
    ok &= cpu_check({3, 7, 7, 8, 5, 2}, 2);
    ok &= cpu_check({2, 13, 11, 8, 3, 2}, 3);
    ok &= cpu_check({1, 16, 16, 8, 5, 4}, 4);
    return ok ? 0 : 1;
  }
  ok &= check({3, 14, 14, 64, 5, 3}, 1);
  ok &= check({17, 7, 7, 48, 5, 2}, 2);
  ok &= check({5, 13, 11, 32, 3, 2}, 3);
  ok &= check({2, 16, 16, 16, 5, 4}, 4);
  for (int B : {64, 128})
    for (Case s : {Case{B, 14, 14, 384, 5, 3}, Case{B, 7, 7, 768, 5, 2}, Case{B, 14, 14, 96, 5, 3},
                   Case{B, 14, 14, 192, 5, 3}})
      time_case(s, reps);
  return ok ? 0 : 1;
}
