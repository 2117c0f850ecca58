// GPU test aid: see reduce_slices_call.h.
#include "gpu/reduce_slices_call.h"
#include "kernels/cuda/reduce_slices.cuh"

namespace hg::test {

void reduce_slices_f32(const std::vector<SliceSumArgs>& sums) {
  std::vector<kernels::cuda::SliceSum<float>> s;
  for (const SliceSumArgs& a : sums) s.push_back({a.partial, a.slices, a.n, a.out});
  kernels::cuda::reduce_slices(s);
}

}  // namespace hg::test
