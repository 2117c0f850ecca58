// The data loader alone, timed: what `haargrad bench-data` measures. Batches are taken and dropped
// as fast as the loader makes them, so the rate is the loader's ceiling for a training step.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "train/config.h"

namespace hg::data {

struct LoaderBenchOptions {
  std::string jpeg_decoder = "turbo";  ///< config key jpeg_decoder for this row
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
  double worker_images_per_second = 0; ///< what the workers sustain when never idle (LoaderStats)
  double cpu_ms_per_image = 0;         ///< workers' CPU time per image (decode + transform), ms: the
                                       ///< cost figure that holds on a shared machine
  std::map<std::string, int64_t> decoded;  ///< images per DecodeInfo::key() over the timed epochs
  std::string dataset;                 ///< Dataset::describe()
};

/// Builds cfg's dataset (cfg.jpeg_decoder replaced by opts.jpeg_decoder) and its loader, runs the
/// warm-up epochs, then times `epochs` epochs (each capped by max_steps_per_epoch for train).
/// Throws hg::Error for bad options and whatever the dataset throws.
LoaderBenchResult bench_loader(train::Config cfg, const LoaderBenchOptions& opts);

}  // namespace hg::data
