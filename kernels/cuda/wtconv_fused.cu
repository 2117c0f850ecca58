// Fused WTConv2d on the GPU (Aflalo et al. 2026's three transformations, our own kernels), and the
// public kernels::cuda::wtconv_forward / wtconv_backward that dispatch on WTConvMode.
//
// Small maps (wtconv_plane_path in kernels/wtconv.h) run the whole-plane kernels of
// wtconv_plane.cuh (docs/fused-wtconv.md, section 10); the rest is the split path, whose levels
// from the first LL band of at most 256 pixels run as a level tail on the same kernels
// (wtconv_tail_level; section 11).
// Forward, per call:  fold (scales into weights)  ->  for each level l: haar (the Haar coefficients
// of ll_l written once as sub-band planes (B, h_{l+1}, w_{l+1}, 4, C), see wtconv_vec.cuh, and the
// raw LL ll_{l+1} that feeds level l+1), then the depthwise conv of kernels/depthwise_conv.h over
// them as 4C channels (t_l)  ->  synth (base conv + bias of x, plus every level's t_l at (i >>
// (l+1), j >> (l+1)) with parity signs and 1/2 per level: one pass, no reconstruction stored).
// Backward: gx is the same synthesis run on G = dL/dy with flipped folded weights over the
// transposed level convs of H(G's LL pyramid) (the transpose of a "same" correlation is the
// correlation with the flipped kernel; the transpose of the Haar synthesis cascade is the analysis
// cascade, and vice versa); the weight gradients are the deterministic depthwise weight gradients
// of H(x's LL pyramid) against H(G's), recomputed level by level (1/4 + 1/16 + ... of x) instead of
// saved by the forward. See docs/fused-wtconv.md. Storage: x, G, y, grad_x are T = float or
// __nv_bfloat16 (kernels/wtconv.h), and so are the coefficient planes of x and G, the level
// outputs t_l, the level gradients and the LL pyramids (each kernel accumulates in f32 and rounds
// once on store); the folded weights, R (levels_synth_kernel), the weight-gradient sums and every
// parameter gradient are f32.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/cuda_stream.h"
#include "kernels/conv2d.h"
#include "kernels/cuda/wtconv_common.cuh"
#include "kernels/cuda/wtconv_haar_conv.cuh"
#include "kernels/cuda/wtconv_haar_wgrad.cuh"
#include "kernels/cuda/wtconv_plane.cuh"
#include "kernels/cuda/wtconv_staged.cuh"
#include "kernels/cuda/wtconv_vec.cuh"
#include "kernels/depthwise_conv.h"
#include "kernels/wtconv_check.h"

namespace hg::kernels::cuda {
namespace wtconv_detail {

Tensor workspace(const Shape& shape) { return scratch_tensor(shape); }

std::vector<std::pair<int, int>> level_dims(int H, int W, int L) {
  std::vector<std::pair<int, int>> d{{H, W}};
  for (int l = 0; l < L; ++l) d.push_back({(d.back().first + 1) / 2, (d.back().second + 1) / 2});
  return d;
}

int check_inputs(const char* op, const Tensor& x, const WTConvWeights& w, int stride) {
  const int K = wtconv_check_shapes(op, x, w, stride);  // the shapes, as the CPU checks them
  HG_CHECK(x.device() == Device::cuda && (x.dtype() == DType::f32 || x.dtype() == DType::bf16), op,
           ": x must be f32 or bf16 on cuda, got ", x.describe());
  HG_CHECK(K <= kMaxK, op, ": K must be <= ", kMaxK, " on cuda, got ", K);
  HG_CHECK(w.levels() <= kMaxLevels, op, ": at most ", kMaxLevels, " levels on cuda, got ",
           w.levels());
  // the parameters are f32 whatever x is (mixed precision: f32 master weights, read in f32)
  auto on_gpu = [&](const Tensor& t, const std::string& name) {
    HG_CHECK(t.device() == Device::cuda && t.dtype() == DType::f32 && t.is_contiguous(), op, ": ",
             name, " must be a contiguous f32 cuda tensor (for x ", x.describe(), "), got ",
             t.describe());
  };
  on_gpu(w.base_weight, "base_weight");
  on_gpu(w.base_bias, "base_bias");
  on_gpu(w.base_scale, "base_scale");
  for (int l = 0; l < w.levels(); ++l) {
    on_gpu(w.wavelet_weight[l], str("wavelet_weight[", l, "]"));
    on_gpu(w.wavelet_scale[l], str("wavelet_scale[", l, "]"));
  }
  return K;
}

void check_grad_y(const char* op, const Tensor& x, const Tensor& grad_y, int stride) {
  wtconv_check_grad_y(op, x, grad_y, stride);
  HG_CHECK(grad_y.device() == Device::cuda && grad_y.dtype() == x.dtype(), op, ": grad_y must be ",
           dtype_name(x.dtype()), " on cuda like x ", x.describe(), ", got ", grad_y.describe());
}

Tensor output_tensor(const char* op, const char* what, const Shape& shape, DType dtype,
                     const Tensor& out) {
  if (!out.defined()) return Tensor::empty(shape, dtype, Device::cuda);
  HG_CHECK(out.shape() == shape && out.dtype() == dtype && out.device() == Device::cuda &&
               out.is_contiguous(),
           op, ": ", what, " must be a dense ", dtype_name(dtype), " cuda tensor of shape ",
           shape_str(shape), ", got ", out.describe());
  return out;
}

namespace {

// ---- (c) scales folded into the weights: one launch per pass, one thread per folded value ------
/// Where fold_kernel writes (a part is skipped when its pointer is null), for PyTorch's level
/// channel e = 4c + s and k' = k, or K*K - 1 - k where that part is flipped (the filter rotated by
/// 180 degrees: the transposed conv as a forward conv):
///   base_w (K*K, C):       bs[c] * bw[c][k'];            base_b (C): bs[c] * bb[c];
///   levels (L, 4C, K*K):   ws_l[e] * ww_l[e][k'] at [l][s*C + c][k] (the split path's level convs,
///                          sub-band-plane channel order);
///   plane (L, K*K, 4, C):  the same value at [l][k][s][c] (the whole-plane kernels): f32 in
///                          `plane`, or rounded to bf16 in `plane_bf16` (the bf16 op's level
///                          filters, kernels/wtconv.h), the storage the plane kernels copy as it
///                          is.
struct FoldOut {
  float *base_w, *base_b, *levels, *plane;
  __nv_bfloat16* plane_bf16;
  bool flip_base, flip_levels, flip_plane;
};
/// One folded level tap: ws_l[e] * ww_l[e][k'] (k' = k, or K*K - 1 - k when flipped).
__device__ __forceinline__ float fold_level_tap(const LevelParams& lp, int l, int e, int k, int KK,
                                                bool flip) {
  return lp.ws[l][e] * lp.ww[l][e * KK + (flip ? KK - 1 - k : k)];
}
__global__ void fold_kernel(const float* __restrict__ bw, const float* __restrict__ bb,
                            const float* __restrict__ bs, LevelParams lp, int L, int C, int KK,
                            FoldOut o) {
  // int32 indices (the host checks the total): 64-bit divisions cost ~70 instructions each
  int idx = int(blockIdx.x) * int(blockDim.x) + int(threadIdx.x);
  const int nbase = o.base_w ? KK * C : 0, nbias = o.base_b ? C : 0;
  const int per = 4 * C * KK, nlev = o.levels ? L * per : 0;
  if (idx < nbase) {
    const int k = idx / C, c = idx - k * C, ks = o.flip_base ? KK - 1 - k : k;
    o.base_w[idx] = bs[c] * bw[c * KK + ks];
    return;
  }
  idx -= nbase;
  if (idx < nbias) {
    o.base_b[idx] = bs[idx] * bb[idx];
    return;
  }
  idx -= nbias;
  if (idx < nlev) {
    const int l = idx / per, rem = idx - l * per;
    const int ep = rem / KK, k = rem - ep * KK;
    o.levels[idx] = fold_level_tap(lp, l, 4 * (ep % C) + ep / C, k, KK, o.flip_levels);
    return;
  }
  idx -= nlev;
  if ((o.plane || o.plane_bf16) && idx < L * per) {
    const int l = idx / per, rem = idx - l * per;
    const int k = rem / (4 * C), s = rem / C % 4, c = rem % C;
    const float v = fold_level_tap(lp, l, 4 * c + s, k, KK, o.flip_plane);
    if (o.plane_bf16)
      o.plane_bf16[idx] = __float2bfloat16_rn(v);
    else
      o.plane[idx] = v;
  }
}

// ---- (b) one-pass synthesis, fused with the base depthwise conv ----
// y(b, io, jo, c) at input pixel (i, j) = (io*stride, jo*stride):
//   bf[c] + sum_k wb[k][c] x(i+kh-r, j+kw-r, c)
//         + sum_l 2^-(l+1) unhaar(t_l(i>>(l+1), j>>(l+1)), bits l).
// One thread: channel c, TQ consecutive outputs of a row (TQ > 1 only when stride == 1).
template <int KT, int TQ, typename T>
__global__ void synth_kernel(const T* __restrict__ x, int B, int H, int W, int C, int Ho, int Wo,
                             int stride, int K_rt, const float* __restrict__ wb,
                             const float* __restrict__ bf, Levels<T> lv, T* __restrict__ y) {
  constexpr int KA = KT > 0 ? KT : kMaxK;
  const int K = KT > 0 ? KT : K_rt, r = K / 2;
  const int nqb = (Wo + TQ - 1) / TQ;
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= int64_t(B) * Ho * nqb * C) return;
  const int c = int(idx % C);
  int64_t rest = idx / C;
  const int jb = int(rest % nqb);
  rest /= nqb;
  const int io = int(rest % Ho), b = int(rest / Ho);
  const int i = io * stride, j0 = jb * TQ * stride;
  float acc[TQ];
#pragma unroll
  for (int t = 0; t < TQ; ++t) acc[t] = bf ? bf[c] : 0.f;
#pragma unroll
  for (int kh = 0; kh < KA; ++kh) {
    if (kh >= K) break;
    const int ii = i + kh - r;
    if (ii < 0 || ii >= H) continue;
    const T* row = x + (int64_t(b) * H + ii) * W * C + c;
    float win[TQ + KA - 1];
#pragma unroll
    for (int m = 0; m < TQ + KA - 1; ++m)
      if (m < TQ + K - 1) {
        const int jj = j0 - r + m;
        win[m] = (jj >= 0 && jj < W) ? ld(row + int64_t(jj) * C) : 0.f;
      }
#pragma unroll
    for (int kw = 0; kw < KA; ++kw)
      if (kw < K) {
        const float wv = wb[int64_t(kh * K + kw) * C + c];
#pragma unroll
        for (int t = 0; t < TQ; ++t) acc[t] = fmaf(wv, win[t + kw], acc[t]);
      }
  }
#pragma unroll
  for (int t = 0; t < TQ; ++t) {
    const int jo = jb * TQ + t;
    if (jo >= Wo) break;
    const int j = jo * stride;
    // unrolled over the level bound so the L independent loads are in flight together
    float f = 0.5f, s = 0.f;
#pragma unroll
    for (int l = 0; l < kMaxLevels; ++l, f *= 0.5f) {
      if (l >= lv.L) break;
      const T* tp = lv.t[l] +
                    ((int64_t(b) * lv.hp[l] + (i >> (l + 1))) * lv.wp[l] + (j >> (l + 1))) * 4 * C +
                    c;
      const float4 tv = make_float4(ld(tp), ld(tp + C), ld(tp + 2 * C), ld(tp + 3 * C));  // planes
      s = fmaf(f, unhaar_at(tv, (i >> l) & 1, (j >> l) & 1), s);
    }
    st(y + ((int64_t(b) * Ho + io) * Wo + jo) * C + c, acc[t] + s);
  }
}

// The Haar coefficients of a level, materialised, one channel per thread (the fallback of
// haar_v4_kernel): coef (B, hp, wp, 4, C) = H(src) as sub-band planes, and the (same rounded) LL
// band again as ll_next (B, hp, wp, C), the next level's input (nullptr: not written); both of
// src's storage type T, computed in f32 and rounded once.
template <typename T>
__global__ void haar_kernel(HaarSrc<T> src, int B, T* __restrict__ coef, T* __restrict__ ll_next) {
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= int64_t(B) * src.hp * src.wp * src.C) return;
  const int c = int(idx % src.C);
  const int64_t pos = idx / src.C;
  const int q = int(pos % src.wp);
  const int64_t rest = pos / src.wp;
  const float4 v = src.at(int(rest / src.hp), int(rest % src.hp), q, c);
  if (coef) {
    T* o = coef + pos * 4 * src.C + c;
    st(o, v.x);
    st(o + src.C, v.y);
    st(o + 2 * src.C, v.z);
    st(o + 3 * src.C, v.w);
  }
  if (ll_next) st(ll_next + idx, v.x);
}

// ---- gradients unfold from the folded weights
// ------------------------------------------------------ levels: sums (L, 4C, K*K) in the
// sub-band-plane channel order e' = s*C + c (the depthwise weight gradients of the level convs);
// for PyTorch's e = 4c + s: dL/dww_l[e][k] = ws_l[e] * sums[l][e'][k], dL/dws_l[e] = sum_k
// sums[l][e'][k] * ww_l[e][k]. One warp per (level, e) (unfold_filter_warp), kUnfoldWarps a block.
constexpr int kUnfoldWarps = 8;
__global__ void unfold_levels_kernel(LevelParams lp, const float* __restrict__ sums, int L, int C,
                                     int KK) {
  const int f = int(blockIdx.x) * kUnfoldWarps + int(threadIdx.x) / 32;  // the warp's filter
  if (f >= L * 4 * C) return;
  const int l = f / (4 * C), e = f - l * 4 * C;
  const int ep = (e % 4) * C + e / 4;
  const float gs =
      unfold_filter_warp(sums + (int64_t(l) * 4 * C + ep) * KK, lp.ww[l] + int64_t(e) * KK,
                         lp.ws[l][e], KK, lp.gww[l] + int64_t(e) * KK);
  if ((threadIdx.x & 31) == 0) lp.gws[l][e] = gs;
}
// base: dL/dbw = bs * sums, dL/dbb = bs * gb~, dL/dbs = sum_k sums * bw + gb~ * bb.
// sums is (C, K*K), the layout of kernels::cuda::depthwise_conv_backward_weight. One warp per
// channel, kUnfoldWarps a block.
__global__ void unfold_base_kernel(const float* __restrict__ sums, const float* __restrict__ gbf,
                                   const float* __restrict__ bw, const float* __restrict__ bb,
                                   const float* __restrict__ bs, int C, int KK,
                                   float* __restrict__ gbw, float* __restrict__ gbb,
                                   float* __restrict__ gbs) {
  const int c = int(blockIdx.x) * kUnfoldWarps + int(threadIdx.x) / 32;
  if (c >= C) return;
  const float gs = unfold_filter_warp(sums + int64_t(c) * KK, bw + int64_t(c) * KK, bs[c], KK,
                                      gbw + int64_t(c) * KK);
  if ((threadIdx.x & 31) != 0) return;
  gbb[c] = bs[c] * gbf[c];
  gbs[c] = fmaf(gbf[c], bb[c], gs);
}

constexpr int kTQ = 4;  // outputs per thread along a row (register reuse of the input window)

/// True when p can be read as 4 consecutive elements of T in one access (16 bytes for float,
/// 8 for bf16), given that every offset used is a multiple of 4 elements (C % 4 == 0).
template <typename T>
bool aligned4(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % (4 * sizeof(T)) == 0;
}

/// The folded weights of one pass (fold, after level_params): the base path's filter (K*K, C) and,
/// in the forward, bias (C); the split path's level filters (L, 4C, K*K) and the whole-plane
/// kernels' (L, K*K, 4, C, storage T: bf16-rounded for bf16) where the pass needs them (else
/// undefined).
struct Folded {
  Tensor base_w, base_b, levels, plane;
};

/// Whether the 4-channel synthesis (synth_v4_kernel, stride 1) takes in and out of storage T, C
/// channels, base filters of size K: C % 4 == 0, K 3 .. 9, both aligned to 4 elements.
template <typename T>
bool synth_vec_takes(const T* in, int C, int K, const T* out) {
  return C % 4 == 0 && K >= 3 && K <= 9 && aligned4<T>(in) && aligned4<T>(out);
}

/// Row pairs per block of the staged synthesis: more when rows are short.
inline int synth_staged_pairs(int W) { return W >= 16 ? 2 : 4; }

/// Whether the staged synthesis (try_synth_staged) takes a stride-1 synthesis of `in` into `out`,
/// both (B, H, W, C) of storage T, with level-0 filters of size K: bf16 activations, K = 3, 5 or 7,
/// C a multiple of 8, 16-byte aligned tensors, staged rows within the device's shared memory.
/// bf16 only: on the H200 (bench-layer, B = 64, K = 5) it beat synth_v4_kernel in bf16 (96/56/5
/// train 1.102 -> 1.082 ms, 192/28/4 0.698 -> 0.642) but lost in fp32 (96/56/5 1.181 -> 1.247: f32
/// rows take twice the shared memory, so fewer blocks fit an SM).
template <typename T>
bool synth_staged_takes(const T* in, int B, int H, int W, int C, int K, const T* out) {
  if constexpr (!std::is_same_v<T, __nv_bfloat16>) {
    return false;
  } else {
    const int PR = synth_staged_pairs(W);
    const int64_t groups = int64_t(B) * ((H + 2 * PR - 1) / (2 * PR));
    return (K == 3 || K == 5 || K == 7) && C % (16 / int(sizeof(T))) == 0 && aligned16(in) &&
           aligned16(out) && synth_staged_smem<T>(K, PR, W) <= hg::cuda::max_dynamic_smem() &&
           groups <= INT32_MAX && (C + 31) / 32 <= 65535 &&
           int64_t(H) * W * C < INT32_MAX &&  // stage_rows_async's offsets in one image
           B <= 65535 && H <= 131070;         // levels_synth_kernel's grid: (.., hp, B)
  }
}

/// The staged synthesis (wtconv_staged.cuh: levels 1.. and the level tail, if any, summed onto
/// level 0's grid, then the staged base conv adding level 0 and that sum) when it takes the shape
/// (synth_staged_takes; stride 1, the caller's case; at least one level; the folded weights, t_l
/// aligned, as workspace tensors are). Returns false, having done nothing, otherwise; a level
/// tail (its levels are in no t_l) can only be synthesised here, so the caller has checked.
template <typename T>
bool try_synth_staged(const T* in, int B, int H, int W, int C, int K, const float* wb,
                      const float* bf, const Levels<T>& lv, const LevelTail& tail, T* out) {
  if constexpr (!std::is_same_v<T, __nv_bfloat16>) {
    return false;
  } else {
    const int PR = synth_staged_pairs(W);
    const size_t smem = synth_staged_smem<T>(K, PR, W);
    bool ok = lv.L >= 1 && synth_staged_takes(in, B, H, W, C, K, out) && aligned16(wb) &&
              (!bf || aligned16(bf)) && (!tail.r || (aligned16(tail.r) && tail.s == lv.L));
    for (int l = 0; l < lv.L; ++l) ok = ok && aligned4<T>(lv.t[l]);  // levels_synth's loads
    ok = ok && aligned16(lv.t[0]);                                   // staged with the rows
    if (!ok) return false;
    const int64_t groups = int64_t(B) * ((H + 2 * PR - 1) / (2 * PR));
    const int hp = lv.hp[0], wp = lv.wp[0];
    // R: levels >= 1 (and the tail) on level 0's grid; none with one level and no tail. With the
    // tail at s = 1 its term is R itself (grid 1 is level 0's grid).
    Tensor R;
    const float* Rp = tail.s == 1 ? tail.r : nullptr;
    if (lv.L >= 2) {
      R = workspace({B, hp, wp, C});
      const dim3 grid(unsigned((int64_t(wp) * (C / 4) + 255) / 256), unsigned(hp), unsigned(B));
      levels_synth_kernel<<<grid, 256, 0, hg::cuda::stream()>>>(lv, tail, hp, wp, C,
                                                                R.data<float>());
      HG_CUDA_LAUNCH_CHECK();
      Rp = R.data<float>();
    }
    const SynthDims d{B, H, W, C, hp, wp};
    dispatch_k(K, [&](auto kt) {
      constexpr int KT = decltype(kt)::value;
      if constexpr (KT == 3 || KT == 5 || KT == 7) {
        const auto kernel = synth_staged_kernel<T, KT>;
        // as many blocks as fit the device at once, each walking its channel group's items
        const int cgroups = (C + 31) / 32;
        const int64_t fit = int64_t(hg::cuda::resident_blocks(reinterpret_cast<const void*>(kernel),
                                                              32 * kSynthWarps, smem)) *
                            hg::cuda::multiprocessor_count() / cgroups;
        const int64_t nb = std::max<int64_t>(1, std::min<int64_t>(groups, fit));
        kernel<<<dim3(unsigned(nb), unsigned(cgroups)), dim3(32, kSynthWarps), smem,
                 hg::cuda::stream()>>>(in, wb, bf, d, PR, lv.t[0], Rp, out);
        HG_CUDA_LAUNCH_CHECK();
      }
    });
    return true;
  }
}

/// base conv of `in` + one-pass synthesis of t (and of the level tail, if any) into out (B, Ho, Wo,
/// C); in, out and t[l], the level outputs (B, hp, wp, 4, C), of storage T.
template <typename T>
void synthesis(const T* in, int B, int H, int W, int C, int Ho, int Wo, int stride, int K,
               const Folded& f, const std::vector<Tensor>& t, const LevelTail& tail, T* out) {
  Levels<T> lv{};
  lv.L = static_cast<int>(t.size());
  for (int l = 0; l < lv.L; ++l) {
    lv.t[l] = typed<T>(t[l]);
    lv.hp[l] = static_cast<int>(t[l].size(1));
    lv.wp[l] = static_cast<int>(t[l].size(2));
  }
  const float* bf = f.base_b.defined() ? f.base_b.data<float>() : nullptr;
  if (stride == 1 && try_synth_staged(in, B, H, W, C, K, f.base_w.data<float>(), bf, lv, tail, out))
    return;
  bool vec = stride == 1 && synth_vec_takes(in, C, K, out) && aligned16(f.base_w.data<float>()) &&
             (!bf || aligned16(bf)) && (!tail.r || aligned16(tail.r));
  for (int l = 0; l < lv.L; ++l) vec = vec && aligned4<T>(lv.t[l]);
  HG_CHECK(vec || tail.r == nullptr, "wtconv (cuda, fused): a level tail for a synthesis that ",
           "neither the staged nor the 4-channel kernel takes (B ", B, ", H ", H, ", W ", W, ", C ",
           C, ", K ", K, ")");
  dispatch_k(K, [&](auto kt) {
    constexpr int KT = decltype(kt)::value;
    if constexpr (KT >= 3) {
      if (vec) {
        const VecLaunch v = vec_launch(C, int64_t(B) * H * ((W + kSynthTW - 1) / kSynthTW));
        const size_t smem = sizeof(float) * KT * KT * v.block.x * 4;
        synth_v4_kernel<KT, T><<<v.grid, v.block, smem, hg::cuda::stream()>>>(
            in, B, H, W, C, f.base_w.data<float>(), bf, lv, tail, out);
        HG_CUDA_LAUNCH_CHECK();
        return;
      }
    }
    if (stride == 1) {
      const int64_t n = int64_t(B) * Ho * ((Wo + kTQ - 1) / kTQ) * C;
      synth_kernel<KT, kTQ, T><<<blocks_for(n), 256, 0, hg::cuda::stream()>>>(
          in, B, H, W, C, Ho, Wo, 1, K, f.base_w.data<float>(), bf, lv, out);
    } else {
      const int64_t n = int64_t(B) * Ho * Wo * C;
      synth_kernel<KT, 1, T><<<blocks_for(n), 256, 0, hg::cuda::stream()>>>(
          in, B, H, W, C, Ho, Wo, stride, K, f.base_w.data<float>(), bf, lv, out);
    }
    HG_CUDA_LAUNCH_CHECK();
  });
}

/// The pointers of every level's parameters (and, when g is given, of new gradient tensors it
/// gets).
LevelParams level_params(const WTConvWeights& w, WTConvGrads* g) {
  LevelParams lp{};
  for (int l = 0; l < w.levels(); ++l) {
    lp.ww[l] = w.wavelet_weight[l].data<float>();
    lp.ws[l] = w.wavelet_scale[l].data<float>();
    if (g != nullptr) {
      g->wavelet_weight.push_back(
          Tensor::empty(w.wavelet_weight[l].shape(), DType::f32, Device::cuda));
      g->wavelet_scale.push_back(
          Tensor::empty(w.wavelet_scale[l].shape(), DType::f32, Device::cuda));
      lp.gww[l] = g->wavelet_weight[l].data<float>();
      lp.gws[l] = g->wavelet_scale[l].data<float>();
    }
  }
  return lp;
}

/// Every folded weight of one pass in one launch (fold_kernel; the tiny folds were 2-4 us each as
/// separate launches): the base filter, flipped in the backward, and the forward's bias; with
/// `levels` the split path's level filters, flipped in the backward (the level gradient conv^T
/// runs as the forward conv with the rotated filter; section 8 of docs/fused-wtconv.md); with
/// `plane` the
/// whole-plane kernels' level filters, flipped in the backward, bf16-rounded for a bf16 T.
template <typename T>
Folded fold(const WTConvWeights& w, int C, int K, bool backward, bool levels, bool plane) {
  constexpr bool kBf16 = !std::is_same_v<T, float>;
  const int KK = K * K, L = w.levels();
  Folded f;
  FoldOut o{};
  f.base_w = workspace({KK, C});
  o.base_w = f.base_w.data<float>();
  if (!backward) {
    f.base_b = workspace({C});
    o.base_b = f.base_b.data<float>();
  }
  if (levels && L > 0) {
    f.levels = workspace({L, 4 * C, KK});
    o.levels = f.levels.data<float>();
  }
  if (plane && L > 0) {
    f.plane = workspace_of<T>({L, KK, 4, C});
    if constexpr (kBf16)
      o.plane_bf16 = typed<T>(f.plane);
    else
      o.plane = f.plane.data<float>();
  }
  o.flip_base = backward;
  o.flip_levels = backward;
  o.flip_plane = backward;
  const int64_t n = int64_t(KK) * C + (backward ? 0 : C) +
                    (o.levels ? int64_t(L) * 4 * C * KK : 0) +
                    (f.plane.defined() ? int64_t(L) * 4 * C * KK : 0);
  HG_CHECK(n < INT32_MAX, "wtconv (cuda, fused): ", n,
           " folded weights are too many for one launch");
  fold_kernel<<<blocks_for(n), 256, 0, hg::cuda::stream()>>>(
      w.base_weight.data<float>(), w.base_bias.data<float>(), w.base_scale.data<float>(),
      level_params(w, nullptr), L, C, KK, o);
  HG_CUDA_LAUNCH_CHECK();
  return f;
}

// ---- the whole-plane path (wtconv_plane.cuh)
// ------------------------------------------------------

/// Largest H * W the whole-plane kernels take: WTConvNeXt's 14 x 14 and 7 x 7 stages, and the
/// split path's level tails from the first LL band that small. At 28 x 28 the backward's planes do
/// not fit the shared memory, and a bf16 forward would leave room for one block per
/// multiprocessor.
constexpr int kPlaneMaxPixels = 256;

/// The geometry when the whole-plane kernels take the shape (stride 1, K = 3, 5 or 7, at least
/// one level, H * W within kPlaneMaxPixels, the planes within the device's shared memory); base:
/// a whole layer, else a level tail (H x W the grid of its LL band).
template <typename T>
bool plane_takes(int B, int H, int W, int K, int L, int stride, bool backward, bool base,
                 PlaneGeom* g) {
  if (stride != 1 || !(K == 3 || K == 5 || K == 7) || L < 1 || B > 65535 ||
      int64_t(H) * W > kPlaneMaxPixels)
    return false;
  *g = plane_geom(H, W, L, K, base);
  const size_t smem = backward ? plane_bwd_layout<T>(*g).bytes : plane_fwd_layout<T>(*g).bytes;
  return smem <= hg::cuda::max_dynamic_smem();
}

/// The K the whole-plane kernels are compiled for (plane_takes admits no other).
template <int KT>
constexpr bool plane_k = KT == 3 || KT == 5 || KT == 7;

/// The whole-plane forward kernel for g (a whole layer or a level tail), planes stored as S.
template <typename T, typename S, int KT>
auto plane_forward_fn(const PlaneGeom& g) {
  return g.base ? plane_forward_kernel<T, S, KT, true> : plane_forward_kernel<T, S, KT, false>;
}

/// Blocks resident on the whole device at once, per_sm a multiprocessor (at least 1).
inline int64_t device_resident(int per_sm) {
  return std::max(1, per_sm) * int64_t(hg::cuda::multiprocessor_count());
}

/// Resident blocks a multiprocessor of plane_forward_fn<T, S, KT>(g) (0: it does not fit).
template <typename T, typename S, int KT>
int plane_blocks_per_sm(const PlaneGeom& g) {
  const size_t smem = plane_fwd_layout<S>(g).bytes;
  if (smem > hg::cuda::max_dynamic_smem()) return 0;
  return hg::cuda::resident_blocks(reinterpret_cast<const void*>(plane_forward_fn<T, S, KT>(g)),
                                   32 * kPlaneWarps, smem);
}

/// One whole-plane forward over x (B, H, W, C): a whole layer (g.base: wb, bias its folded base
/// filter and bias) or a level tail (x = ll_s); wl the folded level filters of the plane's first
/// level on.
template <typename T>
void plane_forward(const T* x, int B, int C, const PlaneGeom& g, const float* wb, const float* bias,
                   const T* wl, PlaneOut<T> out) {
  const int groups = (C + 31) / 32;
  dispatch_k(g.K, [&](auto kt) {
    constexpr int KT = decltype(kt)::value;
    if constexpr (plane_k<KT>) {
      // The planes in f32 (no widening on every shared load) unless T's fit more blocks a
      // multiprocessor: bf16 at 14 x 14 fits three instead of two (-8% a 384/14/3 step), while at
      // 7 x 7 registers allow three either way and bf16 planes were 7 us slower (768/7/2, B = 64;
      // seventeenth session).
      // Images per block: one where the filters are copied as they are stored (cp.async, S = T);
      // where they are converted (f32 planes for bf16 activations: a load and a conversion per
      // entry), as many as make one wave of resident blocks, so that a block converts them once.
      // Measured (twenty-second session, B = 64, bf16): 768/7/2 forward 42.1 -> 37.5 us with one
      // wave, but 384/14/3 (S = T) 54.7 -> 55.9 us: blocks that take their images in turn stay in
      // step, all staging or all at a barrier at once, where a second wave starts staggered.
      auto launch = [&](auto s_tag, int per_sm) {
        using S = decltype(s_tag);
        const auto kernel = plane_forward_fn<T, S, KT>(g);
        const int64_t resident = device_resident(per_sm);
        const int ipb =
            std::is_same_v<S, T>
                ? 1
                : int(std::max<int64_t>(1, (int64_t(B) * groups + resident - 1) / resident));
        hg::cuda::allow_max_dynamic_smem(reinterpret_cast<const void*>(kernel));
        kernel<<<dim3(unsigned(groups), unsigned((B + ipb - 1) / ipb)), 32 * kPlaneWarps,
                 plane_fwd_layout<S>(g).bytes, hg::cuda::stream()>>>(x, B, C, ipb, g, wb, bias, wl,
                                                                     out.y, out.rec, out.scale);
        HG_CUDA_LAUNCH_CHECK();
      };
      const int f32_blocks = plane_blocks_per_sm<T, float, KT>(g);
      const int t_blocks = plane_blocks_per_sm<T, T, KT>(g);
      if (std::is_same_v<T, float> || f32_blocks < t_blocks)
        launch(T{}, t_blocks);
      else
        launch(float{}, f32_blocks);
    }
  });
}

// ---- spare memory ----------------------------------------------------------------------------
// The backward's grad_x is written only by its last launch (the synthesis), so until then its
// memory can hold what a launch before reads and drops: the weight gradient's coefficients of x,
// the level tail's per-slice sums. That keeps those out of the backward's peak
// (docs/fused-wtconv.md, section 15).

/// spare's first `bytes` bytes when spare (dense, or undefined: none) has that many and is 16-byte
/// aligned; else null.
void* spare_bytes(const Tensor& spare, size_t bytes) {
  if (!spare.defined() || !spare.is_contiguous() || spare.nbytes() < bytes ||
      !aligned16(spare.data_ptr()))
    return nullptr;
  return spare.data_ptr();
}

/// A tensor of `shape` and storage T in spare's memory (spare of storage T) when it holds one
/// (spare_bytes); else a new workspace tensor.
template <typename T>
Tensor in_spare(const Tensor& spare, const Shape& shape) {
  const int64_t n = shape_numel(shape);
  if (spare.defined() && spare.dtype() == dtype_of_storage<T>() &&
      spare_bytes(spare, size_t(n) * sizeof(T)) != nullptr)
    return spare.reshape({-1}).slice(0, 0, n).reshape(shape);
  return workspace_of<T>(shape);
}

/// The base conv's parameters and their gradients, for a whole-plane backward of a whole layer.
struct PlaneBaseGrads {
  const float *bw, *bb, *bs;
  float *gbw, *gbb, *gbs;
};

/// One whole-plane backward over (x, G) (B, H, W, C): plane_backward_kernel, then the
/// deterministic reduction of its per-slice sums into lp's level gradients (lp from the plane's
/// first level on) and, for a whole layer (g.base), into base's. wb, wl: the flipped folded
/// filters; gout as plane_backward_kernel's gx. The per-slice sums go into `spare`'s memory when
/// it holds them (a tensor nobody reads or writes until the reduction is done; not gout's), else
/// into a new workspace tensor.
template <typename T>
void plane_backward(const T* x, const T* G, int B, int C, const PlaneGeom& g, const float* wb,
                    const T* wl, PlaneOut<T> gout, const LevelParams& lp,
                    const PlaneBaseGrads& base, const Tensor& spare = Tensor()) {
  const int L = g.L, KK = g.K * g.K, groups = (C + 31) / 32, planes = g.base + 4 * L;
  const size_t smem = plane_bwd_layout<T>(g).bytes;
  dispatch_k(g.K, [&](auto kt) {
    constexpr int KT = decltype(kt)::value;
    if constexpr (plane_k<KT>) {
      const auto kernel =
          g.base ? plane_backward_kernel<T, KT, true> : plane_backward_kernel<T, KT, false>;
      const int per_sm =  // also opts the kernel in to more than 48 KB of shared memory
          hg::cuda::resident_blocks(reinterpret_cast<const void*>(kernel), 32 * kPlaneWarps, smem);
      // Images per block: enough blocks for about two waves of resident blocks (one wave of
      // blocks taking several images each was slower, 112 -> 118 us at 384/14/3 bf16, B = 64,
      // twenty-second session: their phases stay in step; two images a block at B = 128, by
      // rounding up, left WTConvNeXt-T's step where it was, 25.37 against 25.38 ms); fewer slices
      // keep the weight-gradient partials (slices, NE, C) small. Fixed for a device and shape, so
      // the summation order (and the result) is the same run to run.
      const int64_t resident = device_resident(per_sm);
      const int ipb = int(std::max<int64_t>(1, int64_t(B) * groups / (2 * resident)));
      const int slices = (B + ipb - 1) / ipb;
      const Shape ps{slices, planes * KK + g.base, C};
      float* sums = static_cast<float*>(spare_bytes(spare, shape_numel(ps) * sizeof(float)));
      Tensor partial;  // only when spare does not hold the sums
      if (sums == nullptr) {
        partial = workspace(ps);
        sums = partial.data<float>();
      }
      kernel<<<dim3(unsigned(groups), unsigned(slices)), 32 * kPlaneWarps, smem,
               hg::cuda::stream()>>>(x, G, B, C, ipb, g, wb, wl, sums, gout.y, gout.rec,
                                     gout.scale);
      HG_CUDA_LAUNCH_CHECK();
      const auto reduce = plane_wgrad_reduce_kernel<KT>;
      hg::cuda::allow_max_dynamic_smem(reinterpret_cast<const void*>(reduce));
      reduce<<<dim3(unsigned(planes), unsigned(groups)), dim3(32, kPlaneWarps),
               plane_reduce_smem<KT>(), hg::cuda::stream()>>>(
          sums, slices, C, L, g.base, base.bw, base.bb, base.bs, base.gbw, base.gbb, base.gbs, lp);
      HG_CUDA_LAUNCH_CHECK();
    }
  });
}

template <typename T>
bool try_plane_forward(const Tensor& xc, const WTConvWeights& w, int stride, int K,
                       const Tensor& y) {
  const int B = int(xc.size(0)), H = int(xc.size(1)), W = int(xc.size(2)), C = int(xc.size(3));
  PlaneGeom g;
  if (!plane_takes<T>(B, H, W, K, w.levels(), stride, /*backward=*/false, /*base=*/true, &g))
    return false;
  const Folded f = fold<T>(w, C, K, /*backward=*/false, /*levels=*/false, /*plane=*/true);
  plane_forward<T>(typed<T>(xc), B, C, g, f.base_w.data<float>(), f.base_b.data<float>(),
                   typed<T>(f.plane), PlaneOut<T>{typed<T>(y), nullptr, 1.f});
  return true;
}

template <typename T>
bool try_plane_backward(const Tensor& xc, const Tensor& G, const WTConvWeights& w, int stride,
                        int K, const Tensor& gx, WTConvGrads& g) {
  const int B = int(xc.size(0)), H = int(xc.size(1)), W = int(xc.size(2)), C = int(xc.size(3));
  PlaneGeom pg;
  if (!plane_takes<T>(B, H, W, K, w.levels(), stride, /*backward=*/true, /*base=*/true, &pg))
    return false;
  const Folded f = fold<T>(w, C, K, /*backward=*/true, /*levels=*/false, /*plane=*/true);
  g.base_weight = Tensor::empty(w.base_weight.shape(), DType::f32, Device::cuda);
  g.base_bias = Tensor::empty(w.base_bias.shape(), DType::f32, Device::cuda);
  g.base_scale = Tensor::empty(w.base_scale.shape(), DType::f32, Device::cuda);
  const LevelParams lp = level_params(w, &g);
  const PlaneBaseGrads base{w.base_weight.data<float>(), w.base_bias.data<float>(),
                            w.base_scale.data<float>(),  g.base_weight.data<float>(),
                            g.base_bias.data<float>(),   g.base_scale.data<float>()};
  plane_backward<T>(typed<T>(xc), typed<T>(G), B, C, pg, f.base_w.data<float>(), typed<T>(f.plane),
                    PlaneOut<T>{gx.defined() ? typed<T>(gx) : nullptr, nullptr, 1.f}, lp, base);
  if (gx.defined()) g.x = gx;
  return true;
}

// ---- the split path's level tail
// ----------------------------------------------------------------- Below the first LL band small
// enough for the whole-plane kernels (14 x 14: level 1 of a 28 x 28 map, level 2 of a 56 x 56 one),
// the split path's levels are a WTConv of their own without a base conv: the plane kernels run them
// as one launch each way (wtconv_plane.cuh, PlaneOut) instead of a Haar pass and a level conv
// (forward) or two Haar passes, a level conv and a weight gradient (backward) per level, each a
// short latency-bound launch. Their output is a term of the synthesis (wtconv_vec.cuh, LevelTail),
// which the staged and the 4-channel synthesis kernels read, so the tail runs only where one of
// them takes the shape (C % 4 == 0, aligned tensors).

/// lp from level s on: the level tail's levels as the plane kernels number them.
LevelParams levels_from(const LevelParams& lp, int s) {
  LevelParams t{};
  for (int l = s; l < kMaxLevels; ++l) {
    t.ww[l - s] = lp.ww[l];
    t.ws[l - s] = lp.ws[l];
    t.gww[l - s] = lp.gww[l];
    t.gws[l - s] = lp.gws[l];
  }
  return t;
}

/// The first level s >= 1 whose LL band (grid d[s]) the whole-plane kernels take as a level tail
/// of L - s levels (its geometry in *g), when the synthesis of in into out (B, d[0], C, stride 1)
/// can read a tail's term (the staged or the 4-channel kernel); L (no tail) otherwise.
template <typename T>
int tail_level(const T* in, const T* out, int B, int C, int K,
               const std::vector<std::pair<int, int>>& d, int L, bool backward, PlaneGeom* g) {
  if (!synth_staged_takes(in, B, d[0].first, d[0].second, C, K, out) &&
      !synth_vec_takes(in, C, K, out))
    return L;
  for (int s = 1; s < L; ++s)
    if (plane_takes<T>(B, d[s].first, d[s].second, K, L - s, 1, backward, /*base=*/false, g))
      return s;
  return L;
}

/// A tail's output r = 2^-s rec_s, f32 (B, d[s], C).
Tensor tail_output(int B, std::pair<int, int> grid, int C, int s, LevelTail* tail) {
  Tensor r = workspace({B, grid.first, grid.second, C});
  *tail = LevelTail{r.data<float>(), s, grid.first, grid.second};
  return r;
}

// ---- the level convolutions with materialised coefficients ("split") ----------------------------
// Forming the Haar coefficients inside the conv re-forms each one K times per row and
// (TQ + K - 1) / TQ times along it; on the H200 that arithmetic, not memory traffic, bounded the
// level convs. Writing each level's coefficients once (n_l reads, n_l writes) and running the
// depthwise kernels of depthwise_conv.cu on them as a 4C-channel NHWC tensor is faster there
// (docs/fused-wtconv.md, section 7; the on-the-fly kernels are in the lab, dev/wtconv/). The
// coefficients, the level outputs and the level gradients have the layer's storage type T, as
// autocast would store these conv inputs and outputs: the bf16 level convs are the depthwise
// kernels' bf16 instantiations (f32 accumulation; their filters, the folded f32 weights, rounded
// to bf16 as kernels/conv2d.h states).

/// The depthwise conv of one level: 4C channels (4c+s) on the (hp, wp) grid, "same" padding.
Conv2dShape level_shape(int B, int hp, int wp, int C, int K) {
  return make_conv2d_shape(B, hp, wp, 4 * C, 4 * C, K, K, 1, K / 2, 4 * C);
}

/// A level's next LL band (B, grid, C) of storage T into *band, when band is given (the callers'
/// optional outputs); its data, or null.
template <typename T>
T* ll_band(Tensor* band, int B, std::pair<int, int> grid, int C) {
  if (band == nullptr) return nullptr;
  *band = workspace_of<T>({B, grid.first, grid.second, C});
  return typed<T>(*band);
}

/// H(src) on grid `out` from src (B, in): coefficients (B, out.h, out.w, 4, C) as sub-band planes
/// (in `spare`'s memory when it holds them, see in_spare); the (rounded) LL into *ll_next if
/// given. src and both outputs have storage type T.
template <typename T>
Tensor haar(const T* src, int B, int C, std::pair<int, int> in, std::pair<int, int> out,
            Tensor* ll_next, const Tensor& spare = Tensor()) {
  Tensor coef = in_spare<T>(spare, {B, out.first, out.second, 4, C});
  T* lln = ll_band<T>(ll_next, B, out, C);
  T* cp = typed<T>(coef);
  if (C % 4 == 0 && aligned4<T>(src) && aligned4<T>(cp) && (!lln || aligned4<T>(lln))) {
    const int64_t n = int64_t(B) * out.first * out.second * (C / 4);
    haar_v4_kernel<T><<<blocks_for(n), 256, 0, hg::cuda::stream()>>>(
        src, B, in.first, in.second, C, out.first, out.second, cp, lln);
  } else {
    HaarSrc<T> hs{src, in.first, in.second, C, out.first, out.second};
    haar_kernel<<<blocks_for(int64_t(B) * out.first * out.second * C), 256, 0,
                  hg::cuda::stream()>>>(hs, B, cp, lln);
  }
  HG_CUDA_LAUNCH_CHECK();
  return coef;
}

/// Blocks of haar_conv_kernel or haar_wgrad_kernel a multiprocessor must hold for the kernel to be
/// taken: two for f32, whose tiles are twice bf16's (at a 28-wide level grid one f32 block would
/// fill a multiprocessor, nothing hiding its staging behind another block's taps; at 14 wide two
/// fit, and the 192/28/4 step was 11% faster than with the two launches each, twenty-ninth
/// session).
template <typename T>
constexpr size_t min_haar_blocks() {
  return std::is_same_v<T, float> ? 2 : 1;
}

/// Whether haar_conv_kernel takes a level: src (B, in, C) of storage T, the level grid out, filters
/// of size K. K = 3, 5, 7, C % 8 == 0 and a 16-byte aligned src (a null src stands for an aligned
/// one), with min_haar_blocks<T>() blocks' staged tiles within the shared memory.
template <typename T>
bool haar_conv_takes(const T* src, int B, int C, int K, std::pair<int, int> out) {
  return (K == 3 || K == 5 || K == 7) && C % 8 == 0 && (src == nullptr || aligned16(src)) &&
         haar_conv_smem<T>(K, out.second) * min_haar_blocks<T>() <= hg::cuda::max_dynamic_smem() &&
         haar_conv_groups(B, out.first) <= INT32_MAX && (C + 31) / 32 <= 65535;
}

/// One level's Haar pass and conv in one launch (haar_conv_kernel): *t = conv(H(src), w) as
/// sub-band planes (B, out, 4, C), the coefficient planes H(src) into *coef and the LL band into
/// *ll_next when those are given (each allocated here), src (B, in, C); w the level's (4C, K*K)
/// folded filters. Taken where haar_conv_takes; returns false, having done nothing, otherwise.
template <typename T>
bool try_haar_conv(const T* src, int B, int C, int K, std::pair<int, int> in,
                   std::pair<int, int> out, const float* w, Tensor* t, Tensor* coef,
                   Tensor* ll_next) {
  if (src == nullptr || !haar_conv_takes(src, B, C, K, out)) return false;
  const int hp = out.first, wp = out.second;
  const size_t smem = haar_conv_smem<T>(K, wp);
  const int64_t groups = haar_conv_groups(B, hp);
  *t = workspace_of<T>({B, hp, wp, 4, C});
  T* cp = nullptr;
  if (coef != nullptr) {
    *coef = workspace_of<T>({B, hp, wp, 4, C});
    cp = typed<T>(*coef);
  }
  T* lln = ll_band<T>(ll_next, B, out, C);
  HG_CHECK(aligned16(typed<T>(*t)) && (!cp || aligned16(cp)) && (!lln || aligned16(lln)),
           "wtconv (cuda, fused): a workspace tensor is not 16-byte aligned");
  const HaarConvDims hd{B, in.first, in.second, C, hp, wp};
  dispatch_k(K, [&](auto kt) {
    constexpr int KT = decltype(kt)::value;
    if constexpr (KT == 3 || KT == 5 || KT == 7) {
      const auto kernel = haar_conv_kernel<T, KT>;
      hg::cuda::allow_max_dynamic_smem(reinterpret_cast<const void*>(kernel));
      kernel<<<dim3(unsigned(groups), unsigned((C + 31) / 32)), dim3(32, kHaarConvWarps), smem,
               hg::cuda::stream()>>>(src, hd, w, typed<T>(*t), cp, lln);
      HG_CUDA_LAUNCH_CHECK();
    }
  });
  return true;
}

/// Whether haar_wgrad_kernel takes a level's weight gradient: x's and G's level inputs of storage
/// T (16-byte aligned), the level grid out, filters of size K: K = 3, 5, 7, C % 8 == 0,
/// min_haar_blocks<T>() blocks' tiles within the shared memory.
template <typename T>
bool haar_wgrad_takes(const T* xsrc, const T* gsrc, int B, int C, int K, std::pair<int, int> out) {
  return (K == 3 || K == 5 || K == 7) && C % 8 == 0 && aligned16(xsrc) && aligned16(gsrc) &&
         haar_wgrad_smem<T>(K, out.second) * min_haar_blocks<T>() <= hg::cuda::max_dynamic_smem() &&
         haar_wgrad_groups(B, out.first) <= INT32_MAX && (C + 31) / 32 <= 65535;
}

/// A level's folded-weight gradient into sums (4C, K*K), from xsrc = ll_l and gsrc = gR_l (B, in,
/// C) in one launch (haar_wgrad_kernel) and the slices' reduction, and x's next LL band into
/// *xnext when given (allocated here). Where haar_wgrad_takes only.
template <typename T>
void haar_wgrad(const T* xsrc, const T* gsrc, int B, int C, int K, std::pair<int, int> in,
                std::pair<int, int> out, float* sums, Tensor* xnext) {
  const int hp = out.first, wp = out.second, KK = K * K, chunks = (C + 31) / 32;
  const size_t smem = haar_wgrad_smem<T>(K, wp);
  const int64_t groups = haar_wgrad_groups(B, hp);
  T* lln = ll_band<T>(xnext, B, out, C);
  HG_CHECK(!lln || aligned16(lln),
           "wtconv (cuda, fused): a workspace tensor is not 16-byte aligned");
  const HaarConvDims hd{B, in.first, in.second, C, hp, wp};
  dispatch_k(K, [&](auto kt) {
    constexpr int KT = decltype(kt)::value;
    if constexpr (KT == 3 || KT == 5 || KT == 7) {
      const auto kernel = haar_wgrad_kernel<T, KT>;
      hg::cuda::allow_max_dynamic_smem(reinterpret_cast<const void*>(kernel));
      // Slices: one wave of the blocks that fit at once, each walking a run of groups (its
      // x rows kept from group to group); measured against two and four waves (more blocks,
      // staggered starts), which were 0.3% slower on WTConvNeXt-T (docs/perf-notes.md,
      // twenty-eighth session). A function of the shape and the device only, so the sums are
      // added in the same order run to run.
      const int per_sm =
          std::max(1, hg::cuda::resident_blocks(reinterpret_cast<const void*>(kernel),
                                                32 * kHaarWgradWarps, smem));
      const int64_t want =
          std::max<int64_t>(1, int64_t(per_sm) * hg::cuda::multiprocessor_count() / chunks);
      const int64_t per = (groups + std::min(groups, want) - 1) / std::min(groups, want);
      const int slices = int((groups + per - 1) / per);
      const Tensor partial = workspace({slices, 4 * C, KK});
      kernel<<<dim3(unsigned(slices), unsigned(chunks)), dim3(32, kHaarWgradWarps), smem,
               hg::cuda::stream()>>>(xsrc, gsrc, hd, int(per), partial.data<float>(), lln);
      HG_CUDA_LAUNCH_CHECK();
      reduce_slices(partial.data<float>(), slices, int64_t(4) * C * KK, sums);
    }
  });
}

/// t_l = conv(H(ll_l), s_l w_l) for the levels l < s, ll_0 = in, t_l (B, hp, wp, 4, C) of storage
/// T; with a level tail (s < L, of geometry tg) levels s .. L-1 as one plane launch over ll_s into
/// the returned tail output (described in *tail; none: an undefined tensor and tail->r null).
/// f: the forward's folded weights, with the level filters the levels need (f.levels for l < s,
/// f.plane for a tail).
template <typename T>
Tensor analysis_convs_split(const T* in, int B, int C, int K,
                            const std::vector<std::pair<int, int>>& d, const Folded& f, int L,
                            int s, const PlaneGeom& tg, std::vector<Tensor>& t, LevelTail* tail) {
  const int KK = K * K;
  t.assign(s, Tensor());
  *tail = LevelTail{};
  if (L == 0) return Tensor();
  Tensor ll;  // keeps the current level's input (levels >= 1) alive; after the loop, ll_s
  for (int l = 0; l < s; ++l) {
    Tensor next;
    const T* src = l == 0 ? in : typed<T>(ll);
    const float* wll = f.levels.data<float>() + int64_t(l) * 4 * C * KK;
    if (!try_haar_conv(src, B, C, K, d[l], d[l + 1], wll, &t[l], nullptr,
                       l + 1 < L ? &next : nullptr)) {
      const Tensor coef = haar(src, B, C, d[l], d[l + 1], l + 1 < L ? &next : nullptr);
      t[l] = workspace_of<T>({B, d[l + 1].first, d[l + 1].second, 4, C});
      depthwise_conv_forward(level_shape(B, d[l + 1].first, d[l + 1].second, C, K),
                             host_typed<T>(coef), wll, nullptr, host_typed<T>(t[l]));
    }
    ll = next;
  }
  if (s == L) return Tensor();
  const Tensor r = tail_output(B, d[s], C, s, tail);
  plane_forward<T>(typed<T>(ll), B, C, tg, nullptr, nullptr,
                   typed<T>(f.plane) + int64_t(s) * KK * 4 * C,
                   PlaneOut<T>{nullptr, r.data<float>(), std::ldexp(1.f, -s)});
  return r;
}

/// One level of level_grads_split: gsrc = gR_l and xsrc = ll_l (B, d[l]); wlf the level's folded
/// weights flipped (4C, K*K), only with gt; sums where its folded-weight gradient goes (4C, K*K).
/// The level gradient gt = conv^T(gc, w~) is the forward conv with the flipped filters: at K = 3,
/// 5, 7 the very staged kernel backward data runs, and in every variant one tap order (row-major
/// over the flipped filter), which the bf16 CPU reference reproduces before it rounds gt
/// (kernels/cpu/wtconv_fused.cpp; f32 needs no such care, nothing rounds between the taps);
/// backward data's tile kernel sums the taps in the opposite order. (f32 ran the depthwise backward
/// data with the plain filters until the twenty-ninth session, when f32 began to take the Haar
/// kernels.) Where haar_wgrad_takes (with gt), the weight gradient forms H(xsrc) and H(gsrc)
/// itself and neither is stored. Otherwise H(xsrc), which only the weight gradient reads, goes into
/// `spare` when it fits (grad_x, written only by the synthesis after every level: at level 0 that
/// saves an N-element tensor of the backward's peak, where gt_0, H(G) and H(x) live at once).
template <typename T>
void level_grads_split_one(const T* gsrc, const T* xsrc, int B, int C, int K, int l,
                           const std::vector<std::pair<int, int>>& d, const float* wlf, Tensor* gt,
                           Tensor* gnext, Tensor* xnext, float* sums, const Tensor& spare) {
  const int hp = d[l + 1].first, wp = d[l + 1].second;
  const Conv2dShape cs = level_shape(B, hp, wp, C, K);
  // with grad_x: gt and G's next LL band in one launch over G, and the weight gradient in
  // one launch over x and G that forms both coefficient sets on the fly: neither H(G) nor H(x) is
  // stored (2 N elements less at level 0)
  if (gt != nullptr && wlf != nullptr && haar_conv_takes(gsrc, B, C, K, d[l + 1]) &&
      haar_wgrad_takes(xsrc, gsrc, B, C, K, d[l + 1])) {
    HG_CHECK(try_haar_conv(gsrc, B, C, K, d[l], d[l + 1], wlf, gt, nullptr, gnext),
             "wtconv (cuda, fused): haar_conv_kernel refused a level it takes");
    haar_wgrad(xsrc, gsrc, B, C, K, d[l], d[l + 1], sums, xnext);
    return;
  }
  Tensor gc;
  // where only haar_conv takes the level: gc = H(gR_l) and gt in one launch (gc still written:
  // the weight gradient reads it)
  const bool fused = gt != nullptr && wlf != nullptr &&
                     try_haar_conv(gsrc, B, C, K, d[l], d[l + 1], wlf, gt, &gc, gnext);
  if (!fused) {
    gc = haar(gsrc, B, C, d[l], d[l + 1], gnext);
    if (gt != nullptr) {
      *gt = workspace_of<T>({B, hp, wp, 4, C});
      depthwise_conv_forward(cs, host_typed<T>(gc), wlf, nullptr, host_typed<T>(*gt));
    }
  }
  const Tensor xcoef = haar(xsrc, B, C, d[l], d[l + 1], xnext, spare);
  depthwise_conv_backward_weight(cs, host_typed<T>(xcoef), host_typed<T>(gc), sums, nullptr);
}

/// Level weight gradients (and, with gt, the level gradients dL/dc_l the synthesis of grad_x
/// needs), one level at a time so only one level's coefficient tensors live at once: gc_l = H(gR_l)
/// = dL/dt_l, gt_l = conv^T(gc_l, w~_l), dL/dw~_l = wgrad(H(ll_l), gc_l), for the levels l < s;
/// with a level tail (s < L, of geometry tg) levels s .. L-1 as one plane launch over ll_s and
/// gR_s (and its reduction), whose term of the G synthesis (when gt is given) is the returned
/// tail output, described in *tail. x and G are the layer's input and output gradient; every
/// tensor here has their storage T. `spare`: memory free until the caller's synthesis (grad_x, or
/// undefined), where each level's H(ll_l) goes when it fits.
template <typename T>
Tensor level_grads_split(const T* x, const T* G, int B, int C, int K,
                         const std::vector<std::pair<int, int>>& d, const WTConvWeights& w,
                         const Folded& f, int s, const PlaneGeom& tg, std::vector<Tensor>* gt,
                         WTConvGrads& g, LevelTail* tail, const Tensor& spare) {
  const int L = w.levels(), KK = K * K;
  const int64_t per = int64_t(4) * C * KK;  // one level's folded weights
  if (gt != nullptr) gt->assign(s, Tensor());
  *tail = LevelTail{};
  if (L == 0) return Tensor();
  const LevelParams lp = level_params(w, &g);  // every level's gradient tensors
  // the level gradients' filters (f.levels, folded and flipped for this pass)
  const float* levels = gt != nullptr ? f.levels.data<float>() : nullptr;
  const Tensor sums = workspace({s, 4 * C, KK});
  Tensor gR, ll;  // keep the current level's inputs alive; after the loop, gR_s and ll_s
  for (int l = 0; l < s; ++l) {
    Tensor gnext, xnext;
    Tensor* gtl = gt != nullptr ? &(*gt)[l] : nullptr;
    Tensor* gn = l + 1 < L ? &gnext : nullptr;
    Tensor* xn = l + 1 < L ? &xnext : nullptr;
    const float* wlf = levels ? levels + l * per : nullptr;
    float* sl = sums.data<float>() + l * per;
    level_grads_split_one(l == 0 ? G : typed<T>(gR), l == 0 ? x : typed<T>(ll), B, C, K, l, d, wlf,
                          gtl, gn, xn, sl, spare);
    gR = gnext;
    ll = xnext;
  }
  // the split levels' wavelet_weight and wavelet_scale gradients, unfolded in one launch
  unfold_levels_kernel<<<unsigned((int64_t(s) * 4 * C + kUnfoldWarps - 1) / kUnfoldWarps),
                         32 * kUnfoldWarps, 0, hg::cuda::stream()>>>(lp, sums.data<float>(), s, C,
                                                                     KK);
  HG_CUDA_LAUNCH_CHECK();
  if (s == L) return Tensor();
  const Tensor r = gt != nullptr ? tail_output(B, d[s], C, s, tail) : Tensor();
  plane_backward<T>(
      typed<T>(ll), typed<T>(gR), B, C, tg, nullptr, typed<T>(f.plane) + int64_t(s) * KK * 4 * C,
      PlaneOut<T>{nullptr, r.defined() ? r.data<float>() : nullptr, std::ldexp(1.f, -s)},
      levels_from(lp, s), PlaneBaseGrads{}, spare);
  return r;
}

template <typename T>
void fused_forward_t(const Tensor& xc, const WTConvWeights& w, int stride, int K, const Tensor& y) {
  const int B = int(xc.size(0)), H = int(xc.size(1)), W = int(xc.size(2)), C = int(xc.size(3));
  const int Ho = (H + stride - 1) / stride, Wo = (W + stride - 1) / stride, L = w.levels();
  if (try_plane_forward<T>(xc, w, stride, K, y)) return;
  const auto d = level_dims(H, W, L);
  PlaneGeom tg{};
  const int s = stride == 1 ? tail_level<T>(typed<T>(xc), typed<T>(y), B, C, K, d, L,
                                            /*backward=*/false, &tg)
                            : L;
  const Folded f = fold<T>(w, C, K, /*backward=*/false, /*levels=*/s > 0, /*plane=*/s < L);
  std::vector<Tensor> t;
  LevelTail tail;
  const Tensor r = analysis_convs_split(typed<T>(xc), B, C, K, d, f, L, s, tg, t, &tail);
  synthesis(typed<T>(xc), B, H, W, C, Ho, Wo, stride, K, f, t, tail, typed<T>(y));
}

Tensor fused_forward(const Tensor& x, const WTConvWeights& w, int stride, const Tensor& out) {
  const char* op = "wtconv_forward (cuda, fused)";
  const int K = check_inputs(op, x, w, stride);
  const int64_t Ho = (x.size(1) + stride - 1) / stride, Wo = (x.size(2) + stride - 1) / stride;
  const Tensor y = output_tensor(op, "out", {x.size(0), Ho, Wo, x.size(3)}, x.dtype(), out);
  const Tensor xc = x.contiguous();
  HG_DISPATCH_CUDA(x.dtype(), op,
                   [&] { fused_forward_t<device_t<scalar_t>>(xc, w, stride, K, y); });
  return y;
}

/// Gradients of the base path: its folded-weight gradient, unfolded into base_weight, base_bias
/// and base_scale gradients (f32 for either storage type T of x and G).
template <typename T>
void base_grads(const Tensor& xc, const Tensor& G, int B, int H, int W, int C, int K,
                const WTConvWeights& w, WTConvGrads& g) {
  const int KK = K * K;
  // the base path's folded-weight gradient is a plain depthwise weight gradient of x against G
  // (stride 1, "same" padding): the hand-written deterministic kernel of depthwise_conv.cu, which
  // takes f32 or bf16 activations and accumulates in f32
  const Conv2dShape cs = make_conv2d_shape(B, H, W, C, C, K, K, 1, K / 2, C);
  const Tensor sums = workspace({C, KK}), bias = workspace({C});
  depthwise_conv_backward_weight(cs, host_typed<T>(xc), host_typed<T>(G), sums.data<float>(),
                                 bias.data<float>());
  g.base_weight = Tensor::empty(w.base_weight.shape(), DType::f32, Device::cuda);
  g.base_bias = Tensor::empty(w.base_bias.shape(), DType::f32, Device::cuda);
  g.base_scale = Tensor::empty(w.base_scale.shape(), DType::f32, Device::cuda);
  unfold_base_kernel<<<unsigned((C + kUnfoldWarps - 1) / kUnfoldWarps), 32 * kUnfoldWarps, 0,
                       hg::cuda::stream()>>>(
      sums.data<float>(), bias.data<float>(), w.base_weight.data<float>(),
      w.base_bias.data<float>(), w.base_scale.data<float>(), C, KK, g.base_weight.data<float>(),
      g.base_bias.data<float>(), g.base_scale.data<float>());
  HG_CUDA_LAUNCH_CHECK();
}

template <typename T>
WTConvGrads fused_backward_t(const Tensor& xc, const WTConvWeights& w, const Tensor& grad_y,
                             int stride, int K, const Tensor& gx) {
  const int B = int(xc.size(0)), H = int(xc.size(1)), W = int(xc.size(2)), C = int(xc.size(3));
  const int Ho = (H + stride - 1) / stride, Wo = (W + stride - 1) / stride, L = w.levels();
  Tensor G = grad_y.contiguous();
  if (stride > 1) {
    Tensor up = scratch_tensor({B, H, W, C}, G.dtype());
    upsample_kernel<T><<<blocks_for(up.numel()), 256, 0, hg::cuda::stream()>>>(
        typed<T>(G), B, H, W, C, Ho, Wo, stride, typed<T>(up));
    HG_CUDA_LAUNCH_CHECK();
    G = up;
  }
  WTConvGrads g;
  if (try_plane_backward<T>(xc, G, w, stride, K, gx, g)) return g;
  const auto d = level_dims(H, W, L);
  PlaneGeom tg{};
  const int s = tail_level<T>(typed<T>(G), gx.defined() ? typed<T>(gx) : typed<T>(G), B, C, K, d, L,
                              /*backward=*/true, &tg);
  // one fold for the whole backward: the base filter (grad_x's synthesis), the level filters
  // of grad_x's level gradients (only with grad_x) and the tail's
  const Folded f =
      fold<T>(w, C, K, /*backward=*/true, /*levels=*/s > 0 && gx.defined(), /*plane=*/s < L);
  std::vector<Tensor> gt;
  LevelTail tail;
  const Tensor r = level_grads_split(typed<T>(xc), typed<T>(G), B, C, K, d, w, f, s, tg,
                                     gx.defined() ? &gt : nullptr, g, &tail, gx);
  if (gx.defined()) synthesis(typed<T>(G), B, H, W, C, H, W, 1, K, f, gt, tail, typed<T>(gx));
  base_grads<T>(xc, G, B, H, W, C, K, w, g);
  if (gx.defined()) g.x = gx;
  return g;
}

WTConvGrads fused_backward(const Tensor& x, const WTConvWeights& w, const Tensor& grad_y,
                           int stride, bool need_grad_x, const Tensor& grad_x_out) {
  const char* op = "wtconv_backward (cuda, fused)";
  const int K = check_inputs(op, x, w, stride);
  check_grad_y(op, x, grad_y, stride);
  const Tensor gx =
      need_grad_x ? output_tensor(op, "grad_x_out", x.shape(), x.dtype(), grad_x_out) : Tensor();
  const Tensor xc = x.contiguous();
  WTConvGrads g;
  HG_DISPATCH_CUDA(x.dtype(), op,
                   [&] { g = fused_backward_t<device_t<scalar_t>>(xc, w, grad_y, stride, K, gx); });
  return g;
}

}  // namespace
}  // namespace wtconv_detail

bool wtconv_plane_path(const Shape& x, int K, int levels, int stride, DType dtype, bool backward) {
  HG_CHECK(x.size() == 4, "wtconv_plane_path: x must be (B, H, W, C), got ", shape_str(x));
  HG_CHECK(dtype == DType::f32 || dtype == DType::bf16, "wtconv_plane_path: f32 or bf16, got ",
           dtype_name(dtype));
  HG_CHECK(levels >= 0 && levels <= wtconv_detail::kMaxLevels, "wtconv_plane_path: 0 to ",
           wtconv_detail::kMaxLevels, " levels on cuda, got ", levels);
  const int B = int(x[0]), H = int(x[1]), W = int(x[2]);
  wtconv_detail::PlaneGeom g;
  return dtype == DType::bf16
             ? wtconv_detail::plane_takes<__nv_bfloat16>(B, H, W, K, levels, stride, backward, true,
                                                         &g)
             : wtconv_detail::plane_takes<float>(B, H, W, K, levels, stride, backward, true, &g);
}

int wtconv_tail_level(const Shape& x, int K, int levels, DType dtype, bool backward) {
  HG_CHECK(x.size() == 4, "wtconv_tail_level: x must be (B, H, W, C), got ", shape_str(x));
  HG_CHECK(dtype == DType::f32 || dtype == DType::bf16, "wtconv_tail_level: f32 or bf16, got ",
           dtype_name(dtype));
  HG_CHECK(levels >= 0 && levels <= wtconv_detail::kMaxLevels, "wtconv_tail_level: 0 to ",
           wtconv_detail::kMaxLevels, " levels on cuda, got ", levels);
  const auto d = wtconv_detail::level_dims(int(x[1]), int(x[2]), levels);
  wtconv_detail::PlaneGeom g;
  if (dtype == DType::f32) {
    const float* aligned = nullptr;  // stands for dense, 16-byte aligned tensors
    return wtconv_detail::tail_level(aligned, aligned, int(x[0]), int(x[3]), K, d, levels, backward,
                                     &g);
  }
  const __nv_bfloat16* aligned = nullptr;
  return wtconv_detail::tail_level(aligned, aligned, int(x[0]), int(x[3]), K, d, levels, backward,
                                   &g);
}

namespace {
/// wtconv_haar_conv_from for storage T.
template <typename T>
int haar_conv_from(const Shape& x, int K, int levels) {
  const T* aligned = nullptr;  // stands for dense, 16-byte aligned tensors
  const int B = int(x[0]), C = int(x[3]);
  const auto d = wtconv_detail::level_dims(int(x[1]), int(x[2]), levels);
  for (int l = 0; l < levels; ++l)  // grids shrink level by level: the first that fits, and on
    if (wtconv_detail::haar_conv_takes(aligned, B, C, K, d[l + 1]) &&
        wtconv_detail::haar_wgrad_takes(aligned, aligned, B, C, K, d[l + 1]))
      return l;
  return levels;
}
}  // namespace

int wtconv_haar_conv_from(const Shape& x, int K, int levels, DType dtype) {
  HG_CHECK(x.size() == 4, "wtconv_haar_conv_from: x must be (B, H, W, C), got ", shape_str(x));
  HG_CHECK(dtype == DType::f32 || dtype == DType::bf16, "wtconv_haar_conv_from: f32 or bf16, got ",
           dtype_name(dtype));
  HG_CHECK(levels >= 0 && levels <= wtconv_detail::kMaxLevels, "wtconv_haar_conv_from: 0 to ",
           wtconv_detail::kMaxLevels, " levels on cuda, got ", levels);
  return dtype == DType::bf16 ? haar_conv_from<__nv_bfloat16>(x, K, levels)
                              : haar_conv_from<float>(x, K, levels);
}

Tensor wtconv_forward(const Tensor& x, const WTConvWeights& w, int stride, WTConvMode mode,
                      const Tensor& out) {
  return mode == WTConvMode::fused ? wtconv_detail::fused_forward(x, w, stride, out)
                                   : wtconv_detail::unfused_forward(x, w, stride, out);
}

WTConvGrads wtconv_backward(const Tensor& x, const WTConvWeights& w, const Tensor& grad_y,
                            int stride, bool need_grad_x, WTConvMode mode,
                            const Tensor& grad_x_out) {
  return mode == WTConvMode::fused
             ? wtconv_detail::fused_backward(x, w, grad_y, stride, need_grad_x, grad_x_out)
             : wtconv_detail::unfused_backward(x, w, grad_y, stride, need_grad_x, grad_x_out);
}

}  // namespace hg::kernels::cuda
