// Patchify convolutions (kernel == stride, no padding, groups 1: ConvNeXt's 4x4/4 stem and 2x2/2
// downsampling layers) on NHWC fp32 tensors as one cuBLAS GEMM each way, used by
// kernels/cuda/conv2d.cpp instead of cuDNN.
//
// Why: with kernel == stride the k x k input patches do not overlap, so gathering them is a plain
// copy: P (M, k*k*C) with M = N*OH*OW, row m = (n, oh, ow), column (kh*k + kw)*C + c =
// x[n, oh*k + kh, ow*k + kw, c] (in NHWC each (kh) piece is k*C contiguous floats). Then, with the
// weight in (O, kh, kw, C) order, W' (O, k*k*C):
//   y   (M, O)     = P W'^T (+ bias)
//   gP  (M, k*k*C) = gy W'      -> scattered back to gx (rows / columns past OH*k, OW*k get 0)
//   gW' (O, k*k*C) = gy^T P     -> reordered to PyTorch's (O, C, kh, kw)
// Measured on the H200 (ConvNeXt-T, batch 128, stem + downsampling, forward + backward): fp32
// 7.9 ms here vs 11.7 ms with cuDNN; with TF32 cuDNN is faster (4.2 vs 5.2 ms), so these kernels
// take only exact-fp32 work.
// Same contract as kernels/conv2d.h (x (N, H, W, C), weight (O, C, k, k), y (N, OH, OW, O), every
// output overwritten). Workspace: one patch matrix (the size of the used part of x) from the
// caching allocator (Category::workspace). TF32 follows hg::cuda::allow_tf32 like every cuBLAS
// call. kernels::cuda::Conv2dBackend::cudnn (kernels/conv2d.h) sends these shapes to cuDNN, for
// comparisons.
#pragma once

#include "kernels/conv2d.h"

namespace hg::kernels {

#ifdef HAARGRAD_WITH_CUDA
namespace cuda {

/// True for groups == 1, KH == KW == stride > 1, pad == 0, when TF32 is off (hg::cuda::allow_tf32).
bool patchify_conv_supported(const Conv2dShape& s);

/// Throw hg::Error (naming the shape) when !patchify_conv_supported(s), or on a CUDA failure.
/// T (x, y, grad_y, grad_x) = float or hg::bf16; weight, bias and grad_weight are float (for bf16
/// the weight is rounded to bf16 for the GEMM; the weight gradient is accumulated and kept in f32).
template <typename T>
void patchify_conv_forward(const Conv2dShape& s, const T* x, const float* weight, const float* bias,
                           T* y);
template <typename T>
void patchify_conv_backward_data(const Conv2dShape& s, const T* grad_y, const float* weight,
                                 T* grad_x);
template <typename T>
void patchify_conv_backward_weight(const Conv2dShape& s, const T* x, const T* grad_y,
                                   float* grad_weight);

}  // namespace cuda
#endif

}  // namespace hg::kernels
