// Classification loss and accuracy: fused softmax + cross-entropy (with PyTorch label smoothing)
// with autograd, and a top-k accuracy helper for evaluation.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace hg {

/// Mean cross-entropy over the batch, torch.nn.functional.cross_entropy(logits, labels,
/// label_smoothing=s) (formula in kernels/cross_entropy.h). logits (N, K) f32/f64 (CUDA: f32), or
/// bf16 (mixed precision: widened to f32 first, the loss f32); labels (N) i64 on the same device,
/// each in [0, K); s in [0, 1]. Returns a scalar (shape []) of the logits' dtype (f32 for bf16);
/// gradient for logits only. The forward saves the per-row log-sum-exp.
/// Throws hg::Error ("cross_entropy: ...") on bad shapes, dtypes, devices, s, or (CPU labels) a
/// label out of range; on CUDA an out-of-range label gives a NaN loss instead (checking would need
/// a device-to-host copy every step).
Tensor cross_entropy(const Tensor& logits, const Tensor& labels, double label_smoothing = 0.0);

/// Mean cross-entropy against soft targets, timm's SoftTargetCrossEntropy (the loss of mixup /
/// cutmix, whose targets already carry the label smoothing): mean_i sum_j -t_ij log softmax(z_i)_j.
/// logits (N, K) f32/f64 (CUDA: f32); targets (N, K) of the same dtype and device, rows normally
/// summing to 1 (not required). bf16 logits (with bf16 or f32 targets) are widened to f32 first,
/// as in cross_entropy. Returns a scalar; gradient for logits only. Throws hg::Error
/// ("soft_target_cross_entropy: ...") on bad shapes, dtypes or devices.
Tensor soft_target_cross_entropy(const Tensor& logits, const Tensor& targets);

/// Number of samples whose label is among the k largest logits of its row (no gradient; copies to
/// the host). Equal logits rank by index, the lower first (torch.topk's order of ties is its own:
/// unspecified, not by index): a model whose logits are all equal scores the share of label 0 in
/// top-1, about chance (torch's: the share of whichever label its topk puts first), never 100%. A
/// row with any non-finite logit (NaN, +-Inf) counts as wrong: a diverged model scores 0, never
/// 100%. logits (N, K) any float dtype/device; labels (N) i64; 1 <= k <= K. Throws hg::Error on bad
/// shapes or k.
int64_t correct_topk(const Tensor& logits, const Tensor& labels, int64_t k);
/// Number of rows of logits (N, K) with at least one NaN or +-Inf (copies to the host).
int64_t nonfinite_rows(const Tensor& logits);
/// correct_topk / N, in [0, 1] (top-1 / top-5 accuracy of a batch).
double accuracy_topk(const Tensor& logits, const Tensor& labels, int64_t k);

}  // namespace hg
