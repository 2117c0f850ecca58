// Core ops: forward values and float64 finite-difference gradients.
#include <gtest/gtest.h>

#include "core/autograd.h"
#include "core/ops.h"
#include "test_util.h"

using namespace hg;

namespace {
Tensor param(const Shape& s, uint64_t seed) { return test::random(s, seed).requires_grad_(); }
}  // namespace

TEST(Ops, AddSubMulScaleValues) {
  Tensor a = Tensor::from_vector<double>({3}, {1, 2, 3}),
         b = Tensor::from_vector<double>({3}, {4, 5, 7});
  EXPECT_EQ(ops::add(a, b).to_vector<double>(), (std::vector<double>{5, 7, 10}));
  EXPECT_EQ(ops::sub(a, b).to_vector<double>(), (std::vector<double>{-3, -3, -4}));
  EXPECT_EQ(ops::mul(a, b).to_vector<double>(), (std::vector<double>{4, 10, 21}));
  EXPECT_EQ(ops::scale(a, -2).to_vector<double>(), (std::vector<double>{-2, -4, -6}));
}

TEST(Ops, ShapeMismatchNamesOpAndShapes) {
  Tensor a = Tensor::zeros({2, 3}, DType::f64), b = Tensor::zeros({3, 2}, DType::f64);
  try {
    ops::add(a, b);
    FAIL() << "no throw";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("add"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
    EXPECT_NE(m.find("[3, 2]"), std::string::npos) << m;
  }
  EXPECT_THROW(ops::matmul(a, a), Error);
}

TEST(Ops, GradcheckElementwise) {
  auto f_add = [](const std::vector<Tensor>& x) { return ops::add(x[0], x[1]); };
  auto f_sub = [](const std::vector<Tensor>& x) { return ops::sub(x[0], x[1]); };
  auto f_mul = [](const std::vector<Tensor>& x) { return ops::mul(x[0], x[1]); };
  auto f_scale = [](const std::vector<Tensor>& x) { return ops::scale(x[0], 0.7); };
  EXPECT_LT(test::gradcheck(f_add, {param({2, 3}, 1), param({2, 3}, 2)}), 1e-8);
  EXPECT_LT(test::gradcheck(f_sub, {param({2, 3}, 3), param({2, 3}, 4)}), 1e-8);
  EXPECT_LT(test::gradcheck(f_mul, {param({2, 3}, 5), param({2, 3}, 6)}), 1e-8);
  EXPECT_LT(test::gradcheck(f_scale, {param({4}, 7)}), 1e-8);
}

TEST(Ops, MatmulMatchesReferenceAndGradchecks) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor a = param(ta ? Shape{4, 3} : Shape{3, 4}, 11),
             b = param(tb ? Shape{5, 4} : Shape{4, 5}, 12);
      Tensor c = ops::matmul(a, b, ta, tb);
      ASSERT_EQ(c.shape(), (Shape{3, 5}));
      std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(),
                          cv = c.to_vector<double>();
      for (int m = 0; m < 3; ++m)
        for (int n = 0; n < 5; ++n) {
          double acc = 0;
          for (int k = 0; k < 4; ++k)
            acc += (ta ? av[k * 3 + m] : av[m * 4 + k]) * (tb ? bv[n * 4 + k] : bv[k * 5 + n]);
          EXPECT_NEAR(cv[m * 5 + n], acc, 1e-12);
        }
      auto f = [ta, tb](const std::vector<Tensor>& x) { return ops::matmul(x[0], x[1], ta, tb); };
      EXPECT_LT(test::gradcheck(f, {a, b}), 1e-8) << ta << tb;
    }
}

TEST(Ops, ReductionsAndViewsGradcheck) {
  auto f_sum = [](const std::vector<Tensor>& x) { return ops::sum(x[0], {0, 2}, false); };
  auto f_mean = [](const std::vector<Tensor>& x) { return ops::mean(x[0], {-1}, true); };
  auto f_perm = [](const std::vector<Tensor>& x) { return x[0].permute({2, 0, 1}).contiguous(); };
  auto f_reshape = [](const std::vector<Tensor>& x) {
    return x[0].permute({1, 0, 2}).reshape({-1, 2});
  };
  auto f_slice = [](const std::vector<Tensor>& x) { return x[0].slice(1, 1, 3).contiguous(); };
  EXPECT_LT(test::gradcheck(f_sum, {param({2, 3, 4}, 21)}), 1e-8);
  EXPECT_LT(test::gradcheck(f_mean, {param({2, 3, 4}, 22)}), 1e-8);
  EXPECT_LT(test::gradcheck(f_perm, {param({2, 3, 4}, 23)}), 1e-8);
  EXPECT_LT(test::gradcheck(f_reshape, {param({2, 3, 4}, 24)}), 1e-8);
  EXPECT_LT(test::gradcheck(f_slice, {param({2, 3, 4}, 25)}), 1e-8);
}

TEST(Ops, SumValues) {
  Tensor x = Tensor::from_vector<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(ops::sum(x, {0}).to_vector<double>(), (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(ops::sum(x, {1}, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(ops::sum(x, {1}).to_vector<double>(), (std::vector<double>{6, 15}));
  EXPECT_DOUBLE_EQ(ops::sum_all(x).item(), 21);
}

TEST(Autograd, ParameterGradientsAccumulateAndActivationGradsAreFreed) {
  Tensor w = param({3}, 31);
  Tensor x = test::random({3}, 32);
  for (int step = 0; step < 2; ++step) autograd::backward(ops::sum_all(ops::mul(w, x)));
  std::vector<double> g = w.grad().to_vector<double>(), xv = x.to_vector<double>();
  for (size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(g[i], 2 * xv[i]);
  EXPECT_EQ(autograd::tape_size(), 0u);
  w.zero_grad();
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{0, 0, 0}));
}

// zero_grad marks the buffer instead of filling it: the next backward overwrites the old values
// (it must not add to them), a second backward adds, the buffer is the same memory throughout,
// and a parameter that no backward reached reads as zeros.
TEST(Autograd, ZeroGradIsLazyAndTheNextBackwardOverwrites) {
  Tensor w = param({3}, 51), unused = param({2}, 52);
  Tensor x = test::random({3}, 53);
  autograd::backward(ops::sum_all(ops::mul(ops::mul(w, x), x)));
  autograd::backward(ops::sum_all(ops::add(ops::mul(unused, unused), unused)));
  const void* buffer = w.grad().data_ptr();
  ASSERT_NE(unused.grad().to_vector<double>(), (std::vector<double>{0, 0}));
  w.zero_grad();
  unused.zero_grad();
  autograd::backward(ops::sum_all(ops::mul(w, x)));  // overwrites: x, not x^2 + x
  const std::vector<double> xv = x.to_vector<double>();
  std::vector<double> g = w.grad().to_vector<double>();
  for (size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(g[i], xv[i]);
  autograd::backward(ops::sum_all(ops::mul(w, x)));  // then accumulates
  g = w.grad().to_vector<double>();
  for (size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(g[i], 2 * xv[i]);
  EXPECT_EQ(w.grad().data_ptr(), buffer);
  EXPECT_EQ(unused.grad().to_vector<double>(), (std::vector<double>{0, 0}));
}

// A leaf's first gradient of a backward waits in a list and is copied with others
// (core/autograd.cpp: copy_many, flushed every 96 copies or 8 MiB, before a hook or an add reads
// the leaf's buffer, and at the end). 150 parameters cross the count flush; `shared` is reached
// twice (its buffer must hold the first gradient before the second is added); `hooked`'s hook must
// see its final gradient; a 33 MiB parameter crosses the bytes flush alone; every gradient is
// checked after.
TEST(Autograd, DeferredLeafCopiesFlushBeforeReadsAndAtTheEnd) {
  std::vector<Tensor> ps;
  for (int i = 0; i < 150; ++i) ps.push_back(param({3}, 200 + uint64_t(i)));
  Tensor shared = param({3}, 401), hooked = param({3}, 402), big = param({int64_t(33) << 17}, 403);
  const Tensor x = test::random({3}, 404);
  std::vector<double> at_hook;
  hooked.grad_slot()->on_grad_final = [&] { at_hook = hooked.grad().to_vector<double>(); };
  for (int step = 0; step < 2; ++step) {  // the second after zero_grad: the stale buffers' path
    if (step == 1) {
      for (Tensor& p : ps) p.zero_grad();
      for (Tensor* p : {&shared, &hooked, &big}) p->zero_grad();
    }
    at_hook.clear();
    Tensor l = ops::sum_all(ops::mul(big, big));
    for (size_t i = 0; i < ps.size(); ++i)
      l = ops::add(l, ops::sum_all(ops::mul(ps[i], ops::scale(x, double(i + 1)))));
    l = ops::add(l, ops::sum_all(ops::mul(hooked, ops::mul(x, x))));
    l = ops::add(l, ops::sum_all(ops::mul(shared, x)));  // shared's two uses one after the other:
    l = ops::add(l, ops::sum_all(ops::mul(shared, ops::mul(x, x))));  // nothing flushes between
    autograd::backward(l);
    const std::vector<double> xv = x.to_vector<double>();
    for (size_t i = 0; i < ps.size(); ++i) {
      const std::vector<double> g = ps[i].grad().to_vector<double>();
      for (size_t k = 0; k < 3; ++k) ASSERT_DOUBLE_EQ(g[k], double(i + 1) * xv[k]) << "param " << i;
    }
    const std::vector<double> gs = shared.grad().to_vector<double>(),
                              gh = hooked.grad().to_vector<double>();
    ASSERT_EQ(at_hook.size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_DOUBLE_EQ(gs[k], xv[k] + xv[k] * xv[k]);
      EXPECT_DOUBLE_EQ(gh[k], xv[k] * xv[k]);
      EXPECT_DOUBLE_EQ(at_hook[k], xv[k] * xv[k]);
    }
    const std::vector<double> gb = big.grad().to_vector<double>(), bv = big.to_vector<double>();
    for (size_t k = 0; k < gb.size(); k += 4099) ASSERT_DOUBLE_EQ(gb[k], 2 * bv[k]);
    EXPECT_DOUBLE_EQ(gb.back(), 2 * bv.back());
  }
}

TEST(Autograd, NoGradRecordsNothing) {
  Tensor w = param({3}, 41);
  autograd::NoGradGuard ng;
  Tensor y = ops::mul(w, w);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(autograd::tape_size(), 0u);
}

TEST(Autograd, BackwardOnNonGradLossThrows) {
  Tensor x = test::random({3}, 51);
  EXPECT_THROW(autograd::backward(ops::sum_all(x)), Error);
}
