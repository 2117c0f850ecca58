// GPU optimizers and reductions vs the CPU reference: AdamW / SGD kernels (guard bytes after the
// updated parameter), the AdamW class over several steps, clip_grad_norm and its fusion into
// AdamW, and the deterministic sum_squares / l2_norm / sum_rows reductions (bit-identical run to
// run).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "core/autograd.h"
#include "gpu/gpu_util.h"
#include "kernels/optimizer.h"
#include "kernels/reduce.h"
#include "test_util.h"
#include "train/optimizer.h"

using namespace hg;

namespace {
void set_grad(const Tensor& p, const Tensor& g) { p.grad_slot()->grad = g.clone(); }
}  // namespace

TEST(GpuOptimizer, AdamWAndSGDKernelsMatchCpu) {
  HG_REQUIRE_GPU();
  const int64_t n = 70001;
  Tensor p = test::random({n}, 1, DType::f32), g = test::random({n}, 2, DType::f32);
  Tensor m = test::random({n}, 3, DType::f32), v = test::random({n}, 4, DType::f32, 0, 1);
  const kernels::AdamWHyper h{1e-2, 0.9, 0.999, 1e-8, 0.05, 1 - std::pow(0.9, 3), 1 - std::pow(0.999, 3)};
  Tensor pc = p.clone(), mc = m.clone(), vc = v.clone();
  kernels::cpu::adamw_update(pc.data<float>(), g.data<float>(), mc.data<float>(), vc.data<float>(), n, h);
  test::Guarded pg({n}), mg({n}), vg({n});
  pg.tensor().copy_(p);
  mg.tensor().copy_(m);
  vg.tensor().copy_(v);
  Tensor gg = g.to(Device::cuda);
  kernels::cuda::adamw_update(pg.tensor().data<float>(), gg.data<float>(), mg.tensor().data<float>(),
                              vg.tensor().data<float>(), n, h);
  EXPECT_LT(test::rel_error(pg.tensor(), pc), 1e-6);
  EXPECT_LT(test::rel_error(mg.tensor(), mc), 1e-6);
  EXPECT_LT(test::rel_error(vg.tensor(), vc), 1e-6);
  EXPECT_TRUE(pg.guard_intact() && mg.guard_intact() && vg.guard_intact());

  for (bool nesterov : {false, true}) {
    const kernels::SGDHyper sh{0.1, 0.9, 1e-3, nesterov, false};
    Tensor ps = p.clone(), bs = m.clone();
    kernels::cpu::sgd_update(ps.data<float>(), g.data<float>(), bs.data<float>(), n, sh);
    test::Guarded pgs({n}), bgs({n});
    pgs.tensor().copy_(p);
    bgs.tensor().copy_(m);
    kernels::cuda::sgd_update(pgs.tensor().data<float>(), gg.data<float>(), bgs.tensor().data<float>(), n, sh);
    EXPECT_LT(test::rel_error(pgs.tensor(), ps), 1e-6) << nesterov;
    EXPECT_LT(test::rel_error(bgs.tensor(), bs), 1e-6) << nesterov;
    EXPECT_TRUE(pgs.guard_intact() && bgs.guard_intact());
  }
}

// The multi-tensor AdamW against the one-tensor kernel, bit for bit: 300 tensors (two launches of
// at most 256 chunks), one of them split into three chunks, sizes not multiples of anything, each
// tensor with its own lr, weight decay and step; guards after every tensor.
TEST(GpuOptimizer, AdamWMultiTensorEqualsOneTensorKernel) {
  HG_REQUIRE_GPU();
  struct Case {
    Tensor g;
    test::Guarded p, m, v;  // multi-tensor
    Tensor p1, m1, v1;      // one-tensor kernel
    kernels::AdamWHyper h;
  };
  std::vector<std::unique_ptr<Case>> cases;
  std::vector<kernels::AdamWTensor> list;
  for (int t = 0; t < 300; ++t) {
    const int64_t n = t == 7 ? 2 * kernels::kAdamWChunk + 1001 : 1 + (t * 37) % 500;
    const int step = 1 + t % 4;
    const kernels::AdamWHyper h{1e-3 * (1 + t % 3), 0.9, 0.999, 1e-8, t % 2 ? 0.05 : 0.0,
                                1 - std::pow(0.9, step), 1 - std::pow(0.999, step)};
    auto c = std::make_unique<Case>(Case{test::random({n}, 100 + t, DType::f32).to(Device::cuda),
                                         test::Guarded({n}), test::Guarded({n}), test::Guarded({n}),
                                         Tensor(), Tensor(), Tensor(), h});
    c->p.tensor().copy_(test::random({n}, 1000 + t, DType::f32));
    c->m.tensor().copy_(test::random({n}, 2000 + t, DType::f32));
    c->v.tensor().copy_(test::random({n}, 3000 + t, DType::f32, 0, 1));
    c->p1 = c->p.tensor().clone();
    c->m1 = c->m.tensor().clone();
    c->v1 = c->v.tensor().clone();
    kernels::cuda::adamw_update(c->p1.data<float>(), c->g.data<float>(), c->m1.data<float>(),
                                c->v1.data<float>(), n, h);
    list.push_back({c->p.tensor().data<float>(), c->m.tensor().data<float>(), c->v.tensor().data<float>(),
                    c->g.data<float>(), n, h});
    cases.push_back(std::move(c));
  }
  const std::vector<float> hyper = kernels::adamw_multi_hyper(list);
  const Tensor hyper_gpu =
      Tensor::from_vector({static_cast<int64_t>(hyper.size())}, hyper, Device::cuda);
  kernels::cuda::adamw_update_multi(list, hyper_gpu.data<float>());
  for (size_t t = 0; t < cases.size(); ++t) {
    Case& c = *cases[t];
    EXPECT_EQ(test::rel_error(c.p.tensor(), c.p1), 0.0) << "tensor " << t;
    EXPECT_EQ(test::rel_error(c.m.tensor(), c.m1), 0.0) << "tensor " << t;
    EXPECT_EQ(test::rel_error(c.v.tensor(), c.v1), 0.0) << "tensor " << t;
    EXPECT_TRUE(c.p.guard_intact() && c.m.guard_intact() && c.v.guard_intact()) << "tensor " << t;
  }
}

TEST(GpuOptimizer, AdamWClassFollowsCpuOverSteps) {
  HG_REQUIRE_GPU();
  Tensor w = test::random({64, 33}, 5, DType::f32), b = test::random({33}, 6, DType::f32);
  Tensor wc = w.clone().requires_grad_(), bc = b.clone().requires_grad_();
  Tensor wg = w.to(Device::cuda).requires_grad_(), bg = b.to(Device::cuda).requires_grad_();
  train::AdamW oc({{{wc}, {"w"}, 1e-3, 0.05}, {{bc}, {"b"}, 1e-3, 0.0}});
  train::AdamW og({{{wg}, {"w"}, 1e-3, 0.05}, {{bg}, {"b"}, 1e-3, 0.0}});
  for (int s = 0; s < 3; ++s) {
    Tensor gw = test::random({64, 33}, 10 + s, DType::f32), gb = test::random({33}, 20 + s, DType::f32);
    set_grad(wc, gw);
    set_grad(bc, gb);
    set_grad(wg, gw.to(Device::cuda));
    set_grad(bg, gb.to(Device::cuda));
    oc.step();
    og.step();
  }
  EXPECT_LT(test::rel_error(wg, wc), 1e-6);
  EXPECT_LT(test::rel_error(bg, bc), 1e-6);
  const auto st = og.state_dict();
  ASSERT_EQ(st.size(), 6u);
  EXPECT_EQ(st[0].second.device(), Device::cuda);
}

TEST(GpuOptimizer, ClipGradNormMatchesCpu) {
  HG_REQUIRE_GPU();
  std::vector<Shape> shapes{{96, 3, 4, 4}, {96}, {384, 96}, {7}};
  std::vector<Tensor> pc, pg;
  for (size_t i = 0; i < shapes.size(); ++i) {
    Tensor g = test::random(shapes[i], 30 + i, DType::f32, -2, 2);
    pc.push_back(Tensor::zeros(shapes[i]).requires_grad_());
    pg.push_back(Tensor::zeros(shapes[i], DType::f32, Device::cuda).requires_grad_());
    set_grad(pc.back(), g);
    set_grad(pg.back(), g.to(Device::cuda));
  }
  Tensor tc = train::clip_grad_norm(pc, 1.0), tg = train::clip_grad_norm(pg, 1.0);
  EXPECT_EQ(tg.device(), Device::cuda);
  EXPECT_LT(test::rel_error(tg, tc), 1e-6);
  for (size_t i = 0; i < shapes.size(); ++i) EXPECT_LT(test::rel_error(pg[i].grad(), pc[i].grad()), 1e-6) << i;
}

// clip_gradients fuses the clip into AdamW's update (AdamW::clip_in_next_step): the same
// parameters and moments, bit for bit, as clip_grad_norm then step, with the clip active (norm
// above max_norm) and not (below), over steps; the gradients' memory is left unclipped.
TEST(GpuOptimizer, FusedClipEqualsClipThenStep) {
  HG_REQUIRE_GPU();
  for (const double max_norm : {0.5, 1e3}) {
    std::vector<Shape> shapes{{96, 3, 4, 4}, {96}, {(int64_t(1) << 16) + 77}, {7}};
    std::vector<Tensor> pa, pb;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const Tensor w = test::random(shapes[i], 60 + i, DType::f32).to(Device::cuda);
      pa.push_back(w.clone().requires_grad_());
      pb.push_back(w.clone().requires_grad_());
    }
    train::AdamW oa({{pa, {}, 1e-2, 0.05}}), ob({{pb, {}, 1e-2, 0.05}});
    for (int s = 0; s < 3; ++s) {
      for (size_t i = 0; i < shapes.size(); ++i) {
        const Tensor g = test::random(shapes[i], 70 + 10 * s + i, DType::f32, -2, 2);
        set_grad(pa[i], g.to(Device::cuda));
        set_grad(pb[i], g.to(Device::cuda));
      }
      const Tensor g0 = pb[0].grad().clone();
      train::clip_grad_norm(oa.parameters(), max_norm);
      oa.step();
      train::clip_gradients(ob, max_norm);
      ob.step();
      EXPECT_EQ(pb[0].grad().to_vector<float>(), g0.to_vector<float>()) << "unclipped in memory";
    }
    for (size_t i = 0; i < shapes.size(); ++i)
      EXPECT_EQ(pb[i].to_vector<float>(), pa[i].to_vector<float>()) << i << " max " << max_norm;
    const auto sa = oa.state_dict(), sb = ob.state_dict();
    ASSERT_EQ(sa.size(), sb.size());
    for (size_t k = 0; k < sa.size(); ++k) {
      if (sa[k].second.device() != Device::cuda) continue;  // the step counts
      EXPECT_EQ(sb[k].second.to_vector<float>(), sa[k].second.to_vector<float>()) << sa[k].first;
    }
  }
}

TEST(GpuReduce, SumSquaresL2NormSumRowsDeterministic) {
  HG_REQUIRE_GPU();
  // more than 256 chunks of 2^16 (two launches of the chunk table), odd tails
  std::vector<int64_t> sizes{1, 1000, 1 << 20, 3333, (int64_t(1) << 16) * 250 + 5};
  std::vector<Tensor> host, dev;
  std::vector<const float*> ptrs;
  double ss = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    host.push_back(test::random({sizes[i]}, 40 + i, DType::f32));
    ss += kernels::cpu::sum_squares(host.back().data<float>(), sizes[i]);
    dev.push_back(host.back().to(Device::cuda));
    ptrs.push_back(dev.back().data<float>());
  }
  test::Guarded out1({1}), out2({1});
  kernels::cuda::sum_squares(ptrs, sizes, out1.tensor().data<float>());
  kernels::cuda::l2_norm(ptrs, sizes, out2.tensor().data<float>());
  EXPECT_NEAR(out1.tensor().item(), ss, 1e-6 * ss);
  EXPECT_NEAR(out2.tensor().item(), std::sqrt(ss), 1e-6 * std::sqrt(ss));
  EXPECT_TRUE(out1.guard_intact() && out2.guard_intact());
  Tensor again = Tensor::empty({1}, DType::f32, Device::cuda);
  kernels::cuda::sum_squares(ptrs, sizes, again.data<float>());
  EXPECT_EQ(again.to_vector<float>(), out1.tensor().to_vector<float>());

  const int64_t R = 300, C = 77;
  Tensor a = test::random({R, C}, 50, DType::f32);
  std::vector<float> av = a.to_vector<float>();
  std::vector<double> want(static_cast<size_t>(C), 0.0);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) want[static_cast<size_t>(c)] += av[static_cast<size_t>(r * C + c)];
  test::Guarded cols({C});
  Tensor ag = a.to(Device::cuda);
  kernels::cuda::sum_rows(ag.data<float>(), R, C, cols.tensor().data<float>());
  EXPECT_LT(test::rel_error(cols.tensor(), Tensor::from_vector<double>({C}, want)), 1e-5);
  EXPECT_TRUE(cols.guard_intact());
}
