// CUDA fused softmax + cross-entropy of kernels/cross_entropy.h. Forward: one warp per row writes
// its stats (max, log sum) and the row's loss; one block then averages the row losses in a fixed
// order (deterministic). Backward: one thread per logit, reading dL/dloss from device memory.
// Kernels are templated on the logit storage type T (float now, bf16 later); math in float.
#include <algorithm>
#include <cmath>

#include "core/cuda_stream.h"
#include "core/tensor.h"
#include "kernels/cross_entropy.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.h"

namespace hg::kernels::cuda {
namespace {
constexpr int kRowsPerBlock = 8;
constexpr int kThreads = 256;

__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T>
__global__ void forward_rows(const T* logits, const int64_t* labels, float* stats, float* row_loss,
                             int64_t N, int64_t K, float smoothing) {
  const int64_t i = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.y;
  if (i >= N) return;
  const T* z = logits + i * K;
  const int lane = threadIdx.x;
  float mx = -INFINITY;
  for (int64_t j = lane; j < K; j += 32) mx = fmaxf(mx, static_cast<float>(z[j]));
  mx = warp_max(mx);
  float se = 0, sd = 0;  // sd: sum of z - mx
  for (int64_t j = lane; j < K; j += 32) {
    const float d = static_cast<float>(z[j]) - mx;
    se += expf(d);
    sd += d;
  }
  se = warp_sum(se);
  sd = warp_sum(sd);
  if (lane == 0) {
    const float log_se = logf(se);
    stats[2 * i] = mx;
    stats[2 * i + 1] = log_se;
    const int64_t y = labels[i];
    // lse - z_j as (mx - z_j) + log_se: with logits far from 0 (|z| ~ 1e8 and more) lse's float
    // cannot hold log_se beside mx, and lse - z_y came out 0 where torch's log_softmax gives log K;
    // the smoothing term only when smoothing is on (a -inf logit: 0 x inf would be NaN)
    const float smoothed = smoothing != 0 ? smoothing * (log_se - sd / static_cast<float>(K)) : 0;
    row_loss[i] = (y < 0 || y >= K)
                      ? NAN  // bad label: poison the loss instead of reading out of bounds
                      : (1.0f - smoothing) * ((mx - static_cast<float>(z[y])) + log_se) + smoothed;
  }
}

__global__ void mean_kernel(const float* row_loss, int64_t N, float* loss) {
  __shared__ double s[kThreads];
  double acc = 0;
  for (int64_t i = threadIdx.x; i < N; i += kThreads) acc += row_loss[i];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) loss[0] = static_cast<float>(s[0] / static_cast<double>(N));
}

template <typename T>
__global__ void backward_kernel(const T* logits, const int64_t* labels, const float* stats,
                                const float* grad_loss, T* dlogits, int64_t N, int64_t K,
                                float smoothing) {
  const float g = grad_loss[0] / static_cast<float>(N);
  const float off = smoothing / static_cast<float>(K);
  const int64_t n = N * K;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < n;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = idx / K, j = idx % K;
    // softmax as (z - max) - log sum: exp(z - lse) lost the log sum beside a max far from 0
    const float p = expf((static_cast<float>(logits[idx]) - stats[2 * i]) - stats[2 * i + 1]);
    const float target = (j == labels[i] ? 1.0f - smoothing : 0.0f) + off;
    dlogits[idx] = T(g * (p - target));
  }
}
// Soft targets: one warp per row, like forward_rows; the row loss is sum_j t_j (lse - z_j).
__global__ void soft_forward_rows(const float* logits, const float* targets, float* stats,
                                  float* row_loss, int64_t N, int64_t K) {
  const int64_t i = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.y;
  if (i >= N) return;
  const float* z = logits + i * K;
  const float* t = targets + i * K;
  const int lane = threadIdx.x;
  float mx = -INFINITY;
  for (int64_t j = lane; j < K; j += 32) mx = fmaxf(mx, z[j]);
  mx = warp_max(mx);
  float se = 0, st = 0, tzd = 0;  // tzd: sum of t_j (z_j - mx)
  for (int64_t j = lane; j < K; j += 32) {
    const float d = z[j] - mx;
    se += expf(d);
    st += t[j];
    if (t[j] != 0) tzd += t[j] * d;  // (0 x inf at a -inf logit would be NaN)
  }
  se = warp_sum(se);
  st = warp_sum(st);
  tzd = warp_sum(tzd);
  if (lane == 0) {
    const float log_se = logf(se);
    stats[2 * i] = mx;
    stats[2 * i + 1] = log_se;
    row_loss[i] = log_se * st - tzd;  // sum_j t_j (lse - z_j), shifted by mx as forward_rows
  }
}

// One warp per row: the row's target mass first, then dz = g / N (p * mass - t).
__global__ void soft_backward_rows(const float* logits, const float* targets, const float* stats,
                                   const float* grad_loss, float* dlogits, int64_t N, int64_t K) {
  const int64_t i = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.y;
  if (i >= N) return;
  const float g = grad_loss[0] / static_cast<float>(N);
  const float* z = logits + i * K;
  const float* t = targets + i * K;
  float mass = 0;
  for (int64_t j = threadIdx.x; j < K; j += 32) mass += t[j];
  mass = warp_sum(mass);
  for (int64_t j = threadIdx.x; j < K; j += 32)
    dlogits[i * K + j] = g * (expf((z[j] - stats[2 * i]) - stats[2 * i + 1]) * mass - t[j]);
}
}  // namespace

void soft_cross_entropy_forward(const float* logits, const float* targets, float* stats,
                                float* loss, int64_t N, int64_t K) {
  HG_CHECK(N > 0 && K > 0, "soft_cross_entropy (cuda): empty logits (", N, ", ", K, ")");
  const Tensor ws = scratch_tensor({N});
  const unsigned blocks = static_cast<unsigned>((N + kRowsPerBlock - 1) / kRowsPerBlock);
  soft_forward_rows<<<blocks, dim3(32, kRowsPerBlock), 0, hg::cuda::stream()>>>(
      logits, targets, stats, ws.data<float>(), N, K);
  HG_CUDA_LAUNCH_CHECK();
  mean_kernel<<<1, kThreads, 0, hg::cuda::stream()>>>(ws.data<float>(), N, loss);
  HG_CUDA_LAUNCH_CHECK();
}

void soft_cross_entropy_backward(const float* logits, const float* targets, const float* stats,
                                 const float* grad_loss, float* dlogits, int64_t N, int64_t K) {
  if (N * K == 0) return;
  const unsigned blocks = static_cast<unsigned>((N + kRowsPerBlock - 1) / kRowsPerBlock);
  soft_backward_rows<<<blocks, dim3(32, kRowsPerBlock), 0, hg::cuda::stream()>>>(
      logits, targets, stats, grad_loss, dlogits, N, K);
  HG_CUDA_LAUNCH_CHECK();
}

void cross_entropy_forward(const float* logits, const int64_t* labels, float* stats, float* loss,
                           int64_t N, int64_t K, float smoothing) {
  HG_CHECK(N > 0 && K > 0, "cross_entropy (cuda): empty logits (", N, ", ", K, ")");
  const Tensor ws = scratch_tensor({N});
  const unsigned blocks = static_cast<unsigned>((N + kRowsPerBlock - 1) / kRowsPerBlock);
  forward_rows<float><<<blocks, dim3(32, kRowsPerBlock), 0, hg::cuda::stream()>>>(
      logits, labels, stats, ws.data<float>(), N, K, smoothing);
  HG_CUDA_LAUNCH_CHECK();
  mean_kernel<<<1, kThreads, 0, hg::cuda::stream()>>>(ws.data<float>(), N, loss);
  HG_CUDA_LAUNCH_CHECK();
}

void cross_entropy_backward(const float* logits, const int64_t* labels, const float* stats,
                            const float* grad_loss, float* dlogits, int64_t N, int64_t K,
                            float smoothing) {
  const int64_t n = N * K;
  if (n == 0) return;
  const int blocks = static_cast<int>(std::min<int64_t>((n + 255) / 256, 65535));
  backward_kernel<float><<<blocks, 256, 0, hg::cuda::stream()>>>(logits, labels, stats, grad_loss,
                                                                 dlogits, N, K, smoothing);
  HG_CUDA_LAUNCH_CHECK();
}

}  // namespace hg::kernels::cuda
