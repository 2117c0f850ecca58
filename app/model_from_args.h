// The model a command works on, from a checkpoint and the command line: a CONFIG.yaml when given,
// else the training config `haargrad train` stored in the checkpoint, else the config defaults
// (model convnext_tiny, 1000 classes, 3 channels), and then --key value overrides, e.g.
// `--model convnext_small --num-classes 10` for a timm state_dict that carries no config.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "models/convnext.h"
#include "train/config.h"

namespace hg::app {

/// Which config was used, for messages.
struct ResolvedConfig {
  train::Config config;
  std::string source;  ///< "configs/x.yaml", "the config stored in ck.safetensors" or "defaults"
  bool from_file = false;         ///< the config is the CONFIG file given (not the stored one)
  bool model_overridden = false;  ///< a model key came from the command line
  bool bare = false;              ///< no config given nor stored (a timm state_dict): the defaults
};

/// CONFIG (may be ""), else the checkpoint's stored config, else defaults; then the overrides.
/// Throws hg::Error for an unreadable file or a bad key / value (naming it). `img_size`: unused
/// for a command that only builds the model (export, infer), whose config's img_size may then be
/// below the model's total stride.
ResolvedConfig config_for_checkpoint(const std::string& config, const std::string& checkpoint,
                                     const std::vector<std::string>& overrides,
                                     train::ImgSizeCheck img_size);

/// For an error of a given config's model against `checkpoint`: "; CHECKPOINT stores the config
/// it was trained with: leave the config (SOURCE) out to use it" when rc is from_file and not
/// model_overridden (an override would still apply to the stored config)
/// and the stored config's model differs from rc's in a key that sizes its tensors; else "" (also
/// when the checkpoint cannot be read: the caller's own error stands).
std::string stored_config_hint(const ResolvedConfig& rc, const std::string& checkpoint);

/// train::load_checkpoint(checkpoint, model, nullptr) for validate, export and infer: a load that
/// fails carries stored_config_hint.
void load_weights_of(const ResolvedConfig& rc, const std::string& checkpoint, ConvNeXt& model);

/// `given` as given, or for a run folder its model_best.safetensors (what a user who points at the
/// run means; the log says which file and what the command does with it, `what`: "evaluating").
/// Throws hg::Error naming `option` ("validate: --checkpoint") when `given` does not exist or the
/// folder has none.
std::string checkpoint_file(const std::string& given, const std::string& option,
                            const std::string& what);

/// Throws hg::Error, naming `what` ("export: --out") and `path`, when `path` does not end in
/// .safetensors (any case), as validate, bench and plot refuse an output name of another format (a
/// name of a known one, model.pth or logits.npy, also names the program that would fail on the
/// safetensors bytes: torch.load, numpy.load); or when `path` exists and is not a safetensors file:
/// what `what` writes replaces a file of its own kind only.
void check_replaces_safetensors_only(const std::string& path, const std::string& what);

/// Throws hg::Error when the existing safetensors file `path` holds a tensor that `ours` does not
/// take for one of the command's own kind (`kind`: "logits", "weights"): what `what` writes
/// replaces such files only (an input batch given as --out by mistake stays). Nothing for a new
/// file.
void check_replaces_its_kind_only(const std::string& path, const std::string& what,
                                  const std::function<bool(const std::string&)>& ours,
                                  const std::string& kind);

/// Throws hg::Error when `path` exists and is not a file of rows such as `what` ("validate:
/// --results-file", "bench: --output") writes, whose first column is `first_column` ("model"): a
/// JSON row object or array of them whose first key is that column (an empty array too), or CSV
/// (`csv`) whose header starts with it. What the command writes replaces such files only (a
/// user's CSV or any other file given by mistake stays; an empty file goes). Nothing for a new
/// file.
void check_replaces_rows_only(const std::string& path, const std::string& what,
                              const std::string& first_column, bool csv);

/// The config key a `--key value` token names, spelled with underscores (--num-classes,
/// --num_classes and --num-classes=10 all give "num_classes"); "" for a value token.
std::string override_key(const std::string& token);

/// The keys of where an evaluating command runs the model (infer, validate) ...
inline constexpr const char* kRunKeys[] = {"device", "threads", "wtconv_mode"};
/// ... and of the evaluation transform an image goes through there.
inline constexpr const char* kEvalImageKeys[] = {"img_size", "crop_pct", "interpolation",
                                                 "mean",     "std",      "corrupt_images"};

/// Throws hg::Error for a `--key value` among `overrides` that is neither a model key
/// (train::kModelKeys) nor in
/// `also`: `command` ("infer") would ignore it, which `why` says ("runs the model ..."). Keys are
/// spelled either way (--num-classes, --num_classes).
void refuse_keys_that_change_nothing(const char* command, const std::vector<std::string>& overrides,
                                     const std::string& why, const std::vector<std::string>& also);

}  // namespace hg::app
