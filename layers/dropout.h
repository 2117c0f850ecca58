// Dropout (torch.nn.functional.dropout) with autograd: the classifier's dropout in timm's ConvNeXt
// head (its drop_rate, train.py's --drop).
#pragma once

#include "core/random.h"
#include "core/tensor.h"

namespace hg {

/// In training with p > 0, each element is kept with probability keep = 1 - p (one gen.uniform()
/// draw per element, in memory order, again at every replay of a captured CUDA graph) and divided
/// by keep; dropped elements become 0. Identity (returns x itself, no draw) in eval or when p == 0.
/// x any shape, f32 / f64 (CPU), f32 (CUDA) or bf16 (multiplied in f32, rounded once); gradient
/// dy * mask. Throws hg::Error unless 0 <= p < 1.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen);

}  // namespace hg
