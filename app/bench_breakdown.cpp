// Per-op-type timing of one training step, piece by piece (see bench_breakdown.h).
#include "app/bench_breakdown.h"

#include <functional>

#include "core/autograd.h"
#include "layers/activation.h"
#include "layers/drop_path.h"
#include "layers/layer_scale.h"
#include "layers/loss.h"
#include "layers/pool.h"

namespace hg::app {
namespace {

// One piece of the step: an op type and a function of the piece's input activation.
struct Piece {
  Piece(std::string c, std::function<Tensor(const Tensor&)> f, bool needs_grad = true, Tensor side = Tensor())
      : category(std::move(c)), fn(std::move(f)), input_needs_grad(needs_grad), side_input(std::move(side)) {}
  std::string category;
  std::function<Tensor(const Tensor&)> fn;
  bool input_needs_grad;  ///< false for the image (the real step needs no grad for it)
  Tensor side_input;     ///< another leaf the piece reads (the block's shortcut), or none
};

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
        // `out` lives in the tape arena and must die before the next forward restarts the arena.
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
    out_["optimizer"].forward_ms += summarize(ms).median;  // an update has no backward
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

}  // namespace

std::vector<std::string> breakdown_categories(bool wtconv) {
  return {"stem/downsample", wtconv ? "wtconv" : "conv_dw", "norm", "mlp fc1", "gelu", "mlp fc2",
          "layer scale + residual", "head", "loss", "optimizer"};
}

std::map<std::string, BreakdownEntry> time_breakdown(ConvNeXt& model, train::Optimizer& opt,
                                                     const Tensor& x, const Tensor& labels, int reps) {
  HG_CHECK(reps >= 1, "bench --breakdown: reps must be >= 1, got ", reps);
  std::map<std::string, BreakdownEntry> out;
  for (const std::string& c : breakdown_categories(model.config.wtconv)) out[c] = {};
  PieceTimer timer(model.device, reps, out);
  opt.zero_grad();

  // the model's activation dtype (bf16 in mixed precision), as ConvNeXt::forward casts it
  Tensor h = timer.run({"stem/downsample", [&](const Tensor& t) { return model.stem_conv->forward(t); }, false},
                       x.to(model.compute_dtype));
  h = timer.run({"stem/downsample", [&](const Tensor& t) { return model.stem_norm->forward(t); }}, h);
  for (auto& stage : model.stages) {
    if (stage->down_conv) {
      h = timer.run({"stem/downsample", [&](const Tensor& t) { return stage->down_norm->forward(t); }}, h);
      h = timer.run({"stem/downsample", [&](const Tensor& t) { return stage->down_conv->forward(t); }}, h);
    }
    for (auto& block : stage->blocks) {
      ConvNeXtBlock& b = *block;
      Tensor shortcut = h;
      shortcut.requires_grad_(true);  // the residual add sends a gradient to the block input too
      const std::string conv_cat = b.wt_conv_dw ? "wtconv" : "conv_dw";
      Tensor t = timer.run({conv_cat, [&](const Tensor& in) {
                              return b.wt_conv_dw ? b.wt_conv_dw->forward(in) : b.conv_dw->forward(in);
                            }}, h);
      t = timer.run({"norm", [&](const Tensor& in) { return b.norm.forward(in); }}, t);
      t = timer.run({"mlp fc1", [&](const Tensor& in) { return b.fc1.forward(in); }}, t);
      t = timer.run({"gelu", [](const Tensor& in) { return gelu(in); }}, t);
      t = timer.run({"mlp fc2", [&](const Tensor& in) { return b.fc2.forward(in); }}, t);
      h = timer.run({"layer scale + residual", [&](const Tensor& in) {
                       Tensor branch = b.gamma.defined() ? layer_scale(in, b.gamma) : in;
                       branch = drop_path(branch, b.drop_path_prob, true, model.drop_gen);
                       return residual_add(shortcut, branch);
                     }, true, shortcut}, t);
      shortcut.clear_grad();
      shortcut.requires_grad_(false);
    }
  }
  h = timer.run({"head", [&](const Tensor& t) {
                   return model.head_fc->forward(model.head_norm->forward(global_avg_pool(t))).to(DType::f32);
                 }}, h);
  timer.run({"loss", [&](const Tensor& logits) { return cross_entropy(logits, labels); }}, h);
  timer.run_optimizer(opt);  // the parameters hold the gradients of all the pieces' backwards
  opt.zero_grad();
  return out;
}

}  // namespace hg::app
