// Copy bandwidth and GEMM rate of a device (see device_ceilings.h).
#include "app/device_ceilings.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "app/bench_run.h"
#include "app/bench_timer.h"
#include "core/autograd.h"
#include "core/error.h"
#include "core/ops.h"
#include "core/tensor.h"

#ifdef HAARGRAD_WITH_CUDA
#include <cuda_runtime.h>

#include "core/cuda_stream.h"

#include "kernels/cuda/check.h"
#endif

namespace hg::app {
namespace {

/// Median milliseconds of fn on `device`'s timeline, after `warmup` untimed calls.
double median_ms(Device device, const std::function<void()>& fn, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) fn();
  DeviceClock clock(device, 2 * iters);
  std::vector<double> ms;
  std::vector<std::pair<int, int>> marks;
  for (int i = 0; i < iters; ++i) {
    const int a = clock.mark();
    fn();
    marks.emplace_back(a, clock.mark());
  }
  clock.sync();
  for (const auto& [a, b] : marks) ms.push_back(clock.elapsed_ms(a, b));
  return summarize(ms).median;
}

}  // namespace

double copy_bytes_per_second(Device device) {
  HG_CHECK(device_available(device), "copy_bytes_per_second: device ", device_name(device),
           " is not available");
  autograd::NoGradGuard no_grad;
  const int64_t n = device == Device::cuda ? int64_t(1) << 28 : int64_t(1) << 26;  // f32 elements
  const Tensor src = Tensor::full({n}, 1.0, DType::f32, device);
  Tensor dst = Tensor::empty({n}, DType::f32, device);
  const size_t bytes = static_cast<size_t>(n) * 4;
  std::function<void()> copy;
#ifdef HAARGRAD_WITH_CUDA
  if (device == Device::cuda)
    copy = [&] {
      HG_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), bytes, cudaMemcpyDeviceToDevice,
                                    cuda::stream()));
    };
#endif
  if (!copy) copy = [&] { std::memcpy(dst.data_ptr(), src.data_ptr(), bytes); };
  const double ms = median_ms(device, copy, 2, device == Device::cuda ? 20 : 5);
  return 2.0 * static_cast<double>(bytes) / (ms * 1e-3);
}

double gemm_flops_per_second(Device device, DType dtype) {
  HG_CHECK(dtype == DType::f32 || dtype == DType::bf16,
           "gemm_flops_per_second: dtype must be f32 or bf16, got ", dtype_name(dtype));
  HG_CHECK(device_available(device), "gemm_flops_per_second: device ", device_name(device),
           " is not available");
  autograd::NoGradGuard no_grad;
  const int64_t n = device == Device::cuda ? 8192 : 512;
  const Tensor a = random_uniform({n, n}, 11, device).to(dtype),
               b = random_uniform({n, n}, 12, device).to(dtype);
  const double ms = median_ms(
      device, [&] { Tensor c = ops::matmul(a, b); }, 2, device == Device::cuda ? 10 : 3);
  return 2.0 * static_cast<double>(n) * n * n / (ms * 1e-3);
}

}  // namespace hg::app
