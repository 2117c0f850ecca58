#include "train/data_wait.h"

#include "core/error.h"

#ifdef HAARGRAD_WITH_CUDA
#include <cuda_runtime.h>

#include "core/cuda_stream.h"
#include "kernels/cuda/check.h"
#endif

namespace hg::train {

#ifdef HAARGRAD_WITH_CUDA
// Two timed events, destroyed with the pair (also when a later creation throws).
struct DataWait::Pair {
  cudaEvent_t a = nullptr, b = nullptr;
  Pair() {
    HG_CUDA_CHECK(cudaEventCreate(&a));  // timed: the pair's elapsed GPU time is the figure
    try {
      HG_CUDA_CHECK(cudaEventCreate(&b));
    } catch (...) {
      HG_CUDA_CHECK_NOTHROW(cudaEventDestroy(a));
      throw;
    }
  }
  ~Pair() {
    HG_CUDA_CHECK_NOTHROW(cudaEventDestroy(a));
    HG_CUDA_CHECK_NOTHROW(cudaEventDestroy(b));
  }
  Pair(const Pair&) = delete;
  Pair& operator=(const Pair&) = delete;
};
#else
struct DataWait::Pair {};
#endif

DataWait::DataWait(Device device) : device_(device) {
#ifndef HAARGRAD_WITH_CUDA
  HG_CHECK(device_ != Device::cuda, "DataWait: device cuda in a build without CUDA");
#endif
}

DataWait::~DataWait() = default;

void DataWait::harvest(bool wait) {
#ifdef HAARGRAD_WITH_CUDA
  while (!pending_.empty()) {
    Pair& p = *pending_.front();
    if (wait) {
      HG_CUDA_CHECK(cudaEventSynchronize(p.b));
    } else {
      const cudaError_t q = cudaEventQuery(p.b);
      if (q == cudaErrorNotReady) return;  // later pairs are not done either (one stream)
      HG_CUDA_CHECK(q);
    }
    float ms = 0.f;
    HG_CUDA_CHECK(cudaEventElapsedTime(&ms, p.a, p.b));
    seconds_ += ms > 0.f ? 1e-3 * double(ms) : 0.0;
    free_.push_back(std::move(pending_.front()));
    pending_.pop_front();
  }
#else
  (void)wait;
#endif
}

void DataWait::begin() {
#ifdef HAARGRAD_WITH_CUDA
  if (device_ == Device::cuda) {
    harvest(/*wait=*/false);
    if (free_.empty()) free_.push_back(std::make_unique<Pair>());
    open_ = std::move(free_.back());
    free_.pop_back();
    HG_CUDA_CHECK(cudaEventRecord(open_->a, cuda::stream()));
    return;
  }
#endif
  t0_ = std::chrono::steady_clock::now();
}

void DataWait::end() {
#ifdef HAARGRAD_WITH_CUDA
  if (device_ == Device::cuda) {
    HG_CHECK(open_ != nullptr, "DataWait::end without begin");
    HG_CUDA_CHECK(cudaEventRecord(open_->b, cuda::stream()));
    pending_.push_back(std::move(open_));
    return;
  }
#endif
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

double DataWait::seconds() {
  harvest(/*wait=*/true);
  return seconds_;
}

}  // namespace hg::train
