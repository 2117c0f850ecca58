// GPU soft-target cross-entropy vs the CPU reference: loss and dlogits (poisoned, guarded outputs),
// ImageNet-sized rows, rows whose targets do not sum to 1, and the autograd layer.
#include <gtest/gtest.h>

#include "core/autograd.h"
#include "gpu/gpu_util.h"
#include "kernels/cross_entropy.h"
#include "layers/loss.h"
#include "test_util.h"

using namespace hg;

TEST(GpuSoftTargetCrossEntropy, KernelsMatchCpuReference) {
  HG_REQUIRE_GPU();
  struct Case {
    int64_t N, K;
  };
  for (Case c : {Case{37, 1000}, Case{128, 10}, Case{3, 33}}) {
    Tensor z = test::random({c.N, c.K}, 1 + c.K, DType::f32, -5, 5);
    Tensor t = test::random({c.N, c.K}, 2 + c.N, DType::f32, 0, 2.0 / double(c.K));  // mass ~1
    Tensor g = test::random({1}, 3, DType::f32, 0.5, 2);  // dL/dloss != 1
    Tensor lse_ref = Tensor::empty({c.N}), loss_ref = Tensor::empty({1}),
           dz_ref = Tensor::empty({c.N, c.K});
    kernels::cpu::soft_cross_entropy_forward(
        z.data<float>(), t.data<float>(), lse_ref.data<float>(), loss_ref.data<float>(), c.N, c.K);
    kernels::cpu::soft_cross_entropy_backward(z.data<float>(), t.data<float>(),
                                              lse_ref.data<float>(), g.data<float>(),
                                              dz_ref.data<float>(), c.N, c.K);
    Tensor zg = z.to(Device::cuda), tg = t.to(Device::cuda), gg = g.to(Device::cuda);
    test::Guarded lse({c.N}), loss({1}), dz({c.N, c.K});
    kernels::cuda::soft_cross_entropy_forward(zg.data<float>(), tg.data<float>(),
                                              lse.tensor().data<float>(),
                                              loss.tensor().data<float>(), c.N, c.K);
    kernels::cuda::soft_cross_entropy_backward(zg.data<float>(), tg.data<float>(),
                                               lse.tensor().data<float>(), gg.data<float>(),
                                               dz.tensor().data<float>(), c.N, c.K);
    EXPECT_LT(test::rel_error(lse.tensor(), lse_ref), 1e-5) << c.N << "x" << c.K;
    EXPECT_LT(test::rel_error(loss.tensor(), loss_ref), 1e-5) << c.N << "x" << c.K;
    EXPECT_LT(test::rel_error(dz.tensor(), dz_ref), 1e-5) << c.N << "x" << c.K;
    EXPECT_TRUE(lse.guard_intact() && loss.guard_intact() && dz.guard_intact());
  }
}

TEST(GpuSoftTargetCrossEntropy, AutogradLayerMatchesCpu) {
  HG_REQUIRE_GPU();
  Tensor z = test::random({16, 100}, 5, DType::f32, -3, 3);
  Tensor t = test::random({16, 100}, 6, DType::f32, 0, 0.02);
  Tensor zc = z.clone().requires_grad_(), zg = z.to(Device::cuda).requires_grad_();
  Tensor lc = soft_target_cross_entropy(zc, t);  // one tape per thread: CPU step first
  autograd::backward(lc);
  Tensor lg = soft_target_cross_entropy(zg, t.to(Device::cuda));
  autograd::backward(lg);
  EXPECT_LT(test::rel_error(lg, lc), 1e-5);
  EXPECT_LT(test::rel_error(zg.grad(), zc.grad()), 1e-5);
}
