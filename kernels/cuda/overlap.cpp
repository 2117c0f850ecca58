#include "kernels/cuda/overlap.h"

#include "core/error.h"
#include "kernels/cuda/check.h"

namespace hg::cuda {
namespace {

// The side stream of a thread and the two events of its forks and joins, made on first use. An
// event may be recorded again once the wait on it is queued: a wait takes the state of the last
// record before it.
struct SideStream {
  cudaStream_t stream = nullptr;
  cudaEvent_t fork = nullptr, join = nullptr;
  SideStream() {
    HG_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    HG_CUDA_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    HG_CUDA_CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  }
  ~SideStream() {  // at thread exit; the driver may already be gone at process exit: no checks
    cudaEventDestroy(fork);
    cudaEventDestroy(join);
    cudaStreamDestroy(stream);
  }
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;
};

SideStream& side_stream() {
  thread_local SideStream s;
  return s;
}

}  // namespace

Overlap::Overlap() : main_(stream()), side_(side_stream().stream) {
  HG_CHECK(main_ != side_, "cuda::Overlap: already on the side stream (nested Overlap)");
  HG_CUDA_CHECK(cudaEventRecord(side_stream().fork, main_));
  HG_CUDA_CHECK(cudaStreamWaitEvent(side_, side_stream().fork, 0));
}

Overlap::~Overlap() {
  HG_CUDA_CHECK_NOTHROW(cudaEventRecord(side_stream().join, side_));
  HG_CUDA_CHECK_NOTHROW(cudaStreamWaitEvent(main_, side_stream().join, 0));
}

}  // namespace hg::cuda
