// The perf mode on the CPU (CI has no GPU): ceilings measured, every row of a small case timed
// with its bytes, FLOPs and percentages, the table printed; bad arguments rejected.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "perf.h"

namespace hg::test::ops {
namespace {

const OpCase* find_case(const std::string& id) {
  for (const OpCase& c : registry())
    if (c.id() == id) return &c;
  return nullptr;
}

TEST(OpPerf, CpuRowsHaveTimesRatesAndPercentages) {
  PerfOptions opt{.device = Device::cpu, .dtypes = {"f32"}, .warmup = 1, .iters = 2};
  const Ceilings ceil = measure_ceilings(opt);
  EXPECT_GT(ceil.gbps, 0.0);
  EXPECT_GT(ceil.tflops.at("f32"), 0.0);
  const OpCase* c = find_case("linear_odd_37x19_23");
  ASSERT_NE(c, nullptr);
  const std::vector<PerfRow> rows = run_perf({c}, opt, ceil);
  ASSERT_EQ(rows.size(), 2u);  // fwd, fwd+bwd
  for (const PerfRow& r : rows) {
    EXPECT_EQ(r.error, "");
    EXPECT_GT(r.ms, 0.0);
    // x, weight, bias and y in the forward: (37*19 + 23*19 + 23 + 37*23) floats
    if (r.pass == "fwd") {
      EXPECT_DOUBLE_EQ(r.bytes, 4.0 * (37 * 19 + 23 * 19 + 23 + 37 * 23));
      EXPECT_DOUBLE_EQ(r.flops, c->flops.fwd);
    } else {
      EXPECT_DOUBLE_EQ(r.flops, c->flops.fwd + c->flops.bwd);
    }
    EXPECT_TRUE(std::isfinite(r.gbps) && r.gbps > 0);
    EXPECT_TRUE(std::isfinite(r.percent) && r.percent > 0);
  }
  std::ostringstream os;
  print_perf(os, rows, ceil, opt);
  const std::string table = os.str();
  EXPECT_NE(table.find("linear_odd_37x19_23"), std::string::npos) << table;
  EXPECT_NE(table.find("TFLOP/s"), std::string::npos) << table;
  EXPECT_NE(table.find("fwd+bwd"), std::string::npos) << table;
  std::printf("%s", table.c_str());
}

TEST(OpPerf, BadArgumentsExitWithStatus2) {
  const char* bad_dtype[] = {"test_ops", "--perf", "--device", "cpu", "--dtype", "f16"};
  EXPECT_EQ(perf_main(6, const_cast<char**>(bad_dtype)), 2);
  const char* unknown[] = {"test_ops", "--perf", "--fast"};
  EXPECT_EQ(perf_main(3, const_cast<char**>(unknown)), 2);
}

TEST(OpPerf, EveryOpHasAPerfCase) {
  std::set<std::string> ops, perf;
  for (const OpCase& c : registry()) {
    ops.insert(c.op);
    if (c.modes & kPerf) perf.insert(c.op);
  }
  // composites and views measure nothing of their own
  for (const char* skip : {"head_chain", "flatten", "add", "sub", "mul", "scale", "sum", "mean",
                           "sum_all", "residual_add"})
    ops.erase(skip);
  for (const std::string& op : ops) EXPECT_TRUE(perf.count(op)) << op << " has no perf case";
}

}  // namespace
}  // namespace hg::test::ops
