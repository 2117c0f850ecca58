// Fused softmax + cross-entropy with label smoothing (torch.nn.functional.cross_entropy with
// reduction='mean' and label_smoothing=s, PyTorch's definition):
//   lse_i  = log(sum_j exp(z_ij)),
//   loss_i = (1 - s) * (lse_i - z_i,y_i) + (s / K) * sum_j (lse_i - z_ij),
//   loss   = mean_i loss_i.
// Backward: dz_ij = g / N * (softmax_ij - (1 - s) * [j == y_i] - s / K), g = dL/dloss.
// Shapes: logits, dlogits (N, K); labels (N) int64 in [0, K); stats (N, 2); loss and g one
// element. Forward saves each row's stats for backward: its max m_i and log sum_j exp(z_ij - m_i)
// (lse_i is their sum, which a float cannot hold beside a max far from 0: each lse_i - z_ij is
// computed as (m_i - z_ij) + log sum, in both passes). dlogits is OVERWRITTEN.
// CPU: T = float or double, sums in double; labels are checked by the caller (layers/loss.cpp).
// CUDA: float; an out-of-range label makes that row's loss NaN (no out-of-bounds read); the batch
// mean is a fixed-order reduction (deterministic). g is read from device memory (no host sync).
// Errors: none on the CPU; the CUDA functions throw hg::Error on a failed launch, and always in a
// build without CUDA.
//
// Soft targets (timm's SoftTargetCrossEntropy, the loss of mixup / cutmix):
//   loss_i = sum_j t_ij (lse_i - z_ij),  loss = mean_i loss_i,
//   dz_ij  = g / N * (softmax_ij * sum_k t_ik - t_ij)   (softmax - t for targets summing to 1).
// Shapes: targets (N, K) of the logits' dtype; otherwise as above. No gradient for the targets.
#pragma once

#include <cstdint>

namespace hg::kernels {
namespace cpu {
template <typename T>
void cross_entropy_forward(const T* logits, const int64_t* labels, T* stats, T* loss, int64_t N,
                           int64_t K, double smoothing);
template <typename T>
void cross_entropy_backward(const T* logits, const int64_t* labels, const T* stats,
                            const T* grad_loss, T* dlogits, int64_t N, int64_t K, double smoothing);
template <typename T>
void soft_cross_entropy_forward(const T* logits, const T* targets, T* stats, T* loss, int64_t N,
                                int64_t K);
template <typename T>
void soft_cross_entropy_backward(const T* logits, const T* targets, const T* stats,
                                 const T* grad_loss, T* dlogits, int64_t N, int64_t K);
}  // namespace cpu
// CUDA entry points (a build without CUDA links kernels/nocuda/cuda_stubs.cpp: they throw).
namespace cuda {
void cross_entropy_forward(const float* logits, const int64_t* labels, float* stats, float* loss,
                           int64_t N, int64_t K, float smoothing);
void cross_entropy_backward(const float* logits, const int64_t* labels, const float* stats,
                            const float* grad_loss, float* dlogits, int64_t N, int64_t K,
                            float smoothing);
void soft_cross_entropy_forward(const float* logits, const float* targets, float* stats,
                                float* loss, int64_t N, int64_t K);
void soft_cross_entropy_backward(const float* logits, const float* targets, const float* stats,
                                 const float* grad_loss, float* dlogits, int64_t N, int64_t K);
}  // namespace cuda

}  // namespace hg::kernels
