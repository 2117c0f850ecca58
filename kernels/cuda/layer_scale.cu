// CUDA layer scale of kernels/layer_scale.h: forward is a broadcast multiply; dgamma is summed per
// row chunk into a (P, C) workspace, then reduce.h's sum_rows adds the P partials in order.
#include <algorithm>

#include "core/cuda_stream.h"
#include "core/tensor.h"
#include "kernels/cuda/bf16.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.h"
#include "kernels/layer_scale.h"
#include "kernels/reduce.h"

namespace hg::kernels::cuda {
namespace {
// (base + e) % C with one 64-bit modulo per vector (base % C is the same for its elements).
__device__ __forceinline__ int64_t column(int64_t base, int e, int64_t C) {
  int64_t c = base % C + e;
  while (c >= C) c -= C;
  return c;
}

// y = x * gamma[c] (in = {x}) or y = shortcut + x * gamma[c] (in = {shortcut, x}), c = i % C.
struct ScaleRows {
  const float* gamma;
  int64_t C;
  __device__ void operator()(int64_t base, int e, const float (&x)[1], float (&y)[1]) const {
    y[0] = x[0] * gamma[column(base, e, C)];
  }
};
struct ResidualScaleRows {
  const float* gamma;
  int64_t C;
  __device__ void operator()(int64_t base, int e, const float (&in)[2], float (&y)[1]) const {
    y[0] = in[0] + in[1] * gamma[column(base, e, C)];
  }
};

// grid (ceil(C/32), P), block (32, 8): column c = blockIdx.x*32 + tx, rows of chunk blockIdx.y.
template <typename T>
__global__ void grad_gamma_partial(const T* x, const T* dy, float* partial, int64_t rows, int64_t C,
                                   int64_t chunk) {
  __shared__ float s[8][33];
  const int64_t c = blockIdx.x * 32 + threadIdx.x;
  const int64_t r0 = blockIdx.y * chunk, r1 = min(r0 + chunk, rows);
  float acc = 0;
  if (c < C)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += 8)
      acc += to_f32(dy[r * C + c]) * to_f32(x[r * C + c]);
  s[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float t = 0;
    for (int k = 0; k < 8; ++k) t += s[k][threadIdx.x];
    partial[blockIdx.y * C + c] = t;
  }
}

// wf = gamma w row by row (and bf = gamma b), rounded once to T.
template <typename T>
__global__ void fold_kernel(const float* w, const float* b, const float* gamma, T* wf, T* bf,
                            int64_t out, int64_t in) {
  const int64_t n = out * in;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = e / in;
    wf[e] = from_f32<T>(gamma[o] * w[e]);
    if (b && e % in == 0) bf[o] = from_f32<T>(gamma[o] * b[o]);
  }
}

// One block per row o: gw = gamma gwf over the row, and dgamma[o] = sum gwf w (+ gbf b): each
// thread sums a fixed strided subset, then a fixed tree in shared memory (deterministic).
constexpr int kUnfoldThreads = 256;
template <typename T>
__global__ void __launch_bounds__(kUnfoldThreads)
    unfold_kernel(const T* gwf, const T* gbf, const float* w, const float* b, const float* gamma,
                  float* gw, float* gb, float* dgamma, int64_t in) {
  __shared__ float red[kUnfoldThreads];
  const int64_t o = blockIdx.x;
  const float g = gamma[o];
  float acc = 0.f;
  for (int64_t i = threadIdx.x; i < in; i += kUnfoldThreads) {
    const float v = to_f32(gwf[o * in + i]);
    gw[o * in + i] = g * v;
    acc = fmaf(v, w[o * in + i], acc);
  }
  red[threadIdx.x] = acc;
  __syncthreads();
  for (int s = kUnfoldThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    float total = red[0];
    if (b) {
      const float vb = to_f32(gbf[o]);
      gb[o] = g * vb;
      total = fmaf(vb, b[o], total);
    }
    dgamma[o] = total;
  }
}
}  // namespace

template <typename T>
void layer_scale_fold(const float* w, const float* b, const float* gamma, T* wf, T* bf, int64_t out,
                      int64_t in) {
  if (out * in == 0) return;
  fold_kernel<<<grid_stride_blocks(out * in), 256, 0, hg::cuda::stream()>>>(w, b, gamma, dev(wf),
                                                                            dev(bf), out, in);
  HG_CUDA_LAUNCH_CHECK();
}

template <typename T>
void layer_scale_unfold(const T* gwf, const T* gbf, const float* w, const float* b,
                        const float* gamma, float* gw, float* gb, float* dgamma, int64_t out,
                        int64_t in) {
  if (out == 0) return;
  HG_CHECK(out <= INT32_MAX, "layer_scale_unfold: ", out, " rows exceed the grid");
  unfold_kernel<<<unsigned(out), kUnfoldThreads, 0, hg::cuda::stream()>>>(
      dev(gwf), dev(gbf), w, b, gamma, gw, gb, dgamma, in);
  HG_CUDA_LAUNCH_CHECK();
}

template <typename T>
void layer_scale_forward(const T* x, const float* gamma, T* y, int64_t rows, int64_t C) {
  const int64_t n = rows * C;
  if (n == 0) return;
  map_elements(MapArgs<device_t<T>, 1, 1>{{dev(x)}, {dev(y)}}, n, ScaleRows{gamma, C});
  HG_CUDA_LAUNCH_CHECK();
}

template <typename T>
void residual_layer_scale_forward(const T* shortcut, const T* x, const float* gamma, T* y,
                                  int64_t rows, int64_t C) {
  const int64_t n = rows * C;
  if (n == 0) return;
  map_elements(MapArgs<device_t<T>, 2, 1>{{dev(shortcut), dev(x)}, {dev(y)}}, n,
               ResidualScaleRows{gamma, C});
  HG_CUDA_LAUNCH_CHECK();
}

template <typename T>
void layer_scale_grad_gamma(const T* x, const T* dy, float* dgamma, int64_t rows, int64_t C) {
  if (C == 0) return;
  const int64_t P = column_partial_chunks(rows), chunk = (rows + P - 1) / P;
  const Tensor ws = scratch_tensor({P, C});
  dim3 grid(static_cast<unsigned>((C + 31) / 32), static_cast<unsigned>(P)), block(32, 8);
  grad_gamma_partial<<<grid, block, 0, hg::cuda::stream()>>>(dev(x), dev(dy), ws.data<float>(),
                                                             rows, C, chunk);
  HG_CUDA_LAUNCH_CHECK();
  sum_rows(ws.data<float>(), P, C, dgamma);
}

#define HG_INSTANTIATE(T)                                                                      \
  template void layer_scale_forward<T>(const T*, const float*, T*, int64_t, int64_t);          \
  template void residual_layer_scale_forward<T>(const T*, const T*, const float*, T*, int64_t, \
                                                int64_t);                                      \
  template void layer_scale_grad_gamma<T>(const T*, const T*, float*, int64_t, int64_t);       \
  template void layer_scale_fold<T>(const float*, const float*, const float*, T*, T*, int64_t, \
                                    int64_t);                                                  \
  template void layer_scale_unfold<T>(const T*, const T*, const float*, const float*,          \
                                      const float*, float*, float*, float*, int64_t, int64_t);
HG_INSTANTIATE(float)
HG_INSTANTIATE(hg::bf16)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cuda
