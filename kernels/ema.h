// Model EMA update (timm ModelEmaV3, torch.lerp): for every element,
//   ema = w < 0.5 ? ema + w * (model - ema) : model - (model - ema) * (1 - w),   w = 1 - decay,
// in float with each operation rounded separately (no fused multiply-add), so the CPU loop and the
// CUDA kernel give bit-identical results. w = 1 copies the model exactly.
//
// CUDA: one launch for all tensors of a model. The tensors are cut into chunks of at most
// kEmaChunk elements; a table of chunks (built once with ema_chunks, copied to the device) gives
// each block its chunk. Arrays are f32, updated in place; model arrays are read only.
// Errors: the CPU update checks nothing; the CUDA one throws hg::Error for 2^31 or more chunks
// and on a failed launch (HG_CUDA_LAUNCH_CHECK), and always in a build without CUDA.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace hg::kernels {

/// One chunk of one tensor pair: n elements at ema / model.
struct EmaChunk {
  float* ema;
  const float* model;
  int64_t n;
};
constexpr int64_t kEmaChunk = 8192;

/// The chunks of tensor pairs (ema[i], model[i], numel[i]), in order.
inline std::vector<EmaChunk> ema_chunks(const std::vector<float*>& ema,
                                        const std::vector<const float*>& model,
                                        const std::vector<int64_t>& numel) {
  std::vector<EmaChunk> out;
  for (size_t t = 0; t < ema.size(); ++t)
    for (int64_t s = 0; s < numel[t]; s += kEmaChunk)
      out.push_back({ema[t] + s, model[t] + s, std::min(kEmaChunk, numel[t] - s)});
  return out;
}

namespace cpu {
void ema_update(float* ema, const float* model, int64_t n, float weight);
}  // namespace cpu
// CUDA entry points (a build without CUDA links kernels/nocuda/cuda_stubs.cpp: they throw).
namespace cuda {
/// `chunks` is a device array of num_chunks EmaChunk (device pointers); one block per chunk.
void ema_update(const EmaChunk* chunks, int64_t num_chunks, float weight);
}  // namespace cuda

}  // namespace hg::kernels
