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
/// records. scale (N) with N = x.size(0), same dtype and device as x.
Tensor scale_samples(const Tensor& x, const Tensor& scale);

}  // namespace hg
