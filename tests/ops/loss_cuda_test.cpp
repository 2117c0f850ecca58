// GPU cross-entropy vs the CPU reference: loss and dlogits with and without label smoothing
// (poisoned, guarded outputs), ImageNet-sized rows, a bad label giving NaN, top-k on CUDA. The
// autograd op on CUDA in f32 / tf32 / bf16: the op harness (cases_loss.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "gpu/gpu_util.h"
#include "kernels/cross_entropy.h"
#include "layers/loss.h"
#include "test_util.h"

using namespace hg;

namespace {
Tensor random_labels(int64_t n, int64_t k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& y : v) y = static_cast<int64_t>(rng() % static_cast<uint64_t>(k));
  return Tensor::from_vector<int64_t>({n}, v);
}
}  // namespace

TEST(GpuCrossEntropy, KernelsMatchCpuReference) {
  HG_REQUIRE_GPU();
  struct Case { int64_t N, K; };
  for (Case c : {Case{37, 1000}, Case{128, 10}, Case{3, 33}})
    for (float s : {0.0f, 0.1f}) {
      Tensor z = test::random({c.N, c.K}, 1 + c.K, DType::f32, -5, 5);
      Tensor y = random_labels(c.N, c.K, 2 + c.N);
      Tensor g = test::random({1}, 3, DType::f32, 0.5, 2);  // dL/dloss != 1
      Tensor lse_ref = Tensor::empty({c.N}), loss_ref = Tensor::empty({1}), dz_ref = Tensor::empty({c.N, c.K});
      kernels::cpu::cross_entropy_forward(z.data<float>(), y.data<int64_t>(), lse_ref.data<float>(),
                                          loss_ref.data<float>(), c.N, c.K, s);
      kernels::cpu::cross_entropy_backward(z.data<float>(), y.data<int64_t>(), lse_ref.data<float>(),
                                           g.data<float>(), dz_ref.data<float>(), c.N, c.K, s);
      Tensor zg = z.to(Device::cuda), yg = y.to(Device::cuda), gg = g.to(Device::cuda);
      test::Guarded lse({c.N}), loss({1}), dz({c.N, c.K});
      kernels::cuda::cross_entropy_forward(zg.data<float>(), yg.data<int64_t>(), lse.tensor().data<float>(),
                                           loss.tensor().data<float>(), c.N, c.K, s);
      kernels::cuda::cross_entropy_backward(zg.data<float>(), yg.data<int64_t>(), lse.tensor().data<float>(),
                                            gg.data<float>(), dz.tensor().data<float>(), c.N, c.K, s);
      EXPECT_LT(test::rel_error(lse.tensor(), lse_ref), 1e-5) << c.N << "x" << c.K << " s=" << s;
      EXPECT_LT(test::rel_error(loss.tensor(), loss_ref), 1e-5) << c.N << "x" << c.K << " s=" << s;
      EXPECT_LT(test::rel_error(dz.tensor(), dz_ref), 1e-5) << c.N << "x" << c.K << " s=" << s;
      EXPECT_TRUE(lse.guard_intact() && loss.guard_intact() && dz.guard_intact());
    }
}

TEST(GpuCrossEntropy, BadLabelGivesNaNNotACrash) {
  HG_REQUIRE_GPU();
  Tensor z = test::random({4, 5}, 4, DType::f32).to(Device::cuda);
  Tensor y = Tensor::from_vector<int64_t>({4}, {0, 5, 1, 2}).to(Device::cuda);
  EXPECT_TRUE(std::isnan(cross_entropy(z, y).item()));
}

TEST(GpuCrossEntropy, TopKMatchesCpu) {
  HG_REQUIRE_GPU();
  Tensor z = test::random({16, 100}, 5, DType::f32, -3, 3);
  Tensor y = random_labels(16, 100, 6);
  EXPECT_EQ(correct_topk(z.to(Device::cuda), y.to(Device::cuda), 5), correct_topk(z, y, 5));
}
