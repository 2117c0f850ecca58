// DataLoader: worker threads build whole batches out of order into a bounded map; next() hands them
// out in order (see loader.h for the determinism argument).
#include "data/loader.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#include "core/autograd.h"
#include "core/clock.h"
#include "core/random.h"
#include "core/thread_name.h"
#include "data/seeds.h"
#include "data/shard.h"

namespace hg::data {

namespace {
constexpr uint64_t kShuffleStream = 1, kSampleStream = 2, kMixStream = 3;
// CPU time of the calling thread, s.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
}  // namespace

double LoaderStats::images_per_second() const {
  return worker_seconds > 0 ? static_cast<double>(images) / worker_seconds * static_cast<double>(std::max<int64_t>(workers, 1))
                            : 0.0;
}

double LoaderStats::busy_fraction() const {
  const double capacity = wall_seconds * static_cast<double>(std::max<int64_t>(workers, 1));
  return capacity > 0 ? std::min(1.0, worker_seconds / capacity) : 0.0;
}

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, Transform transform, LoaderOptions opts)
    : dataset_(std::move(dataset)), transform_(std::move(transform)), opts_(opts) {
  HG_CHECK(dataset_ != nullptr, "DataLoader: no dataset");
  HG_CHECK(opts_.batch_size >= 1, "DataLoader: batch_size must be >= 1, got ", opts_.batch_size);
  HG_CHECK(opts_.workers >= 0, "DataLoader: workers must be >= 0, got ", opts_.workers);
  HG_CHECK(opts_.num_replicas >= 1 && opts_.rank >= 0 && opts_.rank < opts_.num_replicas, "DataLoader: rank ",
           opts_.rank, " is not in [0, num_replicas ", opts_.num_replicas, ")");
  HG_CHECK(opts_.max_steps >= 0, "DataLoader: max_steps must be >= 0, got ", opts_.max_steps);
  const auto C = static_cast<int64_t>(transform_.options().mean.size());
  HG_CHECK(dataset_->channels() == C, "DataLoader: dataset gives ", dataset_->channels(),
           " channels but mean/std have ", C, " values (", dataset_->describe(), ")");
  if (opts_.prefetch <= 0) opts_.prefetch = 2 * std::max<int64_t>(opts_.workers, 1);
  if (opts_.gpu_augment) {
    HG_CHECK(opts_.mixup == nullptr, "gpu_augment: mixup / cutmix mix the batch on the CPU; set gpu_augment to false "
             "or mixup, cutmix to 0");
    gpu_maker_ = std::make_unique<GpuBatchMaker>(transform_, opts_.decode, C, opts_.gpu_dtype);
  } else {
    HG_CHECK(opts_.decode == DecodeBackend::cpu, "decode: ", decode_backend_name(opts_.decode),
             " decodes on the GPU and needs gpu_augment: true");
  }
}

DataLoader::~DataLoader() { stop_workers(); }

int64_t DataLoader::samples_per_epoch() const {
  return shard_size(dataset_->size(), opts_.rank, opts_.num_replicas, opts_.pad_shards);
}

int64_t DataLoader::batches_per_epoch() const {
  const int64_t n = samples_per_epoch(), B = opts_.batch_size;
  int64_t batches = opts_.drop_last ? n / B : (n + B - 1) / B;
  if (opts_.max_steps > 0) batches = std::min(batches, opts_.max_steps);
  return batches;
}

std::vector<int64_t> DataLoader::epoch_order(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(dataset_->size()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  if (opts_.shuffle) {  // Fisher-Yates from a generator seeded by (seed, epoch) only
    Generator gen(mix_seed(opts_.seed, kShuffleStream, static_cast<uint64_t>(epoch)));
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[size_t(gen.randint(int64_t(i)))]);
  }
  return order;
}

void DataLoader::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void DataLoader::start_epoch(int64_t epoch, int64_t start_step) {
  stop_workers();
  HG_CHECK(start_step >= 0 && start_step <= batches_per_epoch(), "DataLoader::start_epoch: start_step ",
           start_step, " outside [0, ", batches_per_epoch(), "]");
  epoch_ = epoch;
  order_ = shard_order(epoch_order(epoch), opts_.rank, opts_.num_replicas, opts_.pad_shards);
  end_ = batches_per_epoch();
  reported_ = false;
  started_ = std::chrono::steady_clock::now();
  if (gpu_maker_) gpu_maker_->reset_times();  // the workers and the GPU thread are stopped
  {
    std::lock_guard<std::mutex> lock(mu_);
    next_make_ = next_take_ = next_prepare_ = finished_ = start_step;
    ready_.clear();
    stop_ = false;
    error_ = nullptr;
    images_ = file_bytes_ = 0;
    decoded_.clear();
    busy_ = busy_cpu_ = wait_ = gpu_ = 0;
    gpu_times_ = GpuStageTimes{};
  }
  for (int64_t w = 0; w < opts_.workers; ++w)
    threads_.emplace_back([this, w] {
      name_this_thread(str("hg-load-", w));
      worker_loop();
    });
  if (gpu_maker_ && opts_.workers > 0)
    threads_.emplace_back([this] {
      name_this_thread("hg-load-gpu");
      gpu_loop();
    });
}

Batch DataLoader::make_batch(int64_t step) const {
  // Batches are workspace, never activations of a step being recorded.
  autograd::NoGradGuard no_grad;
  memory::CategoryScope scope(Category::workspace);
  const int64_t B = opts_.batch_size, begin = step * B;
  const int64_t n = std::min(B, static_cast<int64_t>(order_.size()) - begin);
  const int64_t S = transform_.options().img_size, C = dataset_->channels();
  Batch batch;
  batch.epoch = epoch_;
  batch.step = step;
  if (opts_.gpu_augment) {
    stage_batch(batch, begin, n);
    return batch;
  }
  if (opts_.pin_memory) {
    batch.images = Tensor::empty_pinned({n, S, S, C}, DType::f32);
    batch.labels = Tensor::empty_pinned({n}, DType::i64);
  } else {
    batch.images = Tensor::empty({n, S, S, C}, DType::f32, Device::cpu);
    batch.labels = Tensor::empty({n}, DType::i64, Device::cpu);
  }
  float* px = batch.images.data<float>();
  int64_t* lb = batch.labels.data<int64_t>();
  // With mixup / cutmix, random erasing comes after the mixing, as in timm (its prefetcher erases
  // the mixed batch): each image keeps the generator its erasing draws from until then.
  const bool erase_after_mix = opts_.mixup != nullptr;
  std::vector<Generator> erase_rng(erase_after_mix ? static_cast<size_t>(n) : 0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t index = order_[static_cast<size_t>(begin + i)];
    // The plan draws from a generator seeded by (seed, epoch, index) inside the chooser, so the crop
    // and flip depend on the image size only, whichever decoder (or decode attempt) asks.
    CropPlan plan;
    const CropChooser choose = [&](int64_t h, int64_t w) {
      Generator gen(mix_seed(opts_.seed, kSampleStream, static_cast<uint64_t>(epoch_), static_cast<uint64_t>(index)));
      plan = transform_.plan(h, w, gen);
      return CropRequest{plan.box, S, S};
    };
    RegionSample s = dataset_->get_region(index, choose);
    HG_CHECK(s.label >= 0 && s.label < dataset_->num_classes(), "DataLoader: sample ", index, " has label ",
             s.label, " outside [0, ", dataset_->num_classes(), ")");
    plan.box = s.region.box;  // the same box, in the decoded region's pixels
    transform_.apply_plan(s.region.image, plan, px + i * transform_.output_numel(),
                          erase_after_mix ? &erase_rng[static_cast<size_t>(i)] : nullptr);
    lb[i] = s.label;
    batch.file_bytes += s.region.info.file_bytes;
    ++batch.decoded[s.region.info.key()];
  }
  if (opts_.mixup) mix_batch(batch);
  for (int64_t i = 0; i < static_cast<int64_t>(erase_rng.size()); ++i)
    transform_.erase(px + i * transform_.output_numel(), erase_rng[static_cast<size_t>(i)]);
  return batch;
}

void DataLoader::stage_batch(Batch& batch, int64_t begin, int64_t n) const {
  const int64_t S = transform_.options().img_size;
  batch.staged = std::make_shared<StagedBatch>();
  batch.staged->samples.resize(static_cast<size_t>(n));
  // Page-locked: the copy to the GPU is then queued, where a pageable copy would wait for the whole
  // training stream first (a host sync per step).
  batch.labels = Tensor::empty_pinned({n}, DType::i64);
  int64_t* lb = batch.labels.data<int64_t>();
  const GpuTakes takes = gpu_takes(opts_.decode);  // which JPEGs the GPU decodes (nvjpeg modes)
  for (int64_t i = 0; i < n; ++i) {
    const int64_t index = order_[static_cast<size_t>(begin + i)];
    StagedSample& st = batch.staged->samples[static_cast<size_t>(i)];
    // The same chooser as make_batch: the plan depends on (seed, epoch, index) and the image size only,
    // so the crops and flips equal the CPU path's whatever decodes the file.
    const CropChooser choose = [&](int64_t h, int64_t w) {
      Generator gen(mix_seed(opts_.seed, kSampleStream, static_cast<uint64_t>(epoch_), static_cast<uint64_t>(index)));
      st.plan = transform_.plan(h, w, gen);
      return CropRequest{st.plan.box, S, S};
    };
    int64_t label = 0;
    if (opts_.decode != DecodeBackend::cpu) {
      EncodedSample e = dataset_->get_encoded(index, choose, takes);
      label = e.label;
      st.path = e.path;
      if (!e.jpeg.empty()) {
        st.request = e.request;
        batch.file_bytes += static_cast<int64_t>(e.jpeg.size());
        st.jpeg = std::move(e.jpeg);
      } else {
        st.plan.box = e.decoded.region.box;
        st.decoded_as = e.decoded.region.info.key();
        batch.file_bytes += e.decoded.region.info.file_bytes;
        st.image = std::move(e.decoded.region.image);
      }
    } else {
      RegionSample s = dataset_->get_region(index, choose);
      label = s.label;
      st.plan.box = s.region.box;
      st.decoded_as = s.region.info.key();
      batch.file_bytes += s.region.info.file_bytes;
      st.image = std::move(s.region.image);
    }
    HG_CHECK(label >= 0 && label < dataset_->num_classes(), "DataLoader: sample ", index, " has label ", label,
             " outside [0, ", dataset_->num_classes(), ")");
    lb[i] = label;
  }
}

void DataLoader::finish_on_gpu(Batch& batch) {
  if (!batch.staged) return;
  autograd::NoGradGuard no_grad;  // as make_batch: never activations of a step being recorded
  memory::CategoryScope scope(Category::workspace);
  const auto t0 = std::chrono::steady_clock::now();
  std::map<std::string, int64_t> decoded;
  batch.images = gpu_maker_->make(*batch.staged, decoded);
  batch.staged.reset();
  {
    std::lock_guard<std::mutex> lock(mu_);
    gpu_times_ = gpu_maker_->times();
    for (const auto& [key, k] : decoded) decoded_[key] += k;
    batch.decoded = std::move(decoded);
    gpu_ += seconds_since(t0);
    finished_ = std::max(finished_, batch.step + 1);
  }
  cv_.notify_all();
}

// Batches in order: the host half of the GPU stage (nvJPEG blocks this thread while the JPEG
// engines decode) runs here, beside the training step, instead of in next(). At most two batches
// ahead of the last one queued on the training stream (NvjpegDecoder's two buffers;
// GpuBatchMaker::prepare).
void DataLoader::gpu_loop() {
  for (;;) {
    int64_t step;
    std::shared_ptr<StagedBatch> staged;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return stop_ || next_prepare_ >= end_ ||
               (ready_.count(next_prepare_) > 0 && next_prepare_ <= finished_ + 1);
      });
      if (stop_ || next_prepare_ >= end_) return;
      step = next_prepare_;
      staged = ready_.at(step).staged;  // next() leaves it in ready_ until it is prepared
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::exception_ptr err;
    try {
      autograd::NoGradGuard no_grad;
      if (staged) gpu_maker_->prepare(*staged);
    } catch (...) {
      err = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      gpu_ += seconds_since(t0);
      if (err) {
        if (!error_) error_ = err;
        stop_ = true;
      } else {
        ++next_prepare_;
      }
    }
    cv_.notify_all();
  }
}

void DataLoader::mix_batch(Batch& batch) const {
  const int64_t n = batch.labels.numel(), K = opts_.mixup->options().num_classes;
  batch.targets = opts_.pin_memory ? Tensor::empty_pinned({n, K}, DType::f32)
                                   : Tensor::empty({n, K}, DType::f32, Device::cpu);
  // Every rank draws its own lam / method / box, as timm's ranks do (their generators are seeded
  // with seed + rank): a global batch of R ranks holds R draws, not one. Rank 0 draws as a single
  // process does.
  uint64_t seed = mix_seed(opts_.seed, kMixStream, static_cast<uint64_t>(batch.epoch),
                           static_cast<uint64_t>(batch.step));
  if (opts_.rank > 0) seed = mix_seed(seed, kMixStream, static_cast<uint64_t>(opts_.rank));
  Generator gen(seed);
  const bool enabled = opts_.mixup_off_epoch <= 0 || batch.epoch < opts_.mixup_off_epoch;
  const Shape& s = batch.images.shape();
  opts_.mixup->apply(batch.images.data<float>(), n, s[1], s[2], s[3], batch.labels.data<int64_t>(),
                     batch.targets.data<float>(), gen, enabled);
}

void DataLoader::worker_loop() {
  for (;;) {
    int64_t step;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || next_make_ >= end_ || next_make_ < next_take_ + opts_.prefetch; });
      if (stop_ || next_make_ >= end_) return;
      step = next_make_++;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_seconds();
    Batch batch;
    std::exception_ptr err;
    try {
      batch = make_batch(step);
    } catch (...) {
      err = std::current_exception();
    }
    const double dt = seconds_since(t0), dc = thread_cpu_seconds() - c0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_ += dt;
      busy_cpu_ += dc;
      if (err) {
        if (!error_) error_ = err;
        stop_ = true;
      } else {
        count(batch);
        ready_.emplace(step, std::move(batch));
      }
    }
    cv_.notify_all();
  }
}

bool DataLoader::next(Batch& out) {
  if (next_take_ >= end_) {
    if (!reported_) {
      reported_ = true;
      LoaderStats s = stats();
      spdlog::debug("DataLoader: epoch {} done: {} images, {:.0f} img/s of the workers, waited {:.2f} s", epoch_,
                    s.images, s.images_per_second(), s.wait_seconds);
      if (dataset_->corrupt_skipped() > 0)
        spdlog::warn("DataLoader: {} corrupt image{} skipped so far ({})",
                     dataset_->corrupt_skipped(), dataset_->corrupt_skipped() == 1 ? "" : "s",
                     dataset_->describe());
    }
    return false;
  }
  if (opts_.workers == 0) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_seconds();
    out = make_batch(next_take_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_ += seconds_since(t0);
      busy_cpu_ += thread_cpu_seconds() - c0;
      count(out);
      ++next_take_;
    }
    finish_on_gpu(out);
    return true;
  }
  std::unique_lock<std::mutex> lock(mu_);
  const auto t0 = std::chrono::steady_clock::now();
  // With a GPU thread, a batch is ready once it is prepared too.
  const bool gpu_thread = gpu_maker_ != nullptr;
  cv_.wait(lock, [&] {
    return error_ != nullptr ||
           (ready_.count(next_take_) > 0 && (!gpu_thread || next_prepare_ > next_take_));
  });
  wait_ += seconds_since(t0);
  if (error_) {
    std::exception_ptr err = error_;
    lock.unlock();
    stop_workers();
    end_ = next_take_;  // the epoch cannot continue
    std::rethrow_exception(err);
  }
  auto it = ready_.find(next_take_);
  out = std::move(it->second);
  ready_.erase(it);
  ++next_take_;
  lock.unlock();
  cv_.notify_all();
  finish_on_gpu(out);
  return true;
}

void DataLoader::count(const Batch& b) {
  images_ += b.labels.numel();
  file_bytes_ += b.file_bytes;
  for (const auto& [key, n] : b.decoded) decoded_[key] += n;
}

LoaderStats DataLoader::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  LoaderStats s;
  s.images = images_;
  s.file_bytes = file_bytes_;
  s.decoded = decoded_;
  s.worker_seconds = busy_;
  s.worker_cpu_seconds = busy_cpu_;
  s.wait_seconds = wait_;
  s.gpu_seconds = gpu_;
  s.gpu_decode_wait_seconds = gpu_times_.decode_wait_seconds;
  s.gpu_transform_seconds = gpu_times_.transform_seconds;
  s.gpu_batches_timed = gpu_times_.batches;
  s.gpu_batches_dropped = gpu_times_.dropped;
  s.gpu_decoder = gpu_times_.decoder;
  s.wall_seconds = seconds_since(started_);
  s.workers = opts_.workers;
  return s;
}

}  // namespace hg::data
