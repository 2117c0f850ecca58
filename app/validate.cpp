// `haargrad validate [CONFIG] --checkpoint FILE [--results-file FILE.csv|.json]`: evaluates a
// checkpoint on the whole validation split, like timm's validate.py: model, img_size, top1,
// top1_err, top5, top5_err, loss (cross-entropy, no smoothing), img_per_sec, param_count
// (millions), crop_pct, interpolation (the evaluation transform's, as timm's results name it).
// Without CONFIG the config stored in the checkpoint by `haargrad train` is used.
// --use-ema evaluates the model EMA's weights of the checkpoint ("state_dict_ema.*"), as timm's
// --use-ema.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "app/command.h"
#include "app/config_help.h"
#include "app/model_from_args.h"
#include "core/atomic_file.h"
#include "core/shell_quote.h"
#include "core/threads.h"
#include "data/from_config.h"
#include "dist/process_group.h"
#include "models/checkpoint.h"
#include "models/convnext.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/evaluate.h"
#include "train/run_folder.h"
#include "train/trainer.h"

namespace hg::app {
namespace {

struct ValidateArgs {
  std::string config, checkpoint, results_file;
  std::string results_format;  // timm's --results-format: csv or json ("": the file name's)
  std::vector<std::string> overrides;
  bool use_ema = false;
};

// One row, named as timm's validate.py names its results (plus loss and img_per_sec).
struct ResultRow {
  std::string model;
  int64_t img_size = 0;
  double top1 = 0, top5 = 0, loss = 0, img_per_sec = 0, param_count = 0;
  double crop_pct = 0;        // the evaluation transform's, so that a row says how it was measured
  std::string interpolation;  // (timm's validate.py writes both)
};

// "results.CSV" -> "csv"; "" when there is none.
std::string extension_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (!ext.empty()) ext.erase(0, 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

const char* kColumns =
    "model,img_size,top1,top1_err,top5,top5_err,loss,img_per_sec,param_count,crop_pct,"
    "interpolation";

// A float as Python's str() writes one that has few digits: 1.0, 0.875 (timm's CSV).
std::string python_float(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  std::string s = text;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// timm rounds accuracies to 4 decimals and the parameter count (millions) to 2.
std::string csv_text(const ResultRow& r) {
  char line[512];
  std::snprintf(line, sizeof line, "%s\n%s,%lld,%.4f,%.4f,%.4f,%.4f,%.6g,%.1f,%.2f,%s,%s\n",
                kColumns, r.model.c_str(), static_cast<long long>(r.img_size), r.top1,
                100.0 - r.top1, r.top5, 100.0 - r.top5, r.loss, r.img_per_sec, r.param_count,
                python_float(r.crop_pct).c_str(), r.interpolation.c_str());
  return line;
}

std::string json_text(const ResultRow& r) {
  auto round_to = [](double v, double scale) { return std::round(v * scale) / scale; };
  nlohmann::ordered_json j;
  j["model"] = r.model;
  j["img_size"] = r.img_size;
  j["top1"] = round_to(r.top1, 1e4);
  j["top1_err"] = round_to(100.0 - r.top1, 1e4);
  j["top5"] = round_to(r.top5, 1e4);
  j["top5_err"] = round_to(100.0 - r.top5, 1e4);
  j["loss"] = r.loss;
  j["img_per_sec"] = round_to(r.img_per_sec, 10);
  j["param_count"] = round_to(r.param_count, 100);
  j["crop_pct"] = r.crop_pct;
  j["interpolation"] = r.interpolation;
  return j.dump(2) + "\n";
}

// The results file's format, "csv" or "json" ("" without a file): --results-format (timm's), else
// the file name's; a name of the other format is refused, as a name of neither without the option.
std::string results_format(const ValidateArgs& a) {
  if (a.results_file.empty()) return "";
  const std::string ext = extension_of(a.results_file);
  const bool named = ext == "csv" || ext == "json";
  if (a.results_format.empty()) {
    HG_CHECK(named, "validate: --results-file '", a.results_file,
             "' must end in .csv or .json (or give --results-format csv|json, as timm's "
             "validate.py takes it)");
    return ext;
  }
  HG_CHECK(!named || ext == a.results_format, "validate: --results-file '", a.results_file,
           "' names a .", ext, " file, but --results-format is ", a.results_format,
           ": give one format");
  return a.results_format;
}

// rc.source names where the config came from, for an error about its data (unless the command
// line gave data_dir: then the error stands as it is).
ResultRow evaluate(const ResolvedConfig& rc, bool data_dir_given, const std::string& checkpoint,
                   bool use_ema) {
  const train::Config& cfg = rc.config;
  const std::string& source = rc.source;
  const Device device = train::resolve_device(cfg.device);
  ConvNeXt model(train::model_config_from(cfg), 0, DType::f32, device);
  // the WTConv path the key asks for (it was taken and not applied): equal up to float rounding
  model.set_wtconv_mode(train::wtconv_mode_of(cfg));
  if (!use_ema)
    load_weights_of(rc, checkpoint, model);
  else
    HG_CHECK(train::load_ema_weights(checkpoint, model), "validate --use-ema: checkpoint ",
             checkpoint, " holds no model EMA weights (", train::kEmaPrefix,
             "*): its run kept no model_ema, or it is an export (export --ema writes the EMA as "
             "the plain weights); validate it without --use-ema");
  // a diverged run's weights, named with the first tensor before the data is read: they were
  // found only from the outputs, after every image had been evaluated
  check_finite_weights(model,
                       str("validate: checkpoint ", checkpoint, use_ema ? " (its model EMA)" : ""),
                       "validate an earlier checkpoint of that run");
  // the validation split alone: the train split only names the classes (its files are not read)
  std::shared_ptr<data::Dataset> val;
  try {
    val = data::make_val_dataset(cfg);
  } catch (const Error& e) {  // a stored config's data_dir: relative, or of another machine
    if (data_dir_given) throw;
    throw Error(str(e.what(), "; validate: data_dir '", cfg.data_dir, "' is from ", source,
                    "; --data-dir DIR (and --val-split NAME) evaluate on data elsewhere"));
  }
  // the checkpoint's labels in an older haargrad's class order: the metrics would be another
  // model's (each label scored against another class)
  // or on other class folders than these: each label scored against another class, unsaid
  if (const std::optional<train::TrainState> st = train::read_train_state(checkpoint)) {
    const std::vector<std::string> names = val->class_names();
    if (const std::string note = train::byte_order_classes_note(st->train_classes, names);
        !note.empty())
      spdlog::warn("validate: {}: {}", checkpoint, note);
    if (const std::string note = train::other_classes_note(*st, names); !note.empty())
      spdlog::warn("validate: {}: {}", checkpoint, note);
  }
  auto loader = data::make_loader(cfg, false, val);

  const auto t0 = std::chrono::steady_clock::now();  // timm: data loading included
  const train::EvalResult ev = train::evaluate(model, *loader, device, 0);
  const int64_t n = ev.images, nonfinite = ev.nonfinite;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  HG_CHECK(n > 0, "validate: the validation split '", cfg.val_split, "' of ", cfg.data_dir, " is empty");
  if (const int64_t replaced = val->replaced_after_scan(); replaced > 0)
    spdlog::warn(
        "validate: {} of the {} validation images failed to decode after the folder scan and were "
        "replaced by their next good neighbour (named above): top1, top5 and loss count that "
        "neighbour in their place; fix or remove those files for exact metrics",
        replaced, val->size());
  // a diverged model whose weights are finite (non-finite ones are refused above) but so large
  // that activations overflow: no accuracy to report (such rows count as wrong anyway)
  HG_CHECK(nonfinite == 0, "validate: the outputs of ", checkpoint,
           " are non-finite (NaN or Inf) for ", nonfinite, " of ", n,
           " images, though its weights are finite (so large that activations overflow): the run "
           "it comes from diverged; use an earlier checkpoint");
  ResultRow r;
  r.model = cfg.model;
  r.img_size = cfg.img_size;
  r.top1 = ev.top1;
  r.top5 = ev.top5;
  r.loss = ev.loss;
  r.img_per_sec = seconds > 0 ? double(n) / seconds : 0.0;
  // timm's validate.py counts model.parameters(): the reference WTConv2d's Haar filters are
  // parameters too (requires_grad=False), so they count (wtconvnext_tiny 30.60, not 30.38)
  r.param_count = double(model.num_trainable() + model.num_fixed()) / 1e6;
  r.crop_pct = cfg.crop_pct;
  r.interpolation = cfg.interpolation;
  return r;
}

// Whether the command line gave config key `key` (--val-split, --val_split=...).
bool given_on_command_line(const std::vector<std::string>& overrides, const std::string& key) {
  return std::any_of(overrides.begin(), overrides.end(),
                     [&](const std::string& t) { return override_key(t) == key; });
}

void run_validate(const ValidateArgs& args) {
  refuse_mpirun("validate");
  ValidateArgs a = args;
  a.checkpoint = checkpoint_file(a.checkpoint, "validate: --checkpoint", "evaluating");
  const std::string ext = results_format(a);
  if (!a.results_file.empty()) {
    train::check_output_file(a.results_file, "validate: --results-file", "the results",
                             {{"the checkpoint", a.checkpoint}});
    // an earlier row's file (timm's validate.py rewrites it too), never another file
    check_replaces_rows_only(a.results_file, "validate: --results-file", "model", ext == "csv");
  }
  // the keys of the model, of the validation data and its evaluation transform, and of where it
  // runs; a training key (--epochs 5, --lr) was taken and changed nothing, unsaid (timm's
  // validate.py refuses an option it has not)
  std::vector<std::string> taken(std::begin(kRunKeys), std::end(kRunKeys));
  taken.insert(taken.end(), std::begin(kEvalImageKeys), std::end(kEvalImageKeys));
  // and those of the validation data and its loader
  taken.insert(taken.end(), {"dataset", "data_dir", "val_split", "train_split", "synthetic_size",
                             "seed", "validation_batch_size", "batch_size", "workers", "pin_mem",
                             "jpeg_decoder", "decode", "gpu_augment"});
  refuse_keys_that_change_nothing("validate", a.overrides,
                                  "evaluates the checkpoint on the validation split", taken);
  const ResolvedConfig rc = config_for_checkpoint(a.config, a.checkpoint, a.overrides,
                                                  train::ImgSizeCheck::against_model);
  const train::Config& cfg = rc.config;
  HG_CHECK(!cfg.data_dir.empty() || cfg.dataset == "synthetic", "validate: no data_dir (from ", rc.source,
           "): give a CONFIG.yaml of the model and data, or --data-dir DIR with --model, --num-classes, ...");
  // a run trained without validation stores val_split '': the key to give, not a data_dir to fix;
  // said so of a stored config alone (an empty --val-split '' was blamed on the checkpoint)
  const bool split_given = given_on_command_line(a.overrides, "val_split");
  HG_CHECK(train::has_validation(cfg), "validate: val_split is empty (from ",
           split_given ? std::string("the command line's --val-split") : rc.source,
           !split_given && !rc.from_file && !rc.bare
               ? "; a run trained without validation stores that"
               : "",
           "): give the split to evaluate on with "
           "--val-split NAME (validation, val, ... in data_dir; test for idx)");
  set_cpu_threads(static_cast<int>(cfg.threads));
  const ResultRow r =
      evaluate(rc, given_on_command_line(a.overrides, "data_dir"), a.checkpoint, a.use_ema);
  const std::string csv = csv_text(r);
  std::printf("%s", csv.c_str());
  if (!a.results_file.empty()) io::write_file_atomic(a.results_file, ext == "csv" ? csv : json_text(r));
}

}  // namespace

HG_REGISTER_COMMAND([](CLI::App& root) {
  auto a = std::make_shared<ValidateArgs>();
  CLI::App* cmd =
      root.add_subcommand("validate",
                          "haargrad validate [CONFIG.yaml] --checkpoint FILE [--use-ema] "
                          "[--results-file FILE.csv|.json] [--key value ...]\n"
                          "Evaluate a checkpoint on the whole validation split: model, img_size, "
                          "top1, top1_err, top5, top5_err, loss,\n"
                          "img_per_sec, param_count, crop_pct, interpolation (timm validate.py's "
                          "columns, plus loss and "
                          "speed). CONFIG (the model and data)\n"
                          "defaults to the config that `haargrad train` stored in the checkpoint; "
                          "timm's -c / --config CONFIG name it too.");
  // required: checked in the callback, where a checkpoint given as the config can be named
  cmd->add_option("--checkpoint", a->checkpoint,
                  "safetensors checkpoint (haargrad's, exported, or a timm state_dict), or a run "
                  "folder (its model_best.safetensors); required");
  cmd->add_option("--results-file", a->results_file, "also write the row to FILE.csv or FILE.json");
  cmd->add_option("--results-format", a->results_format,
                  "csv or json: the results file's format whatever its name (timm's option; "
                  "default: the name's)")
      ->check(CLI::IsMember({"csv", "json"}));
  cmd->add_flag(
      "--use-ema", a->use_ema,
      "evaluate the checkpoint's model EMA weights (state_dict_ema.*) instead of the model's");
  cmd->allow_extras();
  cmd->footer(config_keys_pointer());
  cmd->callback([a, cmd] {
    // -c / --config CONFIG arrive here as CONFIG (main.cpp moves them first)
    ConfigArgs ca = split_config_args(cmd->remaining());
    a->config = ca.config;
    a->overrides = ca.overrides;
    if (a->checkpoint.empty()) {  // a usage error (exit status 2), saying where a file given goes
      namespace fs = std::filesystem;
      std::error_code ec;
      std::string hint;
      if (fs::is_directory(a->config, ec))
        hint = str("; '", a->config, "' is a folder: a run folder goes as --checkpoint ",
                   shell_quote(a->config),
                   " (its model_best.safetensors), a data folder as --data-dir ",
                   shell_quote(a->config), " (timm's validate.py takes it first)");
      else if (fs::path(a->config).extension() == ".safetensors")
        hint = str("; '", a->config, "' is a checkpoint: give it as --checkpoint ",
                   shell_quote(a->config));
      throw CLI::RequiredError(str("--checkpoint is required", hint),
                               CLI::ExitCodes::RequiredError);
    }
    run_validate(*a);
  });
});

}  // namespace hg::app
