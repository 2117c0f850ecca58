// Training checkpoints (see checkpoint.h).
#include "train/checkpoint.h"

#include <nlohmann/json.hpp>

#include "core/safetensors.h"
#include "dist/process_group.h"
#include "models/checkpoint.h"

namespace hg::train {

static const char* kOptPrefix = "optimizer.";

namespace {

// The "state" entry of a checkpoint's metadata; nullopt when there is none.
std::optional<TrainState> state_from_metadata(const std::map<std::string, std::string>& meta, const std::string& path) {
  auto it = meta.find("state");
  if (it == meta.end()) return std::nullopt;
  TrainState s;
  try {
    auto j = nlohmann::json::parse(it->second);
    s.epoch = j.at("epoch");
    s.step_in_epoch = j.at("step_in_epoch");
    s.updates = j.at("updates");
    s.best_top1 = j.at("best_top1");
    s.best_epoch = j.at("best_epoch");
    s.epoch_loss_sum = j.at("epoch_loss_sum");
    s.epoch_images = j.at("epoch_images");
    // recorded since the eval scores rank checkpoint-N files; absent in older checkpoints
    s.eval_top1 = j.value("eval_top1", -1.0);
    s.eval_top5 = j.value("eval_top5", -1.0);
    s.eval_loss = j.value("eval_loss", -1.0);
    s.world_size = j.value("world_size", int64_t{1});
    s.eval_top1_ema = j.value("eval_top1_ema", -1.0);  // runs with a model EMA
    s.eval_top5_ema = j.value("eval_top5_ema", -1.0);
    s.eval_loss_ema = j.value("eval_loss_ema", -1.0);
    s.run = j.value("run", std::string());
  } catch (const nlohmann::json::exception& e) {
    throw Error(str("checkpoint ", path, ": malformed metadata 'state': ", e.what()));
  }
  return s;
}

}  // namespace

void save_checkpoint(const std::string& path, const ConvNeXt& model, const Optimizer* opt,
                     const TrainState& s, const std::string& config_yaml, const ConvNeXt* ema) {
  std::vector<std::pair<std::string, Tensor>> tensors = timm_state_dict(model);
  if (opt)
    for (auto& [name, t] : opt->state_dict(kOptPrefix)) tensors.emplace_back(name, t);
  if (ema)
    for (auto& [name, t] : timm_state_dict(*ema)) tensors.emplace_back(kEmaPrefix + name, t);
  nlohmann::json state = {{"epoch", s.epoch},           {"step_in_epoch", s.step_in_epoch},
                          {"updates", s.updates},       {"best_top1", s.best_top1},
                          {"best_epoch", s.best_epoch}, {"epoch_loss_sum", s.epoch_loss_sum},
                          {"epoch_images", s.epoch_images}, {"eval_top1", s.eval_top1},
                          {"eval_top5", s.eval_top5},   {"eval_loss", s.eval_loss},
                          {"world_size", s.world_size}};
  if (!s.run.empty()) state["run"] = s.run;
  if (s.eval_top1_ema >= 0 || s.eval_loss_ema >= 0) {
    state["eval_top1_ema"] = s.eval_top1_ema;
    state["eval_top5_ema"] = s.eval_top5_ema;
    state["eval_loss_ema"] = s.eval_loss_ema;
  }
  std::map<std::string, std::string> meta = {
      {"format", "haargrad-train-checkpoint-1"},
      {"state", state.dump()},
      {"model_config", model.config.to_json()},
      {"rng.drop_path", model.drop_gen.state()},
      {"config", config_yaml},
  };
  if (dist::is_main()) safetensors::save(path, tensors, meta);  // data parallel: rank 0 writes
}

TrainState load_checkpoint(const std::string& path, ConvNeXt& model, Optimizer* opt) {
  safetensors::File f = safetensors::load(path);
  std::map<std::string, Tensor> weights, opt_state;
  for (auto& [name, t] : f.tensors) {
    if (name.rfind(kOptPrefix, 0) == 0)
      opt_state.emplace(name, t);
    else if (name.rfind(kEmaPrefix, 0) != 0)  // the EMA: load_ema_weights
      weights.emplace(name, t);
  }
  try {
    load_state_dict(model, weights);
  } catch (const Error& e) {
    // name the model the checkpoint was saved from (a line "model: X" of its stored config)
    std::string saved_from;
    if (auto c = f.metadata.find("config"); c != f.metadata.end()) {
      const size_t at = c->second.find("\nmodel: ");
      if (at != std::string::npos) {
        const size_t b = at + 8, e2 = c->second.find('\n', b);
        saved_from = c->second.substr(b, e2 == std::string::npos ? std::string::npos : e2 - b);
        if (saved_from.size() >= 2 && saved_from.front() == '"' && saved_from.back() == '"')
          saved_from = saved_from.substr(1, saved_from.size() - 2);
      }
    }
    throw Error(str("checkpoint ", path,
                    saved_from.empty() ? std::string() : str(" (saved from model ", saved_from, ")"),
                    " does not fit model ", model.config.model, ": ", e.what()));
  }
  const TrainState s = state_from_metadata(f.metadata, path).value_or(TrainState{});
  if (auto r = f.metadata.find("rng.drop_path"); r != f.metadata.end()) model.drop_gen.set_state(r->second);
  if (opt && !opt_state.empty()) opt->load_state_dict(opt_state, kOptPrefix);
  return s;
}

bool load_ema_weights(const std::string& path, ConvNeXt& model) {
  safetensors::File f = safetensors::load(path);
  std::map<std::string, Tensor> ema;
  for (auto& [name, t] : f.tensors)
    if (name.rfind(kEmaPrefix, 0) == 0) ema.emplace(name, t);
  if (ema.empty()) return false;
  try {
    load_state_dict(model, ema, /*strict=*/true, kEmaPrefix);
  } catch (const Error& e) {
    throw Error(str("checkpoint ", path, ": its EMA weights (", kEmaPrefix, "*) do not fit model ",
                    model.config.model, ": ", e.what()));
  }
  return true;
}

std::string checkpoint_config_yaml(const std::string& path) {
  const std::map<std::string, std::string> meta = safetensors::read_metadata(path);
  auto it = meta.find("config");
  return it == meta.end() ? "" : it->second;
}

std::optional<TrainState> read_train_state(const std::string& path) {
  return state_from_metadata(safetensors::read_metadata(path), path);
}

}  // namespace hg::train
