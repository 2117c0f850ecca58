// Perf mode of the op harness (perf.h).
#include "perf.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>

#include "core/autograd.h"
#include "core/ops.h"
#include "test_util.h"

#ifdef HAARGRAD_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/context.h"
#endif

namespace hg::test::ops {
namespace {

void sync(Device d) {
#ifdef HAARGRAD_WITH_CUDA
  if (d == Device::cuda) cuda::synchronize();
#else
  (void)d;
#endif
}

/// Wall time of a stretch of work: CUDA events on the GPU (device time, no host gaps counted
/// twice), the steady clock on the CPU. stop() waits for the work and returns milliseconds.
class Timer {
 public:
  explicit Timer(Device d) : device_(d) {
#ifdef HAARGRAD_WITH_CUDA
    if (d == Device::cuda) {
      HG_CHECK(cudaEventCreate(&ev_[0]) == cudaSuccess && cudaEventCreate(&ev_[1]) == cudaSuccess,
               "perf: cudaEventCreate failed");
    }
#endif
  }
  ~Timer() {
#ifdef HAARGRAD_WITH_CUDA
    if (device_ == Device::cuda) {
      cudaEventDestroy(ev_[0]);
      cudaEventDestroy(ev_[1]);
    }
#endif
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  void start() {
#ifdef HAARGRAD_WITH_CUDA
    if (device_ == Device::cuda) {
      HG_CHECK(cudaEventRecord(ev_[0]) == cudaSuccess, "perf: cudaEventRecord failed");
      return;
    }
#endif
    t0_ = std::chrono::steady_clock::now();
  }
  double stop_ms() {
#ifdef HAARGRAD_WITH_CUDA
    if (device_ == Device::cuda) {
      HG_CHECK(cudaEventRecord(ev_[1]) == cudaSuccess && cudaEventSynchronize(ev_[1]) == cudaSuccess,
               "perf: cudaEventRecord / Synchronize failed");
      float ms = 0;
      HG_CHECK(cudaEventElapsedTime(&ms, ev_[0], ev_[1]) == cudaSuccess, "perf: cudaEventElapsedTime");
      return ms;
    }
#endif
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  Device device_;
  std::chrono::steady_clock::time_point t0_;
#ifdef HAARGRAD_WITH_CUDA
  cudaEvent_t ev_[2] = {nullptr, nullptr};
#endif
};

/// Sets TF32 math on the GPU while it lives (nothing on the CPU).
class Tf32 {
 public:
  Tf32(Device d, bool on) : device_(d) {
#ifdef HAARGRAD_WITH_CUDA
    if (d == Device::cuda) {
      saved_ = cuda::allow_tf32();
      cuda::set_allow_tf32(on);
    }
#else
    (void)on;
#endif
  }
  ~Tf32() {
#ifdef HAARGRAD_WITH_CUDA
    if (device_ == Device::cuda) cuda::set_allow_tf32(saved_);
#endif
  }

 private:
  Device device_;
  bool saved_ = false;
};

/// Milliseconds per call of `work` after `warmup` calls, over `iters` calls.
template <typename F>
double time_ms(Device d, int warmup, int iters, F&& work) {
  for (int i = 0; i < warmup; ++i) work();
  sync(d);
  Timer t(d);
  t.start();
  for (int i = 0; i < iters; ++i) work();
  return t.stop_ms() / iters;
}

const Precision* find_precision(const std::string& name) {
  for (const Precision& p : precisions())
    if (name == p.name) return &p;
  return nullptr;
}

PerfRow time_case(const OpCase& c, const Precision& p, const PerfOptions& opt, bool backward) {
  PerfRow row{.id = c.id(), .shapes = c.inputs.empty() ? "" : shape_str(c.inputs[0].shape),
              .dtype = p.name, .pass = backward ? "fwd+bwd" : "fwd"};
  try {
    Tf32 tf32(opt.device, p.tf32);
    std::vector<Tensor> in = p.storage == DType::bf16 ? make_bf16_inputs(c, opt.device)
                                                      : make_inputs(c, p.storage, opt.device);
    Tensor y0;
    {
      autograd::NoGradGuard ng;
      y0 = c.fn(in);
    }
    Tensor gy;
    {
      autograd::NoGradGuard ng;
      gy = test::random(y0.shape(), 3, DType::f32).to(y0.dtype()).to(opt.device);
    }
    double bytes = static_cast<double>(y0.nbytes()), flops = c.flops.fwd;
    for (const Tensor& t : in) bytes += static_cast<double>(t.nbytes());
    if (backward) {
      flops += c.flops.bwd;
      bytes += static_cast<double>(gy.nbytes());
      for (const Tensor& t : in)
        bytes += static_cast<double>(t.nbytes()) * (t.requires_grad() ? 2 : 1);  // read + grad
    }
    y0 = Tensor();
    auto step = [&] {
      if (!backward) {
        autograd::NoGradGuard ng;
        Tensor y = c.fn(in);
        return;
      }
      for (const Tensor& t : in) t.clear_grad();
      autograd::backward(c.fn(in), gy);
    };
    row.ms = time_ms(opt.device, opt.warmup, opt.iters, step);
    row.bytes = bytes;
    row.flops = flops;
    row.gbps = bytes / (row.ms * 1e-3) / 1e9;
    row.tflops = flops / (row.ms * 1e-3) / 1e12;
  } catch (const Error& e) {
    autograd::clear_tape();
    row.error = e.what();
  }
  return row;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

Ceilings measure_ceilings(const PerfOptions& opt) {
  const Device d = opt.device;
  Ceilings c;
  {
    autograd::NoGradGuard ng;
    const int64_t n = d == Device::cuda ? int64_t(1) << 28 : int64_t(1) << 24;  // 1 GiB / 64 MiB
    Tensor a = Tensor::full({n}, 1.0, DType::f32, d), b = Tensor::empty({n}, DType::f32, d);
    const double ms = time_ms(d, 2, d == Device::cuda ? 20 : 5, [&] { b.copy_(a); });
    c.gbps = 2.0 * static_cast<double>(a.nbytes()) / (ms * 1e-3) / 1e9;
  }
  const int64_t m = d == Device::cuda ? 8192 : 512;
  for (const std::string& name : opt.dtypes) {
    const Precision* p = find_precision(name);
    if (!p) continue;
    try {
      autograd::NoGradGuard ng;
      Tf32 tf32(d, p->tf32);
      Tensor a = test::random({m, m}, 1, DType::f32).to(p->storage).to(d);
      Tensor b = test::random({m, m}, 2, DType::f32).to(p->storage).to(d);
      const double ms = time_ms(d, 2, d == Device::cuda ? 10 : 3, [&] { Tensor y = hg::ops::matmul(a, b); });
      c.tflops[name] = 2.0 * double(m) * double(m) * double(m) / (ms * 1e-3) / 1e12;
    } catch (const Error&) {
      c.tflops[name] = 0;  // this dtype's GEMM does not run here (yet)
    }
  }
  return c;
}

std::vector<PerfRow> run_perf(const std::vector<const OpCase*>& cases, const PerfOptions& opt,
                              const Ceilings& ceilings) {
  std::vector<PerfRow> rows;
  for (const OpCase* c : cases) {
    if (!opt.filter.empty() && c->id().find(opt.filter) == std::string::npos) continue;
    for (const std::string& name : opt.dtypes) {
      const Precision* p = find_precision(name);
      HG_CHECK(p != nullptr, "perf: unknown dtype '", name, "' (f32, tf32 or bf16)");
      for (bool backward : {false, true}) {
        PerfRow r = time_case(*c, *p, opt, backward);
        if (r.error.empty()) {
          double peak = ceilings.tflops.count(name) ? ceilings.tflops.at(name) : 0;
          if (peak <= 0 && ceilings.tflops.count("f32")) peak = ceilings.tflops.at("f32");
          const double ridge = peak > 0 ? peak * 1e12 / (ceilings.gbps * 1e9) : INFINITY;
          r.compute_bound = r.flops / r.bytes > ridge;
          r.percent = 100.0 * (r.compute_bound ? r.tflops / peak : r.gbps / ceilings.gbps);
        }
        rows.push_back(r);
      }
    }
  }
  return rows;
}

void print_perf(std::ostream& os, const std::vector<PerfRow>& rows, const Ceilings& ceilings,
                const PerfOptions& opt) {
  char line[512];
  os << "op harness perf on " << device_name(opt.device) << ", " << opt.warmup << " warm-up + "
     << opt.iters << " timed iterations; ceilings: copy " << std::lround(ceilings.gbps) << " GB/s";
  for (const auto& [name, t] : ceilings.tflops) {
    std::snprintf(line, sizeof line, ", GEMM %s %.1f TFLOP/s", name.c_str(), t);
    os << (t > 0 ? line : (", GEMM " + name + " n/a").c_str());
  }
  os << "\n";
  std::snprintf(line, sizeof line, "%-44s %-18s %-5s %-8s %10s %9s %9s %7s  %s\n", "op case",
                "shape (x)", "dtype", "pass", "time ms", "GB/s", "TFLOP/s", "% ceil", "bound");
  os << line;
  for (const PerfRow& r : rows) {
    if (!r.error.empty()) {
      std::snprintf(line, sizeof line, "%-44s %-18s %-5s %-8s  error: ", r.id.c_str(),
                    r.shapes.c_str(), r.dtype.c_str(), r.pass.c_str());
      os << line << r.error.substr(0, 120) << "\n";
      continue;
    }
    std::snprintf(line, sizeof line, "%-44s %-18s %-5s %-8s %10.4f %9.1f %9.3f %6.1f%%  %s\n",
                  r.id.c_str(), r.shapes.c_str(), r.dtype.c_str(), r.pass.c_str(), r.ms, r.gbps,
                  r.tflops, r.percent, r.compute_bound ? "compute" : "memory");
    os << line;
  }
}

int perf_main(int argc, char** argv) {
  PerfOptions opt;
  bool device_given = false, dtypes_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(str("perf: ", a, " needs a value"));
      return argv[++i];
    };
    try {
      if (a == "--perf") continue;
      if (a == "--device") {
        const std::string v = value();
        HG_CHECK(v == "cuda" || v == "cpu", "perf: --device ", v, " (cuda or cpu)");
        opt.device = v == "cuda" ? Device::cuda : Device::cpu;
        device_given = true;
      } else if (a == "--dtype") {
        opt.dtypes = split(value(), ',');
        dtypes_given = true;
        for (const std::string& d : opt.dtypes)
          HG_CHECK(find_precision(d), "perf: --dtype ", d, " (f32, tf32 or bf16)");
      } else if (a == "--filter") {
        opt.filter = value();
      } else if (a == "--warmup") {
        opt.warmup = std::stoi(value());
      } else if (a == "--iters") {
        opt.iters = std::stoi(value());
        HG_CHECK(opt.iters > 0, "perf: --iters must be > 0");
      } else if (a == "--all") {
        opt.all = true;
      } else {
        throw Error(str("perf: unknown argument '", a, "'"));
      }
    } catch (const std::exception& e) {
      std::cerr << e.what() << "\nusage: test_ops --perf [--device cuda|cpu] [--dtype f32,tf32,bf16]"
                   " [--filter SUBSTRING] [--warmup N] [--iters N] [--all]\n";
      return 2;
    }
  }
  if (!device_given) opt.device = gpu_available() ? Device::cuda : Device::cpu;
  if (opt.device == Device::cuda && !gpu_available()) {
    std::cerr << "perf: no CUDA device (use --device cpu)\n";
    return 2;
  }
  if (opt.device == Device::cpu && !dtypes_given) opt.dtypes = {"f32", "bf16"};  // no TF32 on a CPU
  std::vector<const OpCase*> cases = cases_with(opt.all ? Mode(kPerf | kDevice) : kPerf);
  const Ceilings ceilings = measure_ceilings(opt);
  const std::vector<PerfRow> rows = run_perf(cases, opt, ceilings);
  print_perf(std::cout, rows, ceilings, opt);
  return 0;
}

}  // namespace hg::test::ops
