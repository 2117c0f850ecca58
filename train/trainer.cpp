// The training loop (see trainer.h), one function per job: the run folder and resume choice, a
// resume's settings, the model / optimizer / schedule, restoring a checkpoint, one epoch of
// training, its evaluation and summary row, its checkpoints, and the final report. A Session
// carries what they share. The pieces they rely on live in their own files: the run folder and
// resume choice (run_folder.h), what a resume may change (resume_settings.h), evaluation
// (evaluate.h), summary.csv (summary.h), checkpoint-N ranking (checkpoint_history.h), and the one
// file writer (core/atomic_file.h).
#include "train/trainer.h"

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <utility>

#include <spdlog/spdlog.h>

#include "core/atomic_file.h"
#include "core/autograd.h"
#include "core/clock.h"
#include "core/hash.h"
#include "core/memory.h"
#include "core/ops.h"
#include "core/shell_quote.h"
#include "core/thread_tuner.h"
#include "core/threads.h"
#include "core/utf8.h"
#include "data/from_config.h"
#include "data/image.h"
#include "data/image_folder.h"
#include "dist/process_group.h"
#include "layers/loss.h"
#include "models/checkpoint.h"
#include "models/convnext.h"
#include "train/checkpoint.h"
#include "train/checkpoint_history.h"
#include "train/console.h"
#include "train/data_parallel.h"
#include "train/data_wait.h"
#include "train/evaluate.h"
#include "train/finetune.h"
#include "train/layer_decay.h"
#include "train/model_ema.h"
#include "train/optimizer.h"
#include "train/plot.h"
#include "train/resume_settings.h"
#include "train/run_folder.h"
#include "train/schedule.h"
#include "train/step_graph.h"
#include "train/step_losses.h"
#include "train/stop_signal.h"
#include "train/summary.h"

#ifdef HAARGRAD_WITH_CUDA
#include "kernels/cuda/context.h"
#endif

namespace fs = std::filesystem;

namespace hg::train {
namespace {

std::string timestamp() { return local_time(std::time(nullptr), "%Y%m%d-%H%M%S"); }

bool file_exists(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The checkpoints a stopped run can be taken up from, for the messages that stop it: only files
// this run wrote after a finite evaluation, a recovery checkpoint of finite weights, or the
// checkpoint it resumed from are named.
std::string position(int64_t epoch, int64_t step) {
  return step > 0 ? str("epoch ", epoch + 1, " after step ", step) : str("end of epoch ", epoch);
}

struct GoodCheckpoints {
  std::optional<std::string> resumable;  // path, with where it stands:
  int64_t resumable_epoch = 0;           // epochs done before it (TrainState::epoch)
  int64_t resumable_step = 0;  // the step of the epoch it ends at (a recovery checkpoint), else 0
  std::optional<std::string> best;  // model_best.safetensors, with its epoch and top-1
  std::string best_is;

  void set_resumable(const std::string& path, int64_t epoch, int64_t step) {
    resumable = path;
    resumable_epoch = epoch;
    resumable_step = step;
  }

  std::string describe() const {
    if (!resumable) return "no checkpoint of this run was written yet";
    std::string s = str("the run can go on from ", *resumable, " (",
                        position(resumable_epoch, resumable_step), ")");
    if (best) s += str("; the best model is ", *best, " (", best_is, ")");
    return s;
  }

  // What a stop in the epoch loses: the whole epoch, or what came after the recovery checkpoint.
  std::string unsaved() const {
    return resumable_step > 0
               ? str("nothing of this epoch after step ", resumable_step, " is saved")
               : std::string("nothing of this epoch is saved");
  }
};

// The files of a run folder the trainer writes.
struct RunPaths {
  fs::path dir, args, summary, last, best, recovery;
  explicit RunPaths(const fs::path& d = {})
      : dir(d),
        args(d / "args.yaml"),
        summary(d / "summary.csv"),
        last(d / "last.safetensors"),
        best(d / "model_best.safetensors"),
        recovery(d / "recovery.safetensors") {}
};

// The measured CPU thread count of a run (core/thread_tuner.h), which starts at every thread the
// kernels split their work for. When the run ends (also by an error) the kernels get them all back,
// so whatever the process runs next (another run, a test) starts at the configured count, not at
// the count this run settled on.
struct TunedThreads {
  explicit TunedThreads(int max_threads) : tuner(max_threads) {
    set_active_cpu_threads(max_threads);
  }
  ~TunedThreads() { set_active_cpu_threads(cpu_split_threads()); }
  TunedThreads(const TunedThreads&) = delete;
  TunedThreads& operator=(const TunedThreads&) = delete;
  ThreadTuner tuner;
};

// The training step as one CUDA graph (cuda_graph; train/step_graph.h): the graph, and the fixed
// tensors it reads its batch from and writes its loss to.
struct TrainGraph {
  StepGraph graph{Device::cuda};
  Tensor x, y, targets;                    // the batch is copied here before each step
  Tensor loss;                             // the step's loss: a replay writes it here
  StepParts parts;                         // the step on x, y, targets (made with the graph)
  bool fits(const data::Batch& b) const {  // a batch of the captured kind (the last may be smaller)
    return b.images.shape() == x.shape() && b.images.dtype() == x.dtype() &&
           b.labels.shape() == y.shape() && b.targets.defined() == targets.defined() &&
           (!targets.defined() || b.targets.shape() == targets.shape());
  }
};

// What the steps of one train() call share. Members are destroyed in reverse order: the data
// parallel state before the optimizer and model it refers to, the console last.
struct Session {
  Session(Config c, const TrainOptions& o) : cfg(std::move(c)), opts(o) {}
  Config cfg;
  const TrainOptions& opts;
  std::string resume_path, resume_reason;
  std::optional<TrainState> resumed;  // the position of the checkpoint resumed from
  RunPaths paths;
  std::unique_ptr<Console> console;
  Device device = Device::cpu;
  data::Datasets ds;
  std::unique_ptr<data::DataLoader> train_loader, val_loader;
  int64_t steps_per_epoch = 0, accum = 1, updates_per_epoch = 1;
  std::string config_yaml;  // the session's config, stored in every checkpoint
  std::unique_ptr<ConvNeXt> model;
  std::unique_ptr<Optimizer> opt;
  std::unique_ptr<RunSchedule> sched;
  std::unique_ptr<DataParallel> dp;
  std::unique_ptr<ModelEma> ema;       // model_ema: on
  std::unique_ptr<StepLosses> losses;  // the steps' losses until they are read
  std::unique_ptr<TrainGraph> graph;   // cuda_graph: made at the first step where one fits
  std::optional<bool> graph_ok;        // use_graph's decision, made at the first step
  // CPU, one process, the thread count the program's choice: measured (core/thread_tuner.h)
  std::unique_ptr<TunedThreads> threads;
  double lr = 0;  // the schedule's lr now: the head's (layer_decay scales the layers below it)
  TrainState st;
  SummaryLines summary;
  GoodCheckpoints good;
  TrainResult result;
  bool claimed = false;  // this session claimed a new run folder (a new run, or a resume moved)
  bool created = false;  // ... and made it (rather than finding it empty)
  // the output root (output) and the outermost of its folders that this session made; given
  // back with the run folder (empty when the root was there)
  fs::path out_root, made_root;
  // a resume's new args.yaml, written with this session's first checkpoint (a session that diverges
  // before it leaves the run's args.yaml as it was: no checkpoint was trained with the new values)
  std::string pending_args;
  RunFolderLock folder_lock;  // rank 0: this process alone writes the run folder while it trains
  std::string run_id;         // rank 0: the folder's run_marker_id (TrainState::run)
  bool training = false;      // the epochs have started
  double total_train_seconds = 0, total_data_wait = 0;
  int64_t total_train_images = 0;
  std::set<std::string> history_notes_said;
  bool plot = false;           // gnuplot is there: curves.png is redrawn after every epoch (rank 0)
  bool folder_remade = false;  // the run folder vanished during the run and was made again (rank 0)
  // no_resume_opt, taken out of cfg (run_session): this resume's alone, not the run's record
  bool no_resume_opt = false;
};

// The run's best so far in `st` as messages name it, by what ranks its epochs: "top-1 91.20%";
// "EMA top-1 91.40%" in a run with a model EMA, which ranks by the EMA's (rank_top1; told by the
// session, as a recovery checkpoint's state keeps no evaluation); in a run without validation
// "train loss 0.4123".
std::string best_score(const Session& s, const TrainState& st) {
  if (st.best_train_loss >= 0) return fmt::format("train loss {:.4f}", st.best_train_loss);
  const bool ema = s.cfg.model_ema && has_validation(s.cfg);
  return fmt::format("{}top-1 {:.2f}%", ema ? "EMA " : "", st.best_top1);
}

// Where one epoch stands: the micro-batches done, their loss and images, the time spent.
struct EpochProgress {
  int64_t step = 0;
  double loss_sum = 0;
  int64_t images = 0, images_timed = 0;
  double train_secs = 0, data_wait_secs = 0;  // training time, and the part spent waiting for data
  double peak_mib_before = 0;  // a resumed epoch: the peak of its part before the stop
  data::LoaderStats loader;    // the loader's counters at the epoch's end
};

// ---- the run folder
// ------------------------------------------------------------------------------

// The folder new run folders go in: output, "" being timm's output/train.
fs::path output_root(const Config& cfg) { return cfg.output.empty() ? "output/train" : cfg.output; }

// The checkpoint to resume (resume: auto picks one) and the run folder: the resumed checkpoint's,
// or one claimed for this run alone. Data parallel: rank 0 picks both and alone writes (dist/).
void open_run_folder(Session& s) {
  const fs::path out_root = output_root(s.cfg);
  s.resume_path = s.cfg.resume;
  // rank 0 picks alone: another rank would find the folder rank 0 has just locked in use
  if (s.resume_path == "auto" && dist::is_main()) {
    // without an experiment name every run under the output root is a candidate: only those of
    // this session's settings (an unrelated run, the quick start's say, was picked and then
    // refused as "settings differ")
    const auto other_run = [&](const std::string& checkpoint) {
      try {
        const std::string yaml = checkpoint_config_yaml(checkpoint);
        if (yaml.empty()) return std::string();
        Config recorded = config_from_yaml(yaml, checkpoint);
        // its per-rank batch for this session's ranks, as the resume compares it
        // (recorded_config): 2 ranks x 64 resumed on 1 rank with batch_size 128 is the same run
        const std::optional<TrainState> st = read_train_state(checkpoint);
        if (st && st->world_size > 0) {
          if (recorded.batch_size * st->world_size % dist::size() != 0)
            return str("its ", recorded.batch_size * st->world_size,
                       " images per step do not split over ", dist::size(), " ranks");
          rescale_batch_for_ranks(recorded, st->world_size, dist::size());
        }
        return result_key_differences(recorded, s.cfg);
      } catch (const Error&) {  // no readable config: the resume's own checks say what is wrong
        return std::string();
      }
    };
    const ResumePick pick =
        s.cfg.experiment.empty()
            ? pick_resume_checkpoint(out_root, "", run_epochs(s.cfg), other_run)
            : pick_resume_checkpoint(out_root, s.cfg.experiment, run_epochs(s.cfg));
    s.resume_path = pick.checkpoint;
    s.resume_reason = pick.reason;
  }
  s.resume_path = dist::broadcast(s.resume_path, 0, "checkpoint to resume");
  // resume auto with nothing to go on with starts a new run: its args.yaml records none to resume
  // (`haargrad train RUN/args.yaml` reruns it), as a run started without --resume does
  if (s.cfg.resume == "auto" && s.resume_path.empty()) s.cfg.resume.clear();
  fs::path run_dir;
  if (!s.resume_path.empty()) {
    std::error_code ec;
    // a run folder, as validate takes one (train without a config says so before, app/train.cpp)
    HG_CHECK(!fs::is_directory(s.resume_path, ec), resume_folder_error(s.resume_path, true));
    HG_CHECK(file_exists(s.resume_path), "resume: checkpoint ", s.resume_path,
             no_file_reason(s.resume_path));
    HG_CHECK(!yaml_name(s.resume_path), resume_config_error(s.resume_path, true));
    run_dir = fs::path(s.resume_path).parent_path();
    if (run_dir.empty()) run_dir = ".";
    // weights alone (an export, a timm state_dict) carry no run to go on with: resuming them would
    // start a run over in that folder, over its summary and checkpoints
    std::optional<TrainState> state;
    try {
      state = read_train_state(s.resume_path);
    } catch (const Error& e) {  // cut short, say: the run's other checkpoints may still read
      throw Error(str("resume: ", e.what(), readable_checkpoint_hint(run_dir, s.resume_path)));
    }
    HG_CHECK(state.has_value(), "resume: ", s.resume_path,
             " holds weights only (no run position or optimizer state: an export or a timm "
             "state_dict), so there is no run to resume and resuming it would start one over in ",
             run_dir.string(),
             "; start a new run from these weights with initial_checkpoint: ", s.resume_path);
    s.resumed = *state;
  }
  // A checkpoint that cannot go on in its own folder (a copy outside any run folder or in another
  // run's, or one behind its run's newest checkpoint) goes on in a new run folder, as timm's
  // resume always does, never over the files around it. Rank 0 decides for every rank.
  std::string moved_note;
  if (!s.resume_path.empty()) {
    if (dist::is_main()) {
      const std::string why = why_not_resumed_in_place(run_dir, s.resume_path, *s.resumed);
      if (!why.empty())
        moved_note = str("resume: ", why, "; the run goes on in a new folder");
      else if (const std::string newer = newer_recovery_note(run_dir, s.resume_path, *s.resumed);
               !newer.empty())
        spdlog::warn("{}", newer);
    }
    moved_note = dist::broadcast(moved_note, 0, "resume folder");
    if (!moved_note.empty()) run_dir.clear();
  }
  std::string taken_note;  // why the folder is NAME-N
  if (run_dir.empty()) {
    const std::string name = s.cfg.experiment.empty() ? timestamp() + "-" + s.cfg.model + "-" +
                                                            std::to_string(s.cfg.img_size)
                                                      : s.cfg.experiment;
    if (dist::is_main()) {
      std::error_code ec;
      s.out_root = fs::absolute(out_root, ec);
      for (fs::path p = s.out_root; !ec && !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
        s.made_root = p;
        if (p == p.parent_path()) break;
      }
      run_dir = claim_run_folder(out_root, name, &s.created);
      s.claimed = true;
      // NAME-2 unsaid read as a mistake (a run of NAME, or a file of that name, was there)
      const fs::path named = out_root / name;
      if (run_dir.filename() != named.filename())
        taken_note =
            str(" (", named.string(),
                fs::is_directory(named, ec) ? " holds another run's files" : " is taken by a file",
                ")");
    }
    run_dir = dist::broadcast(run_dir.string(), 0, "run folder");
  }
  // before args.yaml and the lock: a failure there gives a claimed folder back (args.yaml first
  // left a folder of its marker alone when the disk was full, and the next run took NAME-2)
  s.paths = RunPaths(run_dir);
  // a resume's args.yaml waits for its first checkpoint (write_pending_args)
  if (dist::is_main() && s.claimed && s.resume_path.empty())
    io::write_file_atomic(s.paths.args.string(), to_yaml(s.cfg));
  if (dist::is_main()) {
    s.folder_lock = RunFolderLock(run_dir);
    s.run_id = run_marker_id(run_dir);  // recorded in every checkpoint this session writes
    // a resumed folder that cannot be written would be found only at the first checkpoint
    if (!s.claimed) {
      const fs::path probe = run_dir / str(".write-check.", ::getpid());
      std::error_code ec;
      const bool created = std::ofstream(probe).good();
      const int err = errno;
      HG_CHECK(created && fs::remove(probe, ec), "resume: the run folder ", run_dir.string(),
               " cannot be written (", created ? ec.message() : std::strerror(err),
               "): its checkpoints and summary.csv could not be saved; to go on from it "
               "elsewhere, copy ",
               s.resume_path,
               " out of the run folder and resume the copy "
               "(it goes on in a new run folder under output)");
    }
  }
  // no bar under mpirun: it gives rank 0 a pseudo-terminal even when its output goes to a file,
  // which would fill with the bar's escape codes (the plain lines are info lines, which other
  // ranks drop)
  s.console = std::make_unique<Console>(dist::is_main() ? (s.paths.dir / "log.txt").string() : "",
                                        s.opts.plain_output || dist::launched_by_mpirun());
  // rank 0 speaks for the run: until the first step the other ranks say errors only, as every
  // warning of the start-up (config, data set, checkpoint, schedule) would come once a rank
  if (!dist::is_main()) spdlog::set_level(spdlog::level::err);
  spdlog::info("run folder {}{}", run_dir.string(), taken_note);
  if (!s.opts.config_note.empty())
    s.console->log_file_only(spdlog::level::info, s.opts.config_note);
  if (dist::size() > 1)  // log.txt points to where the other ranks' errors go
    s.console->log_file_only(spdlog::level::info,
                             "data parallel: this log is rank 0's; a rank R > 0 that fails "
                             "leaves its error in error-rank-R.txt in this folder");
  if (!s.resume_reason.empty()) spdlog::info("{}", s.resume_reason);
  if (!moved_note.empty()) spdlog::info("{}", moved_note);
  // a marker that is not a JSON object (damaged by hand or by a disk), or one without its id,
  // holds no id: say so rather than write checkpoints that name no run without a word (it is the
  // folder's lock, so it is not replaced)
  if (dist::is_main() && s.run_id.empty())
    spdlog::warn(
        "{} cannot be read as the run folder's marker ({}): this session's checkpoints record no "
        "run, so a later resume cannot tell them from another run's, and checkpoint_hist takes "
        "none of the folder's checkpoint-N files as this run's (none is replaced or removed); "
        "training goes on",
        (run_dir / kRunMarker).string(), why_no_run_marker_id(run_dir));
  s.plot = dist::is_main() && gnuplot_available();
  if (dist::is_main() && !s.plot)
    spdlog::info("gnuplot is not on PATH: no curves.png (Debian package gnuplot-nox)");
}

// args.yaml is the run's record for a resume, but the checkpoint's stored config is what trained:
// an edit to args.yaml (a seed, a batch, an lr that never ran) would let a resume change the run
// unseen or record a false schedule_history, so the two must agree on every key but the
// session's (both are written from the same session config: write_pending_args).
void check_args_match_checkpoint(const Session& s, const std::string& args_path,
                                 const std::string& args_text, const std::string& stored) {
  Config from_args = config_from_yaml(args_text, args_path);
  Config from_checkpoint = config_from_yaml(stored, str("the config stored in ", s.resume_path));
  resolve_lr(from_args, s.resumed->world_size);
  resolve_lr(from_checkpoint, s.resumed->world_size);
  const std::string changed = record_differences(from_checkpoint, from_args);
  HG_CHECK(changed.empty(), "resume: ", args_path, " does not match the config stored in ",
           s.resume_path, " (what the run trained with): ", changed,
           "; restore args.yaml, or remove it to resume with the checkpoint's config");
}

// The run's config as a resume finds it: args.yaml, else the config its checkpoint stores (the two
// checked against each other), with its lr resolved and its batch_size per rank for this session's
// rank count. Empty `source` for a checkpoint that stores no config.
struct RecordedConfig {
  Config config;
  std::string source;  // names it in messages
  bool from_args = false;
  std::string rescaled;  // how batch_size was rescaled for another rank count ("" when not)
};

RecordedConfig recorded_config(const Session& s) {
  const std::string args_path = s.paths.args.string();
  const std::string stored = checkpoint_config_yaml(s.resume_path);
  const std::string stored_source = str("the config stored in ", s.resume_path);
  // an empty args.yaml records nothing: the checkpoint's config is the run's then
  const std::string args_text = recorded_args_yaml(args_path);
  const bool have_args = !args_text.empty();
  const std::string& recorded_text = have_args ? args_text : stored;
  RecordedConfig r;
  if (recorded_text.empty()) return r;
  r.source = have_args ? args_path : stored_source;
  r.from_args = have_args;
  if (have_args && !stored.empty())
    check_args_match_checkpoint(s, args_path, recorded_text, stored);
  r.config = config_from_yaml(recorded_text, r.source);
  resolve_lr(r.config, s.resumed->world_size);  // an args.yaml written with lr: null
  // another number of ranks: the same images per update need another batch_size per rank
  const int64_t recorded_batch = r.config.batch_size;
  r.rescaled = rescale_batch_for_ranks(r.config, s.resumed->world_size, dist::size());
  // the run's own args.yaml holds its per-rank batch for its rank count: say what this count needs
  HG_CHECK(r.rescaled.empty() || s.cfg.batch_size == r.config.batch_size, "resume: ", r.rescaled,
           "; this session has batch_size ", s.cfg.batch_size,
           s.cfg.batch_size == recorded_batch ? " (the run's per-rank value for its own rank count)"
                                              : "",
           ": resume with --batch_size ", r.config.batch_size);
  return r;
}

// A resumed run whose epochs are all done: its result, trained no further.
std::optional<TrainResult> already_finished(const Session& s) {
  // the run's length is epochs and what cooldown_epochs, warmup_prefix and the lr cycles add
  // (run_epochs): the advice names the epochs that give a length (epochs_for_run)
  const int64_t run = run_epochs(s.cfg);
  const std::string run_text = run == s.cfg.epochs ? str("--epochs ", run) : run_epochs_text(s.cfg);
  // a run stopped inside an epoch that --epochs no longer reaches: neither finished nor resumable
  HG_CHECK(!s.resumed || s.resumed->step_in_epoch == 0 || s.resumed->epoch < run,
           "resume: ", s.resume_path, " stopped inside epoch ",
           s.resumed ? s.resumed->epoch + 1 : 0, ", past ", run_text, ": resume with --epochs ",
           s.resumed ? epochs_for_run(s.cfg, s.resumed->epoch + 1) : 0,
           " or more to finish that epoch");
  // --stop-after-epoch counts the run's epochs: on a resume past it, nothing would train (the
  // session said it "finished an evaluation" it never ran)
  const int64_t stop = s.opts.stop_after_epoch;
  HG_CHECK(!s.resumed || stop < 0 || s.resumed->epoch < stop ||
               (s.resumed->step_in_epoch == 0 && s.resumed->epoch >= run),
           "resume: ", s.resume_path, " has done ", s.resumed ? s.resumed->epoch : 0, " epoch",
           s.resumed && s.resumed->epoch == 1 ? "" : "s", ", so --stop-after-epoch ", stop,
           " leaves nothing to train (it counts the run's "
           "epochs, not this session's): give --stop-after-epoch ",
           s.resumed ? s.resumed->epoch + 1 : 1, " or more");
  if (!s.resumed || s.resumed->step_in_epoch != 0 || s.resumed->epoch < run) return std::nullopt;
  // The keys a resume checks, checked though nothing trains: a config unlike the run's would pass
  // unsaid, as if it had been used. A schedule change is allowed, and applies to no epoch.
  const RecordedConfig rec = recorded_config(s);
  std::string unused_schedule;
  if (!rec.source.empty()) {
    check_result_keys(rec.config, rec.source, s.cfg);
    unused_schedule = schedule_differences(rec.config, s.cfg);
  }
  // a run resumed with fewer --epochs than it ran: say how many it ran, not the new count; and
  // that nothing of the run is rewritten (a shorter --epochs never cuts a run back)
  const int64_t done_epochs = s.resumed->epoch;
  spdlog::warn(
      "nothing to train: {} (best {} at epoch {}); its checkpoints and summary.csv are left as "
      "they are; set --epochs {} to train on{}",
      done_epochs == run
          ? str("all ", done_epochs, " epochs of this run are done")
          : str("this run has done ", done_epochs, " epochs, more than ", run_epochs_text(s.cfg)),
      best_score(s, *s.resumed), s.resumed->best_epoch,
      done_epochs == run ? std::string("higher")
                         : str("above ", epochs_for_run(s.cfg, done_epochs + 1) - 1),
      unused_schedule.empty()
          ? std::string()
          : str(" (this session's schedule change, ", unused_schedule, ", applies to no epoch)"));
  TrainResult done;
  done.run_dir = s.paths.dir.string();
  done.best_top1 = s.resumed->best_top1;
  done.best_train_loss = s.resumed->best_train_loss;
  done.best_epoch = s.resumed->best_epoch;
  // The run's results as summary.csv holds them: the last evaluation, the training rate over the
  // run's epochs (equal images each: 1 / the mean of 1 / rate) and the memory peak. The loader
  // figures are not in it: -1, printed n/a.
  done.data_img_per_sec = done.data_wait_fraction = -1;
  double inv_rate = 0;
  int64_t rated = 0;
  for (const SummaryRow& row : read_summary(s.paths.summary.string(), done_epochs).rows) {
    if (has_validation(s.cfg)) {  // (without it the row has no eval columns: -1, n/a)
      done.last_top1 = row.eval_top1;
      done.last_top5 = row.eval_top5;
    }
    // with a model EMA, best_top1 is the EMA's (the result line says so by it)
    if (row.has_ema && has_validation(s.cfg)) done.last_top1_ema = row.eval_top1_ema;
    if (row.img_per_sec > 0) inv_rate += 1 / row.img_per_sec, ++rated;
    if (row.peak_mib > done.peak_mib) done.peak_mib = row.peak_mib;
  }
  if (rated > 0) done.train_img_per_sec = static_cast<double>(rated) / inv_rate;
  return done;
}

// The device, the datasets and their loaders, and the steps and updates of an epoch.
void open_data(Session& s) {
  s.device = resolve_device(s.cfg.device);
#ifdef HAARGRAD_WITH_CUDA
  if (s.device == Device::cuda) {
    hg::cuda::set_allow_tf32(s.cfg.precision == "tf32");
    hg::cuda::set_gemm_autotune(s.cfg.gemm_autotune);
  }
#endif
  s.ds = data::make_datasets(s.cfg);
  s.train_loader = data::make_loader(s.cfg, true, s.ds.train);
  spdlog::info("train: {}", s.ds.train->describe());
  if (s.ds.val) {
    s.val_loader = data::make_loader(s.cfg, false, s.ds.val);
    spdlog::info("val:   {}", s.ds.val->describe());
  } else {  // said once: what ranks the epochs, and why summary.csv has no eval columns
    spdlog::info(
        "val:   none (val_split ''): no validation, as timm's train.py without an eval split; "
        "model_best and checkpoint_hist rank the epochs by their mean train loss (lower is "
        "better), and summary.csv has no eval columns{}",
        s.cfg.model_ema ? "; the model EMA is kept and saved, not evaluated" : "");
  }
  s.steps_per_epoch = s.train_loader->batches_per_epoch();
  HG_CHECK(s.steps_per_epoch > 0, "the training set (", s.ds.train->size(),
           " images) gives no full batch of ", s.cfg.batch_size,
           " (a last partial batch is dropped, as timm's drop_last): set --batch-size ",
           std::max<int64_t>(1, s.ds.train->size() / dist::size()), " or less");
  s.accum = s.cfg.grad_accum_steps;
  s.updates_per_epoch = updates_per_epoch(s.steps_per_epoch, s.accum);
}

// The resumed position against this session's epoch: a damaged or hand-edited one must not steer
// the schedule or the loader. Called once the session's keys are known to be the run's: a changed
// batch_size or max_steps_per_epoch changes the epoch too, and is named as the key it is, not as a
// damaged checkpoint.
void check_resumed_position(const Session& s) {
  const TrainState& r = *s.resumed;
  HG_CHECK(r.step_in_epoch <= s.steps_per_epoch, "resume: checkpoint ", s.resume_path,
           ": metadata 'state': step_in_epoch is ", r.step_in_epoch,
           ", past this session's epoch of ", s.steps_per_epoch, " steps");
  // (loose, and on the run's own rank count only: on another, the padded shards can make an
  // epoch a step longer or shorter)
  const int64_t most_updates = 2 * (r.epoch + 1) * s.updates_per_epoch;
  HG_CHECK(r.world_size != dist::size() || r.updates <= most_updates, "resume: checkpoint ",
           s.resume_path, ": metadata 'state': updates is ", r.updates, ", more than ", r.epoch + 1,
           " epochs of ", s.updates_per_epoch, " updates could make (at most ", most_updates,
           " allowed)");
}

// Throws unless the best a resumed checkpoint records is by what this session ranks with: eval
// top-1 with validation, train loss without (a resume cannot turn validation on or off).
// `config_agrees`: the run's recorded config has this session's val_split (then the checkpoint
// comes from an older version that evaluated synthetic data whatever its val_split said).
void check_validation_as_recorded(const Session& s, bool config_agrees) {
  const TrainState& r = *s.resumed;
  const bool validation = has_validation(s.cfg);
  if (validation ? r.best_train_loss < 0 : r.best_top1 < 0) return;
  throw Error(str(
      "resume: ", s.resume_path, " ranks its run's epochs by ",
      validation ? "train loss (a run without validation)" : "eval top-1",
      ", and this session has val_split ", value_text(s.cfg, "val_split"),
      config_agrees && !validation
          ? str(" (as the run's config: a version before no-validation runs evaluated synthetic "
                "data whatever val_split said)")
          : std::string(),
      ": a resume cannot turn validation on or off; ",
      config_agrees ? std::string()
                    : str("resume with ", validation ? "val_split ''" : "a val_split", ", or "),
      "start a new run from its weights (initial_checkpoint)"));
}

// Whether `dir` is a folder a run of `experiment` under `root` claims: root/experiment, or
// root/experiment-N where that was taken (claim_run_folder); any folder of root for an
// experiment left to its generated name. By the folders, not their text: out/rel/, ./out/rel
// and /abs/out/rel are one.
bool is_run_folder_of(const fs::path& root, const std::string& experiment, const fs::path& dir) {
  std::error_code ec;
  if (experiment.empty()) return fs::equivalent(root, dir.parent_path(), ec);
  const fs::path named = root / experiment;
  if (fs::equivalent(named, dir, ec)) return true;
  const std::string base = named.filename().string(), got = dir.filename().string();
  const bool suffixed = got.size() > base.size() + 1 && got.compare(0, base.size(), base) == 0 &&
                        got[base.size()] == '-' &&
                        std::all_of(got.begin() + static_cast<std::ptrdiff_t>(base.size()) + 1,
                                    got.end(), [](unsigned char c) { return std::isdigit(c); });
  return suffixed && fs::equivalent(named.parent_path(), dir.parent_path(), ec);
}

// A resume goes on in its run's folder whatever output and experiment say (they name where a new
// run goes; a resume moved to a new folder uses them): warn when this session asked for another
// place, not when they are the run's own (its args.yaml's, or the folder's name with the -N a
// taken name got).
void warn_unused_location(const Session& s, const Config& recorded) {
  if (s.claimed || !dist::is_main()) return;
  std::error_code ec;
  const fs::path dir = fs::absolute(s.paths.dir, ec);
  if (is_run_folder_of(output_root(s.cfg), s.cfg.experiment, dir)) return;
  std::string given;
  if (s.cfg.output != recorded.output) given = str("output '", s.cfg.output, "'");
  if (s.cfg.experiment != recorded.experiment)
    given += str(given.empty() ? "" : ", ", "experiment '", s.cfg.experiment, "'");
  if (given.empty()) return;
  spdlog::warn(
      "resume: {} not used: a resume goes on in its run's folder, {}; to train on from this "
      "checkpoint elsewhere, start a new run from its weights (initial_checkpoint: {})",
      given, s.paths.dir.string(), s.resume_path);
}

// img_size and crop_pct this session left to the model's own take the run's recorded values: an
// older version chose crop_pct 0.875 for every model, and `--resume auto` with the run's own
// command refused the run over it (convnext_tiny's own is 0.95).
void keep_recorded_model_values(Config& session, const Config& recorded) {
  if (session.model_own.img_size && session.img_size != recorded.img_size) {
    spdlog::info("resume: img_size {} (the run's; not given, the model's own is {})",
                 recorded.img_size, session.img_size);
    session.img_size = recorded.img_size;
  }
  if (session.model_own.crop_pct && session.crop_pct != recorded.crop_pct) {
    spdlog::info("resume: crop_pct {} (the run's; not given, the model's own is {})",
                 recorded.crop_pct, session.crop_pct);
    session.crop_pct = recorded.crop_pct;
  }
}

// A resume: what this session may change against the run's recorded config (args.yaml, else the
// checkpoint's), with args.yaml kept rerunnable.
void reconcile_resumed_settings(Session& s) {
  if (!s.resumed) return;
  const RecordedConfig rec = recorded_config(s);
  if (rec.source.empty()) {  // a checkpoint that stores no config: this session's is the run's
    // ... but the best it records says whether its run validated (resume_settings.h: a resume
    // cannot turn validation on or off)
    check_validation_as_recorded(s, false);
    check_resumed_position(s);
    Config args = s.cfg;
    args.resume = "";
    if (dist::is_main()) io::write_file_atomic(s.paths.args.string(), to_yaml(args));
    return;
  }
  if (!rec.rescaled.empty()) spdlog::info("{}", rec.rescaled);
  keep_recorded_model_values(s.cfg, rec.config);
  const ResumeSettings rs =
      reconcile_resume(rec.config, rec.source, s.cfg, s.resumed->epoch, s.resumed->step_in_epoch,
                       s.resumed->updates, s.updates_per_epoch, s.resumed->plateau);
  // the configs agree on val_split; the best the checkpoint records must too: a run of synthetic
  // data stored with val_split '' by an older version was evaluated (its summary.csv has eval
  // columns, its best is by top-1), and going on without validation mixed rows of both kinds
  check_validation_as_recorded(s, true);
  check_resumed_position(s);  // the keys agree: a position that does not fit is the checkpoint's
  for (const std::string& note : rs.notes) spdlog::warn("{}", note);
  warn_unused_location(s, rec.config);
  s.cfg = rs.session;
  // another rank count: args.yaml takes the per-rank batch of the ranks that go on (what the
  // checkpoints of this session store), so that its record and theirs agree
  if (dist::is_main() && (rs.args_changed || !rec.from_args || !rec.rescaled.empty()))
    s.pending_args = to_yaml(rs.args);
}

// Writes a resume's pending args.yaml, once this session has saved a checkpoint.
void write_pending_args(Session& s) {
  if (s.pending_args.empty()) return;
  io::write_file_atomic(s.paths.args.string(), s.pending_args);
  s.pending_args.clear();
}

// ---- model, optimizer, schedule, restore
// ----------------------------------------------------------

// The parameter groups: timm's weight-decay split, by layer too with layer_decay.
std::vector<ParamGroup> parameter_groups(const Config& cfg, const ConvNeXt& model) {
  std::vector<ParamRef> params;
  for (const ParamRef& p : model.named_tensors())
    if (p.trainable) params.push_back(p);
  const double lr = peak_lr(cfg, "parameter groups");
  if (!cfg.layer_decay) return param_groups_weight_decay(params, lr, cfg.weight_decay);
  const std::vector<int64_t> depths(model.config.depths.begin(), model.config.depths.end());
  spdlog::info("layer_decay {}: {} layers, lr scale {:.3g} (stem) to 1 (head)", *cfg.layer_decay,
               convnext_num_layers(depths),
               std::pow(*cfg.layer_decay, static_cast<double>(convnext_num_layers(depths) - 1)));
  return param_groups_layer_decay(params, depths, lr, cfg.weight_decay, *cfg.layer_decay);
}

// The model (with the initial_checkpoint's weights when fine-tuning), optimizer and schedule.
void build_model(Session& s) {
  const Config& cfg = s.cfg;
  const ModelConfig mcfg = model_config_from(cfg);
  s.model = std::make_unique<ConvNeXt>(mcfg, static_cast<uint64_t>(cfg.seed), DType::f32, s.device);
  ConvNeXt& model = *s.model;
  model.set_wtconv_mode(wtconv_mode_of(cfg));
  // bf16: mixed precision (f32 master weights and optimizer state, bf16 activations; no loss
  // scaling is needed: bf16 has f32's exponent range, so gradients do not underflow as in fp16)
  model.compute_dtype = cfg.precision == "bf16" ? DType::bf16 : DType::f32;
  if (!cfg.initial_checkpoint.empty() && s.resumed)  // timm: the resumed weights win
    spdlog::info("initial_checkpoint {} is not loaded: a resume continues from {}",
                 cfg.initial_checkpoint, s.resume_path);
  else if (!cfg.initial_checkpoint.empty()) {
    load_initial_checkpoint(cfg.initial_checkpoint, model);
    // its head's rows follow its run's class order: byte-wise in an older haargrad's
    const std::optional<TrainState> init = read_train_state(cfg.initial_checkpoint);
    const std::string note =
        init ? byte_order_classes_note(init->train_classes, s.ds.train->class_names()) : "";
    if (!note.empty() && dist::is_main())
      spdlog::warn("initial_checkpoint {}: {}", cfg.initial_checkpoint, note);
  }
  // timm's train.py: on the classifier of the model made (and its initial checkpoint loaded); a
  // resume's checkpoint then replaces it, as timm's resume does
  if (!s.resumed && (cfg.head_init_scale || cfg.head_init_bias))
    spdlog::info("{}", apply_head_init(model, cfg.head_init_scale, cfg.head_init_bias));
  auto groups = parameter_groups(cfg, model);
  s.opt = make_optimizer(cfg.opt, groups, cfg.momentum, adam_settings(cfg));
  spdlog::info(
      "model {}: {} trainable parameters ({} fixed), {:.4g} GMACs/image at {} px, device {}, "
      "precision {}",
      cfg.model, model.num_trainable(), model.num_fixed(),
      forward_macs(mcfg, static_cast<int>(cfg.img_size)) / 1e9, cfg.img_size, device_name(s.device),
      cfg.precision);
  // The CPU has no bf16 or tf32 speed path: bf16 there is the reference that CUDA is tested
  // against (storage rounded to bf16, f32 arithmetic, so slower than fp32), and tf32 is a mode of
  // the GPU's tensor cores. Said, as the run would otherwise look like a slow or plain fp32 one.
  if (s.device == Device::cpu && cfg.precision == "bf16")
    spdlog::warn(
        "precision bf16 on the cpu runs the bf16 reference (values stored as bf16, computed in "
        "f32): slower than fp32 and no less memory; it is for checking, the speed is on cuda");
  if (s.device == Device::cpu && cfg.precision == "tf32")
    spdlog::warn(
        "precision tf32 on the cpu computes in fp32 (TensorFloat-32 is a mode of the GPU's "
        "tensor cores)");
  s.sched = std::make_unique<RunSchedule>(cfg, s.updates_per_epoch);
  // timm's train.py makes no scheduler for sched none, so no warmup either: said, as a config
  // whose warmup_epochs stays (the recipes' 20) would otherwise train at the full lr from update 1
  if (cfg.sched == "none" && cfg.warmup_epochs > 0)
    spdlog::warn(
        "sched none: every update has lr {:.3g}; warmup_epochs {} is not applied (as in timm, "
        "sched none has no warmup{}): sched cosine warms up, or set warmup_epochs 0 to say so",
        peak_lr(cfg, "schedule"), cfg.warmup_epochs,
        cfg.warmup_prefix ? "; with warmup_prefix its epochs are still added to the run, at lr, "
                            "as timm adds them"
                          : "");
  // The warmup takes all of the schedule's epochs (never with warmup_prefix, whose schedule
  // starts after it), and the run too unless cooldown_epochs go on after it, at min_lr: epochs, not
  // the run's length, is what the warmup swallows.
  const int64_t run = run_epochs(cfg);
  if (cfg.sched != "none" && !cfg.warmup_prefix && cfg.warmup_epochs >= cfg.epochs) {
    const int64_t warm = std::min(cfg.warmup_epochs, run);  // the run's epochs in the warmup
    const bool ends_warm = warm == run;
    // The lr of the first and the last update of the warmup, as the step lines show it.
    // summary.csv records timm's lr, which stepping per update is the one set after an epoch's
    // last update: in the last row of a run that ends in its warmup the schedule's value after
    // the run (min_lr when the warmup ends with it), which reads as a decay unless it is said.
    const int64_t updates = warm * s.updates_per_epoch;
    const double first = s.sched->lr(0, 0, 0);
    const double last = s.sched->lr(warm - 1, s.steps_per_epoch - 1, updates - 1);
    // with lr cycles (lr_cycle_limit > 1) the warmup takes the first cycle's decay, not the later
    // cycles': "never decays it" was said of a schedule whose later cycles do
    const bool cycles = !ends_warm && decays_to_min_lr(cfg.sched) && cfg.lr_cycle_limit > 1;
    spdlog::warn(
        "warmup_epochs {} >= {}: the {} within the warmup: {}, below lr {:.3g}, and "
        "the {} schedule {}{} (fewer warmup_epochs, or more epochs){}",
        cfg.warmup_epochs, ends_warm ? run_epochs_text(cfg) : str("epochs ", cfg.epochs),
        ends_warm ? "run ends"
        : cycles  ? "first lr cycle ends"
                  : "schedule ends",
        first == last ? fmt::format("every update has lr {:.3g}", first)
                      : fmt::format("its updates' lr rises from {:.3g} to {:.3g}", first, last),
        peak_lr(cfg, "warmup"), cfg.sched,
        cycles ? "decays only the lr cycles after the warmup" : "never decays it",
        ends_warm ? std::string()
        // lr cycles after the first (lr_cycle_limit > 1) come after the warmup too
        : run - warm > cfg.cooldown_epochs
            ? fmt::format("; then {} epoch{} to the end of {}", run - warm,
                          run - warm == 1 ? "" : "s", run_epochs_text(cfg))
            : fmt::format("; then {} epoch{} of cooldown_epochs {} at min_lr {:.3g}", run - warm,
                          run - warm == 1 ? "" : "s", cfg.cooldown_epochs, cfg.min_lr),
        cfg.sched_on_updates && ends_warm
            ? fmt::format(
                  "; summary.csv's lr column gives the lr set after each epoch's last update "
                  "(timm's): {:.3g} in the last row, used by no update",
                  s.sched->lr(run, 0, updates))
            : std::string());
  }
}

// Where a resumed run goes on, for its log line: a step (1-based, as the step lines), or the
// evaluation (without validation: the end) of an epoch whose steps were all done when a stop
// signal came during it (there is no step after the last one to go on at).
std::string resume_point(const TrainState& st, int64_t steps_per_epoch, bool validation) {
  if (st.step_in_epoch > 0 && st.step_in_epoch >= steps_per_epoch)
    return str("with the ", validation ? "evaluation" : "end", " of epoch ", st.epoch + 1, " (its ",
               st.step_in_epoch, " steps are done)");
  return str("at epoch ", st.epoch + 1, " step ", st.step_in_epoch + 1);
}

// The training data this session reads, in the state its checkpoints record.
void record_training_data(Session& s) {
  s.st.train_images = s.ds.train->size();
  const std::vector<std::string> names = s.ds.train->class_names();
  s.st.train_classes = class_names_tag(names);
  // (JSON holds UTF-8 only: a Latin-1 class folder leaves the names out, not the checkpoint)
  const bool utf8 = std::all_of(names.begin(), names.end(), [](const std::string& n) {
    return invalid_utf8_at(n) == std::string::npos;
  });
  s.st.class_names = utf8 ? names : std::vector<std::string>{};
}

// A resumed run whose training data changed since its checkpoint (images added or removed, a class
// folder renamed) went on unsaid: its epochs then differ from the run's, a partial epoch reads the
// rest of another order (some images twice, some not at all), and renamed classes can give labels
// to other classes. Said with both figures; the checkpoint must have recorded them.
void say_changed_training_data(const Session& s) {
  const TrainState& r = s.st;
  const int64_t images = s.ds.train->size();
  if (r.train_images > 0 && r.train_images != images)
    spdlog::warn(
        "resume: the train split has {} images, {} when {} was written: images were added or "
        "removed since, so the run's epochs from here read other data than before{}",
        images, r.train_images, s.resume_path,
        r.step_in_epoch > 0 ? str(", and the rest of epoch ", r.epoch + 1,
                                  " follows another order (some images twice, others not at all)")
                            : std::string());
  const std::vector<std::string> names = s.ds.train->class_names();
  if (const std::string note = byte_order_classes_note(r.train_classes, names); !note.empty())
    spdlog::warn("resume: {}: {}", s.resume_path, note);
  else if (!r.train_classes.empty() && !names.empty() && r.train_classes != class_names_tag(names))
    spdlog::warn(
        "resume: the train split's class folders are not those of {} ({} now): a class folder was "
        "renamed, added or removed, so a label may now stand for another class than the one the "
        "weights learnt",
        s.resume_path, names.size());
}

// sched plateau: the schedule goes on from the metrics the checkpoint's run counted (timm's
// train.py starts its plateau afresh on a resume: here a resumed run keeps the lrs of one never
// stopped); a new run's checkpoints record the state from its start.
void restore_plateau(Session& s) {
  const bool plateau = s.sched->plateau().has_value();
  if (!s.resumed) {
    if (plateau) s.st.plateau = s.sched->plateau();
    return;
  }
  // a checkpoint and a session of different scheds (one that stores no config, whose keys
  // reconcile_resume cannot compare) would drop the state, or have none to go on from, unsaid
  HG_CHECK(plateau == s.st.plateau.has_value(), "resume: ", s.resume_path,
           plateau
               ? " holds no plateau schedule state (best metric, epochs without a new best, "
                 "lr), which a run with sched plateau goes on from (a run of another sched, "
                 "or an older version, wrote it); resume with that run's sched"
               : str(" holds a plateau schedule's state, and this session's sched is ", s.cfg.sched,
                     ": a resume cannot switch sched from plateau; resume with "
                     "sched plateau"),
           ", or start a new run from its weights (initial_checkpoint)");
  if (plateau) s.sched->set_plateau(*s.st.plateau);
}

// Weights, optimizer state and position of the resumed checkpoint, and the summary rows before it.
void restore_checkpoint(Session& s) {
  if (!s.resumed) {
    restore_plateau(s);
    record_training_data(s);
    // start_epoch (timm's --start-epoch): the run starts as if its first epochs had run, its
    // updates counted as timm's num_updates (epoch x updates per epoch): the schedule, the EMA's
    // warmup, the data order and the names of summary rows and checkpoints follow the epoch
    if (const int64_t start = s.cfg.start_epoch.value_or(0); start > 0) {
      s.st.epoch = start;
      s.st.updates = start * s.updates_per_epoch;
      spdlog::info(
          "start_epoch {}: the run starts at epoch {} of {} (update {}), as if epochs 1 "
          "to {} had run",
          start, start + 1, run_epochs(s.cfg), s.st.updates, start);
    }
    if (s.no_resume_opt)
      spdlog::info("no_resume_opt: nothing is resumed (a new run), so it changes nothing");
    return;
  }
  // no_resume_opt (timm's): the weights, EMA and position, but the optimizer state from zero
  s.st = load_checkpoint(s.resume_path, *s.model, s.no_resume_opt ? nullptr : s.opt.get());
  if (s.no_resume_opt)
    spdlog::warn(
        "no_resume_opt: the optimizer state of {} is not restored: it starts from zero (AdamW's "
        "moments and step count, SGD's momentum), so this session trains otherwise than the run "
        "would have; args.yaml does not record it",
        s.resume_path);
  // a damaged file's NaN weight would stop the run at its first step, at a non-finite loss whose
  // message names this same file as the one to go on from
  check_finite_weights(*s.model, str("resume: checkpoint ", s.resume_path),
                       "resume from an earlier checkpoint of that run");
  restore_plateau(s);
  if (dist::is_main()) say_changed_training_data(s);
  record_training_data(s);
  spdlog::info("resumed from {}: {} epoch{} done, continuing {}", s.resume_path, s.st.epoch,
               s.st.epoch == 1 ? "" : "s",
               resume_point(s.st, s.steps_per_epoch, has_validation(s.cfg)));
  s.summary = read_summary(s.paths.summary.string(), s.st.epoch);
  // in place, summary.csv holds a row for every epoch done; one that lost rows (deleted, cut)
  // would go on without them unsaid, and the curves start later than the run
  if (!s.claimed && dist::is_main()) {
    std::set<int64_t> have;
    for (const SummaryRow& r : s.summary.rows) have.insert(r.epoch);
    std::string missing;
    int64_t count = 0;
    // (a run begun at start_epoch has no rows before it)
    for (int64_t e = s.cfg.start_epoch.value_or(0) + 1; e <= s.st.epoch; ++e)
      if (!have.count(e) && count++ < 5) missing += str(missing.empty() ? "" : ", ", e);
    if (count > 0)
      spdlog::warn(
          "{}: no row for {} of the {} epoch{} done (epoch{} {}{}): the file is missing or was "
          "cut; those rows are lost, the next ones are added after the rest",
          s.paths.summary.string(), count, s.st.epoch, s.st.epoch == 1 ? "" : "s",
          count == 1 ? "" : "s", missing, count > 5 ? ", ..." : "");
  }
  s.good.set_resumable(s.resume_path, s.st.epoch, s.st.step_in_epoch);
  if (s.st.best_epoch >= 1 && file_exists(s.paths.best)) {
    s.good.best = s.paths.best.string();
    s.good.best_is = str("epoch ", s.st.best_epoch, ", ", best_score(s, s.st));
  }
}

// A resume that goes on in a new folder (claimed by this session) from the run's best checkpoint
// (written at the end of its best epoch) starts that folder's model_best with it: else the folder
// had none until a later epoch beat it, perhaps never, while the log named that best. A resume in
// place whose folder lost its model_best.safetensors (deleted, a partial copy) gets it back the
// same way, or from the run's checkpoint-<best epoch>.safetensors beside it: it too would
// otherwise end without one (`validate RUN` takes model_best). Called once training starts, so
// that a folder given back during start-up holds nothing of it. Rank 0.
void carry_best_into_folder(Session& s) {
  if (!s.resumed || !dist::is_main() || s.st.best_epoch < 1) return;
  // in place, a model_best of another epoch than the run's best is one whose copy a stop (a kill,
  // a full disk) cut off after last.safetensors was written: the run named that best, and ended
  // so while model_best held an earlier epoch
  std::string stale;
  if (!s.claimed && file_exists(s.paths.best)) {
    std::optional<TrainState> held;
    try {
      held = read_train_state(s.paths.best.string());
    } catch (const Error&) {  // unreadable: not the run's best either, but said as it is
      return;
    }
    if (!held || (held->epoch == s.st.best_epoch && held->step_in_epoch == 0)) return;
    stale = str(s.paths.best.string(), " holds epoch ", held->epoch,
                ", not the run's best so far (epoch ", s.st.best_epoch, ", ", best_score(s, s.st),
                "): a stop or a failed write cut off its copy");
  }
  std::string from;
  if (s.st.best_epoch == s.st.epoch && s.st.step_in_epoch == 0) {
    from = s.resume_path;
  } else if (!s.claimed) {
    const fs::path h = s.paths.dir / history_file_name(s.st.best_epoch);
    std::optional<TrainState> hs;
    try {
      if (file_exists(h)) hs = read_train_state(h.string());
    } catch (const Error&) {  // unreadable: not a source
    }
    // the run's own file only (match_run, as the rotation asks: not one that records no run)
    if (hs && hs->epoch == s.st.best_epoch && hs->step_in_epoch == 0 &&
        match_run(hs->run, s.run_id) == RunMatch::own)
      from = h.string();
  }
  if (from.empty()) {
    if (s.claimed)
      spdlog::info(
          "model_best: the run's best so far (epoch {}, {}) is not in this folder; its "
          "model_best comes with the first epoch that beats it",
          s.st.best_epoch, best_score(s, s.st));
    else if (!stale.empty())
      spdlog::warn(
          "model_best: {}, and that best is in no checkpoint of this folder; model_best comes "
          "with the first epoch that beats it",
          stale);
    else
      spdlog::warn(
          "model_best: {} is missing and the run's best so far (epoch {}, {}) is in no "
          "checkpoint of this folder; model_best comes with the first epoch that beats it",
          s.paths.best.string(), s.st.best_epoch, best_score(s, s.st));
    if (!stale.empty()) s.good.best.reset();  // it is not the best the messages would name
    return;
  }
  io::copy_file_atomic(from, s.paths.best.string());
  s.good.best = s.paths.best.string();
  s.good.best_is = str("epoch ", s.st.best_epoch, ", ", best_score(s, s.st));
  if (s.claimed)
    spdlog::info("model_best: {} (epoch {}, the run's best so far) is this folder's model_best",
                 from, s.st.best_epoch);
  else if (!stale.empty())
    spdlog::warn("model_best: {}; {} takes its place", stale, from);
  else
    spdlog::warn("model_best: {} was missing; {} (epoch {}, the run's best so far) takes its place",
                 s.paths.best.string(), from, s.st.best_epoch);
}

// The model EMA (model_ema), made after the data-parallel broadcast so that every rank starts from
// rank 0's weights; a resume restores the checkpoint's EMA. A checkpoint without one (a run that
// kept none, a plain state_dict) starts it from the model's weights, as timm's resume does.
void create_ema(Session& s) {
  if (!s.cfg.model_ema) return;
  s.ema = std::make_unique<ModelEma>(*s.model, s.cfg.model_ema_decay, s.cfg.model_ema_warmup);
  s.ema->module().compute_dtype = s.model->compute_dtype;  // evaluated as the model is
  s.ema->module().set_wtconv_mode(wtconv_mode_of(s.cfg));
  if (s.resumed && !load_ema_weights(s.resume_path, s.ema->module()))
    spdlog::warn(
        "model_ema: {} holds no EMA weights ({}*): the EMA starts from the model's weights",
        s.resume_path, kEmaPrefix);
  else if (s.resumed) {
    // as the weights (restore_checkpoint): a NaN EMA would stop the run at its first evaluation
    check_finite_weights(s.ema->module(),
                         str("resume: checkpoint ", s.resume_path, " (its model EMA)"),
                         "resume from an earlier checkpoint of that run");
    spdlog::info("model_ema: restored from {}", s.resume_path);
  }
  spdlog::info("model_ema: decay {}, warmup {}", s.cfg.model_ema_decay,
               s.cfg.model_ema_warmup ? "on" : "off");
}

const ConvNeXt* ema_module(const Session& s) { return s.ema ? &s.ema->module() : nullptr; }

// ---- one epoch of training ----------------------------------------------------------------------

void set_lr(Session& s, double lr) {
  s.lr = lr;
  s.opt->set_lr(lr);  // times each group's lr_scale
}

// The losses of the steps since the last read (StepLosses: this waits for those steps): the
// epoch's loss sum over all ranks, and the stop at a non-finite loss on any rank.
void read_losses(Session& s, int64_t epoch, EpochProgress& p) {
  const StepLosses::Read r = s.losses->take();
  double sum = 0, images = 0;
  int64_t bad = -1;  // index of this rank's first non-finite loss
  for (size_t i = 0; i < r.losses.size(); ++i) {
    if (bad < 0 && !std::isfinite(r.losses[i])) bad = static_cast<int64_t>(i);
    sum += r.losses[i] * static_cast<double>(r.images[i]);
    images += static_cast<double>(r.images[i]);
  }
  const std::vector<double> global = s.dp->sum_over_ranks({sum, images});  // NaN on any rank: NaN
  if (!std::isfinite(global[0])) {
    const std::string where = bad >= 0 ? str("step ", r.steps[static_cast<size_t>(bad)] + 1, " (",
                                             r.losses[static_cast<size_t>(bad)], ")")
                              : r.steps.empty() ? std::string("another rank's steps")
                                                : str("another rank's steps ", r.steps.front() + 1,
                                                      "..", r.steps.back() + 1);
    throw Error(str("non-finite loss at epoch ", epoch + 1, " ", where, ": stopping; ",
                    s.good.unsaved(), "; ", s.good.describe()));
  }
  p.loss_sum += global[0];
  p.images += static_cast<int64_t>(global[1]);
}

// Forward, loss and backward of one micro-batch of an update of `micro` micro-batches (the loss
// divided by it, so the update sees their mean; gradients averaged over the ranks when `sync`);
// mixup / cutmix batches carry soft targets (with the label smoothing already in them).
Tensor forward_backward(Session& s, const Tensor& x, const Tensor& y, const Tensor& targets,
                        bool sync, int64_t micro) {
  Tensor loss = targets.defined() ? soft_target_cross_entropy(s.model->forward(x, true), targets)
                                  : cross_entropy(s.model->forward(x, true), y, s.cfg.smoothing);
  s.dp->backward(micro > 1 ? ops::scale(loss, 1.0 / static_cast<double>(micro)) : loss, sync);
  return loss;
}

// Whether the steps can run as one CUDA graph (cuda_graph), said once: one GPU, an optimizer whose
// update reads its per-step values from device memory (AdamW), one micro-batch per update. With
// decode: nvjpeg the decoder thread runs beside the graph; it keeps up only with enough hardware
// queues (core/cuda_queues.h, which the program sets): with the driver's default 8 its decodes
// waited behind each whole graphed step (39 ms a batch, 0.87x synthetic data; 32 queues: 18 ms,
// fourteenth session, docs/perf-notes.md). A capture waits for a running decode (capture_mutex).
bool use_graph(Session& s) {
  if (!s.graph_ok) {
    const char* why_not =
        !s.cfg.cuda_graph                    ? "cuda_graph: false"
        : s.device != Device::cuda           ? nullptr
        : dist::size() > 1 || s.dp->active() ? "data parallel: NCCL's work is not captured"
        : s.accum > 1                        ? "grad_accum_steps > 1"
        : !s.opt->replayable()               ? "the optimizer (sgd, zero_stage 1) is not replayable"
                                             : "";
    if (why_not && *why_not)
      spdlog::info("training step: launched op by op ({})", why_not);
    else if (why_not)
      spdlog::info("training step: one CUDA graph, captured after {} eager steps",
                   StepGraph::kDefaultWarmup);
    s.graph_ok = why_not && !*why_not;
  }
  return *s.graph_ok;
}

// One update as a replay of the captured step (TrainGraph): the batch copied into the graph's
// inputs, the update's host part (lr, step counts), then the graph. Returns the step's loss.
Tensor graph_step(Session& s, const data::Batch& b) {
  TrainGraph& g = *s.graph;
  g.x.copy_(b.images);
  g.y.copy_(b.labels);
  if (g.targets.defined()) g.targets.copy_(b.targets);
  try {
    g.graph.step(g.parts);
  } catch (const GraphCaptureError& e) {
    // This step's prepare_step has run: its GPU work runs eagerly, and so do the later steps.
    spdlog::warn("training step: {}; launching op by op from now on", e.what());
    g.parts.queue();
    const Tensor loss = g.loss;
    s.graph_ok = false;
    s.graph.reset();
    return loss;
  }
  return g.loss;
}

// Whether micro-batch `step` (1-based in its epoch) logs, as timm's train.py does: at the
// updates whose index in the epoch (0-based) is a multiple of log_interval, and at the epoch's last
// micro-batch. With grad_accum_steps > 1 that counts updates, not micro-batches (a line every
// micro-batch multiple of log_interval was accum times too often).
bool log_point(const Session& s, int64_t step) {
  if (step == s.steps_per_epoch) return true;
  if (step % s.accum != 0) return false;  // not the end of an update
  return (step / s.accum - 1) % s.cfg.log_interval == 0;
}

// One micro-batch: forward, loss, backward (gradients averaged over the ranks on an update's last
// micro-step), and the optimizer update when one is due; as one CUDA graph where it can be.
void train_step(Session& s, int64_t epoch, const data::Batch& b, EpochProgress& p) {
  const bool last_micro = (p.step + 1) % s.accum == 0 || p.step + 1 == s.steps_per_epoch;
  if (last_micro) set_lr(s, s.sched->lr(epoch, p.step, s.st.updates));  // read by the update
  Tensor loss;
  if (use_graph(s)) {
    if (!s.graph) {
      s.graph = std::make_unique<TrainGraph>();
      memory::CategoryScope scope(Category::parameters);  // the inputs live as long as the graph
      s.graph->x = Tensor::empty(b.images.shape(), b.images.dtype(), Device::cuda);
      s.graph->y = Tensor::empty(b.labels.shape(), b.labels.dtype(), Device::cuda);
      if (b.targets.defined())
        s.graph->targets = Tensor::empty(b.targets.shape(), b.targets.dtype(), Device::cuda);
      TrainGraph& g = *s.graph;
      g.parts = optimizer_step_parts(*s.opt, [&s, &g] {
        s.opt->zero_grad();
        g.loss = forward_backward(s, g.x, g.y, g.targets, true, 1);  // graphed: one micro-batch
        autograd::NoGradGuard no_grad;
        if (s.cfg.clip_grad) clip_gradients(*s.opt, *s.cfg.clip_grad);  // fused into AdamW
      });
    }
  }
  const bool graphed = s.graph && s.graph->fits(b);
  if (graphed) {
    loss = graph_step(s, b);
  } else {
    // After replays the gradients' zero_grad marks are the captured step's (a replay sets none):
    // set them, or this backward would add to the last replay's gradients.
    if (s.graph) s.opt->zero_grad();
    const Tensor targets = b.targets.defined() ? b.targets.to(s.device) : Tensor();
    loss = forward_backward(s, b.images.to(s.device), b.labels.to(s.device), targets, last_micro,
                            micro_batches_of_update(p.step, s.steps_per_epoch, s.accum));
  }
  s.losses->add(loss, p.step,
                b.labels.numel());  // read back at each log point, no wait here
  ++p.step;
  // Every rank reads the same batch size (training shards are padded to equal length).
  p.images_timed += b.labels.numel() * dist::size();
  if (s.losses->full() || log_point(s, p.step)) read_losses(s, epoch, p);
  if (last_micro) {
    if (!graphed) {  // the graph's step made the update
      s.dp->clip_and_step(*s.opt, s.cfg.clip_grad);
      s.opt->zero_grad();
    }
    ++s.st.updates;
    if (s.ema) s.ema->update(*s.model, s.st.updates);  // timm: step = updates so far
  }
}

// The progress bar on a terminal, else a log line at each log point (log_point).
void report_progress(Session& s, int64_t epoch, const EpochProgress& p, double secs) {
  const double lr_now = s.lr;
  const double ips = secs > 0 ? static_cast<double>(p.images_timed) / secs : 0.0;
  // The loss as of the last read (read_losses: at each log point).
  const double loss = p.images > 0 ? p.loss_sum / static_cast<double>(p.images) : std::nan("");
  if (s.console->is_terminal()) {
    s.console->update_bar(
        p.step, str("loss ", fmt::format("{:.4f}", loss), " lr ", fmt::format("{:.3g}", lr_now),
                    " ", fmt::format("{:.0f}", ips), " img/s"));
  } else if (log_point(s, p.step)) {
    spdlog::info("epoch {}/{} step {}/{} loss {:.4f} lr {:.3g} {:.0f} img/s", epoch + 1,
                 run_epochs(s.cfg), p.step, s.steps_per_epoch, loss, lr_now, ips);
  }
}

// Fewer CPU threads while other processes keep cores busy, measured (core/thread_tuner.h).
void create_thread_tuner(Session& s) {
  if (s.device != Device::cpu || dist::size() > 1 ||
      !cpu_threads_are_automatic(static_cast<int>(s.cfg.threads)) || cpu_split_threads() < 2)
    return;
  s.threads = std::make_unique<TunedThreads>(cpu_split_threads());
}

void tune_threads(ThreadTuner& tuner, double step_seconds, int64_t images) {
  const int before = tuner.settled_threads(), now = tuner.threads();
  if (tuner.add_step(step_seconds, images) != now) set_active_cpu_threads(tuner.threads());
  if (tuner.settled_threads() != before)
    spdlog::info(
        "cpu threads {} -> {}: steps measured faster ({})", before, tuner.settled_threads(),
        tuner.settled_threads() < before ? "other processes are using cores" : "cores came free");
}

void write_recovery(Session& s, int64_t epoch, const EpochProgress& p);
void check_recovery_weights(const Session& s, int64_t epoch, const EpochProgress& p);

// Trains epoch `epoch` from where the run stands (a recovery checkpoint may have done part of it);
// stops early at Ctrl-C (or the test hook) on any rank.
EpochProgress train_epoch(Session& s, int64_t epoch) {
  memory::reset_peak(s.device);
  EpochProgress p;
  p.step = (epoch == s.st.epoch) ? s.st.step_in_epoch : 0;
  double secs_before = 0, wait_before = 0;  // a resumed epoch's part before the stop
  if (p.step > 0) {
    p.loss_sum = s.st.epoch_loss_sum;
    p.images = s.st.epoch_images;
    p.images_timed = s.st.epoch_images_timed;
    p.peak_mib_before = s.st.epoch_peak_mib;
    secs_before = s.st.epoch_seconds;
    wait_before = s.st.epoch_wait_seconds;
  }
  const int64_t images_timed_before = p.images_timed;
  s.train_loader->start_epoch(epoch, p.step);
  set_lr(s, s.sched->lr(epoch, p.step, s.st.updates));
  s.console->start_bar(str("epoch ", epoch + 1, "/", run_epochs(s.cfg)), s.steps_per_epoch);
  const auto t0 = std::chrono::steady_clock::now();
  data::Batch b;
  DataWait wait(s.device);
  // p's loss, time and data wait so far: for a recovery checkpoint inside the epoch, and at its end
  const auto settle = [&] {
    read_losses(s, epoch, p);
    p.train_secs = secs_before + seconds_since(t0);  // the whole epoch's
    p.data_wait_secs = wait_before + wait.seconds();
  };
  for (;;) {
    wait.begin();
    const bool more = s.train_loader->next(b);
    wait.end();
    if (!more) break;
    const auto step_t0 = std::chrono::steady_clock::now();
    train_step(s, epoch, b, p);
    if (s.threads) tune_threads(s.threads->tuner, seconds_since(step_t0), b.labels.numel());
    report_progress(s, epoch, p, secs_before + seconds_since(t0));  // p counts the whole epoch
    if (s.opts.after_step && s.opts.after_step(epoch, p.step, *s.model)) request_stop(SIGINT);
    // A stop comes at an update's end: inside one, its earlier micro-batches' gradients are in no
    // checkpoint, and the resumed session made the update from its later micro-batches alone.
    // (Every rank asks every step: any_rank is collective.)
    const bool update_done = p.step % s.accum == 0 || p.step == s.steps_per_epoch;
    if (s.dp->any_rank(stop_signal() != 0) && update_done) break;
    // recovery_interval (timm's): the position after every that many updates of the epoch,
    // counted from the epoch's first as timm's (update_idx + 1) % recovery_interval, for a resume
    // after a crash (a stop signal writes it anyway); not at the epoch's last step, whose
    // checkpoints follow (and remove it: save_epoch_checkpoints). Here p.step % accum == 0.
    if (s.cfg.recovery_interval > 0 && update_done && p.step < s.steps_per_epoch &&
        (p.step / s.accum) % s.cfg.recovery_interval == 0) {
      settle();
      check_recovery_weights(s, epoch, p);
      try {  // a write that fails (a full disk) names what is still there to go on from
        write_recovery(s, epoch, p);
      } catch (const Error& e) {
        throw Error(str(e.what(), "; stopping at epoch ", epoch + 1, " step ", p.step, ": ",
                        s.good.describe()));
      }
    }
  }
  settle();  // an interrupted epoch's last steps too
  s.console->end_bar();
  s.total_train_seconds += p.train_secs - secs_before;  // this session's alone
  s.total_train_images += p.images_timed - images_timed_before;
  s.total_data_wait += wait.seconds();
  p.loader = s.train_loader->stats();
  return p;
}

// The peak of live bytes on the device since the last reset, in MiB. A replay of the step's CUDA
// graph allocates nothing, so its activations count from the captured step's statistics.
double step_peak_mib(const Session& s) {
  int64_t peak = memory::stats(s.device).total_peak;
  if (s.graph && s.graph->graph.captured())
    peak = std::max(peak, s.graph->graph.capture_memory().total_peak);
  return static_cast<double>(peak) / (1 << 20);
}

// The signal a stopped run reports (exit status 128 + it): this rank's, or SIGTERM when another
// rank's signal stopped this one (it stops as if told to terminate).
int reported_stop_signal() { return stop_signal() == 0 ? SIGTERM : stop_signal(); }

// summary.csv's text: the rows so far under the run's header (a run without validation has no
// eval columns; one with a model EMA has the EMA's).
std::string summary_text(const Session& s) {
  return summary_csv(summary_header(has_validation(s.cfg), s.cfg.model_ema), s.summary.lines);
}

// ---- a run folder that disappears ---------------------------------------------------------------

// A run folder deleted or moved away while the run trains takes its files with it (log.txt, the
// checkpoints); the epoch's writes then failed "cannot write 'RUN/summary.csv': No such file or
// directory (creating the temporary file ...); 'RUN/summary.csv' is unchanged", which read as a
// write to a file still there, and the epoch's checkpoint was lost with the run. The folder is
// made again for what the run can still save (args.yaml, summary.csv with every epoch's row, the
// checkpoints of this epoch), said as a warning; the run then stops (remade_folder_stop). Rank 0;
// called before each write of an epoch's end, as the folder may go at any moment.
void remake_lost_folder(Session& s, int64_t epoch) {
  std::error_code ec;
  if (!dist::is_main() || s.folder_remade || fs::is_directory(s.paths.dir, ec)) return;
  const std::string dir = s.paths.dir.string();
  fs::create_directories(s.paths.dir, ec);
  HG_CHECK(!ec, "epoch ", epoch + 1, ": the run folder ", dir,
           " disappeared during the run (deleted or moved away), and making it again for this "
           "epoch's checkpoint failed (",
           ec.message(), "): nothing of this epoch is saved");
  s.folder_remade = true;
  s.good = GoodCheckpoints{};  // the checkpoints it held are no longer there to go on from
  // the config the checkpoints store (a resume's new args.yaml follows them: write_pending_args)
  if (s.pending_args.empty()) io::write_file_atomic(s.paths.args.string(), s.config_yaml);
  if (!s.summary.lines.empty())  // (none before the first epoch's end, as in any run)
    io::write_file_atomic(s.paths.summary.string(), summary_text(s));
  spdlog::warn(
      "epoch {}: the run folder {} disappeared during the run (deleted or moved away), with the "
      "files it held: made it again for this epoch's args.yaml, summary.csv and checkpoints",
      epoch + 1, dir);
}

// After the epoch's results are saved in a remade folder the run stops (a later epoch would
// write on into a folder that no longer holds its run: no run.json, no lock, no log.txt) with an
// error naming what to resume; after the run's last epoch there is nothing left to run.
// The command that resumes this run from `checkpoint`, in backquotes: what the messages of a run
// that stopped (Ctrl-C, its folder remade, its data) tell the user to type.
std::string resume_command(const Session& s, const std::string& checkpoint) {
  // under mpirun the same ranks (the run's batch is per rank: one process would be refused)
  const std::string launcher =
      dist::size() > 1 ? str("mpirun -np ", dist::size(), " --bind-to none ") : "";
  return str("`", launcher, "haargrad train ", shell_quote(s.paths.args.string()), " --resume ",
             shell_quote(checkpoint), "`");
}

void remade_folder_stop(const Session& s, int64_t epoch, bool last) {
  if (!s.folder_remade) return;
  const std::string dir = s.paths.dir.string();
  if (last) {
    spdlog::warn(
        "the run folder {} was made again at epoch {}: it holds that epoch's args.yaml, "
        "summary.csv and checkpoints; the files it held before (log.txt, earlier checkpoints) "
        "are no longer there (deleted, or moved away with the folder)",
        dir, epoch + 1);
    return;
  }
  throw Error(str("epoch ", epoch + 1, ": the run folder ", dir,
                  " disappeared during the run (deleted or moved away); it was made again and "
                  "holds this epoch's args.yaml, summary.csv and checkpoints, not the files it "
                  "held before (log.txt, run.json, earlier checkpoints); stopping: go on with ",
                  resume_command(s, s.paths.last.string()), " (in a new run folder)"));
}

// Throws when the model's or the EMA's weights are not all finite: `what` (e.g. "epoch 3: its last
// update") left them so after `losses` finite losses (each read before its update), and `saved`
// says what is not written.
void check_weights_finite(const Session& s, const std::string& what, const char* losses,
                          const std::string& saved) {
  for (const ConvNeXt* m : {static_cast<const ConvNeXt*>(s.model.get()), ema_module(s)}) {
    if (m == nullptr) continue;
    const WeightCount w = nonfinite_weights(*m);
    HG_CHECK(w.nonfinite == 0, what, " left ", w.nonfinite, " of the ",
             m == s.model.get() ? "model's " : "model EMA's ", w.total,
             " weights non-finite (NaN or Inf; the first in '", w.first, "'), after ", losses,
             " finite losses: the model has diverged (a lower lr or clip_grad may help); "
             "stopping; ",
             saved, "; ", s.good.describe());
  }
}

// Before a recovery checkpoint is written: the losses read so far came before their updates, and
// the last update may have left the weights non-finite (a diverging lr). Such a file, and the
// args.yaml written with it, were what resume then refused, and what the run's messages sent it
// to instead no longer matched args.yaml. Every rank calls it on the same step (the weights are
// the same on every rank: each throws).
void check_recovery_weights(const Session& s, int64_t epoch, const EpochProgress& p) {
  check_weights_finite(s, str("epoch ", epoch + 1, " step ", p.step, ": the updates so far"),
                       "their", "no recovery checkpoint is written");
}

// The position (whole updates only) in recovery.safetensors, after check_recovery_weights: at a
// stop (save_recovery) and every recovery_interval updates (train_epoch). Every rank calls it on
// the same step. The file written is then what the run can go on from.
void write_recovery(Session& s, int64_t epoch, const EpochProgress& p) {
  TrainState rs = s.st;
  rs.epoch = epoch;
  rs.step_in_epoch = p.step;
  rs.epoch_loss_sum = p.loss_sum;
  rs.epoch_images = p.images;
  rs.epoch_seconds = p.train_secs;
  rs.epoch_images_timed = p.images_timed;
  rs.epoch_wait_seconds = p.data_wait_secs;
  rs.epoch_peak_mib = std::max(p.peak_mib_before, step_peak_mib(s));
  rs.eval_top1 = rs.eval_top5 = rs.eval_loss = -1;  // no evaluation closes a partial epoch
  rs.train_loss = -1;                               // (nor a train loss)
  rs.eval_top1_ema = rs.eval_top5_ema = rs.eval_loss_ema = -1;
  rs.run = s.run_id;
  remake_lost_folder(s, epoch);
  save_checkpoint(s.paths.recovery.string(), *s.model, s.opt.get(), rs, s.config_yaml,
                  ema_module(s));
  write_pending_args(s);
  s.good.set_resumable(s.paths.recovery.string(), epoch, p.step);
}

// Ctrl-C: the position (whole steps only) goes into recovery.safetensors.
void save_recovery(Session& s, int64_t epoch, const EpochProgress& p) {
  check_recovery_weights(s, epoch, p);  // a diverged model is said as such, not as a failed write
  // a write that fails (a full disk) names what is still there to go on from, as a non-finite
  // loss does: the message was the writer's alone
  try {
    write_recovery(s, epoch, p);
  } catch (const Error& e) {
    throw Error(str(e.what(), "; interrupted (", stop_signal_name(stop_signal()), ") at epoch ",
                    epoch + 1, " step ", p.step,
                    ", the recovery checkpoint could not be written: ", s.good.describe()));
  }
  if (dist::is_main())  // rank 0 speaks for the run (every rank gets here, on the same step)
    spdlog::warn("interrupted ({}) at epoch {} step {}: recovery checkpoint {} (resume with {})",
                 stop_signal_name(stop_signal()), epoch + 1, p.step, s.paths.recovery.string(),
                 resume_command(s, s.paths.recovery.string()));
  s.result.interrupted = true;
  s.result.stop_signal = reported_stop_signal();
}

// ---- evaluation, summary, checkpoints -----------------------------------------------------------

// An epoch's evaluation: the model's and, in a run with a model EMA, the EMA's.
struct Evaluation {
  EvalResult model;
  std::optional<EvalResult> ema;
  // The score that picks the best checkpoint: the EMA's top-1 when the run keeps one (timm's
  // train.py replaces the model's metrics by the EMA's), else the model's.
  double rank_top1() const { return ema ? ema->top1 : model.top1; }
  bool finite() const { return model.finite() && (!ema || ema->finite()); }
};

// How a finished epoch scores: its mean train loss and, in a run with validation, its evaluation.
// Without validation (val_split '') the train loss ranks the epoch (timm's train.py takes its
// train metrics then).
struct EpochScores {
  double train_loss = 0;
  std::optional<Evaluation> eval;  // none without validation
};

// A stop signal ends an evaluation early (its figures are then dropped): a container's or a
// scheduler's grace period after SIGTERM is seconds, a validation split can take minutes.
// Under mpirun each rank sees its own signal, so whether the model's evaluation was cut short is
// decided by every rank together: one rank skipping the EMA's evaluation while another reduces its
// metrics would pair two different collectives (MPI_ERR_TRUNCATE, or a hang).
Evaluation evaluate_models(Session& s, int64_t epoch) {
  int64_t batches = 0;  // this process's, for the test hook
  const auto stop = [&s, epoch, &batches] {
    if (s.opts.after_eval_batch && s.opts.after_eval_batch(epoch, ++batches)) request_stop(SIGUSR1);
    return stop_signal() != 0;
  };
  Evaluation ev;
  ev.model = evaluate(*s.model, *s.val_loader, s.device, epoch, stop);
  s.dp->reduce_evaluation(ev.model);  // data parallel: each rank evaluated its shard
  if (s.ema && !s.dp->any_rank(ev.model.stopped)) {
    ev.ema = evaluate(s.ema->module(), *s.val_loader, s.device, epoch, stop);
    s.dp->reduce_evaluation(*ev.ema);
  }
  return ev;
}

// The run's curves (train/plot.h) into RUN/curves.png, the file `haargrad plot RUN` writes. A
// plot is a convenience: its failure is a warning, never a failed run.
void plot_curves(const Session& s) {
  if (!s.plot || !dist::is_main()) return;
  try {
    plot_runs({s.paths.dir.string()}, (s.paths.dir / "curves.png").string());
  } catch (const std::exception& e) {
    spdlog::warn("plot: no curves.png this epoch: {}", e.what());
  }
}

// The epoch's summary.csv row (rank 0 writes the file) and its log lines.
void record_epoch(Session& s, int64_t epoch, const EpochProgress& p, const EpochScores& sc) {
  const double peak_mib = std::max(p.peak_mib_before, step_peak_mib(s));
  // the lr timm's summary.csv records: the epoch's, or stepping per update, the one its scheduler
  // set after the epoch's last update (the next update's), by the schedule this epoch ran: not the
  // session's sched_on_updates, nor s.lr (a resume into the epoch's evaluation set it by the new
  // schedule), where a resume changed them at the epoch's end
  const double lr = s.sched->lr_set_after(epoch, s.steps_per_epoch - 1, s.st.updates);
  SummaryRow row{epoch + 1,
                 sc.train_loss,
                 NAN,
                 NAN,
                 NAN,
                 lr,
                 p.train_secs > 0 ? static_cast<double>(p.images_timed) / p.train_secs : 0.0,
                 peak_mib};
  // without validation the row has no eval values at all (summary.h), never stand-in zeros
  row.has_eval = sc.eval.has_value();
  if (sc.eval) {
    row.eval_loss = sc.eval->model.loss;
    row.eval_top1 = sc.eval->model.top1;
    row.eval_top5 = sc.eval->model.top5;
  }
  if (sc.eval && sc.eval->ema) {
    row.has_ema = true;
    row.eval_loss_ema = sc.eval->ema->loss;
    row.eval_top1_ema = sc.eval->ema->top1;
    row.eval_top5_ema = sc.eval->ema->top5;
  }
  s.summary.lines.push_back(format_summary_row(row));
  // the score that ranks the epoch's checkpoint (checkpoint_history.h); NaN: not finite
  double score = sc.train_loss;
  if (sc.eval) score = sc.eval->finite() ? sc.eval->rank_top1() : NAN;
  s.summary.score[epoch + 1] = score;
  remake_lost_folder(s, epoch);
  if (dist::is_main()) io::write_file_atomic(s.paths.summary.string(), summary_text(s));
  plot_curves(s);
  // Share of the epoch's step time spent waiting for data (train/data_wait.h: on a GPU, the time
  // it had no work while the host waited for a batch): above a few % the loader is the step.
  const double data_wait = p.train_secs > 0 ? std::min(1.0, p.data_wait_secs / p.train_secs) : 0.0;
  spdlog::info(
      "epoch {}/{}: train loss {:.4f}, {}{:.0f} img/s, waited for data {:.1f}% of the time, peak "
      "{:.1f} MiB",
      epoch + 1, run_epochs(s.cfg), row.train_loss,
      sc.eval ? fmt::format("eval loss {:.4f}, top-1 {:.2f}%, top-5 {:.2f}%, ", row.eval_loss,
                            row.eval_top1, row.eval_top5)
              : std::string(),
      row.img_per_sec, 100 * data_wait, peak_mib);
  // gpu_augment: what the host wait above cannot see (the stream's own wait for decodes)
  if (const data::LoaderStats& l = p.loader; l.gpu_batches_timed > 0) {
    const double per = 1e3 / static_cast<double>(l.gpu_batches_timed);
    spdlog::info(
        "epoch {}/{}: GPU data stage per batch: the training stream waited {:.3f} ms for decodes, "
        "copies + crop kernel {:.3f} ms ({} batches timed, {} not complete when read)",
        epoch + 1, run_epochs(s.cfg), per * l.gpu_decode_wait_seconds,
        per * l.gpu_transform_seconds, l.gpu_batches_timed, l.gpu_batches_dropped);
  }
  // nvjpeg: the decoder thread's own time; decoding near the step time means the loader is the step
  if (const data::NvjpegHostTimes& d = p.loader.gpu_decoder; d.batches > 0) {
    const double per = 1e3 / static_cast<double>(d.batches);
    spdlog::info(
        "epoch {}/{}: JPEG decoder thread per batch: {:.2f} ms decoding, {:.2f} ms waiting for a "
        "free output buffer ({} batches)",
        epoch + 1, run_epochs(s.cfg), per * d.decode_seconds, per * d.buffer_wait_seconds,
        d.batches);
  }
  if (row.has_ema)
    spdlog::info("epoch {}/{}: EMA eval loss {:.4f}, top-1 {:.2f}%, top-5 {:.2f}%", epoch + 1,
                 run_epochs(s.cfg), row.eval_loss_ema, row.eval_top1_ema, row.eval_top5_ema);
}

// Without validation nothing looks at the weights an epoch ends with: its losses all came before
// its last update, which may have made them non-finite (a diverging lr). Saved, that epoch was the
// file to go on from and, by its lower train loss, model_best (the finite one rotated away), both
// refused by resume and validate. It stops the run as a non-finite evaluation does.
void check_weights_after_epoch(const Session& s, int64_t epoch) {
  check_weights_finite(s, str("epoch ", epoch + 1, ": its last update"), "the epoch's",
                       str(s.good.unsaved(), " (summary.csv records it)"));
}

// Evaluates the model (and EMA; nothing in a run without validation), records the epoch, and stops
// the run after its row is written when an evaluation was not finite (nothing of the epoch is
// saved then). After the run's last epoch nothing asks for a stop signal again: the handler says
// from here on that the run saves it and ends normally (in the same atomic step as the check, so
// one that came just before still gets its recovery checkpoint).
std::optional<EpochScores> evaluate_epoch(Session& s, int64_t epoch, const EpochProgress& p,
                                          bool last) {
  EpochScores sc;
  sc.train_loss = p.loss_sum / static_cast<double>(std::max<int64_t>(p.images, 1));
  if (s.val_loader) sc.eval = evaluate_models(s, epoch);
  const StopOutcome finish =
      dist::size() > 1 ? StopOutcome::finish_if_all_ranks : StopOutcome::finish;
  const bool stopped = last ? !change_stop_outcome(finish) : stop_signal() != 0;
  if (s.dp->any_rank(stopped)) return std::nullopt;  // a stop signal: not recorded
  record_epoch(s, epoch, p, sc);
  if (!sc.eval) {  // (the train loss is finite: read_losses stops the run otherwise)
    check_weights_after_epoch(s, epoch);
    return sc;
  }
  const Evaluation& ev = *sc.eval;
  s.result.last_top1 = ev.model.top1;
  s.result.last_top5 = ev.model.top5;
  if (ev.ema) s.result.last_top1_ema = ev.ema->top1;
  for (const EvalResult* e : {&ev.model, ev.ema ? &*ev.ema : nullptr})
    HG_CHECK(!e || e->finite(), "epoch ", epoch + 1, ": the evaluation ",
             e == &ev.model ? "" : "of the EMA ", "gave non-finite outputs for ", e->nonfinite,
             " of ", e->images, " images (eval loss ", e->loss,
             "): the model has diverged (a lower lr or clip_grad may help); stopping; ",
             s.good.unsaved(), " (summary.csv records it); ", s.good.describe());
  return sc;
}

// checkpoint-<epoch> joins the history; the worst beyond checkpoint_hist go (rank 0 only). Only
// the run's own files are replaced or removed (checkpoint_history.h): a file of the epoch's name
// that is not (another run's, a weights file) was replaced unsaid; it stays, and the epoch goes
// without its checkpoint-N.
void rotate_history(Session& s, int64_t epoch) {
  if (!dist::is_main() || s.cfg.checkpoint_hist <= 0) return;
  const fs::path& dir = s.paths.dir;
  const fs::path file = dir / history_file_name(epoch + 1);
  const std::string foreign = file_exists(file) ? not_the_runs_file(file, s.run_id) : "";
  if (foreign.empty())
    io::copy_file_atomic(s.paths.last.string(), file.string());
  else
    spdlog::warn(
        "checkpoint_hist: {}; it is left as it is, not replaced: epoch {} gets no {} of this "
        "run",
        foreign, epoch + 1, file.filename().string());
  std::vector<std::string> notes;
  const RankMetric metric = has_validation(s.cfg) ? RankMetric::top1 : RankMetric::train_loss;
  const std::vector<HistoryEntry> kept =
      scan_history(dir, s.summary.score, s.run_id, &notes, metric);
  for (const std::string& n : notes)
    if (s.history_notes_said.insert(n).second) spdlog::warn("checkpoint_hist: {}", n);
  for (int64_t victim : history_to_delete(kept, s.cfg.checkpoint_hist, metric)) {
    std::error_code ec;
    fs::remove(dir / history_file_name(victim), ec);
    if (ec) {
      spdlog::warn("checkpoint_hist: cannot remove {}: {}",
                   (dir / history_file_name(victim)).string(), ec.message());
    } else if (s.resumed && victim <= s.resumed->epoch) {
      // an earlier session's file (the rotation goes on after a resume as in one session; an
      // info line, not a warning at every resume), with its path: another folder's session wrote it
      spdlog::info("checkpoint_hist {}: removed {} (an earlier session's; not among the best {})",
                   s.cfg.checkpoint_hist, (dir / history_file_name(victim)).string(),
                   s.cfg.checkpoint_hist);
    } else {
      spdlog::info("checkpoint_hist: removed {} (not among the best {})", history_file_name(victim),
                   s.cfg.checkpoint_hist);
    }
  }
}

// The epoch's score handed to the schedule (a plateau counts it; timm's train.py steps its
// scheduler with it after the summary row), the state kept for the checkpoint, and a decay said.
void end_schedule_epoch(Session& s, int64_t epoch, const EpochScores& sc) {
  if (!s.sched->plateau()) return;
  const bool by_loss = !sc.eval;
  const double metric = by_loss ? sc.train_loss : sc.eval->rank_top1();
  const double before = s.sched->plateau()->lr;
  s.sched->end_epoch(epoch, metric);
  s.st.plateau = s.sched->plateau();
  if (s.st.plateau->lr < before && dist::is_main())
    spdlog::info(
        "epoch {}: sched plateau: more than patience_epochs {} epochs without a new best {}: lr "
        "{:.4g} -> {:.4g} {}{}",
        epoch + 1, s.cfg.patience_epochs,
        by_loss ? "train loss" : (sc.eval->ema ? "EMA top-1" : "top-1"), before, s.st.plateau->lr,
        // after the run's last epoch no epoch takes it: a resume with more epochs does
        epoch + 1 < run_epochs(s.cfg) ? str("from epoch ", epoch + 2, " on")
                                      : std::string("for a resume with more epochs (kept in the "
                                                    "checkpoint; this was the last epoch)"),
        s.cfg.lr_noise.empty() ? "" : " (the lr held: lr_noise moves each epoch's around it)");
}

// The end of a finished, finitely evaluated epoch: last.safetensors, model_best when it is the
// best so far, the history, and no stale recovery checkpoint.
void save_epoch_checkpoints(Session& s, int64_t epoch, const EpochScores& sc) {
  end_schedule_epoch(s, epoch, sc);
  TrainState& st = s.st;
  st.epoch = epoch + 1;
  st.step_in_epoch = 0;
  st.epoch_loss_sum = 0;
  st.epoch_images = 0;
  st.train_loss = sc.train_loss;
  bool is_best = false;  // an equal score keeps the earlier epoch, as timm's CheckpointSaver
  if (sc.eval) {
    const Evaluation& ev = *sc.eval;
    st.eval_top1 = ev.model.top1;
    st.eval_top5 = ev.model.top5;
    st.eval_loss = ev.model.loss;
    if (ev.ema) {
      st.eval_top1_ema = ev.ema->top1;
      st.eval_top5_ema = ev.ema->top5;
      st.eval_loss_ema = ev.ema->loss;
    }
    is_best = ev.rank_top1() > st.best_top1;
    if (is_best) st.best_top1 = ev.rank_top1();
  } else {  // no validation: the lowest train loss (timm: decreasing=True for a loss)
    is_best = st.best_train_loss < 0 || sc.train_loss < st.best_train_loss;
    if (is_best) st.best_train_loss = sc.train_loss;
  }
  if (is_best) st.best_epoch = epoch + 1;
  st.run = s.run_id;
  remake_lost_folder(s, epoch);
  // every rank calls save_checkpoint (a ZeRO-1 optimizer gathers its shards); rank 0 writes it.
  // The epoch's history file comes before model_best, as in timm's CheckpointSaver: a model_best
  // that could not be written (a full disk) lost the epoch's checkpoint-N for good, where resume
  // makes model_best again from last. A write that fails says what the run can go on from (s.good
  // as it stands then: the previous checkpoint, or this epoch's last once written).
  try {
    save_checkpoint(s.paths.last.string(), *s.model, s.opt.get(), st, s.config_yaml, ema_module(s));
    write_pending_args(s);
    s.good.set_resumable(s.paths.last.string(), st.epoch, 0);
    rotate_history(s, epoch);
    if (is_best) {
      if (dist::is_main()) io::copy_file_atomic(s.paths.last.string(), s.paths.best.string());
      s.good.best = s.paths.best.string();
      s.good.best_is = str("epoch ", st.best_epoch, ", ", best_score(s, st));
    }
  } catch (const Error& e) {
    throw Error(str(e.what(), "; stopping after epoch ", epoch + 1, ": ", s.good.describe()));
  }
  std::error_code ec;
  if (dist::is_main() && (fs::remove(s.paths.recovery, ec), ec))
    spdlog::warn("cannot remove the stale {}: {}", s.paths.recovery.string(), ec.message());
}

// ---- the report ---------------------------------------------------------------------------------

TrainResult final_report(Session& s) {
  TrainResult& r = s.result;
  r.run_dir = s.paths.dir.string();
  r.best_top1 = s.st.best_top1;
  r.best_train_loss = s.st.best_train_loss;
  r.best_epoch = s.st.best_epoch;
  const double secs = s.total_train_seconds;
  r.train_img_per_sec = secs > 0 ? static_cast<double>(s.total_train_images) / secs : 0;
  r.data_img_per_sec = s.train_loader->stats().images_per_second();
  r.data_wait_fraction = secs > 0 ? std::min(1.0, s.total_data_wait / secs) : 0.0;
  r.peak_mib = step_peak_mib(s);
  r.corrupt_skipped = s.ds.train->corrupt_skipped() + (s.ds.val ? s.ds.val->corrupt_skipped() : 0);
  // a session that only finished an evaluation (a resume after a stop in it) trained no step:
  // its rates are not known (-1, "n/a"), not 0 img/s
  const bool trained = s.total_train_images > 0;
  if (!trained) r.train_img_per_sec = r.data_img_per_sec = r.data_wait_fraction = -1;
  const std::string speed =
      trained ? fmt::format(
                    "train {:.0f} img/s, data loading {:.0f} img/s, waited for data {:.1f}% of "
                    "the time",
                    r.train_img_per_sec, r.data_img_per_sec, 100 * r.data_wait_fraction)
              : std::string("no training step in this session (it finished an evaluation)");
  if (r.best_epoch >= 1 && !has_validation(s.cfg))
    spdlog::info(
        "done: best train loss {:.4f} (epoch {}; no validation: epochs ranked by train "
        "loss), {}",
        r.best_train_loss, r.best_epoch, speed);
  else if (r.best_epoch >= 1)
    spdlog::info("done: best {}top-1 {:.2f}% (epoch {}), {}", s.ema ? "EMA " : "", r.best_top1,
                 r.best_epoch, speed);
  else
    spdlog::info("done: no epoch finished yet, {}", speed);
  spdlog::info("{}", memory::format_stats(s.device));
  if (r.corrupt_skipped > 0)
    spdlog::warn("{} corrupt image{} skipped", r.corrupt_skipped,
                 r.corrupt_skipped == 1 ? " was" : "s were");
  if (const int64_t replaced = s.ds.val ? s.ds.val->replaced_after_scan() : 0; replaced > 0)
    spdlog::warn(
        "{} of the {} validation images failed to decode after the folder scan and were replaced "
        "by their next good neighbour (named above): each evaluation's top-1, top-5 and loss "
        "counted that neighbour in their place; fix or remove those files for exact metrics",
        replaced, s.ds.val->size());
  spdlog::info("run folder {}", s.paths.dir.string());
  return r;
}

}  // namespace

std::string cuda_unavailable_reason() {
#ifdef HAARGRAD_WITH_CUDA
  if (hg::cuda::available()) return "";
  return "no usable GPU was found (the CUDA driver reports none)";
#else
  return "this haargrad was built without CUDA (scripts/quickstart.sh builds the CUDA part only "
         "where nvidia-smi lists a GPU; elsewhere configure with -DHAARGRAD_CUDA=ON next to a "
         "CUDA toolkit)";
#endif
}

Device resolve_device(const std::string& device) {
  const std::string why = cuda_unavailable_reason();
  if (device == "cpu") return Device::cpu;
  if (device == "cuda") {
    HG_CHECK(why.empty(), "device 'cuda' requested but ", why,
             "; run on the CPU with --device cpu");
    return Device::cuda;
  }
  HG_CHECK(device == "auto", "device must be auto, cpu or cuda, got '", device, "'");
  return why.empty() ? Device::cuda : Device::cpu;
}

namespace {

// A folder this session claimed that holds nothing but its marker, args.yaml and log.txt is
// given back: those files go, and the folder too when this session made it (one it found empty,
// perhaps made by the user, stays). True when it was. Rank 0.
bool give_back_folder(const Session& s) {
  if (!s.claimed || !dist::is_main()) return false;
  std::error_code ec;
  const std::set<std::string> ours = {kRunMarker, "args.yaml", "log.txt"};
  bool only_ours = true;
  for (const fs::directory_entry& e : fs::directory_iterator(s.paths.dir, ec))
    only_ours = only_ours && ours.count(e.path().filename().string()) > 0;
  if (ec || !only_ours) return false;
  for (const std::string& name : ours) fs::remove(s.paths.dir / name, ec);
  if (s.created) fs::remove(s.paths.dir, ec);  // only when empty
  // the output root's folders that this session made, each only when empty
  if (s.created && !s.made_root.empty())
    for (fs::path p = s.out_root; fs::remove(p, ec) && !ec && p != s.made_root;)
      p = p.parent_path();
  return true;
}

// A stop signal during start-up (`stopped` on any rank: every rank asks at the same points, so they
// agree) ends the run before its first step: nothing was trained, so nothing is saved, and a folder
// this session claimed is given back (a resumed folder keeps its checkpoints). Empty: none came.
std::optional<TrainResult> stopped_during_startup(Session& s, bool stopped = stop_signal() != 0) {
  if (!dist::any(stopped, "stop signal during start-up")) return std::nullopt;
  TrainResult r;
  r.stopped_before_training = true;
  r.stop_signal = reported_stop_signal();
  const std::string folder = s.paths.dir.string();
  // said before the folder is given back: log.txt then goes with it; by rank 0 alone (every
  // rank gets here: they agree)
  if (dist::is_main())
    spdlog::warn(
        "stopped by {} before the first step: nothing was trained or saved{}",
        stop_signal_name(stop_signal()),
        s.claimed ? str("; the new run folder ", folder, " is given back") : std::string());
  if (!give_back_folder(s)) r.run_dir = folder;
  return r;
}

// Every rank must read the same images: each host may hold its own copy of the data (data_dir
// differs), but the sampler splits one index range, so a rank with another number of images has
// another number of steps (a collective then waits on a rank that left the epoch: MPI aborted
// with a corrupted heap), and another class list gives the same label to other classes, unsaid.
// Every rank sees every rank's figures, so all of them stop with the same message.
void check_ranks_same_data(const Session& s) {
  if (dist::size() == 1) return;
  // and the images per class, as a hash of both splits' counts (a file moved between class
  // folders on one host changes no total: the two ranks then gave it different labels)
  std::string counts;
  for (const data::Dataset* d : {s.ds.train.get(), s.ds.val.get()})
    if (d != nullptr)
      for (const int64_t n : d->label_counts()) counts += std::to_string(n) + ",";
  const std::vector<uint64_t> mine{
      uint64_t(s.ds.train->size()), uint64_t(s.ds.val ? s.ds.val->size() : 0),
      uint64_t(s.ds.train->num_classes()), class_names_hash(s.ds.train->class_names()),
      class_names_hash({counts})};
  const std::vector<uint64_t> all = dist::all_gather(mine, "data sizes");
  for (int r = 1; r < dist::size(); ++r) {
    const uint64_t* o = all.data() + size_t(r) * mine.size();
    if (std::equal(o, o + mine.size(), all.data())) continue;
    const uint64_t* z = all.data();
    throw Error(str("data: rank ", r, " reads other data than rank 0: train split ", o[0],
                    " images (rank 0: ", z[0], "), validation ", o[1], " (", z[1], "), ", o[2],
                    " classes (", z[2], ")",
                    o[3] != z[3] && o[2] == z[2] ? ", the class names differ" : "",
                    o[4] != z[4] && o[3] == z[3] && o[0] == z[0] && o[1] == z[1]
                        ? ", the images per class differ (a file in another class folder?)"
                        : "",
                    "; every rank must read the same images (each host's data_dir a copy of one "
                    "data set): ",
                    dist::rank() == r || dist::rank() == 0
                        ? str("this rank's train split: ", s.ds.train->describe())
                        : std::string("see ranks 0 and ", r)));
  }
}

// From the first step on, a stop signal writes a recovery checkpoint; under mpirun only if every
// rank finishes the step, which the handler's message must not promise (a rank that died, e.g.
// killed by the OOM killer, leaves the others unable to finish it). The handler's line changes in
// the same atomic step as start-up's last check for a signal: one that came before it was told
// "nothing is trained or saved", and the run ends so (empty: training starts).
std::optional<TrainResult> start_training(Session& s) {
  const StopOutcome recovery =
      dist::size() > 1 ? StopOutcome::recovery_if_all_ranks : StopOutcome::recovery;
  if (std::optional<TrainResult> stopped =
          stopped_during_startup(s, !change_stop_outcome(recovery)))
    return stopped;
  s.training = true;
  return std::nullopt;
}

// Everything of a run after its config is checked: the run folder, data, model, the epochs.
TrainResult run_session(Session& s, const std::string& lr_note) {
  // no_resume_opt is this session's alone: the run's records (args.yaml, the config its
  // checkpoints store) keep false, so that a later resume from them restores the optimizer state
  s.no_resume_opt = std::exchange(s.cfg.no_resume_opt, false);
  if (std::optional<TrainResult> stopped = stopped_during_startup(s)) return *stopped;
  // a file that cannot be the start is found before the run folder is made, and before the data
  // is listed (a resume's checkpoint: open_run_folder); the weights themselves are compared with
  // the model once it is built. A resume's weights win over it (build_model).
  if (!s.cfg.initial_checkpoint.empty() && s.cfg.resume.empty())
    check_initial_checkpoint(s.cfg.initial_checkpoint);
  open_run_folder(s);
  if (!lr_note.empty()) spdlog::info("{}", lr_note);
  // WTConv keys on a model without WTConv layers change nothing, though args.yaml records them
  const Config& c = s.cfg;
  if (dist::is_main() && !model_config(c.model).wtconv &&
      (!c.wt_levels.empty() || c.wtconv_mode != "fused"))
    spdlog::warn(
        "{}{}change{} nothing: model {} has no WTConv layers (only wtconvnext_* models "
        "take them)",
        c.wt_levels.empty() ? "" : str("wt_levels ", shape_str(c.wt_levels), " "),
        c.wtconv_mode == "fused" ? "" : str("wtconv_mode ", c.wtconv_mode, " "),
        !c.wt_levels.empty() && c.wtconv_mode != "fused" ? "" : "s", c.model);
  if (dist::is_main() && c.num_classes == 1)
    spdlog::warn(
        "num_classes 1: every prediction is the one class, so the loss is 0 and top-1 "
        "100% whatever the weights: nothing is learned (as in timm)");
  if (std::optional<TrainResult> done = already_finished(s)) {
    // a finished copy resumed into a new folder: nothing was trained there, nothing stays
    if (give_back_folder(s)) done->run_dir.clear();
    return *done;
  }
  open_data(s);  // a large image folder takes a while to list: ask again after it
  check_ranks_same_data(s);
  if (std::optional<TrainResult> stopped = stopped_during_startup(s)) return *stopped;
  reconcile_resumed_settings(s);
  s.config_yaml = to_yaml(s.cfg);
  build_model(s);
  restore_checkpoint(s);
  s.dp = std::make_unique<DataParallel>(s.cfg, *s.model, s.opt);  // mpirun -np N (no-op alone)
  s.st.world_size = dist::size();
  create_ema(s);
  create_thread_tuner(s);
  // the micro-batches between two log points (log_interval updates), at most an epoch's: a
  // grad_accum_steps or log_interval near 2^31 asked for gigabytes
  s.losses = std::make_unique<StepLosses>(
      std::clamp<int64_t>(s.cfg.log_interval * s.accum, 1, std::max<int64_t>(s.steps_per_epoch, 1)),
      s.device);
  if (s.opts.before_training) s.opts.before_training();
  if (std::optional<TrainResult> stopped = start_training(s)) return *stopped;
  carry_best_into_folder(s);
  // from the first step a rank's warnings are its own (an image of its shard that does not decode)
  if (!dist::is_main()) spdlog::set_level(spdlog::level::warn);
  const int64_t stop = s.opts.stop_after_epoch;
  const int64_t last_epoch =
      stop >= 0 ? std::min<int64_t>(run_epochs(s.cfg), stop) : run_epochs(s.cfg);
  for (int64_t epoch = s.st.epoch; epoch < last_epoch; ++epoch) {
    const EpochProgress p = train_epoch(s, epoch);
    if (s.dp->any_rank(stop_signal() != 0)) {  // Ctrl-C, SIGTERM: save where we are, leave cleanly
      save_recovery(s, epoch, p);
      break;
    }
    const std::optional<EpochScores> sc = evaluate_epoch(s, epoch, p, epoch == last_epoch - 1);
    if (!sc) {  // stopped during the evaluation: the recovery checkpoint resumes into it
      save_recovery(s, epoch, p);
      break;
    }
    if (s.opts.before_checkpoints) s.opts.before_checkpoints(epoch);
    save_epoch_checkpoints(s, epoch, *sc);
    remade_folder_stop(s, epoch, epoch == last_epoch - 1);
  }
  return final_report(s);
}

// Rank R > 0 under mpirun: log.txt is rank 0's, and the MPI_Abort that follows this error ends
// rank 0 before it could log it, so the error goes into the run folder as error-rank-R.txt (a
// whole file, written atomically: safe on a shared file system, unlike appending to rank 0's
// log). A failure to write it is said on stderr and never hides the error itself.
void leave_rank_error(const Session& s, const std::string& what) {
  const fs::path file = s.paths.dir / rank_error_file(dist::rank());
  try {
    io::write_file_atomic(file.string(),
                          str("[", local_time(std::time(nullptr), "%Y-%m-%d %H:%M:%S"),
                              "] haargrad: ", dist::rank_error(what), "\n"));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "haargrad: %s (the error of %s is not in the run folder)\n", e.what(),
                 dist::describe().c_str());
  }
}

// A run that failed before training (a missing data folder, a checkpoint that does not fit, too
// little memory) gives back the folder it claimed (give_back_folder); otherwise log.txt gets the
// error (main prints it on stderr too), or, on another rank than 0, error-rank-R.txt.
void record_failure(const Session& s, const std::string& what) {
  if (s.paths.dir.empty()) return;  // no run folder yet (rank 0's error names what failed)
  if (!dist::is_main()) return leave_rank_error(s, what);
  if (!s.training && give_back_folder(s)) {  // said: the log named the folder a moment before
    spdlog::info("run folder {} {}: the run failed before its first step", s.paths.dir.string(),
                 s.created ? "removed" : "left empty, as it was found");
    return;
  }
  if (s.console) s.console->log_file_only(spdlog::level::err, what);
}

// The error of a run that its data stopped during the epochs (corrupt_images: error met an image
// it cannot decode, or skip met too many): `what`, with where the run can go on from and the
// command that does, `then` (what to do first). It said the image alone ("cannot decode image
// '...': ..."), naming neither the checkpoint nor the command that resumes the run.
std::string stopped_by_data(const Session& s, const std::string& what, const std::string& then) {
  std::string out = str(what, "; stopping at epoch ", s.st.epoch + 1, ": ", s.good.unsaved(), "; ",
                        s.good.describe());
  if (s.good.resumable)
    out += str("; ", then, ", then resume with ", resume_command(s, *s.good.resumable));
  else
    out += str("; ", then, ", then start it again with `haargrad train ",
               shell_quote(s.paths.args.string()), "`");
  return out;
}

// Every rank must train the same run: a key that shapes the results (batch_size, seed, lr, ...)
// differing between the ranks' configs (two hosts' files) would otherwise train a wrong run to
// the end. Host keys (data_dir, workers, pin_mem, threads, output, experiment, resume) may
// differ (rank_differences).
void check_ranks_agree(const Config& cfg, const TrainOptions& opts) {
  if (dist::size() == 1) return;
  // the run's collective timeout from its first collective: the start-up's (this config, the
  // run folder, the data's sizes) waited the default 300 s whatever dist_timeout said
  dist::set_timeout(cfg.dist_timeout);
  const std::string mine = to_yaml(cfg);
  const std::string first = dist::broadcast(mine, 0, "config");
  if (first != mine) {
    const std::string changed = rank_differences(config_from_yaml(first, "rank 0's config"), cfg);
    HG_CHECK(
        changed.empty(), "config: rank ", dist::rank(),
        " differs from rank 0 (rank 0 -> this rank): ", changed,
        "; every rank must run the same config (only data_dir, workers, pin_mem, threads, output, "
        "experiment and resume may differ from host to host)");
  }
  // --stop-after-epoch is no config key but ends a rank's run: a rank that left early met the
  // others' next collective with its own ("MPI_ERR_TRUNCATE"), naming nothing
  const std::string stop = std::to_string(opts.stop_after_epoch);
  const std::string first_stop = dist::broadcast(stop, 0, "stop_after_epoch");
  HG_CHECK(first_stop == stop, "--stop-after-epoch: rank ", dist::rank(), " has ",
           opts.stop_after_epoch < 0 ? std::string("none") : stop, ", rank 0 ",
           first_stop == "-1" ? std::string("none") : first_stop,
           "; every rank must stop after the same epoch");
}

}  // namespace

kernels::WTConvMode wtconv_mode_of(const Config& cfg) {
  return cfg.wtconv_mode == "reference" ? kernels::WTConvMode::reference
                                        : kernels::WTConvMode::fused;
}

TrainResult train(Config cfg, const TrainOptions& opts) {
  // from the start (`haargrad train` holds a guard of its own from its first moment): a stop
  // signal never kills a run half set up; run_session asks for one at its start-up's steps
  StopSignalGuard stop_signals;
  validate(cfg);            // the model exists, its keys fit together, img_size reaches through it
  check_utf8_strings(cfg);  // before the epoch whose checkpoint would fail to record the config
  resolve_device(cfg.device);  // an unusable device fails before a run folder is claimed
  // timm: a null lr follows the images per update (args.yaml records the lr it gives)
  const std::string lr_note = resolve_lr(cfg, dist::size());
  check_ranks_agree(cfg, opts);
  Session s(std::move(cfg), opts);
  try {
    try {
      return run_session(s, lr_note);
    } catch (const data::CorruptImage& e) {
      if (!s.training) throw;  // the scan at start-up: no epoch was begun
      throw Error(stopped_by_data(
          s, e.what(),
          "fix or remove that image (or set --corrupt-images skip to leave such an image out)"));
    } catch (const data::TooManyCorruptImages& e) {
      if (!s.training) throw;
      throw Error(stopped_by_data(s, e.what(), "once its images read again"));
    }
  } catch (const std::exception& e) {
    record_failure(s, e.what());
    throw;
  }
}

}  // namespace hg::train
