// `haargrad train CONFIG.yaml [--key value ...]`, or `haargrad train --resume CHECKPOINT [...]`
// with the config of the checkpoint's run: the main job (see train/trainer.h).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <optional>

#include <spdlog/spdlog.h>

#include "app/command.h"
#include "app/config_help.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/shell_quote.h"
#include "core/threads.h"
#include "dist/process_group.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/run_folder.h"
#include "train/stop_signal.h"
#include "train/trainer.h"

namespace hg::app {
namespace {

struct TrainArgs {
  std::string config;
  std::vector<std::string> overrides;
  int64_t stop_after_epoch = -1;
  bool plain = false;
};

// The run's last line, also appended to its log.txt (the log then holds the whole story). A log
// that cannot take it (a full disk) is a warning, as for every log line: the run is done and
// saved, and its exit status must say so.
void append_line(const std::string& path, const std::string& line) {
  try {
    io::AppendFile log(path);
    log.append(line + "\n");
    log.sync();
  } catch (const Error& e) {
    spdlog::warn("{}; the run's last line (above) is not in its log", e.what());
  }
}

// The value of the last `--resume X` / `--resume=X` among the overrides ("" when none).
std::string resume_override(const std::vector<std::string>& overrides) {
  std::string resume;
  for (size_t i = 0; i < overrides.size(); ++i) {
    if (overrides[i] == "--resume") {
      // `--resume --epochs 2` said "checkpoint --epochs does not exist"
      if (i + 1 == overrides.size() || overrides[i + 1].rfind("--", 0) == 0)
        throw CLI::ValidationError("--resume needs a value: a checkpoint, or auto",
                                   CLI::ExitCodes::ValidationError);
      resume = overrides[i + 1];
    } else if (overrides[i].rfind("--resume=", 0) == 0) {
      resume = overrides[i].substr(9);
    }
  }
  return resume;
}

// `train` without a config file. With --resume CKPT: the run's own config, the args.yaml of CKPT's
// folder (as a timm user expects the recorded run to go on), else (no args.yaml there, or an empty
// one) the config CKPT stores, as validate, export and infer read it and as the trainer's resume
// check does. Without --resume, keys on the command line go on top of the defaults (timm's train.py
// needs no config: `train.py --data-dir DIR --model NAME`); nothing at all is a usage error. An
// error names the missing file and the command with a config when a resumed run's config is
// nowhere; a folder given as CKPT gets its checkpoints named (train::resume_folder_error), nothing
// else.
struct ConfigWithoutFile {
  std::string path;    // args.yaml, or "" when the config is the checkpoint's or the defaults
  std::string yaml;    // the checkpoint's stored config (when path is ""; "" = the defaults)
  std::string source;  // names it in messages
};

ConfigWithoutFile config_without_a_file(const std::vector<std::string>& overrides) {
  namespace fs = std::filesystem;
  const std::string resume = train::expand_home(resume_override(overrides));
  // keys other than --resume's own: a run started from keys alone (on the defaults) is resumed by
  // the same keys with --resume auto, which searches their output and experiment (it was refused
  // as "config is required", which keys alone are not)
  bool other_keys = false;
  for (size_t i = 0; i < overrides.size(); ++i) {
    if (overrides[i] == "--resume")
      ++i;  // and its value
    else if (overrides[i].rfind("--resume=", 0) != 0)
      other_keys = true;
  }
  if ((resume.empty() && !overrides.empty()) || (resume == "auto" && other_keys))
    return {"", "", train::kDefaults};
  if (resume.empty())
    throw CLI::RequiredError(
        "config is required: `haargrad train CONFIG.yaml [--key value ...]`, keys alone on top of "
        "the defaults (timm's: `haargrad train --data-dir DIR --model NAME ...`), or `haargrad "
        "train --resume CHECKPOINT` to go on with the config of the checkpoint's run (its "
        "args.yaml)",
        CLI::ExitCodes::RequiredError);
  if (resume == "auto")
    throw CLI::RequiredError(
        "config is required with --resume auto, which picks among the runs of the config's "
        "output and experiment: `haargrad train CONFIG.yaml --resume auto`, or the keys of a run "
        "started without a config (`haargrad train --data-dir DIR ... --resume auto`), or "
        "`haargrad train --resume CHECKPOINT`: the config of that checkpoint's run",
        CLI::ExitCodes::RequiredError);
  std::error_code ec;
  HG_CHECK(fs::exists(resume, ec), "resume: checkpoint ", resume, train::no_file_reason(resume));
  // a run folder given as the checkpoint: its checkpoints, before its args.yaml is taken (and
  // logged) as the config of a run that cannot start from a folder
  HG_CHECK(!fs::is_directory(resume, ec), train::resume_folder_error(resume, false));
  HG_CHECK(!train::yaml_name(resume), train::resume_config_error(resume, false));
  const fs::path folder = fs::path(resume).parent_path();
  const fs::path args = folder / "args.yaml";
  const std::optional<train::TrainState> state = train::read_train_state(resume);
  // weights alone (an export) have no run to resume, config or not: said first, as the trainer
  // says it (the message below sent the user to a command that then said this)
  HG_CHECK(state.has_value(), "resume: ", resume,
           " holds weights only (no run position or optimizer state: an export or a timm "
           "state_dict), so there is no run to resume; start a new run from these weights: "
           "`haargrad train CONFIG.yaml --initial-checkpoint ",
           shell_quote(resume), "`");
  // no args.yaml (removed, as the trainer's mismatch message advises, or a checkpoint copied
  // alone): the config the checkpoint stores is the run's own
  if (train::recorded_args_yaml(args.string()).empty()) {
    const std::string stored = train::checkpoint_config_yaml(resume);
    HG_CHECK(!stored.empty(), "resume: no config given, ", args.string(),
             fs::is_regular_file(args, ec) ? " is empty"
             : fs::is_directory(args, ec)  ? " is a folder"
             : fs::exists(args, ec)        ? " is no regular file"
                                           : " (the config of the checkpoint's run) does not exist",
             " and ", resume,
             " stores no config: give the run's config, `haargrad train CONFIG.yaml --resume ",
             shell_quote(resume), "`");
    return {"", stored, str("the config stored in ", resume)};
  }
  // a checkpoint copied into another run's folder: that args.yaml is the other run's config (its
  // schedule, output, experiment would be taken silently), not the checkpoint's run's
  const std::string folder_run = train::run_marker_id(folder);
  HG_CHECK(state->run.empty() || folder_run.empty() || state->run == folder_run,
           "resume: no config given, and ", args.string(),
           " is the config of another run: ", resume, " was written by run ", state->run, ", ",
           (folder / train::kRunMarker).string(), " names run ", folder_run,
           ": give the checkpoint's run's config, `haargrad train CONFIG.yaml --resume ",
           shell_quote(resume), "`");
  return {args.string(), "", args.string()};
}

void run_train(TrainArgs& a) {
  std::string config_note;
  train::Config cfg;
  std::string base = a.config;  // where cfg came from, for messages
  if (a.config.empty()) {
    const ConfigWithoutFile rc = config_without_a_file(a.overrides);
    base = rc.source;
    config_note = rc.source == train::kDefaults
                      ? std::string(
                            "config: none given: the defaults (timm's train.py's; "
                            "`haargrad train --help` lists them) with the command line's keys")
                      : str("config: ", rc.source, " (no config given: the resumed run's own)");
    if (dist::is_main()) spdlog::info("{}", config_note);
    if (rc.path.empty()) {
      cfg = train::config_from_yaml(rc.yaml, rc.source);
      train::apply_overrides(cfg, a.overrides, base);
    } else {
      cfg = train::load_config_with_overrides(rc.path, a.overrides);
    }
  } else {
    cfg = train::load_config_with_overrides(a.config, a.overrides);
  }
  set_cpu_threads(static_cast<int>(cfg.threads));
  if (const std::string w = cpu_threads_warning(static_cast<int>(cfg.threads));
      !w.empty() && dist::is_main())
    spdlog::warn("{}", w);
  train::TrainOptions opts;
  opts.stop_after_epoch = a.stop_after_epoch;
  opts.plain_output = a.plain;
  opts.config_note = config_note;
  const auto t0 = std::chrono::steady_clock::now();
  train::TrainResult r = train::train(cfg, opts);
  if (r.stop_signal != 0) exit_status() = 128 + r.stop_signal;  // 130 (Ctrl-C) or 143 (SIGTERM)
  if (r.stopped_before_training) return;  // nothing ran to report (the log says so)
  const double minutes = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 60.0;
  // a figure with `digits` decimals, "n/a" for one the run does not know (negative)
  auto fixed = [](double v, int digits) {
    return v < 0 ? std::string("n/a") : str(std::fixed, std::setprecision(digits), v);
  };
  if (!dist::is_main()) return;  // under mpirun rank 0 reports for the run
  // what ranked the epochs, after the figures scripts read: with a model EMA best_top1 is the
  // EMA's (as timm ranks) where last_top1 is the model's, which read as a best below the last;
  // without validation the train loss ranked them
  const std::string ranked = r.best_train_loss >= 0
                                 ? "  best_train_loss " + fixed(r.best_train_loss, 4)
                             : r.last_top1_ema >= 0 ? std::string("  best_top1_of ema")
                                                    : std::string();
  char line[640];
  std::snprintf(
      line, sizeof line,
      "best_top1 %s  last_top1 %s  last_top5 %s  train_img_per_sec %s  data_img_per_sec %s  "
      "data_wait_pct %s  peak_mib %.1f  minutes %.2f%s",
      fixed(r.best_top1, 2).c_str(), fixed(r.last_top1, 2).c_str(), fixed(r.last_top5, 2).c_str(),
      fixed(r.train_img_per_sec, 1).c_str(), fixed(r.data_img_per_sec, 1).c_str(),
      fixed(100 * r.data_wait_fraction, 1).c_str(), r.peak_mib, minutes, ranked.c_str());
  std::printf("%s\n", line);
  std::fflush(stdout);
  if (!r.run_dir.empty()) append_line((std::filesystem::path(r.run_dir) / "log.txt").string(), line);
}

}  // namespace

HG_REGISTER_COMMAND([](CLI::App& root) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* cmd = root.add_subcommand(
      "train",
      "haargrad train CONFIG.yaml [--key value ...]  or  haargrad train --resume CHECKPOINT "
      "[--key value ...]\n"
      "Train a model from a YAML config: e.g. configs/fashion_mnist.yaml or a run's args.yaml "
      "(also as -c / --config CONFIG,\n"
      "timm's spelling); any config key can be overridden as --key value (e.g. --epochs 3 --device "
      "cpu --threads 2).\n"
      "Without a config, --resume CHECKPOINT goes on with the config of the checkpoint's run (the "
      "args.yaml beside it, else the config the checkpoint stores), and other keys go on top of "
      "the defaults\n(timm's train.py's: `haargrad train --data-dir DIR --model NAME`).");
  cmd->add_option("--stop-after-epoch", a->stop_after_epoch,
                  "stop (with checkpoints) after epoch N of the run, counted from its start also "
                  "on a resume (-1: run them all); resume later with --resume")
      ->check([](const std::string& v) {
        // a bad value is a usage error (exit status 2), as for CLI11's own checks; the number
        // as CLI11 reads it ("+0" is 0)
        int64_t n = 0;
        const bool number = CLI::detail::lexical_cast(v, n);
        return number && (n == -1 || n >= 1)
                   ? std::string()
                   : std::string("must be >= 1 (or -1: every epoch), got " + v);
      });
  cmd->add_flag("--plain", a->plain, "log lines instead of a progress bar, even on a terminal");
  cmd->allow_extras();  // everything else is a --key value config override
  cmd->footer(config_keys_help());
  cmd->callback([a, cmd] {
    // mpirun forwards a stop signal to every rank: rank 0 alone says it. mpirun's environment
    // names the rank before MPI starts (dist::launcher_rank), so the others are quiet from their
    // first moment: a signal during MPI's start-up, before MPI has told a rank its rank, is said
    // once too. Outside mpirun (-1) the process speaks, as before.
    train::set_stop_messages(dist::launcher_rank() <= 0);
    // Then at once: a stop signal during start-up (config, MPI) must end the run cleanly, not kill
    // it (train/stop_signal.h; train() asks for one before it claims a folder and before step 1).
    train::StopSignalGuard stop_signals;
    // CONFIG is the first argument left over, when it is no option: a CLI11 positional would take
    // CHECKPOINT of `train --resume CHECKPOINT` (no config) for the config
    const ConfigArgs ca = split_config_args(cmd->remaining());
    a->config = ca.config;
    a->overrides = ca.overrides;
    // mpirun -np N: one process per GPU (dist/process_group.h); a plain process stays rank 0 of 1
    dist::init();
    // MPI's word on the rank (the same as the launcher's, or the launcher named none)
    train::set_stop_messages(dist::is_main());
    // the config's warnings are every rank's alike: rank 0 says them (train() lets the other
    // ranks warn again from the first step)
    if (!dist::is_main()) spdlog::set_level(spdlog::level::err);
    try {
      run_train(*a);
    } catch (const std::exception& e) {
      if (dist::info().mpi) dist::abort_all(e.what());  // a failing rank stops every rank, no hang
      throw;
    }
    dist::finalize();
  });
});

}  // namespace hg::app
