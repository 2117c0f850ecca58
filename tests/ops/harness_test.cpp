// The harness checks itself: each mode fails on an op that is wrong in the way the mode is meant
// to catch, and passes on a correct one.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "core/autograd.h"
#include "core/ops.h"
#include "harness.h"
#include "test_util.h"

namespace hg::test::ops {
namespace {

// y = x, with a backward that returns `factor` * dy (right only for factor 1).
Tensor identity_with_grad_factor(const Tensor& x, double factor) {
  Tensor y;
  {
    autograd::NoGradGuard ng;
    y = x.clone();
  }
  autograd::record("identity_test", {x}, {y}, [factor](autograd::Backward& g) {
    return std::vector<Tensor>{hg::ops::scale(g.grad_output(0), factor)};
  });
  return y;
}

OpCase self_case(OpFn fn) {
  return {.op = "self_test", .name = "x", .inputs = {act("x", {2, 3})}, .fn = std::move(fn),
          .flops = {1, 1}};
}

TEST(OpHarness, GradModeCatchesAWrongBackward) {
  run_grad(self_case([](const std::vector<Tensor>& v) { return identity_with_grad_factor(v[0], 1.0); }));
  EXPECT_NONFATAL_FAILURE(
      run_grad(self_case([](const std::vector<Tensor>& v) { return identity_with_grad_factor(v[0], 1.1); })),
      "worst relative error");
}

// The bf16 contract through recorded casts: f32 math on the widened input, rounded once. An op
// that scales its bf16 result by 1.05 (or returns f32) breaks it.
TEST(OpHarness, Bf16ModeCatchesAWrongResultOrDtype) {
  auto op = [](double bf16_factor, bool round_output) {
    return self_case([bf16_factor, round_output](const std::vector<Tensor>& v) {
      const bool bf16 = v[0].dtype() == DType::bf16;
      Tensor y = hg::ops::scale(v[0].to(DType::f32), bf16 ? bf16_factor : 1.0);
      return bf16 && round_output ? y.to(DType::bf16) : y;
    });
  };
  EXPECT_EQ(check_bf16_cpu(op(1.0, true)), "");
  EXPECT_NE(check_bf16_cpu(op(1.05, true)).find("NOT <"), std::string::npos);
  EXPECT_NE(check_bf16_cpu(op(1.0, false)).find("output dtype f32"), std::string::npos);
}

TEST(OpHarness, CompareReportsMissingAndUnexpectedGradients) {
  const OpCase c = self_case([](const std::vector<Tensor>& v) { return v[0]; });
  Result a{.y = Tensor::zeros({2, 3}), .grads = {Tensor::zeros({2, 3})}};
  Result b{.y = Tensor::zeros({2, 3}), .grads = {Tensor()}};
  const std::vector<Diff> d = compare(c, a, b, kF32Tol, kF32Tol);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_FALSE(d[1].error < d[1].bound);
  EXPECT_NE(format_diffs(d).find("grad x (unexpected)"), std::string::npos) << format_diffs(d);
  Result half{.y = Tensor::full({2, 3}, 1.0), .grads = {Tensor()}};
  Result two{.y = Tensor::full({2, 3}, 2.0), .grads = {Tensor()}};
  const std::string msg = format_diffs(compare(c, half, two, kF32Tol, kF32Tol));
  EXPECT_NE(msg.find("y 0.5 NOT < 1e-05"), std::string::npos) << msg;
}

TEST(OpHarness, InputsHoldTheSameValuesInEveryMode) {
  const OpCase& c = [] () -> const OpCase& {
    for (const OpCase& x : registry())
      if (x.id() == "layer_norm_nhwc_2x3x3x5") return x;
    throw Error("no layer_norm_nhwc_2x3x3x5");
  }();
  const std::vector<Tensor> f64 = make_inputs(c, DType::f64, Device::cpu);
  const std::vector<Tensor> f32 = make_inputs(c, DType::f32, Device::cpu);
  const std::vector<Tensor> b16 = make_bf16_inputs(c, Device::cpu);
  ASSERT_EQ(f64.size(), 3u);
  EXPECT_EQ(b16[0].dtype(), DType::bf16);  // activation
  EXPECT_EQ(b16[1].dtype(), DType::f32);   // parameter: the f32 master
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(f64[i].requires_grad() && f32[i].requires_grad() && b16[i].requires_grad());
    EXPECT_LT(test::rel_error(f32[i], f64[i]), 1e-7);
    EXPECT_LT(test::rel_error(b16[i], f64[i]), 1.0 / 256);
    // the master parameter holds bf16-representable values: rounding it changes nothing
    EXPECT_EQ(b16[i].to(DType::bf16).to_vector<float>(), b16[i].to_vector<float>());
  }
  // weight in [0.5, 1.5) as the case says
  for (double w : f64[1].to_vector<double>()) EXPECT_TRUE(w >= 0.5 && w < 1.5) << w;
}

}  // namespace
}  // namespace hg::test::ops
