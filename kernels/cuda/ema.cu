// CUDA model-EMA update of kernels/ema.h: one block per chunk of the table, explicit round-to-
// nearest operations (no FMA contraction) so that the result equals the CPU loop bit for bit.
#include "core/cuda_stream.h"
#include "kernels/cuda/check.h"
#include "kernels/ema.h"

namespace hg::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void ema_kernel(const EmaChunk* chunks, float weight) {
  const EmaChunk c = chunks[blockIdx.x];
  const float rest = __fsub_rn(1.0f, weight);
  for (int64_t i = threadIdx.x; i < c.n; i += kThreads) {
    const float e = c.ema[i], m = c.model[i];
    const float diff = __fsub_rn(m, e);
    c.ema[i] =
        weight < 0.5f ? __fadd_rn(e, __fmul_rn(weight, diff)) : __fsub_rn(m, __fmul_rn(diff, rest));
  }
}

}  // namespace

void ema_update(const EmaChunk* chunks, int64_t num_chunks, float weight) {
  if (num_chunks == 0) return;
  HG_CHECK(num_chunks < (int64_t(1) << 31), "ema_update (cuda): ", num_chunks,
           " chunks exceed one grid");
  ema_kernel<<<static_cast<unsigned>(num_chunks), kThreads, 0, hg::cuda::stream()>>>(chunks,
                                                                                     weight);
  HG_CUDA_LAUNCH_CHECK();
}

}  // namespace hg::kernels::cuda
