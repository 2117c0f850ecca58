// Config resolution for commands that start from a checkpoint (see model_from_args.h).
#include "app/model_from_args.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "core/similar_names.h"
#include "data/image_folder.h"
#include "models/checkpoint.h"
#include "models/config.h"
#include "train/checkpoint.h"
#include "train/timm_keys.h"

namespace hg::app {

namespace {

// For a bare state_dict (timm's) that does not fit the model built from the defaults and --model:
// the input channels and classes its stem and head say, as the keys to give ("" when they fit or
// the file has no such tensors). The defaults are 3 channels and 1000 classes, and a timm
// state_dict of a gray 10-class model was refused with its mis-shaped keys alone. Names as the
// load reads them: "module.*" of torch's DataParallel too.
std::string bare_state_dict_hint(const std::string& checkpoint, const ModelConfig& model) {
  std::map<std::string, Tensor> tensors;
  try {
    tensors = clean_state_dict(safetensors::load(checkpoint).tensors);
  } catch (const Error&) {  // unreadable: the caller's error says so
    return "";
  }
  std::string keys;
  auto stem = tensors.find("stem.0.weight");
  if (stem != tensors.end() && stem->second.ndim() == 4 && stem->second.size(1) != model.in_chans)
    keys += str(" --in-chans ", stem->second.size(1));
  auto head = tensors.find("head.fc.weight");
  if (head != tensors.end() && head->second.ndim() == 2 &&
      head->second.size(0) != model.num_classes)
    keys += str(" --num-classes ", head->second.size(0));
  return keys.empty() ? "" : str("; its stem and head say:", keys);
}

// A config whose model is larger than the file could hold (an edited stored config: num_classes
// 60000000) would build a model of many GB before its weights are compared: refused here, by the
// file's size (weights take at least 2 bytes an element: BF16 / F16), naming both.
void check_fits_file(const ResolvedConfig& r, const std::string& checkpoint) {
  const ModelConfig m = train::model_config_from(r.config);
  const ParamCount n = param_count(m);
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(checkpoint, ec);
  if (ec) return;  // unreadable: the load names the problem
  const auto needed = static_cast<uintmax_t>(2 * (n.trainable + n.fixed));
  // a file cut short or no safetensors file at all is named as such, not as another model's: it is
  // smaller than the model, so reading it whole is cheap
  if (needed > bytes) safetensors::load(checkpoint);
  HG_CHECK(needed <= bytes, "the model of ", r.source, " (", m.model, ", ", n.trainable + n.fixed,
           " parameters: depths ", shape_str(m.depths), ", dims ", shape_str(m.dims),
           ", num_classes ", m.num_classes, ") cannot be the one in ", checkpoint, ", a file of ",
           bytes, " bytes (at least 2 bytes a weight): the config does not belong to these weights",
           stored_config_hint(r, checkpoint),
           // a bare state_dict in half precision of fewer classes than the defaults' 1000 is
           // refused here, before the load whose message gave this hint
           r.bare ? bare_state_dict_hint(checkpoint, m) : std::string());
}

}  // namespace

std::string stored_config_hint(const ResolvedConfig& rc, const std::string& checkpoint) {
  if (!rc.from_file || rc.model_overridden) return "";
  try {
    const std::string stored = train::checkpoint_config_yaml(checkpoint);
    if (stored.empty() ||
        train::stored_config_differences({{"config", stored}}, train::model_config_from(rc.config))
            .empty())
      return "";
  } catch (const Error&) {  // unreadable: the caller's error says so
    return "";
  }
  return str("; ", checkpoint, " stores the config it was trained with: leave the config (",
             rc.source, ") out to use it");
}

void load_weights_of(const ResolvedConfig& rc, const std::string& checkpoint, ConvNeXt& model) {
  try {
    train::load_checkpoint(checkpoint, model, nullptr);
  } catch (const Error& e) {  // a config of another model: the checkpoint's own config fits it
    throw Error(str(e.what(), stored_config_hint(rc, checkpoint),
                    rc.bare ? bare_state_dict_hint(checkpoint, model.config) : std::string()));
  }
}

std::string checkpoint_file(const std::string& given, const std::string& option,
                            const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  HG_CHECK(fs::exists(given, ec), option, " ", given, train::no_file_reason(given));
  if (!fs::is_directory(given)) return given;
  const fs::path best = fs::path(given) / "model_best.safetensors";
  HG_CHECK(fs::exists(best), option, " ", given,
           " is a folder without model_best.safetensors; give a checkpoint file (a run folder "
           "holds model_best.safetensors, last.safetensors and checkpoint-N.safetensors)");
  spdlog::info("{} {} is a run folder: {} its {}", option, given, what, best.string());
  return best.string();
}

namespace {

// The program that a file named `ext` is loaded with, for a suffix of another format than
// safetensors; "" for any other suffix.
std::string reader_of_suffix(const std::string& ext) {
  static const std::map<std::string, std::string> readers = {
      {".pth", "torch.load"},  {".pt", "torch.load"},   {".bin", "torch.load"},
      {".ckpt", "torch.load"}, {".tar", "torch.load"},  {".npy", "numpy.load"},
      {".npz", "numpy.load"},  {".pkl", "pickle.load"}, {".pickle", "pickle.load"},
      {".onnx", "onnx.load"},  {".h5", "h5py / Keras"}, {".hdf5", "h5py / Keras"}};
  std::string lower = ext;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto it = readers.find(lower);
  return it == readers.end() ? "" : it->second;
}

}  // namespace

void check_replaces_safetensors_only(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  // `--out model.pth` wrote safetensors bytes under a PyTorch name: torch.load then fails on it
  const fs::path p(path);
  if (const std::string reader = reader_of_suffix(p.extension().string()); !reader.empty()) {
    fs::path stem = p;
    while (!reader_of_suffix(stem.extension().string()).empty()) stem.replace_extension();
    throw Error(str(what, " ", path, ": haargrad writes safetensors, which ", reader,
                    " cannot read (the name ", p.extension().string(),
                    " says that format); give a name ending in .safetensors, e.g. ", stem.string(),
                    ".safetensors (safetensors.torch.load_file reads it, as timm "
                    "does)"));
  }
  // any other name (logits.txt, a name without one) hid the format too, where validate, bench and
  // plot refuse an output name of another format than they write
  // an example for a name that has a file name ('.' and '' have none: "e.g. ..safetensors")
  const fs::path named = p.filename().empty() || p.filename() == "." || p.filename() == ".."
                             ? p / "model.safetensors"
                             : fs::path(p).replace_extension(".safetensors");
  HG_CHECK(data::lower_extension(path) == ".safetensors", what, " '", path,
           "' must end in .safetensors (haargrad writes safetensors, which "
           "safetensors.torch.load_file reads, as timm does), e.g. ",
           named.string());
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return;  // new, or a folder (check_output_file)
  try {
    safetensors::read_metadata(path);
  } catch (const Error&) {
    throw Error(str(what, " ", path,
                    " exists and is not a safetensors file: it is not replaced; give another "
                    "name, or remove it first"));
  }
}

void check_replaces_its_kind_only(const std::string& path, const std::string& what,
                                  const std::function<bool(const std::string&)>& ours,
                                  const std::string& kind) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return;
  const std::vector<std::string> names = safetensors::tensor_names(path);
  if (!names.empty() && std::all_of(names.begin(), names.end(), ours)) return;
  std::string shown;
  for (size_t i = 0; i < names.size() && i < 3; ++i) shown += str(i ? ", " : "", names[i]);
  if (names.size() > 3) shown += ", ...";
  throw Error(str(what, " ", path, " holds ", names.size(),
                  names.size() == 1 ? " tensor (" : " tensors (", shown, "), not ", kind,
                  ": it is not replaced; give another name, or remove it first"));
}

namespace {

// Whether `text` is rows as the commands write them, first column `first_column` (see
// check_replaces_rows_only).
bool holds_rows(std::string text, bool csv, const std::string& first_column) {
  if (text.empty()) return true;                             // nothing to lose (a name from mktemp)
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // a UTF-8 mark (Excel's CSV)
  if (csv) {
    const std::string header = text.substr(0, text.find('\n'));
    return header == first_column || header.rfind(first_column + ",", 0) == 0;
  }
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, false);
  auto row = [&](const nlohmann::ordered_json& r) {
    return r.is_object() && !r.empty() && r.begin().key() == first_column;
  };
  if (j.is_array()) return j.empty() || row(j.front());
  return row(j);
}

}  // namespace

void check_replaces_rows_only(const std::string& path, const std::string& what,
                              const std::string& first_column, bool csv) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec) || fs::is_directory(path, ec)) return;  // new, or check_output_file's
  // a results file is a few KiB; one far larger is something else (read no further)
  constexpr uintmax_t kMaxRowsFile = 64u << 20;
  // (not a plain file, such as a FIFO or a device: refused; one that cannot be read says why,
  // io::read_file's error names it)
  const bool rows = fs::is_regular_file(path, ec) && fs::file_size(path, ec) <= kMaxRowsFile &&
                    !ec && holds_rows(io::read_file(path), csv, first_column);
  HG_CHECK(rows, what, " ", path, " exists and is not ", csv ? "a CSV" : "a JSON",
           " file of rows this command writes (",
           csv ? str("a header starting with '", first_column, "'")
               : str("rows whose first key is '", first_column, "'"),
           "): it is not replaced; give another name, or remove it first");
}

std::string override_key(const std::string& token) {
  if (token.rfind("--", 0) != 0) return "";  // a value
  std::string key = token.substr(
      2, token.find('=') == std::string::npos ? std::string::npos : token.find('=') - 2);
  std::replace(key.begin(), key.end(), '-', '_');
  return key;
}

void refuse_keys_that_change_nothing(const char* command, const std::vector<std::string>& overrides,
                                     const std::string& why, const std::vector<std::string>& also) {
  std::vector<std::string> taken(std::begin(train::kModelKeys), std::end(train::kModelKeys));
  taken.insert(taken.end(), also.begin(), also.end());
  for (const std::string& o : overrides) {
    const std::string key = override_key(o);
    if (key.empty() || std::find(taken.begin(), taken.end(), key) != taken.end()) continue;
    std::string keys;
    for (const std::string& k : taken) keys += str(keys.empty() ? "" : ", ", k);
    std::string spelt = key;  // as an option is typed: --use-ema, --jpeg-decoder
    std::replace(spelt.begin(), spelt.end(), '_', '-');
    // a name that is no config key at all is a typo or a foreign option, not a key of no use here
    const std::vector<std::string> all = train::config_keys();
    if (std::find(all.begin(), all.end(), key) == all.end()) {
      const std::vector<std::string> close = similar_names(key, taken);
      // validate's flag given to export / infer, which spell it --ema (as timm's scripts do)
      const std::string timm = train::timm_key_hint(key);
      const std::string hint =
          !timm.empty()  ? str(" (", timm, ")")
          : key == "ema" ? std::string(
                               " (the model EMA: validate evaluates a checkpoint's with --use-ema, "
                               "export and infer take --ema)")
          : key == "use_ema"
              ? std::string(" (the EMA's weights: --ema here; --use-ema is validate's)")
          : close.empty() ? std::string()
                          : str(" (did you mean --", close[0], "?)");
      throw Error(str(command, ": unknown option --", spelt, hint, "; the keys it takes: ", keys));
    }
    throw Error(str(command, ": --", spelt, " changes nothing here: ", command, " ", why,
                    "; the keys it takes: ", keys));
  }
}

ResolvedConfig config_for_checkpoint(const std::string& config, const std::string& checkpoint,
                                     const std::vector<std::string>& overrides,
                                     train::ImgSizeCheck img_size) {
  ResolvedConfig r;
  std::string base;  // where a key the command line leaves came from, for its messages
  if (!config.empty()) {
    r.config = train::load_config_with_overrides(config, overrides, img_size);
    r.source = base = config;
    r.from_file = true;
  } else if (const std::string stored = train::checkpoint_config_yaml(checkpoint); !stored.empty()) {
    r.source = base = str("the config stored in ", checkpoint);
    r.config = train::config_from_yaml(stored, r.source, img_size);
    r.config.resume = "";  // a training setting, never wanted here
  } else {
    // a bare state_dict (timm's): which model it is must be said, not guessed
    const bool model_given = std::any_of(
        overrides.begin(), overrides.end(),
        [](const std::string& o) { return o == "--model" || o.rfind("--model=", 0) == 0; });
    HG_CHECK(
        model_given, checkpoint, " stores no config (a timm state_dict?): give --config ",
        "CONFIG.yaml, or --model NAME (and --num-classes N when not 1000, --in-chans 1 for gray)");
    r.source = "the config defaults (the checkpoint stores no config)";
    base = train::kDefaults;  // a key the command line left is named "the default"
    r.bare = true;
  }
  if (!r.from_file) train::apply_overrides(r.config, overrides, base, img_size);
  // a model key given on the command line is named with the config it changed: the mismatch is
  // then the command line's (`export ck --model convnext_atto` blamed the stored config)
  std::string model_overrides;
  for (const std::string& o : overrides) {
    const std::string key = override_key(o);
    if (!key.empty() && std::find(std::begin(train::kModelKeys), std::end(train::kModelKeys),
                                  key) != std::end(train::kModelKeys))
      model_overrides += str(model_overrides.empty() ? "" : ", ", "--", key);
  }
  r.model_overridden = !model_overrides.empty();
  if (r.model_overridden) r.source += str(" with the command line's ", model_overrides);
  check_fits_file(r, checkpoint);
  return r;
}

}  // namespace hg::app
