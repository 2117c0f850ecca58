// CUDA LayerNorm of kernels/layernorm.h. One warp per row for the forward and for dx (rows are the
// channel vectors of NHWC pixels, C <= a few thousand); dweight / dbias are summed per row chunk
// into (P, C) workspaces and finished by reduce.h's fixed-order sum_rows (deterministic).
// Kernels are templated on the activation storage type T (float or __nv_bfloat16); parameters,
// statistics and accumulation stay float.
#include <algorithm>

#include "core/tensor.h"
#include "kernels/cuda/bf16.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.h"
#include "kernels/layernorm.h"
#include "kernels/reduce.h"

namespace hg::kernels::cuda {
namespace {
constexpr int kRowsPerBlock = 8;  // 8 warps of 32 threads

__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T>
__global__ void forward_kernel(const T* x, const float* w, const float* b, T* y, float* mean,
                               float* rstd, int64_t rows, int64_t C, float eps) {
  const int64_t r = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.y;
  if (r >= rows) return;  // whole warp leaves together
  const T* xr = x + r * C;
  const int lane = threadIdx.x;
  float s = 0;
  for (int64_t c = lane; c < C; c += 32) s += to_f32(xr[c]);
  const float mu = warp_sum(s) / static_cast<float>(C);
  float ss = 0;  // two-pass variance: no cancellation
  for (int64_t c = lane; c < C; c += 32) {
    const float d = to_f32(xr[c]) - mu;
    ss += d * d;
  }
  const float rs = rsqrtf(warp_sum(ss) / static_cast<float>(C) + eps);
  for (int64_t c = lane; c < C; c += 32)
    y[r * C + c] = from_f32<T>((to_f32(xr[c]) - mu) * rs * w[c] + b[c]);
  if (lane == 0) {
    mean[r] = mu;
    rstd[r] = rs;
  }
}

template <typename T>
__global__ void backward_dx_kernel(const T* x, const float* w, const float* mean, const float* rstd,
                                   const T* dy, T* dx, int64_t rows, int64_t C) {
  const int64_t r = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.y;
  if (r >= rows) return;
  const int lane = threadIdx.x;
  const float mu = mean[r], rs = rstd[r];
  float sum_g = 0, sum_gx = 0;
  for (int64_t c = lane; c < C; c += 32) {
    const float g = to_f32(dy[r * C + c]) * w[c];
    sum_g += g;
    sum_gx += g * (to_f32(x[r * C + c]) - mu) * rs;
  }
  const float mg = warp_sum(sum_g) / static_cast<float>(C);
  const float mgx = warp_sum(sum_gx) / static_cast<float>(C);
  for (int64_t c = lane; c < C; c += 32) {
    const float g = to_f32(dy[r * C + c]) * w[c];
    const float xhat = (to_f32(x[r * C + c]) - mu) * rs;
    dx[r * C + c] = from_f32<T>(rs * (g - mg - xhat * mgx));
  }
}

// grid (ceil(C/32), P), block (32, 8): column c = blockIdx.x*32 + tx over the rows of chunk
// blockIdx.y; writes partial_w / partial_b (P, C).
template <typename T>
__global__ void backward_dwdb_partial(const T* x, const float* mean, const float* rstd, const T* dy,
                                      float* partial_w, float* partial_b, int64_t rows, int64_t C,
                                      int64_t chunk) {
  __shared__ float sw[8][33], sb[8][33];
  const int64_t c = blockIdx.x * 32 + threadIdx.x;
  const int64_t r0 = blockIdx.y * chunk, r1 = min(r0 + chunk, rows);
  float aw = 0, ab = 0;
  if (c < C)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) {
      const float g = to_f32(dy[r * C + c]);
      aw += g * (to_f32(x[r * C + c]) - mean[r]) * rstd[r];
      ab += g;
    }
  sw[threadIdx.y][threadIdx.x] = aw;
  sb[threadIdx.y][threadIdx.x] = ab;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float tw = 0, tb = 0;
    for (int k = 0; k < 8; ++k) {
      tw += sw[k][threadIdx.x];
      tb += sb[k][threadIdx.x];
    }
    partial_w[blockIdx.y * C + c] = tw;
    partial_b[blockIdx.y * C + c] = tb;
  }
}

unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
}
}  // namespace

template <typename T>
void layernorm_forward(const T* x, const float* weight, const float* bias, T* y, float* mean,
                       float* rstd, int64_t rows, int64_t C, float eps) {
  if (rows == 0) return;
  forward_kernel<<<row_blocks(rows), dim3(32, kRowsPerBlock)>>>(dev(x), weight, bias, dev(y), mean,
                                                                rstd, rows, C, eps);
  HG_CUDA_LAUNCH_CHECK();
}

template <typename T>
void layernorm_backward(const T* x, const float* weight, const float* mean, const float* rstd,
                        const T* dy, T* dx, float* dweight, float* dbias, int64_t rows, int64_t C) {
  if (dx && rows > 0) {
    backward_dx_kernel<<<row_blocks(rows), dim3(32, kRowsPerBlock)>>>(dev(x), weight, mean, rstd,
                                                                      dev(dy), dev(dx), rows, C);
    HG_CUDA_LAUNCH_CHECK();
  }
  if (!dweight && !dbias) return;
  const int64_t P = column_partial_chunks(rows), chunk = (rows + P - 1) / P;
  const Tensor ws = scratch_tensor({2, P, C});
  float* pw = ws.data<float>();
  float* pb = pw + P * C;
  dim3 grid(static_cast<unsigned>((C + 31) / 32), static_cast<unsigned>(P)), block(32, 8);
  backward_dwdb_partial<<<grid, block>>>(dev(x), mean, rstd, dev(dy), pw, pb, rows, C, chunk);
  HG_CUDA_LAUNCH_CHECK();
  if (dweight) sum_rows(pw, P, C, dweight);
  if (dbias) sum_rows(pb, P, C, dbias);
}

#define HG_INSTANTIATE(T)                                                                   \
  template void layernorm_forward<T>(const T*, const float*, const float*, T*, float*, float*, \
                                     int64_t, int64_t, float);                               \
  template void layernorm_backward<T>(const T*, const float*, const float*, const float*,     \
                                      const T*, T*, float*, float*, int64_t, int64_t);
HG_INSTANTIATE(float)
HG_INSTANTIATE(hg::bf16)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cuda
