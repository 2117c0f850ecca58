// The training config: the key table, YAML loading with located errors, command-line overrides,
// and the args.yaml writer. One table drives all of them so they cannot disagree.
#include "train/config.h"

#include <pwd.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <type_traits>
#include <variant>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/parse_number.h"
#include "core/shell_quote.h"
#include "core/similar_names.h"
#include "core/threads.h"
#include "core/utf8.h"
#include "data/rand_augment.h"
#include "data/transforms.h"
#include "train/checkpoint.h"
#include "train/schedule.h"
#include "train/timm_keys.h"

namespace hg::train {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- allowed values of one key ------------------------------------------------------------------

struct Rule {
  double lo = -kInf, hi = kInf;  // numbers and list elements
  bool lo_open = false, hi_open = false;
  std::vector<std::string> choices;  // strings; empty = any
  bool any_case = false;             // strings: lowercased as read (the choices are lowercase)
  bool path = false;                 // strings: a file or folder; a leading '~' is the home folder
  // strings: names a file or folder (a path, or a split's sub-folder): text that is not UTF-8 is
  // renamed on disk (check_utf8_strings); any other is fixed where it is written (assign)
  bool file_name = false;
  bool name = false;  // strings: a name (a model, a choice, a spec): one line
  size_t min_len = 0, max_len = std::numeric_limits<size_t>::max();  // lists
  // lists: a single number is taken too, as a list of one, and written back as a number (timm's
  // color_jitter: a float or a tuple)
  bool or_one_number = false;
  bool increasing = false;  // lists: each element above the one before
  // strings: values of timm's that haargrad has not, each with why, said instead of the choices
  std::vector<std::pair<std::string, std::string>> refused = {};

  Rule len(size_t lo_len, size_t hi_len) const {
    Rule r = *this;
    r.min_len = lo_len;
    r.max_len = hi_len;
    return r;
  }
  Rule or_number() const {
    Rule r = *this;
    r.or_one_number = true;
    return r;
  }
  Rule rising() const {
    Rule r = *this;
    r.increasing = true;
    return r;
  }
  // integers: any int64 >= lo, not bounded as the counts are (check_rule): the seed
  bool wide = false;
  Rule any_int64() const {
    Rule r = *this;
    r.wide = true;
    return r;
  }
  Rule refusing(std::string value, std::string why) const {
    Rule r = *this;
    r.refused.emplace_back(std::move(value), std::move(why));
    return r;
  }
};

Rule any() { return {}; }
Rule at_least(double lo) { return Rule{lo, kInf, false, false, {}}; }
Rule above(double lo) { return Rule{lo, kInf, true, false, {}}; }
Rule closed(double lo, double hi) { return Rule{lo, hi, false, false, {}}; }
Rule half_open(double lo, double hi) { return Rule{lo, hi, false, true, {}}; }
Rule left_open(double lo, double hi) { return Rule{lo, hi, true, false, {}}; }
// The model's sizes become C++ ints (ModelConfig): a larger value would wrap around unsaid.
Rule int_sized(double lo) { return closed(lo, std::numeric_limits<int32_t>::max()); }
Rule one_of(std::vector<std::string> c) {
  Rule r;
  r.choices = std::move(c);
  r.name = true;
  return r;
}

/// A name that no list holds (a model, a RandAugment spec): on one line, as every name is.
Rule a_name() {
  Rule r;
  r.name = true;
  return r;
}

/// one_of, in any case: the value is lowercased as it is read (as timm reads its optimizer's name).
Rule one_of_any_case(std::vector<std::string> c) {
  Rule r = one_of(std::move(c));
  r.any_case = true;
  return r;
}

/// A file or folder: "~/x" is read as a shell reads it (expand_home).
Rule a_path() {
  Rule r;
  r.path = true;
  r.file_name = true;
  return r;
}

/// The name of a folder inside another key's (a split's, in data_dir).
Rule a_folder_name() {
  Rule r;
  r.file_name = true;
  return r;
}

std::string format_double(double v) {
  // whole numbers as such ("100000", not to_chars' shortest "1e+05")
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back exactly
  return std::string(buf, res.ptr);
}

std::string describe_range(const Rule& r) {
  if (r.lo == -kInf && r.hi == kInf) return "";
  if (r.hi == kInf) return str(r.lo_open ? " > " : " >= ", format_double(r.lo));
  if (r.lo == -kInf) return str(r.hi_open ? " < " : " <= ", format_double(r.hi));
  return str(" in ", r.lo_open ? '(' : '[', format_double(r.lo), ", ", format_double(r.hi),
             r.hi_open ? ')' : ']');
}

bool in_range(const Rule& r, double v) {
  if (!std::isfinite(v)) return false;
  if (r.lo_open ? v <= r.lo : v < r.lo) return false;
  if (r.hi_open ? v >= r.hi : v > r.hi) return false;
  return true;
}

// ---- the key table ------------------------------------------------------------------------------

using Member = std::variant<int64_t Config::*, double Config::*, bool Config::*,
                            std::string Config::*, std::optional<int64_t> Config::*,
                            std::optional<double> Config::*, std::vector<int64_t> Config::*,
                            std::vector<double> Config::*, std::vector<ScheduleSegment> Config::*>;

struct Field {
  const char* key;
  Member member;
  Rule rule;
  const char* help = "";  // one line for `haargrad train --help` (config_key_docs)
};

const std::vector<Field>& table() {
  // One row per key: name (timm's), member, allowed values, one line of help. This table is the
  // only description of the keys: `haargrad train --help` prints it (config_key_docs).
  static const std::vector<Field> rows = {
      {"model", &Config::model, a_name(),
       "model name (`haargrad models` lists them); model fields left empty take its values "
       "(num_classes, in_chans and ls_init_value are always the config's)"},
      {"num_classes", &Config::num_classes, int_sized(1), "classifier outputs"},
      {"img_size", &Config::img_size, int_sized(1),
       "square input side in pixels (train crop and eval size); not given or null: the model's "
       "own (224; wtconvnext_fmnist 28)"},
      {"in_chans", &Config::in_chans, closed(1, 3), "input channels: 1 (grayscale) or 3 (RGB)"},
      {"depths", &Config::depths, int_sized(1).len(0, 4),
       "blocks per stage (at most 4, as timm); [] or null = the model's"},
      {"dims", &Config::dims, int_sized(1).len(0, 4),
       "channels per stage; [] or null = the model's"},
      {"patch_size", &Config::patch_size, int_sized(1),
       "stem conv kernel = stride in pixels; null = the model's"},
      {"kernel_size", &Config::kernel_size, int_sized(1),
       "depthwise / WTConv kernel size (odd); null = the model's"},
      {"wt_levels", &Config::wt_levels, closed(1, 10).len(0, 4),
       "WTConv Haar levels per stage; [] or null = the model's"},
      {"ls_init_value", &Config::ls_init_value, any(),
       "layer-scale (gamma) init, for any model (wtconvnext_fmnist's 1.0 too: set it); null = no "
       "layer scale (timm's None)"},
      {"wtconv_mode", &Config::wtconv_mode, one_of({"fused", "reference"}),
       "WTConv kernels: fused, or the reference composition (slower, same values)"},
      {"drop_path", &Config::drop_path, half_open(0, 1),
       "stochastic depth rate, rising linearly over the blocks"},
      {"drop", &Config::drop, half_open(0, 1),
       "dropout rate before the classifier, in training (timm's --drop: ConvNeXt's drop_rate)"},
      {"data_dir", &Config::data_dir, a_path(), "dataset root folder"},
      {"dataset", &Config::dataset, one_of({"idx", "image_folder", "synthetic"}),
       "idx (MNIST-format files), image_folder (DIR/<split>/<class>/*), "
       "synthetic (made on the fly)"},
      {"train_split", &Config::train_split, a_folder_name(),
       "training split: a sub-folder of data_dir (image_folder) or train (idx)"},
      {"val_split", &Config::val_split, a_folder_name(),
       "validation split: a sub-folder (timm's default name) or test (idx); '' = no validation "
       "(timm's): epochs ranked by train loss"},
      // at most 10^8 (78x ImageNet's train split): the sampler holds a permutation of the split
      // (8 bytes an image), and 10^11 failed as "out of host memory" naming other keys
      {"synthetic_size", &Config::synthetic_size, closed(1, 1e8),
       "images in the synthetic training split"},
      {"workers", &Config::workers, closed(0, 256),
       "data loader threads; 0 = load on the training thread"},
      {"pin_mem", &Config::pin_mem, any(),
       "build batches in page-locked memory for faster copies to the GPU"},
      {"corrupt_images", &Config::corrupt_images, one_of({"skip", "error"}),
       "an unreadable image: skip (warn and count) or error"},
      {"jpeg_decoder", &Config::jpeg_decoder, one_of({"turbo", "turbo_full", "stb"}),
       "JPEG decoding: turbo (libjpeg-turbo, crop + DCT downscale), turbo_full, or stb"},
      {"gpu_augment", &Config::gpu_augment, any(),
       "workers hand over uint8 crops; resize, flip, normalise (and bf16) run batched on the GPU"},
      {"decode", &Config::decode, one_of({"cpu", "nvjpeg", "nvjpeg_gpu"}),
       "JPEG decoding: cpu (workers, jpeg_decoder), nvjpeg (GPU hardware, then GPU, then CPU), "
       "nvjpeg_gpu (no hardware); nvjpeg* imply gpu_augment"},
      {"crop_pct", &Config::crop_pct, above(0),
       "eval: resize the shorter side to floor(img_size / crop_pct), then centre-crop img_size "
       "(> 1: padded with the zero pixel, as timm); not given or null: the model's own, as timm's "
       "pretrained config (0.95 for convnext_nano, tiny, small; 1.0 for wtconvnext_fmnist; else "
       "0.875)"},
      // bounds far past any data's, so that a value the f32 normalisation cannot use (1e39: inf;
      // a std of 1e-50: 0) is named here, not met as a non-finite loss
      {"mean", &Config::mean, closed(-1e6, 1e6).len(1, 3),
       "per-channel mean subtracted from [0, 1] pixels (one value: every channel, as timm)"},
      {"std", &Config::std, closed(1e-6, 1e6).len(1, 3),
       "per-channel standard deviation pixels are divided by (one value: every channel)"},
      {"hflip", &Config::hflip, closed(0, 1), "horizontal flip probability (train)"},
      {"scale", &Config::scale, left_open(0, 1).len(2, 2),
       "random-resized-crop area fraction range [min, max] (train)"},
      {"ratio", &Config::ratio, above(0).len(2, 2),
       "random-resized-crop aspect ratio range (w/h) [min, max] (train)"},
      {"train_interpolation", &Config::train_interpolation,
       one_of({"random", "bilinear", "bicubic", "nearest", ""}),
       "resize filter of the train crop (random: one of bilinear / bicubic per image; \"\" = "
       "interpolation's, as timm)"},
      {"interpolation", &Config::interpolation, one_of({"bicubic", "bilinear", "nearest"}),
       "resize filter of evaluation (timm: the model's, bicubic for ConvNeXt)"},
      {"color_jitter", &Config::color_jitter, at_least(0).len(3, 4).or_number(),
       "colour jitter: one strength for brightness, contrast and saturation, or [brightness, "
       "contrast, saturation] or [..., hue] (timm's float or 3 / 4-tuple; hue <= 0.5); 0 = off"},
      {"aa", &Config::aa, a_name(),
       "auto-augment policy, timm's spec string (e.g. rand-m9-mstd0.5-inc1); empty = off"},
      {"reprob", &Config::reprob, closed(0, 1), "random erasing probability"},
      {"remode", &Config::remode, one_of({"pixel", "rand", "const"}),
       "random erasing fill: pixel, rand or const"},
      {"recount", &Config::recount, at_least(1), "random erasing boxes per image, at most"},
      {"mixup", &Config::mixup, at_least(0), "mixup alpha; on when > 0"},
      {"cutmix", &Config::cutmix, at_least(0), "cutmix alpha; on when > 0"},
      {"cutmix_minmax", &Config::cutmix_minmax, left_open(0, 1).len(0, 2),
       "[min, max] cutmix box side fractions (turns cutmix on); [] = from the cutmix alpha"},
      {"mixup_prob", &Config::mixup_prob, closed(0, 1), "chance of mixing a batch / pair / image"},
      {"mixup_switch_prob", &Config::mixup_switch_prob, closed(0, 1),
       "chance of cutmix instead of mixup when both are on"},
      {"mixup_mode", &Config::mixup_mode, one_of({"batch", "pair", "elem"}),
       "what is mixed together: batch, pair or elem"},
      {"mixup_off_epoch", &Config::mixup_off_epoch, at_least(0),
       "stop mixing from this epoch on (0-based); 0 = never"},
      {"batch_size", &Config::batch_size, at_least(1),
       "images per step (before gradient accumulation)"},
      {"validation_batch_size", &Config::validation_batch_size, at_least(1),
       "images per evaluation batch; null = batch_size"},
      {"epochs", &Config::epochs, at_least(1), "training epochs"},
      // any case: timm lowercases the name (create_optimizer_v2), so `opt: AdamW` is adamw
      {"opt", &Config::opt, one_of_any_case({"adamw", "sgd", "nesterov", "momentum"}),
       "optimizer (timm's names): adamw; sgd (or nesterov, as timm) = SGD with Nesterov momentum; "
       "momentum = SGD with classical momentum"},
      // 0 is a run whose weights never move (debugging, measuring throughput); timm's train.py
      // reads 0 as unset (`if not args.lr`) and takes lr_base: README, "Configs and runs"
      {"lr", &Config::lr, at_least(0),
       "peak learning rate (0 = the weights never change, with warmup_epochs 0; timm reads 0 as "
       "null); null = lr_base x global batch / lr_base_size (timm)"},
      {"lr_base", &Config::lr_base, above(0),
       "learning rate at a global batch (batch_size x processes x grad_accum_steps) of "
       "lr_base_size, used when lr is null"},
      {"lr_base_size", &Config::lr_base_size, at_least(1), "the global batch lr_base is for"},
      {"lr_base_scale", &Config::lr_base_scale, one_of({"", "linear", "sqrt"}),
       "how lr follows the global batch when lr is null: linear, sqrt, or \"\" = sqrt for adamw, "
       "linear for sgd (timm)"},
      {"weight_decay", &Config::weight_decay, at_least(0),
       "decoupled weight decay (adamw) / L2 (sgd); never on norms, biases, scales"},
      {"layer_decay", &Config::layer_decay, left_open(0, 1),
       "layer-wise lr decay (fine-tuning): lr x layer_decay^(head layer - layer), stem = 0, one "
       "layer per block, head last (timm); null = off"},
      {"momentum", &Config::momentum, half_open(0, 1), "momentum of opt sgd and opt momentum"},
      // > 0: torch takes 0, and a parameter whose gradient and moments are 0 then steps by 0 / 0
      {"opt_eps", &Config::opt_eps, above(0),
       "eps of opt adamw (timm's --opt-eps; null = torch's 1e-8)"},
      {"opt_betas", &Config::opt_betas, half_open(0, 1).len(2, 2),
       "[beta1, beta2] of opt adamw (timm's --opt-betas; null = torch's [0.9, 0.999])"},
      {"clip_grad", &Config::clip_grad, above(0),
       "clip the global gradient norm to this; null = off"},
      {"sched", &Config::sched,
       one_of({"cosine", "tanh", "poly", "step", "multistep", "plateau", "none"})
           .refusing("wsd", "timm 1.0.31's wsd schedule (warmup, stable, decay) is not supported")
           .refusing("rsqrt", "timm 1.0.31's rsqrt schedule is not supported")
           .refusing("constant",
                     "timm 1.0.31's constant schedule (lr held after a warmup) is not supported; "
                     "sched none is lr throughout, without a warmup"),
       "learning-rate schedule after the warmup, timm's: cosine or tanh (lr down to min_lr over "
       "epochs, restarted for lr_cycle_limit cycles), poly (min_lr + (lr - min_lr)(1 - t / "
       "epochs)^decay_rate), step (x decay_rate "
       "every decay_epochs), multistep (x decay_rate at each of decay_milestones), plateau (x "
       "decay_rate, down to min_lr, after more than patience_epochs epochs without a new best "
       "eval top-1, or train loss without validation; per epoch only), or none (lr "
       "throughout, no warmup: timm's train.py makes no scheduler for it)"},
      {"warmup_epochs", &Config::warmup_epochs, at_least(0),
       "epochs of linear warmup from warmup_lr to lr (every sched but none)"},
      {"warmup_lr", &Config::warmup_lr, at_least(0), "learning rate at the start of warmup"},
      {"min_lr", &Config::min_lr, at_least(0),
       "floor of the cosine, tanh, poly and plateau schedules (step and multistep have none, as "
       "timm)"},
      {"sched_on_updates", &Config::sched_on_updates, any(),
       "step the schedule every optimizer update instead of every epoch"},
      {"decay_epochs", &Config::decay_epochs, above(0),
       "sched step: epochs between two decays (lr x decay_rate^floor(epoch / decay_epochs), "
       "epoch from 0); a fraction too, as timm"},
      {"decay_milestones", &Config::decay_milestones, at_least(0).rising(),
       "sched multistep: the lr is multiplied by decay_rate from epoch m of each milestone m on, "
       "counting from 1 as the log does (timm decays at 0-based epoch m - 1)"},
      {"decay_rate", &Config::decay_rate, above(0),
       "sched step, multistep and plateau: the lr's factor at each decay (plateau: below 1); "
       "sched poly: the power (timm's overloading, its default 0.1 included)"},
      {"warmup_prefix", &Config::warmup_prefix, any(),
       "the schedule starts after the warmup (timm's): its t counts from the warmup's end, and "
       "the run trains warmup_epochs + epochs (+ cooldown_epochs)"},
      {"cooldown_epochs", &Config::cooldown_epochs, at_least(0),
       "epochs at min_lr after the cosine, tanh or poly schedule's end: the run trains epochs + "
       "cooldown_epochs (timm's; step, multistep, plateau and none ignore it, as timm)"},
      // torch's ReduceLROnPlateau takes a negative patience (a decay at every counted epoch), a
      // mistake more likely than a wish: refused
      {"patience_epochs", &Config::patience_epochs, at_least(0),
       "sched plateau: the lr decays (x decay_rate) after more than this many epochs in a row "
       "without a new best (eval top-1 up by more than 0.01% of the best, or the train loss "
       "down by as much without validation); timm's"},
      // a fraction of epochs, as timm's (create_scheduler_v2: noise x t_initial), in updates when
      // stepping per update; the draws are timm's own (torch's CPU generator seeded with seed + t)
      {"lr_noise", &Config::lr_noise, at_least(0).len(0, 2),
       "lr noise (timm's): lr x (1 + noise) at every stepped epoch (update) t from lr_noise[0] x "
       "epochs on, up to lr_noise[1] x epochs if given; noise ~ N(0, lr_noise_std) redrawn until "
       "|noise| < lr_noise_pct, seeded with seed + t as timm's torch generator (the same values); "
       "[] or null = off"},
      // 0 would never end timm's redraws (|noise| < 0 never holds)
      {"lr_noise_pct", &Config::lr_noise_pct, above(0),
       "lr noise: its bound, each noise redrawn until |noise| < lr_noise_pct"},
      {"lr_noise_std", &Config::lr_noise_std, at_least(0),
       "lr noise: its standard deviation (before the bound)"},
      // > 0: timm takes log(., lr_cycle_mul), which 0 and below do not have
      {"lr_cycle_mul", &Config::lr_cycle_mul, above(0),
       "sched cosine, tanh, poly: each cycle is lr_cycle_mul x as long as the one before (the "
       "first: epochs); with lr_cycle_limit > 1 the run trains all the cycles (timm's "
       "get_cycle_length)"},
      {"lr_cycle_decay", &Config::lr_cycle_decay, at_least(0),
       "sched cosine, tanh, poly: cycle i (from 0) peaks at lr x lr_cycle_decay^i (train.py's "
       "default 0.5)"},
      {"lr_cycle_limit", &Config::lr_cycle_limit, at_least(0),
       "sched cosine, tanh, poly: cycles before the lr stays at min_lr; the run trains them all "
       "(+ cooldown_epochs); 0 = min_lr from the warmup's end, a run of one cycle (timm's)"},
      // > 0: timm's t^k / T^k at t = 0 is 0^k, which k < 0 divides by 0
      {"lr_k_decay", &Config::lr_k_decay, above(0),
       "sched cosine and poly: k-decay, t^k / T^k in place of t / T (timm's; tanh ignores it, as "
       "timm)"},
      {"schedule_history", &Config::schedule_history, any(),
       "written by the trainer: schedule keys of earlier sessions of a resumed run"},
      {"grad_accum_steps", &Config::grad_accum_steps, at_least(1),
       "micro-batches per optimizer update"},
      {"smoothing", &Config::smoothing, half_open(0, 1),
       "label smoothing of the cross-entropy loss"},
      {"model_ema", &Config::model_ema, any(),
       "keep an exponential moving average of the weights (timm ModelEmaV3)"},
      {"model_ema_decay", &Config::model_ema_decay, closed(0, 1), "EMA decay per optimizer update"},
      {"model_ema_warmup", &Config::model_ema_warmup, any(),
       "ramp the EMA decay up (1 - (1 + step)^(-2/3))"},
      {"initial_checkpoint", &Config::initial_checkpoint, a_path(),
       "weights to start from (fine-tuning); empty = none"},
      // timm's train.py scales (and sets) get_classifier() after create_model, whose
      // checkpoint_path is its initial checkpoint: so here after initial_checkpoint too
      {"head_init_scale", &Config::head_init_scale, any(),
       "head.fc's weight and bias are multiplied by this once the model is made and "
       "initial_checkpoint loaded (timm train.py's --head-init-scale; not on a resume, whose "
       "checkpoint holds the weights); null = unchanged"},
      {"head_init_bias", &Config::head_init_bias, any(),
       "head.fc's bias is set to this value, after head_init_scale (timm train.py's "
       "--head-init-bias, e.g. -log(num_classes)); null = unchanged"},
      // any int64 >= 0 (torch.manual_seed takes 64 bits): no count, not bounded as the counts are
      {"seed", &Config::seed, at_least(0).any_int64(),
       "seed of the model init, data order, augmentation and lr_noise (timm's noise_seed)"},
      {"precision", &Config::precision, one_of({"fp32", "tf32", "bf16"}),
       "fp32; tf32 (GPU matrix products on TF32 tensor cores); "
       "bf16 (bf16 activations, f32 weights)"},
      {"device", &Config::device, one_of({"auto", "cpu", "cuda"}),
       "auto (the GPU when one is usable), cpu or cuda"},
      {"cuda_graph", &Config::cuda_graph, any(),
       "replay the training step as one CUDA graph where it can be (one GPU, AdamW, "
       "grad_accum_steps 1); false = launch op by op (debugging)"},
      {"gemm_autotune", &Config::gemm_autotune, any(),
       "time cuBLASLt's candidate algorithms on each GEMM shape's first call and keep the fastest "
       "(as timm's cudnn.benchmark); false = the heuristic's first: the same bits in every rerun"},
      {"threads", &Config::threads, closed(0, kMaxCpuThreads),
       "CPU threads of the kernels; "
       "0 = $OMP_NUM_THREADS if set, else the cores this process may use"},
      {"log_interval", &Config::log_interval, at_least(1),
       "optimizer updates between log lines (when not on a terminal): the first update of an "
       "epoch, every log_interval-th after it and the epoch's last batch log, as timm"},
      {"checkpoint_hist", &Config::checkpoint_hist, at_least(0),
       "best checkpoint-<epoch> files kept"},
      {"resume", &Config::resume, a_path(),
       "checkpoint to continue from, or auto (the newest of the experiment); empty = none"},
      {"no_resume_opt", &Config::no_resume_opt, any(),
       "a resume restores the weights, EMA and position but not the optimizer state, which "
       "starts from zero (timm's --no-resume-opt); this session only: args.yaml keeps false"},
      {"start_epoch", &Config::start_epoch, closed(0, 1e9),
       "a new run starts at this epoch (0-based): its schedule, update count, data order, "
       "summary rows and checkpoint names as if the epochs before it had run (timm's "
       "--start-epoch, e.g. with initial_checkpoint); a resume goes on at its checkpoint's "
       "position and may not change it; null = 0"},
      {"recovery_interval", &Config::recovery_interval, at_least(0),
       "write recovery.safetensors (the run's position inside an epoch, as a stop signal does) "
       "every this many optimizer updates of an epoch, for resuming after a crash (timm's "
       "--recovery-interval); 0 = only when stopped"},
      {"output", &Config::output, a_path(), "output root folder; empty = output/train"},
      {"experiment", &Config::experiment, any(),
       "run folder name under output; empty = <date>-<model>-<img_size>"},
      {"max_steps_per_epoch", &Config::max_steps_per_epoch, at_least(0),
       "training batches per epoch; 0 = all (evaluation always covers the whole split)"},
      {"dist_bucket_mb", &Config::dist_bucket_mb, above(0),
       "data parallel (mpirun): gradient bucket size in MiB, "
       "reduced as soon as its gradients are final"},
      {"zero_stage", &Config::zero_stage, closed(0, 1),
       "data parallel: 1 = optimizer state sharded over the ranks (ZeRO-1); 0 = replicated"},
      {"dist_check_every", &Config::dist_check_every, at_least(0),
       "data parallel, debug: compare a hash of every parameter across ranks every N updates; "
       "0 = off"},
      {"dist_timeout", &Config::dist_timeout, above(0),
       "data parallel: seconds a collective may wait before the run stops, naming the rank"},
      {"dist_force", &Config::dist_force, any(),
       "the data-parallel code path even in one process (tests NCCL / MPI on one GPU or CPU)"},
  };
  return rows;
}

const Field* find_field(const std::string& key) {
  for (const Field& f : table())
    if (key == f.key) return &f;
  return nullptr;
}

// ---- where a value came from, for messages ------------------------------------------------------

struct Where {
  std::string source;  // file name or "command line"
  int line = -1;       // 1-based; -1 when there is no line
  std::string text() const { return line >= 0 ? str(source, " line ", line) : source; }
};
using Locations = std::map<std::string, Where>;

[[noreturn]] void fail(const std::string& key, const Where& where, const std::string& msg) {
  throw Error(str("config: key '", key, "' (", where.text(), "): ", msg));
}

Where where_of(const YAML::Node& node, const Where& fallback) {
  const YAML::Mark m = node.Mark();
  if (m.is_null() || fallback.line < 0) return fallback;
  return Where{fallback.source, m.line + 1};
}

// timm's names for settings that haargrad spells otherwise or has not (timm_key_hint), and
// argparse's --no-X of a bool key: the hint an unknown key's message carries, or "". (timm's short
// options -b, -vb and -j are taken as they are: apply_overrides.)
std::string timm_spelling(const std::string& key) {
  if (std::string hint = timm_key_hint(key); !hint.empty()) return hint;
  if (key == "ema")  // export's and infer's flag given to validate or train
    return "the model EMA is model_ema here (train); validate evaluates a checkpoint's with "
           "--use-ema, export and infer take --ema";
  // argparse's --no-X for a flag X (BooleanOptionalAction): a bool key takes false instead
  if (key.rfind("no_", 0) == 0)
    if (const Field* f = find_field(key.substr(3));
        f != nullptr && std::holds_alternative<bool Config::*>(f->member)) {
      std::string flag = key.substr(3);
      std::replace(flag.begin(), flag.end(), '_', '-');
      return str("a flag is turned off with false here: --", flag, " false");
    }
  return "";
}

// "did you mean 'a' or 'b'?" for an unknown key close to known ones (similar_keys), or "".
std::string close_keys_hint(const std::string& key) {
  const std::vector<std::string> close = similar_keys(key);
  std::string hint;
  for (size_t i = 0; i < close.size(); ++i)
    hint += str(i == 0                  ? "did you mean "
                : i + 1 == close.size() ? " or "
                                        : ", ",
                "'", close[i], "'");
  return close.empty() ? hint : hint + "?";
}

[[noreturn]] void fail_unknown(const std::string& key, const Where& where) {
  if (const std::string timm = timm_spelling(key); !timm.empty())
    throw Error(str("config: unknown key '", key, "' (", where.text(), "): ", timm,
                    " (`haargrad train --help` lists every key)"));
  const std::string hint = close_keys_hint(key);
  // a byte that is not UTF-8 (a Latin-1 key) as \xHH: raw, the terminal shows '?' for it
  throw Error(str("config: unknown key '", utf8_shown(key), "' (", where.text(), ")",
                  hint.empty() ? " (`haargrad train --help` lists every key)" : "; " + hint));
}

// ---- reading one value --------------------------------------------------------------------------

const char* type_name(int64_t*) { return "an integer"; }
const char* type_name(double*) { return "a number"; }
const char* type_name(bool*) { return "true or false"; }
const char* type_name(std::string*) { return "a string"; }

std::string shown(const YAML::Node& node) {
  if (node.IsScalar()) return str("'", node.Scalar(), "'");
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "null";
}

// The member of `cfg` that field `f` sets when it is a string (const for a const cfg), else null.
template <typename C>
auto string_member(C& cfg, const Field& f) {
  using Ptr = std::conditional_t<std::is_const_v<C>, const std::string*, std::string*>;
  return std::visit(
      [&](auto member) -> Ptr {
        if constexpr (std::is_same_v<std::decay_t<decltype(cfg.*member)>, std::string>)
          return &(cfg.*member);
        else
          return nullptr;
      },
      f.member);
}

// A name (Rule::name: a model, a choice, a spec) with a line break: none has one, and a block
// scalar keeps its last line break (`model: >` over an indented name reads "name\n", as PyYAML
// reads it too), which then sat inside the message ("unknown model 'name<newline>'"). Refused
// when read, naming the key, rather than trimmed: the config then means what YAML (and timm's
// PyYAML) reads from it. Paths keep their line breaks (a file name may hold one).
void check_one_line(const std::string& value, const std::string& key, const Where& where) {
  const size_t at = value.find_first_of("\r\n");
  if (at == std::string::npos) return;
  std::string escaped;  // the value on one line, its line breaks as YAML's escapes
  for (char c : value)
    escaped += c == '\n' ? std::string("\\n") : c == '\r' ? "\\r" : std::string(1, c);
  const bool only_at_end = value.find_first_not_of("\r\n", at) == std::string::npos;
  fail(key, where,
       str("expected a name on one line, got \"", escaped, "\"",
           only_at_end ? " (a block scalar, '>' or '|', keeps its last line break: write the value "
                         "on the key's line, or use '>-')"
                       : ""));
}

// Text that is not UTF-8 in a key that names no file (a model, a spec, the experiment's name): a
// training run records its config as JSON, which holds UTF-8 only. Refused where it is read,
// naming the line to fix; a file's name is checked by check_utf8_strings, for training runs only
// (the other commands take such a path), with the advice to rename it.
void check_utf8_text(const std::string& value, const std::string& key, const Where& where) {
  if (invalid_utf8_at(value) == std::string::npos) return;
  const std::string fix =
      where.line >= 0 ? str("write the value in UTF-8 on line ", where.line, " of ", where.source,
                            " (e.g. save the file as UTF-8)")
      : where.source == "command line" ? std::string("give the value in UTF-8 on the command line")
                                       : str("write the value in UTF-8 in ", where.source);
  fail(key, where,
       str("'", utf8_shown(value),
           "' is not UTF-8 text, as a config's values are (a training run records them as JSON, "
           "which holds UTF-8 only): ",
           fix));
}

template <typename T>
T read_scalar(const YAML::Node& node, const std::string& key, const Where& where,
              const char* what) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (node.IsNull()) return "";  // `resume:` left empty means no value
  }
  if (!node.IsScalar()) fail(key, where, str("expected ", what, ", got ", shown(node)));
  // an explicit tag: PyYAML (timm's config files) makes bytes of !!binary, a float of `!!float 1`
  // and refuses `!foo`, where yaml-cpp gives the text; !!str is a string, as quotes make one
  const std::string& tag = node.Tag();
  const bool str_tag = tag == "tag:yaml.org,2002:str";
  // the tag of the key's own type reads as the plain value (`!!bool true`, `!!int 5`)
  bool own_tag = false;
  if constexpr (std::is_same_v<T, bool>) own_tag = tag == "tag:yaml.org,2002:bool";
  if constexpr (std::is_same_v<T, int64_t>) own_tag = tag == "tag:yaml.org,2002:int";
  if constexpr (std::is_same_v<T, double>)
    own_tag = tag == "tag:yaml.org,2002:float" || tag == "tag:yaml.org,2002:int";
  if (!tag.empty() && tag != "?" && tag != "!" && !str_tag && !own_tag)  // "": a value made here
    fail(key, where,
         str("the YAML tag '", tag, "' is not read here (PyYAML reads such a value otherwise); ",
             "write the value without it"));
  if constexpr (!std::is_same_v<T, std::string>) {
    // a quoted "1e-3" or "true" is a string in YAML (PyYAML, timm's config files): say so
    if (tag == "!" || str_tag)
      fail(key, where,
           str("expected ", what, ", got the ", str_tag ? "!!str tagged" : "quoted", " string \"",
               node.Scalar(), "\" (write it without ", str_tag ? "the tag" : "quotes", ")"));
  }
  if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
    // in a file, a leading zero: YAML 1.1 (PyYAML) reads 010 as octal 8 (and 09 as a string);
    // haargrad's decimal reading would silently differ from timm's. The command line is argparse's
    // int("010") == 10, as here.
    const std::string& text = node.Scalar();
    const size_t digits = text.find_first_not_of("+-");
    if (where.source != "command line" && digits != std::string::npos && text.size() > digits + 1 &&
        text[digits] == '0' && text.find_first_not_of("0123456789", digits) == std::string::npos)
      fail(key, where,
           str("'", text,
               "' has a leading zero, which YAML 1.1 (PyYAML, so timm's config files) does not "
               "read as a decimal number (010 is octal 8, 09 a string); write it without the "
               "zero"));
    // Decimal only: YAML would read "010" as 8, "0x10" as 16 and ".inf" as infinity.
    std::string why;
    std::optional<T> v;
    if constexpr (std::is_same_v<T, int64_t>)
      v = parse_decimal_int(node.Scalar(), &why);
    else
      v = parse_decimal_float(node.Scalar(), &why);
    if (!v) fail(key, where, str("expected ", what, ", got ", shown(node), " (", why, ")"));
    return *v;
  } else {
    if constexpr (std::is_same_v<T, bool>) {
      // 0 and 1: PyYAML reads them as integers and timm's train.py takes any value by its truth
      // (`model_ema: 1` in a timm config turns the EMA on); other integers stay refused
      if (node.Scalar() == "0" || node.Scalar() == "1") return node.Scalar() == "1";
      // y / n: yaml-cpp's booleans, but strings to PyYAML, whose non-empty string timm takes as
      // true (`model_ema: n` would turn timm's EMA on)
      const std::string& v = node.Scalar();
      if (v == "y" || v == "Y" || v == "n" || v == "N")
        fail(key, where,
             where.source == "command line"
                 ? str("expected ", what, ", got '", v, "'; write true or false")
                 : str("expected ", what, ", got '", v,
                       "', which PyYAML (timm's config files) "
                       "reads as a string, true to timm whatever it says; write true or false"));
    }
    try {
      return node.as<T>();
    } catch (const YAML::Exception&) {
      fail(key, where, str("expected ", what, ", got ", shown(node)));
    }
  }
}

// The keys of a schedule_history entry after its position (until_epoch, until_step): the
// top-level keys of ScheduleSegment's members, read and checked as those keys are, written in
// this order. An entry may leave out the keys from kFirstLaterSegmentKey on, which came later:
// it takes their defaults (ScheduleSegment's).
constexpr const char* kSegmentKeys[] = {"epochs",
                                        "lr",
                                        "sched",
                                        "warmup_epochs",
                                        "warmup_lr",
                                        "min_lr",
                                        "sched_on_updates",
                                        "decay_epochs",
                                        "decay_milestones",
                                        "decay_rate",
                                        "warmup_prefix",
                                        "lr_noise",
                                        "lr_noise_pct",
                                        "lr_noise_std",
                                        "lr_cycle_mul",
                                        "lr_cycle_decay",
                                        "lr_cycle_limit",
                                        "lr_k_decay"};
constexpr size_t kFirstLaterSegmentKey = 7;  // decay_epochs

template <typename T>
T read_value(const YAML::Node& node, const std::string& key, const Where& where);

// schedule_history: a list of mappings of until_epoch, until_step and kSegmentKeys. Their ranges
// are checked by check_rule (check_segments).
std::vector<ScheduleSegment> read_segments(const YAML::Node& node, const std::string& key,
                                           const Where& where) {
  if (node.IsNull()) return {};
  if (!node.IsSequence()) fail(key, where, str("expected a list of mappings, got ", shown(node)));
  std::vector<ScheduleSegment> out;
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node item = node[i];
    const Where at = where_of(item, where);
    const std::string name = str(key, "[", i, "]");
    if (!item.IsMap())
      fail(name, at, str("expected a mapping of schedule keys, got ", shown(item)));
    Config keys;  // the entry's values, in the members of the keys of the same names
    set_schedule_keys(keys, ScheduleSegment{});
    int64_t until_epoch = 0, until_step = 0;
    std::set<std::string> seen;
    for (const auto& kv : item) {
      const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
      const std::string sub = str(name, ".", k);
      if (!seen.insert(k).second) fail(sub, at, "given twice");
      const auto known = std::find_if(std::begin(kSegmentKeys), std::end(kSegmentKeys),
                                      [&](const char* s) { return k == s; });
      if (k == "until_epoch" || k == "until_step") {
        (k == "until_epoch" ? until_epoch : until_step) =
            read_scalar<int64_t>(kv.second, sub, at, "an integer");
      } else if (known != std::end(kSegmentKeys)) {
        std::visit(
            [&](auto member) {
              keys.*member = read_value<std::decay_t<decltype(keys.*member)>>(kv.second, sub, at);
            },
            find_field(k)->member);
      } else {
        std::string list = "until_epoch, until_step";
        for (const char* s : kSegmentKeys) list += str(", ", s);
        fail(name, at, str("unknown key '", k, "'; expected ", list));
      }
    }
    for (const char* k : {"until_epoch", "until_step"})
      if (!seen.count(k)) fail(name, at, str("missing key '", k, "'"));
    for (size_t k = 0; k < kFirstLaterSegmentKey; ++k)
      if (!seen.count(kSegmentKeys[k])) fail(name, at, str("missing key '", kSegmentKeys[k], "'"));
    if (!keys.lr) fail(str(name, ".lr"), at, "expected a number, got null");
    out.push_back(schedule_segment(keys, until_epoch, until_step, "schedule_history"));
  }
  return out;
}

template <typename T>
T read_value(const YAML::Node& node, const std::string& key, const Where& where) {
  if constexpr (std::is_same_v<T, std::optional<int64_t>> ||
                std::is_same_v<T, std::optional<double>>) {
    if (node.IsNull()) return std::nullopt;
    using V = typename T::value_type;
    return read_scalar<V>(node, key, where,
                          str(type_name(static_cast<V*>(nullptr)), " or null").c_str());
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                       std::is_same_v<T, std::vector<double>>) {
    using V = typename T::value_type;
    const std::string what = str("a list of ", std::is_same_v<V, double> ? "numbers" : "integers");
    if (!node.IsSequence()) fail(key, where, str("expected ", what, ", got ", shown(node)));
    T out;
    for (const YAML::Node& item : node) {
      if (item.IsNull())  // "48,,96" on the command line: an entry left empty
        fail(key, where_of(item, where),
             str("expected ", what, ", got an empty entry (entry ", out.size() + 1, ")"));
      out.push_back(read_scalar<V>(item, key, where_of(item, where), what.c_str()));
    }
    return out;
  } else if constexpr (std::is_same_v<T, std::vector<ScheduleSegment>>) {
    return read_segments(node, key, where);
  } else {
    return read_scalar<T>(node, key, where, type_name(static_cast<T*>(nullptr)));
  }
}

void check_segments(const std::string& key, const std::vector<ScheduleSegment>& segments,
                    const Where& where);

// Checks the value of `f` in `cfg` against its rule; `name` replaces the key in messages.
void check_rule(const Field& f, const Config& cfg, const Where& where,
                const std::string& name = "") {
  const std::string key = name.empty() ? std::string(f.key) : name;
  const Rule& r = f.rule;
  auto check_number = [&](double v, const char* what) {
    if (!in_range(r, v))
      fail(key, where, str("expected ", what, describe_range(r), ", got ", format_double(v)));
  };
  // An integer count without an upper bound of its own (epochs, batch sizes, steps) is bounded
  // as the model's sizes are: a value near 2^63 overflowed the run's arithmetic unsaid (epochs
  // read as none trained, a validation batch that evaluated no image).
  auto check_integer = [&](int64_t v, const char* what) {
    if (!in_range(r, static_cast<double>(v)))
      fail(key, where, str("expected ", what, describe_range(r), ", got ", v));
    constexpr int64_t kMaxCount = std::numeric_limits<int32_t>::max();
    if (r.hi == kInf && !r.wide && v > kMaxCount)
      fail(key, where, str("expected ", what, " of at most ", kMaxCount, ", got ", v));
  };
  std::visit(
      [&](auto member) {
        const auto& v = cfg.*member;
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          check_integer(v, "an integer");
        } else if constexpr (std::is_same_v<T, double>) {
          check_number(v, "a number");
        } else if constexpr (std::is_same_v<T, std::string>) {
          for (const auto& [value, why] : r.refused)
            if (v == value) fail(key, where, str("'", value, "': ", why));
          if (!r.choices.empty() &&
              std::find(r.choices.begin(), r.choices.end(), v) == r.choices.end()) {
            std::string list;
            for (const auto& c : r.choices) list += str(list.empty() ? "" : ", ", "'", c, "'");
            fail(key, where,
                 str("expected one of ", list, ", got ",
                     v.empty() ? std::string("null or nothing (YAML's null, ~, '')")
                               : str("'", utf8_shown(v), "'")));
          }
        } else if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
          if (v) check_integer(*v, "an integer");
        } else if constexpr (std::is_same_v<T, std::optional<double>>) {
          if (v) check_number(*v, "a number");
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                             std::is_same_v<T, std::vector<double>>) {
          if (r.or_one_number && v.size() != 1 && (v.size() < r.min_len || v.size() > r.max_len))
            fail(key, where,
                 str("expected a number or a list of ", r.min_len, " to ", r.max_len,
                     " numbers, got a list of ", v.size(), " (", f.help, ")"));
          if (!r.or_one_number && (v.size() < r.min_len || v.size() > r.max_len))
            fail(key, where,
                 r.min_len == r.max_len
                     ? str("expected a list of ", r.min_len, " values, got ", v.size())
                     : str("expected a list of ", r.min_len, " to ", r.max_len, " values, got ",
                           v.size()));
          for (auto x : v) {
            if constexpr (std::is_same_v<T, std::vector<int64_t>>)
              check_integer(x, "list elements");
            else
              check_number(x, "list elements");
          }
          for (size_t i = 1; r.increasing && i < v.size(); ++i)
            if (v[i] <= v[i - 1])
              fail(key, where,
                   str("expected increasing values, got ", format_double(double(v[i])), " after ",
                       format_double(double(v[i - 1]))));
        } else if constexpr (std::is_same_v<T, std::vector<ScheduleSegment>>) {
          check_segments(key, v, where);
        }
      },
      f.member);
}

// lr_noise [start, end] with start >= end would never add noise (timm's start <= t < end): a
// mistake, refused as cutmix_minmax's [min, max] is.
void check_noise_range(const std::vector<double>& noise, const std::string& key,
                       const Where& where) {
  if (noise.size() == 2 && noise[0] >= noise[1])
    fail(key, where,
         str("expected [start, end] with start < end (noise from start x epochs up to end x "
             "epochs), got [",
             format_double(noise[0]), ", ", format_double(noise[1]), "]"));
}

// Each entry's values obey the rules of the top-level keys of the same names, min_lr <= lr (where
// it is the schedule's floor), and the
// positions grow strictly (each entry ends after the one before, and after the start).
void check_segments(const std::string& key, const std::vector<ScheduleSegment>& segments,
                    const Where& where) {
  std::pair<int64_t, int64_t> previous{0, 0};
  for (size_t i = 0; i < segments.size(); ++i) {
    const ScheduleSegment& s = segments[i];
    const std::string name = str(key, "[", i, "]");
    Config probe;
    set_schedule_keys(probe, s);
    for (const char* k : kSegmentKeys) check_rule(*find_field(k), probe, where, str(name, ".", k));
    check_noise_range(s.lr_noise, str(name, ".lr_noise"), where);
    if (s.min_lr > s.lr && floors_at_min_lr(s.sched))
      fail(name, where, str("min_lr ", s.min_lr, " is above lr ", s.lr));
    if (s.until_epoch < 0 || s.until_step < 0)
      fail(name, where,
           str("until_epoch and until_step must be >= 0, got ", s.until_epoch, " and ",
               s.until_step));
    const std::pair<int64_t, int64_t> at{s.until_epoch, s.until_step};
    if (at <= previous)
      fail(name, where,
           str("ends at epoch ", s.until_epoch, " step ", s.until_step, ", not after ",
               i == 0 ? std::string("the start")
                      : str("the previous entry (epoch ", previous.first, " step ", previous.second,
                            ")")));
    previous = at;
  }
}

// Keys that timm's train.py leaves None (or '') to mean "the model's" or "the dataset's" (taken
// from the pretrained config or the dataset), "off" (drop_path, cutmix_minmax, lr_noise) or "the
// optimizer's" (opt_betas, opt_eps): its
// args.yaml holds them so. Each takes haargrad's default there, which is timm's ConvNeXt value
// (img_size and crop_pct: the model's own, as timm's pretrained config gives them).
bool timm_default_key(const std::string& key) {
  static const std::set<std::string> keys = {
      "img_size", "num_classes",   "in_chans", "crop_pct",  "mean",
      "std",      "interpolation", "dataset",  "drop_path", "cutmix_minmax",
      "lr_noise", "opt_betas",     "opt_eps"};
  return keys.count(key) != 0;
}

// A node that is absent, or timm's None or '': the key left to its default.
bool unset_node(const YAML::Node& node) {
  return !node || node.IsNull() || (node.IsScalar() && node.Scalar().empty());
}

// `node` is timm's None or '' for such a key.
bool is_timm_unset(const Field& f, const YAML::Node& node) {
  return timm_default_key(f.key) && unset_node(node);
}

// The field's member of `cfg` back to its default.
void reset_to_default(const Field& f, Config& cfg) {
  std::visit([&](auto member) { cfg.*member = Config{}.*member; }, f.member);
}

// `node` is null for a model list whose empty value means the variant's own (depths, dims,
// wt_levels: "an empty list or null", README), as timm's None for a model argument.
bool is_variant_default(const Field& f, const YAML::Node& node) {
  return node.IsNull() && f.rule.min_len == 0 &&
         std::holds_alternative<std::vector<int64_t> Config::*>(f.member);
}

// Parses `node` into the field's member of `cfg` and checks it.
void assign(const Field& f, Config& cfg, const YAML::Node& node, const Where& where) {
  if (is_timm_unset(f, node) || is_variant_default(f, node)) return reset_to_default(f, cfg);
  // a number as a list of one (a new node: assigning to a yaml-cpp node that refers to `node`
  // would change the document itself), for every list of numbers as on the command line
  // (`mean: 0.5` was refused in a file where `--mean 0.5` was taken); a list of integers (depths,
  // dims) keeps "expected a list of integers", plainer than the model's length check
  YAML::Node one(YAML::NodeType::Sequence);
  const bool numbers = std::holds_alternative<std::vector<double> Config::*>(f.member);
  const bool wrap = (f.rule.or_one_number || numbers) && node.IsScalar();
  if (wrap) one.push_back(node);
  std::visit(
      [&](auto member) {
        using T = std::decay_t<decltype(cfg.*member)>;
        cfg.*member = read_value<T>(wrap ? one : node, f.key, where);
      },
      f.member);
  // a folder name with the trailing '/' of the shell's completion names the same folder (its -N
  // siblings would otherwise be made inside it)
  if (std::string_view(f.key) == "experiment")
    while (cfg.experiment.size() > 1 && cfg.experiment.back() == '/') cfg.experiment.pop_back();
  if (std::string* text = string_member(cfg, f)) {
    if (f.rule.path) {
      try {
        *text = expand_home(*text);
      } catch (const Error& e) {
        fail(f.key, where, e.what());
      }
    }
    if (f.rule.name) check_one_line(*text, f.key, where);
    if (!f.rule.file_name && f.rule.choices.empty()) check_utf8_text(*text, f.key, where);
    if (f.rule.any_case)
      for (char& ch : *text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  check_rule(f, cfg, where);
}

// Where `key` was set; keys not in `locs` were set earlier (`unset`: defaults, or the loaded file).
Where location(const Locations& locs, const std::string& key, const char* unset) {
  auto it = locs.find(key);
  return it != locs.end() ? it->second : Where{unset, -1};
}

// The model must exist, its keys must build a valid model, and img_size must reach through it
// (unless the command does not use img_size).
void validate_model(const Config& c, const Locations& locs, const char* unset,
                    ImgSizeCheck img_size) {
  ModelConfig m;
  try {
    m = model_config(c.model);
  } catch (const Error& e) {
    fail("model", location(locs, "model", unset), e.what());
  }
  try {
    m = model_config_from(c);
  } catch (const Error& e) {
    std::string keys;
    for (const char* k : kModelKeys)
      if (locs.count(k))
        keys += str(keys.empty() ? "" : ", ", "'", k, "' (", locs.at(k).text(), ")");
    throw Error(str("config: model '", c.model, "'",
                    keys.empty() ? std::string() : " with keys " + keys, ": ", e.what()));
  }
  if (img_size == ImgSizeCheck::unused) return;
  try {
    m.check_img_size(c.img_size);
  } catch (const Error& e) {
    fail("img_size", location(locs, "img_size", unset), e.what());
  }
}

// Why sched plateau would never lower `lr` ("" when it would): torch makes no decay of its eps or
// less, silently, so decay_rate 0.9999999 keeps the lr for good.
std::string plateau_stuck(const Config& c, double lr) {
  const double first_decay = lr - std::max(lr * c.decay_rate, c.min_lr);
  if (c.sched != "plateau" || c.decay_rate >= 1 || lr <= c.min_lr || first_decay > kTorchPlateauEps)
    return "";
  const bool floor = lr * c.decay_rate < c.min_lr;  // min_lr, not decay_rate, bounds the decay
  return str("sched plateau's first decay would lower lr ", format_double(lr), " by ",
             fmt::format("{:.3g}", first_decay), floor ? " (to min_lr)" : "",
             ", not more than torch's ReduceLROnPlateau eps ", format_double(kTorchPlateauEps),
             ", so no decay would ever be made: lower ", floor ? "min_lr" : "decay_rate");
}

// sched plateau's keys against timm's PlateauLRScheduler: what it refuses, and what haargrad's
// one lr (times each layer group's lr_scale) cannot follow. `pair_fail(a, b, why)` throws.
template <class PairFail>
void validate_plateau(const Config& c, PairFail pair_fail) {
  if (c.sched != "plateau") return;
  if (c.sched_on_updates)  // timm's create_scheduler_v2 asserts the same
    pair_fail("sched", "sched_on_updates",
              "sched plateau steps once an epoch, by the epoch's metric (timm's: 'Plateau LR only "
              "supports step per epoch'); set sched_on_updates false");
  if (c.decay_rate >= 1)  // torch's ReduceLROnPlateau: "Factor should be < 1.0."
    pair_fail("sched", "decay_rate",
              str("sched plateau multiplies the lr by decay_rate at each decay, which must lower "
                  "it: expected decay_rate below 1 (torch's ReduceLROnPlateau), got ",
                  format_double(c.decay_rate)));
  if (const std::string stuck = c.lr ? plateau_stuck(c, *c.lr) : ""; !stuck.empty())
    pair_fail("lr", *c.lr * c.decay_rate < c.min_lr ? "min_lr" : "decay_rate", stuck);
  // timm floors each parameter group's lr at min_lr on its own: a layer group scaled below the
  // head would stop at min_lr while the head goes on decaying, where haargrad scales one lr
  if (c.layer_decay && c.min_lr > 0)
    pair_fail("layer_decay", "min_lr",
              str("sched plateau floors the lr at min_lr ", format_double(c.min_lr),
                  ", which timm applies to each layer group's lr apart (a group scaled by "
                  "layer_decay reaches it before the head); haargrad scales one lr: set min_lr 0 "
                  "or leave layer_decay out"));
}

void validate_at(const Config& c, const Locations& locs, const char* unset = "default value",
                 ImgSizeCheck img_size = ImgSizeCheck::against_model) {
  auto location = [&](const Locations& l, const std::string& key) {
    return train::location(l, key, unset);
  };
  for (const Field& f : table()) check_rule(f, c, location(locs, f.key));
  // the run folder is <output>/<experiment>: a name must not lead out of output
  if (!c.experiment.empty()) {
    const std::filesystem::path e(c.experiment);
    bool inside = e.is_relative();
    for (const auto& part : e) inside = inside && !part.empty() && part != "." && part != "..";
    // control characters (a newline, a NUL) break the run's logs, CSV and gnuplot script
    const bool printable = std::none_of(c.experiment.begin(), c.experiment.end(), [](char ch) {
      return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f;
    });
    if (!inside || !printable)
      fail("experiment", location(locs, "experiment"),
           str("'", c.experiment,
               "' must name a folder inside output (names joined by '/'; no leading '/', "
               "no '.' or '..' parts, no control characters)"));
  }
  auto pair_fail = [&](const char* a, const char* b, const std::string& msg) {
    throw Error(str("config: keys '", a, "' (", location(locs, a).text(), ") and '", b, "' (",
                    location(locs, b).text(), "): ", msg));
  };
  if (!c.dims.empty() && !c.depths.empty() && c.dims.size() != c.depths.size())
    pair_fail("dims", "depths",
              str("dims has ", c.dims.size(), " stages, depths has ", c.depths.size()));
  if (!c.wt_levels.empty() && !c.depths.empty() && c.wt_levels.size() != c.depths.size())
    pair_fail("wt_levels", "depths",
              str("wt_levels has ", c.wt_levels.size(), " stages, depths has ", c.depths.size()));
  // in_chans 2 first: a mean of 2 values would not make it valid, so the mean is not the point
  if (c.in_chans == 2) fail("in_chans", location(locs, "in_chans"), "expected 1 or 3, got 2");
  if (static_cast<int64_t>(c.mean.size()) != c.in_chans)
    pair_fail("mean", "in_chans",
              str("mean has ", c.mean.size(), " values, in_chans is ", c.in_chans));
  if (static_cast<int64_t>(c.std.size()) != c.in_chans)
    pair_fail("std", "in_chans",
              str("std has ", c.std.size(), " values, in_chans is ", c.in_chans));
  // torchvision's ColorJitter takes a hue strength up to 0.5 (a half turn of the colour wheel)
  if (c.color_jitter.size() == 4 && c.color_jitter[3] > 0.5)
    fail("color_jitter", location(locs, "color_jitter"),
         str("the hue (4th value) must be in [0, 0.5] (torchvision's bound), got ",
             format_double(c.color_jitter[3])));
  // crop_pct > 1 resizes the shorter side below img_size (timm pads the crop), to a pixel at least
  if (std::floor(static_cast<double>(c.img_size) / c.crop_pct) < 1)
    pair_fail("crop_pct", "img_size",
              str("crop_pct ", format_double(c.crop_pct), " resizes the shorter side to floor(",
                  c.img_size, " / ", format_double(c.crop_pct),
                  ") = 0 pixels; crop_pct must be at most img_size"));
  // and at most 2^30 pixels (the eval transform's bound, data/transforms.h): a tinier crop_pct
  // makes the resized sides overflow
  if (std::floor(static_cast<double>(c.img_size) / c.crop_pct) > data::kMaxResizedSide)
    pair_fail("crop_pct", "img_size",
              str("crop_pct ", format_double(c.crop_pct), " resizes the shorter side to floor(",
                  c.img_size, " / ", format_double(c.crop_pct),
                  ") pixels, more than 2^30; crop_pct must be at least img_size / 2^30"));
  if (c.scale[0] > c.scale[1])
    fail("scale", location(locs, "scale"),
         str("expected [min, max], got min ", c.scale[0], " > max ", c.scale[1]));
  if (c.ratio[0] > c.ratio[1])
    fail("ratio", location(locs, "ratio"),
         str("expected [min, max], got min ", c.ratio[0], " > max ", c.ratio[1]));
  check_noise_range(c.lr_noise, "lr_noise", location(locs, "lr_noise"));
  validate_plateau(c, pair_fail);
  // the cycles' epochs (timm's get_cycle_length) count the run: a whole number of them, which
  // lr_cycle_mul^lr_cycle_limit can take past any run (or to inf)
  if (decays_to_min_lr(c.sched) && (c.lr_cycle_limit > 1 || c.lr_cycle_mul != 1)) {
    const double cycles = cycle_epochs(c);
    if (!(cycles >= 1 && cycles <= 1e9))
      pair_fail("lr_cycle_mul", "lr_cycle_limit",
                str(std::max<int64_t>(1, c.lr_cycle_limit), " cycles from epochs ", c.epochs,
                    ", each lr_cycle_mul ", format_double(c.lr_cycle_mul),
                    " x as long as the one before, take ", format_double(cycles),
                    " epochs (timm's get_cycle_length); expected 1 to 10^9"));
  }
  // a run that starts at or past its end would train nothing (timm's range() would be empty)
  if (c.start_epoch && *c.start_epoch >= run_epochs(c))
    pair_fail("start_epoch", "epochs",
              str("start_epoch ", *c.start_epoch, " is not before the run's end: the run is ",
                  run_epochs(c), " epochs long (",
                  run_epochs(c) == c.epochs ? "epochs"
                                            : "epochs "
                                              "with warmup_prefix, cooldown_epochs and lr cycles",
                  "), so nothing would "
                  "train; expected at most ",
                  run_epochs(c) - 1));
  if (c.lr && c.min_lr > *c.lr && floors_at_min_lr(c.sched))
    pair_fail(
        "min_lr", "lr",
        str("min_lr ", c.min_lr, " is above lr ", *c.lr, ": set min_lr to at most lr (--min-lr ",
            *c.lr == 0 ? "0" : format_double(*c.lr), ", or lower)"));
  if ((c.opt == "sgd" || c.opt == "nesterov") && c.momentum == 0)
    pair_fail("opt", "momentum",
              str("opt ", c.opt,
                  " is SGD with Nesterov momentum (timm), which needs momentum > 0; opt "
                  "momentum with momentum 0 is plain SGD"));
  // timm drops eps and betas silently for an optimizer without them (SGD): refused here, since
  // a value that changes nothing is a mistake the run would otherwise hide (torch's defaults,
  // which every config holds, are no such value)
  const bool eps_set = c.opt_eps != kTorchAdamEps;
  if (c.opt != "adamw" &&
      (eps_set || c.opt_betas != std::vector<double>{kTorchAdamBeta1, kTorchAdamBeta2}))
    pair_fail(eps_set ? "opt_eps" : "opt_betas", "opt",
              str(eps_set ? "opt_eps" : "opt_betas", " is AdamW's, and opt ", c.opt,
                  " has none (timm ignores it): leave it null, or set opt: adamw"));
  if (c.device == "cpu" && c.decode != "cpu")
    pair_fail("decode", "device",
              str("decode: ", c.decode,
                  " decodes JPEGs on the GPU, and device is cpu: set decode: cpu, or device: "
                  "cuda / auto"));
  if (c.device == "cpu" && c.gpu_augment)
    pair_fail("gpu_augment", "device",
              "gpu_augment resizes, flips and normalises the batches on the GPU, and device is "
              "cpu: set gpu_augment: false, or device: cuda / auto");
  if (!c.aa.empty()) {
    try {
      data::parse_rand_augment(c.aa);
    } catch (const Error& e) {
      fail("aa", location(locs, "aa"), e.what());
    }
  }
  if (c.cutmix_minmax.size() == 1 ||
      (c.cutmix_minmax.size() == 2 && c.cutmix_minmax[0] >= c.cutmix_minmax[1]))
    fail("cutmix_minmax", location(locs, "cutmix_minmax"),
         "expected [] or [min, max] with min < max");
  const bool mixing = c.mixup > 0 || c.cutmix > 0 || !c.cutmix_minmax.empty();
  if (mixing && c.batch_size % 2 != 0)
    pair_fail("batch_size",
              c.mixup > 0    ? "mixup"
              : c.cutmix > 0 ? "cutmix"
                             : "cutmix_minmax",  // the one set
              str("mixup / cutmix mix image i with image N-1-i: batch_size must be even, got ",
                  c.batch_size));
  validate_model(c, locs, unset, img_size);
}

// Several unknown keys in one message, each with its line (-1: none, the command line's) and the
// hint a lone key's message gives (timm's own spelling first); `in` says where ("in x.yaml").
[[noreturn]] void fail_unknown_keys(const std::vector<std::pair<std::string, int>>& keys,
                                    const std::string& in) {
  std::string list;
  for (const auto& [key, line] : keys) {
    const std::string timm = timm_spelling(key), hint = timm.empty() ? close_keys_hint(key) : timm;
    std::string notes = line >= 0 ? str("line ", line) : std::string();
    if (!hint.empty()) notes += (notes.empty() ? "" : "; ") + hint;
    list += str(list.empty() ? "" : ", ", "'", utf8_shown(key), "'",
                notes.empty() ? "" : " (" + notes + ")");
  }
  throw Error(str("config: ", keys.size(), " unknown keys ", in, ": ", list,
                  " (`haargrad train --help` lists every key)"));
}

// Several unknown keys are named in one message: a timm args.yaml holds a hundred keys haargrad
// does not have (amp, channels_last, ...), and one error per run would take a hundred runs.
void check_known_keys(const YAML::Node& root, const std::string& source) {
  // YAML 1.1's merge key is not in yaml-cpp, which reads `<<: *anchor` as a key named '<<' (its
  // keys are not merged): say that, rather than "unknown key '<<'", before any other key
  for (const auto& kv : root)
    if (kv.first.IsScalar() && kv.first.Scalar() == "<<")
      throw Error(str("config: '<<' (", where_of(kv.first, Where{source, 1}).text(),
                      ") is a YAML merge key, which is not supported (yaml-cpp reads configs and "
                      "does not merge): write the keys out in this file; aliases of single values "
                      "(key: *anchor) work"));
  std::vector<std::pair<std::string, Where>> unknown;
  std::string ignored;  // timm's options at values that ask for nothing different here
  for (const auto& kv : root) {
    if (!kv.first.IsScalar() || find_field(kv.first.Scalar())) continue;
    // timm's img_size and in_chans, and its positional DATA_DIR: parse_root
    if (kv.first.Scalar() == "input_size" || kv.first.Scalar() == "data") continue;
    if (timm_key_asks_nothing(kv.first.Scalar(), kv.second))
      ignored += (ignored.empty() ? "" : ", ") + kv.first.Scalar();
    else
      unknown.emplace_back(kv.first.Scalar(), where_of(kv.first, Where{source, 1}));
  }
  if (!ignored.empty() && unknown.empty())
    spdlog::info("{}: timm options that ask for nothing haargrad does otherwise, ignored: {}",
                 source, ignored);
  if (unknown.size() == 1) fail_unknown(unknown[0].first, unknown[0].second);
  if (unknown.empty()) return;
  std::vector<std::pair<std::string, int>> keys;
  for (const auto& [key, where] : unknown) keys.emplace_back(key, where.line);
  fail_unknown_keys(keys, "in " + source);
}

// timm's resolve_data_config: a single mean or std value stands for every input channel
// (`--mean 0.5` is (0.5, 0.5, 0.5) for RGB).
void broadcast_mean_std(Config& c) {
  for (std::vector<double>* v : {&c.mean, &c.std})
    if (v->size() == 1 && c.in_chans > 1) v->assign(static_cast<size_t>(c.in_chans), v->front());
}

// Where key `key` of the mapping `root` stands in `source` (line 1 when it is not found).
Where key_where(const YAML::Node& root, const std::string& key, const std::string& source) {
  for (const auto& kv : root)
    if (kv.first.IsScalar() && kv.first.Scalar() == key)
      return where_of(kv.first, Where{source, 1});
  return Where{source, 1};
}

// timm's input_size [C, H, W] in a file (a timm run's args.yaml, `--input-size 1 28 28`): the
// img_size H and in_chans C of its data, as timm's resolve_data_config takes it over img_size.
// A square one only (haargrad's img_size is one side); an img_size or in_chans the file gives
// too must agree. null (timm's default) is nothing.
void take_input_size(const YAML::Node& root, const std::string& source, Config& cfg,
                     Locations& locs) {
  const YAML::Node node = root["input_size"];
  if (!node || node.IsNull()) return;
  const Where where = key_where(root, "input_size", source);
  std::vector<int64_t> chw;
  if (node.IsSequence() && node.size() == 3)
    for (const YAML::Node& v : node) {
      int64_t x = 0;
      if (!v.IsScalar() || !YAML::convert<int64_t>::decode(v, x) || x < 1) break;
      chw.push_back(x);
    }
  if (chw.size() != 3)
    fail("input_size", where, "expected timm's [channels, height, width], three integers >= 1");
  if (chw[1] != chw[2])
    fail("input_size", where,
         str("[", chw[0], ", ", chw[1], ", ", chw[2],
             "] is not square: haargrad's img_size is one side (give img_size instead)"));
  const auto agree = [&](const char* key, int64_t have, int64_t want) {
    const YAML::Node given = root[key];  // null: timm's None, the default, gives nothing
    if (given && !given.IsNull() && have != want)
      fail("input_size", where,
           str("[", chw[0], ", ", chw[1], ", ", chw[2], "] gives ", key, " ", want, ", and ", key,
               " (", locs[key].text(), ") is ", have, ": give one of them"));
  };
  agree("img_size", cfg.img_size, chw[1]);
  agree("in_chans", cfg.in_chans, chw[0]);
  cfg.img_size = chw[1];
  cfg.in_chans = chw[0];
  locs["img_size"] = locs["in_chans"] = where;
  // each through its own key's rule, as if the file gave it (in_chans 1 or 3, a size that fits)
  for (const char* key : {"in_chans", "img_size"})
    check_rule(*find_field(key), cfg, where, "input_size");
}

// timm's positional DATA_DIR, `data` in its args.yaml (`train.py /imagenet` writes data:
// /imagenet, data_dir: null): the data_dir when none is given, as timm's train.py takes it; a
// data_dir given beside it must agree. null is nothing.
void take_timm_data(const YAML::Node& root, const std::string& source, Config& cfg,
                    Locations& locs) {
  const YAML::Node node = root["data"];
  if (!node || node.IsNull()) return;
  const Where where = key_where(root, "data", source);
  // read as data_dir's own value is (a path: '~' expanded, UTF-8 and one line checked)
  Config read;
  assign(*find_field("data_dir"), read, node, where);
  const auto same = [](const std::string& a, const std::string& b) {  // "/d/" is "/d"
    const auto norm = [](const std::string& p) {
      std::filesystem::path n = std::filesystem::path(p).lexically_normal();
      return n.has_filename() || !n.has_parent_path() ? n : n.parent_path();
    };
    return norm(a) == norm(b);
  };
  const YAML::Node given = root["data_dir"];
  if (given && !given.IsNull() && !cfg.data_dir.empty() && !same(cfg.data_dir, read.data_dir))
    fail("data", where,
         str("'", utf8_shown(read.data_dir), "' (timm's positional DATA_DIR) and data_dir (",
             locs["data_dir"].text(), ") '", utf8_shown(cfg.data_dir),
             "' differ: give one of them"));
  cfg.data_dir = read.data_dir;
  locs["data_dir"] = where;
}

// The keys timm takes from the model's pretrained config when they are None.
constexpr const char* kModelOwnKeys[] = {"img_size", "crop_pct"};

// Whether `cfg`'s value of model-own key `key` is the model's (Config::ModelOwn).
bool& model_own_flag(Config& cfg, const std::string& key) {
  return key == "img_size" ? cfg.model_own.img_size : cfg.model_own.crop_pct;
}

// Model-own key `key` left unset (timm's None): the model's own value (224 px, or 28 for
// wtconvnext_fmnist; crop_pct 0.95 for convnext_tiny's default weights), marked as such, so that
// a resume keeps its run's value instead; the value stays for a name that is no model (the model
// key's own check names it).
void take_model_own(Config& cfg, const std::string& key) {
  try {
    const ModelConfig m = model_config(cfg.model);
    if (key == "img_size")
      cfg.img_size = m.default_img_size;
    else
      cfg.crop_pct = m.default_crop_pct;
  } catch (const Error&) {
  }
  model_own_flag(cfg, key) = true;
}

// `set_later`: the keys the command line sets next (load_config_with_overrides), else null. As
// timm's train.py, whose config file only gives its options' defaults, such a key's value in the
// file is not checked (`opt: lamb` in a timm args.yaml beside --opt adamw), and the checks between
// keys wait for the command line (apply_overrides runs them on the result: a file's `opt: sgd`
// with `momentum: 0` beside --momentum 0.9).
// `file_locs`, when given, receives where each key came from (apply_overrides names a key the
// command line leaves at its line).
Config parse_root(const YAML::Node& root, const std::string& source, ImgSizeCheck img_size,
                  const std::set<std::string>* set_later = nullptr,
                  Locations* file_locs = nullptr) {
  Config cfg;
  if (root.IsNull()) return cfg;  // an empty file means all defaults
  if (!root.IsMap())
    throw Error(str("config: ", where_of(root, Where{source, 1}).text(),
                    ": expected a mapping of keys to values at the top level"));
  check_known_keys(root, source);
  Locations locs;
  for (const auto& kv : root) {
    const Where where = where_of(kv.first, Where{source, 1});
    if (!kv.first.IsScalar())
      throw Error(str("config: ", where.text(), ": keys must be plain names"));
    const std::string key = kv.first.Scalar();
    const Field* f = find_field(key);
    if (!f) continue;  // a timm option check_known_keys let pass (timm_key_asks_nothing)
    if (locs.count(key)) fail(key, where, str("given twice (first at ", locs[key].text(), ")"));
    try {  // a value the command line replaces is kept where valid (a --model beside it
           // compares the file's model: apply_overrides), else the default until replaced
      assign(*f, cfg, kv.second, where);
    } catch (const Error&) {
      if (set_later == nullptr || set_later->count(key) == 0) throw;
      reset_to_default(*f, cfg);
    }
    locs[key] = where;
  }
  take_input_size(root, source, cfg, locs);
  // no img_size (nor input_size) or crop_pct, or timm's None: the model's own, as timm's
  // resolve_data_config takes them (wtconvnext_fmnist's file without img_size trained at 224 px)
  for (const char* key : kModelOwnKeys)
    if (unset_node(root[key]) &&
        (std::string(key) != "img_size" || unset_node(root["input_size"]))) {
      take_model_own(cfg, key);
      locs.erase(key);  // not given: a --model next gives its own (apply_overrides)
    }
  take_timm_data(root, source, cfg, locs);
  broadcast_mean_std(cfg);
  if (set_later == nullptr) validate_at(cfg, locs, "default value", img_size);
  if (file_locs != nullptr) *file_locs = locs;
  return cfg;
}

// ---- writing ------------------------------------------------------------------------------------

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20 || ch == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

std::string yaml_value(const Config& cfg, const Field& f) {
  return std::visit(
      [&](auto member) -> std::string {
        const auto& v = cfg.*member;
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>)
          return std::to_string(v);
        else if constexpr (std::is_same_v<T, double>)
          return format_double(v);
        else if constexpr (std::is_same_v<T, bool>)
          return v ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::string>)
          return quote(v);
        else if constexpr (std::is_same_v<T, std::optional<int64_t>>)
          return v ? std::to_string(*v) : "null";
        else if constexpr (std::is_same_v<T, std::optional<double>>)
          return v ? format_double(*v) : "null";
        else if constexpr (std::is_same_v<T, std::vector<ScheduleSegment>>) {
          std::string out = "[";
          for (size_t i = 0; i < v.size(); ++i) {
            Config keys;
            set_schedule_keys(keys, v[i]);
            out += str(i ? ", " : "", "{until_epoch: ", v[i].until_epoch,
                       ", until_step: ", v[i].until_step);
            for (const char* k : kSegmentKeys)
              out += str(", ", k, ": ", yaml_value(keys, *find_field(k)));
            out += "}";
          }
          return out + "]";
        } else {
          if (f.rule.or_one_number && v.size() == 1) return format_double(double(v[0]));
          std::string out = "[";
          for (size_t i = 0; i < v.size(); ++i) {
            if (i) out += ", ";
            if constexpr (std::is_same_v<T, std::vector<double>>)
              out += format_double(v[i]);
            else
              out += std::to_string(v[i]);
          }
          return out + "]";
        }
      },
      f.member);
}

// "int >= 1", "float in [0, 1)", "one of fused|reference", "list of 2 floats > 0", ...
std::string value_type_text(const Field& f) {
  const Rule& r = f.rule;
  auto len_text = [&r]() -> std::string {
    if (r.min_len == r.max_len) return str(r.min_len, " ");
    if (r.max_len == std::numeric_limits<size_t>::max()) return "";
    return str(r.min_len, "-", r.max_len, " ");
  };
  return std::visit(
      [&](auto member) -> std::string {
        using T = std::decay_t<decltype(Config{}.*member)>;
        if constexpr (std::is_same_v<T, int64_t>)
          return "int" + describe_range(r);
        else if constexpr (std::is_same_v<T, double>)
          return "float" + describe_range(r);
        else if constexpr (std::is_same_v<T, bool>)
          return "bool";
        else if constexpr (std::is_same_v<T, std::string>) {
          if (r.choices.empty()) return "string";
          std::string c;  // an empty choice shown as "" (lr_base_scale's, interpolation's)
          for (size_t i = 0; i < r.choices.size(); ++i)
            c += str(i == 0 ? "" : "|", r.choices[i].empty() ? "\"\"" : r.choices[i]);
          return "one of " + c;
        } else if constexpr (std::is_same_v<T, std::optional<int64_t>>)
          return "int" + describe_range(r) + " or null";
        else if constexpr (std::is_same_v<T, std::optional<double>>)
          return "float" + describe_range(r) + " or null";
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
          return "list of " + len_text() + "ints" + describe_range(r) +
                 (r.increasing ? ", increasing" : "");
        else if constexpr (std::is_same_v<T, std::vector<double>>)
          return (r.or_one_number ? "float" + describe_range(r) + " or " : std::string()) +
                 "list of " + len_text() + "floats" + describe_range(r);
        else
          return "list of schedule mappings";
      },
      f.member);
}

// The type, and for a key timm may leave None, that null takes the default.
std::string type_text(const Field& f) {
  return value_type_text(f) +
         (timm_default_key(f.key) ? " or null (the default, as timm's None)" : "");
}

}  // namespace

// ---- public API ---------------------------------------------------------------------------------

namespace {

/// The lines of `text` (without their '\n'), as yaml-cpp's marks count them.
std::vector<std::string> text_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

bool blank_line(const std::string& l) { return l.find_first_not_of(" \t\r") == std::string::npos; }

/// Throws when a plain value (mark m) runs on past its line: yaml-cpp folds an indented line into
/// the plain value above it, which is valid YAML for a long value (PyYAML wraps at 80 columns),
/// so only a continuation that starts with a key of ours is taken for a missing ':'.
void check_plain_value_ends_on_its_line(const YAML::Node& node, const YAML::Mark& m,
                                        const std::string& text, const std::string& source) {
  // a value longer than the rest of its line ran on (a flow list's items and a commented value
  // are shorter)
  const size_t eol = std::min(text.find('\n', size_t(m.pos)), text.size());
  if (node.Scalar().size() <= eol - size_t(m.pos)) return;
  const std::vector<std::string> lines = text_lines(text);
  size_t line = size_t(m.line) + 1;  // the next line that holds something but a comment
  std::string next;
  for (; line < lines.size(); ++line) {
    if (blank_line(lines[line])) continue;
    next = lines[line].substr(lines[line].find_first_not_of(" \t"));
    next.erase(next.find_last_not_of(" \t\r") + 1);
    if (next[0] != '#') break;
    next.clear();
  }
  if (!find_field(next.substr(0, next.find_first_of(" \t")))) return;
  std::string value = node.Scalar();  // on one line (a blank line folds as a newline)
  std::replace(value.begin(), value.end(), '\n', ' ');
  throw Error(str("config: cannot parse ", source, " line ", line + 1, ": '", next,
                  "' has no ':' after its key, so YAML reads it as the rest of the value on line ",
                  m.line + 1, " ('", value, "')"));
}

/// Throws when a scalar under `node` does not end on the line it starts on. yaml-cpp takes a quote
/// left open at the end of the file as one string of every line after it (`experiment: "my run`
/// then `lr: 0.01` gave the experiment 'my run lr: 0.01 ' and dropped lr, unsaid; PyYAML refuses
/// such a file), and an indented line without ':' as the rest of the plain value above it
/// (`model: a` then `  lr 0.1` gave the model 'a lr 0.1', refused as an unknown model).
void check_values_end_on_their_line(const YAML::Node& node, const std::string& text,
                                    const std::string& source) {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      check_values_end_on_their_line(kv.first, text, source);
      check_values_end_on_their_line(kv.second, text, source);
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) check_values_end_on_their_line(item, text, source);
  } else if (node.IsScalar()) {
    const YAML::Mark m = node.Mark();
    if (m.pos < 0 || size_t(m.pos) >= text.size()) return;
    const char quote = text[size_t(m.pos)];
    if (quote != '"' && quote != '\'') {
      check_plain_value_ends_on_its_line(node, m, text, source);
      return;
    }
    for (size_t i = size_t(m.pos) + 1; i < text.size() && text[i] != '\n'; ++i) {
      if (quote == '"' && text[i] == '\\') {
        ++i;  // an escape: \" is no end
      } else if (text[i] == quote) {
        if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
          ++i;  // '' is a quote inside '...'
          continue;
        }
        return;
      }
    }
    throw Error(str("config: cannot parse ", source, " line ", m.line + 1, ": the value quoted by ",
                    quote, " there does not end on its line (a missing closing ", quote,
                    "? a config's quoted values end on their line)"));
  }
}

// A syntax error's message. yaml-cpp's mark is the 0-based line where it found the error, which
// for two mistakes is a line after the one to fix: a key without ':' runs on as one plain scalar
// into the next line's key ("lr 0.1" then "epochs: 2" is the key "lr 0.1 epochs", refused at that
// line's ':'), and an unclosed '[' or '{' runs on until a line that cannot continue it. Those
// name the line of the mistake, and where yaml-cpp stopped. `text`: what the marks count in.
std::string syntax_error(const std::string& text, const YAML::Mark& mark, const std::string& msg,
                         const std::string& source) {
  const std::vector<std::string> lines = text_lines(text);
  const auto line = static_cast<size_t>(std::max(mark.line, 0));
  const auto column = static_cast<size_t>(std::max(mark.column, 0));
  const std::string found = str(" ('", msg, "' at line ", line + 1, ")");
  if (line < lines.size() && msg == YAML::ErrorMsg::MAP_VALUE) {
    const std::string before = lines[line].substr(0, column);
    size_t first = line;  // the first line of the key the ':' ends
    if (!blank_line(before) && before.find(':') == std::string::npos)
      for (size_t i = line; i-- > 0;) {
        const std::string& l = lines[i];
        if (blank_line(l)) continue;
        const char c = l[l.find_first_not_of(" \t")];
        if (c == '#' || c == '-' || l.find(':') != std::string::npos) break;
        first = i;
      }
    if (first != line) {
      std::string key = lines[first].substr(lines[first].find_first_not_of(" \t"));
      key.erase(key.find_last_not_of(" \t\r") + 1);
      return str("config: cannot parse ", source, " line ", first + 1, ": '", key,
                 "' has no ':' after its key, so YAML reads it on into the next line", found);
    }
  }
  if (msg == YAML::ErrorMsg::END_OF_SEQ_FLOW || msg == YAML::ErrorMsg::END_OF_MAP_FLOW) {
    // the '[' / '{' not closed before the mark: one that starts a value (after ':', '-', ',',
    // '[', '{' or at a line's start; in "a[1]" it is text), outside quotes and comments
    std::vector<size_t> open;  // their lines
    for (size_t i = 0; i <= line && i < lines.size(); ++i) {
      const std::string& l = lines[i];
      char quote = 0, prev = 0;  // prev: the last character but spaces before this one
      for (size_t j = 0; j < (i == line ? std::min(column, l.size()) : l.size()); ++j) {
        const char c = l[j];
        if (quote) {
          if (quote == '"' && c == '\\')
            ++j;
          else if (c == quote)
            quote = 0;
          continue;
        }
        if (c == ' ' || c == '\t') continue;
        if (c == '#' && (j == 0 || l[j - 1] == ' ' || l[j - 1] == '\t')) break;
        const bool starts = prev == 0 || std::strchr(":-,[{", prev) != nullptr;
        if (starts && (c == '"' || c == '\''))
          quote = c;
        else if (starts && (c == '[' || c == '{'))
          open.push_back(i);
        else if ((c == ']' || c == '}') && !open.empty())
          open.pop_back();
        prev = c;
      }
    }
    if (!open.empty() && open.back() != line)
      return str("config: cannot parse ", source, " line ", open.back() + 1, ": the ",
                 msg == YAML::ErrorMsg::END_OF_SEQ_FLOW ? "'['" : "'{'", " there is not closed",
                 found);
  }
  return str("config: cannot parse ", source, " line ", line + 1, ": ", msg);
}

/// A top-level key written without its ':' (`lr_base` alone on the last line of a file cut short):
/// yaml-cpp reads it as the key with a null value, where PyYAML refuses the file ("could not find
/// expected ':'"); it read as the key "given twice", or "expected a number, got null".
void check_keys_have_colons(const YAML::Node& root, const std::string& text,
                            const std::string& source) {
  // a block mapping's keys with a null value: a bare word reads as one (a flow mapping's
  // `{a: 1, b}` is valid YAML with b null)
  if (!root.IsMap() || root.Style() == YAML::EmitterStyle::Flow) return;
  for (const auto& kv : root) {
    const YAML::Mark m = kv.first.Mark();
    if (!kv.first.IsScalar() || !kv.second.IsNull() || m.pos < 0 || size_t(m.pos) >= text.size())
      continue;
    // a quoted key, an explicit one (`? lr` then `: 0.5`), a flow mapping: not this case
    const size_t line_start = text.rfind('\n', size_t(m.pos)) + 1;  // npos + 1 = 0
    const std::string before = text.substr(line_start, size_t(m.pos) - line_start);
    if (std::strchr("\"'?{", text[size_t(m.pos)]) != nullptr ||
        before.find_first_of("?{") != std::string::npos)
      continue;
    const size_t end = text.find('\n', size_t(m.pos));
    const std::string line = text.substr(
        size_t(m.pos), end == std::string::npos ? std::string::npos : end - size_t(m.pos));
    if (line.find(':') == std::string::npos)
      throw Error(str("config: cannot parse ", source, " line ", m.line + 1, ": '",
                      utf8_shown(kv.first.Scalar()),
                      "' has no ':' after it (YAML is key: value; a file cut short?)"));
  }
}

/// The one YAML document of a config (a null node for an empty file or comments). A second
/// document would be dropped: a mistake, not a config.
YAML::Node parse_document(const std::string& text, const std::string& source) {
  // yaml-cpp's marks count from after a UTF-8 byte order mark, and in the decoded text of a
  // UTF-16 / 32 file: the checks read the UTF-8 text the marks count in (UTF-16 / 32: none)
  const bool wide = text.size() >= 2 &&
                    (static_cast<uint8_t>(text[0]) >= 0xFE || text[0] == '\0' || text[1] == '\0');
  const bool bom = text.rfind("\xEF\xBB\xBF", 0) == 0;
  const std::string marked = wide ? std::string() : bom ? text.substr(3) : text;
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text);
  } catch (const YAML::DeepRecursion& e) {  // its message is only "bad file"
    throw Error(str("config: cannot parse ", source, " line ", std::max(e.mark.line, 0) + 1,
                    ": lists or mappings nested too deeply for yaml-cpp to read; a config's "
                    "values are numbers, names or flat lists"));
  } catch (const YAML::ParserException& e) {
    throw Error(syntax_error(marked, e.mark, e.msg, source));
  }
  HG_CHECK(docs.size() <= 1, "config: '", source, "' holds ", docs.size(),
           " YAML documents (separated by ---); a config is one mapping of keys");
  if (!docs.empty() && !wide) {
    check_keys_have_colons(docs[0], marked, source);
    check_values_end_on_their_line(docs[0], marked, source);
  }
  return docs.empty() ? YAML::Node() : docs[0];
}

}  // namespace

Config config_from_yaml(const std::string& text, const std::string& source, ImgSizeCheck img_size) {
  return parse_root(parse_document(text, source), source, img_size);
}

namespace {
// Why `path` cannot be read, for the error message: the system's reason, and for a missing file
// the .yaml files of its folder whose names are close ("fashion-mnist.yaml" ->
// "fashion_mnist.yaml").
std::string unreadable_reason(const std::string& path, int err) {
  namespace fs = std::filesystem;
  std::string why = std::strerror(err);
  std::error_code ec;
  const fs::path p(path), dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (err != ENOENT || !fs::is_directory(dir, ec)) return why;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".yaml") names.push_back(e.path().filename().string());
  const std::vector<std::string> close = similar_names(p.filename().string(), names);
  if (!close.empty()) why += str("; did you mean '", (dir / close[0]).string(), "'?");
  return why;
}
}  // namespace

std::string expand_home(const std::string& path) {
  if (path.empty() || path[0] != '~') return path;
  const size_t slash = path.find('/');
  const std::string user =
      path.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
  const std::string rest = slash == std::string::npos ? "" : path.substr(slash);
  std::vector<char> buf(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (user.empty()) {
    if (const char* home = std::getenv("HOME"); home && *home) return home + rest;
    getpwuid_r(::geteuid(), &entry, buf.data(), buf.size(), &found);
    HG_CHECK(found && found->pw_dir && *found->pw_dir, "cannot read '~' in '", path,
             "': $HOME is not set and the password file has no home folder for this user; "
             "write the path out");
  } else {
    getpwnam_r(user.c_str(), &entry, buf.data(), buf.size(), &found);
    if (!found || !found->pw_dir || !*found->pw_dir) return path;  // no such user: as given
  }
  return found->pw_dir + rest;
}

namespace {
// A config is a few KiB of keys (an args.yaml after many resumes, with its schedule_history, a few
// tens): a file past this is something else given as the config, and is read no further.
constexpr size_t kMaxConfigBytes = size_t{1} << 20;
}  // namespace

bool yaml_name(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".yaml" || ext == ".yml";
}

namespace {

Config read_config_file(const std::string& path, ImgSizeCheck img_size,
                        const std::set<std::string>* set_later = nullptr,
                        Locations* file_locs = nullptr) {
  std::error_code ec;
  HG_CHECK(!std::filesystem::is_directory(path, ec), "config: '", path,
           "' is a folder, not a YAML file (e.g. configs/fashion_mnist.yaml or a run's args.yaml); "
           "a data folder (timm's positional DATA_DIR) is given as --data-dir ",
           shell_quote(path));
  const std::string ext = std::filesystem::path(path).extension().string();
  // weights alone (an export, a timm state_dict) have no run to resume: they start a new one
  bool weights_only = false;
  try {
    weights_only = ext == ".safetensors" && !read_train_state(path).has_value();
  } catch (const Error&) {  // unreadable: said below as a checkpoint
  }
  HG_CHECK(!weights_only, "config: '", path,
           "' is a file of weights (an export or a timm state_dict), not a YAML config: start a "
           "run from them with `haargrad train CONFIG.yaml --initial-checkpoint ",
           shell_quote(path), "`");
  // its run's args.yaml by name when it is beside it (`train CKPT`; `train --resume CKPT` without a
  // config reads that args.yaml itself, app/train.cpp)
  const std::filesystem::path args = std::filesystem::path(path).parent_path() / "args.yaml";
  const bool args_beside = std::filesystem::is_regular_file(args, ec);
  HG_CHECK(ext != ".safetensors", "config: '", path, "' is a checkpoint, not a YAML config: ",
           args_beside ? str("resume it with `haargrad train --resume ", shell_quote(path),
                             "` (its run's config, ", args.string(), ")")
                       : str("resume it with `haargrad train RUN/args.yaml --resume ",
                             shell_quote(path), "` (args.yaml is in its run folder)"));
  std::ifstream in(path, std::ios::binary);
  const int err = errno;
  HG_CHECK(in.good(), "config: cannot open file '", path, "': ", unreadable_reason(path, err),
           ext == ".yaml" || ext == ".yml" ? ""
                                           : " (the first argument is the config file: `haargrad "
                                             "train CONFIG.yaml --key value ...`)");
  // at most one byte past the limit: the whole file was read before the checks below, a dataset
  // archive given as the config into memory to its end, /dev/zero until the kernel killed us
  std::string bytes(kMaxConfigBytes + 1, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(in.gcount()));
  // an image or a model.pth given as the config would read as a YAML syntax error; UTF-16 text
  // (byte order mark first) holds NUL bytes too, and is YAML
  const bool utf16 = bytes.size() >= 2 && ((bytes[0] == '\xff' && bytes[1] == '\xfe') ||
                                           (bytes[0] == '\xfe' && bytes[1] == '\xff'));
  HG_CHECK(utf16 || bytes.find('\0') == std::string::npos, "config: '", path,
           "' is not a YAML text file (it holds NUL bytes: binary data such as a checkpoint or an "
           "image); the first argument is the config file: `haargrad train CONFIG.yaml --key "
           "value ...`");
  if (bytes.size() > kMaxConfigBytes) {
    const uintmax_t size = std::filesystem::is_regular_file(path, ec)
                               ? std::filesystem::file_size(path, ec)
                               : 0;  // a pipe, a device: no size to name
    throw Error(
        str("config: '", path, "' ",
            size > kMaxConfigBytes && !ec ? str("is ", size, " bytes")
                                          : str("holds more than ", kMaxConfigBytes, " bytes"),
            ": not a config (a config is a few KiB of keys, e.g. configs/fashion_mnist.yaml "
            "or a run's args.yaml); the first argument is the config file: `haargrad train "
            "CONFIG.yaml --key value ...`"));
  }
  // A file of no keys (empty, comments, null) is every default, which the command line may then
  // set: said, not refused.
  const YAML::Node root = parse_document(bytes, path);
  if (root.IsNull())
    spdlog::warn(
        "config: '{}' holds no keys (it is empty, comments or null): every key has its default "
        "(configs/fashion_mnist.yaml or a run's args.yaml is a start)",
        path);
  return parse_root(root, path, img_size, set_later, file_locs);
}

}  // namespace

Config load_config(const std::string& path, ImgSizeCheck img_size) {
  return read_config_file(path, img_size);
}

// The keys that shape a variant's architecture beside its name. A config file's values were
// written for its own model: a --model that replaces it takes its variant's own (below).
const char* const kArchitectureKeys[] = {"depths", "dims", "patch_size", "kernel_size",
                                         "wt_levels"};

namespace {

/// `arg` with timm's scripts' short options for config keys written as the keys ("-b" is
/// "--batch_size"; train.py's -c is the train command's), else as it is.
std::string long_override(const std::string& arg) {
  static const std::map<std::string, std::string> kShort = {
      {"-b", "batch_size"}, {"-vb", "validation_batch_size"}, {"-j", "workers"}};
  const auto short_key = kShort.find(arg);
  return short_key == kShort.end() ? arg : "--" + short_key->second;
}

}  // namespace

bool override_takes_value(const std::string& arg) {
  const std::string option = long_override(arg);
  if (option.size() <= 2 || option.rfind("--", 0) != 0 || option.find('=') != std::string::npos)
    return false;
  std::string key = option.substr(2);
  std::replace(key.begin(), key.end(), '-', '_');
  // an unknown key takes none: timm's options that haargrad lacks are mostly flags (--amp,
  // --pin-mem), and `--amp x.yaml` must find the CONFIG for apply_overrides to name the key
  const Field* f = find_field(key);
  return f != nullptr && !std::holds_alternative<bool Config::*>(f->member);
}

namespace {

// Several unknown keys on the command line are named in one message, as in a file
// (check_known_keys): timm flags pasted together (--amp --channels-last --pin-mem) were named one
// run at a time. One unknown key is left to apply_overrides' own message.
void check_known_override_keys(const std::vector<std::string>& args) {
  std::vector<std::pair<std::string, int>> unknown;  // (key, no line)
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string arg = long_override(args[i]);
    if (arg.size() <= 2 || arg.rfind("--", 0) != 0) continue;  // a value, or apply_overrides' error
    std::string key = arg.substr(2, arg.find('=') - 2);
    std::replace(key.begin(), key.end(), '-', '_');
    if (!find_field(key))
      unknown.emplace_back(key, -1);
    else if (override_takes_value(args[i]))
      ++i;  // its value may start with "--"
  }
  if (unknown.size() >= 2) fail_unknown_keys(unknown, "on the command line");
}

}  // namespace

namespace {

// A word of the command line that is the next option, where a list's words or a bare flag end (as
// argparse reads them): "--key", "--key=value", or timm's short -b, -vb, -j (`--scale 0.5 1.0 -b
// 4` read -b as a number of scale's list).
bool is_option_word(const std::string& word) {
  return word.rfind("--", 0) == 0 || long_override(word) != word;
}

/// One option of the command line as apply_overrides reads it.
struct OverrideWord {
  const Field* field;
  std::string key;    ///< the config key (--weight-decay is weight_decay, -b batch_size)
  std::string spelt;  ///< the option as typed, for the messages
  std::string value;  ///< "true" for a bare flag; a list's separate words joined by ','
  bool is_list;       ///< a list of numbers (its words are joined; a bare value is wrapped)
};

/// The command line's options in order. Throws hg::Error for an unknown key or a missing value.
std::vector<OverrideWord> read_override_words(const std::vector<std::string>& args) {
  const Where cmd{"command line", -1};
  check_known_override_keys(args);
  std::vector<OverrideWord> words;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string arg = long_override(args[i]);
    const std::string spelt = args[i];  // as typed, for the messages
    HG_CHECK(arg.size() > 2 && arg.rfind("--", 0) == 0,
             "config: expected '--key value' on the command line, got '", arg, "'",
             arg.size() > 1 && arg[0] == '-' && arg[1] != '-'
                 ? " (config keys take two dashes; the short options are timm's -b, -vb and -j)"
             : yaml_name(arg)
                 ? " (a second config? a run takes one, its first argument; the command line "
                   "changes its keys one by one)"
                 : "");
    std::string key = arg.substr(2), value;
    bool has_value = false;
    if (auto eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
      has_value = true;
    }
    std::replace(key.begin(), key.end(), '-', '_');  // timm spells them --weight-decay
    const Field* f = find_field(key);
    if (!f) fail_unknown(key, cmd);
    const bool is_bool = std::holds_alternative<bool Config::*>(f->member);
    const bool is_list = std::holds_alternative<std::vector<int64_t> Config::*>(f->member) ||
                         std::holds_alternative<std::vector<double> Config::*>(f->member);
    if (!has_value) {
      if (is_bool && (i + 1 == args.size() || is_option_word(args[i + 1]))) {
        value = "true";  // a bare flag
      } else {
        const std::string& after = spelt;  // as typed: --data-dir, --data_dir or -b
        if (i + 1 == args.size()) fail(key, cmd, "expected a value after " + after);
        // the next word naming a key is the next option, not this one's value (as argparse)
        const std::string& next = args[i + 1];
        if (long_override(next) != next)
          fail(key, cmd, str("expected a value after ", after, ", got the option ", next));
        if (next.rfind("--", 0) == 0 && next.size() > 2) {
          std::string name = next.substr(2, next.find('=') - 2);
          std::replace(name.begin(), name.end(), '-', '_');
          if (find_field(name))
            fail(key, cmd, str("expected a value after ", after, ", got the option ", next));
        }
        value = args[++i];
        // timm's (argparse's) lists are separate words: `--mean 0.485 0.456 0.406`
        if (is_list && !value.empty() && value.front() != '[')
          while (i + 1 < args.size() && !is_option_word(args[i + 1])) value += "," + args[++i];
      }
    }
    words.push_back({f, key, spelt, value, is_list});
  }
  return words;
}

// apply_overrides of words read_override_words gave; `file_locs`: where each key of the config
// file `base` came from (load_config_with_overrides), else null (the file is read again for a
// message's lines).
void apply_override_words(Config& cfg, const std::vector<OverrideWord>& words,
                          const std::string& base, ImgSizeCheck img_size,
                          const Locations* file_locs) {
  const Where cmd{"command line", -1};
  const std::string model_before = cfg.model;
  Locations locs;
  std::set<std::string> set_null;  // model-own keys set to null (--img-size null: timm's None)
  for (const OverrideWord& word : words) {
    const Field* f = word.field;
    const std::string& key = word.key;
    std::string value = word.value;
    const bool is_list = word.is_list;
    // YAML's null words (and, for a string, nothing) keep their YAML meaning, as in a config file:
    // `--mean null` is timm's None, the default (wrapped as a list, it was one empty entry)
    const bool yaml_null = value == "null" || value == "Null" || value == "NULL" || value == "~";
    // nothing but blanks, for a key that is no string: YAML reads it as null, and `--lr $LR` with
    // LR unset set lr to null (lr_base scaling) unsaid; a file's `lr: ""` is refused, as argparse
    // refuses float('')
    if (!std::holds_alternative<std::string Config::*>(f->member) &&
        value.find_first_not_of(" \t") == std::string::npos)
      fail(key, cmd, "the value is empty (an unset shell variable?): give one, or null");
    const bool looks_like_list = !value.empty() && value.front() == '[';
    if (is_list && !looks_like_list && !yaml_null) value = "[" + value + "]";  // "2,2,2", or one
    // A string (a folder, a name) is taken as typed: read as YAML, "run #2" would lose " #2" (a
    // comment) unsaid, and "a: b" or "[v1] x" would be a mapping or a list. A quoted value keeps
    // its YAML meaning too.
    const bool as_typed = std::holds_alternative<std::string Config::*>(f->member) &&
                          !value.empty() && !yaml_null && value.front() != '"' &&
                          value.front() != '\'';
    YAML::Node node;
    try {
      node = as_typed ? YAML::Node(value) : YAML::Load(value);
    } catch (const YAML::DeepRecursion&) {  // as in a file (parse_document): its msg is "bad file"
      fail(key, cmd, "cannot parse the value: lists nested too deeply for yaml-cpp to read");
    } catch (const YAML::Exception& e) {
      fail(key, cmd, str("cannot parse value '", value, "': ", e.msg));
    }
    assign(*f, cfg, node, cmd);
    locs[key] = cmd;
    if (key == "img_size" || key == "crop_pct") {
      model_own_flag(cfg, key) = false;
      if (yaml_null)
        set_null.insert(key);
      else
        set_null.erase(key);
    }
  }
  // --in-chans 1 over a config's RGB mean / std (the defaults: ImageNet's): one value each, their
  // average, unless they are given too
  if (locs.count("in_chans") && cfg.in_chans == 1) {
    for (auto [key, values] : {std::pair{"mean", &cfg.mean}, std::pair{"std", &cfg.std}}) {
      if (locs.count(key) || values->size() != 3) continue;
      const double avg = ((*values)[0] + (*values)[1] + (*values)[2]) / 3;
      spdlog::info("--in-chans 1: {} {} -> [{:.6g}] (the average; set --{} to choose)", key,
                   yaml_value(cfg, *find_field(key)), avg, key);
      *values = {avg};
    }
  }
  broadcast_mean_std(cfg);
  // img_size and crop_pct given nowhere (no config, or a file without them) or null: timm's None,
  // the model's own, of the model the command line may have replaced
  for (const char* key : kModelOwnKeys)
    if (set_null.count(key) ||
        (!locs.count(key) &&
         (base == kDefaults || (file_locs != nullptr && !file_locs->count(key)))))
      take_model_own(cfg, key);
  if (cfg.model != model_before) {
    // an unknown name is said as such, before the message below says it replaces the config's
    try {
      (void)model_config(cfg.model);
    } catch (const Error& e) {
      fail("model", cmd, e.what());
    }
    const Config defaults;
    std::string dropped;
    for (const char* key : kArchitectureKeys) {
      const Field& f = *find_field(key);
      if (locs.count(key) || yaml_value(cfg, f) == yaml_value(defaults, f)) continue;
      dropped += str(dropped.empty() ? "" : ", ", key, " ", yaml_value(cfg, f));
      assign(f, cfg, YAML::Load(yaml_value(defaults, f)), cmd);
    }
    if (!dropped.empty())
      spdlog::info(
          "--model {} replaces {}: the config's {} (written for {}) give way to {}'s own (set them "
          "on the "
          "command line to keep them)",
          cfg.model, model_before, dropped, model_before, cfg.model);
  }
  // base kDefaults (train with keys alone, a bare state_dict): no file, and "the defaults or its
  // default" named nothing more; nor is a file of that name in the working folder read
  const bool defaults = base == kDefaults;
  const std::string unset = defaults       ? std::string("the default")
                            : base.empty() ? std::string("value before the command line")
                                           : str(base, " or its default");
  std::error_code ec;
  if (file_locs == nullptr &&
      (defaults || base.empty() || !std::filesystem::is_regular_file(base, ec)))
    return validate_at(cfg, locs, unset.c_str(), img_size);
  try {
    validate_at(cfg, locs, unset.c_str(), img_size);
  } catch (const Error&) {
    // For the message only (a valid config reads no file again): a key the command line left is
    // named at its line of the config file, else as the default ("configs/x.yaml or its default"
    // named no line, and the user looked for the key). The architecture keys --model replaced
    // (above) are the new model's, not the file's lines.
    Locations named = locs;
    if (cfg.model != model_before)
      for (const char* key : kArchitectureKeys)
        if (!named.count(key)) named[key] = Where{str(cfg.model, "'s default (--model)"), -1};
    bool read = false;
    if (file_locs != nullptr) {  // input_size's and data's keys at their lines too
      for (const auto& [key, where] : *file_locs) named.emplace(key, where);
      read = true;
    } else {
      try {
        const YAML::Node root = YAML::LoadFile(base);
        if (root.IsMap())
          for (const auto& kv : root)
            if (kv.first.IsScalar() && find_field(kv.first.Scalar()) &&
                !named.count(kv.first.Scalar()))
              named[kv.first.Scalar()] = where_of(kv.first, Where{base, 1});
        read = true;
      } catch (const YAML::Exception&) {  // read before, so not expected: the first message stays
      }
    }
    if (read) validate_at(cfg, named, str("the default: not in ", base).c_str(), img_size);
    throw;  // the first message (the same check fails again above, with the lines)
  }
}

}  // namespace

void apply_overrides(Config& cfg, const std::vector<std::string>& args, const std::string& base,
                     ImgSizeCheck img_size) {
  apply_override_words(cfg, read_override_words(args), base, img_size, nullptr);
}

Config load_config_with_overrides(const std::string& path, const std::vector<std::string>& args,
                                  ImgSizeCheck img_size) {
  const std::vector<OverrideWord> words = read_override_words(args);
  std::set<std::string> set_later;
  for (const OverrideWord& word : words) set_later.insert(word.key);
  Locations file_locs;
  Config cfg = read_config_file(path, img_size, &set_later, &file_locs);
  apply_override_words(cfg, words, path, img_size, &file_locs);
  return cfg;
}

std::string to_yaml(const Config& cfg) {
  std::string out =
      "# haargrad training config (effective values; rerun with: haargrad train <this file>)\n";
  for (const Field& f : table()) out += str(f.key, ": ", yaml_value(cfg, f), "\n");
  return out;
}

void save_config(const Config& cfg, const std::string& path) {
  io::write_file_atomic(path, to_yaml(cfg));
}

void validate(const Config& cfg) { validate_at(cfg, Locations{}, "config value"); }

void check_utf8_strings(const Config& cfg) {
  for (const Field& f : table()) {
    const std::string* v = string_member(cfg, f);
    if (v != nullptr && invalid_utf8_at(*v) != std::string::npos)
      throw Error(str("config: key '", f.key, "' is '", utf8_shown(*v),
                      "', not UTF-8 text: a training run records its config as JSON in every "
                      "checkpoint, which holds UTF-8 only; ",
                      f.rule.file_name
                          ? "rename the file or folder in UTF-8 (e.g. `convmv -f latin1 -t utf-8 "
                            "-r --notest PATH`) or give another path to it (a symbolic link)"
                          : "write the value in UTF-8 where it is set (the config file or the "
                            "command line)"));
  }
}

namespace {

/// "linear" or "sqrt": lr_base_scale, or timm's choice by optimizer name when it is "".
std::string lr_scaling(const Config& c) {
  if (!c.lr_base_scale.empty()) return c.lr_base_scale;
  const bool adaptive =
      c.opt.find("ada") != std::string::npos || c.opt.find("lamb") != std::string::npos;
  return adaptive ? "sqrt" : "linear";
}

int64_t global_batch(const Config& c, int64_t world_size) {
  return c.batch_size * world_size * c.grad_accum_steps;
}

}  // namespace

double effective_lr(const Config& c, int64_t world_size) {
  HG_CHECK(world_size >= 1, "effective_lr: world_size must be >= 1, got ", world_size);
  if (c.lr) return *c.lr;
  const double ratio =
      static_cast<double>(global_batch(c, world_size)) / static_cast<double>(c.lr_base_size);
  return c.lr_base * (lr_scaling(c) == "sqrt" ? std::sqrt(ratio) : ratio);
}

std::string resolve_lr(Config& c, int64_t world_size) {
  if (c.lr) return "";
  const double lr = effective_lr(c, world_size);
  const std::string scaling = lr_scaling(c);
  const std::string how =
      str("lr ", format_double(lr), " from lr_base ", format_double(c.lr_base), " x (",
          global_batch(c, world_size), " images per update / lr_base_size ", c.lr_base_size, ")",
          scaling == "sqrt" ? "^0.5" : "", " (", scaling, " scaling, as timm)");
  // lr_base up to 1e308 passes its own check, and the product can overflow: the run's args.yaml
  // would then hold `lr: inf`, which no config accepts back
  HG_CHECK(std::isfinite(lr), "config: the ", how,
           " is not a finite number; give a smaller lr_base "
           "or a larger lr_base_size, or lr itself");
  HG_CHECK(c.min_lr <= lr || !floors_at_min_lr(c.sched), "config: min_lr ", c.min_lr,
           " is above the ", how);
  const std::string stuck = plateau_stuck(c, lr);
  HG_CHECK(stuck.empty(), "config: ", stuck, " (the ", how, ")");
  c.lr = lr;
  return how;
}

bool decays_to_min_lr(const std::string& sched) {
  return sched == "cosine" || sched == "tanh" || sched == "poly";
}

bool floors_at_min_lr(const std::string& sched) {
  return decays_to_min_lr(sched) || sched == "plateau";
}

double peak_lr(const Config& c, const char* what) {
  HG_CHECK(c.lr.has_value(), what, ": lr is null (lr_base scaling): resolve_lr first");
  return *c.lr;
}

ScheduleSegment schedule_segment(const Config& c, int64_t until_epoch, int64_t until_step,
                                 const char* what) {
  return {until_epoch,        until_step,     c.epochs,         peak_lr(c, what),   c.sched,
          c.warmup_epochs,    c.warmup_lr,    c.min_lr,         c.sched_on_updates, c.decay_epochs,
          c.decay_milestones, c.decay_rate,   c.warmup_prefix,  c.lr_noise,         c.lr_noise_pct,
          c.lr_noise_std,     c.lr_cycle_mul, c.lr_cycle_decay, c.lr_cycle_limit,   c.lr_k_decay};
}

void set_schedule_keys(Config& c, const ScheduleSegment& s) {
  c.epochs = s.epochs;
  c.lr = s.lr;
  c.sched = s.sched;
  c.warmup_epochs = s.warmup_epochs;
  c.warmup_lr = s.warmup_lr;
  c.min_lr = s.min_lr;
  c.sched_on_updates = s.sched_on_updates;
  c.decay_epochs = s.decay_epochs;
  c.decay_milestones = s.decay_milestones;
  c.decay_rate = s.decay_rate;
  c.warmup_prefix = s.warmup_prefix;
  c.lr_noise = s.lr_noise;
  c.lr_noise_pct = s.lr_noise_pct;
  c.lr_noise_std = s.lr_noise_std;
  c.lr_cycle_mul = s.lr_cycle_mul;
  c.lr_cycle_decay = s.lr_cycle_decay;
  c.lr_cycle_limit = s.lr_cycle_limit;
  c.lr_k_decay = s.lr_k_decay;
}

ModelConfig model_config_from(const Config& c) {
  auto ints = [](const std::vector<int64_t>& v) { return std::vector<int>(v.begin(), v.end()); };
  ModelConfig m = model_config(c.model);
  m.num_classes = static_cast<int>(c.num_classes);
  m.in_chans = static_cast<int>(c.in_chans);
  m.drop_path_rate = c.drop_path;
  m.drop_rate = c.drop;
  m.ls_init_value = c.ls_init_value;
  if (!c.depths.empty()) m.depths = ints(c.depths);
  if (!c.dims.empty()) m.dims = ints(c.dims);
  if (c.patch_size) m.patch_size = static_cast<int>(*c.patch_size);
  if (c.kernel_size) m.kernel_size = static_cast<int>(*c.kernel_size);
  if (!c.wt_levels.empty()) m.wt_levels = ints(c.wt_levels);
  m.validate();
  return m;
}

std::string value_text(const Config& cfg, const std::string& key) {
  const Field* f = find_field(key);
  HG_CHECK(f, "config: unknown key '", key, "'");
  return yaml_value(cfg, *f);
}

std::vector<std::string> similar_keys(const std::string& key) {
  std::vector<std::string> keys;
  for (const Field& f : table()) keys.push_back(f.key);
  return similar_names(key, keys);  // "lrr" -> "lr", "wieght_decay" -> "weight_decay"
}

std::vector<KeyDoc> config_key_docs() {
  const Config defaults;
  std::vector<KeyDoc> docs;
  for (const Field& f : table())
    docs.push_back({f.key, type_text(f), yaml_value(defaults, f), f.help});
  return docs;
}

std::vector<std::string> config_keys() {
  std::vector<std::string> keys;
  for (const Field& f : table()) keys.emplace_back(f.key);
  return keys;
}

}  // namespace hg::train
