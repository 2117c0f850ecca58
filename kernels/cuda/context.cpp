// CUDA handles and switches (see context.h).
#include "kernels/cuda/context.h"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_set>

#include "core/host_sync.h"
#include "kernels/cuda/check.h"

namespace hg::cuda {
namespace {
bool g_tf32 = false;
std::atomic<bool> g_gemm_autotune{true};
}

bool available() {
  static const bool ok = [] {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  }();
  return ok;
}

cublasHandle_t cublas() {
  static cublasHandle_t h = [] {
    cublasHandle_t handle;
    HG_CUBLAS_CHECK(cublasCreate(&handle));
    HG_CUBLAS_CHECK(cublasSetMathMode(handle, g_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    HG_CUBLAS_CHECK(cublasSetStream(handle, stream()));  // resolved per calling thread
    return handle;
  }();
  return h;
}

cudnnHandle_t cudnn() {
  static cudnnHandle_t h = [] {
    cudnnHandle_t handle;
    HG_CUDNN_CHECK(cudnnCreate(&handle));
    HG_CUDNN_CHECK(cudnnSetStream(handle, stream()));  // resolved per calling thread
    return handle;
  }();
  return h;
}

void set_allow_tf32(bool on) {
  g_tf32 = on;
  HG_CUBLAS_CHECK(cublasSetMathMode(cublas(), on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH));
}
bool allow_tf32() { return g_tf32; }
void set_gemm_autotune(bool on) { g_gemm_autotune = on; }
bool gemm_autotune() { return g_gemm_autotune; }

int multiprocessor_count() {
  static const int n = [] {
    int dev = 0, v = 0;
    HG_CUDA_CHECK(cudaGetDevice(&dev));
    HG_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev));
    return v;
  }();
  return n;
}

size_t max_dynamic_smem() {
  static const size_t bytes = [] {
    int dev = 0, v = 0;
    HG_CUDA_CHECK(cudaGetDevice(&dev));
    HG_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    return size_t(v);
  }();
  return bytes;
}

void allow_max_dynamic_smem(const void* kernel) {
  static std::mutex mu;
  static std::unordered_set<const void*> done;
  std::lock_guard<std::mutex> lock(mu);
  if (done.count(kernel)) return;
  HG_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     int(max_dynamic_smem())));
  done.insert(kernel);
}

int resident_blocks(const void* kernel, int threads, size_t smem) {
  allow_max_dynamic_smem(kernel);
  static std::mutex mu;
  static std::map<std::tuple<const void*, int, size_t>, int> known;
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_tuple(kernel, threads, smem);
  if (const auto it = known.find(key); it != known.end()) return it->second;
  int blocks = 0;
  HG_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, smem));
  known.emplace(key, blocks);
  return blocks;
}

void wait_polling(cudaEvent_t event, int poll_us) {
  for (;;) {
    const cudaError_t q = cudaEventQuery(event);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) HG_CUDA_CHECK(q);
    std::this_thread::sleep_for(std::chrono::microseconds(poll_us));
  }
}

std::shared_mutex& capture_mutex() {
  static std::shared_mutex mu;
  return mu;
}

void synchronize() {
  note_host_sync();
  HG_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace hg::cuda
