// DataLoader: turns a Dataset into batches of normalised NHWC float tensors with worker threads and a
// bounded prefetch queue.
//
// Determinism: the epoch's order is a shuffle seeded by (seed, epoch) and each sample's augmentation
// draws from a generator seeded by (seed, epoch, sample index), so the batches are identical for any
// number of workers, and starting an epoch at step k yields exactly the batches k, k+1, ... of the
// full epoch (resume).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/tensor.h"
#include "data/dataset.h"
#include "data/gpu_batch.h"
#include "data/mixup.h"
#include "data/transforms.h"

namespace hg::data {

struct LoaderOptions {
  int64_t batch_size = 128;
  bool shuffle = true;     ///< reshuffle every epoch (train); false keeps dataset order (eval)
  bool drop_last = true;   ///< drop the final partial batch (train)
  int64_t workers = 4;     ///< loader threads; 0 = load inside next() on the calling thread
  int64_t prefetch = 0;    ///< batches made ahead of the consumer at most; 0 = 2 * workers
  uint64_t seed = 42;
  int64_t max_steps = 0;   ///< cap on batches per epoch; 0 = no cap (smoke tests)
  /// Build batches in page-locked host memory (core/pinned_memory.h) so that Tensor::to(cuda)
  /// queues the copy and returns; PyTorch's pin_memory. Has no effect without a usable GPU.
  bool pin_memory = false;
  /// Batch-level mixup / cutmix (data/mixup.h), applied by the worker that builds the batch with a
  /// generator seeded by (seed, epoch, step) and, past rank 0, the rank (each rank draws its own,
  /// as in timm); null = none. Batches then carry soft targets.
  std::shared_ptr<const Mixup> mixup;
  /// Epochs >= this (when > 0) get smoothed one-hot targets and no mixing.
  int64_t mixup_off_epoch = 0;
  /// Data-parallel training (data/shard.h): this process reads shard `rank` of `num_replicas` of
  /// every epoch's order; `pad_shards` pads the order so all shards are equally long (training),
  /// else shards differ by at most one sample and each sample is read once (evaluation).
  int64_t num_replicas = 1;
  int64_t rank = 0;
  bool pad_shards = true;
  /// Run the transform's resize + flip + normalise on the GPU (config gpu_augment;
  /// data/gpu_batch.h): workers hand over uint8 regions (or, with an nvJPEG decode, the JPEG files'
  /// bytes), one GPU thread decodes them with nvJPEG and stages them (up to two batches ahead of
  /// the training step), and next() queues the batched kernel on the training stream, so
  /// Batch::images is a CUDA tensor. Needs the CUDA build and a GPU; not with mixup / cutmix,
  /// RandAugment, ColorJitter or random erasing (CPU-only ops: the constructor says which key to
  /// change).
  bool gpu_augment = false;
  DecodeBackend decode = DecodeBackend::cpu;  ///< where JPEGs are decoded with gpu_augment (data/gpu_batch.h)
  DType gpu_dtype = DType::f32;               ///< Batch::images dtype with gpu_augment: f32 or bf16
};

/// One batch, in CPU memory (page-locked with LoaderOptions::pin_memory), or with gpu_augment its
/// images on the GPU.
struct Batch {
  Tensor images;  ///< f32 (N, img_size, img_size, C), normalised; gpu_augment: CUDA, f32 or bf16
  Tensor labels;  ///< i64 (N), class indices
  Tensor targets;  ///< f32 (N, num_classes) soft targets when the loader mixes (else undefined)
  int64_t epoch = 0, step = 0;
  int64_t file_bytes = 0;                   ///< compressed bytes decoded for it
  std::map<std::string, int64_t> decoded;   ///< images per DecodeInfo::key() (or nvjpeg_backend_name)
  std::shared_ptr<StagedBatch> staged;      ///< gpu_augment: what the workers handed over (next() clears it)
};

/// Counters since the last start_epoch.
struct LoaderStats {
  int64_t images = 0;          ///< images delivered into batches
  int64_t file_bytes = 0;      ///< compressed bytes those images were decoded from
  /// Images per way of decoding (DecodeInfo::key(): "jpeg turbo 1/2", "png stb", ...).
  std::map<std::string, int64_t> decoded;
  double worker_seconds = 0;   ///< busy time summed over workers (decode + transform), s
  double worker_cpu_seconds = 0;  ///< CPU time of that busy time (thread CPU clock), s: unlike
                                  ///< worker_seconds, not inflated when other processes share the cores
  double wait_seconds = 0;     ///< time next() spent blocked waiting for a batch, s
  double gpu_seconds = 0;      ///< gpu_augment: host time of the GPU stage (the GPU thread's nvJPEG
                               ///< decode and staging, next()'s queued copies and kernel), s
  /// gpu_augment: the training stream's time in the GPU stage (GpuBatchMaker::times()): stalled
  /// for nvJPEG decodes, and in the copies + crop kernel, summed over gpu_batches_timed batches.
  /// The host wait above cannot see a stall on the stream.
  double gpu_decode_wait_seconds = 0, gpu_transform_seconds = 0;
  int64_t gpu_batches_timed = 0, gpu_batches_dropped = 0;  ///< GpuStageTimes::batches, dropped
  /// nvjpeg modes: the decoder thread's host time (GpuStageTimes::decoder)
  NvjpegHostTimes gpu_decoder;
  double wall_seconds = 0;     ///< since start_epoch, s
  int64_t workers = 0;
  /// Throughput the workers sustain together: images / worker_seconds * max(workers, 1), img/s.
  double images_per_second() const;
  /// Share of the workers' time spent busy: worker_seconds / (wall_seconds * workers), in [0, 1].
  double busy_fraction() const;
};

class DataLoader {
 public:
  /// Throws hg::Error for batch_size < 1, workers < 0, or a dataset whose channels differ from the
  /// transform's mean/std length.
  DataLoader(std::shared_ptr<const Dataset> dataset, Transform transform, LoaderOptions opts);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  /// Batches in one epoch (of this rank's shard, after drop_last and max_steps).
  int64_t batches_per_epoch() const;
  /// Samples this rank reads in one epoch before batching (the whole dataset in one process).
  int64_t samples_per_epoch() const;
  /// Begins `epoch` at batch `start_step` (0 for a fresh epoch), stopping any epoch in progress.
  /// Throws hg::Error if start_step > batches_per_epoch().
  void start_epoch(int64_t epoch, int64_t start_step = 0);
  /// The next batch of the epoch in order; false when the epoch is done. Rethrows a worker's error
  /// (e.g. a CorruptImage under CorruptPolicy::error).
  bool next(Batch& out);
  LoaderStats stats() const;
  /// The sample order of `epoch` (dataset indices), the same on every rank (before sharding).
  std::vector<int64_t> epoch_order(int64_t epoch) const;
  const Dataset& dataset() const { return *dataset_; }

 private:
  Batch make_batch(int64_t step) const;
  void stage_batch(Batch& batch, int64_t begin, int64_t n) const;  // gpu_augment: the workers' part
  void finish_on_gpu(
      Batch& batch);  // gpu_augment: next()'s part (prepares it first without a GPU thread)
  void gpu_loop();    // gpu_augment with workers: the GPU thread (prepare, in order)
  void mix_batch(Batch& batch) const;  // opts_.mixup on the finished batch
  void worker_loop();
  void stop_workers();
  void count(const Batch& b);  // adds a finished batch to the counters; mu_ held

  std::shared_ptr<const Dataset> dataset_;
  Transform transform_;
  LoaderOptions opts_;

  // The epoch in progress.
  int64_t epoch_ = 0;
  std::vector<int64_t> order_;
  int64_t end_ = 0;                 // batches in the epoch
  bool reported_ = true;            // the end-of-epoch summary was logged
  std::chrono::steady_clock::time_point started_;

  mutable std::mutex mu_;           // guards everything below
  std::condition_variable cv_;
  int64_t next_make_ = 0;           // next batch a worker will build
  int64_t next_take_ = 0;           // next batch next() returns
  int64_t next_prepare_ = 0;        // gpu_augment: next batch the GPU thread prepares
  int64_t finished_ = 0;  // gpu_augment: batches before this are queued on the training stream
  std::map<int64_t, Batch> ready_;  // built, not yet taken
  bool stop_ = false;
  std::exception_ptr error_;
  int64_t images_ = 0, file_bytes_ = 0;
  std::map<std::string, int64_t> decoded_;
  double busy_ = 0, busy_cpu_ = 0, wait_ = 0, gpu_ = 0;
  GpuStageTimes gpu_times_;  // gpu_maker_->times() after the last finish_on_gpu
  std::unique_ptr<GpuBatchMaker>
      gpu_maker_;  // gpu_augment only: prepare in the GPU thread, finish in next()
  std::vector<std::thread> threads_;
};

}  // namespace hg::data
