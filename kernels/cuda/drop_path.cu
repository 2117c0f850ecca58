// CUDA per-sample scaling of kernels/drop_path.h (storage-type template, float math).
#include <algorithm>

#include "kernels/cuda/check.h"
#include "kernels/drop_path.h"

namespace hg::kernels::cuda {
namespace {
template <typename T>
__global__ void scale_rows_kernel(const T* x, const float* scale, T* y, int64_t N, int64_t inner) {
  const int64_t n_all = N * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n_all;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = T(static_cast<float>(x[i]) * scale[i / inner]);
}
}  // namespace

void scale_rows(const float* x, const float* scale, float* y, int64_t N, int64_t inner) {
  const int64_t n = N * inner;
  if (n == 0) return;
  const int blocks = static_cast<int>(std::min<int64_t>((n + 255) / 256, 65535));
  scale_rows_kernel<float><<<blocks, 256>>>(x, scale, y, N, inner);
  HG_CUDA_LAUNCH_CHECK();
}

}  // namespace hg::kernels::cuda
