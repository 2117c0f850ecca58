// Classifier-head reshaping ops: global average pooling over H, W of NHWC activations, and flatten.
// Kernels: kernels/pool.h.
#pragma once

#include "core/tensor.h"

namespace hg {

/// x (N, H, W, C) NHWC -> (N, C), the mean over H and W (timm ConvNeXt head: x.mean((2, 3)) in
/// NCHW). dtype: f32 / f64 on the CPU, f32 on CUDA, and bf16
/// (CPU, CUDA: the mean accumulated in f32). Gradient for x.
/// Throws hg::Error naming "global_avg_pool" and the shape unless x is 4-D with H*W > 0.
Tensor global_avg_pool(const Tensor& x);

/// Merges dims start_dim..last into one, like torch.flatten(x, start_dim); negative start_dim
/// counts from the end. A view when x is dense; gradient flows through (recorded reshape).
/// Throws hg::Error naming "flatten" when start_dim is out of range.
Tensor flatten(const Tensor& x, int start_dim = 1);

}  // namespace hg
