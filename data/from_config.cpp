// The config-to-data-pipeline mapping (see from_config.h).
#include "data/from_config.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <system_error>

#include "data/idx_dataset.h"
#include "data/image_folder.h"
#include "data/synthetic.h"
#include "dist/process_group.h"

namespace hg::data {

namespace {

ImageFolderOptions image_folder_options(const train::Config& cfg) {
  ImageFolderOptions opts;
  opts.channels = cfg.in_chans;
  opts.corrupt = parse_corrupt_policy(cfg.corrupt_images);
  opts.jpeg = parse_jpeg_decoder(cfg.jpeg_decoder);
  return opts;
}

void check_classes(const Dataset& ds, const train::Config& cfg) {
  if (ds.num_classes() <= cfg.num_classes) return;
  const std::string stray = ds.labels_at_or_above(cfg.num_classes);
  throw Error(str(ds.describe(), " has ", ds.num_classes(), " classes but num_classes is ",
                  cfg.num_classes, stray, ": set num_classes (--num-classes) to at least ",
                  ds.num_classes(), stray.empty() ? "" : ", or restore the labels file",
                  " (a trained model's classifier has its num_classes outputs: to evaluate it, "
                  "leave out the class folders it was not trained on)"));
}

// val_split naming the train split's own data (`--val-split train`, or its folder by path): timm
// reads it too, unsaid; then model_best and checkpoint_hist rank by training-set accuracy.
void warn_if_same_split(const train::Config& cfg, const std::string& train,
                        const std::string& val) {
  std::error_code ec;
  if (std::filesystem::equivalent(train, val, ec))
    spdlog::warn(
        "make_datasets: val_split '{}' reads the train split's data ({}): every validation "
        "figure, model_best and checkpoint_hist then rank by accuracy on the training images; "
        "point val_split at held-out images (or '' for none)",
        cfg.val_split, val);
}

}  // namespace

Datasets make_datasets(const train::Config& cfg) {
  Datasets d;
  // val_split '' is timm's "no validation": no split is read (an empty split would read data_dir
  // itself, its split folders as classes)
  const bool val = train::has_validation(cfg);
  if (cfg.dataset == "idx") {
    d.train = std::make_shared<IdxDataset>(cfg.data_dir, cfg.train_split, cfg.in_chans);
    if (val) {
      auto v = std::make_shared<IdxDataset>(cfg.data_dir, cfg.val_split, cfg.in_chans);
      warn_if_same_split(cfg, std::static_pointer_cast<IdxDataset>(d.train)->source(), v->source());
      d.val = std::move(v);
    }
  } else if (cfg.dataset == "image_folder") {
    ImageFolderOptions opts = image_folder_options(cfg);
    opts.split_key = "train_split";
    auto train = std::make_shared<ImageFolder>(cfg.data_dir, cfg.train_split, opts);
    opts.classes = train->classes();  // the same name -> index mapping in both splits
    opts.split_key = "val_split";
    if (val) {
      auto v = std::make_shared<ImageFolder>(cfg.data_dir, cfg.val_split, opts);
      warn_if_same_split(cfg, train->folder(), v->folder());
      d.val = std::move(v);
    }
    d.train = std::move(train);
  } else if (cfg.dataset == "synthetic") {
    const uint64_t seed = static_cast<uint64_t>(cfg.seed);
    d.train = std::make_shared<SyntheticDataset>(cfg.synthetic_size, cfg.num_classes, cfg.img_size, cfg.img_size,
                                                 cfg.in_chans, seed);
    if (val)
      d.val = std::make_shared<SyntheticDataset>(std::max<int64_t>(1, cfg.synthetic_size / 5),
                                                 cfg.num_classes, cfg.img_size, cfg.img_size,
                                                 cfg.in_chans, seed + 1);
  } else {
    throw Error(str("make_datasets: unknown dataset '", cfg.dataset, "' (expected idx, image_folder or synthetic)"));
  }
  for (const auto* ds : {d.train.get(), d.val.get()})
    if (ds) check_classes(*ds, cfg);
  if (d.train->num_classes() < cfg.num_classes)
    spdlog::warn("make_datasets: num_classes is {} but the train split has {} classes", cfg.num_classes,
                 d.train->num_classes());
  return d;
}

std::shared_ptr<Dataset> make_val_dataset(const train::Config& cfg) {
  // (validate says it first, naming where its config came from)
  HG_CHECK(
      train::has_validation(cfg),
      "make_val_dataset: val_split is empty: there is no validation split to read (--val-split "
      "NAME names one)");
  if (cfg.dataset != "image_folder") return make_datasets(cfg).val;  // cheap for idx and synthetic
  namespace fs = std::filesystem;
  ImageFolderOptions opts = image_folder_options(cfg);
  const fs::path train_dir = split_folder(cfg.data_dir, cfg.train_split);
  std::error_code ec;
  if (fs::is_directory(train_dir, ec)) {
    opts.classes = subfolders(train_dir.string());  // the train split's classes, in its order
  } else {
    spdlog::warn(
        "make_val_dataset: no train split '{}': the classes are the validation split's own "
        "folders, in timm's order (the model's label order only if every class is there)",
        train_dir.string());
  }
  opts.split_key = "val_split";
  auto val = std::make_shared<ImageFolder>(cfg.data_dir, cfg.val_split, opts);
  check_classes(*val, cfg);
  // as make_datasets says it in training: a model of more classes than the data names scores
  // its other outputs as wrong answers, e.g. a checkpoint evaluated on another data set
  if (val->num_classes() < cfg.num_classes)
    spdlog::warn("make_val_dataset: num_classes is {} but {} has {} classes", cfg.num_classes,
                 fs::is_directory(train_dir, ec) ? str("the train split ", train_dir.string())
                                                 : str("the validation split"),
                 val->num_classes());
  return val;
}

TransformOptions make_transform_options(const train::Config& cfg, bool train) {
  TransformOptions t;
  t.img_size = cfg.img_size;
  t.train = train;
  t.crop_pct = cfg.crop_pct;
  t.hflip = cfg.hflip;
  t.scale = {cfg.scale.at(0), cfg.scale.at(1)};
  t.ratio = {cfg.ratio.at(0), cfg.ratio.at(1)};
  t.mean = cfg.mean;
  t.std = cfg.std;
  t.interpolation = cfg.interpolation;  // evaluation's resize
  if (train) {
    // "" is the evaluation's filter (timm: train_interpolation falls back to interpolation)
    if (!cfg.train_interpolation.empty()) t.interpolation = cfg.train_interpolation;
    t.auto_augment = cfg.aa;
    t.color_jitter = cfg.color_jitter;
    t.random_erasing.probability = cfg.reprob;
    t.random_erasing.mode = cfg.remode;
    t.random_erasing.max_count = cfg.recount;
  }
  return t;
}

LoaderOptions make_loader_options(const train::Config& cfg, bool train) {
  LoaderOptions o;
  o.batch_size = train ? cfg.batch_size : cfg.validation_batch_size.value_or(cfg.batch_size);
  o.shuffle = train;
  o.drop_last = train;
  o.workers = cfg.workers;
  o.seed = static_cast<uint64_t>(cfg.seed);
  o.max_steps = train ? cfg.max_steps_per_epoch : 0;  // evaluation always covers the whole split
  o.pin_memory = cfg.pin_mem && cfg.device != "cpu";  // pinning only helps copies to a GPU
  if (train && mixup_active(cfg)) {
    o.mixup = std::make_shared<const Mixup>(mixup_options(cfg));
    o.mixup_off_epoch = cfg.mixup_off_epoch;
  }
  o.num_replicas = dist::size();  // data parallel: this rank's shard (data/shard.h)
  o.rank = dist::rank();
  o.pad_shards = train;           // evaluation reads every sample exactly once
  o.decode = parse_decode_backend(cfg.decode);
  o.gpu_augment = cfg.gpu_augment || o.decode != DecodeBackend::cpu;
  if (o.gpu_augment) {
    HG_CHECK(cfg.device != "cpu", "gpu_augment / decode: ", cfg.decode, " run on the GPU; device is cpu");
    o.gpu_dtype = cfg.precision == "bf16" ? DType::bf16 : DType::f32;  // the model's input dtype
    o.pin_memory = false;  // the images never sit in host batches
  }
  return o;
}

bool mixup_active(const train::Config& cfg) {
  return cfg.mixup > 0 || cfg.cutmix > 0 || !cfg.cutmix_minmax.empty();
}

MixupOptions mixup_options(const train::Config& cfg) {
  MixupOptions m;
  m.mixup_alpha = cfg.mixup;
  m.cutmix_alpha = cfg.cutmix;
  if (cfg.cutmix_minmax.size() == 2)
    m.cutmix_minmax = std::array<double, 2>{cfg.cutmix_minmax[0], cfg.cutmix_minmax[1]};
  m.prob = cfg.mixup_prob;
  m.switch_prob = cfg.mixup_switch_prob;
  m.mode = cfg.mixup_mode;
  m.label_smoothing = cfg.smoothing;
  m.num_classes = cfg.num_classes;
  return m;
}

std::unique_ptr<DataLoader> make_loader(const train::Config& cfg, bool train, std::shared_ptr<const Dataset> dataset) {
  return std::make_unique<DataLoader>(std::move(dataset), Transform(make_transform_options(cfg, train)),
                                      make_loader_options(cfg, train));
}

}  // namespace hg::data
