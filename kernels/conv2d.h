// 2-D convolution kernels (cross-correlation, like torch.nn.functional.conv2d) on NHWC activations
// with PyTorch-layout weights. This header is the contract between layers/conv2d.h and the CPU
// (kernels/cpu/conv2d.cpp) and CUDA (kernels/cuda/conv2d.cpp, cuDNN) implementations.
//
// Layouts (all dense, row-major):
//   x       (N, H, W, C)              input activations, NHWC
//   weight  (O, C/groups, KH, KW)     PyTorch layout, so checkpoints load unchanged
//   bias    (O) or nullptr            optional
//   y       (N, OH, OW, O)            OH = (H + 2*pad - KH) / stride + 1 (floor), same for OW
// Output channel o reads input channels [g*Cg, (g+1)*Cg) with g = o / (O/groups), Cg = C/groups.
// Padding is zeros on both sides; stride and padding are the same along H and W.
//
// Gradient rules: every output buffer is OVERWRITTEN (not accumulated into); the layer adds the
// results to the parameter gradients. Weight and bias gradients are deterministic (bit-identical
// run to run): no floating-point atomics, fixed summation order. dtype: CPU float or double
// (accumulation in T); CUDA float or hg::bf16 activations with float weight, bias and parameter
// gradients (accumulation in float). The shape is validated by the layer (layers/conv2d.cpp);
// kernels assume a consistent Conv2dShape. Errors: none on the CPU; the CUDA functions throw
// hg::Error for a cuDNN or CUDA status that is not success (the call and status named), and always
// in a build without CUDA.
#pragma once

#include <cstdint>

namespace hg::kernels {

/// Sizes of one convolution. Build with make_conv2d_shape (fills OH, OW).
struct Conv2dShape {
  int64_t N = 0, H = 0, W = 0, C = 0;  ///< input
  int64_t O = 0, KH = 0, KW = 0;       ///< output channels, kernel size
  int64_t stride = 1, pad = 0, groups = 1;
  int64_t OH = 0, OW = 0;                                        ///< output spatial size
  int64_t Cg() const { return C / groups; }                      ///< input channels per group
  int64_t Og() const { return O / groups; }                      ///< output channels per group
  bool depthwise() const { return groups == C && groups == O; }  ///< one filter per channel
  bool operator<(const Conv2dShape& o) const;  ///< for algorithm caches keyed by shape
  bool operator==(const Conv2dShape& o) const;
};

/// Fills OH and OW from the other fields (floor division, PyTorch's rule). No validation.
Conv2dShape make_conv2d_shape(int64_t N, int64_t H, int64_t W, int64_t C, int64_t O, int64_t KH,
                              int64_t KW, int64_t stride, int64_t pad, int64_t groups);

namespace cpu {
// Fast paths: groups == 1 -> im2col + GEMM (kernels::cpu::gemm, OpenBLAS when built with it; a 1x1
// stride-1 conv and a patchify conv (KH == KW == stride, pad 0) copy whole rows); depthwise ->
// direct loops with channels innermost (OpenMP over rows); other grouped convs -> the reference
// loops.
template <typename T>
void conv2d_forward(const Conv2dShape& s, const T* x, const T* weight, const T* bias, T* y);
/// grad_x (N, H, W, C) from grad_y (N, OH, OW, O).
template <typename T>
void conv2d_backward_data(const Conv2dShape& s, const T* grad_y, const T* weight, T* grad_x);
/// grad_weight (O, C/groups, KH, KW).
template <typename T>
void conv2d_backward_weight(const Conv2dShape& s, const T* x, const T* grad_y, T* grad_weight);
/// grad_bias (O) = sum of grad_y over N, OH, OW.
template <typename T>
void conv2d_backward_bias(const Conv2dShape& s, const T* grad_y, T* grad_bias);

// The oracle: the definition written as plain nested loops (slow; tests only).
template <typename T>
void conv2d_forward_reference(const Conv2dShape& s, const T* x, const T* weight, const T* bias,
                              T* y);
template <typename T>
void conv2d_backward_data_reference(const Conv2dShape& s, const T* grad_y, const T* weight,
                                    T* grad_x);
template <typename T>
void conv2d_backward_weight_reference(const Conv2dShape& s, const T* x, const T* grad_y,
                                      T* grad_weight);
}  // namespace cpu

// CUDA entry points: declared in every build; a build without CUDA links kernels/nocuda/ stubs
// that throw "built without CUDA".
namespace cuda {
/// Which implementation a CUDA conv2d call runs. It exists for benchmarks and tests
/// (`haargrad bench-layer --cudnn-dw` times cuDNN's depthwise conv beside ours); the layers
/// always use `automatic`.
enum class Conv2dBackend {
  automatic,  ///< depthwise shapes -> kernels/depthwise_conv.h, patchify shapes with TF32 off
              ///< -> kernels/patchify_conv.h, the rest -> cuDNN
  cudnn,      ///< every shape -> cuDNN (same results within fp32 rounding, usually slower)
};

/// T (x, y, grad_y, grad_x) = float or hg::bf16; weight, bias and their gradients are float (the
/// f32 master parameters; for bf16 the weight is rounded to bf16 where the math runs on bf16
/// tensor cores, and the gradients are accumulated in f32). Routes: see Conv2dBackend.
template <typename T>
void conv2d_forward(const Conv2dShape& s, const T* x, const float* weight, const float* bias, T* y,
                    Conv2dBackend backend = Conv2dBackend::automatic);
template <typename T>
void conv2d_backward_data(const Conv2dShape& s, const T* grad_y, const float* weight, T* grad_x,
                          Conv2dBackend backend = Conv2dBackend::automatic);
template <typename T>
void conv2d_backward_weight(const Conv2dShape& s, const T* x, const T* grad_y, float* grad_weight,
                            Conv2dBackend backend = Conv2dBackend::automatic);
template <typename T>
void conv2d_backward_bias(const Conv2dShape& s, const T* grad_y, float* grad_bias);
/// conv2d_backward_weight and conv2d_backward_bias together: for the depthwise shapes of
/// kernels/depthwise_conv.h in one pass (its weight gradient sums grad_y as it goes), else the two.
template <typename T>
void conv2d_backward_weight_bias(const Conv2dShape& s, const T* x, const T* grad_y,
                                 float* grad_weight, float* grad_bias,
                                 Conv2dBackend backend = Conv2dBackend::automatic);
void conv2d_clear_algorithm_cache();
}  // namespace cuda

}  // namespace hg::kernels
