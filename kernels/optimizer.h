// Optimizer update kernels, PyTorch semantics. On CUDA, adamw_update, sgd_update and clip_scale
// launch once per parameter tensor; adamw_update_multi updates a list of tensors with one launch
// per 256 chunks of them (below).
//
// AdamW (torch.optim.AdamW, single-tensor path; Loshchilov & Hutter, decoupled weight decay):
//   p -= lr * wd * p;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2;
//   p -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps),  bc1 = 1 - b1^t, bc2 = 1 - b2^t.
// SGD (torch.optim.SGD, dampening 0): g' = g + wd*p; buf = first ? g' : momentum*buf + g';
//   d = nesterov ? g' + momentum*buf : buf (d = g' when momentum == 0);  p -= lr * d.
// Clip scaling (torch.nn.utils.clip_grad_norm_): g *= min(max_norm / (total_norm + 1e-6), 1), with
// total_norm read from memory of the same device (no host sync on CUDA).
//
// CUDA multi-tensor AdamW: the same update for a list of tensors in one launch per 256 chunks of
// at most kAdamWChunk elements (a step of ConvNeXt-T: 2 launches instead of ~180), each element's
// math identical to adamw_update's, so the results are bit-identical to it. Its per-tensor
// hyper-parameters (which change every step: lr, bias corrections) are read from device memory, so
// a CUDA graph that captured the launch reads each replay's values (train/step_graph.h).
//
// Arrays are dense, n elements, updated in place. Hyper-parameters arrive as doubles computed on
// the host (bias corrections included). CPU: T = float or double; CUDA: float (math in float).
// Errors: none on the CPU; the CUDA functions throw hg::Error on a failed launch, and always in a
// build without CUDA.
#pragma once

#include <cstdint>
#include <vector>

namespace hg::kernels {

struct AdamWHyper {
  double lr, beta1, beta2, eps, weight_decay;
  double bias_correction1, bias_correction2;  ///< 1 - beta^step
};

struct SGDHyper {
  double lr, momentum, weight_decay;
  bool nesterov;
  bool first_step;  ///< momentum buffer is initialised to the gradient (PyTorch)
};

/// One tensor of a multi-tensor AdamW step: its arrays, its element count and its hyper-parameters.
struct AdamWTensor {
  float *p, *m, *v;
  const float* g;
  int64_t n;
  AdamWHyper h;
};
constexpr int64_t kAdamWChunk = int64_t(1) << 16;
/// Floats per tensor in adamw_multi_hyper's table: 1 - lr * wd, lr / bc1, sqrt(bc2).
constexpr int kAdamWHyperFloats = 3;
/// adamw_update_multi's hyper-parameter table (host), kAdamWHyperFloats per tensor in list order:
/// computed in double and rounded to float, as adamw_update rounds its arguments.
std::vector<float> adamw_multi_hyper(const std::vector<AdamWTensor>& tensors);

namespace cpu {
template <typename T>
void adamw_update(T* p, const T* g, T* m, T* v, int64_t n, const AdamWHyper& h);
/// buf may be null when momentum == 0.
template <typename T>
void sgd_update(T* p, const T* g, T* buf, int64_t n, const SGDHyper& h);
template <typename T>
void clip_scale(T* g, int64_t n, const T* total_norm, double max_norm);
}  // namespace cpu
// CUDA entry points (a build without CUDA links kernels/nocuda/cuda_stubs.cpp: they throw).
namespace cuda {
void adamw_update(float* p, const float* g, float* m, float* v, int64_t n, const AdamWHyper& h);
/// adamw_update for every tensor of the list (beta1, beta2, eps the same for all). `hyper`: device
/// memory holding adamw_multi_hyper(tensors) (the list's AdamWTensor::h is not read otherwise).
/// clip_norm (device memory, or null): the global-norm clip fused into the update: each gradient
/// element is read as g * min(max_norm / (*clip_norm + 1e-6), 1), the value clip_scale would have
/// stored (so the result is bit-identical to clip_scale of every tensor, then this), and the
/// gradients' memory is left as it was.
void adamw_update_multi(const std::vector<AdamWTensor>& tensors, const float* hyper,
                        const float* clip_norm = nullptr, double max_norm = 0);
void sgd_update(float* p, const float* g, float* buf, int64_t n, const SGDHyper& h);
void clip_scale(float* g, int64_t n, const float* total_norm, double max_norm);
}  // namespace cuda

}  // namespace hg::kernels
