// The fused WTConv2d's weights on the GPU: the scales folded into the filters, every filter a
// pass needs in one launch (fold_kernel, fold; transformation (c) of docs/fused-wtconv.md), and
// the base path's folded-weight gradient unfolded into the base_weight, base_bias and base_scale
// gradients (base_grads), in the same launch as the split path's level filters' gradients
// (wtconv_split.cu leaves their sums); the whole-plane kernels' reduction unfolds its own.
#include "core/cuda_stream.h"
#include "kernels/conv2d.h"
#include "kernels/cuda/wtconv_fused.cuh"
#include "kernels/depthwise_conv.h"

namespace hg::kernels::cuda::wtconv_detail {
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

// ---- gradients unfold from the folded weights ---------------------------------------------------
// In one launch for the split path's whole backward (the base's and the split levels' were two
// launches of a few microseconds each). One warp a filter (unfold_filter_warp), kUnfoldWarps a
// block: warps f < 4C s for the split levels, then one a base channel.
// Levels: ls.sums (s, 4C, K*K) in the sub-band-plane channel order e' = s*C + c (the depthwise
// weight gradients of the level convs); for PyTorch's e = 4c + s: dL/dww_l[e][k] = ws_l[e] *
// sums[l][e'][k], dL/dws_l[e] = sum_k sums[l][e'][k] * ww_l[e][k].
// Base: dL/dbw = bs * sums, dL/dbb = bs * gb~, dL/dbs = sum_k sums * bw + gb~ * bb, sums (C, K*K)
// in the layout of kernels::cuda::depthwise_conv_backward_weight.
struct BaseUnfold {
  const float *sums, *gbf, *bw, *bb, *bs;
  float *gbw, *gbb, *gbs;
};
__global__ void unfold_kernel(LevelParams lp, const float* __restrict__ level_sums, int s,
                              BaseUnfold base, int C, int KK) {
  const int f = int(blockIdx.x) * kUnfoldWarps + int(threadIdx.x) / 32;  // the warp's filter
  const bool lane0 = (threadIdx.x & 31) == 0;
  if (f < s * 4 * C) {
    const int l = f / (4 * C), e = f - l * 4 * C;
    const int ep = (e % 4) * C + e / 4;
    const float gs =
        unfold_filter_warp(level_sums + (int64_t(l) * 4 * C + ep) * KK, lp.ww[l] + int64_t(e) * KK,
                           lp.ws[l][e], KK, lp.gww[l] + int64_t(e) * KK);
    if (lane0) lp.gws[l][e] = gs;
    return;
  }
  const int c = f - s * 4 * C;
  if (c >= C) return;
  const float gs = unfold_filter_warp(base.sums + int64_t(c) * KK, base.bw + int64_t(c) * KK,
                                      base.bs[c], KK, base.gbw + int64_t(c) * KK);
  if (!lane0) return;
  base.gbb[c] = base.bs[c] * base.gbf[c];
  base.gbs[c] = fmaf(base.gbf[c], base.bb[c], gs);
}

}  // namespace

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

/// Gradients of the base path: its folded-weight gradient, unfolded into base_weight, base_bias
/// and base_scale gradients (f32 for either storage type T of x and G), in the same launch as the
/// split levels' wavelet_weight and wavelet_scale gradients from ls (level_grads_split).
template <typename T>
void base_grads(const Tensor& xc, const Tensor& G, int B, int H, int W, int C, int K,
                const WTConvWeights& w, WTConvGrads& g, const SplitLevelSums& ls) {
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
  const BaseUnfold base{sums.data<float>(),          bias.data<float>(),
                        w.base_weight.data<float>(), w.base_bias.data<float>(),
                        w.base_scale.data<float>(),  g.base_weight.data<float>(),
                        g.base_bias.data<float>(),   g.base_scale.data<float>()};
  const int64_t filters = int64_t(ls.s) * 4 * C + C;
  unfold_kernel<<<unsigned((filters + kUnfoldWarps - 1) / kUnfoldWarps), 32 * kUnfoldWarps, 0,
                  hg::cuda::stream()>>>(ls.lp, ls.s > 0 ? ls.sums.data<float>() : nullptr, ls.s,
                                        base, C, KK);
  HG_CUDA_LAUNCH_CHECK();
}

#define HG_INSTANTIATE(T)                                                            \
  template Folded fold<T>(const WTConvWeights&, int, int, bool, bool, bool);         \
  template void base_grads<T>(const Tensor&, const Tensor&, int, int, int, int, int, \
                              const WTConvWeights&, WTConvGrads&, const SplitLevelSums&);
HG_INSTANTIATE(float)
HG_INSTANTIATE(__nv_bfloat16)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cuda::wtconv_detail
