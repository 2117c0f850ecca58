// The host side of the fused WTConv2d's whole-plane path (its kernels: wtconv_plane.cuh;
// docs/fused-wtconv.md, sections 10 and 11): which shapes it takes, its forward and backward
// launches, over a whole layer (small maps, from wtconv_fused.cu) or as the split path's level
// tail (from wtconv_split.cu), and the backward's spare memory.
#include <algorithm>

#include "core/cuda_stream.h"
#include "kernels/cuda/wtconv_fused.cuh"
#include "kernels/cuda/wtconv_plane.cuh"

namespace hg::kernels::cuda::wtconv_detail {

// ---- the whole-plane path (wtconv_plane.cuh)
// ------------------------------------------------------

namespace {

/// Largest H * W the whole-plane kernels take: WTConvNeXt's 14 x 14 and 7 x 7 stages, and the
/// split path's level tails from the first LL band that small. At 28 x 28 the backward's planes do
/// not fit the shared memory, and a bf16 forward would leave room for one block per
/// multiprocessor.
constexpr int kPlaneMaxPixels = 256;

/// The K the whole-plane kernels are compiled for (plane_takes admits no other).
template <int KT>
constexpr bool plane_k = KT == 3 || KT == 5 || KT == 7;

/// The whole-plane forward kernel for g (a whole layer or a level tail), planes stored as S.
template <typename T, typename S, int KT>
auto plane_forward_fn(const PlaneGeom& g) {
  return g.base ? plane_forward_kernel<T, S, KT, true> : plane_forward_kernel<T, S, KT, false>;
}

/// Blocks resident on the whole device at once, per_sm a multiprocessor (at least 1).
inline int64_t device_resident(int per_sm) {
  return std::max(1, per_sm) * int64_t(hg::cuda::multiprocessor_count());
}

/// Resident blocks a multiprocessor of plane_forward_fn<T, S, KT>(g) (0: it does not fit).
template <typename T, typename S, int KT>
int plane_blocks_per_sm(const PlaneGeom& g) {
  const size_t smem = plane_fwd_layout<S>(g).bytes;
  if (smem > hg::cuda::max_dynamic_smem()) return 0;
  return hg::cuda::resident_blocks(reinterpret_cast<const void*>(plane_forward_fn<T, S, KT>(g)),
                                   32 * kPlaneWarps, smem);
}

}  // namespace

/// The geometry when the whole-plane kernels take the shape (stride 1, K = 3, 5 or 7, at least
/// one level, H * W within kPlaneMaxPixels, the planes within the device's shared memory); base:
/// a whole layer, else a level tail (H x W the grid of its LL band).
template <typename T>
bool plane_takes(int B, int H, int W, int K, int L, int stride, bool backward, bool base,
                 PlaneGeom* g) {
  if (stride != 1 || !(K == 3 || K == 5 || K == 7) || L < 1 || B > 65535 ||
      int64_t(H) * W > kPlaneMaxPixels)
    return false;
  *g = plane_geom(H, W, L, K, base);
  const size_t smem =
      backward ? plane_bwd_layout<T>(*g, /*x_global=*/false).bytes : plane_fwd_layout<T>(*g).bytes;
  return smem <= hg::cuda::max_dynamic_smem();
}

/// One whole-plane forward over x (B, H, W, C): a whole layer (g.base: wb, bias its folded base
/// filter and bias) or a level tail (x = ll_s); wl the folded level filters of the plane's first
/// level on.
template <typename T>
void plane_forward(const T* x, int B, int C, const PlaneGeom& g, const float* wb, const float* bias,
                   const T* wl, PlaneOut<T> out) {
  const int groups = (C + 31) / 32;
  dispatch_k(kWTConvKs, g.K, [&](auto kt) {
    constexpr int KT = decltype(kt)::value;
    if constexpr (plane_k<KT>) {
      // The planes in f32 (no widening on every shared load) unless T's fit more blocks a
      // multiprocessor: bf16 at 14 x 14 fits three instead of two (-8% a 384/14/3 step), while at
      // 7 x 7 registers allow three either way and bf16 planes were 7 us slower (768/7/2, B = 64;
      // seventeenth session).
      // Images per block: one where the filters are copied as they are stored (cp.async, S = T);
      // where they are converted (f32 planes for bf16 activations: a load and a conversion per
      // entry), as many as make one wave of resident blocks, so that a block converts them once.
      // Measured (twenty-second session, B = 64, bf16): 768/7/2 forward 42.1 -> 37.5 us with one
      // wave, but 384/14/3 (S = T) 54.7 -> 55.9 us: blocks that take their images in turn stay in
      // step, all staging or all at a barrier at once, where a second wave starts staggered.
      auto launch = [&](auto s_tag, int per_sm) {
        using S = decltype(s_tag);
        const auto kernel = plane_forward_fn<T, S, KT>(g);
        const int64_t resident = device_resident(per_sm);
        const int ipb =
            std::is_same_v<S, T>
                ? 1
                : int(std::max<int64_t>(1, (int64_t(B) * groups + resident - 1) / resident));
        hg::cuda::allow_max_dynamic_smem(reinterpret_cast<const void*>(kernel));
        kernel<<<dim3(unsigned(groups), unsigned((B + ipb - 1) / ipb)), 32 * kPlaneWarps,
                 plane_fwd_layout<S>(g).bytes, hg::cuda::stream()>>>(x, B, C, ipb, g, wb, bias, wl,
                                                                     out.y, out.rec, out.scale);
        HG_CUDA_LAUNCH_CHECK();
      };
      const int f32_blocks = plane_blocks_per_sm<T, float, KT>(g);
      const int t_blocks = plane_blocks_per_sm<T, T, KT>(g);
      if (std::is_same_v<T, float> || f32_blocks < t_blocks)
        launch(T{}, t_blocks);
      else
        launch(float{}, f32_blocks);
    }
  });
}

// ---- spare memory ----------------------------------------------------------------------------
// The backward's grad_x is written only by its last launch (the synthesis), so until then its
// memory can hold what a launch before reads and drops: the weight gradient's coefficients of x,
// the level tail's per-slice sums. That keeps those out of the backward's peak
// (docs/fused-wtconv.md, section 15).

namespace {

/// spare's first `bytes` bytes when spare (dense, or undefined: none) has that many and is 16-byte
/// aligned; else null.
void* spare_bytes(const Tensor& spare, size_t bytes) {
  if (!spare.defined() || !spare.is_contiguous() || spare.nbytes() < bytes ||
      !aligned16(spare.data_ptr()))
    return nullptr;
  return spare.data_ptr();
}

}  // namespace

/// A tensor of `shape` and storage T in spare's memory (spare of storage T) when it holds one
/// (spare_bytes); else a new workspace tensor.
template <typename T>
Tensor in_spare(const Tensor& spare, const Shape& shape) {
  const int64_t n = shape_numel(shape);
  if (spare.defined() && spare.dtype() == dtype_of_storage<T>() &&
      spare_bytes(spare, size_t(n) * sizeof(T)) != nullptr)
    return spare.reshape({-1}).slice(0, 0, n).reshape(shape);
  return workspace_of<T>(shape);
}

/// One whole-plane backward over (x, G) (B, H, W, C): plane_backward_kernel, then the
/// deterministic reduction of its per-slice sums into lp's level gradients (lp from the plane's
/// first level on) and, for a whole layer (g.base), into base's. wb, wl: the flipped folded
/// filters; gout as plane_backward_kernel's gx. The per-slice sums go into `spare`'s memory when
/// it holds them (a tensor nobody reads or writes until the reduction is done; not gout's), else
/// into a new workspace tensor.
template <typename T>
void plane_backward(const T* x, const T* G, int B, int C, const PlaneGeom& g, const float* wb,
                    const T* wl, PlaneOut<T> gout, const LevelParams& lp,
                    const PlaneBaseGrads& base, const Tensor& spare) {
  const int L = g.L, KK = g.K * g.K, groups = (C + 31) / 32, planes = g.base + 4 * L;
  dispatch_k(kWTConvKs, g.K, [&](auto kt) {
    constexpr int KT = decltype(kt)::value;
    if constexpr (plane_k<KT>) {
      // x's level-0 plane staged, unless reading it from global memory lets more blocks fit a
      // multiprocessor (f32 at 14 x 14: two instead of one; bf16 fits three either way)
      const auto pick = [&](auto x_global) {
        constexpr bool kXG = decltype(x_global)::value;
        return g.base ? plane_backward_kernel<T, KT, true, kXG>
                      : plane_backward_kernel<T, KT, false, kXG>;
      };
      const size_t smem_s = plane_bwd_layout<T>(g, false).bytes;
      const size_t smem_g = plane_bwd_layout<T>(g, true).bytes;
      const auto kernel_s = pick(std::false_type{}), kernel_g = pick(std::true_type{});
      // resident_blocks also opts a kernel in to more than 48 KB of shared memory
      const int per_sm_s = hg::cuda::resident_blocks(reinterpret_cast<const void*>(kernel_s),
                                                     32 * kPlaneWarps, smem_s);
      const int per_sm_g = hg::cuda::resident_blocks(reinterpret_cast<const void*>(kernel_g),
                                                     32 * kPlaneWarps, smem_g);  // smem_g <= smem_s
      const bool x_global = per_sm_g > per_sm_s;
      const auto kernel = x_global ? kernel_g : kernel_s;
      const size_t smem = x_global ? smem_g : smem_s;
      const int per_sm = x_global ? per_sm_g : per_sm_s;
      // Images per block: enough blocks for about two waves of resident blocks (one wave of
      // blocks taking several images each was slower, 112 -> 118 us at 384/14/3 bf16, B = 64,
      // twenty-second session: their phases stay in step; two images a block at B = 128, by
      // rounding up, left WTConvNeXt-T's step where it was, 25.37 against 25.38 ms); fewer slices
      // keep the weight-gradient partials (slices, NE, C) small. Fixed for a device and shape, so
      // the summation order (and the result) is the same run to run.
      const int64_t resident = device_resident(per_sm);
      const int ipb = int(std::max<int64_t>(1, int64_t(B) * groups / (2 * resident)));
      const int slices = (B + ipb - 1) / ipb;
      const Shape ps{slices, planes * KK + g.base, C};
      float* sums = static_cast<float*>(spare_bytes(spare, shape_numel(ps) * sizeof(float)));
      Tensor partial;  // only when spare does not hold the sums
      if (sums == nullptr) {
        partial = workspace(ps);
        sums = partial.data<float>();
      }
      kernel<<<dim3(unsigned(groups), unsigned(slices)), 32 * kPlaneWarps, smem,
               hg::cuda::stream()>>>(x, G, B, C, ipb, g, wb, wl, sums, gout.y, gout.rec,
                                     gout.scale);
      HG_CUDA_LAUNCH_CHECK();
      const auto reduce = plane_wgrad_reduce_kernel<KT>;
      hg::cuda::allow_max_dynamic_smem(reinterpret_cast<const void*>(reduce));
      reduce<<<dim3(unsigned(planes), unsigned(groups)), dim3(32, kPlaneWarps),
               plane_reduce_smem<KT>(), hg::cuda::stream()>>>(
          sums, slices, C, L, g.base, base.bw, base.bb, base.bs, base.gbw, base.gbb, base.gbs, lp);
      HG_CUDA_LAUNCH_CHECK();
    }
  });
}

template <typename T>
bool try_plane_forward(const Tensor& xc, const WTConvWeights& w, int stride, int K,
                       const Tensor& y) {
  const int B = int(xc.size(0)), H = int(xc.size(1)), W = int(xc.size(2)), C = int(xc.size(3));
  PlaneGeom g;
  if (!plane_takes<T>(B, H, W, K, w.levels(), stride, /*backward=*/false, /*base=*/true, &g))
    return false;
  const Folded f = fold<T>(w, C, K, /*backward=*/false, /*levels=*/false, /*plane=*/true);
  plane_forward<T>(typed<T>(xc), B, C, g, f.base_w.data<float>(), f.base_b.data<float>(),
                   typed<T>(f.plane), PlaneOut<T>{typed<T>(y), nullptr, 1.f});
  return true;
}

template <typename T>
bool try_plane_backward(const Tensor& xc, const Tensor& G, const WTConvWeights& w, int stride,
                        int K, const Tensor& gx, WTConvGrads& g) {
  const int B = int(xc.size(0)), H = int(xc.size(1)), W = int(xc.size(2)), C = int(xc.size(3));
  PlaneGeom pg;
  if (!plane_takes<T>(B, H, W, K, w.levels(), stride, /*backward=*/true, /*base=*/true, &pg))
    return false;
  const Folded f = fold<T>(w, C, K, /*backward=*/true, /*levels=*/false, /*plane=*/true);
  g.base_weight = Tensor::empty(w.base_weight.shape(), DType::f32, Device::cuda);
  g.base_bias = Tensor::empty(w.base_bias.shape(), DType::f32, Device::cuda);
  g.base_scale = Tensor::empty(w.base_scale.shape(), DType::f32, Device::cuda);
  const LevelParams lp = level_params(w, &g);
  const PlaneBaseGrads base{w.base_weight.data<float>(), w.base_bias.data<float>(),
                            w.base_scale.data<float>(),  g.base_weight.data<float>(),
                            g.base_bias.data<float>(),   g.base_scale.data<float>()};
  plane_backward<T>(typed<T>(xc), typed<T>(G), B, C, pg, f.base_w.data<float>(), typed<T>(f.plane),
                    PlaneOut<T>{gx.defined() ? typed<T>(gx) : nullptr, nullptr, 1.f}, lp, base);
  if (gx.defined()) g.x = gx;
  return true;
}

#define HG_INSTANTIATE(T)                                                                          \
  template bool plane_takes<T>(int, int, int, int, int, int, bool, bool, PlaneGeom*);              \
  template void plane_forward<T>(const T*, int, int, const PlaneGeom&, const float*, const float*, \
                                 const T*, PlaneOut<T>);                                           \
  template Tensor in_spare<T>(const Tensor&, const Shape&);                                        \
  template void plane_backward<T>(const T*, const T*, int, int, const PlaneGeom&, const float*,    \
                                  const T*, PlaneOut<T>, const LevelParams&,                       \
                                  const PlaneBaseGrads&, const Tensor&);                           \
  template bool try_plane_forward<T>(const Tensor&, const WTConvWeights&, int, int,                \
                                     const Tensor&);                                               \
  template bool try_plane_backward<T>(const Tensor&, const Tensor&, const WTConvWeights&, int,     \
                                      int, const Tensor&, WTConvGrads&);
HG_INSTANTIATE(float)
HG_INSTANTIATE(__nv_bfloat16)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cuda::wtconv_detail
