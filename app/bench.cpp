// `haargrad bench`: ConvNeXt vs WTConvNeXt end to end. For every model x precision x WTConv mode,
// times a full training step (zero_grad, forward, cross-entropy, backward, AdamW) and inference on
// synthetic data already on the device, or, for `bench CONFIG.yaml`, the one row of the config's
// model with the trainer's loss and optimizer. Both report timm benchmark.py's columns plus memory
// per category, steady-state allocation counts and the driver's view; optionally a per-op breakdown. A batch
// that does not fit is reported (and with --retry halved until it fits), never a crash.
// docs/benchmark.md describes the columns.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <new>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "app/bench_report.h"
#include "app/bench_run.h"
#include "app/command.h"
#include "app/config_help.h"
#include "core/error.h"
#include "core/threads.h"
#include "models/config.h"
#include "train/config.h"
#include "train/trainer.h"

namespace hg::app {
namespace {

struct BenchArgs {
  std::vector<std::string> models{"convnext_tiny", "wtconvnext_tiny"};
  std::vector<std::string> precisions;  // default: fp32,tf32,bf16 on cuda, fp32 on the cpu
  std::vector<std::string> wtconv{"fused", "unfused"};
  int batch = 128, img_size = 224, steps = 20, warmup = 5;
  std::string device = "auto";
  std::string output;
  bool retry = false;
  bool breakdown = false;
  bool cuda_graph = true;
  bool gemm_autotune = true;
  uint64_t seed = 0;
  int threads = 0;
  // `bench CONFIG.yaml [--key value ...]`: the config's model and training step; the options above
  // that were given on the command line (`given`) still win over the config's values.
  std::string config;
  std::vector<std::string> overrides;
  std::set<std::string> given;
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
    std::string msg;  // an out-of-memory's message, when the row ran out
    try {
      BenchResult r = run_bench_row(cfg);
      r.requested_batch = requested;
      return r;
    } catch (const Error& e) {
      if (!is_out_of_memory(e.what())) throw;
      msg = e.what();
    } catch (const std::bad_alloc&) {  // the host's: a std::vector of the row's input, say
      msg = "out of host memory (an allocation failed)";
    }
    std::printf("  out of memory at batch %d (%s)%s\n", cfg.batch, describe_oom(msg).c_str(),
                retry && cfg.batch > 1 ? str("; retrying at batch ", cfg.batch / 2).c_str()
                : retry                ? ""
                                       : "; --retry halves the batch until it fits");
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

Device bench_device(const std::string& device) {
  HG_CHECK(device == "auto" || device == "cuda" || device == "cpu", "bench: --device must be auto, cuda or cpu, got '",
           device, "'");
  if (device == "auto") return device_available(Device::cuda) ? Device::cuda : Device::cpu;
  const Device d = device == "cuda" ? Device::cuda : Device::cpu;
  HG_CHECK(device_available(d),
           "bench: device cuda is not available: ", train::cuda_unavailable_reason(),
           "; run on the CPU with --device cpu");
  return d;
}

// One row per model x precision x WTConv mode, from the named models (timm benchmark.py's step).
// A --wtconv mode as the rows name it: "reference" (the config key's word) is "unfused", so that
// the rows, the JSON and the fused / unfused ratio row name one mode one way.
std::string wtconv_mode_name(const std::string& w) {
  return parse_wtconv_mode(w) == kernels::WTConvMode::fused ? "fused" : "unfused";
}

std::vector<BenchConfig> configs_from_names(const BenchArgs& a, Device device) {
  std::vector<std::string> precisions = a.precisions;
  if (precisions.empty()) precisions = device == Device::cuda ? std::vector<std::string>{"fp32", "tf32", "bf16"}
                                                              : std::vector<std::string>{"fp32"};
  std::vector<std::string> wtconv;  // each mode once, by one name
  for (const std::string& w : a.wtconv)
    if (const std::string m = wtconv_mode_name(w);
        std::find(wtconv.begin(), wtconv.end(), m) == wtconv.end())
      wtconv.push_back(m);
  for (const std::string& p : precisions) check_precision(p, device, "bench");
  // every model's size checked before the first row: a model below --img-size's stride failed
  // when its row came, after the rows before it had run, and their results were lost
  for (const std::string& model : a.models) model_config(model).check_img_size(a.img_size);
  std::vector<BenchConfig> configs;
  for (const std::string& model : a.models) {
    const ModelConfig mc = model_config(model);  // throws for an unknown name, listing the known ones
    for (const std::string& p : precisions) {
      const std::vector<std::string> modes = mc.wtconv ? wtconv : std::vector<std::string>{""};
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
        c.cuda_graph = a.cuda_graph;
        c.gemm_autotune = a.gemm_autotune;
        c.seed = a.seed;
        configs.push_back(c);
      }
    }
  }
  return configs;
}

// The one row a training config describes: its model (any the trainer can build), batch, image
// size, precision, WTConv mode, loss (label smoothing) and optimizer, unless an option overrides.
BenchConfig config_from_yaml_file(const BenchArgs& a, const train::Config& cfg, Device device) {
  // options that contradict the CONFIG are usage errors (exit status 2), as a wrong option is
  if (a.given.count("models"))
    throw CLI::ValidationError(
        "bench: give either CONFIG.yaml or --models, not both (the model is the "
        "config's `model`: override it with --model NAME)");
  BenchConfig c;
  c.model = cfg.model;
  c.model_config = train::model_config_from(cfg);
  c.precision = a.given.count("precision") ? a.precisions.at(0) : cfg.precision;
  if (a.given.count("precision") && a.precisions.size() != 1)
    throw CLI::ValidationError("bench: with a CONFIG, --precision takes one value");
  check_precision(c.precision, device, "bench");  // before the row's banner, as the names' are
  for (const std::string& w : a.wtconv) wtconv_mode_name(w);
  if (c.model_config->wtconv) {
    c.wtconv = wtconv_mode_name(a.given.count("wtconv") ? a.wtconv.at(0) : cfg.wtconv_mode);
    if (a.given.count("wtconv") && a.wtconv.size() != 1)
      throw CLI::ValidationError("bench: with a CONFIG, --wtconv takes one value");
  }
  c.batch = a.given.count("batch") ? a.batch : static_cast<int>(cfg.batch_size);
  c.img_size = a.given.count("img-size") ? a.img_size : static_cast<int>(cfg.img_size);
  c.steps = a.steps;
  c.warmup = a.warmup;
  c.device = device;
  c.breakdown = a.breakdown;
  c.cuda_graph = a.cuda_graph;
  c.gemm_autotune = a.given.count("gemm-autotune") ? a.gemm_autotune : cfg.gemm_autotune;
  c.seed = a.given.count("seed") ? a.seed : static_cast<uint64_t>(cfg.seed);
  c.smoothing = cfg.smoothing;
  c.opt = cfg.opt;
  train::Config at_batch = cfg;  // a null lr follows the batch this bench runs (one process)
  at_batch.batch_size = c.batch;
  c.lr = train::effective_lr(at_batch, 1);
  c.weight_decay = cfg.weight_decay;
  c.momentum = cfg.momentum;
  c.adam = train::adam_settings(cfg);
  c.clip_grad = cfg.clip_grad;
  return c;
}

// The error for bench's first argument `overrides[0]` that is neither its option nor a config
// (config keys need a CONFIG.yaml first), with the close bench option: timm benchmark.py's -b /
// --batch-size is bench's --batch; a misspelt one ("--batchsize") the option it is close to.
std::string not_a_bench_option(const CLI::App& cmd, const std::vector<std::string>& overrides) {
  const std::string& o = overrides[0];
  const size_t eq = o.find('=');  // --batchsize=3: the value after '='
  const std::string name = o.substr(0, eq);
  const std::string value = eq != std::string::npos ? o.substr(eq + 1)
                            : overrides.size() > 1  ? overrides[1]
                                                    : "N";
  const CLI::Option* close = nullptr;
  if (name == "-b" || name == "--batch-size" || name == "--batch_size") {
    close = cmd.get_option_no_throw("--batch");
  } else if (name.rfind("--", 0) == 0 && name.size() > 2) {
    const std::string near = close_option(cmd, name);
    if (!near.empty()) close = cmd.get_option_no_throw(near);
  }
  // a flag (--retry, --breakdown, --help) is suggested without a value
  const std::string hint =
      close == nullptr ? ""
      : close->get_expected_min() == 0
          ? str("; did you mean --", close->get_lnames().at(0), "?")
          : str("; did you mean --", close->get_lnames().at(0), " ", value, "?");
  return str("bench: '", o,
             "' is not a bench option; config keys (--key value) need a CONFIG.yaml first: "
             "haargrad bench CONFIG.yaml --key value",
             hint);
}

void run_bench(const BenchArgs& a) {
  // `--output ''` (an unset shell variable) wrote nothing, silently
  HG_CHECK(!a.given.count("output") || !a.output.empty(),
           "bench: --output is empty; give FILE.json or FILE.csv, or leave the option out");
  if (!a.output.empty()) check_output_path(a.output);
  std::vector<BenchConfig> configs;
  Device device;
  if (a.config.empty()) {
    set_cpu_threads(a.threads);
    device = bench_device(a.device);
    configs = configs_from_names(a, device);
  } else {
    const train::Config cfg = train::load_config_with_overrides(a.config, a.overrides);
    set_cpu_threads(a.given.count("threads") ? a.threads : static_cast<int>(cfg.threads));
    device = bench_device(a.given.count("device") ? a.device : cfg.device);
    configs.push_back(config_from_yaml_file(a, cfg, device));
  }

  if (device == Device::cpu) std::printf("cpu: %s\n", describe_cpu_threads().c_str());
  std::vector<BenchResult> rows;
  for (const BenchConfig& c : configs) {
    std::printf("bench: %s%s %s batch %d @%d on %s: %d warm-up + %d timed steps\n", c.model.c_str(),
                c.wtconv.empty() ? "" : (" (" + c.wtconv + ")").c_str(), c.precision.c_str(), c.batch,
                c.img_size, device_name(device), std::max(1, c.warmup), c.steps);
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
      "bench",
      "haargrad bench [options]  or  haargrad bench CONFIG.yaml [options] [--key value ...]\n"
      "(CONFIG also as -c / --config CONFIG, timm's spelling.)\n"
      "Training-step and inference throughput and memory on synthetic data already on the device\n"
      "(docs/benchmark.md). By name: ConvNeXt vs WTConvNeXt with timm benchmark.py's step "
      "(AdamW, plain\n"
      "cross-entropy). With a training config: its model (any the trainer can build), batch, "
      "image size,\n"
      "precision, optimizer and label smoothing; the options below still win when given.");
  cmd->add_option("--models", a->models, "comma-separated model names (`haargrad models` lists them)")
      ->delimiter(',');
  cmd->add_option("--batch", a->batch, "batch size")->check(at_least(1));
  cmd->add_option("--img-size", a->img_size, "input height = width in pixels")->check(at_least(1));
  cmd->add_option("--precision", a->precisions,
                  "fp32, tf32 and/or bf16, comma-separated (default: fp32,tf32,bf16 on cuda, fp32 "
                  "on the cpu)")
      ->delimiter(',')
      ->default_str("");  // the default follows the device (said above), not "[]"
  cmd->add_option("--wtconv", a->wtconv, "WTConv modes for WTConv models: fused and/or unfused")->delimiter(',');
  cmd->add_option("--steps", a->steps, "timed steps per phase")->check(at_least(1));
  cmd->add_option("--warmup", a->warmup, "untimed steps first (at least 1 is always run)")
      ->check(at_least(0));
  cmd->add_option("--device", a->device, "auto (cuda when a GPU is usable), cuda or cpu");
  cmd->add_option(
         "--threads", a->threads,
         "CPU threads (0: $OMP_NUM_THREADS if set, else the cores available to this process)")
      ->check(CLI::Range(0, kMaxCpuThreads));
  cmd->add_option("--output", a->output, "write the rows to FILE.json or FILE.csv");
  cmd->add_flag("--retry", a->retry, "on out-of-memory, retry the row at half the batch until it fits");
  cmd->add_flag("--breakdown", a->breakdown, "also time one training step per op type");
  cmd->add_option(
      "--cuda-graph", a->cuda_graph,
      "true (default): the training step as one CUDA graph where it can be (cuda, AdamW); false: "
      "launched op by op");
  cmd->add_option(
      "--gemm-autotune", a->gemm_autotune,
      "true (default): cuBLASLt's algorithm for each GEMM shape timed on its first call; "
      "false: the heuristic's first (config key gemm_autotune)");
  cmd->add_option("--seed", a->seed, "seed of the model init and the synthetic data");
  cmd->allow_extras();  // CONFIG.yaml and its --key value overrides
  cmd->footer(config_keys_pointer());
  cmd->callback([a, cmd] {
    for (const char* name : {"models", "batch", "img-size", "precision", "wtconv", "device",
                             "threads", "seed", "gemm-autotune", "output"})
      if (cmd->count(std::string("--") + name) > 0) a->given.insert(name);
    ConfigArgs ca = split_config_args(cmd->remaining());
    // timm's benchmark.py names its model with --model: without a config it means --models
    for (size_t i = 0; ca.config.empty() && i < ca.overrides.size(); ++i) {
      const std::string& o = ca.overrides[i];
      if (o != "--model" && o.rfind("--model=", 0) != 0) continue;
      const std::string name = o != "--model"                ? o.substr(8)
                               : i + 1 < ca.overrides.size() ? ca.overrides[i + 1]
                                                             : "NAME";
      throw CLI::ValidationError(
          str("bench has no --model option; did you mean --models ", name,
              "? (a comma-separated list; --model is a config key, after a CONFIG.yaml)"));
    }
    if (ca.config.empty() && !ca.overrides.empty())  // a usage error: exit status 2
      throw CLI::ValidationError(not_a_bench_option(*cmd, ca.overrides));
    a->config = ca.config;
    a->overrides = ca.overrides;
    run_bench(*a);
  });
});

}  // namespace hg::app
