// CUDA per-sample scaling of kernels/drop_path.h (storage-type template, float math).
#include <algorithm>

#include "core/cuda_stream.h"
#include "kernels/cuda/bf16.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.h"
#include "kernels/drop_path.h"

namespace hg::kernels::cuda {
namespace {
template <typename T>
__global__ void scale_rows_kernel(const T* x, const float* scale, T* y, int64_t N, int64_t inner) {
  const int64_t n_all = N * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n_all;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = from_f32<T>(to_f32(x[i]) * scale[i / inner]);
}
}  // namespace

template <typename T>
void scale_rows(const T* x, const float* scale, T* y, int64_t N, int64_t inner) {
  const int64_t n = N * inner;
  if (n == 0) return;
  scale_rows_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>(dev(x), scale, dev(y), N,
                                                                           inner);
  HG_CUDA_LAUNCH_CHECK();
}

template void scale_rows<float>(const float*, const float*, float*, int64_t, int64_t);
template void scale_rows<hg::bf16>(const hg::bf16*, const float*, hg::bf16*, int64_t, int64_t);

}  // namespace hg::kernels::cuda
