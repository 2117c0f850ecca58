// timm's options that haargrad has no key for (see timm_keys.h).
#include "train/timm_keys.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "core/parse_number.h"

namespace hg::train {

std::string timm_key_hint(const std::string& key) {
  static const std::map<std::string, std::string> hints = {
      {"amp",
       "timm's --amp (float16 with loss scaling; --amp-dtype bfloat16 for bf16) is "
       "--precision bf16 here (bf16 needs no loss scaling; a GPU's speed-up: on the CPU bf16 is a "
       "slower reference)"},
      {"amp_dtype", "timm's --amp-dtype bfloat16 is --precision bf16 here (no float16)"},
      {"channels_last",
       "timm's --channels-last is how haargrad always runs (NHWC activations): leave it out"},
      {"torchcompile",
       "timm's --torchcompile has no counterpart to set: the training step replays as one CUDA "
       "graph (cuda_graph, on by default) with fused kernels: leave it out"},
      {"sync_bn",
       "timm's --sync-bn has nothing to do here (ConvNeXt has no BatchNorm): leave it out"},
      {"pretrained", "timm's --pretrained is --initial-checkpoint FILE.safetensors here"},
      {"input_size", "timm's --input-size is --img-size and --in-chans here"},
      {"data",
       "timm's positional DATA_DIR is --data-dir here (a timm args.yaml's data: DIR is read "
       "as data_dir)"},
      {"split", "timm's validate.py --split is --val-split here (the sub-folder of data_dir)"},
      {"drop_path_rate", "timm's drop_path_rate (a model argument) is --drop-path here"},
      {"vflip", "timm's --vflip (vertical flip, off in its defaults) is not supported: hflip is"},
      {"class_map",
       "timm's class_map is not supported: the class index is the class folder's position in "
       "timm's natural order (its folder reader's: 1, 2, 10; cat, Zebra), the same in both "
       "splits; name the folders so that they sort in the order you want"},
      // timm keys whose value in its defaults is haargrad's only behaviour (a timm args.yaml
      // holds them): said as such, not "did you mean 'log_interval'?" for val_interval
      {"val_interval",
       "timm's --val-interval (default 1) is how haargrad runs: it evaluates after "
       "every epoch (val_split '' trains without validation); leave it out"},
      {"eval_metric",
       "timm's --eval-metric (default top1) is how haargrad ranks checkpoints and steps sched "
       "plateau (the EMA's top-1 with a model EMA; the train loss without validation, "
       "val_split ''); leave it out"},
      {"clip_mode",
       "timm's --clip-mode (default norm) is how clip_grad clips (the global "
       "gradient norm); leave it out"},
      // the rest of timm 1.0's train.py options (docs/timm-keys.md lists every one): each says
      // why it is not supported and what to use instead
      {"config", "timm's -c / --config FILE is the CONFIG argument here: haargrad train FILE.yaml"},
      {"train_num_samples",
       "timm's --train-num-samples is for its iterable datasets (TFDS, WDS, HF streaming), which "
       "haargrad does not read; max_steps_per_epoch caps the batches of an epoch"},
      {"val_num_samples",
       "timm's --val-num-samples is for its iterable datasets, which haargrad does not read; the "
       "validation split is read whole"},
      {"dataset_download",
       "timm's --dataset-download is not supported (nothing is downloaded): point data_dir at "
       "the data (dataset image_folder or idx)"},
      {"input_img_mode", "timm's --input-img-mode is in_chans here (3: RGB, 1: L, grayscale)"},
      {"input_key",
       "timm's --input-key is for its HF / WDS datasets, which haargrad does not read"},
      {"target_key",
       "timm's --target-key is for its HF / WDS datasets, which haargrad does not read"},
      {"dataset_trust_remote_code",
       "timm's --dataset-trust-remote-code is for HF datasets, which haargrad does not read"},
      {"pretrained_path",
       "timm's --pretrained-path is --initial-checkpoint FILE.safetensors here (a timm "
       "state_dict with timm's names; the head adapts to num_classes as timm's does)"},
      {"gp",
       "timm's --gp (global pool) is not supported: ConvNeXt's head pools by the mean (timm's "
       "default avg)"},
      {"fuser", "timm's --fuser (TorchScript's fuser) has nothing to do here: leave it out"},
      {"grad_checkpointing",
       "timm's --grad-checkpointing is not supported: every activation is kept for the backward "
       "pass; a smaller batch_size with grad_accum_steps trains the same global batch"},
      {"fast_norm", "timm's --fast-norm has no counterpart to set: leave it out"},
      {"model_kwargs",
       "timm's --model-kwargs are config keys here: depths, dims, patch_size, kernel_size, "
       "wt_levels, ls_init_value, drop_path, drop (`haargrad train --help`)"},
      {"torchcompile_mode",
       "timm's --torchcompile-mode has no counterpart: the step replays as a CUDA graph "
       "(cuda_graph); leave it out"},
      {"torchscript", "timm's --torchscript has nothing to do here: leave it out"},
      {"model_dtype",
       "timm's --model-dtype is not supported: weights are f32, precision bf16 computes in bf16 "
       "with f32 master weights"},
      {"no_ddp_bb",
       "timm's --no-ddp-bb (DDP broadcast buffers) has nothing to do here: ConvNeXt has no "
       "BatchNorm buffers; leave it out"},
      {"synchronize_step",
       "timm's --synchronize-step has nothing to set: each step's loss is read at the log "
       "points; leave it out"},
      {"local_rank",
       "timm's --local_rank is set by the launcher here: mpirun -np N haargrad train ... "
       "(train/data_parallel.h)"},
      {"device_modules", "timm's --device-modules (torch device plugins) has nothing to do here"},
      {"layer_decay_min_scale",
       "timm's --layer-decay-min-scale is not supported: layer_decay's scales go down to "
       "layer_decay^(layers - 1) (timm's default 0: no floor)"},
      {"layer_decay_no_opt_scale",
       "timm's --layer-decay-no-opt-scale is not supported (timm's default None: every layer is "
       "trained)"},
      {"opt_kwargs",
       "timm's --opt-kwargs are not supported: the optimizers take momentum and weight_decay; "
       "AdamW's betas and eps are torch's defaults"},
      {"epoch_repeats",
       "timm's --epoch-repeats repeats only its iterable datasets (TFDS, WDS, HF streaming), not "
       "an image folder; haargrad reads folders: set epochs (and the schedule) instead"},
      {"dr", "timm's --dr is --decay-rate here"},
      {"no_aug",
       "timm's --no-aug (resized, centre-cropped train images) is not one key here: scale [1, "
       "1], ratio [1, 1], hflip 0, color_jitter 0 (and no aa, reprob, mixup, cutmix) come "
       "close"},
      {"train_crop_mode",
       "timm's --train-crop-mode is not supported: the train crop is timm's default "
       "random-resized crop (rrc) with scale and ratio"},
      {"color_jitter_prob",
       "timm's --color-jitter-prob is not supported: color_jitter applies to every image "
       "(timm's default None); color_jitter 0 turns it off"},
      {"grayscale_prob",
       "timm's --grayscale-prob is not supported (timm's default None: off); leave it out"},
      {"gaussian_blur_prob",
       "timm's --gaussian-blur-prob is not supported (timm's default None: off); leave it out"},
      {"aug_repeats",
       "timm's --aug-repeats (repeated augmentation sampler) is not supported (timm's default "
       "0: off); leave it out"},
      {"aug_splits",
       "timm's --aug-splits (AugMix splits) is not supported (timm's default 0: off); leave it "
       "out"},
      {"jsd_loss",
       "timm's --jsd-loss (AugMix's Jensen-Shannon loss) is not supported: the loss is "
       "cross-entropy with smoothing (soft targets with mixup / cutmix)"},
      {"bce_loss",
       "timm's --bce-loss is not supported: the loss is cross-entropy with smoothing (soft "
       "targets with mixup / cutmix)"},
      {"bce_sum",
       "timm's --bce-sum is for --bce-loss, which is not supported: the loss is cross-entropy"},
      {"bce_target_thresh",
       "timm's --bce-target-thresh is for --bce-loss, which is not supported: the loss is "
       "cross-entropy"},
      {"bce_pos_weight",
       "timm's --bce-pos-weight is for --bce-loss, which is not supported: the loss is "
       "cross-entropy"},
      {"resplit",
       "timm's --resplit (random erasing leaves the first half of each batch, or its first "
       "aug split, unerased) is not supported; leave it out"},
      {"drop_connect", "timm's --drop-connect is its old name for --drop-path: drop_path here"},
      {"drop_block", "timm's --drop-block is not supported (ConvNeXt has no DropBlock)"},
      {"bn_momentum",
       "timm's --bn-momentum has nothing to do here (ConvNeXt has no BatchNorm): leave it out"},
      {"bn_eps",
       "timm's --bn-eps has nothing to do here (ConvNeXt has no BatchNorm): leave it out"},
      {"dist_bn",
       "timm's --dist-bn has nothing to do here (ConvNeXt has no BatchNorm): leave it out"},
      {"split_bn",
       "timm's --split-bn has nothing to do here (ConvNeXt has no BatchNorm): leave it out"},
      {"model_ema_force_cpu",
       "timm's --model-ema-force-cpu is not supported: the model EMA is kept on the training "
       "device and evaluated with every epoch's validation; leave it out"},
      {"worker_seeding",
       "timm's --worker-seeding has nothing to set: every random draw of the data is a function "
       "of seed, epoch and the image's index, whatever the workers (data/loader.h); leave it "
       "out"},
      {"save_images",
       "timm's --save-images (the first train batches as image files) is not supported"},
      {"no_prefetcher",
       "timm's --no-prefetcher has nothing to set (timm's prefetcher normalises batches on the "
       "GPU; gpu_augment does that here): leave it out"},
      {"tta",
       "timm's --tta (test-time augmentation, its default 0: off) is not supported; leave it "
       "out"},
      {"use_multi_epochs_loader",
       "timm's --use-multi-epochs-loader has nothing to set here: leave it out"},
      // options of timm releases after the train.py docs/timm-keys.md follows (1.0.31's notes)
      {"task",
       "timm 1.0.31's --task (multi-label training) is not supported: haargrad trains "
       "single-label classification with cross-entropy (smoothing, mixup / cutmix)"},
      {"target_format",
       "timm 1.0.31's --target-format is for multi-label training (--task), "
       "which is not supported"},
      {"multilabel_threshold",
       "timm 1.0.31's --multilabel-threshold is for multi-label training "
       "(--task), which is not supported"},
      {"loss",
       "timm 1.0.31's --loss is not supported: the loss is cross-entropy with smoothing (soft "
       "targets with mixup / cutmix)"},
      {"lr_decay_fn",
       "timm 1.0.31's --lr-decay-fn is for its wsd schedule, which is not supported"},
      {"lr_stable_timescale",
       "timm 1.0.31's --lr-stable-timescale is for its wsd schedule, which is not supported"},
      {"stop_epoch",
       "timm 1.0.31's --stop-epoch is not supported: a run trains its schedule's epochs; stop one "
       "with Ctrl-C (it writes recovery.safetensors) and resume it later"},
      {"save_epochs",
       "timm 1.0.31's --save-epochs is not supported: checkpoint_hist keeps the best checkpoint-N "
       "files and last.safetensors the latest epoch"},
      {"log_wandb",
       "timm's --log-wandb is not supported (no network logging): the run folder holds "
       "summary.csv, log.txt and curves.png (`haargrad plot`)"},
      {"wandb_project", "timm's --wandb-project is for --log-wandb, which is not supported"},
      {"wandb_tags", "timm's --wandb-tags is for --log-wandb, which is not supported"},
      {"wandb_resume_id", "timm's --wandb-resume-id is for --log-wandb, which is not supported"},
      {"train_img_sizes",
       "timm's variable-size training (--train-img-sizes) is not supported: every batch is "
       "img_size"},
      {"train_batch_sizes",
       "timm's variable-size training (--train-batch-sizes) is not supported: every batch is "
       "batch_size"},
      {"train_size_probs",
       "timm's variable-size training (--train-size-probs) is not supported: every batch is "
       "img_size"},
      {"train_size_schedule",
       "timm's variable-size training (--train-size-schedule) is not supported: every batch is "
       "img_size"},
      {"train_size_schedule_spread",
       "timm's variable-size training (--train-size-schedule-spread) is not supported"},
      {"train_size_random_mix",
       "timm's variable-size training (--train-size-random-mix) is not supported"},
      {"train_batches_per_epoch",
       "timm's --train-batches-per-epoch is max_steps_per_epoch here (timm's sets the batches of "
       "an epoch of its variable-size training, --train-img-sizes, alone)"},
      {"train_steps_per_epoch",
       "timm's --train-steps-per-epoch is max_steps_per_epoch here (timm's sets the batches of "
       "an epoch of its variable-size training, --train-img-sizes, alone)"},
      {"variable_batch_loss_scale",
       "timm's --variable-batch-loss-scale is for variable-size training, which is not "
       "supported"},
      {"naflex_loader",
       "timm's NaFlex options (--naflex-loader) are for NaFlex ViTs: not supported"},
      {"naflex_train_seq_lens", "timm's NaFlex options are for NaFlex ViTs: not supported"},
      {"naflex_max_seq_len", "timm's NaFlex options are for NaFlex ViTs: not supported"},
      {"naflex_patch_sizes", "timm's NaFlex options are for NaFlex ViTs: not supported"},
      {"naflex_patch_size_probs", "timm's NaFlex options are for NaFlex ViTs: not supported"},
      {"naflex_loss_scale", "timm's NaFlex options are for NaFlex ViTs: not supported"},
      {"naflex_patchify_channels_first",
       "timm's NaFlex options are for NaFlex ViTs: not supported"},
      {"kd_model_name",
       "timm's knowledge distillation (--kd-model-name) is not supported: a run trains one model "
       "on its labels"},
      {"kd_distill_type", "timm's knowledge distillation (--kd-*) is not supported"},
      {"kd_loss_type", "timm's knowledge distillation (--kd-*) is not supported"},
      {"distill_loss_weight",
       "timm's knowledge distillation (--distill-loss-weight) is not supported"},
      {"task_loss_weight", "timm's knowledge distillation (--task-loss-weight) is not supported"},
      {"kd_temperature", "timm's knowledge distillation (--kd-*) is not supported"},
      {"kd_student_feature_dim", "timm's knowledge distillation (--kd-*) is not supported"},
      {"kd_teacher_feature_dim", "timm's knowledge distillation (--kd-*) is not supported"},
      {"kd_token_distill_type", "timm's knowledge distillation (--kd-*) is not supported"}};
  const auto it = hints.find(key);
  return it == hints.end() ? std::string() : it->second;
}

namespace {

// What a key may hold and ask for nothing, besides timm's defaults (value_is): these markers
// cannot be values (a string "off" is one: true to timm).
const std::string kOff = "<off>", kBool = "<bool>", kAny = "<any>";

std::optional<double> number(const std::string& s) { return parse_decimal_float(s); }

// A scalar PyYAML reads as it is written (no quotes, no tag): "false" there is False, where
// 'false' in quotes is a string, which timm takes as true.
bool plain(const YAML::Node& v) { return v.IsScalar() && (v.Tag() == "?" || v.Tag().empty()); }

// YAML 1.1's booleans as PyYAML reads them: yes / no / on / off / true / false, in lower,
// Capitalised or upper case; `want` says which
bool pyyaml_bool(const YAML::Node& v, bool want) {
  if (!plain(v)) return false;
  static const std::set<std::string> yes = {"yes", "Yes",  "YES",  "on",  "On",
                                            "ON",  "true", "True", "TRUE"};
  static const std::set<std::string> no = {"no",  "No",    "NO",    "off",  "Off",
                                           "OFF", "false", "False", "FALSE"};
  return (want ? yes : no).count(v.Scalar()) > 0;
}

// null, False, 0, '', [] or {}: what a timm option is when it is off (falsy to Python)
bool is_off(const YAML::Node& v) {
  if (v.IsNull()) return true;
  if (v.IsSequence() || v.IsMap()) return v.size() == 0;
  if (v.Scalar().empty()) return true;
  if (!plain(v)) return false;  // a quoted 'false' or "0" is a non-empty string: true
  const std::optional<double> x = number(v.Scalar());
  return pyyaml_bool(v, false) || (x && *x == 0);
}

// A value against timm's default: plain numbers by value (4.0 is 4), words as written, a list of
// scalars as "[a, b]".
bool value_is(const YAML::Node& v, const std::string& want) {
  if (v.IsSequence()) {
    std::string items;
    for (const YAML::Node& item : v) {
      if (!plain(item)) return false;
      items += (items.empty() ? "" : ", ") + item.Scalar();
    }
    return "[" + items + "]" == want;
  }
  if (!v.IsScalar()) return false;
  const std::optional<double> x = plain(v) ? number(v.Scalar()) : std::nullopt, y = number(want);
  return x && y ? *x == *y : !y && v.Scalar() == want;
}

bool matches(const YAML::Node& v, const std::vector<std::string>& values) {
  for (const std::string& want : values) {
    if (want == kOff    ? is_off(v)
        : want == kBool ? pyyaml_bool(v, true) || pyyaml_bool(v, false)
        : want == kAny  ? true
                        : value_is(v, want))
      return true;
  }
  return false;
}

}  // namespace

bool timm_key_asks_nothing(const std::string& key, const YAML::Node& value) {
  // train.py's defaults (timm 1.0.29, the train.py docs/timm-keys.md follows), one group a reason
  static const std::map<std::string, std::vector<std::string>> asks = {
      // features off: what haargrad does without them (no AMP's float16, no BCE, no NaFlex, no
      // distillation, no repeated or split augmentation, no wandb, nothing pretrained, ...)
      {"amp", {kOff}},
      {"aug_repeats", {kOff}},
      {"aug_splits", {kOff}},
      {"bce_loss", {kOff}},
      {"bce_pos_weight", {kOff}},
      {"bce_sum", {kOff}},
      {"bce_target_thresh", {kOff}},
      {"bn_eps", {kOff}},
      {"bn_momentum", {kOff}},
      {"class_map", {kOff}},
      {"color_jitter_prob", {kOff}},
      {"dataset_download", {kOff}},
      {"dataset_trust_remote_code", {kOff}},
      {"device_modules", {kOff}},
      {"distill_loss_weight", {kOff}},
      {"drop_block", {kOff}},
      {"drop_connect", {kOff}},
      {"epoch_repeats", {kOff}},
      {"fast_norm", {kOff}},
      {"gaussian_blur_prob", {kOff}},
      {"gp", {kOff}},
      {"grad_checkpointing", {kOff}},
      {"grayscale_prob", {kOff}},
      {"input_img_mode", {kOff}},
      {"input_key", {kOff}},
      {"jsd_loss", {kOff}},
      {"kd_model_name", {kOff}},
      {"kd_student_feature_dim", {kOff}},
      {"kd_teacher_feature_dim", {kOff}},
      {"layer_decay_min_scale", {kOff}},
      {"layer_decay_no_opt_scale", {kOff}},
      {"log_wandb", {kOff}},
      {"model_dtype", {kOff}},
      {"model_ema_force_cpu", {kOff}},
      {"model_kwargs", {kOff}},
      {"naflex_loader", {kOff}},
      {"naflex_patch_size_probs", {kOff}},
      {"naflex_patch_sizes", {kOff}},
      {"naflex_patchify_channels_first", {kOff}},
      {"no_aug", {kOff}},
      {"opt_kwargs", {kOff}},
      {"pretrained", {kOff}},
      {"pretrained_path", {kOff}},
      {"resplit", {kOff}},
      {"save_images", {kOff}},
      {"split_bn", {kOff}},
      {"target_key", {kOff}},
      {"task_loss_weight", {kOff}},
      {"torchscript", {kOff}},
      {"train_batch_sizes", {kOff}},
      {"train_batches_per_epoch", {kOff}},
      {"train_img_sizes", {kOff}},
      {"train_num_samples", {kOff}},
      {"train_size_probs", {kOff}},
      {"tta", {kOff}},
      {"val_num_samples", {kOff}},
      {"vflip", {kOff}},
      {"wandb_project", {kOff}},
      {"wandb_resume_id", {kOff}},
      {"wandb_tags", {kOff}},
      // options of timm 1.0.31 (multi-label tasks, the wsd schedule, stop / save epochs): off
      {"task", {kOff}},
      {"target_format", {kOff}},
      {"multilabel_threshold", {kOff}},
      {"loss", {kOff}},
      {"lr_decay_fn", {kOff}},
      {"lr_stable_timescale", {kOff}},
      {"stop_epoch", {kOff}},
      {"save_epochs", {kOff}},
      // timm's default, which is what haargrad does
      {"amp_dtype", {"float16"}},          // without amp, no autocast
      {"clip_mode", {"norm"}},             // clip_grad's global norm
      {"eval_metric", {"top1"}},           // model_best and sched plateau rank by top-1
      {"train_crop_mode", {kOff, "rrc"}},  // random-resized crop
      {"val_interval", {"1"}},             // a validation every epoch
      // timm's defaults of settings for a feature that is off (distillation, NaFlex, variable
      // sizes): they tune nothing
      {"kd_distill_type", {"logit"}},
      {"kd_loss_type", {"kl"}},
      {"kd_temperature", {"4.0"}},
      {"kd_token_distill_type", {"soft"}},
      {"naflex_loss_scale", {"linear"}},
      {"naflex_max_seq_len", {"576"}},
      {"naflex_train_seq_lens", {"[128, 256, 576, 784, 1024]"}},
      {"train_size_random_mix", {"0.1"}},
      {"train_size_schedule", {"constant"}},
      {"train_size_schedule_spread", {"0.65"}},
      {"variable_batch_loss_scale", {"none"}},
      // no result changes with them here: memory layout (always NHWC), data-loader and DDP
      // plumbing, a launcher's rank, BatchNorm's sync (ConvNeXt has none), worker seeds (every
      // draw is a function of seed, epoch and image index), PyTorch's compilers (the step
      // replays as one CUDA graph of fused kernels)
      {"channels_last", {kBool}},
      {"sync_bn", {kBool}},
      {"torchcompile", {kAny}},
      {"torchcompile_mode", {kAny}},
      {"fuser", {kAny}},
      {"no_prefetcher", {kBool}},
      {"no_ddp_bb", {kBool}},
      {"synchronize_step", {kBool}},
      {"use_multi_epochs_loader", {kBool}},
      {"local_rank", {kAny}},
      {"dist_bn", {kAny}},
      {"worker_seeding", {kAny}}};
  const auto it = asks.find(key);
  if (it == asks.end()) return false;
  return matches(value, it->second);
}

}  // namespace hg::train
