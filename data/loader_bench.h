// The data loader alone, timed: what `haargrad bench-data` measures. Batches are taken and dropped
// as fast as the loader makes them, so the rate is the loader's ceiling for a training step.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "train/config.h"

namespace hg::data {

/// The decode backends bench-data times, one row each, and the config keys each sets:
///   stb, turbo_full, turbo: jpeg_decoder = the name, decode cpu, transform on the CPU (workers)
///   turbo_gpu_aug:          jpeg_decoder turbo, decode cpu, gpu_augment (workers decode, GPU transforms)
///   nvjpeg:                 decode nvjpeg (nvJPEG hardware, then GPU, then libjpeg-turbo), gpu_augment
///   nvjpeg_gpu:             decode nvjpeg_gpu (nvJPEG GPU_HYBRID, then libjpeg-turbo), gpu_augment
/// Throws hg::Error naming `row` and the choices for another name.
void apply_bench_row(train::Config& cfg, const std::string& row);

struct LoaderBenchOptions {
  std::string jpeg_decoder = "turbo";  ///< the row (apply_bench_row): a decode backend
  bool train = true;                   ///< the train split with train transforms, else val with eval transforms
  int64_t warmup_epochs = 1;           ///< untimed epochs first (page cache, pinned pool, allocator)
  int64_t epochs = 2;                  ///< timed epochs
};

struct LoaderBenchResult {
  std::string jpeg_decoder;
  int64_t workers = 0, images = 0;     ///< images over the timed epochs
  double seconds = 0;                  ///< wall time of the timed epochs, s
  double images_per_second = 0;        ///< images / seconds
  double megabytes_per_second = 0;     ///< compressed MB (1e6 bytes) decoded per second
  double busy_fraction = 0;            ///< workers' busy time / (seconds * workers), in [0, 1]
  double gpu_fraction = 0;             ///< gpu_augment: share of the wall time the taking thread spent on
                                       ///< the GPU stage (nvJPEG + resize kernel launch), in [0, 1]
  double worker_images_per_second = 0; ///< what the workers sustain when never idle (LoaderStats)
  double cpu_ms_per_image = 0;         ///< workers' CPU time per image (decode + transform), ms: the
                                       ///< cost figure that holds on a shared machine
  /// GPU transform rows: the GPU stage's training-stream time per batch (LoaderStats::gpu_*): the
  /// copies + crop kernel, and the stream's wait for nvJPEG decodes, ms; 0 for CPU rows.
  double gpu_stage_ms_per_batch = 0, gpu_decode_wait_ms_per_batch = 0;
  std::map<std::string, int64_t> decoded;  ///< images per DecodeInfo::key() over the timed epochs
  std::string dataset;                 ///< Dataset::describe()
};

/// Builds cfg's dataset (with apply_bench_row(cfg, opts.jpeg_decoder)) and its loader, runs the
/// warm-up epochs, then times `epochs` epochs (each capped by max_steps_per_epoch for train).
/// Throws hg::Error for bad options and whatever the dataset throws.
LoaderBenchResult bench_loader(train::Config cfg, const LoaderBenchOptions& opts);

}  // namespace hg::data
