// The deterministic slice reduction (kernels/cuda/reduce_slices.cuh) with several sums a launch,
// as the WTConv backward and the depthwise weight gradient call it: each sum bit-identical to a
// launch of its own, close to an f64 sum on the CPU, nothing written past its end; more sums than
// one launch takes.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gpu/gpu_util.h"
#include "gpu/reduce_slices_call.h"
#include "test_util.h"

namespace hg {
namespace {

struct Shape2 {
  int slices;
  int64_t n;
};

TEST(GpuReduceSlices, SeveralSumsInOneCallEqualOneCallEach) {
  HG_REQUIRE_GPU();
  // more than kMaxSliceSums (4): two launches; slice counts around the 8 warps' runs, n around
  // a block's 32 entries
  const std::vector<Shape2> shapes = {{1, 1}, {7, 31}, {8, 32}, {9, 33}, {64, 100}, {133, 2000}};
  std::vector<Tensor> partial;
  std::vector<test::Guarded> together, alone;
  std::vector<test::SliceSumArgs> all;
  together.reserve(shapes.size());
  alone.reserve(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto [slices, n] = shapes[i];
    partial.push_back(test::random({slices, n}, 100 + uint64_t(i), DType::f32).to(Device::cuda));
    together.emplace_back(Shape{n});
    alone.emplace_back(Shape{n});
    all.push_back({partial[i].data<float>(), slices, n, together[i].tensor().data<float>()});
  }
  test::reduce_slices_f32(all);
  for (size_t i = 0; i < shapes.size(); ++i) {
    test::SliceSumArgs one = all[i];
    one.out = alone[i].tensor().data<float>();
    test::reduce_slices_f32({one});
  }
  cuda::synchronize();
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto [slices, n] = shapes[i];
    const std::vector<float> got = together[i].tensor().to_vector<float>();
    EXPECT_EQ(got, alone[i].tensor().to_vector<float>()) << "sum " << i;
    const std::vector<float> p = partial[i].to_vector<float>();
    double worst = 0;
    for (int64_t e = 0; e < n; ++e) {
      double want = 0;
      for (int z = 0; z < slices; ++z) want += p[size_t(z * n + e)];
      worst = std::max(worst, std::abs(got[size_t(e)] - want) / (1.0 + std::abs(want)));
    }
    EXPECT_LT(worst, 1e-5) << "sum " << i << ": " << slices << " slices of " << n;
    EXPECT_TRUE(together[i].guard_intact() && alone[i].guard_intact()) << "sum " << i;
  }
}

}  // namespace
}  // namespace hg
