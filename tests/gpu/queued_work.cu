// Queued stand-in work for GPU tests (see queued_work.h).
#include <cuda_runtime.h>

#include "gpu/queued_work.h"
#include "kernels/cuda/check.h"

namespace hg::test {
namespace {

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin(unsigned long long ns) {
  const unsigned long long t0 = global_ns();
  while (global_ns() - t0 < ns) __nanosleep(1000);
}

__global__ void sum_bytes(const uint8_t* p, size_t n, unsigned long long* sum) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    local += p[i];
  atomicAdd(sum, local);
}

}  // namespace

void queue_spin_then_sum(const uint8_t* bytes, size_t n, unsigned long long* sum, double ms) {
  spin<<<1, 1>>>(static_cast<unsigned long long>(ms * 1e6));
  HG_CUDA_CHECK(cudaGetLastError());
  sum_bytes<<<256, 256>>>(bytes, n, sum);
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::test
