// DataLoader: worker threads build whole batches out of order into a bounded map; next() hands them
// out in order (see loader.h for the determinism argument).
#include "data/loader.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "core/autograd.h"
#include "core/random.h"
#include "data/seeds.h"

namespace hg::data {

namespace {
constexpr uint64_t kShuffleStream = 1, kSampleStream = 2;
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

double LoaderStats::images_per_second() const {
  return worker_seconds > 0 ? static_cast<double>(images) / worker_seconds * static_cast<double>(std::max<int64_t>(workers, 1))
                            : 0.0;
}

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, Transform transform, LoaderOptions opts)
    : dataset_(std::move(dataset)), transform_(std::move(transform)), opts_(opts) {
  HG_CHECK(dataset_ != nullptr, "DataLoader: no dataset");
  HG_CHECK(opts_.batch_size >= 1, "DataLoader: batch_size must be >= 1, got ", opts_.batch_size);
  HG_CHECK(opts_.workers >= 0, "DataLoader: workers must be >= 0, got ", opts_.workers);
  HG_CHECK(opts_.max_steps >= 0, "DataLoader: max_steps must be >= 0, got ", opts_.max_steps);
  const auto C = static_cast<int64_t>(transform_.options().mean.size());
  HG_CHECK(dataset_->channels() == C, "DataLoader: dataset gives ", dataset_->channels(),
           " channels but mean/std have ", C, " values (", dataset_->describe(), ")");
  if (opts_.prefetch <= 0) opts_.prefetch = 2 * std::max<int64_t>(opts_.workers, 1);
}

DataLoader::~DataLoader() { stop_workers(); }

int64_t DataLoader::batches_per_epoch() const {
  const int64_t n = dataset_->size(), B = opts_.batch_size;
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
  order_ = epoch_order(epoch);
  end_ = batches_per_epoch();
  reported_ = false;
  started_ = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    next_make_ = next_take_ = start_step;
    ready_.clear();
    stop_ = false;
    error_ = nullptr;
    images_ = 0;
    busy_ = wait_ = 0;
  }
  for (int64_t w = 0; w < opts_.workers; ++w) threads_.emplace_back([this] { worker_loop(); });
}

Batch DataLoader::make_batch(int64_t step) const {
  // Batches live in the caching allocator, never in the tape arena of a step being recorded.
  autograd::NoGradGuard no_grad;
  memory::CategoryScope scope(Category::workspace);
  const int64_t B = opts_.batch_size, begin = step * B;
  const int64_t n = std::min(B, dataset_->size() - begin);
  const int64_t S = transform_.options().img_size, C = dataset_->channels();
  Batch batch;
  batch.epoch = epoch_;
  batch.step = step;
  if (opts_.pin_memory) {
    batch.images = Tensor::empty_pinned({n, S, S, C}, DType::f32);
    batch.labels = Tensor::empty_pinned({n}, DType::i64);
  } else {
    batch.images = Tensor::empty({n, S, S, C}, DType::f32, Device::cpu);
    batch.labels = Tensor::empty({n}, DType::i64, Device::cpu);
  }
  float* px = batch.images.data<float>();
  int64_t* lb = batch.labels.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t index = order_[static_cast<size_t>(begin + i)];
    Sample s = dataset_->get(index);
    HG_CHECK(s.label >= 0 && s.label < dataset_->num_classes(), "DataLoader: sample ", index, " has label ",
             s.label, " outside [0, ", dataset_->num_classes(), ")");
    Generator gen(mix_seed(opts_.seed, kSampleStream, static_cast<uint64_t>(epoch_), static_cast<uint64_t>(index)));
    transform_.apply(s.image, gen, px + i * transform_.output_numel());
    lb[i] = s.label;
  }
  return batch;
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
    Batch batch;
    std::exception_ptr err;
    try {
      batch = make_batch(step);
    } catch (...) {
      err = std::current_exception();
    }
    const double dt = seconds_since(t0);
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_ += dt;
      if (err) {
        if (!error_) error_ = err;
        stop_ = true;
      } else {
        images_ += batch.labels.numel();
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
        spdlog::warn("DataLoader: {} corrupt images skipped so far ({})", dataset_->corrupt_skipped(),
                     dataset_->describe());
    }
    return false;
  }
  if (opts_.workers == 0) {
    const auto t0 = std::chrono::steady_clock::now();
    out = make_batch(next_take_);
    std::lock_guard<std::mutex> lock(mu_);
    busy_ += seconds_since(t0);
    images_ += out.labels.numel();
    ++next_take_;
    return true;
  }
  std::unique_lock<std::mutex> lock(mu_);
  const auto t0 = std::chrono::steady_clock::now();
  cv_.wait(lock, [&] { return error_ != nullptr || ready_.count(next_take_) > 0; });
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
  return true;
}

LoaderStats DataLoader::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  LoaderStats s;
  s.images = images_;
  s.worker_seconds = busy_;
  s.wait_seconds = wait_;
  s.wall_seconds = seconds_since(started_);
  s.workers = opts_.workers;
  return s;
}

}  // namespace hg::data
