// Unfused WTConv2d on the GPU in the reference order of Finder et al. (../shared/docs/wtconv.md,
// "Forward, reference order"): separate kernels for Haar analysis, depthwise conv, scaling, adding the
// coarser reconstruction, inverse Haar, and their adjoints, each writing its intermediate to device
// memory, as the PyTorch reference does. It exists so that the fused kernels can be compared with
// the reference inside one binary (correctness and the I/O / time / memory comparison of
// `haargrad bench-layer`). The backward recomputes the forward intermediates that PyTorch's autograd
// would have saved (the API of kernels/wtconv.h passes only x), then runs the adjoint ops in order.
#include "kernels/cuda/wtconv_common.cuh"
#include "kernels/elementwise.h"

namespace hg::kernels::cuda::wtconv_detail {
namespace {

// Haar analysis: in (B, hi, wi, C) read with channel stride `cs` (cs = 4 reads the LL band of a
// coefficient tensor in place) -> out (B, hp, wp, C, 4), zero padding at the bottom / right.
__global__ void u_haar_kernel(const float* __restrict__ in, int cs, int B, int hi, int wi, int C,
                              int hp, int wp, float4* __restrict__ out) {
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= int64_t(B) * hp * wp * C) return;
  const int c = int(idx % C);
  int64_t rest = idx / C;
  const int q = int(rest % wp);
  rest /= wp;
  const int p = int(rest % hp), b = int(rest / hp);
  auto at = [&](int i, int j) {
    return (i < hi && j < wi) ? in[(((int64_t(b) * hi + i) * wi + j) * C + c) * cs] : 0.f;
  };
  out[idx] = haar4(at(2 * p, 2 * q), at(2 * p, 2 * q + 1), at(2 * p + 1, 2 * q),
                   at(2 * p + 1, 2 * q + 1));
}

// Depthwise "same" correlation, stride 1: out(b,i,j,ch) = bias[ch] + sum_k w[ch][k'] in(b,i+kh-r,j+kw-r,ch),
// w in PyTorch layout (Cc, 1, K, K); k' = flip ? K*K-1-k : k (flip gives the transposed conv).
__global__ void u_dwconv_kernel(const float* __restrict__ in, int B, int h, int w, int Cc, int K,
                                const float* __restrict__ wt, const float* __restrict__ bias,
                                bool flip, float* __restrict__ out) {
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= int64_t(B) * h * w * Cc) return;
  const int ch = int(idx % Cc);
  int64_t rest = idx / Cc;
  const int j = int(rest % w);
  rest /= w;
  const int i = int(rest % h), b = int(rest / h), r = K / 2, KK = K * K;
  float acc = bias ? bias[ch] : 0.f;
  for (int kh = 0; kh < K; ++kh) {
    const int ii = i + kh - r;
    if (ii < 0 || ii >= h) continue;
    for (int kw = 0; kw < K; ++kw) {
      const int jj = j + kw - r;
      if (jj < 0 || jj >= w) continue;
      const int k = kh * K + kw;
      acc = fmaf(wt[int64_t(ch) * KK + (flip ? KK - 1 - k : k)],
                 in[((int64_t(b) * h + ii) * w + jj) * Cc + ch], acc);
    }
  }
  out[idx] = acc;
}

// Per-channel scaling: out[e] = in[e] * scale[e % Cc].
__global__ void u_scale_kernel(const float* __restrict__ in, const float* __restrict__ scale,
                               int64_t n, int Cc, float* __restrict__ out) {
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx < n) out[idx] = in[idx] * scale[idx % Cc];
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

// y = full[:, ::s, ::s]: in (B, H, W, C) -> out (B, Ho, Wo, C).
__global__ void u_subsample_kernel(const float* __restrict__ in, int B, int H, int W, int C, int Ho,
                                   int Wo, int s, float* __restrict__ out) {
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= int64_t(B) * Ho * Wo * C) return;
  const int c = int(idx % C);
  int64_t rest = idx / C;
  const int j = int(rest % Wo);
  rest /= Wo;
  const int i = int(rest % Ho), b = int(rest / Ho);
  out[idx] = in[((int64_t(b) * H + i * s) * W + j * s) * C + c];
}

// (K*K, Cc) -> (Cc, K*K): reduced weight-gradient sums to the PyTorch weight layout.
__global__ void u_transpose_kernel(const float* __restrict__ in, int KK, int Cc,
                                   float* __restrict__ out) {
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= int64_t(KK) * Cc) return;
  const int ch = int(idx / KK), k = int(idx % KK);
  out[idx] = in[int64_t(k) * Cc + ch];
}

// ---- host wrappers: each op allocates and writes its own intermediate ----------------------------
Tensor haar(const float* in, int cs, int B, int hi, int wi, int C) {
  const int hp = (hi + 1) / 2, wp = (wi + 1) / 2;
  Tensor out = workspace({B, hp, wp, C, 4});
  u_haar_kernel<<<blocks_for(int64_t(B) * hp * wp * C), 256>>>(
      in, cs, B, hi, wi, C, hp, wp, reinterpret_cast<float4*>(out.data<float>()));
  HG_CUDA_LAUNCH_CHECK();
  return out;
}
Tensor dwconv(const Tensor& in, int Cc, int K, const Tensor& wt, const float* bias, bool flip) {
  const int B = int(in.size(0)), h = int(in.size(1)), w = int(in.size(2));
  Tensor out = workspace(in.shape());
  u_dwconv_kernel<<<blocks_for(in.numel()), 256>>>(in.data<float>(), B, h, w, Cc, K,
                                                    wt.data<float>(), bias, flip, out.data<float>());
  HG_CUDA_LAUNCH_CHECK();
  return out;
}
Tensor scale(const Tensor& in, const Tensor& s, int Cc) {
  Tensor out = workspace(in.shape());
  u_scale_kernel<<<blocks_for(in.numel()), 256>>>(in.data<float>(), s.data<float>(), in.numel(), Cc,
                                                   out.data<float>());
  HG_CUDA_LAUNCH_CHECK();
  return out;
}
Tensor add_ll(const Tensor& t, const Tensor& rec) {
  Tensor out = workspace(t.shape());
  u_add_ll_kernel<<<blocks_for(rec.numel()), 256>>>(
      reinterpret_cast<const float4*>(t.data<float>()), rec.data<float>(), rec.numel(),
      reinterpret_cast<float4*>(out.data<float>()));
  HG_CUDA_LAUNCH_CHECK();
  return out;
}
Tensor ihaar(const Tensor& t, int h, int w) {
  const int B = int(t.size(0)), hp = int(t.size(1)), wp = int(t.size(2)), C = int(t.size(3));
  Tensor out = workspace({B, h, w, C});
  u_ihaar_kernel<<<blocks_for(out.numel()), 256>>>(reinterpret_cast<const float4*>(t.data<float>()),
                                                    B, h, w, C, hp, wp, out.data<float>());
  HG_CUDA_LAUNCH_CHECK();
  return out;
}
/// Flattens (B, h, w, C, 4) to (B, h, w, 4C): channel 4c+s, as the reference's conv sees it.
Tensor as4c(const Tensor& t) {
  return t.reshape({t.size(0), t.size(1), t.size(2), t.size(3) * 4});
}
/// dL/dweight (Cc, 1, K, K) of a depthwise conv from its input and output gradient; deterministic.
void dw_wgrad(const Tensor& in, const Tensor& g, int K, Tensor& out, Tensor* bias_out) {
  const int B = int(in.size(0)), h = int(in.size(1)), w = int(in.size(2)), Cc = int(in.size(3));
  PlainSrc<float> xs{in.data<float>(), h, w, Cc}, gs{g.data<float>(), h, w, Cc};
  WgradResult r = run_wgrad(xs, gs, B, h, w, Cc, K, bias_out != nullptr);
  u_transpose_kernel<<<blocks_for(int64_t(K) * K * Cc), 256>>>(r.sums.data<float>(), K * K, Cc,
                                                               out.data<float>());
  HG_CUDA_LAUNCH_CHECK();
  if (bias_out) bias_out->copy_(r.bias.reshape(bias_out->shape()));
}
/// dL/dscale (Cc) of out = in * scale: per-channel sum of g * in (a K = 1 "weight gradient").
void scale_grad(const Tensor& in, const Tensor& g, Tensor& out) {
  const int B = int(in.size(0)), h = int(in.size(1)), w = int(in.size(2)), Cc = int(in.size(3));
  PlainSrc<float> xs{in.data<float>(), h, w, Cc}, gs{g.data<float>(), h, w, Cc};
  WgradResult r = run_wgrad(xs, gs, B, h, w, Cc, 1, false);
  out.copy_(r.sums.reshape(out.shape()));
}

/// The forward intermediates of the reference order, kept for the backward.
struct Intermediates {
  std::vector<Tensor> coeff;  // (B, h_{l+1}, w_{l+1}, 4C)
  std::vector<Tensor> conv;   // dwconv(coeff_l), same shape
  std::vector<Tensor> t;      // wavelet_scale * conv
  Tensor base;                // dwconv(x) + bias, (B, H, W, C)
};

Intermediates forward_intermediates(const Tensor& xc, const WTConvWeights& w, int K) {
  const int B = int(xc.size(0)), C = int(xc.size(3)), L = w.levels();
  const auto d = level_dims(int(xc.size(1)), int(xc.size(2)), L);
  Intermediates m;
  const float* cur = xc.data<float>();
  int cs = 1;
  for (int l = 0; l < L; ++l) {
    m.coeff.push_back(as4c(haar(cur, cs, B, d[l].first, d[l].second, C)));
    m.conv.push_back(dwconv(m.coeff[l], 4 * C, K, w.wavelet_weight[l], nullptr, false));
    m.t.push_back(scale(m.conv[l], w.wavelet_scale[l], 4 * C));
    cur = m.coeff[l].data<float>();  // the raw LL band (channel 4c) feeds the next level
    cs = 4;
  }
  m.base = dwconv(xc, C, K, w.base_weight, w.base_bias.data<float>(), false);
  return m;
}

}  // namespace

Tensor unfused_forward(const Tensor& x, const WTConvWeights& w, int stride) {
  const int K = check_inputs("wtconv_forward (cuda, reference)", x, w, stride);
  const Tensor xc = x.contiguous();
  const int B = int(x.size(0)), H = int(x.size(1)), W = int(x.size(2)), C = int(x.size(3));
  const int L = w.levels(), Ho = (H + stride - 1) / stride, Wo = (W + stride - 1) / stride;
  const auto d = level_dims(H, W, L);
  Intermediates m = forward_intermediates(xc, w, K);
  Tensor rec;
  for (int l = L - 1; l >= 0; --l) {
    const Tensor t = rec.defined() ? add_ll(m.t[l], rec) : m.t[l];
    rec = ihaar(t.reshape({B, d[l + 1].first, d[l + 1].second, C, 4}), d[l].first, d[l].second);
  }
  const Tensor scaled = scale(m.base, w.base_scale, C);
  // stride 1: the final sum is y itself; stride > 1: the full-resolution sum, then subsampled
  Tensor y = Tensor::empty({B, Ho, Wo, C}, DType::f32, Device::cuda);
  Tensor full = stride == 1 ? y : workspace({B, H, W, C});
  if (rec.defined())
    kernels::cuda::add(scaled.data<float>(), rec.data<float>(), full.data<float>(), full.numel());
  else
    full.copy_(scaled);
  if (stride > 1) {
    u_subsample_kernel<<<blocks_for(y.numel()), 256>>>(full.data<float>(), B, H, W, C, Ho, Wo,
                                                        stride, y.data<float>());
    HG_CUDA_LAUNCH_CHECK();
  }
  return y;
}

WTConvGrads unfused_backward(const Tensor& x, const WTConvWeights& w, const Tensor& grad_y,
                             int stride, bool need_grad_x) {
  const char* op = "wtconv_backward (cuda, reference)";
  const int K = check_inputs(op, x, w, stride);
  const Tensor xc = x.contiguous();
  const int B = int(x.size(0)), H = int(x.size(1)), W = int(x.size(2)), C = int(x.size(3));
  const int L = w.levels(), Ho = (H + stride - 1) / stride, Wo = (W + stride - 1) / stride;
  HG_CHECK(grad_y.defined() && grad_y.shape() == Shape({B, Ho, Wo, C}) &&
               grad_y.device() == Device::cuda && grad_y.dtype() == DType::f32,
           op, ": grad_y must be f32 cuda (", B, ", ", Ho, ", ", Wo, ", ", C, "), got ",
           grad_y.defined() ? grad_y.describe() : std::string("undefined"));
  const auto d = level_dims(H, W, L);
  Intermediates m = forward_intermediates(xc, w, K);
  Tensor G = grad_y.contiguous();
  if (stride > 1) {
    Tensor up = workspace({B, H, W, C});
    upsample_kernel<float><<<blocks_for(up.numel()), 256>>>(G.data<float>(), B, H, W, C, Ho, Wo,
                                                            stride, up.data<float>());
    HG_CUDA_LAUNCH_CHECK();
    G = up;
  }
  WTConvGrads g;
  // base path: full = base_scale * base + rec
  g.base_scale = Tensor::empty(w.base_scale.shape(), DType::f32, Device::cuda);
  scale_grad(m.base, G, g.base_scale);
  const Tensor g_base = scale(G, w.base_scale, C);
  g.base_weight = Tensor::empty(w.base_weight.shape(), DType::f32, Device::cuda);
  g.base_bias = Tensor::empty(w.base_bias.shape(), DType::f32, Device::cuda);
  dw_wgrad(xc, g_base, K, g.base_weight, &g.base_bias);
  // levels, finest first: gT_l = haar(g_rec_l), g_rec_{l+1} = gT_l[LL]
  std::vector<Tensor> g_coeff(L);
  const float* gcur = G.data<float>();
  int cs = 1;
  std::vector<Tensor> gT(L);
  for (int l = 0; l < L; ++l) {
    gT[l] = as4c(haar(gcur, cs, B, d[l].first, d[l].second, C));
    Tensor gws = Tensor::empty(w.wavelet_scale[l].shape(), DType::f32, Device::cuda);
    scale_grad(m.conv[l], gT[l], gws);
    const Tensor g_conv = scale(gT[l], w.wavelet_scale[l], 4 * C);
    Tensor gww = Tensor::empty(w.wavelet_weight[l].shape(), DType::f32, Device::cuda);
    dw_wgrad(m.coeff[l], g_conv, K, gww, nullptr);
    g.wavelet_weight.push_back(gww);
    g.wavelet_scale.push_back(gws);
    if (need_grad_x) g_coeff[l] = dwconv(g_conv, 4 * C, K, w.wavelet_weight[l], nullptr, true);
    gcur = gT[l].data<float>();
    cs = 4;
  }
  if (need_grad_x) {
    // coarsest first: g_ll_l = ihaar(g_coeff_l + g_ll_{l+1} on the LL band), cropped
    Tensor g_ll;
    for (int l = L - 1; l >= 0; --l) {
      const Tensor gc = g_ll.defined() ? add_ll(g_coeff[l], g_ll) : g_coeff[l];
      g_ll = ihaar(gc.reshape({B, d[l + 1].first, d[l + 1].second, C, 4}), d[l].first,
                   d[l].second);
    }
    const Tensor gx_base = dwconv(g_base, C, K, w.base_weight, nullptr, true);
    g.x = Tensor::empty({B, H, W, C}, DType::f32, Device::cuda);
    if (g_ll.defined())
      kernels::cuda::add(gx_base.data<float>(), g_ll.data<float>(), g.x.data<float>(), g.x.numel());
    else
      g.x.copy_(gx_base);
  }
  return g;
}

}  // namespace hg::kernels::cuda::wtconv_detail
