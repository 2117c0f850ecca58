// cuDNN 2-D convolution on NHWC fp32 or bf16 tensors (f32 weights, f32 accumulation)
// (kernels/conv2d.h): RAII descriptors, one plan per shape (descriptors + chosen algorithms),
// workspace from the caching allocator.
//
// Filter layout: cuDNN's kernels for NHWC activations take the filter in KRSC order (O, KH, KW,
// C/groups), described as CUDNN_TENSOR_NHWC. Our weights are PyTorch KCRS (O, C/groups, KH, KW), so
// a dense KxK conv transposes the weight into workspace with cudnnTransformTensor (and the weight
// gradient back). When C/groups == 1 (depthwise) or KH == KW == 1 the two orders are the same bytes
// and the weight is used as is. The weights are small next to the activations, so the copy is
// cheap.
//
// Depthwise shapes (groups == C == O, square K, stride 1 or 2) go to the hand-written kernels of
// kernels/depthwise_conv.h, which are several times faster than cuDNN's NHWC depthwise kernels.
// Patchify shapes (kernel == stride, pad 0, groups 1: the ConvNeXt stem and downsampling) are
// GEMMs (kernels/patchify_conv.h) when TF32 is off. Conv2dBackend::cudnn keeps every shape on
// cuDNN, for comparisons (bench-layer --cudnn-dw, tests).
#include "kernels/conv2d.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <type_traits>

#include "core/memory.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/copy.h"
#include "kernels/cuda/launch.h"
#include "kernels/depthwise_conv.h"
#include "kernels/linear.h"
#include "kernels/patchify_conv.h"

// The convolution part of cuDNN's legacy API is marked deprecated in cuDNN 9 (in favour of the
// graph API) but is still supported; the brief asks for the legacy API, so silence those warnings
// here.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace hg::kernels::cuda {
namespace {

// Largest workspace an algorithm may ask for; faster algorithms needing more are skipped.
constexpr size_t kWorkspaceLimit = size_t(1) << 30;

template <typename H, cudnnStatus_t (*Create)(H*), cudnnStatus_t (*Destroy)(H)>
class Descriptor {
 public:
  Descriptor() { HG_CUDNN_CHECK(Create(&d_)); }
  ~Descriptor() { HG_CUDNN_CHECK_NOTHROW(Destroy(d_)); }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  H get() const { return d_; }

 private:
  H d_{};
};
using TensorDesc =
    Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc =
    Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc = Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                            cudnnDestroyConvolutionDescriptor>;

struct Choice {
  int algo = -1;         // the cudnnConvolution*Algo_t value
  size_t workspace = 0;  // bytes
};

// Everything cuDNN needs for one convolution shape and math mode; built once, then cached.
struct Plan {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  TensorDesc w_kcrs, w_krsc;  // the weight as a 4-D tensor in both orders, for cudnnTransformTensor
  bool transpose_weight = false;
  Choice fwd, bwd_data, bwd_filter;  // algo == -1 until first needed
};

int to_int(int64_t v) {
  HG_CHECK(v >= 0 && v <= INT32_MAX, "conv2d (cuDNN): size ", v, " does not fit cuDNN's int");
  return static_cast<int>(v);
}

cudnnMathType_t math_type() {
  // FMA math is exact fp32. With TF32 allowed we use DEFAULT math, which on Ampere and newer lets
  // cuDNN pick TF32 tensor-core kernels for fp32 data (PyTorch's choice for allow_tf32 too).
  return hg::cuda::allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

template <typename T> cudnnDataType_t cudnn_type();
template <> cudnnDataType_t cudnn_type<float>() { return CUDNN_DATA_FLOAT; }
template <> cudnnDataType_t cudnn_type<hg::bf16>() { return CUDNN_DATA_BFLOAT16; }

// dt: the data type of x, y and the filter; the convolution computes in float either way.
std::unique_ptr<Plan> make_plan(const Conv2dShape& s, cudnnMathType_t math, cudnnDataType_t dt) {
  auto p = std::make_unique<Plan>();
  HG_CUDNN_CHECK(cudnnSetTensor4dDescriptor(p->x.get(), CUDNN_TENSOR_NHWC, dt,
                                            to_int(s.N), to_int(s.C), to_int(s.H), to_int(s.W)));
  HG_CUDNN_CHECK(cudnnSetTensor4dDescriptor(p->y.get(), CUDNN_TENSOR_NHWC, dt,
                                            to_int(s.N), to_int(s.O), to_int(s.OH), to_int(s.OW)));
  HG_CUDNN_CHECK(cudnnSetFilter4dDescriptor(p->w.get(), dt, CUDNN_TENSOR_NHWC,
                                            to_int(s.O), to_int(s.Cg()), to_int(s.KH),
                                            to_int(s.KW)));
  HG_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(p->conv.get(), to_int(s.pad), to_int(s.pad),
                                                 to_int(s.stride), to_int(s.stride), 1, 1,
                                                 CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  HG_CUDNN_CHECK(cudnnSetConvolutionGroupCount(p->conv.get(), to_int(s.groups)));
  HG_CUDNN_CHECK(cudnnSetConvolutionMathType(p->conv.get(), math));
  int n = 0, c = 0, h = 0, w = 0;
  HG_CUDNN_CHECK(
      cudnnGetConvolution2dForwardOutputDim(p->conv.get(), p->x.get(), p->w.get(), &n, &c, &h, &w));
  HG_CHECK(n == s.N && c == s.O && h == s.OH && w == s.OW, "conv2d (cuDNN): output dims (", n, ", ",
           c, ", ", h, ", ", w, ") differ from the expected (", s.N, ", ", s.O, ", ", s.OH, ", ",
           s.OW, ")");
  p->transpose_weight = s.Cg() > 1 && s.KH * s.KW > 1;
  if (p->transpose_weight) {
    HG_CUDNN_CHECK(cudnnSetTensor4dDescriptor(p->w_kcrs.get(), CUDNN_TENSOR_NCHW, dt,
                                              to_int(s.O), to_int(s.Cg()), to_int(s.KH),
                                              to_int(s.KW)));
    HG_CUDNN_CHECK(cudnnSetTensor4dDescriptor(p->w_krsc.get(), CUDNN_TENSOR_NHWC, dt,
                                              to_int(s.O), to_int(s.Cg()), to_int(s.KH),
                                              to_int(s.KW)));
  }
  return p;
}

// Plans are keyed by shape and math mode; the mutex makes the cache safe to share across threads.
std::mutex g_mutex;
std::map<std::tuple<Conv2dShape, int, int>, std::unique_ptr<Plan>> g_plans;

template <typename T>
Plan& plan_for(const Conv2dShape& s) {
  const cudnnMathType_t math = math_type();
  const cudnnDataType_t dt = cudnn_type<T>();
  std::lock_guard<std::mutex> lock(g_mutex);
  auto& slot = g_plans[{s, static_cast<int>(math), static_cast<int>(dt)}];
  if (!slot) slot = make_plan(s, math, dt);
  return *slot;
}

// Picks from cuDNN's heuristic ranking (best first): the first algorithm that is supported, fits
// the workspace limit and, when asked, is deterministic. Falls back to the first supported one.
template <typename Perf>
Choice pick(const Perf* perf, int n, bool want_deterministic, const char* what) {
  for (int pass = 0; pass < 2; ++pass)
    for (int i = 0; i < n; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > kWorkspaceLimit) continue;
      if (pass == 0 && want_deterministic && perf[i].determinism != CUDNN_DETERMINISTIC) continue;
      return Choice{static_cast<int>(perf[i].algo), perf[i].memory};
    }
  throw Error(str("conv2d (cuDNN): no supported ", what, " algorithm for this shape"));
}

const Choice& forward_choice(Plan& p) {
  if (p.fwd.algo < 0) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int n = 0;
    HG_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
        hg::cuda::cudnn(), p.x.get(), p.w.get(), p.conv.get(), p.y.get(),
        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf));
    p.fwd = pick(perf, n, false, "forward");
  }
  return p.fwd;
}

const Choice& bwd_data_choice(Plan& p) {
  if (p.bwd_data.algo < 0) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int n = 0;
    HG_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        hg::cuda::cudnn(), p.w.get(), p.y.get(), p.conv.get(), p.x.get(),
        CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf));
    p.bwd_data = pick(perf, n, true, "backward-data");
  }
  return p.bwd_data;
}

const Choice& bwd_filter_choice(Plan& p) {
  if (p.bwd_filter.algo < 0) {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int n = 0;
    HG_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        hg::cuda::cudnn(), p.x.get(), p.y.get(), p.conv.get(), p.w.get(),
        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf));
    p.bwd_filter = pick(perf, n, true, "backward-filter");
  }
  return p.bwd_filter;
}

int64_t weight_numel(const Conv2dShape& s) { return s.O * s.Cg() * s.KH * s.KW; }
size_t weight_bytes(const Conv2dShape& s) {
  return static_cast<size_t>(weight_numel(s)) * sizeof(float);
}

// The f32 weight as type T (bf16: rounded, in scratch that `hold` keeps alive).
template <typename T>
const T* weight_as(const Conv2dShape& s, const float* weight, std::shared_ptr<void>& hold);
template <>
const float* weight_as<float>(const Conv2dShape&, const float* weight, std::shared_ptr<void>&) {
  return weight;
}
template <>
const hg::bf16* weight_as<hg::bf16>(const Conv2dShape& s, const float* weight,
                                    std::shared_ptr<void>& hold) {
  hold = scratch(static_cast<size_t>(weight_numel(s)) * sizeof(hg::bf16));
  convert(weight, static_cast<hg::bf16*>(hold.get()), weight_numel(s));
  return static_cast<const hg::bf16*>(hold.get());
}

// The filter in type T and the order cuDNN takes for NHWC data: the weight itself (f32), its bf16
// copy, or (dense KxK) its KRSC transpose, in scratch memory that `hold` keeps alive.
template <typename T>
const T* filter_for_cudnn(const Plan& p, const Conv2dShape& s, const float* weight,
                          std::shared_ptr<void>& hold) {
  std::shared_ptr<void> typed;
  const T* w = weight_as<T>(s, weight, typed);
  if (!p.transpose_weight) {
    hold = typed;
    return w;
  }
  const float one = 1.0f, zero = 0.0f;
  hold = scratch(static_cast<size_t>(weight_numel(s)) * sizeof(T));
  HG_CUDNN_CHECK(cudnnTransformTensor(hg::cuda::cudnn(), &one, p.w_kcrs.get(), w, &zero,
                                      p.w_krsc.get(), hold.get()));
  return static_cast<const T*>(hold.get());
}

bool empty(const Conv2dShape& s) {
  return s.N == 0 || s.OH <= 0 || s.OW <= 0 || s.O == 0 || s.C == 0;
}

// True when s goes to kernels/depthwise_conv.h instead of cuDNN.
bool own_depthwise(const Conv2dShape& s, Conv2dBackend backend) {
  return backend == Conv2dBackend::automatic && depthwise_conv_supported(s);
}

// True when s goes to kernels/patchify_conv.h instead of cuDNN.
bool own_patchify(const Conv2dShape& s, Conv2dBackend backend) {
  return backend == Conv2dBackend::automatic && patchify_conv_supported(s);
}

}  // namespace

template <typename T>
void conv2d_forward(const Conv2dShape& s, const T* x, const float* weight, const float* bias, T* y,
                    Conv2dBackend backend) {
  if (own_depthwise(s, backend)) return depthwise_conv_forward(s, x, weight, bias, y);
  if (empty(s)) return;
  if (own_patchify(s, backend)) return patchify_conv_forward(s, x, weight, bias, y);
  Plan& p = plan_for<T>(s);
  const float one = 1.0f, zero = 0.0f;
  std::shared_ptr<void> wt;  // keeps a converted / transposed filter alive until the call is queued
  const T* w = filter_for_cudnn<T>(p, s, weight, wt);
  const Choice& c = forward_choice(p);
  std::shared_ptr<void> ws = scratch(c.workspace);
  HG_CUDNN_CHECK(cudnnConvolutionForward(
      hg::cuda::cudnn(), &one, p.x.get(), x, p.w.get(), w, p.conv.get(),
      static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), ws.get(), c.workspace, &zero, p.y.get(), y));
  if (bias) add_bias_rows(s.N * s.OH * s.OW, s.O, bias, y);
}

template <typename T>
void conv2d_backward_data(const Conv2dShape& s, const T* gy, const float* weight, T* gx,
                          Conv2dBackend backend) {
  if (own_depthwise(s, backend)) return depthwise_conv_backward_data(s, gy, weight, gx);
  if (s.N * s.H * s.W * s.C == 0) return;
  if (empty(s)) {
    HG_CUDA_CHECK(cudaMemsetAsync(gx, 0, static_cast<size_t>(s.N * s.H * s.W * s.C) * sizeof(T),
                                  hg::cuda::stream()));
    return;
  }
  if (own_patchify(s, backend)) return patchify_conv_backward_data(s, gy, weight, gx);
  Plan& p = plan_for<T>(s);
  const float one = 1.0f, zero = 0.0f;
  std::shared_ptr<void> wt;  // keeps a converted / transposed filter alive until the call is queued
  const T* w = filter_for_cudnn<T>(p, s, weight, wt);
  const Choice& c = bwd_data_choice(p);
  std::shared_ptr<void> ws = scratch(c.workspace);
  HG_CUDNN_CHECK(cudnnConvolutionBackwardData(hg::cuda::cudnn(), &one, p.w.get(), w, p.y.get(), gy,
                                              p.conv.get(),
                                              static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo),
                                              ws.get(), c.workspace, &zero, p.x.get(), gx));
}

template <typename T>
void conv2d_backward_weight(const Conv2dShape& s, const T* x, const T* gy, float* gw,
                            Conv2dBackend backend) {
  // (the bias gradient: bias_grad_rows below, or with the weights' in conv2d_backward_weight_bias)
  if (own_depthwise(s, backend)) return depthwise_conv_backward_weight(s, x, gy, gw, nullptr);
  if (weight_bytes(s) == 0) return;
  if (empty(s)) {
    HG_CUDA_CHECK(cudaMemsetAsync(gw, 0, weight_bytes(s), hg::cuda::stream()));
    return;
  }
  if (own_patchify(s, backend)) return patchify_conv_backward_weight(s, x, gy, gw);
  Plan& p = plan_for<T>(s);
  const float one = 1.0f, zero = 0.0f;
  // cuDNN writes the filter gradient in T and KRSC order (dense KxK); we want f32 KCRS.
  const bool direct = std::is_same_v<T, float> && !p.transpose_weight;
  const size_t tbytes = static_cast<size_t>(weight_numel(s)) * sizeof(T);
  std::shared_ptr<void> krsc = direct ? nullptr : scratch(tbytes);
  T* out = direct ? reinterpret_cast<T*>(gw) : static_cast<T*>(krsc.get());
  const Choice& c = bwd_filter_choice(p);
  std::shared_ptr<void> ws = scratch(c.workspace);
  HG_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
      hg::cuda::cudnn(), &one, p.x.get(), x, p.y.get(), gy, p.conv.get(),
      static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo), ws.get(), c.workspace, &zero, p.w.get(),
      out));
  if (direct) return;
  const T* kcrs = out;
  std::shared_ptr<void> kcrs_mem;
  if (p.transpose_weight) {  // KRSC -> KCRS
    kcrs_mem = std::is_same_v<T, float> ? nullptr : scratch(tbytes);
    T* dst = std::is_same_v<T, float> ? reinterpret_cast<T*>(gw) : static_cast<T*>(kcrs_mem.get());
    HG_CUDNN_CHECK(cudnnTransformTensor(hg::cuda::cudnn(), &one, p.w_krsc.get(), out, &zero,
                                        p.w_kcrs.get(), dst));
    kcrs = dst;
  }
  if constexpr (!std::is_same_v<T, float>) convert(kcrs, gw, weight_numel(s));
}

template <typename T>
void conv2d_backward_bias(const Conv2dShape& s, const T* gy, float* gb) {
  bias_grad_rows(s.N * s.OH * s.OW, s.O, gy, gb);
}

template <typename T>
void conv2d_backward_weight_bias(const Conv2dShape& s, const T* x, const T* gy, float* gw,
                                 float* gb, Conv2dBackend backend) {
  // the depthwise weight gradient's kernel stages grad_y anyway: its bias sums come with the
  // weights' (one reduction launch for both), where bias_grad_rows read grad_y again (~21 us
  // of a 96/56, B = 64 bf16 step in two launches, H100)
  if (own_depthwise(s, backend)) return depthwise_conv_backward_weight(s, x, gy, gw, gb);
  conv2d_backward_weight(s, x, gy, gw, backend);
  conv2d_backward_bias(s, gy, gb);
}

#define HG_INSTANTIATE(T)                                                                       \
  template void conv2d_forward<T>(const Conv2dShape&, const T*, const float*, const float*, T*, \
                                  Conv2dBackend);                                               \
  template void conv2d_backward_data<T>(const Conv2dShape&, const T*, const float*, T*,         \
                                        Conv2dBackend);                                         \
  template void conv2d_backward_weight<T>(const Conv2dShape&, const T*, const T*, float*,       \
                                          Conv2dBackend);                                       \
  template void conv2d_backward_bias<T>(const Conv2dShape&, const T*, float*);                  \
  template void conv2d_backward_weight_bias<T>(const Conv2dShape&, const T*, const T*, float*,  \
                                               float*, Conv2dBackend);
HG_INSTANTIATE(float)
HG_INSTANTIATE(hg::bf16)
#undef HG_INSTANTIATE

void conv2d_clear_algorithm_cache() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_plans.clear();
}

}  // namespace hg::kernels::cuda
