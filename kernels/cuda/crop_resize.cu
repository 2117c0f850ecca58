// CUDA batched crop + resize + flip + normalise (kernels/crop_resize.h), two kernels: the weight
// table (each output row's and column's taps, in double, once per batch), then one thread per
// output pixel, all channels, a grid-stride loop over the S*S pixels of item blockIdx.y, float
// multiply-adds with the table's weights. Computing the taps per pixel instead (up to 2 * 8 double
// filter evaluations with a division each, times the taps of the other axis) made the
// kernel 1.3-1.6 ms per batch of 128 at 224 px on the H200, 3-4% of a bf16 WTConvNeXt-T step.
#include <cuda_bf16.h>

#include "core/cuda_stream.h"
#include "kernels/crop_resize.h"
#include "kernels/cuda/bf16.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.h"

namespace hg::kernels::cuda {
namespace {

// The pixels [lo, hi) one output pixel reads along an axis, its filter's center and widening, and
// the sum of its weights (0 when it reads one pixel unweighted: nearest, or a center off the image).
struct Axis {
  int lo, hi, interp;
  double center, stretch, sum;
};

// PIL's filters (data/transforms.cpp): triangle (support 1) and Keys' cubic with a = -0.5 (support 2).
__device__ __forceinline__ double filter(int interp, double t) {
  t = fabs(t);
  if (interp != 2) return fmax(0.0, 1.0 - t);
  constexpr double a = -0.5;
  if (t < 1.0) return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
  if (t < 2.0) return (((t - 5.0) * t + 8.0) * t - 4.0) * a;
  return 0.0;
}

__device__ __forceinline__ double tap(const Axis& a, int j) {
  return filter(a.interp, (j + 0.5 - a.center) / a.stretch);
}

__device__ Axis axis_taps(double start, double len, int in_len, int out_len, int i, int interp) {
  const double scale = len / out_len;
  Axis a;
  a.interp = interp;
  a.stretch = scale > 1.0 ? scale : 1.0;
  a.center = start + (i + 0.5) * scale;
  const double support = (interp == 2 ? 2.0 : 1.0) * a.stretch;
  a.lo = max(0, static_cast<int>(floor(a.center - support)));
  a.hi = interp == 0 ? a.lo : min(in_len, static_cast<int>(ceil(a.center + support)));
  a.sum = 0;
  for (int j = a.lo; j < a.hi; ++j) a.sum += tap(a, j);
  if (a.sum == 0) {  // nearest, or a center outside the image (not for boxes inside it): one pixel
    a.lo = min(max(static_cast<int>(floor(a.center)), 0), in_len - 1);
    a.hi = a.lo + 1;
  }
  return a;
}

// The normalised weight of pixel j, rounded to float as the CPU reference stores it.
__device__ __forceinline__ float weight(const Axis& a, int j) {
  return a.sum != 0 ? static_cast<float>(tap(a, j) / a.sum) : 1.f;
}

// One axis of the weight table: for item n, axis a (0: x over columns, 1: y over rows) and output
// index o, taps[((n * 2 + a) * S + o)] = (lo, count) and weights[... * T + k] = the normalised
// weight of input pixel lo + k. One thread per (n, a, o): the double arithmetic runs 2 * S times
// per item instead of once per tap of every output pixel.
__global__ void axis_table_kernel(const CropResizeItem* __restrict__ items, int S, int T,
                                  int2* __restrict__ taps, float* __restrict__ weights) {
  const int o = blockIdx.x * blockDim.x + threadIdx.x, n = blockIdx.y, a = blockIdx.z;
  if (o >= S) return;
  const CropResizeItem it = items[n];
  const Axis ax = a == 0 ? axis_taps(it.box_x, it.box_w, it.width, S, o, it.interp)
                         : axis_taps(it.box_y, it.box_h, it.height, S, o, it.interp);
  const int64_t row = (int64_t(n) * 2 + a) * S + o;
  // a padded row or column reads no pixel: its sum stays 0, the zero pixel
  const bool padded = a == 0 ? (o < it.pad_left || o >= S - it.pad_right)
                             : (o < it.pad_top || o >= S - it.pad_bottom);
  // crop_resize_max_taps bounds the count: min() is a guard only
  const int count = padded ? 0 : min(ax.hi - ax.lo, T);
  taps[row] = make_int2(ax.lo, count);
  for (int k = 0; k < count; ++k) weights[row * T + k] = weight(ax, ax.lo + k);
}

template <typename Out, int C>
__global__ void crop_resize_kernel(const uint8_t* __restrict__ pixels,
                                   const CropResizeItem* __restrict__ items, int S, int T,
                                   const int2* __restrict__ taps, const float* __restrict__ weights,
                                   ChannelAffine affine, Out* __restrict__ out) {
  const int n = blockIdx.y;
  const CropResizeItem it = items[n];
  const uint8_t* img = pixels + it.offset;
  Out* dst = out + static_cast<int64_t>(n) * S * S * C;
  const int64_t xrow0 = int64_t(n) * 2 * S, yrow0 = xrow0 + S;
  for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < S * S; p += gridDim.x * blockDim.x) {
    const int oy = p / S, ox = p % S;
    const int2 tx = taps[xrow0 + ox], ty = taps[yrow0 + oy];
    const float* wxs = weights + (xrow0 + ox) * T;
    const float* wys = weights + (yrow0 + oy) * T;
    // Vertical sums first, then the horizontal one: the CPU reference's order (data/transforms.cpp).
    float acc[C];
#pragma unroll
    for (int c = 0; c < C; ++c) acc[c] = 0.f;
    for (int kx = 0; kx < tx.y; ++kx) {
      const int x = tx.x + kx;
      float col[C];
#pragma unroll
      for (int c = 0; c < C; ++c) col[c] = 0.f;
      for (int ky = 0; ky < ty.y; ++ky) {
        const float wy = wys[ky];
        const uint8_t* px = img + (static_cast<int64_t>(ty.x + ky) * it.width + x) * C;
#pragma unroll
        for (int c = 0; c < C; ++c) col[c] += wy * static_cast<float>(px[c]);
      }
      const float wx = wxs[kx];
#pragma unroll
      for (int c = 0; c < C; ++c) acc[c] += wx * col[c];
    }
    Out* o = dst + (static_cast<int64_t>(oy) * S + (it.flip ? S - 1 - ox : ox)) * C;
#pragma unroll
    for (int c = 0; c < C; ++c) o[c] = from_f32<Out>(acc[c] * affine.gain[c] + affine.bias[c]);
  }
}

template <typename Out>
void launch(const uint8_t* pixels, const CropResizeItem* items, int64_t N, int64_t C, int64_t S,
            int64_t T, const ChannelAffine& affine, Out* out) {
  const int s = static_cast<int>(S), t = static_cast<int>(T);
  const Tensor table = scratch_tensor({N * 2 * S * (T + 2)});  // (lo, count) then T weights per row
  auto* taps = reinterpret_cast<int2*>(table.data_ptr());
  float* weights = static_cast<float*>(table.data_ptr()) + N * 2 * S * 2;
  axis_table_kernel<<<dim3(static_cast<unsigned>((S + 127) / 128), static_cast<unsigned>(N), 2),
                      128, 0, hg::cuda::stream()>>>(items, s, t, taps, weights);
  HG_CUDA_LAUNCH_CHECK();
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((S * S + 255) / 256, 1024)),
                  static_cast<unsigned>(N));
  switch (C) {
    case 1:
      crop_resize_kernel<Out, 1>
          <<<grid, 256, 0, hg::cuda::stream()>>>(pixels, items, s, t, taps, weights, affine, out);
      break;
    case 2:
      crop_resize_kernel<Out, 2>
          <<<grid, 256, 0, hg::cuda::stream()>>>(pixels, items, s, t, taps, weights, affine, out);
      break;
    case 3:
      crop_resize_kernel<Out, 3>
          <<<grid, 256, 0, hg::cuda::stream()>>>(pixels, items, s, t, taps, weights, affine, out);
      break;
    default:
      crop_resize_kernel<Out, 4>
          <<<grid, 256, 0, hg::cuda::stream()>>>(pixels, items, s, t, taps, weights, affine, out);
      break;
  }
  HG_CUDA_LAUNCH_CHECK();
}

}  // namespace

void crop_resize_normalize(const uint8_t* pixels, const CropResizeItem* items, int64_t N, int64_t C,
                           int64_t S, int64_t max_taps, const ChannelAffine& affine, void* out,
                           DType out_dtype) {
  HG_CHECK(C >= 1 && C <= 4, "crop_resize_normalize: C must be in 1..4, got ", C);
  HG_CHECK(S >= 1 && S <= 46340, "crop_resize_normalize: bad output side ", S);  // S*S fits an int
  HG_CHECK(N >= 0 && N <= 65535, "crop_resize_normalize: N must be in [0, 65535], got ", N);
  HG_CHECK(max_taps >= 1 && max_taps <= (int64_t(1) << 24),
           "crop_resize_normalize: max_taps must be in [1, 2^24], got ", max_taps);
  if (N == 0) return;
  if (out_dtype == DType::f32)
    launch(pixels, items, N, C, S, max_taps, affine, static_cast<float*>(out));
  else if (out_dtype == DType::bf16)
    launch(pixels, items, N, C, S, max_taps, affine, static_cast<__nv_bfloat16*>(out));
  else throw Error(str("crop_resize_normalize: out dtype must be f32 or bf16, got ", dtype_name(out_dtype)));
}

}  // namespace hg::kernels::cuda
