// Hand-written CUDA depthwise 2-D convolution on NHWC activations (groups == C == O), used by
// kernels/cuda/conv2d.cpp instead of cuDNN, whose NHWC fp32 depthwise kernels are slow on Hopper
// (18.3 ms vs PyTorch's 2.88 ms for a ConvNeXt 7x7 training step at N 64, C 96, 56x56).
//
// Same contract as kernels/conv2d.h, restricted to depthwise shapes:
//   x       (N, H, W, C)     NHWC input
//   weight  (C, 1, K, K)     PyTorch layout (one K x K filter per channel)
//   bias    (C) or nullptr
//   y       (N, OH, OW, C)   OH = (H + 2*pad - K) / stride + 1 (floor), same for OW
//   y[n,i,j,c] = bias[c] + sum_{p,q} x[n, i*stride - pad + p, j*stride - pad + q, c] * w[c,0,p,q]
// (x is zero outside [0,H) x [0,W); cross-correlation, like torch.nn.functional.conv2d).
// Supported (depthwise_conv_supported): KH == KW == K in [1, kDepthwiseMaxK], stride 1 or 2, any
// pad >= 0, sizes that fit int32 per dimension. Other shapes stay on cuDNN.
//
// Every output buffer is OVERWRITTEN. Weight and bias gradients are deterministic (bit-identical
// run to run): per-block partial sums in workspace (Category::workspace) reduced in a fixed order,
// no floating-point atomics. dtype: float or hg::bf16 activations (x, y, grad_y, grad_x), float
// weight, bias and their gradients, fp32 accumulation. All pointers on the GPU; calls are
// asynchronous on hg::cuda::stream() (core/cuda_stream.h: the per-thread default stream). The CPU
// reference is kernels::cpu::conv2d_* (its depthwise path), so there is no CPU namespace here.
// Errors: the forward and both backward functions throw hg::Error for a shape that
// depthwise_conv_supported rejects, a launch grid too large for the shape, and a failed CUDA call,
// launch or workspace allocation (HG_CUDA_CHECK, HG_CUDA_LAUNCH_CHECK); depthwise_conv_supported
// itself never throws.
#pragma once

#include <cstdint>

#include "kernels/conv2d.h"

namespace hg::kernels {

/// Largest square kernel the hand-written depthwise kernels take (K = 3, 5, 7 are compiled with
/// the kernel size as a template constant; other K use a slower run-time-K path).
inline constexpr int64_t kDepthwiseMaxK = 31;

#ifdef HAARGRAD_WITH_CUDA
namespace cuda {

bool depthwise_conv_supported(const Conv2dShape& s);

/// T (x, y, grad_y, grad_x) = float or hg::bf16; weight, bias and their gradients float (for bf16
/// activations the filter values are rounded to bf16 before use, as kernels/conv2d.h states).
/// The forward sums each output as one fmaf per tap in row-major filter order, starting from the
/// bias (or 0), in every kernel variant: the CPU reference of the bf16 WTConv
/// (kernels/cpu/wtconv_fused.cpp) reproduces that f32 value bit for bit before it rounds it.
template <typename T>
void depthwise_conv_forward(const Conv2dShape& s, const T* x, const float* weight,
                            const float* bias, T* y);

template <typename T>
void depthwise_conv_backward_data(const Conv2dShape& s, const T* grad_y, const float* weight,
                                  T* grad_x);

template <typename T>
void depthwise_conv_backward_weight(const Conv2dShape& s, const T* x, const T* grad_y,
                                    float* grad_weight, float* grad_bias);

}  // namespace cuda
#endif

}  // namespace hg::kernels
