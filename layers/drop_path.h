// DropPath (stochastic depth, timm's drop_path with scale_by_keep=True) with autograd.
#pragma once

#include "core/random.h"
#include "core/tensor.h"

namespace hg {

/// timm drop_path: in training with drop_prob > 0, each sample n (dim 0) is kept with probability
/// keep = 1 - drop_prob (one gen.uniform() draw per sample, in order) and kept samples are divided
/// by keep; dropped samples become 0. Identity (returns x itself, no draw) in eval or when
/// drop_prob == 0. x any rank >= 1, CPU f32/f64, CUDA f32, or bf16
/// (CPU, CUDA). Throws hg::Error unless
/// 0 <= drop_prob <= 1.
Tensor drop_path(const Tensor& x, double drop_prob, bool training, Generator& gen);

/// y[n, ...] = x[n, ...] * scale[n], gradient for x only (scale is a constant): the op drop_path
/// records. scale (N) with N = x.size(0): f32 for bf16 x, else x's dtype; on x's device.
Tensor scale_samples(const Tensor& x, const Tensor& scale);

/// drop_path's per-sample scale for a batch of N samples: scale[n] = 1/keep for a kept sample,
/// 0 for a dropped one, drawn exactly as drop_path draws it (one gen.uniform() per sample, in
/// order; again at every replay of a captured CUDA graph). dtype f32 for bf16 activations `act`,
/// else act; on `device`. Throws hg::Error unless 0 <= drop_prob <= 1.
Tensor drop_path_scale(int64_t N, double drop_prob, DType act, Device device, Generator& gen);

/// The residual add of a dropped branch in one pass: y[n, ...] = shortcut[n, ...] + z[n, ...] *
/// scale[n], i.e. shortcut + scale_samples(z, scale) without the scaled tensor in memory
/// (timm's x + drop_path(branch)). Gradients: shortcut gets dy, z gets dy * scale (one pass);
/// nothing is saved but scale. shortcut and z of one shape, dtype and device; scale as for
/// scale_samples. One rounding of y in bf16.
Tensor add_scaled_samples(const Tensor& shortcut, const Tensor& z, const Tensor& scale);

}  // namespace hg
