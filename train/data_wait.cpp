#include "train/data_wait.h"

#include "core/error.h"

#ifdef HAARGRAD_WITH_CUDA
#include <cuda_runtime.h>

#include "core/cuda_stream.h"
#include "kernels/cuda/check.h"
#endif

namespace hg::train {

DataWait::DataWait(Device device) : device_(device) {
  if (device_ != Device::cuda) return;
#ifdef HAARGRAD_WITH_CUDA
  cudaEvent_t e = nullptr;
  HG_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  marker_ = e;
#else
  throw Error("DataWait: built without CUDA");
#endif
}

DataWait::~DataWait() {
#ifdef HAARGRAD_WITH_CUDA
  if (marker_) HG_CUDA_CHECK_NOTHROW(cudaEventDestroy(static_cast<cudaEvent_t>(marker_)));
#endif
}

void DataWait::begin() {
#ifdef HAARGRAD_WITH_CUDA
  if (marker_) HG_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(marker_), cuda::stream()));
#endif
  t0_ = std::chrono::steady_clock::now();
}

double DataWait::end() {
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
#ifdef HAARGRAD_WITH_CUDA
  if (marker_) {
    const cudaError_t r = cudaEventQuery(static_cast<cudaEvent_t>(marker_));
    if (r == cudaErrorNotReady) return 0.0;  // the GPU still had earlier steps' work to run
    HG_CUDA_CHECK(r);
  }
#endif
  return waited;
}

}  // namespace hg::train
