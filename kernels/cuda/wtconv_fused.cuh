// What the files of the fused WTConv2d CUDA path share (internal; the public API is
// kernels/wtconv.h): wtconv_fused.cu (the entry points and the public functions) runs a pass out
// of wtconv_fold.cu (the folded weights, the base path's gradients), wtconv_synthesis.cu (the
// one-pass synthesis), wtconv_plane_host.cu (the whole-plane path's host code) and wtconv_split.cu
// (the split path's levels and level tail). Each function is documented where it is defined; the
// templates are explicitly instantiated there for T = float and __nv_bfloat16 (their kernels stay
// internal to that file). Compiled as C++17 by nvcc (see wtconv_common.cuh).
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "kernels/cuda/wtconv_common.cuh"
#include "kernels/cuda/wtconv_plane.cuh"
#include "kernels/cuda/wtconv_vec.cuh"
#include "kernels/wtconv.h"

namespace hg::kernels::cuda::wtconv_detail {

/// Warps a block of wtconv_fold.cu's unfold_kernel, one a filter.
constexpr int kUnfoldWarps = 8;

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

/// The split path's level filters' folded-weight gradients, left by level_grads_split for
/// base_grads to unfold: sums (s, 4C, K*K) of the split levels l < s, in the sub-band-plane
/// channel order e' = s*C + c, and the levels' parameters and gradient tensors (s = 0: none).
struct SplitLevelSums {
  Tensor sums;
  int s = 0;
  LevelParams lp{};
};

/// The base conv's parameters and their gradients, for a whole-plane backward of a whole layer.
struct PlaneBaseGrads {
  const float *bw, *bb, *bs;
  float *gbw, *gbb, *gbs;
};

// ---- wtconv_fold.cu: the folded weights, the base path's gradients
LevelParams level_params(const WTConvWeights& w, WTConvGrads* g);
template <typename T>
Folded fold(const WTConvWeights& w, int C, int K, bool backward, bool levels, bool plane);
template <typename T>
void base_grads(const Tensor& xc, const Tensor& G, int B, int H, int W, int C, int K,
                const WTConvWeights& w, WTConvGrads& g, const SplitLevelSums& ls);

// ---- wtconv_synthesis.cu: the one-pass synthesis
template <typename T>
bool synth_vec_takes(const T* in, int C, int K, const T* out);
template <typename T>
bool synth_staged_takes(const T* in, int B, int H, int W, int C, int K, const T* out);
template <typename T>
void synthesis(const T* in, int B, int H, int W, int C, int Ho, int Wo, int stride, int K,
               const Folded& f, const std::vector<Tensor>& t, const LevelTail& tail, T* out);

// ---- wtconv_plane_host.cu: the whole-plane path
template <typename T>
bool plane_takes(int B, int H, int W, int K, int L, int stride, bool backward, bool base,
                 PlaneGeom* g);
template <typename T>
void plane_forward(const T* x, int B, int C, const PlaneGeom& g, const float* wb, const float* bias,
                   const T* wl, PlaneOut<T> out);
template <typename T>
Tensor in_spare(const Tensor& spare, const Shape& shape);
template <typename T>
void plane_backward(const T* x, const T* G, int B, int C, const PlaneGeom& g, const float* wb,
                    const T* wl, PlaneOut<T> gout, const LevelParams& lp,
                    const PlaneBaseGrads& base, const Tensor& spare = Tensor());
template <typename T>
bool try_plane_forward(const Tensor& xc, const WTConvWeights& w, int stride, int K,
                       const Tensor& y);
template <typename T>
bool try_plane_backward(const Tensor& xc, const Tensor& G, const WTConvWeights& w, int stride,
                        int K, const Tensor& gx, WTConvGrads& g);

// ---- wtconv_split.cu: the split path's levels and level tail
// (d: the layer's level grids, kernels/wtconv.h)
template <typename T>
int tail_level(const T* in, const T* out, int B, int C, int K, const WTConvLevels& d, int L,
               bool backward, PlaneGeom* g);
template <typename T>
bool haar_conv_takes(const T* src, int B, int C, int K, LevelGrid out);
template <typename T>
bool haar_wgrad_takes(const T* xsrc, const T* gsrc, int B, int C, int K, LevelGrid out);
template <typename T>
Tensor analysis_convs_split(const T* in, int B, int C, int K, const WTConvLevels& d,
                            const Folded& f, int L, int s, const PlaneGeom& tg,
                            std::vector<Tensor>& t, LevelTail* tail);
template <typename T>
Tensor level_grads_split(const T* x, const T* G, int B, int C, int K, const WTConvLevels& d,
                         const WTConvWeights& w, const Folded& f, int s, const PlaneGeom& tg,
                         std::vector<Tensor>* gt, WTConvGrads& g, LevelTail* tail,
                         const Tensor& spare, SplitLevelSums* ls);

}  // namespace hg::kernels::cuda::wtconv_detail
