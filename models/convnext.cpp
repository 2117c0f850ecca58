// ConvNeXt / WTConvNeXt construction and forward (see convnext.h).
#include "models/convnext.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/autograd.h"
#include "layers/activation.h"
#include "layers/drop_path.h"
#include "layers/dropout.h"
#include "layers/layer_scale.h"
#include "layers/pool.h"

namespace hg {
namespace {

std::unique_ptr<Conv2d> make_conv(int64_t in, int64_t out, int k, int stride, int pad, int groups,
                                  Generator& gen, DType dtype, Device device) {
  Conv2dOptions o;
  o.in_channels = in;
  o.out_channels = out;
  o.kernel_size = k;
  o.stride = stride;
  o.padding = pad;
  o.groups = groups;
  return std::make_unique<Conv2d>(o, gen, dtype, device);
}

}  // namespace

// ---- block ----------------------------------------------------------------------------------------

ConvNeXtBlock::ConvNeXtBlock(int64_t dim, const ModelConfig& cfg, int wt_levels, double drop_path,
                             Generator& gen, DType dtype, Device device, const std::string& name)
    : norm(dim, 1e-6, dtype, device),
      fc1(dim, 4 * dim, gen, true, dtype, device),
      fc2(4 * dim, dim, gen, true, dtype, device),
      drop_path_prob(drop_path) {
  if (cfg.wtconv) {
    WTConv2dOptions o;
    o.kernel_size = cfg.kernel_size;
    o.wt_levels = wt_levels;
    o.dtype = dtype;
    o.device = device;
    wt_conv_dw = std::make_unique<WTConv2d>(dim, dim, o, gen);
    wt_conv_dw->name = name + ".conv_dw";
  } else {
    conv_dw = make_conv(dim, dim, cfg.kernel_size, 1, cfg.kernel_size / 2, static_cast<int>(dim), gen,
                        dtype, device);
  }
  if (cfg.ls_init_value) {  // timm: a gamma whenever ls_init_value is not None (0 gives zeros)
    gamma = make_parameter({dim}, dtype, device);
    gamma.fill_(*cfg.ls_init_value);
  }
}

ConvNeXtBlock::End ConvNeXtBlock::end(bool training) const {
  if (!gamma.defined()) return End::plain;  // no layer scale (ls_init_value: null)
  return training && drop_path_prob > 0 ? End::scaled_drop : End::fused_residual;
}

Tensor ConvNeXtBlock::forward(const Tensor& x, bool training, Generator& gen) {
  Tensor h = wt_conv_dw ? wt_conv_dw->forward(x) : conv_dw->forward(x);
  h = fc1.forward(norm.forward(h));
  switch (end(training)) {
    case End::fused_residual:  // x + gamma * fc2(gelu(h)): gamma folded into fc2, x added by its
                               // GEMM
      return gelu_linear_residual(x, h, fc2.weight, fc2.bias, gamma);
    case End::scaled_drop: {  // x + drop_path(gamma * fc2(gelu(h))): gamma folded, one residual
                              // pass
      const Tensor scale = drop_path_scale(x.size(0), drop_path_prob, x.dtype(), x.device(), gen);
      return add_scaled_samples(x, gelu_linear_scaled(h, fc2.weight, fc2.bias, gamma), scale);
    }
    case End::plain: break;
  }
  h = gelu_linear(h, fc2.weight, fc2.bias);  // fc2(gelu(fc1(h))), GELU recomputed in backward
  const bool dropping = training && drop_path_prob > 0;
  return residual_add(x, dropping ? drop_path(h, drop_path_prob, training, gen) : h);
}

void ConvNeXtBlock::collect(const std::string& prefix, std::vector<ParamRef>& out) const {
  // PyTorch's state_dict lists a module's own parameters before its children's.
  if (gamma.defined()) out.push_back({prefix + "gamma", gamma, true, true});
  if (wt_conv_dw) wt_conv_dw->collect(prefix + "conv_dw.", out);
  if (conv_dw) conv_dw->collect(prefix + "conv_dw.", out);
  norm.collect(prefix + "norm.", out);
  fc1.collect(prefix + "mlp.fc1.", out);
  fc2.collect(prefix + "mlp.fc2.", out);
}

// ---- stage ----------------------------------------------------------------------------------------

ConvNeXtStage::ConvNeXtStage(int64_t in_dim, int64_t out_dim, int stride, int depth, const ModelConfig& cfg,
                             int wt_levels, const std::vector<double>& drop_path, Generator& gen,
                             DType dtype, Device device, const std::string& name) {
  if (in_dim != out_dim || stride > 1) {  // timm ConvNeXtStage: kernel 2 when striding, else 1
    const int k = stride > 1 ? 2 : 1;
    down_norm = std::make_unique<LayerNorm>(in_dim, 1e-6, dtype, device);
    down_conv = make_conv(in_dim, out_dim, k, stride, 0, 1, gen, dtype, device);
  }
  for (int j = 0; j < depth; ++j)
    blocks.push_back(std::make_unique<ConvNeXtBlock>(out_dim, cfg, wt_levels, drop_path[static_cast<size_t>(j)],
                                                     gen, dtype, device, name + ".blocks." + std::to_string(j)));
}

Tensor ConvNeXtStage::forward(const Tensor& x_in, bool training, Generator& gen) {
  Tensor x = x_in;
  if (down_conv) x = down_conv->forward(down_norm->forward(x));
  for (auto& b : blocks) x = b->forward(x, training, gen);
  return x;
}

void ConvNeXtStage::collect(const std::string& prefix, std::vector<ParamRef>& out) const {
  if (down_norm) {
    down_norm->collect(prefix + "downsample.0.", out);
    down_conv->collect(prefix + "downsample.1.", out);
  }
  for (size_t j = 0; j < blocks.size(); ++j) blocks[j]->collect(prefix + "blocks." + std::to_string(j) + ".", out);
}

// ---- model ----------------------------------------------------------------------------------------

ConvNeXt::ConvNeXt(const ModelConfig& cfg, uint64_t seed, DType dt, Device dev)
    : config(cfg), dtype(dt), device(dev), compute_dtype(dt), drop_gen(seed ^ 0x9e3779b97f4a7c15ull) {
  config.validate();
  Generator gen(seed);
  stem_conv = make_conv(cfg.in_chans, cfg.dims[0], cfg.patch_size, cfg.patch_size, 0, 1, gen, dtype, device);
  stem_norm = std::make_unique<LayerNorm>(cfg.dims[0], 1e-6, dtype, device);

  // timm: drop path rate rises linearly from 0 to drop_path_rate over all blocks.
  int total = 0;
  for (int d : cfg.depths) total += d;
  std::vector<double> rates(static_cast<size_t>(total));
  for (int i = 0; i < total; ++i) rates[static_cast<size_t>(i)] = total > 1 ? cfg.drop_path_rate * i / (total - 1) : 0.0;

  const std::vector<int> strides = cfg.stage_strides();
  int64_t prev = cfg.dims[0];
  size_t at = 0;
  for (size_t s = 0; s < cfg.depths.size(); ++s) {
    std::vector<double> dp(rates.begin() + static_cast<long>(at), rates.begin() + static_cast<long>(at + static_cast<size_t>(cfg.depths[s])));
    at += static_cast<size_t>(cfg.depths[s]);
    stages.push_back(std::make_unique<ConvNeXtStage>(prev, cfg.dims[s], strides[s], cfg.depths[s], cfg,
                                                     cfg.wtconv ? cfg.wt_levels[s] : 0, dp, gen, dtype,
                                                     device, "stages." + std::to_string(s)));
    prev = cfg.dims[s];
  }
  head_norm = std::make_unique<LayerNorm>(prev, 1e-6, dtype, device);
  head_fc = std::make_unique<Linear>(prev, cfg.num_classes, gen, true, dtype, device);
  if (cfg.head_init_scale != 1.0) {
    Tensor w = head_fc->weight.to(Device::cpu).to(DType::f64);
    std::vector<double> v = w.to_vector<double>();
    for (double& e : v) e *= cfg.head_init_scale;
    head_fc->weight.copy_(Tensor::from_vector(w.shape(), v));
  }
}

Tensor ConvNeXt::forward(const Tensor& x, bool training, std::vector<std::pair<std::string, Tensor>>* acts) {
  HG_CHECK(x.ndim() == 4 && x.size(3) == config.in_chans, "ConvNeXt.forward: expected input (N, H, W, ",
           config.in_chans, ") NHWC, got ", x.describe());
  const int64_t min_side = config.total_stride();
  HG_CHECK(x.size(1) >= min_side && x.size(2) >= min_side, "ConvNeXt.forward: input ", x.describe(),
           " is smaller than the model's total stride ", min_side, " (patch_size ", config.patch_size,
           " and the stage strides): every side must be at least ", min_side, " pixels");
  give_level_advice(std::min(x.size(1), x.size(2)));  // once per model, at the size it really gets
  Tensor h = stem_norm->forward(stem_conv->forward(x.to(compute_dtype)));
  if (acts) acts->emplace_back("act.stem", h);
  for (size_t s = 0; s < stages.size(); ++s) {
    h = stages[s]->forward(h, training, drop_gen);
    if (acts) acts->emplace_back("act.stages." + std::to_string(s), h);
  }
  return head(h, training);
}

Tensor ConvNeXt::head(const Tensor& h, bool training) {
  const Tensor pooled =
      dropout(head_norm->forward(global_avg_pool(h)), config.drop_rate, training, drop_gen);
  return head_fc->forward(pooled).to(
      dtype);  // loss and metrics in the parameters' dtype (f32 for bf16)
}

void ConvNeXt::give_level_advice(int64_t img_size) {
  if (level_advice_given_) return;
  level_advice_given_ = true;
  const std::string advice = wtconv_level_advice(config, img_size);
  if (!advice.empty()) spdlog::warn("{}", advice);
}

void ConvNeXt::collect(const std::string& prefix, std::vector<ParamRef>& out) const {
  stem_conv->collect(prefix + "stem.0.", out);
  stem_norm->collect(prefix + "stem.1.", out);
  for (size_t s = 0; s < stages.size(); ++s) stages[s]->collect(prefix + "stages." + std::to_string(s) + ".", out);
  head_norm->collect(prefix + "head.norm.", out);
  head_fc->collect(prefix + "head.fc.", out);
}

void ConvNeXt::set_wtconv_mode(WTConvMode mode) {
  for (auto& st : stages)
    for (auto& b : st->blocks)
      if (b->wt_conv_dw) b->wt_conv_dw->set_mode(mode);
}

int64_t ConvNeXt::num_trainable() const {
  int64_t n = 0;
  for (const auto& p : named_tensors()) n += p.trainable ? p.tensor.numel() : 0;
  return n;
}

int64_t ConvNeXt::num_fixed() const {
  int64_t n = 0;
  for (const auto& p : named_tensors()) n += p.trainable ? 0 : p.tensor.numel();
  return n;
}

}  // namespace hg
