// WTConv2d kernels (Haar wavelet convolution, Finder et al. ECCV 2024; fused form after Aflalo et
// al. 2026). The operator is specified exactly in docs/wtconv-operator.md; this header is the
// contract between the layer (layers/wtconv.h) and its CPU and CUDA implementations.
//
// Layouts: x, y, grad_x, grad_y are NHWC (B, H, W, C). Parameters keep the PyTorch checkpoint
// layouts: base_weight (C, 1, K, K), base_bias (C), base_scale (1, C, 1, 1),
// wavelet_weight[l] (4C, 1, K, K), wavelet_scale[l] (1, 4C, 1, 1), l = 0..L-1; channel 4c+s of a
// wavelet tensor is sub-band s of input channel c. K odd, "same" zero padding, stride subsamples y.
// dtype: f32 (CPU, CUDA) or f64 (CPU) with every tensor the same; or mixed precision (CPU, CUDA):
// x, grad_y, y and grad_x bf16 (all four), the parameters and their gradients f32. The bf16 op
// computes and accumulates in f32 everywhere (bf16 loads widen exactly) and rounds to bf16 (round
// to nearest even) once per stored value: y and grad_x; and, in the fused mode, the values its
// split path stores, as autocast would store these conv inputs and outputs in bf16: the Haar
// coefficient planes c_l = H(ll_l) of x and of G = dL/dy and their LL bands (the next level's
// input, so the LL pyramids of x and G are bf16 too), the level outputs t_l = conv(c_l, w~_l),
// and the level gradients conv^T(H(gR_l), w~_l); its level convs take the folded filters
// w~_l = s_l * w_l (an f32 product) rounded to bf16, as the bf16 depthwise conv does
// (kernels/conv2d.h). Everything else stays f32: the base conv's folded filter and bias, R (the
// levels >= 1 summed onto level 0's grid), the sums before y and grad_x, every weight-gradient sum.
// The reference mode keeps all its intermediates f32 (bf16 x is the f32 op on the widened input,
// y and grad_x rounded). The CPU rounds at exactly these points, on the f32 values the CUDA
// kernels round (kernels/cpu/wtconv_fused.cpp, Bf16Planes).
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace hg::kernels {

struct WTConvWeights {
  Tensor base_weight, base_bias, base_scale;
  std::vector<Tensor> wavelet_weight, wavelet_scale;  ///< one per level
  int levels() const { return static_cast<int>(wavelet_weight.size()); }
};

/// Gradients of a WTConv2d; a member is undefined when it was not requested.
struct WTConvGrads {
  Tensor x, base_weight, base_bias, base_scale;
  std::vector<Tensor> wavelet_weight, wavelet_scale;
};

/// The side of level grid l + 1 from the side n >= 0 of grid l (not checked): ceil(n / 2) pixels
/// (the Haar analysis pads an odd edge with a zero row / column, docs/wtconv-operator.md). The one
/// definition of a level grid's size: WTConvLevels, the CPU kernels and the CUDA host code (whose
/// fixed-size per-level arrays call it directly) all take it from here.
constexpr int64_t wtconv_level_size(int64_t n) { return (n + 1) / 2; }

/// The grids of a WTConv2d's levels on an H x W input: grid 0 is H x W (x, grad_x, and y before
/// the stride subsamples it); grid l + 1 is grid l halved, rounded up (wtconv_level_size): the grid
/// of level l's coefficients c_l = H(ll_l), of its conv and scaled outputs and of the next low band
/// ll_{l+1}. h[l] x w[l] pixels for l = 0..L (L + 1 entries each). The struct takes any L >= 0;
/// the entry points need L >= 1 (wtconv_check_shapes), the CUDA ones at most kWTConvMaxLevels
/// (their checks, not this struct's). The constructor throws hg::Error for L < 0;
/// default-constructed: no grids.
struct WTConvLevels {
  std::vector<int64_t> h, w;
  WTConvLevels() = default;
  WTConvLevels(int64_t H, int64_t W, int L) : h{H}, w{W} {
    HG_CHECK(L >= 0, "WTConvLevels: the level count must be >= 0, got ", L);
    for (int l = 0; l < L; ++l) {
      h.push_back(wtconv_level_size(h.back()));
      w.push_back(wtconv_level_size(w.back()));
    }
  }
};

enum class WTConvMode {
  fused,      ///< one-pass synthesis fused with the base conv, scales folded into weights, no
              ///< intermediate kept for the backward (CUDA: small maps run the whole layer in one
              ///< block per image and 32 channels, see wtconv_plane_path; larger ones run each
              ///< level's Haar pass and conv in one launch with the coefficients in shared memory,
              ///< never stored, see wtconv_haar_conv_from, and the small levels as a whole-plane
              ///< tail, see wtconv_tail_level; a level neither takes writes its coefficients once
              ///< and runs the depthwise kernels of kernels/depthwise_conv.h on them)
  reference,  ///< reference order: every intermediate (coefficients, conv outputs, scaled,
              ///< reconstructions) materialised, as the PyTorch reference does
};

/// What the reference mode's forward keeps for its backward, as the PyTorch reference module's
/// autograd keeps it (docs/fused-wtconv.md, section 18): per level l, the coefficients
/// c_l = H(ll_l) (the wavelet conv's input), conv_l = conv(c_l, wavelet_weight[l]) (the scale's
/// input) and synth_in_l = wavelet_scale[l] conv_l with rec_{l+1} added to its LL band (the
/// inverse Haar's input, which PyTorch's conv_transpose2d keeps; our backward does not read it),
/// each (B, h_{l+1}, w_{l+1}, 4C) (grid l + 1 of WTConvLevels) with channel 4c + s = sub-band s
/// of channel c; and base = conv(x, base_weight) + base_bias before base_scale, (B, H, W, C).
/// Stored in the reference mode's intermediate dtype (f32 for f32 and bf16 x, f64 for f64 x) on
/// x's device. A forward given a WTConvSaved fills it; a backward given one reads it instead of
/// recomputing the forward, so these bytes stay alive from the forward to the backward, as on
/// PyTorch's tape.
struct WTConvSaved {
  std::vector<Tensor> coeff, conv, synth_in;  ///< one per level
  Tensor base;
  bool defined() const { return base.defined(); }
  /// Bytes of all of them.
  int64_t nbytes() const;
};

namespace cpu {
/// y (B, ceil(H/stride), ceil(W/stride), C), x's dtype. Throws hg::Error on inconsistent shapes or
/// dtypes (naming the tensor). saved (the reference mode only): filled with what its backward
/// reads (WTConvSaved).
Tensor wtconv_forward(const Tensor& x, const WTConvWeights& w, int stride, WTConvMode mode,
                      WTConvSaved* saved = nullptr);
/// All parameter gradients, plus grad_x when need_grad_x. saved (the reference mode only): what
/// the forward of the same x and weights kept, read instead of recomputing the forward; throws if
/// its shapes do not match x's and the weights' levels.
WTConvGrads wtconv_backward(const Tensor& x, const WTConvWeights& w, const Tensor& grad_y,
                            int stride, bool need_grad_x, WTConvMode mode,
                            const WTConvSaved* saved = nullptr);
}  // namespace cpu

// CUDA entry points (a build without CUDA links kernels/nocuda/cuda_stubs.cpp: they throw).
namespace cuda {
/// Limits of the CUDA entry points (hg::Error beyond them; the CPU has none): K odd in
/// [1, kWTConvMaxK]. Kernels compiled for a K: the Haar + conv, Haar + weight-gradient,
/// whole-plane and staged-synthesis kernels exist for K = 3, 5, 7 only (other K use a Haar pass and
/// the kernels named next); the depthwise kernels of kernels/depthwise_conv.h (the level convs and
/// level weight gradients after a Haar pass, the base weight gradient, the reference mode's convs)
/// are compiled for K = 3, 5, 7 (kDepthwiseKs); the other synthesis kernels for K = 1, 3, 5, 7, 9
/// (kWTConvKs: one dispatch, kernels/cuda/dispatch_k.cuh). Any other odd K up to kWTConvMaxK runs
/// those kernels' run-time-K code
/// (slower, same results; the synthesis's register windows sized for kWTConvMaxK). At most
/// kWTConvMaxLevels levels (the one-pass synthesis takes every level's pointer as a kernel
/// argument: a 2^12 = 4096-pixel-wide map). B, H, W and 4C are int32 in the kernels (element
/// offsets are 64-bit): larger ones are refused.
inline constexpr int kWTConvMaxK = 15;
inline constexpr int kWTConvMaxLevels = 12;

/// Same contract as cpu::, on the GPU: x (and grad_y) f32 or bf16 with f32 weights, the same
/// bf16 rounding points (see the top of this file). Weight gradients are deterministic
/// (bit-identical run to run: no floating-point atomics), f32 for either activation dtype.
/// `out` / `grad_x_out`, when defined, are where y / grad_x are written (a dense cuda tensor of
/// their shape and x's dtype, e.g. inside a guarded test buffer) and are returned; else new
/// tensors are allocated. `saved`: as in cpu:: (the reference mode only; f32, allocated as
/// activations).
Tensor wtconv_forward(const Tensor& x, const WTConvWeights& w, int stride, WTConvMode mode,
                      const Tensor& out = Tensor(), WTConvSaved* saved = nullptr);
WTConvGrads wtconv_backward(const Tensor& x, const WTConvWeights& w, const Tensor& grad_y,
                            int stride, bool need_grad_x, WTConvMode mode,
                            const Tensor& grad_x_out = Tensor(),
                            const WTConvSaved* saved = nullptr);

/// Whether the fused mode runs the whole-plane kernels (kernels/cuda/wtconv_plane.cuh: one block
/// holds an image's whole H x W plane for 32 channels; one forward launch, one backward launch plus
/// a reduction) for x of shape (B, H, W, C) and dtype `dtype` (f32 or bf16), rather than the split
/// path. It does for stride 1, K = 3, 5 or 7, at least one level, H * W <= 256 and planes that fit
/// the device's shared memory. Benchmarks label their I/O model with it. Throws hg::Error for x not
/// 4-D, another dtype, or more levels than the CUDA kernels take.
bool wtconv_plane_path(const Shape& x, int K, int levels, int stride, DType dtype, bool backward);

/// Where the split path (fused mode, not wtconv_plane_path) hands its levels to a level tail: the
/// first level s >= 1 whose LL band the whole-plane kernels take, so that levels s .. levels-1
/// run as one plane launch each way (kernels/cuda/wtconv_fused.cu); `levels` when none does. For
/// stride 1, x (B, H, W, C) of dtype `dtype` (f32 or bf16) and dense, 16-byte aligned tensors:
/// K = 3, 5 or 7, C % 4 == 0 (the synthesis kernels that read the tail's term), an LL band of at
/// most 256 pixels whose planes fit the shared memory (14 x 14: s = 1 at 28 x 28, s = 2 at
/// 56 x 56). Throws for x not 4-D, another dtype, or more levels than the CUDA kernels take.
int wtconv_tail_level(const Shape& x, int K, int levels, DType dtype, bool backward);

/// The first level from which the split path (fused mode) runs each split level's Haar pass and
/// level conv as one launch (haar_conv_kernel, kernels/cuda/wtconv_haar_conv.cuh: the
/// coefficients built in shared memory; the forward never writes them; with grad_x the backward's
/// weight gradient forms x's and G's coefficients itself, haar_wgrad_kernel, so they are never
/// stored; without grad_x Haar passes write both for the depthwise weight gradient),
/// `levels` when none: for x (B, H, W, C) of dtype `dtype` (f32 or bf16), dense and 16-byte
/// aligned: K = 3, 5 or 7, C % 8 == 0, the level's staged tiles within the shared memory (on an
/// H100 / H200 every level of WTConvNeXt-T's stages, bf16 or f32). Levels before it run a Haar
/// pass and a depthwise conv each. Benchmarks count their I/O with it. Throws for x not 4-D,
/// another dtype, or more levels than the CUDA kernels take.
int wtconv_haar_conv_from(const Shape& x, int K, int levels, DType dtype);

}  // namespace cuda

}  // namespace hg::kernels
