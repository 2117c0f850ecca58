// The training configuration: one struct whose keys carry timm train.py's names and defaults,
// loaded from YAML, overridden from the command line, and written back as args.yaml.
//
// Every key is one row of a table in config.cpp (name, member, allowed values, one line of help),
// so loading, writing, overriding, validation and `haargrad train --help` all walk the same list:
// adding a key is one member here and one row there.
//
// Errors: every problem throws hg::Error naming the key and where the value came from, e.g.
//   "config: key 'lr' (configs/x.yaml line 7): expected a number >= 0, got -1"
//   "config: unknown key 'lrr' (command line); did you mean 'lr'?"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/config.h"

namespace hg::train {

/// The schedule keys a run used before a resume changed them (one entry of schedule_history): the
/// keys that set the lr at every position (cooldown_epochs sets none: only how long a run is).
struct ScheduleSegment {
  int64_t until_epoch = 0;  ///< in use until this position: epochs done ...
  int64_t until_step = 0;   ///< ... plus micro-batches of the next epoch (0-based step index)
  int64_t epochs = 0;       ///< the values of the keys of the same names
  double lr = 0;
  std::string sched;
  int64_t warmup_epochs = 0;
  double warmup_lr = 0;
  double min_lr = 0;
  bool sched_on_updates = false;
  // Keys added later, at timm's defaults (Config's): an entry written before them reads with these,
  // which its sched (cosine or none) does not use.
  double decay_epochs = 90;
  std::vector<int64_t> decay_milestones = {90, 180, 270};
  double decay_rate = 0.1;
  bool warmup_prefix = false;
  std::vector<double> lr_noise = {};
  double lr_noise_pct = 0.67;
  double lr_noise_std = 1.0;
  double lr_cycle_mul = 1.0;
  double lr_cycle_decay = 0.5;
  int64_t lr_cycle_limit = 1;
  double lr_k_decay = 1.0;
  bool operator==(const ScheduleSegment&) const = default;
};

/// torch.optim.AdamW's defaults: Config's opt_eps / opt_betas, AdamSettings and AdamW take them.
inline constexpr double kTorchAdamBeta1 = 0.9, kTorchAdamBeta2 = 0.999, kTorchAdamEps = 1e-8;
/// torch.optim.lr_scheduler.ReduceLROnPlateau's eps (sched plateau): a decay that would lower the
/// lr by no more than this is not made.
inline constexpr double kTorchPlateauEps = 1e-8;

struct Config {
  // ---- model --------------------------------------------------------------------------------
  std::string model = "convnext_tiny";           ///< model name as registered in models/
  int64_t num_classes = 1000;                    ///< classifier outputs
  int64_t img_size = 224;                        ///< square input side, pixels
  int64_t in_chans = 3;                          ///< 1 (grayscale) or 3 (RGB)
  // Architecture fields: empty / null = the named model variant's value (models/config.h), so
  // `model: convnext_small` alone gives timm's convnext_small.
  std::vector<int64_t> depths = {};              ///< blocks per stage (at most 4, as timm); [] = the model's
  std::vector<int64_t> dims = {};                ///< channels per stage; [] = the model's
  std::optional<int64_t> patch_size;             ///< stem conv kernel = stride (pixels); null = the model's
  std::optional<int64_t> kernel_size;            ///< depthwise / WTConv kernel; null = the model's
  std::vector<int64_t> wt_levels = {};           ///< Haar levels per stage; [] = the model's
  std::optional<double> ls_init_value = 1e-6;    ///< layer-scale init (timm); null = no layer scale (timm None)
  std::string wtconv_mode = "fused";             ///< "fused" kernels or the "reference" composition
  double drop_path = 0.0;                        ///< stochastic depth rate (timm: None = 0)
  double drop = 0.0;                             ///< classifier dropout rate (timm's --drop)

  // ---- data ---------------------------------------------------------------------------------
  std::string data_dir = "";                     ///< dataset root folder
  std::string dataset = "image_folder";          ///< "idx" | "image_folder" | "synthetic"
  std::string train_split = "train";             ///< sub-folder (image_folder) or "train" (idx)
  std::string val_split = "validation";          ///< timm's default name; idx uses "test"
  int64_t synthetic_size = 1280;                 ///< images in the synthetic train split
  int64_t workers = 4;                           ///< loader threads; 0 = load on the calling thread
  bool pin_mem = true;                           ///< batches in page-locked memory for the GPU (timm --pin-mem; on by default here)
  std::string corrupt_images = "skip";           ///< "skip" (warn and count) | "error"
  std::string jpeg_decoder = "turbo";            ///< "turbo" (libjpeg-turbo, crop + DCT downscale) | "turbo_full" | "stb"
  bool gpu_augment = false;                      ///< resize + flip + normalise of uint8 crops on the GPU (data/gpu_batch.h)
  std::string decode = "cpu";                    ///< JPEG decode: "cpu" (workers) | "nvjpeg" | "nvjpeg_gpu" (imply gpu_augment)

  // ---- augmentation (timm create_transform) ---------------------------------------------------
  /// eval: resize the shorter side to img_size / crop_pct; not given: the model's own
  /// (ModelConfig::default_crop_pct; convnext_tiny's 0.95)
  double crop_pct = 0.95;
  /// Whether img_size / crop_pct are the model's own because the config and command line left
  /// them unset: a resume keeps its run's recorded value for such a key, which an older version
  /// may have chosen otherwise. Where a value came from, not a value: no key, and equal in any
  /// two configs (operator==).
  struct ModelOwn {
    bool img_size = false, crop_pct = false;
    bool operator==(const ModelOwn&) const { return true; }
  };
  ModelOwn model_own;
  std::vector<double> mean = {0.485, 0.456, 0.406};  ///< per channel, on [0, 1] pixels (ImageNet)
  std::vector<double> std = {0.229, 0.224, 0.225};   ///< per channel
  double hflip = 0.5;                            ///< horizontal flip probability (train)
  std::vector<double> scale = {0.08, 1.0};       ///< random-resized-crop area fraction range
  std::vector<double> ratio = {3.0 / 4.0, 4.0 / 3.0};  ///< random-resized-crop aspect range (w/h)

  // ---- the ImageNet recipe's augmentations (timm train.py keys and defaults) -----------------
  /// train crop filter: "random" (bilinear or bicubic per image), "bilinear", "bicubic", "nearest"
  std::string train_interpolation = "random";
  std::string interpolation =
      "bicubic";  ///< eval resize filter (timm: the model's; ConvNeXt's bicubic)
  /// colour jitter, timm's value: one strength (brightness, contrast, saturation) or 3 or 4 values
  /// (brightness, contrast, saturation[, hue]), a single number held as a list of one; off when
  /// aa is set (timm)
  std::vector<double> color_jitter{0.4};
  /// RandAugment spec (data/rand_augment.h), e.g. "rand-m9-mstd0.5-inc1"; "" = none
  std::string aa = "";
  double reprob = 0.0;           ///< random erasing probability
  std::string remode = "pixel";  ///< random erasing fill: "pixel" | "rand" | "const"
  int64_t recount = 1;           ///< random erasing boxes per image, at most
  double mixup = 0.0;            ///< mixup alpha; on when > 0
  double cutmix = 0.0;           ///< cutmix alpha; on when > 0
  /// [min, max] cutmix box side fractions (turns cutmix on); [] = box from the cutmix alpha
  std::vector<double> cutmix_minmax = {};
  double mixup_prob = 1.0;           ///< chance of mixing a batch / pair / image
  double mixup_switch_prob = 0.5;    ///< chance of cutmix instead of mixup when both are on
  std::string mixup_mode = "batch";  ///< "batch" | "pair" | "elem"
  int64_t mixup_off_epoch = 0;       ///< stop mixing from this epoch on (0-based); 0 = never

  // ---- optimisation -------------------------------------------------------------------------
  int64_t batch_size = 128;                      ///< per step (before accumulation)
  std::optional<int64_t> validation_batch_size;  ///< null = batch_size
  int64_t epochs = 300;
  /// "adamw" | "sgd" (Nesterov momentum, timm's default) | "momentum" (classical momentum)
  std::string opt = "sgd";
  /// peak learning rate; null = lr_base x global batch / lr_base_size (timm; resolve_lr)
  std::optional<double> lr;
  double lr_base = 0.1;            ///< lr at a global batch of lr_base_size, when lr is null
  int64_t lr_base_size = 256;      ///< the global batch lr_base is for
  std::string lr_base_scale = "";  ///< "linear" | "sqrt" | "" (sqrt for adamw, linear for sgd)
  double weight_decay = 2e-5;
  /// layer-wise lr decay (train/layer_decay.h): lr x layer_decay^(last layer - layer); null = off
  std::optional<double> layer_decay;
  double momentum = 0.9;                         ///< sgd momentum
  /// AdamW's eps and [beta1, beta2], torch's defaults (timm's None, null here, takes them)
  double opt_eps = kTorchAdamEps;
  std::vector<double> opt_betas = {kTorchAdamBeta1, kTorchAdamBeta2};
  std::optional<double> clip_grad;               ///< global-norm clip; null = off
  /// "cosine" | "tanh" | "poly" | "step" | "multistep" | "plateau" | "none" (train/schedule.h)
  std::string sched = "cosine";
  int64_t warmup_epochs = 5;
  double warmup_lr = 1e-5;                       ///< lr at the start of warmup
  double min_lr = 0.0;                           ///< floor of cosine, tanh, poly and plateau
  bool sched_on_updates = false;                 ///< step the schedule per update, not per epoch
  double decay_epochs = 90;                      ///< step: epochs between decays (timm: a float)
  std::vector<int64_t> decay_milestones = {90, 180, 270};  ///< multistep: the decays' epochs
  double decay_rate = 0.1;      ///< step, multistep, plateau: lr factor per decay; poly: power
  bool warmup_prefix = false;   ///< the schedule starts after the warmup (timm's)
  int64_t cooldown_epochs = 0;  ///< epochs at min_lr after cosine, tanh, poly (timm's)
  /// plateau: epochs in a row without a new best metric tolerated before the lr decays (timm's)
  int64_t patience_epochs = 10;
  /// lr noise's range, as fractions of epochs: [] = none (timm's None), [start] = from start on,
  /// [start, end] (train/schedule.h)
  std::vector<double> lr_noise = {};
  double lr_noise_pct = 0.67;   ///< the noise's bound: |noise| < lr_noise_pct (timm's)
  double lr_noise_std = 1.0;    ///< the noise's standard deviation (timm's)
  double lr_cycle_mul = 1.0;    ///< cosine, tanh, poly: each cycle's length x this (timm's)
  double lr_cycle_decay = 0.5;  ///< cosine, tanh, poly: each cycle's peak x this (train.py's 0.5)
  int64_t lr_cycle_limit = 1;   ///< cosine, tanh, poly: cycles before min_lr (timm's)
  double lr_k_decay = 1.0;      ///< cosine, poly: k-decay's k, t^k / T^k for t / T (timm's)
  /// Earlier schedules of this run, oldest first: a resume that changes a key of ScheduleSegment
  /// (epochs, lr, sched, ...) records here what was used until then, and the keys above hold the
  /// schedule from the last entry's position on. The trainer writes it into args.yaml, so that
  /// `haargrad train args.yaml` follows the same learning rates.
  std::vector<ScheduleSegment> schedule_history = {};
  int64_t grad_accum_steps = 1;                  ///< micro-batches per optimizer update
  double smoothing = 0.1;                        ///< label smoothing
  bool model_ema = false;                        ///< keep an EMA of the weights (timm ModelEmaV3)
  double model_ema_decay = 0.9998;               ///< EMA decay per optimizer update
  bool model_ema_warmup = false;                 ///< ramp the decay up (1 - (1 + step)^(-2/3))
  std::string initial_checkpoint = "";           ///< weights to start from (fine-tuning); "" = none
  /// timm train.py's --head-init-scale: head.fc's weight and bias x this after the model is made
  /// (and initial_checkpoint loaded); null = unchanged
  std::optional<double> head_init_scale;
  /// timm train.py's --head-init-bias: head.fc's bias set to this value after head_init_scale;
  /// null = unchanged
  std::optional<double> head_init_bias;

  // ---- run ----------------------------------------------------------------------------------
  int64_t seed = 42;
  std::string precision = "fp32";                ///< "fp32" | "tf32" | "bf16" (mixed precision)
  std::string device = "auto";                   ///< "auto" | "cpu" | "cuda"
  bool cuda_graph =
      true;  ///< the training step as one CUDA graph where it can be (train/trainer.cpp: use_graph)
  bool gemm_autotune =
      true;  ///< time cuBLASLt's candidate algorithms per GEMM shape (kernels/cuda/context.h)
  int64_t threads = 0;                           ///< CPU kernel threads; 0 = the cores available (core/threads.h)
  int64_t log_interval = 50;                     ///< optimizer updates between log lines (timm)
  int64_t checkpoint_hist = 10;                  ///< best checkpoints kept
  std::string resume = "";                       ///< checkpoint to resume from; "" = none
  bool no_resume_opt =
      false;  ///< a resume restores the weights and position, not the optimizer state
  /// a new run starts at this epoch (0-based; the schedule, names and summary as if the epochs
  /// before it had run); null = 0 (timm's --start-epoch; a resume takes the checkpoint's)
  std::optional<int64_t> start_epoch;
  int64_t recovery_interval =
      0;  ///< recovery.safetensors every N optimizer updates; 0 = at a stop only
  std::string output = "";                       ///< output root; "" = ./output/train (timm)
  std::string experiment = "";                   ///< run folder name; "" = generated
  int64_t max_steps_per_epoch = 0;               ///< training batches per epoch; 0 = all (evaluation is never capped)

  // ---- data parallel (mpirun -np N; train/data_parallel.h) -----------------------------------
  double dist_bucket_mb = 25;                    ///< gradient bucket size, MiB (PyTorch DDP bucket_cap_mb)
  int64_t zero_stage = 0;                        ///< 0 = plain data parallel; 1 = optimizer state sharded (ZeRO-1)
  int64_t dist_check_every = 0;                  ///< debug: compare parameter hashes across ranks every N updates; 0 = off
  double dist_timeout = 300;                     ///< seconds a collective may wait before the run is stopped
  bool dist_force = false;                       ///< data-parallel code path even in one process (tests the NCCL/MPI path)

  bool operator==(const Config&) const = default;
};

/// Whether a run evaluates after every epoch: val_split names its validation split. An empty
/// val_split (timm's `--val-split ''`) trains without validation: no validation data is read, and
/// each epoch is ranked by its mean train loss, lower is better (as timm's train.py ranks by its
/// train metrics when it has no eval loader).
inline bool has_validation(const Config& cfg) { return !cfg.val_split.empty(); }

/// Whether `path` is named as a YAML config: *.yaml or *.yml, in any case.
bool yaml_name(const std::string& path);

/// The keys that build the model together (model_config_from reads them): for messages about the
/// model, and for commands that only build one (infer, export).
inline constexpr const char* kModelKeys[] = {
    "model",         "depths",    "dims", "patch_size",  "kernel_size", "wt_levels",
    "ls_init_value", "drop_path", "drop", "num_classes", "in_chans"};

/// Whether a config's checks hold img_size against the model's total stride (validate): a command
/// that only builds the model (export, infer) does not use img_size, so a size below the stride of
/// the model it asks for (`export CK --model convnext_atto` of a 28 px run) is no mistake there.
enum class ImgSizeCheck { against_model, unused };

/// Reads a YAML mapping of keys to values on top of the defaults. Throws hg::Error for a missing or
/// unparsable file, an unknown key, a wrong type or an out-of-range value (naming key, file, line).
Config load_config(const std::string& path, ImgSizeCheck img_size = ImgSizeCheck::against_model);

/// The same from YAML text; `source` names it in errors (e.g. a file name).
Config config_from_yaml(const std::string& text, const std::string& source,
                        ImgSizeCheck img_size = ImgSizeCheck::against_model);

/// Applies `--key value` / `--key=value` pairs on top of `cfg` and re-validates. A value is parsed
/// as YAML, so lists are "[2, 2, 2]" (or "2,2,2", or separate words as timm's: `--depths 2 2 2`),
/// null is "null"; a bool key alone (`--model-ema`)
/// means true. Errors name the key and "command line"; a key the command line left as it was is
/// named with `base` (where cfg came from, e.g. "configs/x.yaml", at its line there when it is a
/// file; "" = "value before the command line"; kDefaults: "the default").
inline constexpr const char* kDefaults = "the defaults";
void apply_overrides(Config& cfg, const std::vector<std::string>& args,
                     const std::string& base = "",
                     ImgSizeCheck img_size = ImgSizeCheck::against_model);

/// load_config(path) with the command line on top (apply_overrides, `base` the file), as timm's
/// train.py reads its config file: the file gives the defaults the command line replaces. A key
/// the command line sets is not checked in the file (`opt: lamb` in a timm args.yaml beside
/// --opt adamw), and the checks between keys run on the result alone (a file's `opt: sgd` and
/// `momentum: 0` beside --momentum 0.9). Throws hg::Error as the two do.
Config load_config_with_overrides(const std::string& path, const std::vector<std::string>& args,
                                  ImgSizeCheck img_size = ImgSizeCheck::against_model);

/// Whether the override `arg` ("--key", timm's "-b") takes the next word of the command line as its
/// value, as apply_overrides reads them: yes for a key that is no bool; no for --key=value, for a
/// bool key (alone, or before true or false: never a file's name) and for an unknown key (timm's
/// flags: `--amp x.yaml` keeps its CONFIG, and apply_overrides then names the key). A caller that
/// looks for the CONFIG among the overrides skips it.
bool override_takes_value(const std::string& arg);

/// The effective config as YAML, every key, in table order; config_from_yaml(to_yaml(c)) == c.
std::string to_yaml(const Config& cfg);

/// Writes to_yaml(cfg) to `path` (e.g. <output>/args.yaml). Throws hg::Error if it cannot.
void save_config(const Config& cfg, const std::string& path);

/// Cross-key checks (list lengths agree with depths / in_chans, ranges ordered, min_lr <= lr), and
/// the model: `model` must be a registered name, the model keys must build a valid model, and
/// img_size must be at least the model's total stride (the message states that minimum).
/// load/override call it; the message names the keys involved.
void validate(const Config& cfg);

/// Throws hg::Error naming the first string key (a path: output, data_dir, ...; a split's folder)
/// whose value is not UTF-8 text, with the advice to rename that file or folder. A training run
/// records its config as JSON in every checkpoint, which holds UTF-8 only: a Latin-1 folder name
/// trained an epoch and then failed the first checkpoint. Commands that record no config
/// (validate, infer, bench) take such paths. The keys that name no file (model, aa, experiment)
/// are refused when read, naming the file and line or the command line whose text to fix.
void check_utf8_strings(const Config& cfg);

/// timm's learning rate for a run of `world_size` processes: lr when set; else lr_base x r, with
/// r = global batch / lr_base_size, global batch = batch_size x world_size x grad_accum_steps, and
/// r square-rooted for lr_base_scale "sqrt" ("" picks sqrt for an optimizer whose name holds "ada"
/// or "lamb", i.e. adamw, and linear otherwise, as timm's train.py does).
double effective_lr(const Config& cfg, int64_t world_size);

/// Sets a null lr to effective_lr (a run's config holds the lr it trains with, e.g. in its
/// args.yaml); returns the line that says how it was computed, or "" when lr was set. Throws
/// hg::Error when the result is below min_lr, for a sched that decays to it (decays_to_min_lr).
std::string resolve_lr(Config& cfg, int64_t world_size);

/// Whether `sched` decays to min_lr: cosine, tanh and poly (timm's cycle schedulers, which
/// cooldown_epochs lengthens too). step, multistep and none read no min_lr: a min_lr above lr,
/// which would make the first three rise, is refused for those three only (timm takes it for all).
bool decays_to_min_lr(const std::string& sched);

/// Whether `sched` reads min_lr as its floor: decays_to_min_lr's, and plateau (whose decays stop
/// there, so a min_lr above lr would leave it never decaying, unsaid). A min_lr above lr is
/// refused for these.
bool floors_at_min_lr(const std::string& sched);

/// lr of a config whose lr is set (resolve_lr); throws hg::Error naming `what` otherwise.
double peak_lr(const Config& cfg, const char* what);

/// The keys of `cfg` that ScheduleSegment holds, as an entry in use until (`until_epoch`,
/// `until_step`); lr must be set (peak_lr, naming `what`).
ScheduleSegment schedule_segment(const Config& cfg, int64_t until_epoch, int64_t until_step,
                                 const char* what);

/// Sets the keys of `cfg` that `s` holds to its values (schedule_segment's inverse).
void set_schedule_keys(Config& cfg, const ScheduleSegment& s);

/// The model a config describes: the named variant, with every model key of the config applied
/// (validated). Throws hg::Error for an unknown model name or an invalid combination.
ModelConfig model_config_from(const Config& cfg);

/// `path` with a leading '~' read as a shell reads it: "~" and "~/x" are the home folder ($HOME,
/// else the user's entry in the password file), "~user/x" that user's; any other path, or "~name"
/// of no user, is returned as given. Path keys of a config (output, data_dir, initial_checkpoint,
/// resume) are read through it, and `--option=~/x` on the command line. Throws hg::Error when no
/// home folder is known.
std::string expand_home(const std::string& path);

/// Every key, in table order (for help text and tests).
std::vector<std::string> config_keys();

/// The value of `key` as to_yaml writes it (e.g. "0.001", "[2, 2]", "\"cosine\""). Throws hg::Error
/// for an unknown key.
std::string value_text(const Config& cfg, const std::string& key);
/// One key as `haargrad train --help` shows it, from the key table (its only description).
struct KeyDoc {
  std::string key;            ///< e.g. "weight_decay" (the command line also takes --weight-decay)
  std::string type;           ///< e.g. "float >= 0", "one of adamw|sgd", "list of 0-8 ints >= 1"
  std::string default_value;  ///< the default as YAML, e.g. "2e-05", "\"sgd\"", "[]", "null"
  std::string help;           ///< one line
};
/// Every key, in table order.
std::vector<KeyDoc> config_key_docs();

/// Keys close to an unknown `key` (a few typos for its length), best first, at most 3; empty when
/// nothing is close ("lrr" -> {"lr"}, "aa" -> {}).
std::vector<std::string> similar_keys(const std::string& key);

}  // namespace hg::train
