// Fused WTConv2d on the GPU (Aflalo et al. 2026's three transformations, our own kernels), and the
// public kernels::cuda::wtconv_forward / wtconv_backward that dispatch on WTConvMode.
//
// Small maps (wtconv_plane_path in kernels/wtconv.h) run the whole-plane kernels of
// wtconv_plane.cuh (docs/fused-wtconv.md, section 10); the rest is the split path, whose levels
// from the first LL band of at most 256 pixels run as a level tail on the same kernels
// (wtconv_tail_level; section 11).
// Forward, per call:  fold (scales into weights)  ->  for each split level l: the Haar
// coefficients of ll_l and their depthwise conv as 4C channels, t_l (B, h_{l+1}, w_{l+1}, 4, C),
// plus the LL ll_{l+1} that feeds level l+1, in one launch (haar_conv_kernel,
// wtconv_haar_conv.cuh: the coefficients formed in shared memory, never written; where it does not
// take the level, a Haar pass writes them once as sub-band planes and the depthwise conv of
// kernels/depthwise_conv.h runs on them)  ->  the level tail from the first small LL band, if any
// ->  synth (base conv + bias of x, plus every level's t_l at (i >> (l+1), j >> (l+1)) with parity
// signs and 1/2 per level: one pass, no reconstruction stored).
// Backward: gx is the same synthesis run on G = dL/dy with flipped folded weights over the
// transposed level convs of H(G's LL pyramid) (the transpose of a "same" correlation is the
// correlation with the flipped kernel; the transpose of the Haar synthesis cascade is the analysis
// cascade, and vice versa); the weight gradients are the deterministic depthwise weight gradients
// of H(x's LL pyramid) against H(G's), recomputed level by level (1/4 + 1/16 + ... of x) instead of
// saved by the forward; with grad_x, where the Haar kernels take a level, haar_conv_kernel and
// haar_wgrad_kernel form G's and x's coefficients in shared memory and store neither. See
// docs/fused-wtconv.md (sections 10-12 and 16-22: the current kernels). Storage: x, G, y, grad_x
// are T = float or __nv_bfloat16 (kernels/wtconv.h), and so are the coefficient planes of x and G
// (stored or staged), the level outputs t_l, the level gradients and the LL pyramids (each kernel
// accumulates in f32 and rounds once on store); the folded weights, R (levels_synth_kernel), the
// weight-gradient sums and every parameter gradient are f32.
//
// This file: the checks, the entry points (fused_forward, fused_backward: a pass's steps in order)
// and the public functions. The steps: wtconv_fold.cu (the folded weights, the base path's
// gradients), wtconv_synthesis.cu, wtconv_plane_host.cu (the whole-plane path) and wtconv_split.cu
// (the split levels and the level tail), declared in wtconv_fused.cuh.
#include <limits>
#include <string>

#include "core/cuda_stream.h"
#include "kernels/cuda/wtconv_fused.cuh"
#include "kernels/wtconv_check.h"

namespace hg::kernels::cuda {
namespace wtconv_detail {

Tensor workspace(const Shape& shape) { return scratch_tensor(shape); }

int check_inputs(const char* op, const Tensor& x, const WTConvWeights& w, int stride) {
  const int K = wtconv_check_shapes(op, x, w, stride);  // the shapes, as the CPU checks them
  HG_CHECK(x.device() == Device::cuda && (x.dtype() == DType::f32 || x.dtype() == DType::bf16), op,
           ": x must be f32 or bf16 on cuda, got ", x.describe());
  HG_CHECK(K <= kMaxK, op, ": K must be <= ", kMaxK, " on cuda, got ", K);
  HG_CHECK(w.levels() <= kMaxLevels, op, ": at most ", kMaxLevels, " levels on cuda, got ",
           w.levels());
  // the kernels index B, H, W and 4C as int (their element offsets are 64-bit)
  constexpr int64_t kInt = std::numeric_limits<int>::max();
  HG_CHECK(x.size(0) <= kInt && x.size(1) <= kInt && x.size(2) <= kInt && 4 * x.size(3) <= kInt, op,
           ": x ", shape_str(x.shape()),
           " is larger than the kernels index (B, H, W and 4C at most 2^31 - 1)");
  // the parameters are f32 whatever x is (mixed precision: f32 master weights, read in f32)
  auto on_gpu = [&](const Tensor& t, const std::string& name) {
    HG_CHECK(t.device() == Device::cuda && t.dtype() == DType::f32 && t.is_contiguous(), op, ": ",
             name, " must be a contiguous f32 cuda tensor (for x ", x.describe(), "), got ",
             t.describe());
  };
  on_gpu(w.base_weight, "base_weight");
  on_gpu(w.base_bias, "base_bias");
  on_gpu(w.base_scale, "base_scale");
  for (int l = 0; l < w.levels(); ++l) {
    on_gpu(w.wavelet_weight[l], str("wavelet_weight[", l, "]"));
    on_gpu(w.wavelet_scale[l], str("wavelet_scale[", l, "]"));
  }
  return K;
}

void check_grad_y(const char* op, const Tensor& x, const Tensor& grad_y, int stride) {
  wtconv_check_grad_y(op, x, grad_y, stride);
  HG_CHECK(grad_y.device() == Device::cuda && grad_y.dtype() == x.dtype(), op, ": grad_y must be ",
           dtype_name(x.dtype()), " on cuda like x ", x.describe(), ", got ", grad_y.describe());
}

Tensor output_tensor(const char* op, const char* what, const Shape& shape, DType dtype,
                     const Tensor& out) {
  if (!out.defined()) return Tensor::empty(shape, dtype, Device::cuda);
  HG_CHECK(out.shape() == shape && out.dtype() == dtype && out.device() == Device::cuda &&
               out.is_contiguous(),
           op, ": ", what, " must be a dense ", dtype_name(dtype), " cuda tensor of shape ",
           shape_str(shape), ", got ", out.describe());
  return out;
}

namespace {

template <typename T>
void fused_forward_t(const Tensor& xc, const WTConvWeights& w, int stride, int K, const Tensor& y) {
  const int B = int(xc.size(0)), H = int(xc.size(1)), W = int(xc.size(2)), C = int(xc.size(3));
  const int Ho = (H + stride - 1) / stride, Wo = (W + stride - 1) / stride, L = w.levels();
  if (try_plane_forward<T>(xc, w, stride, K, y)) return;
  const WTConvLevels d(H, W, L);
  PlaneGeom tg{};
  const int s = stride == 1 ? tail_level<T>(typed<T>(xc), typed<T>(y), B, C, K, d, L,
                                            /*backward=*/false, &tg)
                            : L;
  const Folded f = fold<T>(w, C, K, /*backward=*/false, /*levels=*/s > 0, /*plane=*/s < L);
  std::vector<Tensor> t;
  LevelTail tail;
  const Tensor r = analysis_convs_split(typed<T>(xc), B, C, K, d, f, L, s, tg, t, &tail);
  synthesis(typed<T>(xc), B, H, W, C, Ho, Wo, stride, K, f, t, tail, typed<T>(y));
}

Tensor fused_forward(const Tensor& x, const WTConvWeights& w, int stride, const Tensor& out) {
  const char* op = "wtconv_forward (cuda, fused)";
  const int K = check_inputs(op, x, w, stride);
  const int64_t Ho = (x.size(1) + stride - 1) / stride, Wo = (x.size(2) + stride - 1) / stride;
  const Tensor y = output_tensor(op, "out", {x.size(0), Ho, Wo, x.size(3)}, x.dtype(), out);
  const Tensor xc = x.contiguous();
  HG_DISPATCH_CUDA(x.dtype(), op,
                   [&] { fused_forward_t<device_t<scalar_t>>(xc, w, stride, K, y); });
  return y;
}

template <typename T>
WTConvGrads fused_backward_t(const Tensor& xc, const WTConvWeights& w, const Tensor& grad_y,
                             int stride, int K, const Tensor& gx) {
  const int B = int(xc.size(0)), H = int(xc.size(1)), W = int(xc.size(2)), C = int(xc.size(3));
  const int Ho = (H + stride - 1) / stride, Wo = (W + stride - 1) / stride, L = w.levels();
  Tensor G = grad_y.contiguous();
  if (stride > 1) {
    Tensor up = scratch_tensor({B, H, W, C}, G.dtype());
    upsample_kernel<T><<<blocks_for(up.numel()), 256, 0, hg::cuda::stream()>>>(
        typed<T>(G), B, H, W, C, Ho, Wo, stride, typed<T>(up));
    HG_CUDA_LAUNCH_CHECK();
    G = up;
  }
  WTConvGrads g;
  if (try_plane_backward<T>(xc, G, w, stride, K, gx, g)) return g;
  const WTConvLevels d(H, W, L);
  PlaneGeom tg{};
  const int s = tail_level<T>(typed<T>(G), gx.defined() ? typed<T>(gx) : typed<T>(G), B, C, K, d, L,
                              /*backward=*/true, &tg);
  // one fold for the whole backward: the base filter (grad_x's synthesis), the level filters
  // of grad_x's level gradients (only with grad_x) and the tail's
  const Folded f =
      fold<T>(w, C, K, /*backward=*/true, /*levels=*/s > 0 && gx.defined(), /*plane=*/s < L);
  std::vector<Tensor> gt;
  LevelTail tail;
  SplitLevelSums ls;
  const Tensor r = level_grads_split(typed<T>(xc), typed<T>(G), B, C, K, d, w, f, s, tg,
                                     gx.defined() ? &gt : nullptr, g, &tail, gx, &ls);
  if (gx.defined()) synthesis(typed<T>(G), B, H, W, C, H, W, 1, K, f, gt, tail, typed<T>(gx));
  base_grads<T>(xc, G, B, H, W, C, K, w, g, ls);
  if (gx.defined()) g.x = gx;
  return g;
}

WTConvGrads fused_backward(const Tensor& x, const WTConvWeights& w, const Tensor& grad_y,
                           int stride, bool need_grad_x, const Tensor& grad_x_out) {
  const char* op = "wtconv_backward (cuda, fused)";
  const int K = check_inputs(op, x, w, stride);
  check_grad_y(op, x, grad_y, stride);
  const Tensor gx =
      need_grad_x ? output_tensor(op, "grad_x_out", x.shape(), x.dtype(), grad_x_out) : Tensor();
  const Tensor xc = x.contiguous();
  WTConvGrads g;
  HG_DISPATCH_CUDA(x.dtype(), op,
                   [&] { g = fused_backward_t<device_t<scalar_t>>(xc, w, grad_y, stride, K, gx); });
  return g;
}

/// The checks of the public path queries (wtconv_plane_path, wtconv_tail_level,
/// wtconv_haar_conv_from), named `fn` in their messages.
void check_path_query(const char* fn, const Shape& x, int levels, DType dtype) {
  HG_CHECK(x.size() == 4, fn, ": x must be (B, H, W, C), got ", shape_str(x));
  HG_CHECK(dtype == DType::f32 || dtype == DType::bf16, fn, ": f32 or bf16, got ",
           dtype_name(dtype));
  HG_CHECK(levels >= 0 && levels <= kMaxLevels, fn, ": 0 to ", kMaxLevels, " levels on cuda, got ",
           levels);
}

/// wtconv_haar_conv_from for storage T.
template <typename T>
int haar_conv_from(const Shape& x, int K, int levels) {
  const T* aligned = nullptr;  // stands for dense, 16-byte aligned tensors
  const int B = int(x[0]), C = int(x[3]);
  const WTConvLevels d(int(x[1]), int(x[2]), levels);
  // grids shrink level by level: the first level that fits, and every level after it
  for (int l = 0; l < levels; ++l)
    if (haar_conv_takes(aligned, B, C, K, grid_of(d, l + 1)) &&
        haar_wgrad_takes(aligned, aligned, B, C, K, grid_of(d, l + 1)))
      return l;
  return levels;
}

}  // namespace
}  // namespace wtconv_detail

bool wtconv_plane_path(const Shape& x, int K, int levels, int stride, DType dtype, bool backward) {
  wtconv_detail::check_path_query("wtconv_plane_path", x, levels, dtype);
  const int B = int(x[0]), H = int(x[1]), W = int(x[2]);
  wtconv_detail::PlaneGeom g;
  return dtype == DType::bf16
             ? wtconv_detail::plane_takes<__nv_bfloat16>(B, H, W, K, levels, stride, backward, true,
                                                         &g)
             : wtconv_detail::plane_takes<float>(B, H, W, K, levels, stride, backward, true, &g);
}

int wtconv_tail_level(const Shape& x, int K, int levels, DType dtype, bool backward) {
  wtconv_detail::check_path_query("wtconv_tail_level", x, levels, dtype);
  const WTConvLevels d(int(x[1]), int(x[2]), levels);
  wtconv_detail::PlaneGeom g;
  if (dtype == DType::f32) {
    const float* aligned = nullptr;  // stands for dense, 16-byte aligned tensors
    return wtconv_detail::tail_level(aligned, aligned, int(x[0]), int(x[3]), K, d, levels, backward,
                                     &g);
  }
  const __nv_bfloat16* aligned = nullptr;
  return wtconv_detail::tail_level(aligned, aligned, int(x[0]), int(x[3]), K, d, levels, backward,
                                   &g);
}

int wtconv_haar_conv_from(const Shape& x, int K, int levels, DType dtype) {
  wtconv_detail::check_path_query("wtconv_haar_conv_from", x, levels, dtype);
  return dtype == DType::bf16 ? wtconv_detail::haar_conv_from<__nv_bfloat16>(x, K, levels)
                              : wtconv_detail::haar_conv_from<float>(x, K, levels);
}

Tensor wtconv_forward(const Tensor& x, const WTConvWeights& w, int stride, WTConvMode mode,
                      const Tensor& out, WTConvSaved* saved) {
  if (mode == WTConvMode::reference)
    return wtconv_detail::unfused_forward(x, w, stride, out, saved);
  // (refuses a `saved`: the fused mode keeps none)
  wtconv_check_saved("wtconv_forward (cuda, fused)", x, w.levels(), mode, saved, false, DType::f32);
  return wtconv_detail::fused_forward(x, w, stride, out);
}

WTConvGrads wtconv_backward(const Tensor& x, const WTConvWeights& w, const Tensor& grad_y,
                            int stride, bool need_grad_x, WTConvMode mode, const Tensor& grad_x_out,
                            const WTConvSaved* saved) {
  if (mode == WTConvMode::reference)
    return wtconv_detail::unfused_backward(x, w, grad_y, stride, need_grad_x, grad_x_out, saved);
  wtconv_check_saved("wtconv_backward (cuda, fused)", x, w.levels(), mode, saved, false,
                     DType::f32);
  return wtconv_detail::fused_backward(x, w, grad_y, stride, need_grad_x, grad_x_out);
}

}  // namespace hg::kernels::cuda
