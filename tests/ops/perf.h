// Perf mode of the op harness: each case's forward and forward+backward timed after warm-up
// (CUDA events on the GPU, the host clock on the CPU), with the bytes and FLOPs it must move and
// do, against ceilings measured in the same process (a device-to-device copy for bandwidth, a
// large GEMM per dtype for arithmetic).
//
//   test_ops --perf [--device cuda|cpu] [--dtype f32,tf32,bf16] [--filter SUBSTRING]
//                   [--warmup N] [--iters N] [--all]
//
// Bytes are the minimum traffic: every input and the output once in the forward; the inputs
// (what the backward reads back), the upstream gradient and every gradient written in the
// backward. A row is memory bound when its FLOPs per byte are below the ceilings' ridge point
// (peak FLOP/s / peak bytes/s), and "% ceil" is then GB/s over the copy bandwidth, else TFLOP/s
// over the GEMM rate of the row's dtype.
#pragma once

#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "harness.h"

namespace hg::test::ops {

struct PerfOptions {
  Device device = Device::cuda;
  std::vector<std::string> dtypes = {"f32", "tf32", "bf16"};
  std::string filter = {};  ///< run cases whose id contains it
  int warmup = 3, iters = 20;
  bool all = false;  ///< also the device cases, not only those marked kPerf
};

/// Measured ceilings: copy bandwidth (GB/s) and GEMM rate per dtype name (TFLOP/s; 0 when the
/// dtype's GEMM could not run).
struct Ceilings {
  double gbps = 0;
  std::map<std::string, double> tflops;
};

struct PerfRow {
  std::string id, shapes, dtype, pass;  ///< pass: "fwd" or "fwd+bwd"
  double ms = 0, bytes = 0, flops = 0;
  double gbps = 0, tflops = 0, percent = 0;
  bool compute_bound = false;
  std::string error = {};  ///< why the row could not run ("" when it ran)
};

Ceilings measure_ceilings(const PerfOptions& opt);
/// Times every case of `cases` in every dtype of opt.dtypes (a dtype of the device's precisions()).
std::vector<PerfRow> run_perf(const std::vector<const OpCase*>& cases, const PerfOptions& opt,
                              const Ceilings& ceilings);
void print_perf(std::ostream& os, const std::vector<PerfRow>& rows, const Ceilings& ceilings,
                const PerfOptions& opt);
/// The command line above; returns the process exit status (2 on a bad argument).
int perf_main(int argc, char** argv);

}  // namespace hg::test::ops
