#include "train/data_wait.h"

#include "core/error.h"

#ifdef HAARGRAD_WITH_CUDA
#include <cuda_runtime.h>

#include "core/cuda_stream.h"
#include "kernels/cuda/check.h"
#endif

namespace hg::train {

namespace {
// Pairs in the ring: a pair is read when its slot comes round again (data_wait.h).
constexpr size_t kPairs = 8;
}  // namespace

DataWait::DataWait(Device device) {
  if (device != Device::cuda) return;
#ifdef HAARGRAD_WITH_CUDA
  marks_.assign(2 * kPairs, nullptr);
  pending_.assign(kPairs, false);
  try {
    for (void*& m : marks_) {
      cudaEvent_t e = nullptr;
      HG_CUDA_CHECK(cudaEventCreate(&e));  // timed: the pair's elapsed GPU time is the figure
      m = e;
    }
  } catch (...) {
    release();  // the destructor does not run for a constructor that throws
    throw;
  }
#else
  throw Error("DataWait: device cuda in a build without CUDA");
#endif
}

DataWait::~DataWait() { release(); }

void DataWait::release() {
#ifdef HAARGRAD_WITH_CUDA
  for (void*& m : marks_)
    if (m) {
      HG_CUDA_CHECK_NOTHROW(cudaEventDestroy(static_cast<cudaEvent_t>(m)));
      m = nullptr;
    }
#endif
}

void DataWait::harvest(size_t pair) {
#ifdef HAARGRAD_WITH_CUDA
  if (!pending_[pair]) return;
  auto a = static_cast<cudaEvent_t>(marks_[2 * pair]),
       b = static_cast<cudaEvent_t>(marks_[2 * pair + 1]);
  HG_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0.f;
  HG_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  seconds_ += ms > 0.f ? 1e-3 * double(ms) : 0.0;
  pending_[pair] = false;
#else
  (void)pair;
#endif
}

void DataWait::begin() {
#ifdef HAARGRAD_WITH_CUDA
  if (!marks_.empty()) {
    harvest(next_);  // kPairs steps old: done unless the host is that far ahead
    HG_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(marks_[2 * next_]), cuda::stream()));
    return;
  }
#endif
  t0_ = std::chrono::steady_clock::now();
}

void DataWait::end() {
#ifdef HAARGRAD_WITH_CUDA
  if (!marks_.empty()) {
    HG_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(marks_[2 * next_ + 1]), cuda::stream()));
    pending_[next_] = true;
    next_ = (next_ + 1) % kPairs;
    return;
  }
#endif
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

double DataWait::seconds() {
  for (size_t p = 0; p < pending_.size(); ++p) harvest(p);
  return seconds_;
}

}  // namespace hg::train
