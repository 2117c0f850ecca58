// Internal to the CPU WTConv2d kernels (wtconv_reference.cpp, wtconv_fused.cpp,
// wtconv_dispatch.cpp): argument checks, per-level sizes, and the Haar butterfly. Not public.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/wtconv.h"

namespace hg::kernels::cpu::wtconv_detail {

/// Sizes of one WTConv2d call: its level grids (the WTConvLevels of H x W with L levels,
/// kernels/wtconv.h) and the rest. h[l], w[l] (l = 0..L) are the sizes of the raw low band ll_l
/// (h[0] = H); level l's coefficients (and its conv) live on the h[l+1] x w[l+1] grid,
/// h[l+1] = ceil(h[l] / 2) because ll_l is zero-padded to even size (docs/wtconv-operator.md).
struct Geometry : WTConvLevels {
  int64_t B = 0, H = 0, W = 0, C = 0;
  int K = 0, L = 0, stride = 1;
  int64_t Ho = 0, Wo = 0;  ///< output size: ceil(H / stride), ceil(W / stride)
};

/// Checks x (B, H, W, C) and every weight against the contract of kernels/wtconv.h (same dtype
/// f32/f64, or bf16 x with f32 weights; CPU, PyTorch shapes, K odd, at least one level,
/// stride >= 1); throws hg::Error naming `op` and the offending tensor's shape otherwise.
Geometry check_args(const char* op, const Tensor& x, const WTConvWeights& w, int stride);
/// Checks grad_y against the output shape of the call described by g.
void check_grad_y(const char* op, const Geometry& g, const Tensor& x, const Tensor& grad_y);

/// Dense (contiguous) copies of the weights, so kernels can index raw pointers.
struct DenseWeights {
  Tensor base_weight, base_bias, base_scale;
  std::vector<Tensor> wavelet_weight, wavelet_scale;
  explicit DenseWeights(const WTConvWeights& w);
};

/// Allocates the empty gradients for every parameter (same shapes / dtype as the weights).
WTConvGrads allocate_param_grads(const WTConvWeights& w);

/// Orthonormal Haar analysis of one 2x2 block (a b / c d), docs/wtconv-operator.md:
/// s0 = LL, s1 = top - bottom, s2 = left - right, s3 = diagonal; each divided by 2.
template <typename T>
inline void haar_analysis(T a, T b, T c, T d, T& s0, T& s1, T& s2, T& s3) {
  const T half = T(0.5);
  s0 = half * ((a + b) + (c + d));
  s1 = half * ((a + b) - (c + d));
  s2 = half * ((a - b) + (c - d));
  s3 = half * ((a - b) - (c - d));
}

/// True when a loop of about `work` multiply-adds is worth an OpenMP parallel region: tiny layers
/// (deep levels, tests) run faster on one thread than paying the fork/join, more so on a busy box.
inline bool worth_parallel(int64_t work) { return work >= (int64_t(1) << 16); }

/// Number of fixed work chunks for weight-gradient reductions. Fixed (not the thread count) so
/// partial sums are added in the same order on every machine: deterministic gradients.
inline int64_t reduction_chunks(int64_t rows) { return rows < 32 ? rows : 32; }

/// Where the fused op keeps its intermediates (kernels/wtconv.h): keep = in T (the f32 and f64
/// ops); bf16 = the bf16 op's (T = float): the coefficient planes, LL pyramids, level outputs and
/// level gradients rounded to bf16 where the CUDA kernels store them, the level filters rounded.
enum class Planes { keep, bf16 };

// Implementations, instantiated for float and double in their .cpp files. The reference order
// keeps every intermediate in T (also for the bf16 op, which runs it on the widened input); its
// forward fills `saved` when given, its backward reads `saved` when given (checked by the caller)
// instead of recomputing the forward.
template <typename T>
Tensor forward_reference(const Tensor& x, const WTConvWeights& w, const Geometry& g,
                         WTConvSaved* saved);
template <typename T>
WTConvGrads backward_reference(const Tensor& x, const WTConvWeights& w, const Tensor& grad_y,
                               const Geometry& g, bool need_grad_x, const WTConvSaved* saved);
template <typename T>
Tensor forward_fused(const Tensor& x, const WTConvWeights& w, const Geometry& g, Planes planes);
template <typename T>
WTConvGrads backward_fused(const Tensor& x, const WTConvWeights& w, const Tensor& grad_y,
                           const Geometry& g, bool need_grad_x, Planes planes);

}  // namespace hg::kernels::cpu::wtconv_detail
