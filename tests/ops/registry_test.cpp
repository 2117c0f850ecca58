// The gtest driver of the op harness: every registered case becomes tests of its modes.
//   Ops/OpGrad.FiniteDifferences/<case>   f64 finite differences (CPU)
//   Ops/OpBf16.CpuReference/<case>        the bf16 CPU reference (CPU)
//   Gpu/OpDevice.MatchesCpu/<case>        f32, tf32 and bf16 on CUDA against the CPU (label gpu)
// and the registry's own rules (every case well-formed, every bound with a reason).
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <set>

#include "harness.h"

namespace hg::test::ops {
namespace {

std::string param_name(const ::testing::TestParamInfo<const OpCase*>& info) {
  std::string s = info.param->id();
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

class OpGrad : public ::testing::TestWithParam<const OpCase*> {};
class OpBf16 : public ::testing::TestWithParam<const OpCase*> {};
class OpDevice : public ::testing::TestWithParam<const OpCase*> {};

TEST_P(OpGrad, FiniteDifferences) { run_grad(*GetParam()); }

// A pending case is run and its failure printed, but only an unexpected pass fails the test
// (so the flag cannot outlive the missing bf16 support).
void expect_bf16(const OpCase& c, const std::string& where, const std::string& failure) {
  if (!c.bf16_pending) {
    EXPECT_EQ(failure, "") << c.id() << " (" << c.shapes() << ") " << where;
    return;
  }
  if (failure.empty()) {
    ADD_FAILURE() << c.id() << " " << where
                  << " passes: bf16 is supported now, set bf16_pending = false in its entry";
  } else {
    std::printf("[ PENDING  ] %s %s fails (bf16 pending): %s\n", c.id().c_str(), where.c_str(),
                failure.c_str());
    ::testing::Test::RecordProperty("bf16_pending", failure);
  }
}

TEST_P(OpBf16, CpuReference) {
  const OpCase& c = *GetParam();
  expect_bf16(c, "bf16 on the CPU", check_bf16_cpu(c));
}

TEST_P(OpDevice, MatchesCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  const OpCase& c = *GetParam();
  for (const Precision& p : precisions()) {
    SCOPED_TRACE(p.name);
    const std::string failure = check_device(c, p);
    if (p.storage == DType::bf16)
      expect_bf16(c, "bf16 on CUDA", failure);
    else
      EXPECT_EQ(failure, "") << c.id() << " (" << c.shapes() << ") " << p.name << " on CUDA";
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, OpGrad, ::testing::ValuesIn(cases_with(kGrad)), param_name);
INSTANTIATE_TEST_SUITE_P(Ops, OpBf16, ::testing::ValuesIn(cases_with(kBf16)), param_name);
INSTANTIATE_TEST_SUITE_P(Gpu, OpDevice, ::testing::ValuesIn(cases_with(kDevice)), param_name);

// Every case: a unique id, named inputs, something to differentiate, bounds with reasons, a FLOP
// count, at least one mode; every op has a grad case and a bf16 case.
TEST(OpRegistry, EveryCaseIsWellFormed) {
  ASSERT_FALSE(registry().empty());
  std::set<std::string> ids, ops, with_grad, with_bf16, with_device, cpu_only_ops;
  for (const OpCase& c : registry()) {
    SCOPED_TRACE(c.id());
    EXPECT_TRUE(ids.insert(c.id()).second) << "duplicate id";
    EXPECT_TRUE(c.fn) << "no op function";
    EXPECT_NE(c.modes, 0u);
    bool differentiable = false;
    for (const Input& in : c.inputs) {
      EXPECT_FALSE(in.name.empty());
      differentiable = differentiable || (in.grad && in.role != Role::labels);
    }
    EXPECT_TRUE(differentiable) << "no input requires a gradient";
    EXPECT_GT(c.flops.fwd + c.flops.bwd, 0.0) << "no FLOP count";
    for (const Tol& t : {c.grad, c.grad_step, c.f32, c.tf32, c.bf16_out, c.bf16_grad,
                         c.bf16_device}) {
      EXPECT_GT(t.value, 0.0);
      EXPECT_TRUE(t.reason != nullptr && std::string(t.reason).size() > 10) << "bound without a reason";
    }
    for (const std::optional<Tol>& t : {c.bf16_device_param_grad, c.bf16_device_ulp}) {
      if (!t) continue;
      EXPECT_GT(t->value, 0.0);
      EXPECT_TRUE(t->reason != nullptr && std::string(t->reason).size() > 10)
          << "bound without a reason";
    }
    for (const auto& [name, t] : c.f32_grad_overrides) {
      bool known = false;
      for (const Input& in : c.inputs) known = known || in.name == name;
      EXPECT_TRUE(known) << "override for unknown input " << name;
      EXPECT_TRUE(t.reason != nullptr && std::string(t.reason).size() > 10);
    }
    ops.insert(c.op);
    if (c.modes & kGrad) with_grad.insert(c.op);
    if (c.modes & kBf16) with_bf16.insert(c.op);
    if (c.modes & kDevice) with_device.insert(c.op);
    if (c.cpu_only) {
      cpu_only_ops.insert(c.op);
      EXPECT_FALSE(c.modes & kDevice) << "a CPU-only op in device mode";
    }
  }
  for (const std::string& op : ops) {
    EXPECT_TRUE(with_grad.count(op)) << op << " has no grad case";
    EXPECT_TRUE(with_bf16.count(op)) << op << " has no bf16 case";
    EXPECT_TRUE(with_device.count(op) || cpu_only_ops.count(op)) << op << " has no device case";
  }
}

// The list of pending bf16 cases, printed once (the report of what is not supported yet).
TEST(OpRegistry, ListsPendingBf16Cases) {
  int pending = 0;
  for (const OpCase& c : registry())
    if (c.bf16_pending) {
      std::printf("  bf16 pending: %s\n", c.id().c_str());
      ++pending;
    }
  std::printf("  %d of %zu cases bf16 pending\n", pending, registry().size());
  SUCCEED();
}

}  // namespace
}  // namespace hg::test::ops
