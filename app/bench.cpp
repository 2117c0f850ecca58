// `haargrad bench`: ConvNeXt vs WTConvNeXt end to end. For every model x precision x WTConv mode,
// times a full training step (zero_grad, forward, cross-entropy, backward, AdamW) and inference on
// synthetic data already on the device, with timm benchmark.py's columns plus memory per category,
// steady-state allocation counts and the driver's view; optionally a per-op breakdown. A batch
// that does not fit is reported (and with --retry halved until it fits), never a crash.
// docs/benchmark.md describes the columns.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "app/bench_report.h"
#include "app/bench_run.h"
#include "app/command.h"
#include "core/error.h"
#include "models/config.h"

namespace hg::app {
namespace {

struct BenchArgs {
  std::vector<std::string> models{"convnext_tiny", "wtconvnext_tiny"};
  std::vector<std::string> precisions;  // default: fp32,tf32 on cuda, fp32 on the cpu
  std::vector<std::string> wtconv{"fused", "unfused"};
  int batch = 128, img_size = 224, steps = 20, warmup = 5;
  std::string device = "cuda";
  std::string output;
  bool retry = false;
  bool breakdown = false;
  uint64_t seed = 0;
};

// "asked for N bytes" and "M bytes (... MiB) free" from our allocator's message, for the report.
std::string describe_oom(const std::string& msg) {
  std::smatch m;
  std::string out;
  if (std::regex_search(msg, m, std::regex("asked for ([0-9]+) bytes")))
    out += str("asked for ", std::stoll(m[1]) >> 20, " MiB");
  if (std::regex_search(msg, m, std::regex("([0-9]+) bytes \\([0-9]+ MiB\\) free")))
    out += str(out.empty() ? "" : ", ", std::stoll(m[1]) >> 20, " MiB free");
  return out.empty() ? msg : out;
}

// Runs one configuration; on out-of-memory prints what happened and, with --retry, halves the
// batch until the row fits (or batch 1 fails too). Other errors propagate.
BenchResult run_with_retry(BenchConfig cfg, bool retry) {
  const int requested = cfg.batch;
  while (true) {
    try {
      BenchResult r = run_bench_row(cfg);
      r.requested_batch = requested;
      return r;
    } catch (const Error& e) {
      const std::string msg = e.what();
      if (!is_out_of_memory(msg)) throw;
      std::printf("  out of memory at batch %d (%s)%s\n", cfg.batch, describe_oom(msg).c_str(),
                  retry && cfg.batch > 1 ? str("; retrying at batch ", cfg.batch / 2).c_str()
                                         : retry ? "" : "; --retry halves the batch until it fits");
      std::fflush(stdout);
      if (!retry || cfg.batch == 1) {
        BenchResult r;
        r.config = cfg;
        r.requested_batch = requested;
        r.error = msg;
        return r;
      }
      cfg.batch /= 2;
    }
  }
}

void run_bench(const BenchArgs& a) {
  HG_CHECK(a.device == "cuda" || a.device == "cpu", "bench: --device must be cuda or cpu, got '", a.device, "'");
  const Device device = a.device == "cuda" ? Device::cuda : Device::cpu;
  if (!a.output.empty()) check_output_path(a.output);
  std::vector<std::string> precisions = a.precisions;
  if (precisions.empty()) precisions = device == Device::cuda ? std::vector<std::string>{"fp32", "tf32", "bf16"}
                                                              : std::vector<std::string>{"fp32"};
  for (const std::string& w : a.wtconv)
    HG_CHECK(w == "fused" || w == "unfused" || w == "reference", "bench: unknown --wtconv mode '", w,
             "' (fused, or unfused = reference as the config key wtconv_mode calls it)");

  // Every combination, checked up front so a typo fails before minutes of benchmarking.
  std::vector<BenchConfig> configs;
  for (const std::string& model : a.models) {
    const ModelConfig mc = model_config(model);  // throws for an unknown name, listing the known ones
    for (const std::string& p : precisions) {
      HG_CHECK(p == "fp32" || p == "tf32" || p == "bf16", "bench: unknown precision '", p,
               "' (fp32, tf32 or bf16)");
      HG_CHECK(p != "tf32" || device == Device::cuda, "bench: precision tf32 needs --device cuda");
      const std::vector<std::string> modes = mc.wtconv ? a.wtconv : std::vector<std::string>{""};
      for (const std::string& w : modes) {
        BenchConfig c;
        c.model = model;
        c.precision = p;
        c.wtconv = w;
        c.batch = a.batch;
        c.img_size = a.img_size;
        c.steps = a.steps;
        c.warmup = a.warmup;
        c.device = device;
        c.breakdown = a.breakdown;
        c.seed = a.seed;
        configs.push_back(c);
      }
    }
  }

  std::vector<BenchResult> rows;
  for (const BenchConfig& c : configs) {
    std::printf("bench: %s%s %s batch %d @%d on %s: %d warm-up + %d timed steps\n", c.model.c_str(),
                c.wtconv.empty() ? "" : (" (" + c.wtconv + ")").c_str(), c.precision.c_str(), c.batch,
                c.img_size, a.device.c_str(), std::max(1, c.warmup), c.steps);
    std::fflush(stdout);
    rows.push_back(run_with_retry(c, a.retry));
    print_breakdown(rows.back());
  }
  print_tables(rows);
  if (!a.output.empty()) {
    write_rows(a.output, rows);
    std::printf("\nwrote %zu rows to %s\n", rows.size(), a.output.c_str());
  }
}

}  // namespace

HG_REGISTER_COMMAND([](CLI::App& root) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* cmd = root.add_subcommand(
      "bench", "ConvNeXt vs WTConvNeXt end to end: training-step and inference throughput and memory");
  cmd->add_option("--models", a->models, "comma-separated model names")->delimiter(',');
  cmd->add_option("--batch", a->batch, "batch size")->check(CLI::PositiveNumber);
  cmd->add_option("--img-size", a->img_size, "input height = width in pixels")->check(CLI::PositiveNumber);
  cmd->add_option("--precision", a->precisions, "fp32, tf32 and/or bf16, comma-separated (default fp32,tf32,bf16 on cuda)")
      ->delimiter(',');
  cmd->add_option("--wtconv", a->wtconv, "WTConv modes for WTConv models: fused and/or unfused")->delimiter(',');
  cmd->add_option("--steps", a->steps, "timed steps per phase")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", a->warmup, "untimed steps first (at least 1 is always run)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--device", a->device, "cuda or cpu");
  cmd->add_option("--output", a->output, "write the rows to FILE.json or FILE.csv");
  cmd->add_flag("--retry", a->retry, "on out-of-memory, retry the row at half the batch until it fits");
  cmd->add_flag("--breakdown", a->breakdown, "also time one training step per op type");
  cmd->add_option("--seed", a->seed, "seed of the model init and the synthetic data");
  cmd->callback([a] { run_bench(*a); });
});

}  // namespace hg::app
