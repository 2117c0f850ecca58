// The harness checks itself: each mode fails on an op that is wrong in the way the mode is meant
// to catch, and passes on a correct one.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>

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

// The per-element bf16 rule (bf16_device_ulp): one bf16 ulp of each element is free, the excess
// counts relative to the largest reference element; a NaN or an all-zero reference fails.
TEST(OpHarness, Bf16UlpRuleAllowsOneUlpPerElement) {
  const Tensor want = Tensor::from_vector<double>({3}, {256, 1, -0.5}).to(DType::bf16);
  // one ulp off each element (2, 2^-7, 2^-8): no excess; two ulps off the small one: 2^-7 / 256
  const Tensor one = Tensor::from_vector<double>({3}, {258, 1 + 1.0 / 128, -0.5 - 1.0 / 256});
  const Tensor two = Tensor::from_vector<double>({3}, {256, 1 + 2.0 / 128, -0.5});
  EXPECT_EQ(bf16_ulp_excess(one.to(DType::bf16), want), 0.0);
  EXPECT_DOUBLE_EQ(bf16_ulp_excess(two.to(DType::bf16), want), 1.0 / 128 / 256);
  EXPECT_EQ(bf16_ulp_excess(Tensor::full({3}, NAN).to(DType::bf16), want), INFINITY);
  EXPECT_EQ(bf16_ulp_excess(want, Tensor::zeros({3}).to(DType::bf16)), INFINITY);
  // compare() applies it to bf16 tensors only, unless the input has an override
  const OpCase c = self_case([](const std::vector<Tensor>& v) { return v[0]; });
  const Result got{.y = two.to(DType::bf16), .grads = {two.to(DType::bf16)}};
  const Result ref{.y = want, .grads = {want}};
  const Tol ulp{1e-5, "one bf16 ulp plus the f32 tolerance"};
  std::vector<Diff> d = compare(c, got, ref, kBf16DeviceTol, kBf16DeviceTol, {}, ulp);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].what, "y (beyond 1 bf16 ulp)");
  EXPECT_FALSE(d[0].ok());  // 3.1e-5 of the largest element beyond one ulp
  EXPECT_TRUE(compare(c, got, ref, kBf16DeviceTol, kBf16DeviceTol)[0].ok());  // 6e-5 < 2e-2
  d = compare(c, got, ref, kBf16DeviceTol, kBf16DeviceTol, {{"x", kBf16DeviceTol}}, ulp);
  EXPECT_EQ(d[1].what, "grad x");
  EXPECT_TRUE(d[1].ok());
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
