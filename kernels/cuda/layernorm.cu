// CUDA LayerNorm of kernels/layernorm.h. One warp per row for the forward and for dx (rows are the
// channel vectors of NHWC pixels, C <= a few thousand); dweight / dbias are summed per block of
// rows into (P, C) workspaces and finished by reduce.h's fixed-order sum_rows (deterministic). For
// rows of up to 1,024 channels (C % 4 == 0) dx and those sums come from one pass
// (backward_vec_kernel). Kernels are templated on the activation storage type T (float or
// __nv_bfloat16); parameters, statistics and accumulation stay float.
#include <algorithm>
#include <type_traits>

#include "core/tensor.h"
#include "kernels/cuda/bf16.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/context.h"
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

// ---- the same two kernels with the row held in registers (C % 4 == 0, C <= 32 * 4 * kMaxVec) ----
// Lane l holds the row's 4-channel vectors l, l + 32, ...: the row is read from memory once, in
// 8-byte (bf16) or 16-byte (f32) accesses, instead of once per pass with 2- or 4-byte accesses
// (the scalar kernels above read x three times: mean, variance, output). Same statistics (two-pass
// variance), only the summation order of the warp differs.
constexpr int kMaxVec =
    8;  // 4-channel vectors per lane: rows up to 1,024 channels (load4: bf16.cuh)

/// Loads the lane's vectors of row `row` (C channels) into v (zeros past C); returns their sum.
template <typename T, int NV>
__device__ __forceinline__ float load_row(const T* row, int C, float (&v)[NV][4]) {
  float s = 0;
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const int c = 4 * (threadIdx.x + 32 * k);
    if (c < C) {
      load4(row + c, v[k]);
      s += (v[k][0] + v[k][1]) + (v[k][2] + v[k][3]);
    } else {
      v[k][0] = v[k][1] = v[k][2] = v[k][3] = 0.f;
    }
  }
  return s;
}

template <typename T, int NV>
__global__ void forward_vec_kernel(const T* x, const float* w, const float* b, T* y, float* mean,
                                   float* rstd, int64_t rows, int C, float eps) {
  const int64_t r = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.y;
  if (r >= rows) return;  // whole warp leaves together
  float v[NV][4];
  const float mu = warp_sum(load_row<T, NV>(x + r * C, C, v)) / static_cast<float>(C);
  float ss = 0;
#pragma unroll
  for (int k = 0; k < NV; ++k)
    if (4 * (threadIdx.x + 32 * k) < C)
#pragma unroll
      for (int e = 0; e < 4; ++e) ss += (v[k][e] - mu) * (v[k][e] - mu);
  const float rs = rsqrtf(warp_sum(ss) / static_cast<float>(C) + eps);
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const int c = 4 * (threadIdx.x + 32 * k);
    if (c >= C) continue;
    float wv[4], bv[4], o[4];
    load4(w + c, wv);
    load4(b + c, bv);
#pragma unroll
    for (int e = 0; e < 4; ++e) o[e] = (v[k][e] - mu) * rs * wv[e] + bv[e];
    store4(y + r * C + c, o);
  }
  if (threadIdx.x == 0) {
    mean[r] = mu;
    rstd[r] = rs;
  }
}

// dx and the parameter gradients' partial sums in one pass over x and dy (the separate
// backward_dwdb_partial below reads both again, 32 channels per warp access). A block's warps take
// rows blockIdx.x * 8 + warp, then + gridDim.x * 8, ... (a fixed assignment, so the sums are the
// same run to run); each lane keeps dy * xhat and dy of its channels in registers; the block then
// adds its 8 warps' sums in a fixed order through shared memory (8 x C floats, dynamic) and writes
// row blockIdx.x of partial_w / partial_b (gridDim.x, C). dx may be null (no input gradient), and
// so may partial_w and partial_b together (no parameter gradient: dx alone).
template <typename T, int NV>
__global__ void backward_vec_kernel(const T* x, const float* w, const float* mean,
                                    const float* rstd, const T* dy, T* dx, float* partial_w,
                                    float* partial_b, int64_t rows, int C) {
  extern __shared__ float warp_sums[];  // [kRowsPerBlock][C]
  float wv[NV][4], aw[NV][4], ab[NV][4];
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const int c = 4 * (threadIdx.x + 32 * k);
#pragma unroll
    for (int e = 0; e < 4; ++e) wv[k][e] = aw[k][e] = ab[k][e] = 0.f;
    if (c < C) load4(w + c, wv[k]);
  }
  const int64_t step = int64_t(gridDim.x) * kRowsPerBlock;
  for (int64_t r = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.y; r < rows; r += step) {
    const float mu = mean[r], rs = rstd[r];
    float xv[NV][4], g[NV][4];
    load_row<T, NV>(x + r * C, C, xv);  // becomes xhat below
    load_row<T, NV>(dy + r * C, C, g);  // becomes dy * w below
    float sum_g = 0, sum_gx = 0;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      if (4 * (threadIdx.x + 32 * k) >= C) continue;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        xv[k][e] = (xv[k][e] - mu) * rs;
        aw[k][e] += g[k][e] * xv[k][e];
        ab[k][e] += g[k][e];
        g[k][e] *= wv[k][e];
        sum_g += g[k][e];
        sum_gx += g[k][e] * xv[k][e];
      }
    }
    const float mg = warp_sum(sum_g) / static_cast<float>(C);
    const float mgx = warp_sum(sum_gx) / static_cast<float>(C);
    if (!dx) continue;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int c = 4 * (threadIdx.x + 32 * k);
      if (c >= C) continue;
      float o[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) o[e] = rs * (g[k][e] - mg - xv[k][e] * mgx);
      store4(dx + r * C + c, o);
    }
  }
  if (!partial_w) return;                 // the same for every thread of the block
  for (int pass = 0; pass < 2; ++pass) {  // dweight's sums, then dbias's
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int c = 4 * (threadIdx.x + 32 * k);
      if (c >= C) continue;
#pragma unroll
      for (int e = 0; e < 4; ++e)
        warp_sums[threadIdx.y * C + c + e] = pass == 0 ? aw[k][e] : ab[k][e];
    }
    __syncthreads();
    float* out = (pass == 0 ? partial_w : partial_b) + int64_t(blockIdx.x) * C;
    for (int c = threadIdx.y * 32 + threadIdx.x; c < C; c += 32 * kRowsPerBlock) {
      float t = 0;
      for (int j = 0; j < kRowsPerBlock; ++j) t += warp_sums[j * C + c];
      out[c] = t;
    }
    __syncthreads();
  }
}

/// Calls f(integral_constant<int, NV>) with the fewest vectors per lane that hold C channels, and
/// returns true; false (nothing called) when the row does not fit the vector kernels.
template <class F>
bool dispatch_vec(int64_t C, bool aligned, F&& f) {
  if (!aligned || C % 4 != 0 || C > 32 * 4 * kMaxVec) return false;
  const int64_t nv = (C / 4 + 31) / 32;
  if (nv <= 1) f(std::integral_constant<int, 1>{});
  else if (nv <= 2) f(std::integral_constant<int, 2>{});
  else if (nv <= 4) f(std::integral_constant<int, 4>{});
  else f(std::integral_constant<int, kMaxVec>{});
  return true;
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
  const bool aligned = aligned16(x) && aligned16(y) && aligned16(weight) && aligned16(bias);
  if (dispatch_vec(C, aligned, [&](auto nv) {
        forward_vec_kernel<device_t<T>, decltype(nv)::value>
            <<<row_blocks(rows), dim3(32, kRowsPerBlock), 0, hg::cuda::stream()>>>(
                dev(x), weight, bias, dev(y), mean, rstd, rows, int(C), eps);
      })) {
    HG_CUDA_LAUNCH_CHECK();
    return;
  }
  forward_kernel<<<row_blocks(rows), dim3(32, kRowsPerBlock), 0, hg::cuda::stream()>>>(
      dev(x), weight, bias, dev(y), mean, rstd, rows, C, eps);
  HG_CUDA_LAUNCH_CHECK();
}

template <typename T>
void layernorm_backward(const T* x, const float* weight, const float* mean, const float* rstd,
                        const T* dy, T* dx, float* dweight, float* dbias, int64_t rows, int64_t C) {
  const bool aligned = aligned16(x) && aligned16(dy) && (!dx || aligned16(dx)) && aligned16(weight);
  if (rows == 0 || (!dx && !dweight && !dbias)) return;
  const bool sums = dweight || dbias;
  // One pass for dx and the parameter gradients (backward_vec_kernel): as many row-strided blocks
  // as the GPU holds at once (one wave; the count depends on the device only, so the sums are the
  // same run to run), their (P, C) partial sums added by sum_rows.
  const size_t smem = sums ? sizeof(float) * kRowsPerBlock * size_t(C) : 0;
  Tensor ws;
  int64_t P = 0;
  if (dispatch_vec(C, aligned, [&](auto nv) {
        const auto kernel = backward_vec_kernel<device_t<T>, decltype(nv)::value>;
        const int per_sm = hg::cuda::resident_blocks(reinterpret_cast<const void*>(kernel),
                                                     32 * kRowsPerBlock, smem);
        P = std::min<int64_t>(row_blocks(rows),
                              int64_t(std::max(per_sm, 1)) * hg::cuda::multiprocessor_count());
        float* pw = nullptr;
        if (sums) {
          ws = scratch_tensor({2, P, C});
          pw = ws.data<float>();
        }
        kernel<<<static_cast<unsigned>(P), dim3(32, kRowsPerBlock), smem, hg::cuda::stream()>>>(
            dev(x), weight, mean, rstd, dev(dy), dx ? dev(dx) : nullptr, pw,
            pw ? pw + P * C : nullptr, rows, int(C));
      })) {
    HG_CUDA_LAUNCH_CHECK();
    if (dweight) sum_rows(ws.data<float>(), P, C, dweight);
    if (dbias) sum_rows(ws.data<float>() + P * C, P, C, dbias);
    return;
  }
  // Rows the vector kernel does not take: one warp per row for dx, then a column pass for the sums.
  if (dx) {
    backward_dx_kernel<<<row_blocks(rows), dim3(32, kRowsPerBlock), 0, hg::cuda::stream()>>>(
        dev(x), weight, mean, rstd, dev(dy), dev(dx), rows, C);
    HG_CUDA_LAUNCH_CHECK();
  }
  if (!sums) return;
  const int64_t Pc = column_partial_chunks(rows), chunk = (rows + Pc - 1) / Pc;
  const Tensor cs = scratch_tensor({2, Pc, C});
  float* pw = cs.data<float>();
  float* pb = pw + Pc * C;
  dim3 grid(static_cast<unsigned>((C + 31) / 32), static_cast<unsigned>(Pc)), block(32, 8);
  backward_dwdb_partial<<<grid, block, 0, hg::cuda::stream()>>>(dev(x), mean, rstd, dev(dy), pw, pb,
                                                                rows, C, chunk);
  HG_CUDA_LAUNCH_CHECK();
  if (dweight) sum_rows(pw, Pc, C, dweight);
  if (dbias) sum_rows(pb, Pc, C, dbias);
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
