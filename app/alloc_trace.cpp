// `haargrad alloc-trace`: records the allocation trace (core/alloc_trace.h) of a few real training
// steps (bench's step: train/step_trace.h) at two batches, replays it against the allocator at the
// recorded batch and at a larger one (the trace extrapolated), and prints per step the peak of live
// bytes, the bytes held from the system, their ratio and the system allocations: the allocator at
// the GPU's sizes, seen on any machine. `--load` replays saved traces instead (e.g. the GPU's own).
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/bench_timer.h"
#include "app/command.h"
#include "core/alloc_trace.h"
#include "core/error.h"
#include "core/threads.h"
#include "models/config.h"
#include "train/step_trace.h"
#include "train/trainer.h"

namespace hg::app {
namespace {

struct AllocTraceArgs {
  std::vector<std::string> models{"convnext_tiny", "wtconvnext_tiny"};
  std::vector<int> batches{1, 2};
  int img_size = 224;
  std::string precision = "fp32";
  int steps = 4;
  int scale_batch = 128;
  std::string device = "cpu";
  std::string save_dir;
  std::vector<std::string> load;
  int threads = 0;
};

double to_mib(int64_t b) { return static_cast<double>(b) / (1 << 20); }

void print_steps(const std::string& title, const std::vector<ReplayStep>& steps) {
  std::printf("  %s\n  %6s %12s %14s %7s %14s\n", title.c_str(), "step", "live MiB", "reserved MiB",
              "ratio", "system allocs");
  for (size_t i = 0; i < steps.size(); ++i) {
    const ReplayStep& s = steps[i];
    // The last entry is what followed the last backward (the last optimizer update).
    const std::string name = i + 1 < steps.size() ? std::to_string(i + 1) : "end";
    std::printf("  %6s %12.1f %14.1f %7.3f %14lld\n", name.c_str(), to_mib(s.live_peak),
                to_mib(s.reserved_peak),
                s.live_peak > 0
                    ? static_cast<double>(s.reserved_peak) / static_cast<double>(s.live_peak)
                    : 0.0,
                static_cast<long long>(s.system_allocs));
  }
}

void save(const AllocTrace& t, const AllocTraceArgs& a, const std::string& name) {
  if (a.save_dir.empty()) return;
  const std::string path = a.save_dir + "/" + name + ".trace";
  save_trace(t, path);
  std::printf("  wrote %s\n", path.c_str());
}

// The replay at the second recorded batch and at --scale-batch.
void replay_both(const std::string& name, const AllocTrace& t0, const AllocTrace& t1,
                 const AllocTraceArgs& a) {
  print_steps(str("batch ", a.batches[1], ": replay"), replay_trace(t1));
  const AllocTrace scaled = extrapolate_trace(t0, a.batches[0], t1, a.batches[1], a.scale_batch);
  print_steps(str("batch ", a.scale_batch, ": replay of the trace extrapolated from batches ",
                  a.batches[0], " and ", a.batches[1]),
              replay_trace(scaled));
  save(scaled, a, str(name, "-b", a.scale_batch, "-extrapolated"));
}

// Two loaded traces are extrapolated as recorded at --batches, in --load's order; their headers
// record the batches they were: files swapped, or one file twice, gave an extrapolation off by a
// factor that nothing said. A trace whose header names no batch (written by hand) is taken at
// the batch --batches gives it.
void check_loaded_batches(const std::array<AllocTrace, 2>& t, const AllocTraceArgs& a) {
  const std::optional<int64_t> r0 = recorded_batch(t[0]), r1 = recorded_batch(t[1]);
  HG_CHECK(!r0 || !r1 || *r0 != *r1, "alloc-trace: --load ", a.load[0], " and ", a.load[1],
           " both record batch ", r0.value_or(0),
           " in their headers; the extrapolation takes traces of two different batches (e.g. ",
           "the -b", a.batches[0], " and -b", a.batches[1], " files of alloc-trace --save)");
  const std::string batches = str(a.batches[0], ",", a.batches[1]);
  for (size_t i = 0; i < 2; ++i) {
    const std::optional<int64_t> r = i == 0 ? r0 : r1;
    if (!r || *r == a.batches[i]) continue;
    const bool swapped = r0 && r1 && *r0 == a.batches[1] && *r1 == a.batches[0];
    const std::string fix =
        swapped ? str("give them in --batches' order: --load ", a.load[1], " ", a.load[0])
        : r0 && r1
            ? str("give --batches ", *r0, ",", *r1, " (the batches the traces record)")
            : str("give the trace of batch ", a.batches[i], " there, or --batches as recorded");
    throw Error(str("alloc-trace: --load ", a.load[i], " records batch ", *r,
                    " in its header but is loaded for batch ", a.batches[i], ", the ",
                    i == 0 ? "first" : "second", " of --batches ", batches,
                    " (the traces are taken in --load's order); ", fix));
  }
}

// The recording's options mean nothing to a replay of saved traces (a trace replays as it was
// recorded): given beside --load they were ignored unsaid. One trace is replayed as it is, so the
// batches it would be extrapolated from and to, and the folder the extrapolated one goes to, are
// the recording's too.
void refuse_recording_options(const CLI::App& cmd, const AllocTraceArgs& a) {
  if (a.load.empty()) return;
  std::vector<std::string> options = {"--models", "--img-size", "--precision",
                                      "--steps",  "--device",   "--threads"};
  if (a.load.size() == 1) options.insert(options.end(), {"--batches", "--scale-batch", "--save"});
  std::string given;
  for (const std::string& o : options)
    if (cmd.count(o) > 0) given += (given.empty() ? "" : ", ") + o;
  HG_CHECK(given.empty(), "alloc-trace: ", given, " cannot go with --load ",
           a.load.size() == 1 ? "of one trace, which is replayed as it was recorded"
                              : "(the traces are replayed as they were recorded; --batches, "
                                "--scale-batch and --save apply)",
           ": leave ", given.find(',') == std::string::npos ? "it" : "them", " out");
}

void run_alloc_trace(const AllocTraceArgs& a) {
  HG_CHECK(a.batches.size() == 2 && a.batches[0] != a.batches[1] && a.batches[0] >= 1 &&
               a.batches[1] >= 1,
           "alloc-trace: --batches takes two different batches >= 1, e.g. 1,2");
  HG_CHECK(a.load.size() <= 2,
           "alloc-trace: --load takes one trace (replayed as it is) or two (recorded at "
           "--batches, extrapolated to --scale-batch)");
  if (a.load.size() == 1) {
    const AllocTrace t = load_trace(a.load[0]);
    std::printf("%s: %s\n", a.load[0].c_str(), t.note.c_str());
    print_steps("replay", replay_trace(t));
    return;
  }
  if (a.load.size() == 2) {
    const AllocTrace t0 = load_trace(a.load[0]), t1 = load_trace(a.load[1]);
    check_loaded_batches({t0, t1}, a);
    std::printf("%s: %s\n%s: %s\n", a.load[0].c_str(), t0.note.c_str(), a.load[1].c_str(),
                t1.note.c_str());
    replay_both("loaded", t0, t1, a);
    return;
  }
  HG_CHECK(a.device == "cpu" || a.device == "cuda", "alloc-trace: --device is cpu or cuda, got '",
           a.device, "'");
  if (!a.save_dir.empty()) {  // made before the recording, not found missing after it
    std::error_code ec;
    std::filesystem::create_directories(a.save_dir, ec);
    HG_CHECK(!ec && std::filesystem::is_directory(a.save_dir), "alloc-trace: --save ", a.save_dir,
             ": cannot make the folder",
             ec ? str(" (", ec.message(), ")") : std::string(" (a file is there)"));
    // one that exists read-only would be found only at the first trace, after its recording
    HG_CHECK(::access(a.save_dir.c_str(), W_OK | X_OK) == 0, "alloc-trace: --save ", a.save_dir,
             ": the folder cannot be written (", std::strerror(errno), ")");
  }
  // every model known before the first is recorded (a bad name last failed after minutes)
  for (const std::string& model : a.models) {
    try {
      model_config(model).check_img_size(a.img_size);
    } catch (const Error& e) {
      throw Error(str("alloc-trace: --models: ", e.what()));
    }
  }
  const Device dev = a.device == "cuda" ? Device::cuda : Device::cpu;
  HG_CHECK(device_available(dev), "alloc-trace: device ", a.device,
           " is not available: ", train::cuda_unavailable_reason());
  set_cpu_threads(a.threads);
  for (const std::string& model : a.models) {
    std::vector<train::RecordedSteps> rec;
    for (int b : a.batches) {
      train::StepTraceOptions o;
      o.model = model;
      o.batch = b;
      o.img_size = a.img_size;
      o.precision = a.precision;
      o.steps = a.steps;
      o.device = dev;
      rec.push_back(train::record_training_steps(o));
    }
    std::printf("\n%s %s @%d on %s, %d training steps (step k ends with the k-th backward)\n",
                model.c_str(), a.precision.c_str(), a.img_size, device_name(dev), a.steps);
    const std::string name = str(model, "-", a.precision, "-", a.img_size);
    for (size_t i = 0; i < rec.size(); ++i) save(rec[i].trace, a, str(name, "-b", a.batches[i]));
    print_steps(str("batch ", a.batches[1], ": the allocator itself during the recording"),
                rec[1].allocator);
    replay_both(name, rec[0].trace, rec[1].trace, a);
    std::fflush(stdout);
  }
}

}  // namespace

HG_REGISTER_COMMAND([](CLI::App& root) {
  auto a = std::make_shared<AllocTraceArgs>();
  CLI::App* cmd = root.add_subcommand("alloc-trace",
                                      "Records the allocation trace of a few training steps at two "
                                      "batches and replays it against the allocator: "
                                      "live and reserved bytes, their ratio and system allocations "
                                      "per step, at the recorded and a larger batch");
  cmd->add_option("--models", a->models, "comma-separated model names")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--batches", a->batches,
                  "the two batches recorded (sizes are extrapolated from them)")
      ->delimiter(',')
      ->check(at_least(1))  // a value below its bound is a usage error (2), as the others'
      ->capture_default_str();
  cmd->add_option("--img-size", a->img_size, "input height = width in pixels")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--precision", a->precision, "fp32 or bf16")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->add_option("--steps", a->steps, "training steps recorded")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--scale-batch", a->scale_batch,
                  "the batch the trace is extrapolated to and replayed at")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--device", a->device, "cpu or cuda: where the steps run")->capture_default_str();
  cmd->add_option("--save", a->save_dir,
                  "folder to write the traces to, made if missing "
                  "(MODEL-PRECISION-IMG-bBATCH.trace, and the extrapolated one)");
  cmd->add_option("--load", a->load,
                  "replay saved traces instead of recording: one as it is, or two (at --batches) "
                  "extrapolated")
      ->delimiter(',');
  cmd->add_option("--threads", a->threads,
                  "CPU threads (0: $OMP_NUM_THREADS if set, else the cores available)")
      ->check(CLI::Range(0, kMaxCpuThreads))
      ->capture_default_str();
  cmd->callback([a, cmd] {
    refuse_recording_options(*cmd, *a);
    run_alloc_trace(*a);
  });
});

}  // namespace hg::app
