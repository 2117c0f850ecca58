// Per-op-type breakdown of one ConvNeXt / WTConvNeXt training step for `haargrad bench
// --breakdown`. Core autograd has no profiling hook, so the step is cut into pieces through the
// model's public members (stem, downsample, each block's conv_dw / norm / fc1 / gelu / fc2 /
// layer scale + residual, head, loss, optimizer). Each piece runs on its real input activation:
// its forward is recorded on a tape of its own and timed, then autograd::backward(out, g) with a
// random upstream gradient g is timed. Times are medians over repetitions, summed per op type.
//
// Each op type also gets the FLOPs (2 per multiply-add of its matmuls and convolutions: forward,
// weight gradient, input gradient) and the bytes (inputs, outputs, parameters and gradients,
// forward and backward) that one step must at least do; bench prints them against the device's
// measured ceilings (app/device_ceilings.h) as a roofline column.
//
// Caveat (why the sum differs a little from a measured step): the piece's input is a leaf that
// requires grad, so its gradient is copied once into a fresh buffer (one extra pass over the
// input), and each piece pays its own launch latency without overlap with its neighbours.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "app/bench_run.h"
#include "core/tensor.h"
#include "models/convnext.h"
#include "train/optimizer.h"

namespace hg::app {

/// The op type of a block's end run as one op (gelu_linear_residual: GELU, fc2 with the layer scale
/// folded in, the residual add in its GEMM), as the model runs it without drop path.
inline constexpr const char* kFusedBlockEnd = "gelu + fc2 + scale + residual";

/// Op types in the order they are printed: "stem/downsample", "conv_dw" (ConvNeXt) or "wtconv"
/// (WTConvNeXt), "norm", "mlp fc1", then a block's end as the model runs it after fc1:
/// kFusedBlockEnd (no drop path), or with drop path "gelu + fc2 + scale" (the layer scale folded
/// into fc2) and "drop path + residual" (the sample-scaled residual add); without a layer scale
/// "gelu + fc2" and "residual" (or "drop path + residual"); then "head", "loss", "optimizer".
/// time_breakdown returns only those the model's step uses.
std::vector<std::string> breakdown_categories(bool wtconv);

/// Times the pieces of one training step of `model` on input x (N, H, W, C) and labels (N) (both
/// on the model's device), `reps` timed repetitions per piece after one warm-up. Afterwards the
/// parameters have been updated `reps + 1` times by `opt` and every gradient is cleared.
/// Throws hg::Error from the ops (e.g. out of memory) or when reps < 1.
std::map<std::string, BreakdownEntry> time_breakdown(ConvNeXt& model, train::Optimizer& opt,
                                                     const Tensor& x, const Tensor& labels, int reps);

}  // namespace hg::app
