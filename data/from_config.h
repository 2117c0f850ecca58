// Builds the datasets, transforms and loaders a training run needs from its train::Config, so the
// trainer and the commands share one mapping from config keys to the data pipeline.
#pragma once

#include <memory>

#include "data/dataset.h"
#include "data/loader.h"
#include "data/transforms.h"
#include "train/config.h"

namespace hg::data {

struct Datasets {
  /// val is null without validation (an empty val_split, timm's "no validation":
  /// train::has_validation): no validation split is read
  std::shared_ptr<Dataset> train, val;
};

/// The train and validation datasets of cfg.dataset:
///   idx:          IdxDataset(data_dir, train_split / val_split)  ("train" / "test" for Fashion-MNIST)
///   image_folder: ImageFolder(data_dir, split) with jpeg_decoder; val uses the train split's class list
///   synthetic:    SyntheticDataset of synthetic_size (val: a fifth of it, another seed), img_size px
/// Images come with cfg.in_chans channels. Throws hg::Error when a dataset has more classes than
/// cfg.num_classes.
Datasets make_datasets(const train::Config& cfg);

/// The validation dataset alone (validate): as make_datasets' val, but an image_folder takes its
/// class list from the names of the train split's class folders without reading their files, or,
/// when there is no train split, from its own folders (said in a warning). Same errors, and one
/// naming val_split when it is empty (there is no split to evaluate on).
std::shared_ptr<Dataset> make_val_dataset(const train::Config& cfg);

/// Train (random resized crop with train_interpolation + flip + aa / color_jitter + random erasing
/// reprob / remode / recount) or eval (resize + center crop) options from the config.
TransformOptions make_transform_options(const train::Config& cfg, bool train);

/// Train: batch_size, shuffle, drop_last, max_steps_per_epoch. Eval: validation_batch_size (or
/// batch_size), dataset order, keep the last partial batch, never capped (so top-1 is always over
/// the whole validation split). Both: workers, seed, and pin_mem unless device is cpu. Train with
/// mixup or cutmix on: the batch Mixup of mixup_options (soft targets), off from mixup_off_epoch.
/// Both: decode (cpu | nvjpeg | nvjpeg_gpu) and gpu_augment (implied by an nvjpeg decode), batches
/// in bf16 on the GPU under precision bf16; throws hg::Error for a GPU mode with device cpu.
LoaderOptions make_loader_options(const train::Config& cfg, bool train);

/// Mixup / CutMix from mixup, cutmix, cutmix_minmax, mixup_prob, mixup_switch_prob, mixup_mode,
/// smoothing and num_classes (timm's mixup_args).
MixupOptions mixup_options(const train::Config& cfg);
/// Whether the config mixes batches (mixup > 0, cutmix > 0 or cutmix_minmax set): the loss then
/// takes the loader's soft targets.
bool mixup_active(const train::Config& cfg);

/// A loader over `dataset` with the options and transform above.
std::unique_ptr<DataLoader> make_loader(const train::Config& cfg, bool train, std::shared_ptr<const Dataset> dataset);

}  // namespace hg::data
