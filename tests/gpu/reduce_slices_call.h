// GPU test aid: kernels/cuda/reduce_slices.cuh's reduce_slices called from a .cpp test (the header
// is device code, included from .cu files only).
#pragma once

#include <cstdint>
#include <vector>

namespace hg::test {

/// One sum: out[e] = sum over z < slices of partial[z * n + e], e < n (device pointers, f32).
struct SliceSumArgs {
  const float* partial;
  int slices;
  int64_t n;
  float* out;
};

/// reduce_slices over `sums` on the thread's stream: as many as kMaxSliceSums a launch.
void reduce_slices_f32(const std::vector<SliceSumArgs>& sums);

}  // namespace hg::test
