// Unfused WTConv2d on the GPU in the reference order of Finder et al. (docs/wtconv-operator.md,
// "Forward, reference order"): separate launches for Haar analysis, depthwise conv (the product's
// depthwise kernels, kernels/depthwise_conv.h, in f32), scaling, adding the coarser
// reconstruction, inverse Haar, and their adjoints, each writing its intermediate to device
// memory, as the PyTorch reference does. It exists so that the fused kernels can be compared
// with the reference inside one binary (correctness and the I/O / time / memory comparison of
// `haargrad bench-layer`). The backward reads the forward intermediates that PyTorch's autograd
// saves from the forward's WTConvSaved when it is given one (the layer's reference mode: they stay
// alive on the tape, counted as activations), else recomputes them, then runs the adjoint ops in
// order. bf16 (mixed precision): the kernels that read x or grad_y and write y or grad_x take
// the storage type T (float or __nv_bfloat16); every intermediate is f32, as the CPU reference
// computes them.
#include "core/cuda_stream.h"
#include "kernels/cuda/wtconv_common.cuh"
#include "kernels/depthwise_conv.h"
#include "kernels/wtconv_check.h"

namespace hg::kernels::cuda::wtconv_detail {
namespace {

// Haar analysis: in (B, hi, wi, C) read with channel stride `cs` (cs = 4 reads the LL band of a
// coefficient tensor in place) -> out (B, hp, wp, C, 4), zero padding at the bottom / right.
template <typename T>
__global__ void u_haar_kernel(const T* __restrict__ in, int cs, int B, int hi, int wi, int C,
                              int hp, int wp, float4* __restrict__ out) {
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= int64_t(B) * hp * wp * C) return;
  const int c = int(idx % C);
  int64_t rest = idx / C;
  const int q = int(rest % wp);
  rest /= wp;
  const int p = int(rest % hp), b = int(rest / hp);
  auto at = [&](int i, int j) {
    return (i < hi && j < wi) ? ld(in + (((int64_t(b) * hi + i) * wi + j) * C + c) * cs) : 0.f;
  };
  out[idx] = haar4(at(2 * p, 2 * q), at(2 * p, 2 * q + 1), at(2 * p + 1, 2 * q),
                   at(2 * p + 1, 2 * q + 1));
}

// Per-channel scaling: out[e] = in[e] * scale[e % Cc].
template <typename T>
__global__ void u_scale_kernel(const T* __restrict__ in, const float* __restrict__ scale,
                               int64_t n, int Cc, float* __restrict__ out) {
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx < n) out[idx] = ld(in + idx) * scale[idx % Cc];
}

// The final sum into the layer's output type: out[e] = a[e] + b[e] (b may be nullptr: out = a).
template <typename T>
__global__ void u_sum_kernel(const float* __restrict__ a, const float* __restrict__ b, int64_t n,
                             T* __restrict__ out) {
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx < n) st(out + idx, b ? a[idx] + b[idx] : a[idx]);
}

// out = t with the LL band plus rec: t, out (B, hp, wp, C, 4), rec (B, hp, wp, C).
__global__ void u_add_ll_kernel(const float4* __restrict__ t, const float* __restrict__ rec,
                                int64_t n, float4* __restrict__ out) {
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= n) return;
  float4 v = t[idx];
  v.x += rec[idx];
  out[idx] = v;
}

// Inverse Haar, cropped: in (B, hp, wp, C, 4) -> out (B, h, w, C), h <= 2 hp, w <= 2 wp.
__global__ void u_ihaar_kernel(const float4* __restrict__ in, int B, int h, int w, int C, int hp,
                               int wp, float* __restrict__ out) {
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= int64_t(B) * h * w * C) return;
  const int c = int(idx % C);
  int64_t rest = idx / C;
  const int j = int(rest % w);
  rest /= w;
  const int i = int(rest % h), b = int(rest / h);
  const float4 t = in[((int64_t(b) * hp + (i >> 1)) * wp + (j >> 1)) * C + c];
  out[idx] = 0.5f * unhaar_at(t, i & 1, j & 1);
}

// y = full[:, ::s, ::s] + rec[:, ::s, ::s]: in, rec (B, H, W, C) -> out (B, Ho, Wo, C); rec may
// be nullptr.
template <typename T>
__global__ void u_subsample_kernel(const float* __restrict__ in, const float* __restrict__ rec,
                                   int B, int H, int W, int C, int Ho, int Wo, int s,
                                   T* __restrict__ out) {
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= int64_t(B) * Ho * Wo * C) return;
  const int c = int(idx % C);
  int64_t rest = idx / C;
  const int j = int(rest % Wo);
  rest /= Wo;
  const int i = int(rest % Ho), b = int(rest / Ho);
  const int64_t src = ((int64_t(b) * H + i * s) * W + j * s) * C + c;
  st(out + idx, rec ? in[src] + rec[src] : in[src]);
}

// ---- host wrappers: each op allocates and writes its own intermediate (f32), counted in `cat`:
// workspace (dropped within the call), or activations for what a forward keeps for its backward
// (WTConvSaved: held on the tape, as PyTorch's autograd holds it) --------------------------------
Tensor intermediate(const Shape& shape, Category cat) {
  memory::CategoryScope scope(cat);
  return Tensor::empty(shape, DType::f32, Device::cuda);
}
template <typename T>
Tensor haar(const T* in, int cs, int B, int hi, int wi, int C, Category cat = Category::workspace) {
  const int hp = int(wtconv_level_size(hi)), wp = int(wtconv_level_size(wi));
  Tensor out = intermediate({B, hp, wp, C, 4}, cat);
  u_haar_kernel<<<blocks_for(int64_t(B) * hp * wp * C), 256, 0, hg::cuda::stream()>>>(
      in, cs, B, hi, wi, C, hp, wp, reinterpret_cast<float4*>(out.data<float>()));
  HG_CUDA_LAUNCH_CHECK();
  return out;
}
/// The depthwise "same" conv (stride 1, K x K) over f32 `in` (B, h, w, Cc), as the product's
/// depthwise kernels (kernels/depthwise_conv.h) take it.
Conv2dShape dw_shape(const Tensor& in, int K) {
  const int64_t Cc = in.size(3);
  return make_conv2d_shape(in.size(0), in.size(1), in.size(2), Cc, Cc, K, K, 1, K / 2, Cc);
}
/// That conv of f32 `in` (B, h, w, Cc) by wt (Cc, 1, K, K) [+ bias] -> f32 (B, h, w, Cc); with
/// `transposed`, its transpose (the gradient with respect to its input; no bias), on the product's
/// depthwise kernels.
Tensor dwconv(const Tensor& in, int K, const Tensor& wt, const float* bias, bool transposed,
              Category cat = Category::workspace) {
  const Conv2dShape s = dw_shape(in, K);
  Tensor out = intermediate(in.shape(), cat);
  if (transposed)
    depthwise_conv_backward_data<float>(s, in.data<float>(), wt.data<float>(), out.data<float>());
  else
    depthwise_conv_forward<float>(s, in.data<float>(), wt.data<float>(), bias, out.data<float>());
  return out;
}
/// x as f32: itself, or widened from bf16 (exact) into a workspace tensor: the reference order
/// computes in f32 whatever the activations' storage (kernels/wtconv.h).
Tensor as_f32(const Tensor& x) {
  if (x.dtype() == DType::f32) return x;
  Tensor out = intermediate(x.shape(), Category::workspace);
  out.copy_(x);  // a cast on the GPU, not recorded on the tape
  return out;
}
/// in * scale per channel, in (.., Cc) of storage T -> f32.
template <typename T>
Tensor scale(const T* in, const Shape& shape, const Tensor& s, int Cc,
             Category cat = Category::workspace) {
  Tensor out = intermediate(shape, cat);
  u_scale_kernel<<<blocks_for(out.numel()), 256, 0, hg::cuda::stream()>>>(
      in, s.data<float>(), out.numel(), Cc, out.data<float>());
  HG_CUDA_LAUNCH_CHECK();
  return out;
}
Tensor scale(const Tensor& in, const Tensor& s, int Cc, Category cat = Category::workspace) {
  return scale(in.data<float>(), in.shape(), s, Cc, cat);
}
Tensor add_ll(const Tensor& t, const Tensor& rec, Category cat = Category::workspace) {
  Tensor out = intermediate(t.shape(), cat);
  u_add_ll_kernel<<<blocks_for(rec.numel()), 256, 0, hg::cuda::stream()>>>(
      reinterpret_cast<const float4*>(t.data<float>()), rec.data<float>(), rec.numel(),
      reinterpret_cast<float4*>(out.data<float>()));
  HG_CUDA_LAUNCH_CHECK();
  return out;
}
Tensor ihaar(const Tensor& t, int h, int w) {
  const int B = int(t.size(0)), hp = int(t.size(1)), wp = int(t.size(2)), C = int(t.size(3));
  Tensor out = workspace({B, h, w, C});
  u_ihaar_kernel<<<blocks_for(out.numel()), 256, 0, hg::cuda::stream()>>>(
      reinterpret_cast<const float4*>(t.data<float>()), B, h, w, C, hp, wp, out.data<float>());
  HG_CUDA_LAUNCH_CHECK();
  return out;
}
/// out (dense, storage T) = a + b (b undefined: out = a); a, b f32 of out's shape.
template <typename T>
void sum_into(const Tensor& a, const Tensor& b, const Tensor& out) {
  u_sum_kernel<<<blocks_for(out.numel()), 256, 0, hg::cuda::stream()>>>(
      a.data<float>(), b.defined() ? b.data<float>() : nullptr, out.numel(), typed<T>(out));
  HG_CUDA_LAUNCH_CHECK();
}
/// Flattens (B, h, w, C, 4) to (B, h, w, 4C): channel 4c+s, as the reference's conv sees it.
Tensor as4c(const Tensor& t) {
  return t.reshape({t.size(0), t.size(1), t.size(2), t.size(3) * 4});
}
/// dL/dweight (Cc, 1, K, K) (and dL/dbias (Cc) into bias_out when given) of dwconv from its f32
/// input and f32 output gradient, on the product's depthwise kernels (deterministic). With K = 1
/// it is also the gradient of a per-channel scale, out = in * scale: dL/dscale (Cc, as the
/// (1, Cc, 1, 1) scales store it) = sum over B, h, w of g * in.
void dw_wgrad(const Tensor& in, const Tensor& g, int K, Tensor& out, Tensor* bias_out) {
  depthwise_conv_backward_weight<float>(dw_shape(in, K), in.data<float>(), g.data<float>(),
                                        out.data<float>(),
                                        bias_out != nullptr ? bias_out->data<float>() : nullptr);
}

/// The forward intermediates of the reference order that the backward reads (all f32).
struct Intermediates {
  std::vector<Tensor> coeff;  // (B, h_{l+1}, w_{l+1}, 4C)
  std::vector<Tensor> conv;   // dwconv(coeff_l), same shape
  std::vector<Tensor> t;  // wavelet_scale * conv (the forward's; not restored from a WTConvSaved)
  Tensor base;                // dwconv(x) + bias, (B, H, W, C)
};

/// The intermediates, counted in `cat` (intermediate()); x32: xc as f32 (as_f32), the base conv's
/// input.
template <typename T>
Intermediates forward_intermediates(const Tensor& xc, const Tensor& x32, const WTConvWeights& w,
                                    int K, Category cat) {
  const int B = int(xc.size(0)), C = int(xc.size(3)), L = w.levels();
  const WTConvLevels d(int(xc.size(1)), int(xc.size(2)), L);
  Intermediates m;
  for (int l = 0; l < L; ++l) {
    // level 0 analyses x; each next level the raw LL band (channel 4c) of the previous coefficients
    const LevelGrid in = grid_of(d, l);
    m.coeff.push_back(as4c(l == 0 ? haar(typed<T>(xc), 1, B, in.h, in.w, C, cat)
                                  : haar(m.coeff[l - 1].data<float>(), 4, B, in.h, in.w, C, cat)));
    m.conv.push_back(dwconv(m.coeff[l], K, w.wavelet_weight[l], nullptr, false, cat));
    m.t.push_back(scale(m.conv[l], w.wavelet_scale[l], 4 * C, cat));
  }
  m.base = dwconv(x32, K, w.base_weight, w.base_bias.data<float>(), false, cat);
  return m;
}

template <typename T>
void unfused_forward_t(const Tensor& xc, const WTConvWeights& w, int stride, int K, const Tensor& y,
                       WTConvSaved* saved) {
  const int B = int(xc.size(0)), H = int(xc.size(1)), W = int(xc.size(2)), C = int(xc.size(3));
  const int L = w.levels(), Ho = (H + stride - 1) / stride, Wo = (W + stride - 1) / stride;
  const WTConvLevels d(H, W, L);
  const Category kept = saved != nullptr ? Category::activations : Category::workspace;
  Intermediates m = forward_intermediates<T>(xc, as_f32(xc), w, K, kept);
  std::vector<Tensor> synth_in(L);  // the inverse Haar's inputs
  Tensor rec;
  for (int l = L - 1; l >= 0; --l) {
    const Tensor t = rec.defined() ? add_ll(m.t[l], rec, kept) : m.t[l];
    rec = ihaar(t.reshape({B, d.h[l + 1], d.w[l + 1], C, 4}), int(d.h[l]), int(d.w[l]));
    synth_in[l] = t;
  }
  if (saved != nullptr) *saved = WTConvSaved{m.coeff, m.conv, synth_in, m.base};
  const Tensor scaled = scale(m.base, w.base_scale, C);
  // the final sum: y itself (stride 1) or subsampled (stride > 1), rounded to T once
  if (stride == 1) {
    sum_into<T>(scaled, rec, y);
  } else {
    u_subsample_kernel<<<blocks_for(y.numel()), 256, 0, hg::cuda::stream()>>>(
        scaled.data<float>(), rec.defined() ? rec.data<float>() : nullptr, B, H, W, C, Ho, Wo,
        stride, typed<T>(y));
    HG_CUDA_LAUNCH_CHECK();
  }
}

template <typename T>
WTConvGrads unfused_backward_t(const Tensor& xc, const WTConvWeights& w, const Tensor& grad_y,
                               int stride, int K, const Tensor& gx, const WTConvSaved* saved) {
  const int B = int(xc.size(0)), H = int(xc.size(1)), W = int(xc.size(2)), C = int(xc.size(3));
  const int L = w.levels(), Ho = (H + stride - 1) / stride, Wo = (W + stride - 1) / stride;
  const WTConvLevels d(H, W, L);
  const Tensor x32 = as_f32(xc);  // widened once: the base weight gradient's input
  const Intermediates m = saved != nullptr
                              ? Intermediates{saved->coeff, saved->conv, {}, saved->base}
                              : forward_intermediates<T>(xc, x32, w, K, Category::workspace);
  Tensor G = grad_y.contiguous();
  if (stride > 1) {
    Tensor up = scratch_tensor({B, H, W, C}, G.dtype());
    upsample_kernel<T><<<blocks_for(up.numel()), 256, 0, hg::cuda::stream()>>>(
        typed<T>(G), B, H, W, C, Ho, Wo, stride, typed<T>(up));
    HG_CUDA_LAUNCH_CHECK();
    G = up;
  }
  const Shape full{B, H, W, C};
  WTConvGrads g;
  // base path: full = base_scale * base + rec
  g.base_scale = Tensor::empty(w.base_scale.shape(), DType::f32, Device::cuda);
  dw_wgrad(m.base, as_f32(G), 1, g.base_scale, nullptr);  // G widened when bf16 (exact)
  const Tensor g_base = scale(typed<T>(G), full, w.base_scale, C);
  g.base_weight = Tensor::empty(w.base_weight.shape(), DType::f32, Device::cuda);
  g.base_bias = Tensor::empty(w.base_bias.shape(), DType::f32, Device::cuda);
  dw_wgrad(x32, g_base, K, g.base_weight, &g.base_bias);
  // levels, finest first: gT_l = haar(g_rec_l), g_rec_{l+1} = gT_l[LL]
  std::vector<Tensor> g_coeff(L);
  std::vector<Tensor> gT(L);
  for (int l = 0; l < L; ++l) {
    const LevelGrid in = grid_of(d, l);
    gT[l] = as4c(l == 0 ? haar(typed<T>(G), 1, B, in.h, in.w, C)
                        : haar(gT[l - 1].data<float>(), 4, B, in.h, in.w, C));
    Tensor gws = Tensor::empty(w.wavelet_scale[l].shape(), DType::f32, Device::cuda);
    dw_wgrad(m.conv[l], gT[l], 1, gws, nullptr);
    const Tensor g_conv = scale(gT[l], w.wavelet_scale[l], 4 * C);
    Tensor gww = Tensor::empty(w.wavelet_weight[l].shape(), DType::f32, Device::cuda);
    dw_wgrad(m.coeff[l], g_conv, K, gww, nullptr);
    g.wavelet_weight.push_back(gww);
    g.wavelet_scale.push_back(gws);
    if (gx.defined()) g_coeff[l] = dwconv(g_conv, K, w.wavelet_weight[l], nullptr, true);
  }
  if (gx.defined()) {
    // coarsest first: g_ll_l = ihaar(g_coeff_l + g_ll_{l+1} on the LL band), cropped
    Tensor g_ll;
    for (int l = L - 1; l >= 0; --l) {
      const Tensor gc = g_ll.defined() ? add_ll(g_coeff[l], g_ll) : g_coeff[l];
      g_ll = ihaar(gc.reshape({B, d.h[l + 1], d.w[l + 1], C, 4}), int(d.h[l]), int(d.w[l]));
    }
    const Tensor gx_base = dwconv(g_base, K, w.base_weight, nullptr, true);
    sum_into<T>(gx_base, g_ll, gx);
    g.x = gx;
  }
  return g;
}

}  // namespace

Tensor unfused_forward(const Tensor& x, const WTConvWeights& w, int stride, const Tensor& out,
                       WTConvSaved* saved) {
  const char* op = "wtconv_forward (cuda, reference)";
  const int K = check_inputs(op, x, w, stride);
  wtconv_check_saved(op, x, w.levels(), WTConvMode::reference, saved, false, DType::f32);
  const int64_t Ho = (x.size(1) + stride - 1) / stride, Wo = (x.size(2) + stride - 1) / stride;
  const Tensor y = output_tensor(op, "out", {x.size(0), Ho, Wo, x.size(3)}, x.dtype(), out);
  const Tensor xc = x.contiguous();
  HG_DISPATCH_CUDA(x.dtype(), op,
                   [&] { unfused_forward_t<device_t<scalar_t>>(xc, w, stride, K, y, saved); });
  return y;
}

WTConvGrads unfused_backward(const Tensor& x, const WTConvWeights& w, const Tensor& grad_y,
                             int stride, bool need_grad_x, const Tensor& grad_x_out,
                             const WTConvSaved* saved) {
  const char* op = "wtconv_backward (cuda, reference)";
  const int K = check_inputs(op, x, w, stride);
  check_grad_y(op, x, grad_y, stride);
  wtconv_check_saved(op, x, w.levels(), WTConvMode::reference, saved, true, DType::f32);
  const Tensor gx =
      need_grad_x ? output_tensor(op, "grad_x_out", x.shape(), x.dtype(), grad_x_out) : Tensor();
  const Tensor xc = x.contiguous();
  WTConvGrads g;
  HG_DISPATCH_CUDA(x.dtype(), op, [&] {
    g = unfused_backward_t<device_t<scalar_t>>(xc, w, grad_y, stride, K, gx, saved);
  });
  return g;
}

}  // namespace hg::kernels::cuda::wtconv_detail
