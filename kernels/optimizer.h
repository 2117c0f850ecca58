// Optimizer update kernels (one launch per parameter tensor), PyTorch semantics:
//
// AdamW (torch.optim.AdamW, single-tensor path; Loshchilov & Hutter, decoupled weight decay):
//   p -= lr * wd * p;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2;
//   p -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps),  bc1 = 1 - b1^t, bc2 = 1 - b2^t.
// SGD (torch.optim.SGD, dampening 0): g' = g + wd*p; buf = first ? g' : momentum*buf + g';
//   d = nesterov ? g' + momentum*buf : buf (d = g' when momentum == 0);  p -= lr * d.
// Clip scaling (torch.nn.utils.clip_grad_norm_): g *= min(max_norm / (total_norm + 1e-6), 1), with
// total_norm read from memory of the same device (no host sync on CUDA).
//
// Arrays are dense, n elements, updated in place. Hyper-parameters arrive as doubles computed on
// the host (bias corrections included). CPU: T = float or double; CUDA: float (math in float).
#pragma once

#include <cstdint>

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

namespace cpu {
template <typename T>
void adamw_update(T* p, const T* g, T* m, T* v, int64_t n, const AdamWHyper& h);
/// buf may be null when momentum == 0.
template <typename T>
void sgd_update(T* p, const T* g, T* buf, int64_t n, const SGDHyper& h);
template <typename T>
void clip_scale(T* g, int64_t n, const T* total_norm, double max_norm);
}  // namespace cpu
#ifdef HAARGRAD_WITH_CUDA
namespace cuda {
void adamw_update(float* p, const float* g, float* m, float* v, int64_t n, const AdamWHyper& h);
void sgd_update(float* p, const float* g, float* buf, int64_t n, const SGDHyper& h);
void clip_scale(float* g, int64_t n, const float* total_norm, double max_norm);
}  // namespace cuda
#endif
}  // namespace hg::kernels
