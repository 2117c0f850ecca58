// Fine-tuning start from a checkpoint's weights (see finetune.h).
#include "train/finetune.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <system_error>

#include "core/safetensors.h"
#include "models/checkpoint.h"
#include "train/checkpoint.h"

namespace hg::train {
namespace {
bool has_prefix(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
}  // namespace

void check_initial_checkpoint(const std::string& path) {
  std::error_code ec;
  HG_CHECK(std::filesystem::is_regular_file(path, ec), "initial_checkpoint: ", path,
           no_file_reason(path), " (the weights a fine-tuning run starts from)");
  try {
    safetensors::read_metadata(path);  // its header, and a file cut short
  } catch (const Error& e) {
    throw Error(str("initial_checkpoint: ", e.what()));
  }
}

InitialCheckpoint load_initial_checkpoint(const std::string& path, ConvNeXt& model) {
  check_initial_checkpoint(path);
  safetensors::File f = safetensors::load(path);
  InitialCheckpoint r;
  // the model EMA's weights where the checkpoint holds them, as timm's load_checkpoint (use_ema
  // by default: its state_dict_ema) takes them; else the model's. The optimizer state and the
  // run's position are a resume's, not wanted here.
  for (const auto& entry : f.tensors) r.ema = r.ema || has_prefix(entry.first, kEmaPrefix);
  std::map<std::string, Tensor> weights;
  for (auto& [name, t] : f.tensors)
    if (r.ema && has_prefix(name, kEmaPrefix))
      weights.emplace(name.substr(std::string(kEmaPrefix).size()), t);
    else if (!r.ema && !has_prefix(name, "optimizer.") && !has_prefix(name, kEmaPrefix))
      weights.emplace(name, t);
  weights = clean_state_dict(std::move(weights));  // "module.*" of torch's DataParallel, as timm
  const int64_t classes = model.config.num_classes;
  const auto w = weights.find("head.fc.weight");
  if (w != weights.end()) r.checkpoint_classes = w->second.ndim() >= 1 ? w->second.size(0) : 0;
  // A backbone without its classifier (timm's num_classes=0, whose head.fc is an Identity: the
  // file has no head.fc.*) starts a new label set as a head of other classes does.
  const bool headless = w == weights.end() && weights.count("head.fc.bias") == 0 &&
                        weights.count("head.norm.weight") != 0;
  if (headless || (w != weights.end() && r.checkpoint_classes != classes)) {
    // keep the model's own (freshly initialised) classifier: it stands in for the checkpoint's
    r.head_reinitialised = true;
    for (const ParamRef& p : model.named_tensors())
      if (has_prefix(p.name, "head.fc.")) weights[p.name] = p.tensor.to(Device::cpu);
  }
  // RGB weights, a gray model: the stem's three input channels summed into one (timm's
  // adapt_input_conv, for in_chans 1)
  if (auto w = weights.find("stem.0.weight"); w != weights.end() && model.config.in_chans == 1 &&
                                              w->second.ndim() == 4 && w->second.size(1) == 3) {
    const Shape s = w->second.shape();
    const std::vector<float> rgb = w->second.to(DType::f32).to_vector<float>();
    const size_t k = static_cast<size_t>(s[2] * s[3]);
    std::vector<float> gray(static_cast<size_t>(s[0]) * k);
    for (size_t o = 0; o < static_cast<size_t>(s[0]); ++o)
      for (size_t j = 0; j < k; ++j)
        gray[o * k + j] =
            rgb[(o * 3) * k + j] + rgb[(o * 3 + 1) * k + j] + rgb[(o * 3 + 2) * k + j];
    w->second = Tensor::from_vector(Shape{s[0], 1, s[2], s[3]}, gray);
    r.stem_channels_summed = true;
  }
  try {
    load_state_dict(model, weights);
  } catch (const Error& e) {
    ModelConfig compared = model.config;  // a summed RGB stem fits: in_chans is no reason
    if (r.stem_channels_summed) compared.in_chans = 3;
    const std::string keys = stored_config_differences(f.metadata, compared, false);
    throw Error(str("initial_checkpoint ", path, " does not fit model ", model.config.model, ": ",
                    keys, keys.empty() ? "" : "; ", e.what()));
  }
  // weights of a diverged run: its first step's loss would be NaN, which names no file
  check_finite_weights(model, str("initial_checkpoint ", path),
                       "start from an earlier checkpoint of that run");
  if (headless)
    spdlog::warn(
        "initial_checkpoint {}: it holds no classifier (head.fc: a backbone, timm's "
        "num_classes=0), the model's {} classes start from head.fc's initialisation",
        path, classes);
  else if (r.head_reinitialised)
    spdlog::warn(
        "initial_checkpoint {}: its classifier has {} classes, the model {}: head.fc is "
        "re-initialised "
        "(fine-tuning on a new label set)",
        path, r.checkpoint_classes, classes);
  if (r.stem_channels_summed)
    spdlog::info(
        "initial_checkpoint {}: its stem takes 3 channels, the model 1: stem.0.weight is the sum "
        "over the 3 (timm's adapt_input_conv)",
        path);
  if (r.ema)
    spdlog::info(
        "initial_checkpoint {}: the model EMA's weights ({}*) loaded, as timm's load_checkpoint "
        "takes them (for the model's own: `haargrad export` the checkpoint without --ema, and "
        "start from that)",
        path, kEmaPrefix);
  else if (!r.head_reinitialised)
    spdlog::info("initial_checkpoint {}: weights loaded", path);
  return r;
}

namespace {

// `t` (any dtype, any device) with every element e replaced by f(e), computed in f64.
template <typename F>
void map_elements(Tensor& t, F f) {
  const Tensor host = t.to(Device::cpu).to(DType::f64);
  std::vector<double> v = host.to_vector<double>();
  for (double& e : v) e = f(e);
  t.copy_(Tensor::from_vector(host.shape(), v));
}

}  // namespace

std::string apply_head_init(ConvNeXt& model, std::optional<double> scale,
                            std::optional<double> bias) {
  Linear& fc = *model.head_fc;
  std::string said;
  if (scale) {
    map_elements(fc.weight, [&](double e) { return e * *scale; });
    if (fc.bias.defined()) map_elements(fc.bias, [&](double e) { return e * *scale; });
    said = str("head_init_scale ", *scale, ": head.fc's weight and bias x ", *scale);
  }
  if (bias && fc.bias.defined()) {
    map_elements(fc.bias, [&](double) { return *bias; });
    said += str(said.empty() ? "" : "; ", "head_init_bias ", *bias, ": head.fc's bias = ", *bias);
  }
  return said;
}

}  // namespace hg::train
