// Rows to JSON / CSV and the printed tables of `haargrad bench` (see bench_report.h).
#include "app/bench_report.h"
#include "app/model_from_args.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "app/bench_breakdown.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "train/run_folder.h"
#include "train/summary.h"

namespace hg::app {

namespace {

/// 100 x the time the op type's FLOPs and bytes take at the ceilings (the larger of the two: the
/// roofline's bound) / its measured time; 0 when nothing was measured.
double roofline_pct(const BreakdownEntry& e, const Ceilings& c) {
  const double t = (e.forward_ms + e.backward_ms) * 1e-3;
  if (t <= 0) return 0.0;
  const double t_bytes = c.copy_bytes_per_s > 0 ? e.bytes / c.copy_bytes_per_s : 0.0;
  const double t_flops = c.gemm_flops_per_s > 0 ? e.flops / c.gemm_flops_per_s : 0.0;
  return 100 * std::max(t_bytes, t_flops) / t;
}

using ojson = nlohmann::ordered_json;

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

/// v with three significant digits, without an exponent down to 1e-3 (a breakdown of a tiny model
/// has 0.0590 GFLOP where a fixed "%.1f" would print 0.0), "0" for 0.
std::string sig3(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  char buf[32];
  if (a < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.2e", v);
  } else {
    const int decimals = std::clamp(2 - static_cast<int>(std::floor(std::log10(a))), 0, 8);
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  }
  return buf;
}
double round_to(double v, int decimals) {
  const double f = std::pow(10.0, decimals);
  return std::round(v * f) / f;
}
// `s` ends with `tail` (lowercase) in any case: R.CSV is a CSV file
bool ends_with(const std::string& s, const std::string& tail) {
  if (s.size() < tail.size()) return false;
  for (size_t i = 0; i < tail.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - tail.size() + i])) != tail[i])
      return false;
  return true;
}
double samples_per_sec(int batch, double ms) { return ms > 0 ? batch * 1000.0 / ms : 0.0; }
// Bytes held from the system per live byte at the peak (issue 11: at most 1.10 in a training step).
double reserved_ratio(const PhaseMemory& m) {
  return m.total_peak > 0 ? static_cast<double>(m.reserved_peak) / static_cast<double>(m.total_peak)
                          : 0.0;
}

void add_phase(ojson& j, const char* phase, const BenchResult& r, const PhaseResult& p) {
  const std::string pre = phase;
  const bool ok = r.ok();
  auto num = [&](double v) { return ok ? ojson(v) : ojson(nullptr); };
  j[pre + "_samples_per_sec"] = num(round_to(samples_per_sec(r.config.batch, p.ms.median), 2));
  j[pre + "_step_time"] = num(round_to(p.ms.median, 3));
  j[pre + "_step_time_min"] = num(round_to(p.ms.min, 3));
  j[pre + "_step_time_max"] = num(round_to(p.ms.max, 3));
  j[pre + "_step_time_mean"] = num(round_to(p.ms.mean, 3));
  j[pre + "_batch_size"] = r.config.batch;
  j[pre + "_img_size"] = r.config.img_size;
}

void add_memory(ojson& j, const char* phase, const BenchResult& r, const PhaseMemory& m) {
  const std::string pre = phase;
  const bool ok = r.ok();
  auto num = [&](double v) { return ok ? ojson(round_to(v, 2)) : ojson(nullptr); };
  for (int c = 0; c < kNumCategories; ++c)
    j[pre + "_peak_" + category_name(static_cast<Category>(c)) + "_mib"] = num(mib(m.peak[static_cast<size_t>(c)]));
  j[pre + "_peak_total_mib"] = num(mib(m.total_peak));
  j[pre + "_reserved_mib"] = num(mib(m.reserved_peak));
  j[pre + "_reserved_ratio"] =
      ok && m.total_peak > 0 ? ojson(round_to(reserved_ratio(m), 3)) : ojson(nullptr);
  j[pre + "_system_allocs"] = ok ? ojson(m.system_allocs) : ojson(nullptr);
  j[pre + "_host_syncs"] =
      ok && r.config.device == Device::cuda ? ojson(m.host_syncs) : ojson(nullptr);
  j[pre + "_device_used_mib"] = ok && m.device_used ? ojson(round_to(mib(*m.device_used), 2)) : ojson(nullptr);
  if (pre == "train") j["train_graph_nodes"] = ok ? ojson(r.graph_nodes) : ojson(nullptr);
}

// (text through train::csv_cell, RFC 4180: a CR in an error message was written unquoted, and
// broke the row for readers that end a line at a CR)
std::string csv_cell(const ojson& v) {
  if (v.is_null()) return "";
  if (!v.is_string()) return v.dump();
  return train::csv_cell(v.get<std::string>());
}

std::string label(const BenchResult& r) {
  return r.config.wtconv.empty() ? r.config.model : r.config.model + " (" + r.config.wtconv + ")";
}

const BenchResult* find_row(const std::vector<BenchResult>& rows, const std::string& model,
                            const std::string& precision, const std::string& wtconv, const BenchResult& like) {
  for (const BenchResult& r : rows)
    if (r.ok() && r.config.model == model && r.config.precision == precision && r.config.wtconv == wtconv &&
        r.config.batch == like.config.batch && r.config.img_size == like.config.img_size)
      return &r;
  return nullptr;
}

void print_ratio(const char* what, const BenchResult& a, const BenchResult& b) {
  std::printf("%-44s %-5s %10.3f %10.3f %10.3f %10.3f\n", what, a.config.precision.c_str(),
              b.train.ms.median / a.train.ms.median, b.infer.ms.median / a.infer.ms.median,
              double(a.train.mem.total_peak) / double(b.train.mem.total_peak),
              double(a.infer.mem.total_peak) / double(b.infer.mem.total_peak));
}

}  // namespace

ojson row_json(const BenchResult& r) {
  ojson j;
  j["model"] = r.config.model;
  j["precision"] = r.config.precision;
  j["wtconv"] = r.config.wtconv.empty() ? ojson(nullptr) : ojson(r.config.wtconv);
  j["device"] = device_name(r.config.device);
  j["status"] = r.ok() ? "ok" : "oom";
  j["error"] = r.error;
  add_phase(j, "infer", r, r.infer);
  add_phase(j, "train", r, r.train);
  j["param_count"] = round_to(double(r.params_trainable) / 1e6, 2);
  j["param_count_exact"] = r.params_trainable;
  j["param_count_fixed"] = r.params_fixed;
  j["requested_batch_size"] = r.requested_batch;
  j["steps"] = r.config.steps;
  j["warmup"] = r.config.warmup;
  j["opt"] = r.config.opt;  // the training step's optimizer and loss
  j["lr"] = r.config.lr;
  j["weight_decay"] = r.config.weight_decay;
  j["smoothing"] = r.config.smoothing;
  add_memory(j, "infer", r, r.infer.mem);
  add_memory(j, "train", r, r.train.mem);
  j["baseline_device_used_mib"] =
      r.baseline_device_used ? ojson(round_to(mib(*r.baseline_device_used), 2)) : ojson(nullptr);
  if (!r.breakdown.empty()) {
    ojson b;
    for (const std::string& c : breakdown_categories(!r.config.wtconv.empty())) {
      auto it = r.breakdown.find(c);
      if (it == r.breakdown.end()) continue;
      const BreakdownEntry& e = it->second;
      b[c] = {{"forward_ms", round_to(e.forward_ms, 4)},
              {"backward_ms", round_to(e.backward_ms, 4)},
              {"gflop", round_to(e.flops / 1e9, 6)},
              {"gbytes", round_to(e.bytes / 1e9, 6)},
              {"roofline_pct", round_to(roofline_pct(e, r.ceilings), 1)}};
    }
    j["breakdown"] = b;
    j["ceiling_copy_gb_per_s"] = round_to(r.ceilings.copy_bytes_per_s / 1e9, 1);
    j["ceiling_gemm_tflop_per_s"] = round_to(r.ceilings.gemm_flops_per_s / 1e12, 2);
  }
  return j;
}

void check_rows_output(const std::string& path, const std::string& option,
                       const std::string& first_column) {
  HG_CHECK(ends_with(path, ".json") || ends_with(path, ".csv"), option, " '", path,
           "' must end in .json or .csv");
  train::check_output_file(path, option, "the rows");
  check_replaces_rows_only(path, option, first_column, csv_output(path));
}

bool csv_output(const std::string& path) { return ends_with(path, ".csv"); }

void write_rows_file(const std::string& path, const std::string& option,
                     const std::vector<ojson>& rows, const std::string& first_column) {
  check_rows_output(path, option, first_column);  // again: the file may have come since the start
  std::ostringstream f;
  if (ends_with(path, ".json")) {
    f << ojson(rows).dump(2) << "\n";
  } else {
    std::vector<std::string> columns;  // union of the scalar keys, in order of appearance
    for (const ojson& j : rows)
      for (auto it = j.begin(); it != j.end(); ++it)
        if (!it.value().is_structured() &&
            std::find(columns.begin(), columns.end(), it.key()) == columns.end())
          columns.push_back(it.key());
    for (size_t i = 0; i < columns.size(); ++i) f << (i ? "," : "") << columns[i];
    f << "\n";
    for (const ojson& j : rows) {
      for (size_t i = 0; i < columns.size(); ++i)
        f << (i ? "," : "") << (j.contains(columns[i]) ? csv_cell(j[columns[i]]) : std::string());
      f << "\n";
    }
  }
  io::write_file_atomic(path, f.str());
}

void check_output_path(const std::string& path) {
  check_rows_output(path, "bench: --output", "model");
}

void write_rows(const std::string& path, const std::vector<BenchResult>& rows) {
  std::vector<ojson> js;
  for (const BenchResult& r : rows) js.push_back(row_json(r));
  write_rows_file(path, "bench: --output", js, "model");
}

void print_tables(const std::vector<BenchResult>& rows) {
  std::printf("\n%-30s %-5s %6s %11s %10s %11s %26s %8s\n", "model", "prec", "batch", "infer img/s",
              "infer ms", "train img/s", "train ms med [min, max]", "params M");
  for (const BenchResult& r : rows) {
    if (!r.ok()) {
      std::printf("%-30s %-5s %6d  failed: %s\n", label(r).c_str(), r.config.precision.c_str(), r.config.batch,
                  r.error.c_str());
      continue;
    }
    char train_ms[64];
    std::snprintf(train_ms, sizeof(train_ms), "%.2f [%.2f, %.2f]", r.train.ms.median, r.train.ms.min,
                  r.train.ms.max);
    std::printf("%-30s %-5s %6d %11.1f %10.3f %11.1f %26s %8.2f\n", label(r).c_str(), r.config.precision.c_str(),
                r.config.batch, samples_per_sec(r.config.batch, r.infer.ms.median), r.infer.ms.median,
                samples_per_sec(r.config.batch, r.train.ms.median), train_ms,
                double(r.params_trainable) / 1e6);
  }
  for (const BenchResult& r : rows)
    if (r.ok() && r.graph_nodes > 0)
      std::printf("%s %s: the training step replayed as one CUDA graph of %lld nodes\n",
                  label(r).c_str(), r.config.precision.c_str(),
                  static_cast<long long>(r.graph_nodes));

  std::printf(
      "\npeak memory of the timed steps (MiB; our allocator's live bytes per category, reserved =\n"
      "held from the system, ratio = reserved / total; driver = cudaMemGetInfo used after the\n"
      "timed steps minus before the model; allocs = system allocations during the timed steps,\n"
      "syncs = host waits on the GPU our code asked for in them (core/host_sync.h); both expected "
      "0)\n");
  std::printf("%-30s %-5s %-5s %8s %8s %8s %9s %8s %9s %9s %6s %9s %6s %6s\n", "model", "prec",
              "phase", "params", "grads", "optim", "activ", "work", "total", "reserved", "ratio",
              "driver", "allocs", "syncs");
  for (const BenchResult& r : rows) {
    if (!r.ok()) continue;
    for (int phase = 0; phase < 2; ++phase) {
      const PhaseMemory& m = phase ? r.train.mem : r.infer.mem;
      std::string driver = "-";
      if (m.device_used && r.baseline_device_used)
        driver = str(static_cast<int64_t>(mib(*m.device_used - *r.baseline_device_used)));
      // host waits on a GPU: none to count on the CPU
      const std::string syncs = r.config.device == Device::cpu ? "-" : str(m.host_syncs);
      std::printf("%-30s %-5s %-5s %8.1f %8.1f %8.1f %9.1f %8.1f %9.1f %9.1f %6.3f %9s %6lld %6s\n",
                  label(r).c_str(), r.config.precision.c_str(), phase ? "train" : "infer",
                  mib(m.peak[0]), mib(m.peak[1]), mib(m.peak[2]), mib(m.peak[3]), mib(m.peak[4]),
                  mib(m.total_peak), mib(m.reserved_peak), reserved_ratio(m), driver.c_str(),
                  static_cast<long long>(m.system_allocs), syncs.c_str());
      if (m.system_allocs != 0)
        std::printf("  warning: %lld system allocations during the timed %s steps (not a steady state; more "
                    "warm-up steps?)\n", static_cast<long long>(m.system_allocs), phase ? "train" : "infer");
    }
  }

  bool header = false;
  auto head = [&] {
    if (header) return;
    header = true;
    std::printf("\nratios (throughput = samples/s ratio; memory = peak live bytes ratio)\n");
    std::printf("%-44s %-5s %10s %10s %10s %10s\n", "", "prec", "train thr", "infer thr", "train mem",
                "infer mem");
  };
  for (const BenchResult& r : rows) {
    if (!r.ok() || r.config.wtconv.empty()) continue;
    const std::string base = r.config.model.rfind("wt", 0) == 0 ? r.config.model.substr(2) : r.config.model;
    if (const BenchResult* c = find_row(rows, base, r.config.precision, "", r)) {
      head();
      print_ratio(str(label(r), " / ", base).c_str(), r, *c);
    }
    if (r.config.wtconv == "fused")
      if (const BenchResult* u = find_row(rows, r.config.model, r.config.precision, "unfused", r)) {
        head();
        print_ratio(str(r.config.model, " fused / unfused").c_str(), r, *u);
      }
  }
}

void print_breakdown(const BenchResult& r) {
  if (r.breakdown.empty()) return;
  double sum = 0;
  for (const auto& [name, e] : r.breakdown) sum += e.forward_ms + e.backward_ms;
  std::printf("\nbreakdown of one training step: %s, %s, batch %d (medians per piece, summed over the model)\n",
              label(r).c_str(), r.config.precision.c_str(), r.config.batch);
  std::printf(
      "roofline: the FLOPs and bytes each op type must at least do (fwd + bwd), against the "
      "measured\n"
      "ceilings: copy %.0f GB/s, %s GEMM %.2f TFLOP/s; roofline %% = the ceiling-bound time / "
      "measured time\n",
      r.ceilings.copy_bytes_per_s / 1e9, r.config.precision.c_str(),
      r.ceilings.gemm_flops_per_s / 1e12);
  std::printf("%-29s %9s %9s %9s %6s %9s %8s %8s %8s %9s\n", "op type", "fwd ms", "bwd ms",
              "total ms", "%", "GFLOP", "GB", "TFLOP/s", "GB/s", "roofline");
  for (const std::string& c : breakdown_categories(!r.config.wtconv.empty())) {
    auto it = r.breakdown.find(c);
    if (it == r.breakdown.end()) continue;
    const BreakdownEntry& e = it->second;
    const double t = e.forward_ms + e.backward_ms, s = t * 1e-3;
    std::printf("%-29s %9.3f %9.3f %9.3f %5.1f%% %9s %8s %8s %8s %8.1f%%\n", c.c_str(),
                e.forward_ms, e.backward_ms, t, sum > 0 ? 100 * t / sum : 0.0,
                sig3(e.flops / 1e9).c_str(), sig3(e.bytes / 1e9).c_str(),
                sig3(s > 0 ? e.flops / s / 1e12 : 0.0).c_str(),
                sig3(s > 0 ? e.bytes / s / 1e9 : 0.0).c_str(), roofline_pct(e, r.ceilings));
  }
  std::printf("%-29s %29.3f   (measured step: %.3f ms median; pieces run one by one)\n", "sum", sum,
              r.train.ms.median);
}

}  // namespace hg::app
