// CUDA batched crop + resize + flip + normalise (kernels/crop_resize.h). One thread per output pixel,
// all channels; a grid-stride loop over the S*S pixels of item blockIdx.y. The taps are recomputed per
// pixel (a handful of double operations): the kernel is bound by reading the uint8 crops.
#include <cuda_bf16.h>

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

template <typename Out, int C>
__global__ void crop_resize_kernel(const uint8_t* __restrict__ pixels, const CropResizeItem* __restrict__ items,
                                   int S, ChannelAffine affine, Out* __restrict__ out) {
  const CropResizeItem it = items[blockIdx.y];
  const uint8_t* img = pixels + it.offset;
  Out* dst = out + static_cast<int64_t>(blockIdx.y) * S * S * C;
  for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < S * S; p += gridDim.x * blockDim.x) {
    const int oy = p / S, ox = p % S;
    const Axis ax = axis_taps(it.box_x, it.box_w, it.width, S, ox, it.interp);
    const Axis ay = axis_taps(it.box_y, it.box_h, it.height, S, oy, it.interp);
    // Vertical sums first, then the horizontal one: the CPU reference's order (data/transforms.cpp).
    float acc[C];
#pragma unroll
    for (int c = 0; c < C; ++c) acc[c] = 0.f;
    for (int x = ax.lo; x < ax.hi; ++x) {
      const float wx = weight(ax, x);
      float col[C];
#pragma unroll
      for (int c = 0; c < C; ++c) col[c] = 0.f;
      for (int y = ay.lo; y < ay.hi; ++y) {
        const float wy = weight(ay, y);
        const uint8_t* px = img + (static_cast<int64_t>(y) * it.width + x) * C;
#pragma unroll
        for (int c = 0; c < C; ++c) col[c] += wy * static_cast<float>(px[c]);
      }
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
            const ChannelAffine& affine, Out* out) {
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((S * S + 255) / 256, 1024)), static_cast<unsigned>(N));
  const int s = static_cast<int>(S);
  switch (C) {
    case 1: crop_resize_kernel<Out, 1><<<grid, 256>>>(pixels, items, s, affine, out); break;
    case 2: crop_resize_kernel<Out, 2><<<grid, 256>>>(pixels, items, s, affine, out); break;
    case 3: crop_resize_kernel<Out, 3><<<grid, 256>>>(pixels, items, s, affine, out); break;
    default: crop_resize_kernel<Out, 4><<<grid, 256>>>(pixels, items, s, affine, out); break;
  }
  HG_CUDA_LAUNCH_CHECK();
}

}  // namespace

void crop_resize_normalize(const uint8_t* pixels, const CropResizeItem* items, int64_t N, int64_t C, int64_t S,
                           const ChannelAffine& affine, void* out, DType out_dtype) {
  HG_CHECK(C >= 1 && C <= 4, "crop_resize_normalize: C must be in 1..4, got ", C);
  HG_CHECK(S >= 1 && S <= 46340, "crop_resize_normalize: bad output side ", S);  // S*S fits an int
  HG_CHECK(N >= 0 && N <= 65535, "crop_resize_normalize: N must be in [0, 65535], got ", N);
  if (N == 0) return;
  if (out_dtype == DType::f32) launch(pixels, items, N, C, S, affine, static_cast<float*>(out));
  else if (out_dtype == DType::bf16) launch(pixels, items, N, C, S, affine, static_cast<__nv_bfloat16*>(out));
  else throw Error(str("crop_resize_normalize: out dtype must be f32 or bf16, got ", dtype_name(out_dtype)));
}

}  // namespace hg::kernels::cuda
