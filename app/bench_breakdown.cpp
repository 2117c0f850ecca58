// Per-op-type timing of one training step, piece by piece (see bench_breakdown.h).
#include "app/bench_breakdown.h"

#include <functional>

#include "core/autograd.h"
#include "layers/drop_path.h"
#include "layers/layer_scale.h"
#include "layers/linear.h"
#include "layers/loss.h"

namespace hg::app {
namespace {

/// Multiply-adds of one forward pass of a piece, from its input and output (0: no matmul or conv).
using MacsFn = std::function<double(const Tensor& in, const Tensor& out)>;

// One piece of the step: an op type, a function of the piece's input activation, and what the
// roofline counts for it: its parameters (read, and their gradients written) and its multiply-adds.
struct Piece {
  Piece(std::string c, std::function<Tensor(const Tensor&)> f, bool needs_grad = true, Tensor side = Tensor())
      : category(std::move(c)), fn(std::move(f)), input_needs_grad(needs_grad), side_input(std::move(side)) {}
  Piece& with(std::vector<Tensor> p, MacsFn m = nullptr) {
    params = std::move(p);
    macs = std::move(m);
    return *this;
  }
  std::string category;
  std::function<Tensor(const Tensor&)> fn;
  bool input_needs_grad;  ///< false for the image (the real step needs no grad for it)
  Tensor side_input;     ///< another leaf the piece reads (the block's shortcut), or none
  std::vector<Tensor> params;
  MacsFn macs;
};

/// The trainable tensors of a module (what its backward writes gradients for).
std::vector<Tensor> trainable(const Module& m) {
  std::vector<Tensor> out;
  for (const ParamRef& p : m.named_tensors())
    if (p.trainable) out.push_back(p.tensor);
  return out;
}

/// Multiply-adds of a convolution or linear layer: each output element takes in_features (= the
/// weight's elements per output channel: C_in/groups * K * K, or C_in) of them.
MacsFn weight_macs(const Tensor& weight) {
  const double per_out = static_cast<double>(weight.numel()) / static_cast<double>(weight.size(0));
  return [per_out](const Tensor&, const Tensor& out) {
    return static_cast<double>(out.numel()) * per_out;
  };
}

/// Multiply-adds of a WTConv2d: the base K x K depthwise conv at every output element, and each
/// level's K x K depthwise conv over 4C sub-band channels at ceil(h/2^(l+1)) x ceil(w/2^(l+1)).
MacsFn wtconv_macs(const WTConv2d& m) {
  const int K = m.kernel_size(), L = m.wt_levels();
  return [K, L](const Tensor&, const Tensor& out) {
    const double n = static_cast<double>(out.size(0)), C = static_cast<double>(out.size(3));
    int64_t h = out.size(1), w = out.size(2);
    double macs = static_cast<double>(out.numel()) * K * K;
    for (int l = 0; l < L; ++l) {
      h = (h + 1) / 2, w = (w + 1) / 2;
      macs += n * static_cast<double>(h * w) * 4 * C * K * K;
    }
    return macs;
  };
}

/// What one training step of piece p must at least do (the roofline's numerator): FLOPs = 2 per
/// multiply-add, for the forward, the weight gradient and (when its input needs one) the input
/// gradient; bytes = forward (read the input, the side input and the parameters, write the output)
/// + backward (read the output's gradient, the saved input and the parameters; write the input's
/// and side input's gradients and the parameters' gradients in f32). What a fully fused
/// implementation would move: intermediates inside a piece (a WTConv's sub-bands, a GEMM's tiles)
/// are not counted.
void add_cost(const Piece& p, const Tensor& in, const Tensor& out, BreakdownEntry& e) {
  const double in_b = static_cast<double>(in.nbytes()), out_b = static_cast<double>(out.nbytes());
  const double side_b = p.side_input.defined() ? static_cast<double>(p.side_input.nbytes()) : 0.0;
  double param_b = 0, grad_b = 0;
  for (const Tensor& t : p.params) {
    param_b += static_cast<double>(t.nbytes());
    grad_b += static_cast<double>(t.numel()) * 4;
  }
  e.bytes += in_b + side_b + param_b + out_b;  // forward
  e.bytes +=
      out_b + in_b + (p.input_needs_grad ? in_b : 0) + side_b + param_b + grad_b;  // backward
  if (p.macs) e.flops += 2 * p.macs(in, out) * (p.input_needs_grad ? 3 : 2);
}

class PieceTimer {
 public:
  PieceTimer(Device device, int reps, std::map<std::string, BreakdownEntry>& out)
      : device_(device), reps_(reps), out_(out) {}

  /// Times piece p on `in` and returns its output (computed without a tape) for the next piece.
  Tensor run(const Piece& p, Tensor in) {
    Tensor next;
    {
      autograd::NoGradGuard no_grad;  // the next piece's input, in the caching allocator
      next = p.fn(in);
    }
    // The upstream gradient: random of the output's shape (a scalar loss is seeded with 1).
    const Tensor g = next.ndim() == 0 ? Tensor() : upstream(next.shape(), next.dtype());
    const bool made_leaf = p.input_needs_grad && !in.requires_grad();
    if (made_leaf) in.requires_grad_(true);
    DeviceClock clock(device_, 3 * (reps_ + 1));
    std::vector<double> fwd, bwd;
    for (int r = 0; r <= reps_; ++r) {  // repetition 0 is a warm-up
      in.clear_grad();  // each repetition starts like the real step: no gradient yet
      if (p.side_input.defined()) p.side_input.clear_grad();
      const int m0 = clock.mark();
      int m1;
      {
        Tensor out = p.fn(in);
        m1 = clock.mark();
        autograd::backward(out, g);
      }
      const int m2 = clock.mark();
      if (r > 0) {
        clock.sync();
        fwd.push_back(clock.elapsed_ms(m0, m1));
        bwd.push_back(clock.elapsed_ms(m1, m2));
      }
    }
    in.clear_grad();
    if (made_leaf) in.requires_grad_(false);
    BreakdownEntry& e = out_[p.category];
    e.forward_ms += summarize(fwd).median;
    e.backward_ms += summarize(bwd).median;
    add_cost(p, in, next, e);
    return next;
  }

  /// Times `reps` optimizer steps (after one warm-up) as the "optimizer" op type.
  void run_optimizer(train::Optimizer& opt) {
    autograd::NoGradGuard no_grad;
    DeviceClock clock(device_, 2 * (reps_ + 1));
    std::vector<double> ms;
    for (int r = 0; r <= reps_; ++r) {
      const int m0 = clock.mark();
      opt.step();
      const int m1 = clock.mark();
      if (r > 0) {
        clock.sync();
        ms.push_back(clock.elapsed_ms(m0, m1));
      }
    }
    BreakdownEntry& e = out_["optimizer"];
    e.forward_ms += summarize(ms).median;  // an update has no backward
    // AdamW / SGD read each parameter, its gradient and its state, and write parameter and state
    const int state = dynamic_cast<const train::AdamW*>(&opt) != nullptr ? 2 : 1;
    for (const Tensor& t : opt.parameters())
      e.bytes += static_cast<double>(t.numel()) * 4 * (2 + state + 1 + state);
  }

 private:
  // One random gradient per shape (a ConvNeXt has few distinct shapes; making them is slow).
  const Tensor& upstream(const Shape& shape, DType dtype) {
    auto key = std::make_pair(shape, dtype);
    auto it = grads_.find(key);
    if (it == grads_.end())
      it = grads_.emplace(key, random_uniform(shape, 1000 + grads_.size(), device_).to(dtype)).first;
    return it->second;
  }

  Device device_;
  int reps_;
  std::map<std::string, BreakdownEntry>& out_;
  std::map<std::pair<Shape, DType>, Tensor> grads_;
};

// The block's end after fc1, timed as ConvNeXtBlock::forward runs it in training (its end(): one
// fused op, or the branch then the residual add). Returns the block's output.
Tensor time_block_end(PieceTimer& timer, ConvNeXtBlock& b, const Tensor& shortcut, const Tensor& t,
                      Generator& gen) {
  const ConvNeXtBlock::End end = b.end(true);
  std::vector<Tensor> fc2_params = trainable(b.fc2);
  if (b.gamma.defined()) fc2_params.push_back(b.gamma);
  if (end == ConvNeXtBlock::End::fused_residual)
    return timer.run(Piece(
                         kFusedBlockEnd,
                         [&](const Tensor& in) {
                           return gelu_linear_residual(shortcut, in, b.fc2.weight, b.fc2.bias,
                                                       b.gamma);
                         },
                         true, shortcut)
                         .with(fc2_params, weight_macs(b.fc2.weight)),
                     t);
  const bool scaled = end == ConvNeXtBlock::End::scaled_drop;
  const bool dropping = b.drop_path_prob > 0;
  const Tensor branch =
      scaled
          ? timer.run(Piece("gelu + fc2 + scale",
                            [&](const Tensor& in) {
                              return gelu_linear_scaled(in, b.fc2.weight, b.fc2.bias, b.gamma);
                            })
                          .with(fc2_params, weight_macs(b.fc2.weight)),
                      t)
          : timer.run(
                Piece("gelu + fc2",
                      [&](const Tensor& in) { return gelu_linear(in, b.fc2.weight, b.fc2.bias); })
                    .with(fc2_params, weight_macs(b.fc2.weight)),
                t);
  return timer.run(
      Piece(
          dropping ? "drop path + residual" : "residual",
          [&](const Tensor& in) {
            if (!scaled)
              return residual_add(shortcut,
                                  dropping ? drop_path(in, b.drop_path_prob, true, gen) : in);
            const Tensor scale = drop_path_scale(shortcut.size(0), b.drop_path_prob,
                                                 shortcut.dtype(), shortcut.device(), gen);
            return add_scaled_samples(shortcut, in, scale);
          },
          true, shortcut),
      branch);
}

}  // namespace

std::vector<std::string> breakdown_categories(bool wtconv) {
  return {"stem/downsample",
          wtconv ? "wtconv" : "conv_dw",
          "norm",
          "mlp fc1",
          kFusedBlockEnd,
          "gelu + fc2 + scale",
          "gelu + fc2",
          "drop path + residual",
          "residual",
          "head",
          "loss",
          "optimizer"};
}

std::map<std::string, BreakdownEntry> time_breakdown(ConvNeXt& model, train::Optimizer& opt,
                                                     const Tensor& x, const Tensor& labels, int reps) {
  HG_CHECK(reps >= 1, "bench --breakdown: reps must be >= 1, got ", reps);
  std::map<std::string, BreakdownEntry>
      out;  // the op types the model's step uses (PieceTimer adds them)
  PieceTimer timer(model.device, reps, out);
  opt.zero_grad();

  // the model's activation dtype (bf16 in mixed precision), as ConvNeXt::forward casts it
  Tensor h = timer.run(
      Piece(
          "stem/downsample", [&](const Tensor& t) { return model.stem_conv->forward(t); }, false)
          .with(trainable(*model.stem_conv), weight_macs(model.stem_conv->weight)),
      x.to(model.compute_dtype));
  h = timer.run(
      Piece("stem/downsample", [&](const Tensor& t) { return model.stem_norm->forward(t); })
          .with(trainable(*model.stem_norm)),
      h);
  for (auto& stage : model.stages) {
    if (stage->down_conv) {
      h = timer.run(
          Piece("stem/downsample", [&](const Tensor& t) { return stage->down_norm->forward(t); })
              .with(trainable(*stage->down_norm)),
          h);
      h = timer.run(
          Piece("stem/downsample", [&](const Tensor& t) { return stage->down_conv->forward(t); })
              .with(trainable(*stage->down_conv), weight_macs(stage->down_conv->weight)),
          h);
    }
    for (auto& block : stage->blocks) {
      ConvNeXtBlock& b = *block;
      Tensor shortcut = h;
      shortcut.requires_grad_(true);  // the residual add sends a gradient to the block input too
      const std::string conv_cat = b.wt_conv_dw ? "wtconv" : "conv_dw";
      Piece conv(conv_cat, [&](const Tensor& in) {
        return b.wt_conv_dw ? b.wt_conv_dw->forward(in) : b.conv_dw->forward(in);
      });
      if (b.wt_conv_dw)
        conv.with(trainable(*b.wt_conv_dw), wtconv_macs(*b.wt_conv_dw));
      else
        conv.with(trainable(*b.conv_dw), weight_macs(b.conv_dw->weight));
      Tensor t = timer.run(conv, h);
      t = timer.run(Piece("norm", [&](const Tensor& in) { return b.norm.forward(in); })
                        .with(trainable(b.norm)),
                    t);
      t = timer.run(Piece("mlp fc1", [&](const Tensor& in) { return b.fc1.forward(in); })
                        .with(trainable(b.fc1), weight_macs(b.fc1.weight)),
                    t);
      h = time_block_end(timer, b, shortcut, t, model.drop_gen);
      shortcut.clear_grad();
      shortcut.requires_grad_(false);
    }
  }
  std::vector<Tensor> head_params = trainable(*model.head_norm);
  for (const Tensor& t : trainable(*model.head_fc)) head_params.push_back(t);
  const double head_macs = static_cast<double>(model.head_fc->weight.numel());  // per image
  h = timer.run(Piece("head", [&](const Tensor& t) { return model.head(t, true); })
                    .with(head_params,
                          [head_macs](const Tensor& in, const Tensor&) {
                            return head_macs * static_cast<double>(in.size(0));
                          }),
                h);
  timer.run({"loss", [&](const Tensor& logits) { return cross_entropy(logits, labels); }}, h);
  timer.run_optimizer(opt);  // the parameters hold the gradients of all the pieces' backwards
  opt.zero_grad();
  return out;
}

}  // namespace hg::app
