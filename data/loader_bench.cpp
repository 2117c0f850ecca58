// Timing the data loader alone (see loader_bench.h).
#include "data/loader_bench.h"

#include <chrono>

#include "data/from_config.h"

namespace hg::data {

void apply_bench_row(train::Config& cfg, const std::string& row) {
  if (row == "stb" || row == "turbo_full" || row == "turbo") {
    cfg.jpeg_decoder = row;
    cfg.decode = "cpu";
    cfg.gpu_augment = false;
  } else if (row == "turbo_gpu_aug") {
    cfg.jpeg_decoder = "turbo";
    cfg.decode = "cpu";
    cfg.gpu_augment = true;
  } else if (row == "nvjpeg" || row == "nvjpeg_gpu") {
    cfg.decode = row;
    cfg.gpu_augment = true;
  } else {
    throw Error(str("bench-data: unknown decode backend '", row,
                    "' (expected stb, turbo_full, turbo, turbo_gpu_aug, nvjpeg or nvjpeg_gpu)"));
  }
}

LoaderBenchResult bench_loader(train::Config cfg, const LoaderBenchOptions& opts) {
  HG_CHECK(opts.warmup_epochs >= 0 && opts.epochs >= 1, "bench_loader: need warmup_epochs >= 0 and epochs >= 1, got ",
           opts.warmup_epochs, " and ", opts.epochs);
  apply_bench_row(cfg, opts.jpeg_decoder);
  // the split timed alone: the other one was required and scanned too (a folder with only its
  // val split failed on the missing train one, which validate reads without)
  HG_CHECK(opts.train || train::has_validation(cfg),
           "bench_loader: val_split is empty: no validation split to read");
  std::shared_ptr<Dataset> split;
  if (opts.train) {
    train::Config train_only = cfg;
    train_only.val_split = "";  // no validation: its split is not read
    split = make_datasets(train_only).train;
  } else {
    split = make_val_dataset(cfg);
  }
  auto loader = make_loader(cfg, opts.train, split);
  LoaderBenchResult r;
  r.jpeg_decoder = opts.jpeg_decoder;
  r.workers = cfg.workers;
  r.dataset = loader->dataset().describe();
  Batch b;
  double busy = 0, cpu = 0, gpu = 0, stage = 0, decode_wait = 0;
  int64_t stage_batches = 0;
  int64_t bytes = 0;
  for (int64_t e = 0; e < opts.warmup_epochs + opts.epochs; ++e) {
    const bool timed = e >= opts.warmup_epochs;
    const auto t0 = std::chrono::steady_clock::now();
    loader->start_epoch(e);
    while (loader->next(b)) b = Batch{};  // drop it at once: only the loader is measured
    if (!timed) continue;
    r.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const LoaderStats s = loader->stats();
    r.images += s.images;
    bytes += s.file_bytes;
    busy += s.worker_seconds;
    cpu += s.worker_cpu_seconds;
    gpu += s.gpu_seconds;
    stage += s.gpu_transform_seconds;
    decode_wait += s.gpu_decode_wait_seconds;
    stage_batches += s.gpu_batches_timed;
    for (const auto& [key, n] : s.decoded) r.decoded[key] += n;
  }
  const double workers = static_cast<double>(std::max<int64_t>(cfg.workers, 1));
  if (r.seconds > 0) {
    r.images_per_second = static_cast<double>(r.images) / r.seconds;
    r.megabytes_per_second = static_cast<double>(bytes) / 1e6 / r.seconds;
    r.busy_fraction = std::min(1.0, busy / (r.seconds * workers));
    r.gpu_fraction = std::min(1.0, gpu / r.seconds);
  }
  if (r.images > 0) r.cpu_ms_per_image = 1e3 * cpu / static_cast<double>(r.images);
  if (stage_batches > 0) {
    r.gpu_stage_ms_per_batch = 1e3 * stage / static_cast<double>(stage_batches);
    r.gpu_decode_wait_ms_per_batch = 1e3 * decode_wait / static_cast<double>(stage_batches);
  }
  if (busy > 0) r.worker_images_per_second = static_cast<double>(r.images) / busy * workers;
  return r;
}

}  // namespace hg::data
