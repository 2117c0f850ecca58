// Training checkpoints (see checkpoint.h).
#include "train/checkpoint.h"

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>

#include "core/atomic_file.h"
#include "core/hash.h"
#include "core/safetensors.h"
#include "core/utf8.h"
#include "dist/process_group.h"
#include "models/checkpoint.h"
#include "train/config.h"

namespace hg::train {

static const char* kOptPrefix = "optimizer.";

namespace {

// Reads the "state" entry's fields, each checked for its type and range and named in errors: a
// hand-edited or damaged entry (epoch -7, an epoch past 2^63) must not steer a run.
class StateFields {
 public:
  StateFields(const nlohmann::json& j, const std::string& path) : j_(j), path_(path) {}

  int64_t integer(const char* key, int64_t lo, std::optional<int64_t> absent = std::nullopt) const {
    if (!j_.contains(key)) return absent ? *absent : fail(key, "is missing");
    const nlohmann::json& v = j_.at(key);
    const bool fits =
        v.is_number_integer() &&
        (!v.is_number_unsigned() ||
         v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
    if (!fits) return fail(key, str("is ", brief(v), ", not an integer"));
    const int64_t x = v.get<int64_t>();
    if (x < lo) return fail(key, str("is ", x, ", below ", lo));
    // far past any real run (a billion epochs, 10^15 updates or images): an edit or damage
    if (x > kMaxCount) return fail(key, str("is ", x, ", beyond any run (> ", kMaxCount, ")"));
    return x;
  }
  static constexpr int64_t kMaxCount = 1000000000000000;
  // A number in [lo, hi], or exactly -1 when `none_ok` (no value yet).
  double number(const char* key, double lo, double hi, bool none_ok,
                std::optional<double> absent = std::nullopt) const {
    if (!j_.contains(key)) return absent ? *absent : fail(key, "is missing");
    const nlohmann::json& v = j_.at(key);
    if (!v.is_number()) return fail(key, str("is ", brief(v), ", not a number"));
    const double x = v.get<double>();
    if (!(none_ok && x == -1) && !(x >= lo && x <= hi))
      return fail(key,
                  str("is ", x, ", outside [", lo, ", ", hi, "]", none_ok ? " (or -1: none)" : ""));
    return x;
  }
  std::vector<std::string> texts(const char* key) const {  // a list of strings; none: {}
    if (!j_.contains(key)) return {};
    const nlohmann::json& v = j_.at(key);
    if (!v.is_array() ||
        !std::all_of(v.begin(), v.end(), [](const auto& e) { return e.is_string(); }))
      fail(key, "is not a list of strings");
    return v.get<std::vector<std::string>>();
  }
  std::string text(const char* key) const {
    if (!j_.contains(key)) return "";
    if (!j_.at(key).is_string()) fail(key, "is not a string");
    return j_.at(key).get<std::string>();
  }
  [[noreturn]] int64_t fail(const char* key, const std::string& what) const {
    throw Error(str("checkpoint ", path_, ": metadata 'state': ", key, " ", what));
  }

 private:
  static std::string brief(const nlohmann::json& v) {
    const std::string t = v.dump();
    return t.size() <= 40 ? t : t.substr(0, 37) + "...";
  }
  const nlohmann::json& j_;
  const std::string& path_;
};

// The format every haargrad version has written into a training checkpoint's metadata.
constexpr const char* kCheckpointFormat = "haargrad-train-checkpoint-1";

// A file with a run position must be a haargrad training checkpoint of the format this version
// reads: one of another format (a later version's, another program's, an edit) or none was read
// as one unchecked, and its fields steered a resume. Plain weights (no "state": timm's, an
// export's "pt") are not training checkpoints and are not checked.
void check_checkpoint_format(const std::map<std::string, std::string>& meta,
                             const std::string& path) {
  const auto it = meta.find("format");
  if (it != meta.end() && it->second == kCheckpointFormat) return;
  const std::string prefix = "haargrad-train-checkpoint-";
  const std::string what = it == meta.end() ? std::string("is missing")
                                            : str("is '", printable(it->second.substr(0, 60)),
                                                  it->second.size() > 60 ? "...'" : "'");
  throw Error(
      str("checkpoint ", path, ": metadata 'format' ", what, ", not '", kCheckpointFormat,
          "', though it holds a training state ('state'): ",
          it != meta.end() && it->second.rfind(prefix, 0) == 0
              ? "a checkpoint of another haargrad version, which this one cannot read"
              : "the file was edited or written by another program; use a checkpoint the trainer "
                "wrote"));
}

// A plateau's best metric as JSON: a number, or "inf" / "-inf" before the first counted epoch
// (torch's mode_worse, which JSON numbers cannot hold).
nlohmann::json best_to_json(double best) {
  if (std::isfinite(best)) return best;
  return best > 0 ? "inf" : "-inf";
}

// The "plateau" entry of a checkpoint's state, each field checked as the others are: a damaged
// entry would steer the lr of every epoch after the resume.
PlateauState plateau_from_json(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object())
    throw Error(str("checkpoint ", path, ": metadata 'state': plateau is not a JSON object"));
  const StateFields f(j, path);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  PlateauState st;
  st.lr = f.number("lr", 0, std::numeric_limits<double>::max(), false);
  st.bad_epochs = f.integer("bad_epochs", 0);
  st.cooldown_left = f.integer("cooldown_left", 0);
  const nlohmann::json& best = j.contains("best") ? j.at("best") : nlohmann::json();
  if (best == "inf" || best == "-inf")
    st.best = best == "inf" ? kInf : -kInf;
  else
    st.best = f.number("best", -std::numeric_limits<double>::max(),
                       std::numeric_limits<double>::max(), false);
  return st;
}

// The "state" entry of a checkpoint's metadata; nullopt when there is none.
std::optional<TrainState> state_from_metadata(const std::map<std::string, std::string>& meta, const std::string& path) {
  auto it = meta.find("state");
  if (it == meta.end()) return std::nullopt;
  check_checkpoint_format(meta, path);
  const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    throw Error(str("checkpoint ", path, ": metadata 'state' is not a JSON object"));
  const StateFields f(j, path);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  TrainState s;
  s.epoch = f.integer("epoch", 0);
  if (s.epoch > 1000000000) f.fail("epoch", str("is ", s.epoch, ", beyond any run (> 10^9)"));
  s.step_in_epoch = f.integer("step_in_epoch", 0);
  s.updates = f.integer("updates", 0);
  s.best_top1 = f.number("best_top1", 0, 100, true);
  s.best_epoch = f.integer("best_epoch", -1);
  // a run without validation ranks by train loss (absent in runs with it, and in older files)
  s.best_train_loss = f.number("best_train_loss", 0, kInf, true, -1.0);
  if (s.best_epoch == 0 || s.best_epoch > s.epoch)
    f.fail("best_epoch",
           str("is ", s.best_epoch, ", not -1 (none) or an epoch done (1 .. ", s.epoch, ")"));
  s.epoch_loss_sum = f.number("epoch_loss_sum", -kInf, kInf, false);
  s.epoch_images = f.integer("epoch_images", 0);
  s.epoch_seconds = f.number("epoch_seconds", 0, kInf, false, 0.0);
  s.epoch_images_timed = f.integer("epoch_images_timed", 0, int64_t{0});
  s.epoch_wait_seconds = f.number("epoch_wait_seconds", 0, kInf, false, 0.0);
  s.epoch_peak_mib = f.number("epoch_peak_mib", 0, kInf, false, 0.0);
  // recorded since the eval scores rank checkpoint-N files; absent in older checkpoints
  s.eval_top1 = f.number("eval_top1", 0, 100, true, -1.0);
  s.eval_top5 = f.number("eval_top5", 0, 100, true, -1.0);
  s.eval_loss = f.number("eval_loss", 0, kInf, true, -1.0);
  s.world_size = f.integer("world_size", 1, int64_t{1});
  s.eval_top1_ema = f.number("eval_top1_ema", 0, 100, true, -1.0);  // runs with a model EMA
  s.eval_top5_ema = f.number("eval_top5_ema", 0, 100, true, -1.0);
  s.eval_loss_ema = f.number("eval_loss_ema", 0, kInf, true, -1.0);
  s.train_loss = f.number("train_loss", 0, kInf, true, -1.0);
  s.run = f.text("run");
  s.train_images = f.integer("train_images", 0, int64_t{0});  // absent in older checkpoints
  s.train_classes = f.text("train_classes");
  s.class_names = f.texts("class_names");
  if (j.contains("plateau")) s.plateau = plateau_from_json(j.at("plateau"), path);
  return s;
}

// The drop-path masks' generator as the checkpoint left it, when it recorded one. A damaged state
// is named with the file and key (it said only "Generator::set_state: malformed RNG state string").
void restore_drop_path_rng(const std::map<std::string, std::string>& meta, const std::string& path,
                           ConvNeXt& model) {
  const auto r = meta.find("rng.drop_path");
  if (r == meta.end()) return;
  try {
    model.drop_gen.set_state(r->second);
  } catch (const Error&) {
    throw Error(str("checkpoint ", path,
                    ": metadata 'rng.drop_path' is not a random generator's "
                    "state (",
                    r->second.size(), " characters; the file was edited or damaged)"));
  }
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
  if (s.step_in_epoch > 0) {
    state["epoch_seconds"] = s.epoch_seconds;
    state["epoch_images_timed"] = s.epoch_images_timed;
    state["epoch_wait_seconds"] = s.epoch_wait_seconds;
    state["epoch_peak_mib"] = s.epoch_peak_mib;
  }
  // (written only when set: -1 is none)
  if (s.best_train_loss >= 0) state["best_train_loss"] = s.best_train_loss;
  if (s.train_loss >= 0) state["train_loss"] = s.train_loss;
  if (!s.run.empty()) state["run"] = s.run;
  if (s.train_images > 0) state["train_images"] = s.train_images;
  if (!s.train_classes.empty()) state["train_classes"] = s.train_classes;
  if (!s.class_names.empty()) state["class_names"] = s.class_names;
  if (s.plateau)
    state["plateau"] = {{"lr", s.plateau->lr},
                        {"best", best_to_json(s.plateau->best)},
                        {"bad_epochs", s.plateau->bad_epochs},
                        {"cooldown_left", s.plateau->cooldown_left}};
  if (s.eval_top1_ema >= 0 || s.eval_loss_ema >= 0) {
    state["eval_top1_ema"] = s.eval_top1_ema;
    state["eval_top5_ema"] = s.eval_top5_ema;
    state["eval_loss_ema"] = s.eval_loss_ema;
  }
  std::map<std::string, std::string> meta = {
      {"format", kCheckpointFormat},
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
  weights = clean_state_dict(std::move(weights));  // "module.*" of torch's DataParallel, as timm
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
    const std::string keys = stored_config_differences(f.metadata, model.config);
    throw Error(
        str("checkpoint ", path,
            saved_from.empty() ? std::string() : str(" (saved from model ", saved_from, ")"),
            " does not fit model ", model.config.model, ": ", keys, keys.empty() ? "" : "; ",
            e.what()));
  }
  const std::optional<TrainState> stored = state_from_metadata(f.metadata, path);
  const TrainState s = stored.value_or(TrainState{});
  restore_drop_path_rng(f.metadata, path, model);
  if (opt && !opt_state.empty()) {
    // a parameter's step count is at most the run's updates (one for each update it took part in):
    // a larger one no run leaves (an edited or mixed-up file), and would bias-correct its moments
    // as a later step's
    if (stored)
      for (const auto& [key, t] : opt_state)
        if (key.size() > 5 && key.compare(key.size() - 5, 5, ".step") == 0 && t.numel() == 1 &&
            t.item() > static_cast<double>(s.updates))
          throw Error(str("checkpoint ", path, ": optimizer state '", key, "' counts ",
                          static_cast<int64_t>(t.item()), " steps, but the run it holds made ",
                          s.updates, " updates (the file was damaged or edited)"));
    try {
      opt->load_state_dict(opt_state, kOptPrefix);
    } catch (const Error& e) {  // its messages name the key; the file is this one
      throw Error(str("checkpoint ", path, ": ", e.what()));
    }
  }
  // timm resumes such a file too; its optimizer starts from zero, which changes the run: say so
  if (opt && opt_state.empty() && s.updates > 0 && opt->keeps_state())
    spdlog::warn(
        "checkpoint {} holds no optimizer state ({}*) after {} updates: the optimizer's "
        "state (AdamW's moments, SGD's momentum) starts from zero",
        path, kOptPrefix, s.updates);
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
    const std::string keys = stored_config_differences(f.metadata, model.config);
    throw Error(str("checkpoint ", path, ": its EMA weights (", kEmaPrefix, "*) do not fit model ",
                    model.config.model, ": ", keys, keys.empty() ? "" : "; ", e.what()));
  }
  return true;
}

std::string stored_config_differences(const std::map<std::string, std::string>& meta,
                                      const ModelConfig& model, bool with_classes) {
  const auto yaml = meta.find("config");
  if (yaml == meta.end()) return "";
  ModelConfig stored;
  try {
    stored = model_config_from(config_from_yaml(yaml->second, "the stored config"));
  } catch (const Error&) {  // an older or damaged config: the shapes alone say it
    return "";
  }
  std::string out;
  auto differ = [&](const char* key, const auto& there, const auto& here, auto text) {
    if (there != here)
      out += str(out.empty() ? "the config stored in it has " : ", ", key, " ", text(there),
                 " (the model: ", text(here), ")");
  };
  auto list = [](const std::vector<int>& v) { return shape_str(v); };
  auto number = [](int v) { return std::to_string(v); };
  auto scale = [](const std::optional<double>& v) { return v ? str(*v) : std::string("null"); };
  differ("depths", stored.depths, model.depths, list);
  differ("dims", stored.dims, model.dims, list);
  differ("patch_size", stored.patch_size, model.patch_size, number);
  differ("kernel_size", stored.kernel_size, model.kernel_size, number);
  if (stored.wtconv && model.wtconv) differ("wt_levels", stored.wt_levels, model.wt_levels, list);
  if (stored.ls_init_value.has_value() != model.ls_init_value.has_value())  // a gamma or none
    differ("ls_init_value", scale(stored.ls_init_value), scale(model.ls_init_value),
           [](const std::string& v) { return v; });
  if (with_classes) differ("num_classes", stored.num_classes, model.num_classes, number);
  differ("in_chans", stored.in_chans, model.in_chans, number);
  return out;
}

std::string checkpoint_config_yaml(const std::string& path) {
  const std::map<std::string, std::string> meta = safetensors::read_metadata(path);
  auto it = meta.find("config");
  return it == meta.end() ? "" : it->second;
}

std::optional<TrainState> read_train_state(const std::string& path) {
  return state_from_metadata(safetensors::read_metadata(path), path);
}

std::string recorded_args_yaml(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return "";
  std::string text = io::read_file(path);
  return text.find_first_not_of(" \t\r\n") == std::string::npos ? std::string() : text;
}

std::string no_file_reason(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return " is not a regular file";
  return ec ? " cannot be read: " + ec.message() : " does not exist";
}

uint64_t class_names_hash(const std::vector<std::string>& names) {
  uint64_t h = kFnv1aSeed;  // FNV-1a over the names, each with its ending 0 byte: the order counts
  for (const std::string& n : names) h = fnv1a(n.c_str(), n.size() + 1, h);
  return h;
}

std::string class_names_tag(const std::vector<std::string>& names) {
  return names.empty() ? "" : str(std::hex, class_names_hash(names));
}

std::string byte_order_classes_note(const std::string& recorded,
                                    const std::vector<std::string>& names) {
  std::vector<std::string> bytewise = names;
  std::sort(bytewise.begin(), bytewise.end());
  if (recorded.empty() || bytewise == names || recorded != class_names_tag(bytewise)) return "";
  return "its run numbered the classes in byte-wise order (haargrad before 2026-12-07, as "
         "torchvision), where timm's natural order, used now, numbers these class folders "
         "otherwise (\"1\", \"10\", \"2\" are now \"1\", \"2\", \"10\"; \"Zebra\", \"cat\" are now "
         "\"cat\", \"Zebra\"): its labels stand for other classes here than the ones its weights "
         "learnt; name the class folders so that both orders agree (numbers of one width: 01, 02, "
         "10; one letter case)";
}

std::string other_classes_note(const TrainState& st, const std::vector<std::string>& names) {
  if (names.empty() || !byte_order_classes_note(st.train_classes, names).empty()) return "";
  std::string which;  // the first label that stands for another class, where the names are known
  if (!st.class_names.empty()) {
    if (st.class_names == names) return "";
    for (size_t j = 0; j < std::min(st.class_names.size(), names.size()) && which.empty(); ++j)
      if (st.class_names[j] != names[j])
        which = str(" (label ", j, " is '", printable(st.class_names[j]), "' in its run and '",
                    printable(names[j]), "' here)");
    if (which.empty())
      which = str(" (", st.class_names.size(), " classes in its run, ", names.size(), " here)");
  } else if (st.train_classes.empty() || st.train_classes == class_names_tag(names)) {
    return "";
  }
  return str("the class folders here are not those its run trained on", which,
             ": a label may stand for another class than the one its weights learnt, so the "
             "metrics score other classes; evaluate on the class folders of its run");
}

}  // namespace hg::train
