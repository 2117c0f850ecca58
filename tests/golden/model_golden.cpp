// Golden checker for ConvNeXt / WTConvNeXt model files (see golden.h and ../shared/golden/README.md):
// logits, loss, act.*, grad.* and three AdamW steps (adamw3.*) against timm / the reference.
#include <nlohmann/json.hpp>

#include "core/autograd.h"
#include "golden/golden.h"
#include "layers/loss.h"
#include "models/checkpoint.h"
#include "models/convnext.h"
#include "test_util.h"
#include "train/optimizer.h"

namespace hg::test {
namespace {

// NCHW golden tensor -> NHWC (activations and inputs).
Tensor nchw_to_nhwc(const Tensor& t) { return t.permute({0, 2, 3, 1}).contiguous(); }

ModelConfig config_from_metadata(const safetensors::File& f) {
  auto j = nlohmann::json::parse(f.metadata.at("config"));
  ModelConfig c;
  c.model = j.at("model").get<std::string>();
  c.wtconv = c.model == "wtconvnext";
  c.depths = j.at("depths").get<std::vector<int>>();
  c.dims = j.at("dims").get<std::vector<int>>();
  c.num_classes = j.at("num_classes").get<int>();
  c.kernel_size = j.value("kernel_size", c.wtconv ? 5 : 7);
  c.patch_size = j.value("patch_size", 4);  // timm's default; the shared files do not set it
  if (c.wtconv) c.wt_levels = j.at("wt_levels").get<std::vector<int>>();
  const Tensor& input = f.tensors.at("input");
  c.in_chans = static_cast<int>(input.size(1));
  return c;
}

std::map<std::string, Tensor> with_prefix(const safetensors::File& f, const std::string& prefix) {
  std::map<std::string, Tensor> out;
  for (const auto& [k, t] : f.tensors)
    if (k.rfind(prefix, 0) == 0) out.emplace(k.substr(prefix.size()), t);
  return out;
}

}  // namespace

bool is_model_file(const safetensors::File& f) {
  return f.metadata.count("config") && f.tensors.count("input") && f.tensors.count("logits") &&
         f.tensors.count("labels") && f.tensors.count("loss");
}

std::vector<GoldenCheck> check_model_file(const safetensors::File& f, DType dtype, Device device) {
  HG_CHECK(is_model_file(f), "check_model_file: not a model golden file");
  // bf16 (mixed precision: f32 parameters, bf16 activations): every stored activation is rounded
  // to 8 significant bits (relative 2^-9 = 2e-3 per rounding), and a few dozen roundings in
  // sequence through the blocks grow that to ~1e-2 for activations and logits. The worst are the
  // gradients of per-channel parameters (biases, layer scale, WTConv scales): sums over every
  // pixel of products of two bf16 tensors, measured up to 3.5e-2 on the CPU and 5.0e-2 on the
  // H200 (grad of a WTConv wavelet_scale); 8e-2 leaves room for the summation order.
  const double tol = dtype == DType::f64 ? 1e-10 : dtype == DType::bf16 ? 8e-2 : 1e-4;
  const bool mixed = dtype == DType::bf16;
  const DType param_dtype = mixed ? DType::f32 : dtype;
  std::vector<GoldenCheck> checks;
  auto compare = [&](const std::string& key, const Tensor& ours, const Tensor& ref) {
    checks.push_back({key, rel_error(ours.to(Device::cpu).to(DType::f64), ref.to(DType::f64)), tol});
  };

  ModelConfig cfg = config_from_metadata(f);
  ConvNeXt model(cfg, 0, param_dtype, device);
  if (mixed) model.compute_dtype = DType::bf16;
  const std::map<std::string, Tensor> params = with_prefix(f, "param.");
  load_state_dict(model, params);

  Tensor x = nchw_to_nhwc(f.tensors.at("input")).to(param_dtype).to(device);
  Tensor labels = f.tensors.at("labels").to(device);

  // forward + backward (eval mode: no drop path)
  std::vector<std::pair<std::string, Tensor>> acts;
  Tensor logits = model.forward(x, false, &acts);
  Tensor loss = cross_entropy(logits, labels);
  compare("logits", logits, f.tensors.at("logits"));
  compare("loss", loss.reshape({1}), f.tensors.at("loss").reshape({1}));
  for (auto& [name, t] : acts) {
    auto it = f.tensors.find(name);
    HG_CHECK(it != f.tensors.end(), "golden file has no ", name);
    compare(name, t, nchw_to_nhwc(it->second));
  }
  acts.clear();
  autograd::backward(loss);
  for (const ParamRef& p : model.named_tensors()) {
    if (!p.trainable) continue;
    auto it = f.tensors.find("grad." + p.name);
    HG_CHECK(it != f.tensors.end(), "golden file has no grad.", p.name);
    HG_CHECK(p.tensor.grad().defined(), "no gradient reached ", p.name);
    compare("grad." + p.name, p.tensor.grad(), it->second);
  }

  // three AdamW steps from param.* on the same batch (settings in __metadata__.adamw3)
  if (f.tensors.count("adamw3.losses")) {
    load_state_dict(model, params);
    std::vector<ParamRef> trainable;
    for (const ParamRef& p : model.named_tensors())
      if (p.trainable) {
        p.tensor.clear_grad();
        trainable.push_back(p);
      }
    train::AdamW opt(train::param_groups_weight_decay(trainable, 1e-3, 0.05), 0.9, 0.999, 1e-8);
    std::vector<double> losses;
    for (int step = 0; step < 3; ++step) {
      opt.zero_grad();
      Tensor l = cross_entropy(model.forward(x, false), labels);
      losses.push_back(l.item());
      autograd::backward(l);
      opt.step();
    }
    compare("adamw3.losses", Tensor::from_vector<double>({3}, losses), f.tensors.at("adamw3.losses"));
    for (const ParamRef& p : trainable) {
      auto it = f.tensors.find("adamw3." + p.name);
      HG_CHECK(it != f.tensors.end(), "golden file has no adamw3.", p.name);
      compare("adamw3." + p.name, p.tensor, it->second);
    }
  }
  return checks;
}

}  // namespace hg::test
