// CUDA per-sample scaling of kernels/drop_path.h (storage-type template, float math): 16-byte
// vectors through map_elements (kernels/cuda/bf16.cuh).
#include <algorithm>

#include "core/cuda_stream.h"
#include "kernels/cuda/bf16.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.h"
#include "kernels/drop_path.h"

namespace hg::kernels::cuda {
namespace {
// Row n = i / inner of element i = base + e: one 64-bit division per 16-byte vector (base is the
// same for its elements; the compiler shares base / inner across the unrolled e), then at most
// a few steps for a vector that crosses rows.
__device__ __forceinline__ int64_t row_of(int64_t base, int e, int64_t inner) {
  int64_t n = base / inner, r = base - n * inner + e;
  while (r >= inner) {
    r -= inner;
    ++n;
  }
  return n;
}

// y = x * scale[n] (in = {x}) or y = x + z * scale[n] (in = {x, z}).
struct ScaleRows {
  const float* scale;
  int64_t inner;
  __device__ void operator()(int64_t base, int e, const float (&x)[1], float (&y)[1]) const {
    y[0] = x[0] * scale[row_of(base, e, inner)];
  }
};
struct AddScaledRows {
  const float* scale;
  int64_t inner;
  __device__ void operator()(int64_t base, int e, const float (&in)[2], float (&y)[1]) const {
    y[0] = in[0] + in[1] * scale[row_of(base, e, inner)];
  }
};
}  // namespace

template <typename T>
void scale_rows(const T* x, const float* scale, T* y, int64_t N, int64_t inner) {
  const int64_t n = N * inner;
  if (n == 0) return;
  map_elements(MapArgs<device_t<T>, 1, 1>{{dev(x)}, {dev(y)}}, n, ScaleRows{scale, inner});
  HG_CUDA_LAUNCH_CHECK();
}

template <typename T>
void add_scaled_rows(const T* x, const T* z, const float* scale, T* y, int64_t N, int64_t inner) {
  const int64_t n = N * inner;
  if (n == 0) return;
  map_elements(MapArgs<device_t<T>, 2, 1>{{dev(x), dev(z)}, {dev(y)}}, n,
               AddScaledRows{scale, inner});
  HG_CUDA_LAUNCH_CHECK();
}

template void scale_rows<float>(const float*, const float*, float*, int64_t, int64_t);
template void scale_rows<hg::bf16>(const hg::bf16*, const float*, hg::bf16*, int64_t, int64_t);
template void add_scaled_rows<float>(const float*, const float*, const float*, float*, int64_t,
                                     int64_t);
template void add_scaled_rows<hg::bf16>(const hg::bf16*, const hg::bf16*, const float*, hg::bf16*,
                                        int64_t, int64_t);

}  // namespace hg::kernels::cuda
