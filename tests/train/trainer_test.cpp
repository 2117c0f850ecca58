// The main job end to end on the CPU: resume equivalence, args.yaml reload, run-folder contents,
// plain (non-terminal) output without bar characters, non-finite loss handling.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/safetensors.h"
#include "core/threads.h"
#include "models/checkpoint.h"
#include "models/convnext.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/checkpoint_history.h"
#include "train/config.h"
#include "train/finetune.h"
#include "train/plot.h"
#include "train/run_folder.h"
#include "train/schedule.h"
#include "train/stop_signal.h"
#include "train/summary.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace hg;

namespace {

train::Config smoke_config(const std::string& out) {
  train::Config c = train::load_config(std::string(HAARGRAD_SOURCE_DIR) + "/configs/smoke.yaml");
  c.output = out;
  c.device = "cpu";
  c.workers = 2;
  c.epochs = 3;
  c.drop_path = 0.1;  // exercise the drop-path RNG across the resume
  return c;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::vector<std::string> lines(const fs::path& p) {
  std::ifstream f(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(f, l);) out.push_back(l);
  return out;
}

// The deterministic columns of summary.csv (epoch .. lr); throughput and memory are measurements.
std::vector<std::string> deterministic_columns(const std::vector<std::string>& rows) {
  std::vector<std::string> out;
  for (const std::string& r : rows) {
    std::string kept;
    std::stringstream ss(r);
    std::string cell;
    for (int i = 0; i < 6 && std::getline(ss, cell, ','); ++i) kept += cell + ",";
    out.push_back(kept);
  }
  return out;
}

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("hg_trainer_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  /// smoke_config under root_ as experiment `name`, `epochs` long: the run a resume test trains
  /// first (its folder root_ / name).
  train::Config run_config(const std::string& name, int64_t epochs) const {
    train::Config c = smoke_config(root_.string());
    c.experiment = name;
    c.epochs = epochs;
    return c;
  }

  fs::path root_;
};

train::TrainOptions quiet_options() {
  train::TrainOptions quiet;
  quiet.plain_output = true;
  return quiet;
}

/// quiet_options() for a run that stops after `epoch` epochs (checkpointed): a run left to resume.
train::TrainOptions stopped_after(int64_t epoch) {
  train::TrainOptions stop = quiet_options();
  stop.stop_after_epoch = epoch;
  return stop;
}

/// `a` resuming its run in `dir` from the run's last.safetensors.
train::Config resume_of(const train::Config& a, const fs::path& dir) {
  train::Config r = a;
  r.resume = (dir / "last.safetensors").string();
  return r;
}

/// Run a's folder resumed from its last.safetensors to `epochs` epochs (in place when the folder
/// allows it: the callers assert that).
train::TrainResult resume_last(const train::Config& a, const fs::path& dir, int epochs) {
  train::Config r = resume_of(a, dir);
  r.epochs = epochs;
  return train::train(r, quiet_options());
}

/// The last line of `file` that holds `text`; "" when none does.
std::string last_line_with(const fs::path& file, const std::string& text) {
  std::string found;
  for (const std::string& l : lines(file))
    if (l.find(text) != std::string::npos) found = l;
  return found;
}

}  // namespace

// 3 epochs straight == 1 epoch, then a resume: the deterministic summary columns are the same
// text (8 digits). The resume must restore the drop-path generator (smoke_config's drop path
// 0.1), which only shows where a dropped block branch changes the loss: at timm's layer scale 1e-6
// the masks moved the losses in their 7th or 8th digit, so the layer scale starts at 1 here, and
// the run without drop path must differ by more than 1e-4 relative (a loss of some epoch; measured
// 1.3e-3), a thousand times what the summary's digits resolve.
TEST_F(TrainerTest, StoppedAndResumedRunMatchesUninterruptedRun) {
  const auto config = [&](const char* name) {
    train::Config c = smoke_config((root_ / name).string());
    c.ls_init_value = 1.0;
    return c;
  };
  train::Config a = config("a");
  const train::TrainOptions quiet = quiet_options();
  train::TrainResult ra = train::train(a, quiet);

  train::Config b = config("b");
  train::TrainResult rb1 = train::train(b, stopped_after(1));
  ASSERT_EQ(lines(fs::path(rb1.run_dir) / "summary.csv").size(), 2u);  // header + epoch 1
  b.resume = (fs::path(rb1.run_dir) / "last.safetensors").string();
  train::TrainResult rb2 = train::train(b, quiet);
  EXPECT_EQ(rb2.run_dir, rb1.run_dir);

  auto sa = lines(fs::path(ra.run_dir) / "summary.csv"), sb = lines(fs::path(rb2.run_dir) / "summary.csv");
  ASSERT_EQ(sa.size(), 4u);
  ASSERT_EQ(sb.size(), 4u);
  EXPECT_EQ(sa[0], sb[0]);
  EXPECT_EQ(deterministic_columns(sa), deterministic_columns(sb));
  EXPECT_EQ(ra.best_top1, rb2.best_top1);

  // the precondition: the drop-path masks move the losses far past the summary's digits
  train::Config no_drop = config("no_drop");
  no_drop.drop_path = 0.0;
  const train::TrainResult rn = train::train(no_drop, quiet);
  const auto la = train::read_csv_columns((fs::path(ra.run_dir) / "summary.csv").string()),
             ln = train::read_csv_columns((fs::path(rn.run_dir) / "summary.csv").string());
  double moved = 0;
  for (const char* col : {"train_loss", "eval_loss"}) {
    ASSERT_EQ(la.at(col).size(), ln.at(col).size()) << col;
    for (size_t i = 0; i < la.at(col).size(); ++i)
      moved = std::max(moved, std::abs(la.at(col)[i] - ln.at(col)[i]) / std::abs(la.at(col)[i]));
  }
  EXPECT_GT(moved, 1e-4) << "drop path barely changes the run: a resume that redrew its masks "
                            "would pass unseen";
}

// With grad_accum_steps a stop signal inside an update (after its first micro-batch) wrote the
// recovery checkpoint there, without the gradients of that micro-batch: the resumed session made
// the update from its last micro-batch alone (divided by 2 as if both were there), and the run
// went on from other weights than an unstopped one. The stop now comes at the update's end.
TEST_F(TrainerTest, AStopInsideAnAccumulatedUpdateResumesAsTheUnstoppedRun) {
  const auto config = [&](const char* name) {
    train::Config c = smoke_config((root_ / name).string());
    c.ls_init_value = 1.0;  // the weights' change shows in the losses' digits
    c.epochs = 2;
    c.grad_accum_steps = 2;  // 3 micro-batches an epoch: updates after steps 2 and 3
    return c;
  };
  const train::TrainResult ra = train::train(config("a"), quiet_options());
  train::Config b = config("b");
  train::TrainOptions stop = quiet_options();
  stop.after_step = [](int64_t epoch, int64_t step, ConvNeXt&) { return epoch == 0 && step == 1; };
  const train::TrainResult rb1 = train::train(b, stop);
  ASSERT_TRUE(rb1.interrupted);
  const fs::path dir = rb1.run_dir;
  EXPECT_EQ(train::read_train_state((dir / "recovery.safetensors").string())->step_in_epoch, 2);
  b.resume = (dir / "recovery.safetensors").string();
  const train::TrainResult rb2 = train::train(b, quiet_options());
  EXPECT_EQ(rb2.run_dir, rb1.run_dir);
  const auto sa = lines(fs::path(ra.run_dir) / "summary.csv"), sb = lines(dir / "summary.csv");
  ASSERT_EQ(sa.size(), 3u);
  ASSERT_EQ(sb.size(), 3u);
  EXPECT_EQ(deterministic_columns(sa), deterministic_columns(sb));
}

TEST_F(TrainerTest, RunFolderHoldsArgsSummaryLogAndCheckpoints) {
  train::Config c = smoke_config(root_.string());
  c.checkpoint_hist = 2;
  const train::TrainOptions quiet = quiet_options();
  train::TrainResult r = train::train(c, quiet);
  fs::path dir = r.run_dir;
  for (const char* f : {"args.yaml", "summary.csv", "log.txt", "last.safetensors", "model_best.safetensors"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  int kept = 0;
  for (const auto& e : fs::directory_iterator(dir)) kept += e.path().filename().string().rfind("checkpoint-", 0) == 0;
  EXPECT_EQ(kept, 2);  // checkpoint_hist
  // args.yaml loads back to the same config
  EXPECT_TRUE(train::load_config((dir / "args.yaml").string()) == c);
  // the checkpoint holds timm names, optimizer state and the config
  safetensors::File f = safetensors::load((dir / "last.safetensors").string());
  EXPECT_TRUE(f.tensors.count("stem.0.weight"));
  EXPECT_TRUE(f.tensors.count("stages.0.blocks.0.conv_dw.base_conv.weight"));
  bool has_opt = false;
  for (auto& [k, t] : f.tensors) has_opt = has_opt || k.rfind("optimizer.", 0) == 0;
  EXPECT_TRUE(has_opt);
  EXPECT_NE(f.metadata.at("config").find("smoke"), std::string::npos);
  EXPECT_GT(r.best_top1, 0);
}

// Resuming a finished run trains nothing and keeps its results; a longer schedule trains on and
// args.yaml records it (with the schedule the first part ran with).
TEST_F(TrainerTest, ResumeKeepsArgsYamlAndAFinishedRunStaysFinished) {
  const train::Config c = run_config("smoke", 1);
  const train::TrainOptions quiet = quiet_options();
  const train::TrainResult first = train::train(c, quiet);
  const fs::path dir = first.run_dir;
  const std::vector<std::string> args = lines(dir / "args.yaml");
  const std::vector<std::string> summary = lines(dir / "summary.csv");

  train::Config again = resume_of(c, dir);
  const train::TrainResult done = train::train(again, quiet);  // 1 of 1 epochs done already
  EXPECT_EQ(done.best_top1, first.best_top1);
  EXPECT_EQ(done.best_epoch, 1);
  EXPECT_NEAR(done.last_top1, first.last_top1,
              1e-3);  // the last evaluation, from summary.csv (6 digits)
  EXPECT_NEAR(done.last_top5, first.last_top5, 1e-3);
  // The run's own rate and peak from summary.csv; the loader figures are not recorded there.
  EXPECT_GT(done.train_img_per_sec, 0.0);
  EXPECT_GT(done.peak_mib, 0.0);
  EXPECT_LT(done.data_img_per_sec, 0.0);
  EXPECT_LT(done.data_wait_fraction, 0.0);
  EXPECT_EQ(lines(dir / "summary.csv"), summary) << "nothing was trained or rewritten";

  EXPECT_EQ(lines(dir / "args.yaml"), args) << "a resume that trains nothing changes nothing";

  // a finished run resumed with --stop-after-epoch at its end (a script run again) is finished,
  // not an error
  EXPECT_EQ(train::train(again, stopped_after(1)).best_epoch, 1);
  // --stop-after-epoch counts the run's epochs: 1 on a run with 1 done trains nothing; it said
  // "no training step in this session (it finished an evaluation)" and exited 0
  again.epochs = 2;
  const std::string msg = hg::test::error_of([&] { train::train(again, stopped_after(1)); });
  EXPECT_NE(msg.find("has done 1 epoch, so --stop-after-epoch 1 leaves nothing to train"),
            std::string::npos)
      << msg;
  EXPECT_EQ(lines(dir / "summary.csv"), summary);

  // a longer schedule: trains epoch 2 in the same folder
  const train::TrainResult longer = train::train(again, quiet);
  EXPECT_EQ(lines(dir / "summary.csv").size(), summary.size() + 1);
  EXPECT_GT(longer.train_img_per_sec, 0.0);
  // args.yaml reruns what was run: the new epochs, and the schedule of epoch 1 in schedule_history
  const train::Config rerun = train::load_config((dir / "args.yaml").string());
  EXPECT_EQ(rerun.epochs, 2);
  ASSERT_EQ(rerun.schedule_history.size(), 1u);
  EXPECT_EQ(rerun.schedule_history[0],
            (train::ScheduleSegment{1, 0, 1, c.lr.value(), c.sched, c.warmup_epochs, c.warmup_lr,
                                    c.min_lr, c.sched_on_updates}));
  EXPECT_EQ(rerun.resume, "");
}

TEST_F(TrainerTest, NonFiniteLossStopsWithStepAndKeepsNoBrokenCheckpoint) {
  train::Config c = smoke_config(root_.string());
  c.lr = 1e30;  // diverges within the first steps of epoch 2 (warmup starts at warmup_lr)
  c.warmup_epochs = 0;
  c.clip_grad.reset();
  const train::TrainOptions quiet = quiet_options();
  try {
    train::train(c, quiet);
    FAIL() << "expected a non-finite loss error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("non-finite loss"), std::string::npos) << m;
    EXPECT_NE(m.find("step"), std::string::npos) << m;
  }
  // the run had trained: its folder stays, and its log.txt ends with the error
  const std::vector<std::string> log = lines(root_ / "smoke" / "log.txt");
  ASSERT_FALSE(log.empty());
  EXPECT_NE(log.back().find("error: non-finite loss"), std::string::npos) << log.back();
}

// A training set smaller than one batch (20 PNGs of export-png --limit-per-class 2 with the
// config's batch 128) said only "gives no full batch of 128": the message names the batch size
// that trains on it.
TEST_F(TrainerTest, ATrainingSetBelowOneBatchNamesTheBatchSizeThatFits) {
  train::Config c = smoke_config(root_.string());
  c.synthetic_size = 20;
  c.batch_size = 128;
  try {
    train::train(c, quiet_options());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("the training set (20 images) gives no full batch of 128"), std::string::npos)
        << m;
    EXPECT_NE(m.find("set --batch-size 20 or less"), std::string::npos) << m;
  }
}

// The CPU thread count changes no result (the kernels split work the same way whatever the
// count): a resume may change it.
TEST_F(TrainerTest, AResumeMayChangeThreads) {
  train::Config c = run_config("smoke", 1);
  c.threads = 0;
  const train::TrainOptions quiet = quiet_options();
  const fs::path run(train::train(c, quiet).run_dir);
  c.epochs = 2;
  c.threads = 1;
  c.resume = (run / "last.safetensors").string();
  EXPECT_NO_THROW(train::train(c, quiet));
  EXPECT_EQ(lines(run / "summary.csv").size(), 3u);
}

// A resume that changes the schedule and diverges before its first checkpoint leaves args.yaml as
// it was: no checkpoint was trained with the new values.
TEST_F(TrainerTest, ADivergedResumeKeepsArgsYaml) {
  train::Config c = run_config("smoke", 1);
  const train::TrainOptions quiet = quiet_options();
  const fs::path run(train::train(c, quiet).run_dir);
  const std::vector<std::string> args = lines(run / "args.yaml");
  c.epochs = 2;
  c.lr = 1e30;
  c.warmup_epochs = 0;
  c.clip_grad.reset();
  c.resume = (run / "last.safetensors").string();
  EXPECT_THROW(train::train(c, quiet), Error);
  EXPECT_EQ(lines(run / "args.yaml"), args);
}

// log_interval counted micro-batches, so grad_accum_steps 3 logged three times an update; timm's
// train.py logs at the updates whose index in the epoch is a multiple of log_interval (the first
// included) and at the epoch's last batch. The smoke run has 3 micro-batches an epoch.
TEST_F(TrainerTest, LogIntervalCountsUpdatesAsTimm) {
  auto steps_logged = [&](int64_t accum, int64_t interval) {
    train::Config c = smoke_config(root_.string());
    c.epochs = 1;
    c.grad_accum_steps = accum;
    c.log_interval = interval;
    c.experiment = str("log", accum, "_", interval);
    ::testing::internal::CaptureStdout();
    train::train(c, quiet_options());
    const std::string out = ::testing::internal::GetCapturedStdout();
    std::string steps;
    for (const char* st : {"step 1/3 ", "step 2/3 ", "step 3/3 "})
      steps += out.find(st) != std::string::npos ? st[5] : '-';
    return steps;
  };
  EXPECT_EQ(steps_logged(1, 1), "123");
  EXPECT_EQ(steps_logged(1, 2), "1-3");  // updates 0 and 2
  EXPECT_EQ(steps_logged(3, 1), "--3");  // one update, at the last micro-batch
  EXPECT_EQ(steps_logged(2, 1), "-23");  // update 0 ends at 2; 3 is the epoch's last
}

// A run that fails before its first step (here: no data folder) gives back the folder it claimed:
// one it made goes; one it found empty (made by the user) stays empty, and the next run of that
// name takes it.
TEST_F(TrainerTest, AFailedStartGivesItsFolderBack) {
  train::Config c = smoke_config(root_.string());
  c.epochs = 1;
  train::Config bad = c;
  bad.dataset = "image_folder";
  bad.data_dir = (root_ / "no_such_data").string();
  const train::TrainOptions quiet = quiet_options();
  // the log named the folder a moment before, so what became of it is said
  auto said = [&] {
    ::testing::internal::CaptureStdout();
    EXPECT_THROW(train::train(bad, quiet), Error);
    return ::testing::internal::GetCapturedStdout();
  };
  const std::string made = said();
  EXPECT_NE(made.find("run folder " + (root_ / "smoke").string() +
                      " removed: the run failed before its first step"),
            std::string::npos)
      << made;
  EXPECT_FALSE(fs::exists(root_ / "smoke"));
  fs::create_directories(root_ / "smoke");  // the user's empty folder
  const std::string found = said();
  EXPECT_NE(found.find("left empty, as it was found"), std::string::npos) << found;
  ASSERT_TRUE(fs::is_directory(root_ / "smoke"));
  EXPECT_TRUE(fs::is_empty(root_ / "smoke"));
  EXPECT_EQ(fs::path(train::train(c, quiet).run_dir), root_ / "smoke");
}

// A stop signal that came before train() (`haargrad train` holds a guard from its start, so a
// signal while it reads its config is kept for train()): the guard inside train() keeps it, and
// the run ends before its first step with nothing trained or written, a resumed run's folder
// untouched.
TEST_F(TrainerTest, AStopBeforeTrainingTrainsAndWritesNothing) {
  train::Config c = run_config("smoke", 1);
  const train::TrainOptions quiet = quiet_options();
  const train::TrainResult done = train::train(c, quiet);
  const std::string summary = slurp(fs::path(done.run_dir) / "summary.csv");
  c.epochs = 2;
  c.resume = (fs::path(done.run_dir) / "last.safetensors").string();
  for (const bool resume : {false, true}) {
    train::StopSignalGuard outer;
    std::raise(SIGTERM);  // the handler only sets the flag
    ASSERT_EQ(train::stop_signal(), SIGTERM);
    train::Config run = c;
    if (!resume) run.resume.clear(), run.experiment = "fresh";
    const train::TrainResult r = train::train(run, quiet);
    EXPECT_TRUE(r.stopped_before_training) << resume;
    EXPECT_FALSE(r.interrupted) << resume;
    EXPECT_EQ(r.stop_signal, SIGTERM) << resume;
    EXPECT_EQ(train::stop_signal(), SIGTERM) << "the inner guard forgot the signal";
    EXPECT_EQ(r.run_dir, "") << "stopped before a run folder was opened: " << resume;
  }
  EXPECT_FALSE(fs::exists(root_ / "fresh"));                          // no folder was claimed
  EXPECT_EQ(slurp(fs::path(done.run_dir) / "summary.csv"), summary);  // nothing trained on
  EXPECT_FALSE(fs::exists(fs::path(done.run_dir) / "recovery.safetensors"));
}

// The handler's line and the run's course agree: the outcome changes only while no stop signal has
// come, and a signal keeps (and says) the outcome it came under.
TEST(StopSignal, TheOutcomeChangesOnlyWhileNoSignalHasCome) {
  train::StopSignalGuard guard;
  EXPECT_TRUE(train::change_stop_outcome(train::StopOutcome::recovery));
  ::testing::internal::CaptureStderr();
  std::raise(SIGUSR1);  // the handler only sets the flag
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(said, train::stop_message(train::StopOutcome::recovery));
  EXPECT_FALSE(train::change_stop_outcome(train::StopOutcome::finish));
  EXPECT_EQ(train::stop_signal(), SIGUSR1);
}

// The first stop signal stopped the run: one of another kind after it (SIGTERM from a scheduler
// after Ctrl-C) neither replaces it (the run reports the first) nor says a second line, and the
// first one's kind again at once is the same request delivered twice (`timeout` signals the child
// and its process group): the process lives on, its handler still in place.
TEST(StopSignal, ALaterSignalOfAnotherKindKeepsTheFirst) {
  train::StopSignalGuard guard;
  EXPECT_TRUE(train::change_stop_outcome(train::StopOutcome::recovery));
  ::testing::internal::CaptureStderr();
  std::raise(SIGINT);
  std::raise(SIGTERM);
  std::raise(SIGINT);  // within the repeat window: not a second request
  train::request_stop(SIGUSR1);
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(train::stop_signal(), SIGINT);
  EXPECT_EQ(said, train::stop_message(train::StopOutcome::recovery));
  struct sigaction now {};
  ASSERT_EQ(sigaction(SIGINT, nullptr, &now), 0);
  EXPECT_NE(now.sa_handler, SIG_DFL) << "a repeat within the window must not kill";
}

// A stop signal ignored when the run starts (`nohup` ignores SIGHUP; a script's `cmd &` SIGINT)
// stays ignored: the run under nohup stopped when its session ended. The others still stop it.
TEST(StopSignal, ASignalIgnoredAtTheStartStaysIgnored) {
  const auto before = std::signal(SIGHUP, SIG_IGN);
  {
    train::StopSignalGuard guard;
    std::raise(SIGHUP);
    EXPECT_EQ(train::stop_signal(), 0);
    struct sigaction now {};
    ASSERT_EQ(sigaction(SIGHUP, nullptr, &now), 0);
    EXPECT_EQ(now.sa_handler, SIG_IGN);
    std::raise(SIGUSR1);
    EXPECT_EQ(train::stop_signal(), SIGUSR1);
  }
  struct sigaction after {};
  ASSERT_EQ(sigaction(SIGHUP, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, SIG_IGN);  // restored as it was
  std::signal(SIGHUP, before);
}

// The same kind a second or more after the first: the user insists, and it kills at once.
TEST(StopSignalDeathTest, TheSameSignalLaterKillsAtOnce) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_EXIT(
      {
        train::StopSignalGuard guard;
        std::raise(SIGINT);
        usleep(1'100'000);
        std::raise(SIGINT);
        std::exit(0);  // not reached
      },
      ::testing::KilledBySignal(SIGINT), "");
  // a kind that came after the first one, again later: a scheduler's repeated SIGTERM after Ctrl-C
  EXPECT_EXIT(
      {
        train::StopSignalGuard guard;
        std::raise(SIGINT);
        std::raise(SIGTERM);
        usleep(1'100'000);
        std::raise(SIGTERM);
        std::exit(0);  // not reached
      },
      ::testing::KilledBySignal(SIGTERM), "");
}

// Under mpirun every rank gets the signal mpirun forwards: a rank told to keep quiet (every one
// but rank 0) stops all the same, saying nothing.
TEST(StopSignal, AQuietRankStopsWithoutALine) {
  train::StopSignalGuard guard;
  train::set_stop_messages(false);
  ::testing::internal::CaptureStderr();
  std::raise(SIGUSR1);
  const std::string said = ::testing::internal::GetCapturedStderr();
  train::set_stop_messages(true);
  EXPECT_EQ(said, "");
  EXPECT_EQ(train::stop_signal(), SIGUSR1);
}

// A stop signal after start-up's last check for one, just before the first step: the handler has
// said "nothing is trained or saved", and so it is: the run ends before its first step and gives
// its new folder back (not one step trained and a recovery checkpoint written).
TEST_F(TrainerTest, AStopJustBeforeTheFirstStepTrainsAndWritesNothing) {
  train::Config c = smoke_config(root_.string());
  c.epochs = 1;
  train::TrainOptions opts;
  opts.plain_output = true;
  opts.before_training = [] { std::raise(SIGTERM); };  // train()'s guard: the handler sets the flag
  ::testing::internal::CaptureStderr();
  const train::TrainResult r = train::train(c, opts);
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("stopping before the first step (nothing is trained or saved"),
            std::string::npos)
      << said;
  EXPECT_TRUE(r.stopped_before_training) << said;
  EXPECT_FALSE(r.interrupted) << said;
  EXPECT_EQ(r.stop_signal, SIGTERM);
  EXPECT_FALSE(fs::exists(root_ / "smoke")) << "the new folder is given back\n" << said;
}

// A stop signal while the last epoch's checkpoints are written (after the run's last check for
// one): the run ends normally, its last checkpoint written and no recovery checkpoint (exit status
// 0), and the handler's line says so instead of promising a recovery checkpoint.
TEST_F(TrainerTest, AStopWhileTheLastCheckpointIsWrittenSaysTheRunEndsNormally) {
  train::Config c = smoke_config(root_.string());
  c.epochs = 2;
  train::TrainOptions opts;
  opts.plain_output = true;
  opts.before_checkpoints = [&c](int64_t epoch) {
    if (epoch == c.epochs - 1) std::raise(SIGTERM);
  };
  ::testing::internal::CaptureStderr();
  const train::TrainResult r = train::train(c, opts);
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(r.interrupted) << said;
  EXPECT_FALSE(r.stopped_before_training) << said;
  EXPECT_EQ(r.stop_signal, 0) << said;
  EXPECT_EQ(r.best_epoch >= 1, true) << said;
  EXPECT_EQ(lines(fs::path(r.run_dir) / "summary.csv").size(), 3u);  // header + epochs 1, 2
  EXPECT_TRUE(fs::exists(fs::path(r.run_dir) / "last.safetensors"));
  EXPECT_FALSE(fs::exists(fs::path(r.run_dir) / "recovery.safetensors"));
  EXPECT_EQ(said.find("recovery checkpoint"), std::string::npos) << said;
  EXPECT_NE(said.find("ends normally"), std::string::npos) << said;
}

// Weights alone (an export, a timm state_dict) hold no run to resume: resuming one in a run's
// folder would start the run over and replace its summary and checkpoints. It is refused, pointing
// at initial_checkpoint, and the run's files stay as they were.
TEST_F(TrainerTest, ResumeFromWeightsOnlyIsRefused) {
  train::Config c = run_config("smoke", 1);
  const train::TrainOptions quiet = quiet_options();
  const train::TrainResult r = train::train(c, quiet);
  const fs::path run(r.run_dir), weights = run / "weights.safetensors";
  {
    ConvNeXt m(train::model_config_from(c), 1);
    safetensors::save(weights.string(), state_dict(m), {{"format", "pt"}});
  }
  const std::vector<std::string> summary = lines(run / "summary.csv");
  c.epochs = 2;
  c.resume = weights.string();
  try {
    train::train(c, quiet);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("weights only"), std::string::npos) << m;
    EXPECT_NE(m.find("initial_checkpoint"), std::string::npos) << m;
  }
  EXPECT_EQ(lines(run / "summary.csv"), summary);
  EXPECT_TRUE(fs::exists(run / "last.safetensors"));
}

TEST(TrainerCli, NonTerminalOutputHasNoBarCharacters) {
  const std::string out = (fs::temp_directory_path() / ("hg_cli_" + std::to_string(::getpid()))).string();
  const std::string cmd = std::string(HAARGRAD_BINARY_DIR) + "/haargrad train " + HAARGRAD_SOURCE_DIR +
                          "/configs/smoke.yaml --device cpu --output " + out + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string text;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) text.append(buf, n);
  const int rc = pclose(p);
  fs::remove_all(out);
  EXPECT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("epoch 1/2 step"), std::string::npos) << text;  // plain log lines instead
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find("\033["), std::string::npos);
  EXPECT_EQ(text.find("[###"), std::string::npos);
  EXPECT_EQ(text.find("#....."), std::string::npos);
}

TEST(TrainerCli, BadConfigKeyErrorNamesKeyAndLine) {
  const fs::path cfg = fs::temp_directory_path() / ("hg_badcfg_" + std::to_string(::getpid()) + ".yaml");
  { std::ofstream(cfg) << "model: wtconvnext_fmnist\nlearning_rate: 0.1\n"; }
  const std::string cmd = std::string(HAARGRAD_BINARY_DIR) + "/haargrad train " + cfg.string() + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string text;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) text.append(buf, n);
  const int rc = pclose(p);
  fs::remove(cfg);
  EXPECT_NE(rc, 0);
  EXPECT_NE(text.find("learning_rate"), std::string::npos) << text;
  EXPECT_NE(text.find("line 2"), std::string::npos) << text;
}

// Runs a long synthetic training, sends `sig` once it has taken some steps, and checks that it
// wrote a mid-epoch recovery checkpoint and exited with 128 + sig (as a shell reports a process the
// signal killed, so a script can tell the run stopped early).
// With `during_eval`, the run has 3 training steps and a long evaluation (80,000 images one at a
// time), and the signal comes once the steps are done: the evaluation stops, and the recovery
// checkpoint stands after the epoch's last step.
static void expect_signal_stops_with_recovery(int sig, const std::string& name,
                                              bool during_eval = false, bool twice = false) {
  const fs::path out =
      fs::temp_directory_path() / ("hg_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(out);
  // A long synthetic run (tens of seconds), interrupted after it has taken some steps.
  const std::string cmd =
      std::string("exec ") + HAARGRAD_BINARY_DIR + "/haargrad train " + HAARGRAD_SOURCE_DIR +
      "/configs/smoke.yaml --device cpu --synthetic-size 400000 --plain " +
      (during_eval ? "--max-steps-per-epoch 3 --validation-batch-size 1 "
                   : "--max-steps-per-epoch 0 ") +
      "--epochs 1 --log-interval 1 --output " + out.string() + " > " + out.string() + ".log 2>&1";
  fs::create_directories(out);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // wait until it logged a few steps, then the signal
  bool stepping = false;
  for (int i = 0; i < 300 && !stepping; ++i) {
    usleep(100 * 1000);
    std::ifstream log(out.string() + ".log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    stepping = text.find(during_eval ? "step 3/3" : "step 5/") != std::string::npos;
  }
  ASSERT_TRUE(stepping) << "the run did not start stepping";
  kill(pid, sig);
  if (twice) kill(pid, sig);  // as `timeout` does: to the child, then to its process group
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream log(out.string() + ".log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + sig) << text;
  EXPECT_NE(text.find("interrupted (" + name + ") at epoch 1"), std::string::npos) << text;
  const fs::path recovery = out / "smoke" / "recovery.safetensors";
  ASSERT_TRUE(fs::exists(recovery)) << text;
  safetensors::File f = safetensors::load(recovery.string());
  EXPECT_NE(f.metadata.at("state").find("\"step_in_epoch\""), std::string::npos);
  EXPECT_EQ(f.metadata.at("state").find("\"step_in_epoch\":0"), std::string::npos);  // mid-epoch position
  if (during_eval) {  // after the epoch's 3 steps; the epoch is not recorded
    EXPECT_NE(f.metadata.at("state").find("\"step_in_epoch\":3"), std::string::npos)
        << f.metadata.at("state");
    EXPECT_EQ(text.find("epoch 1/1: train loss"), std::string::npos) << text;
    // the epoch's training figures travel with it, for the row the resume writes
    const train::TrainState st = *train::read_train_state(recovery.string());
    EXPECT_GT(st.epoch_seconds, 0) << f.metadata.at("state");
    EXPECT_GT(st.epoch_images_timed, 0) << f.metadata.at("state");
    EXPECT_GT(st.epoch_peak_mib, 0) << f.metadata.at("state");
  }
  fs::remove_all(out);
  fs::remove(out.string() + ".log");
}

TEST(TrainerCli, CtrlCWritesRecoveryCheckpointAndExits130) {
  expect_signal_stops_with_recovery(SIGINT, "SIGINT");
}

// kill, timeout, docker stop, systemd and Slurm send SIGTERM: the same recovery as Ctrl-C.
TEST(TrainerCli, SigtermWritesRecoveryCheckpointAndExits143) {
  expect_signal_stops_with_recovery(SIGTERM, "SIGTERM");
}

// coreutils' `timeout` sends its SIGTERM twice, microseconds apart (to the child, then to its
// process group): one request, the same recovery.
TEST(TrainerCli, ATwiceDeliveredSigtermStillWritesRecovery) {
  expect_signal_stops_with_recovery(SIGTERM, "SIGTERM", /*during_eval=*/false, /*twice=*/true);
}

// A container's or a scheduler's grace period after SIGTERM is seconds: a long evaluation stops
// too, and its epoch is evaluated again on resume. SIGUSR1 (what mpirun forwards) does the same.
TEST(TrainerCli, ASignalStopsTheEvaluationToo) {
  expect_signal_stops_with_recovery(SIGUSR1, "SIGUSR1", /*during_eval=*/true);
}

// How a `haargrad train` stopped during its start-up ended: its exit status and output.
struct StartupStop {
  int status = 0;  // waitpid's
  std::string output;
};

// Starts `haargrad <args>` (its output into `log`), waits until it has opened `fifo` for reading
// (a file of its start-up: the config, the data), sends `sig` while it reads, then gives it
// `bytes` through the FIFO and waits for its end. The signal thus comes at a known point of the
// start-up, with no race against the clock.
static StartupStop stop_while_reading(const fs::path& fifo, const std::string& args,
                                      const fs::path& log, int sig, const std::string& bytes) {
  StartupStop r;
  if (mkfifo(fifo.c_str(), 0600) != 0) {
    ADD_FAILURE() << "mkfifo " << fifo << ": " << std::strerror(errno);
    return r;
  }
  const std::string cmd = std::string("exec ") + HAARGRAD_BINARY_DIR + "/haargrad " + args + " > " +
                          log.string() + " 2>&1";
  const pid_t pid = fork();
  if (pid < 0) return r;
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // a non-blocking open for writing succeeds once the program has the FIFO open for reading
  int fd = -1;
  for (int i = 0; i < 3000 && fd < 0; ++i) {
    fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd < 0) usleep(10 * 1000);
  }
  EXPECT_GE(fd, 0) << "the program never opened " << fifo;
  kill(pid, sig);
  if (fd >= 0) {
    // the program may be gone (killed by the signal): a write then fails instead of killing us
    void (*old_pipe)(int) = std::signal(SIGPIPE, SIG_IGN);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    [[maybe_unused]] const ssize_t n = write(fd, bytes.data(), bytes.size());
    close(fd);
    std::signal(SIGPIPE, old_pipe);
  }
  waitpid(pid, &r.status, 0);
  r.output = slurp(log);
  return r;
}

// A stop signal while the program reads its config (before anything of the run exists): a clean
// exit with 128 + the signal (not a death by it), no run folder, and a console that says so.
TEST(TrainerCli, AStopSignalWhileReadingTheConfigEndsCleanlyWithNoFolder) {
  const fs::path dir = fs::temp_directory_path() / ("hg_early_stop_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const StartupStop r = stop_while_reading(
      dir / "config.yaml",
      "train " + (dir / "config.yaml").string() + " --device cpu --plain --output " +
          (dir / "out").string(),
      dir / "log", SIGTERM, slurp(std::string(HAARGRAD_SOURCE_DIR) + "/configs/smoke.yaml"));
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 128 + SIGTERM)
      << "status " << r.status << " (signalled: " << WIFSIGNALED(r.status) << ")\n"
      << r.output;
  EXPECT_NE(r.output.find("stopping before the first step"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("stopped by SIGTERM before the first step: nothing was trained or saved"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "smoke")) << r.output;
  fs::remove_all(dir);
}

// IDX files (MNIST format, uncompressed) of `n` 8x8 gray images with labels 0..3.
static std::string idx_images(int n) {
  std::string b = {0, 0, 8, 3, 0, 0, 0, static_cast<char>(n), 0, 0, 0, 8, 0, 0, 0, 8};
  for (int i = 0; i < n * 64; ++i) b.push_back(static_cast<char>((i * 37) % 251));
  return b;
}
static std::string idx_labels(int n) {
  std::string b = {0, 0, 8, 1, 0, 0, 0, static_cast<char>(n)};
  for (int i = 0; i < n; ++i) b.push_back(static_cast<char>(i % 4));
  return b;
}

// A stop signal after the run folder is claimed, while the data is read (before the first step):
// the same clean exit, and the new folder is given back, not left half made (run.json, args.yaml
// and log.txt of a run that never trained would take the experiment's name).
TEST(TrainerCli, AStopSignalWhileReadingTheDataGivesTheNewFolderBack) {
  const fs::path dir = fs::temp_directory_path() / ("hg_data_stop_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "data");
  { std::ofstream(dir / "data/train-labels-idx1-ubyte", std::ios::binary) << idx_labels(16); }
  { std::ofstream(dir / "data/t10k-images-idx3-ubyte", std::ios::binary) << idx_images(8); }
  { std::ofstream(dir / "data/t10k-labels-idx1-ubyte", std::ios::binary) << idx_labels(8); }
  const std::string args =
      std::string("train ") + HAARGRAD_SOURCE_DIR +
      "/configs/smoke.yaml --device cpu --plain --dataset idx --val-split test --data-dir " +
      (dir / "data").string() + " --output " + (dir / "out").string();
  const StartupStop r = stop_while_reading(dir / "data/train-images-idx3-ubyte", args, dir / "log",
                                           SIGINT, idx_images(16));
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 128 + SIGINT)
      << "status " << r.status << " (signalled: " << WIFSIGNALED(r.status) << ")\n"
      << r.output;
  EXPECT_NE(r.output.find("run folder " + (dir / "out" / "smoke").string()), std::string::npos)
      << "the signal came before the folder was claimed\n"
      << r.output;
  EXPECT_NE(r.output.find("stopped by SIGINT before the first step"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("is given back"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "smoke")) << r.output;
  EXPECT_EQ(r.output.find("best_top1"), std::string::npos) << "a report of a run that never ran\n"
                                                           << r.output;
  fs::remove_all(dir);
}

TEST_F(TrainerTest, ResumeAutoContinuesTheNamedExperiment) {
  const train::TrainOptions quiet = quiet_options();
  train::Config a = run_config("first", 1);
  train::TrainResult ra = train::train(a, quiet);
  train::Config b = a;
  b.experiment = "second";  // the newer run under the same output root
  train::train(b, quiet);
  a.epochs = 2;
  a.resume = "auto";
  train::TrainResult r = train::train(a, quiet);
  EXPECT_EQ(r.run_dir, ra.run_dir);
  EXPECT_EQ(lines(fs::path(ra.run_dir) / "summary.csv").size(), 3u);  // header + epochs 1, 2
}

// --resume auto is the same command launched again after a preemption, but its first launch,
// with no run yet, failed ("resume auto: no run of experiment ... has a last.safetensors"). It
// starts a new run, says so, and records no resume in its args.yaml; the next launch goes on.
TEST_F(TrainerTest, ResumeAutoWithNoEarlierRunStartsANewOne) {
  train::Config a = run_config("auto_first", 2);
  a.resume = "auto";
  const train::TrainResult first = train::train(a, stopped_after(1));
  const fs::path dir(first.run_dir);
  EXPECT_EQ(dir, root_ / "auto_first");
  EXPECT_NE(slurp(dir / "log.txt")
                .find("resume auto: no run of experiment 'auto_first' (" +
                      (root_ / "auto_first").string() +
                      " and its -N siblings) has a last.safetensors or recovery.safetensors to "
                      "go on from: a new run starts"),
            std::string::npos)
      << slurp(dir / "log.txt");
  EXPECT_EQ(slurp(dir / "args.yaml").find("resume: auto"), std::string::npos)
      << slurp(dir / "args.yaml");
  const train::TrainResult again = train::train(a, quiet_options());
  EXPECT_EQ(again.run_dir, first.run_dir);
  EXPECT_EQ(lines(dir / "summary.csv").size(), 3u);  // header + epochs 1, 2
}

// A last.safetensors cut short (a full disk, a copy that stopped) ended --resume auto and
// --resume FILE with "cut short" and nothing else, though the run's checkpoint-N beside it could
// be read. Both name it, with what it was written after and the option to give.
TEST_F(TrainerTest, ACheckpointCutShortNamesTheOneBesideItThatReads) {
  train::Config a = run_config("cut", 3);
  a.checkpoint_hist = 2;
  const train::TrainResult first = train::train(a, stopped_after(2));
  const fs::path dir(first.run_dir), last = dir / "last.safetensors";
  ASSERT_TRUE(fs::exists(dir / "checkpoint-2.safetensors"));
  fs::resize_file(last, fs::file_size(last) / 2);
  const std::string hint =
      "checkpoint-2.safetensors can be read (written after epoch 2): --resume ";
  for (const std::string& resume : {std::string("auto"), last.string()}) {
    train::Config r = a;
    r.resume = resume;
    try {
      train::train(r, quiet_options());
      ADD_FAILURE() << "resumed from a checkpoint cut short (" << resume << ")";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("cut short"), std::string::npos) << m;
      EXPECT_NE(m.find(hint), std::string::npos) << m;
    }
  }
  // with nothing else readable beside it, no hint
  for (const char* n : {"checkpoint-1.safetensors", "checkpoint-2.safetensors"})
    fs::remove(dir / n);
  train::Config r = a;
  r.resume = last.string();
  try {
    train::train(r, quiet_options());
    ADD_FAILURE() << "resumed from a checkpoint cut short";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("can be read"), std::string::npos) << e.what();
  }
}

// --resume auto prefers a run that stopped before its own end (here: after 1 of its 2 epochs) to a
// newer one that finished what it asked (1 of 1), even when this session's epochs would make both
// unfinished.
TEST_F(TrainerTest, ResumeAutoPrefersTheRunThatStoppedEarly) {
  train::Config a = run_config("ra", 2);
  const train::TrainResult stopped = train::train(a, stopped_after(1));
  train::Config quick = a;
  quick.epochs = 1;
  const train::TrainResult finished = train::train(quick, quiet_options());  // ra-2, newer
  ASSERT_NE(finished.run_dir, stopped.run_dir);
  a.resume = "auto";
  const train::TrainResult r = train::train(a, quiet_options());
  EXPECT_EQ(r.run_dir, stopped.run_dir);
  EXPECT_EQ(lines(fs::path(stopped.run_dir) / "summary.csv").size(), 3u);  // header + epochs 1, 2
}

// Temp files of atomic writes cut off by a kill (a second Ctrl-C during a checkpoint): a gone
// process's go when a run holds the folder again; a live process's (here ours) stay, and so does a
// file that only looks like one.
TEST_F(TrainerTest, HoldingARunFolderRemovesTempFilesOfGoneWriters) {
  const fs::path dir = root_ / "held";
  fs::create_directories(dir);
  std::ofstream(dir / train::kRunMarker) << "{}";
  const fs::path dead = dir / "last.safetensors.tmp.999999999.3";  // beyond any pid_max
  const fs::path live = dir / str("summary.csv.tmp.", ::getpid(), ".0");
  const fs::path other = dir / "notes.tmp.x.1";
  for (const fs::path& p : {dead, live, other}) std::ofstream(p) << "partial";
  const train::RunFolderLock held(dir);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));
}

// A run folder belongs to one live process: while a RunFolderLock holds it (a training run), a
// resume of its checkpoint is refused, naming the holder, and --resume auto leaves it alone.
TEST_F(TrainerTest, ALiveRunsFolderIsNotResumedByAnother) {
  const train::TrainOptions quiet = quiet_options();
  train::Config a = run_config("live", 2);
  const train::TrainResult first = train::train(a, stopped_after(1));
  const fs::path dir = first.run_dir;
  EXPECT_FALSE(train::run_folder_in_use(dir));  // the run ended: its lock went with it
  const std::string summary_before = slurp(dir / "summary.csv");
  {
    train::RunFolderLock held(dir);  // as the live run would hold it
    EXPECT_TRUE(train::run_folder_in_use(dir));
    EXPECT_THROW(train::RunFolderLock{dir}, Error);
    train::Config r = resume_of(a, dir);
    try {
      train::train(r, quiet);
      FAIL() << "expected the live folder to be refused";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("is in use by another training process (pid " + std::to_string(::getpid())),
                std::string::npos)
          << m;
    }
    r.resume = "auto";
    try {
      train::train(r, quiet);
      FAIL() << "expected resume auto to find no free run";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("in use by a live training process"), std::string::npos)
          << e.what();
    }
    EXPECT_EQ(slurp(dir / "summary.csv"), summary_before);  // nothing was written into it
  }
  a.resume = "auto";  // released: the run goes on
  const train::TrainResult resumed = train::train(a, quiet);
  EXPECT_EQ(resumed.run_dir, first.run_dir);
  EXPECT_EQ(lines(dir / "summary.csv").size(), 3u);
}

// A checkpoint outside a run folder (a copy: no run.json beside it) is resumed into a new run
// folder; the files around the copy stay as they were.
TEST_F(TrainerTest, ACheckpointOutsideARunFolderResumesIntoANewOne) {
  const train::Config a = run_config("orig", 2);
  const train::TrainResult first = train::train(a, stopped_after(1));
  const fs::path elsewhere = root_ / "downloads";
  fs::create_directories(elsewhere);
  fs::copy_file(fs::path(first.run_dir) / "last.safetensors", elsewhere / "copy.safetensors");
  for (const char* name : {"summary.csv", "args.yaml", "checkpoint-2.safetensors"})
    std::ofstream(elsewhere / name) << "the user's own " << name << "\n";
  train::Config r = a;
  r.resume = (elsewhere / "copy.safetensors").string();
  const train::TrainResult moved = train::train(r, quiet_options());
  EXPECT_NE(moved.run_dir, elsewhere.string());
  EXPECT_NE(moved.run_dir, first.run_dir);
  EXPECT_TRUE(fs::exists(fs::path(moved.run_dir) / train::kRunMarker));
  for (const char* name : {"summary.csv", "args.yaml", "checkpoint-2.safetensors"})
    EXPECT_EQ(slurp(elsewhere / name), std::string("the user's own ") + name + "\n") << name;
  const std::vector<std::string> rows = lines(fs::path(moved.run_dir) / "summary.csv");
  ASSERT_EQ(rows.size(), 2u);  // header + epoch 2, the epoch after the copy's
  EXPECT_EQ(rows[1].rfind("2,", 0), 0u) << rows[1];
  EXPECT_EQ(lines(fs::path(first.run_dir) / "summary.csv").size(), 2u);  // the original: as it was
}

// A checkpoint copied into another run's folder, or one behind its run's newest checkpoint, goes
// on in a new folder: the folder's later checkpoints, best model and summary rows stay.
TEST_F(TrainerTest, AResumeThatWouldRewriteARunsLaterFilesGoesOnInANewFolder) {
  const train::TrainOptions quiet = quiet_options();
  train::Config a = run_config("runa", 2);
  a.checkpoint_hist = 2;
  const train::TrainResult ra = train::train(a, quiet);
  train::Config b = a;
  b.experiment = "runb";
  const train::TrainResult rb = train::train(b, quiet);
  const fs::path da = ra.run_dir, db = rb.run_dir;
  const std::string best_a = slurp(da / "model_best.safetensors"),
                    sum_a = slurp(da / "summary.csv"), last_b = slurp(db / "last.safetensors"),
                    sum_b = slurp(db / "summary.csv");
  // behind: checkpoint-1 of a run whose last.safetensors is at epoch 2
  train::Config r = a;
  r.resume = (da / "checkpoint-1.safetensors").string();
  r.epochs = 3;
  const train::TrainResult behind = train::train(r, quiet);
  EXPECT_NE(behind.run_dir, ra.run_dir);
  EXPECT_EQ(slurp(da / "model_best.safetensors"), best_a);
  EXPECT_EQ(slurp(da / "summary.csv"), sum_a);
  EXPECT_TRUE(fs::exists(da / "checkpoint-2.safetensors"));
  // another run's: A's last copied into B's folder
  fs::copy_file(da / "last.safetensors", db / "from_a.safetensors");
  r.resume = (db / "from_a.safetensors").string();
  const train::TrainResult other = train::train(r, quiet);
  EXPECT_NE(other.run_dir, rb.run_dir);
  EXPECT_EQ(slurp(db / "last.safetensors"), last_b);
  EXPECT_EQ(slurp(db / "summary.csv"), sum_b);
  // the run's own newest checkpoint still goes on in place
  r.resume = (db / "last.safetensors").string();
  EXPECT_EQ(train::train(r, quiet).run_dir, rb.run_dir);
  EXPECT_EQ(lines(db / "summary.csv").size(), 4u);  // header + epochs 1 .. 3
}

// A resume that goes on in a new folder from its run's best checkpoint left that folder without a
// model_best.safetensors while no later epoch beat it (`haargrad validate --checkpoint RUN` found
// none), though the log named that best. The new folder's model_best starts as the checkpoint.
TEST_F(TrainerTest, AResumeInANewFolderFromTheBestCheckpointKeepsItAsModelBest) {
  const train::TrainOptions quiet = quiet_options();
  train::Config a = run_config("best", 2);
  a.checkpoint_hist = 2;
  a.lr = 1e-12;  // the weights barely move: epoch 2 does not beat epoch 1
  a.warmup_lr = 0;
  a.min_lr = 0;
  const train::TrainResult ra = train::train(a, quiet);
  ASSERT_EQ(ra.best_epoch, 1);
  train::Config r = a;
  r.resume = (fs::path(ra.run_dir) / "checkpoint-1.safetensors").string();  // behind: a new folder
  const train::TrainResult moved = train::train(r, quiet);
  ASSERT_NE(moved.run_dir, ra.run_dir);
  EXPECT_EQ(moved.best_epoch, 1);
  ASSERT_TRUE(fs::exists(fs::path(moved.run_dir) / "model_best.safetensors"));
  EXPECT_EQ(slurp(fs::path(moved.run_dir) / "model_best.safetensors"), slurp(r.resume));
}

// A resume in place whose run folder lost its model_best.safetensors (deleted, a partial copy)
// ended without one while no later epoch beat the best, though the log named that best. It comes
// back from the run's checkpoint-<best epoch>.safetensors.
TEST_F(TrainerTest, AResumeInPlaceRestoresAMissingModelBestFromTheBestEpochsCheckpoint) {
  train::Config a = run_config("lost_best", 2);
  a.checkpoint_hist = 2;
  a.lr = 1e-12;  // the weights barely move: no later epoch beats epoch 1
  a.warmup_lr = 0;
  a.min_lr = 0;
  const train::TrainResult ra = train::train(a, quiet_options());
  ASSERT_EQ(ra.best_epoch, 1);
  const fs::path dir(ra.run_dir);
  ASSERT_TRUE(fs::remove(dir / "model_best.safetensors"));
  const train::TrainResult resumed = resume_last(a, dir, 3);
  ASSERT_EQ(resumed.run_dir, ra.run_dir);
  EXPECT_EQ(resumed.best_epoch, 1);
  ASSERT_TRUE(fs::exists(dir / "model_best.safetensors"));
  EXPECT_EQ(slurp(dir / "model_best.safetensors"), slurp(dir / "checkpoint-1.safetensors"));
}

// A stop between last.safetensors and its copy to model_best (a kill, the OOM killer, a full disk
// failing the copy) left model_best at an earlier epoch than the best the run records. A resume in
// place kept it (only a missing one came back): the run ended naming "best top-1 (epoch 2)" while
// model_best held epoch 1. It takes the best epoch's checkpoint, the resumed one here.
TEST_F(TrainerTest, AResumeInPlaceReplacesAModelBestOfAnEarlierEpochThanTheRunsBest) {
  train::Config a = run_config("stale_best", 2);
  a.checkpoint_hist = 2;
  a.lr = 1e-12;  // the weights barely move: no later epoch beats another
  a.warmup_lr = 0;
  a.min_lr = 0;
  const train::TrainResult ra = train::train(a, quiet_options());
  const fs::path dir(ra.run_dir);
  // epoch 2 made the best, and the run stopped before copying it: model_best is epoch 1's
  const std::string last = (dir / "last.safetensors").string();
  safetensors::File f = safetensors::load(last);
  nlohmann::json state = nlohmann::json::parse(f.metadata.at("state"));
  state["best_epoch"] = 2;
  state["best_top1"] = state["eval_top1"];
  f.metadata["state"] = state.dump();
  safetensors::save(last, f);
  fs::copy_file(dir / "checkpoint-1.safetensors", dir / "model_best.safetensors",
                fs::copy_options::overwrite_existing);
  ASSERT_TRUE(fs::remove(dir / "checkpoint-2.safetensors"));
  const std::string epoch2 = slurp(last);
  const train::TrainResult resumed = resume_last(a, dir, 3);
  ASSERT_EQ(resumed.run_dir, ra.run_dir);
  EXPECT_EQ(resumed.best_epoch, 2);
  EXPECT_EQ(train::read_train_state((dir / "model_best.safetensors").string())->epoch, 2);
  EXPECT_TRUE(slurp(dir / "model_best.safetensors") == epoch2);
  std::string said = (dir / "model_best.safetensors").string();
  said += " holds epoch 1, not the run's best so far (epoch 2";
  EXPECT_NE(slurp(dir / "log.txt").find(said), std::string::npos) << slurp(dir / "log.txt");
}

// A resume in place whose summary.csv was lost (deleted, cut) went on writing the later rows alone,
// unsaid: the run's curves then started at the resumed epoch. The log names the epochs without a
// row.
TEST_F(TrainerTest, AResumeInPlaceSaysWhichEpochsSummaryCsvLacks) {
  const train::Config a = run_config("lost_summary", 2);
  const train::TrainResult ra = train::train(a, quiet_options());
  const fs::path dir(ra.run_dir);
  ASSERT_TRUE(fs::remove(dir / "summary.csv"));
  const train::TrainResult resumed = resume_last(a, dir, 3);
  ASSERT_EQ(resumed.run_dir, ra.run_dir);
  EXPECT_NE(slurp(dir / "log.txt")
                .find((dir / "summary.csv").string() +
                      ": no row for 2 of the 2 epochs done (epochs 1, 2): the file is missing"),
            std::string::npos)
      << slurp(dir / "log.txt");
  EXPECT_EQ(lines(dir / "summary.csv").size(), 2u);  // the header and epoch 3
}

// A run.json that is not a JSON object (damaged) was resumed in place without a word, and the
// session's checkpoints then recorded no run. The resume says so, naming the file, and goes on.
TEST_F(TrainerTest, AResumeWithADamagedRunMarkerSaysSo) {
  const train::Config a = run_config("damaged_marker", 1);
  const train::TrainResult ra = train::train(a, quiet_options());
  const fs::path dir(ra.run_dir);
  std::ofstream(dir / "run.json", std::ios::trunc) << "garbage{";
  const train::TrainResult resumed = resume_last(a, dir, 2);
  ASSERT_EQ(resumed.run_dir, ra.run_dir);
  EXPECT_NE(
      slurp(dir / "log.txt")
          .find((dir / "run.json").string() +
                " cannot be read as the run folder's marker (not a file holding a JSON object)"),
      std::string::npos)
      << slurp(dir / "log.txt");
  EXPECT_EQ(lines(dir / "summary.csv").size(), 3u);  // the header and epochs 1, 2
}

// A run.json that is a folder made the resume fail with a C++ library exception naming no file
// ("basic_filebuf::underflow error reading the file: Is a directory"). The folder cannot be held
// (run.json is its lock): the error names the file, and the checkpoints stay as they were.
TEST_F(TrainerTest, AResumeWithARunMarkerThatIsAFolderNamesIt) {
  const train::Config a = run_config("folder_marker", 1);
  const train::TrainResult ra = train::train(a, quiet_options());
  const fs::path dir(ra.run_dir);
  const std::string last = slurp(dir / "last.safetensors");
  ASSERT_TRUE(fs::remove(dir / "run.json"));
  fs::create_directory(dir / "run.json");
  train::Config r = resume_of(a, dir);
  r.epochs = 2;
  const std::string msg = hg::test::error_of([&] { train::train(r, quiet_options()); });
  EXPECT_NE(msg.find((dir / "run.json").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("Is a directory"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("unexpected C++ exception"), std::string::npos) << msg;
  EXPECT_EQ(slurp(dir / "last.safetensors"), last);
}

// --resume of a run folder (as validate takes one) said "checkpoint RUN does not exist". It says
// the path is a folder and names the checkpoints in it to resume from, or --resume auto.
TEST_F(TrainerTest, AResumeOfARunFolderNamesItsCheckpoints) {
  const train::Config a = run_config("folder", 1);
  const train::TrainResult ra = train::train(a, quiet_options());
  train::Config r = a;
  r.resume = ra.run_dir;
  r.epochs = 2;
  try {
    train::train(r, quiet_options());
    FAIL() << "expected a run folder as --resume to be refused";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find("does not exist"), std::string::npos) << m;
    EXPECT_NE(m.find("resume: " + ra.run_dir + " is a folder"), std::string::npos) << m;
    EXPECT_NE(m.find((fs::path(ra.run_dir) / "last.safetensors").string()), std::string::npos) << m;
    EXPECT_NE(m.find("--resume auto"), std::string::npos) << m;
  }
  EXPECT_EQ(lines(fs::path(ra.run_dir) / "summary.csv").size(), 2u);  // untouched
}

// A finished run resumed with fewer --epochs than it ran trains nothing; its warning said "all 1
// epochs of this run are done" of a run that had done 2.
TEST_F(TrainerTest, AFinishedRunResumedWithFewerEpochsSaysHowManyItRan) {
  const train::Config a = run_config("fewer", 2);
  const train::TrainResult ra = train::train(a, quiet_options());
  const train::TrainResult again = resume_last(a, ra.run_dir, 1);
  EXPECT_EQ(again.run_dir, ra.run_dir);
  const std::string warning = last_line_with(fs::path(ra.run_dir) / "log.txt", "nothing to train");
  EXPECT_NE(warning.find("this run has done 2 epochs, more than epochs 1"), std::string::npos)
      << warning;
  EXPECT_NE(warning.find("set --epochs above 2"), std::string::npos) << warning;
  // the result is the run's, as summary.csv holds it: epoch 2's evaluation and the rate over
  // both epochs (the file was read up to the new --epochs: epoch 1's row alone)
  const train::SummaryLines run =
      train::read_summary((fs::path(ra.run_dir) / "summary.csv").string(), 2);
  ASSERT_EQ(run.rows.size(), 2u);
  EXPECT_EQ(again.last_top1, run.rows[1].eval_top1);
  EXPECT_EQ(again.last_top5, run.rows[1].eval_top5);
  EXPECT_DOUBLE_EQ(again.train_img_per_sec,
                   2 / (1 / run.rows[0].img_per_sec + 1 / run.rows[1].img_per_sec));
  EXPECT_EQ(again.last_top1_ema, -1);  // no model EMA
}

// A finished run with a model EMA resumed: its best_top1 is the EMA's, and the result says so as
// the run's own result did (last_top1_ema, which `train`'s result line reads as "best_top1_of
// ema"); it was -1, as if the run kept no EMA, from the nothing-to-train path.
TEST_F(TrainerTest, AFinishedRunWithAModelEmaResumedReportsTheEmasTop1) {
  train::Config a = run_config("emadone", 1);
  a.model_ema = true;
  a.model_ema_decay = 0.5;
  const train::TrainResult ra = train::train(a, quiet_options());
  ASSERT_GE(ra.last_top1_ema, 0);
  const train::TrainResult again = resume_last(a, ra.run_dir, 1);
  EXPECT_EQ(again.best_top1, ra.best_top1);
  const train::SummaryLines run =
      train::read_summary((fs::path(ra.run_dir) / "summary.csv").string(), 1);
  ASSERT_EQ(run.rows.size(), 1u);
  EXPECT_TRUE(run.rows[0].has_ema);
  EXPECT_EQ(again.last_top1_ema, run.rows[0].eval_top1_ema);
  EXPECT_NEAR(again.last_top1_ema, ra.last_top1_ema, 1e-4);  // as written, %.6g
}

// A finished run resumed with a config unlike its own (another model, weight decay or lr) said
// only "nothing to train", as if the config had been used. A key that shapes the results is refused
// as on any resume, before that warning; a schedule change trains nothing, which the warning says.
TEST_F(TrainerTest, AFinishedRunResumedWithAnotherConfigSaysSo) {
  const train::TrainOptions quiet = quiet_options();
  const train::Config a = run_config("finished", 1);
  const train::TrainResult ra = train::train(a, quiet);
  const fs::path log = fs::path(ra.run_dir) / "log.txt";
  train::Config r = resume_of(a, ra.run_dir);
  r.weight_decay = a.weight_decay * 2;
  const std::string msg = hg::test::error_of([&] { train::train(r, quiet); });
  EXPECT_NE(msg.find("differ from the run's"), std::string::npos) << msg;
  EXPECT_NE(msg.find("weight_decay 0.05 -> 0.1"), std::string::npos) << msg;
  EXPECT_EQ(last_line_with(log, "nothing to train"), "");  // refused before it
  r.weight_decay = a.weight_decay;
  r.lr = *a.lr * 2;
  EXPECT_EQ(train::train(r, quiet).run_dir, ra.run_dir);
  const std::string warned = last_line_with(log, "nothing to train");
  EXPECT_NE(warned.find("this session's schedule change, lr 0.001 -> 0.002, applies to no epoch"),
            std::string::npos)
      << warned;
}

// The warmup warning said "the lr only rises and the cosine never decays it", and summary.csv's lr
// column then showed min_lr for the run's last epoch (stepping per update it holds the lr set after
// the epoch's last update, timm's: after the run, the cosine's end). It gives the lr of the first
// and the last update, and says the column's last value, as summary.csv holds it.
TEST_F(TrainerTest, TheWarmupWarningAgreesWithTheSummarysLrColumn) {
  for (const bool on_updates : {true, false}) {
    SCOPED_TRACE(on_updates ? "per update" : "per epoch");
    // epochs 1 = warmup_epochs; lr 1e-3 from warmup_lr 1e-5 over 3 updates, min_lr 1e-5
    train::Config a = run_config(on_updates ? "updates" : "epochs", 1);
    a.sched_on_updates = on_updates;
    const fs::path dir = train::train(a, quiet_options()).run_dir;
    const std::string warned = last_line_with(dir / "log.txt", "warmup_epochs 1 >= epochs 1");
    const train::SummaryLines rows = train::read_summary((dir / "summary.csv").string(), 1);
    ASSERT_EQ(rows.rows.size(), 1u);
    if (on_updates) {
      EXPECT_NE(warned.find("its updates' lr rises from 1e-05 to 0.00067, below lr 0.001"),
                std::string::npos)
          << warned;
      EXPECT_EQ(rows.rows[0].lr, 1e-5);  // min_lr: the schedule's value after the last update
      EXPECT_NE(warned.find("summary.csv's lr column gives the lr set after each epoch's last "
                            "update (timm's): 1e-05 in the last row, used by no update"),
                std::string::npos)
          << warned;
    } else {  // one epoch of the warmup: its first value throughout, which the column shows
      EXPECT_NE(warned.find("every update has lr 1e-05, below lr 0.001"), std::string::npos)
          << warned;
      EXPECT_EQ(rows.rows[0].lr, 1e-5);
      EXPECT_EQ(warned.find("summary.csv"), std::string::npos) << warned;
    }
  }
}

// cooldown_epochs lengthens the run, not the schedule: with warmup_epochs >= epochs the warmup
// still takes all of the schedule's epochs (its lr never reaches lr, and nothing decays it), and
// the cooldown's epochs follow at min_lr. The warning compared the warmup with the run's length
// (epochs + cooldown_epochs), and so was not given once a cooldown was set.
TEST_F(TrainerTest, TheWarmupWarningIsGivenWithACooldownToo) {
  train::Config a = run_config("warmup_cooldown", 1);  // warmup_epochs 1, lr 1e-3, min_lr 1e-5
  a.cooldown_epochs = 2;
  const fs::path dir = train::train(a, quiet_options()).run_dir;
  const std::string warned = last_line_with(dir / "log.txt", "warmup_epochs 1 >= epochs 1");
  EXPECT_NE(warned.find("every update has lr 1e-05, below lr 0.001"), std::string::npos) << warned;
  EXPECT_NE(warned.find("the schedule ends within the warmup"), std::string::npos) << warned;
  EXPECT_NE(warned.find("then 2 epochs of cooldown_epochs 2 at min_lr 1e-05"), std::string::npos)
      << warned;
  EXPECT_EQ(warned.find("summary.csv"), std::string::npos) << warned;
  const std::vector<train::SummaryRow> rows =
      train::read_summary((dir / "summary.csv").string(), 10).rows;
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].lr, 1e-5);
  EXPECT_EQ(rows[1].lr, a.min_lr);
  EXPECT_EQ(rows[2].lr, a.min_lr);
  // stepping per update the summary's last row is the cooldown's min_lr, used by its updates: the
  // note on a last row "used by no update" is for a run that ends in its warmup
  train::Config u = run_config("warmup_cooldown_updates", 1);
  u.cooldown_epochs = 1;
  u.sched_on_updates = true;
  const fs::path udir = train::train(u, quiet_options()).run_dir;
  const std::string uwarned = last_line_with(udir / "log.txt", "warmup_epochs 1 >= epochs 1");
  EXPECT_NE(uwarned.find("its updates' lr rises from 1e-05 to 0.00067, below lr 0.001"),
            std::string::npos)
      << uwarned;
  EXPECT_EQ(uwarned.find("used by no update"), std::string::npos) << uwarned;
  // a warmup longer than the cooldown's end too: the run ends within it, as without a cooldown
  train::Config w = run_config("warmup_past_cooldown", 1);
  w.warmup_epochs = 3;
  w.cooldown_epochs = 1;
  const fs::path wdir = train::train(w, quiet_options()).run_dir;
  const std::string wwarned =
      last_line_with(wdir / "log.txt",
                     "warmup_epochs 3 >= 2 epochs (epochs 1 + cooldown_epochs 1): the run ends "
                     "within the warmup: its updates' lr rises from 1e-05 to 0.00034, below lr");
  EXPECT_NE(wwarned, "");
  EXPECT_EQ(wwarned.find("then "), std::string::npos) << wwarned;
}

// With lr cycles the warmup may take the first cycle only: the warning said "the cosine schedule
// never decays it" of a run whose second cycle, after the warmup, decays. It says which cycles
// decay.
TEST_F(TrainerTest, TheWarmupWarningWithLrCyclesSaysTheLaterCyclesDecay) {
  train::Config a = run_config("warmup_cycles", 1);  // warmup_epochs 1, lr 1e-3, min_lr 1e-5
  a.lr_cycle_limit = 2;
  a.sched_on_updates = true;
  const fs::path dir = train::train(a, quiet_options()).run_dir;
  const std::string warned = last_line_with(dir / "log.txt", "warmup_epochs 1 >= epochs 1");
  EXPECT_NE(warned.find("the first lr cycle ends within the warmup"), std::string::npos) << warned;
  EXPECT_NE(warned.find("the cosine schedule decays only the lr cycles after the warmup"),
            std::string::npos)
      << warned;
  EXPECT_EQ(warned.find("never decays"), std::string::npos) << warned;
}

// timm's train.py runs num_epochs: with warmup_prefix the warmup comes before the epochs of the
// schedule, and cooldown_epochs after them, at min_lr; the log counts that length, and a finished
// run resumed with a longer cooldown trains the epochs it adds.
TEST_F(TrainerTest, WarmupPrefixAndCooldownLengthenTheRun) {
  train::Config a = run_config("cooldown", 1);  // cosine from lr 1e-3, warmup 1 from 1e-5
  a.warmup_prefix = true;
  a.cooldown_epochs = 1;
  const fs::path dir = train::train(a, quiet_options()).run_dir;
  std::vector<train::SummaryRow> rows =
      train::read_summary((dir / "summary.csv").string(), 10).rows;
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].lr, 1e-5);           // the warmup's start
  EXPECT_NEAR(rows[1].lr, 1e-3, 1e-15);  // the cosine's start, after the warmup
  EXPECT_EQ(rows[2].lr, a.min_lr);       // the cooldown
  EXPECT_NE(last_line_with(dir / "log.txt", "epoch 3/3: train loss"), "");
  train::Config longer = resume_of(a, dir);
  longer.cooldown_epochs = 2;
  EXPECT_EQ(train::train(longer, quiet_options()).run_dir, dir.string());
  rows = train::read_summary((dir / "summary.csv").string(), 10).rows;
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[3].lr, a.min_lr);
  const train::Config args = train::load_config((dir / "args.yaml").string());
  EXPECT_EQ(args.cooldown_epochs, 2);
  EXPECT_TRUE(args.schedule_history.empty());  // the lr of every epoch is the same as before
}

// sched none with warmup_epochs left at a recipe's value trained at the full lr from the first
// update, unsaid (train --help read "learning-rate schedule after warmup"). As in timm there is
// no warmup then; the log (and --help) says so.
TEST_F(TrainerTest, SchedNoneSaysItHasNoWarmup) {
  train::Config a = run_config("none", 1);
  a.sched = "none";
  a.warmup_epochs = 3;
  const fs::path dir = train::train(a, quiet_options()).run_dir;
  const std::string warned = last_line_with(dir / "log.txt", "sched none");
  EXPECT_NE(warned.find("every update has lr 0.001; warmup_epochs 3 is not applied"),
            std::string::npos)
      << warned;
  const train::SummaryLines rows = train::read_summary((dir / "summary.csv").string(), 1);
  ASSERT_EQ(rows.rows.size(), 1u);
  EXPECT_EQ(rows.rows[0].lr, 1e-3);
}

// args.yaml edited to change a key that shapes the results is caught against the checkpoint's
// stored config; an empty args.yaml defers to the checkpoint's config.
TEST_F(TrainerTest, AnEditedArgsYamlCannotChangeWhatTheRunIs) {
  const train::TrainOptions quiet = quiet_options();
  const train::Config a = run_config("edited", 2);
  const fs::path dir = train::train(a, stopped_after(1)).run_dir;
  const std::string args = slurp(dir / "args.yaml");
  std::string edited = args;
  const size_t at = edited.find("\nseed: ");
  ASSERT_NE(at, std::string::npos);
  // seed S -> S7 (written whole: "07" would be refused for its leading zero)
  edited.replace(at, edited.find('\n', at + 1) - at, "\nseed: " + std::to_string(a.seed * 10 + 7));
  std::ofstream(dir / "args.yaml") << edited;
  train::Config r = resume_of(a, dir);
  r.seed = a.seed * 10 + 7;
  try {
    train::train(r, quiet);
    FAIL() << "expected the edited seed to be refused";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("does not match the config stored in"), std::string::npos) << m;
    EXPECT_NE(m.find("seed"), std::string::npos) << m;
  }
  // a batch or an lr the run never used: refused too (the lr would enter schedule_history)
  for (const std::string& line : {std::string("batch_size: 3"), std::string("lr: 0.5")}) {
    std::string text = args;
    const std::string key = line.substr(0, line.find(':') + 1);
    const size_t k = text.find("\n" + key);
    ASSERT_NE(k, std::string::npos) << key;
    text.replace(k + 1, text.find('\n', k + 1) - k - 1, line);
    std::ofstream(dir / "args.yaml") << text;
    EXPECT_THROW(train::train(resume_of(a, dir), quiet), Error) << line;
  }
  std::ofstream(dir / "args.yaml") << "";       // empty: the checkpoint's config decides
  EXPECT_THROW(train::train(r, quiet), Error);  // seed 427 against the checkpoint's 42
  r.seed = a.seed;
  EXPECT_EQ(train::train(r, quiet).run_dir, dir.string());
}

// Loading a checkpoint into a model it was not saved from: one error that names the file, both
// models and a few of the mismatching keys, not every key.
TEST_F(TrainerTest, CheckpointForAnotherModelNamesBothModels) {
  fs::create_directories(root_);
  const std::string path = (root_ / "atto.safetensors").string();
  train::Config c = smoke_config(root_.string());
  c.model = "convnext_atto";
  {
    ConvNeXt saved(model_config("convnext_atto"), 1);
    train::save_checkpoint(path, saved, nullptr, train::TrainState{}, train::to_yaml(c));
  }
  ConvNeXt other(model_config("wtconvnext_atto"), 1);
  try {
    train::load_checkpoint(path, other, nullptr);
    FAIL() << "expected a mismatch error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find("saved from model convnext_atto"), std::string::npos) << m;
    EXPECT_NE(m.find("does not fit model wtconvnext_atto"), std::string::npos) << m;
    EXPECT_NE(m.find("more)"), std::string::npos) << m;  // long key lists are cut
    EXPECT_LT(m.size(), 3000u) << m;
  }
}

// The same model with other sizes (validate --num-classes 10 on a 4-class run, a config with
// other dims): "saved from model X does not fit model X" and a list of shapes left the user to
// find the key. The error names the keys of the config stored in the checkpoint that differ, with
// both values, besides the file and the tensors with both shapes.
TEST_F(TrainerTest, CheckpointOfOtherSizesNamesTheKeysThatDiffer) {
  fs::create_directories(root_);
  const std::string path = (root_ / "four.safetensors").string();
  const train::Config c = smoke_config(root_.string());
  {
    ConvNeXt saved(train::model_config_from(c), 1), ema(train::model_config_from(c), 2);
    train::save_checkpoint(path, saved, nullptr, train::TrainState{}, train::to_yaml(c), &ema);
  }
  train::Config ten = c;
  ten.num_classes = 10;
  ten.dims = {8, 32};
  ConvNeXt other(train::model_config_from(ten), 1);
  auto error_of = [&](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string m = error_of([&] { train::load_checkpoint(path, other, nullptr); });
  EXPECT_NE(m.find("checkpoint " + path), std::string::npos) << m;
  EXPECT_NE(m.find("the config stored in it has dims [8, 16] (the model: [8, 32]), "
                   "num_classes 4 (the model: 10)"),
            std::string::npos)
      << m;
  // the EMA's weights (validate --use-ema, export --ema) alike
  const std::string e = error_of([&] { train::load_ema_weights(path, other); });
  EXPECT_NE(e.find("checkpoint " + path), std::string::npos) << e;
  EXPECT_NE(e.find("the config stored in it has dims [8, 16] (the model: [8, 32]), "
                   "num_classes 4 (the model: 10)"),
            std::string::npos)
      << e;
  train::Config classes = c;
  classes.num_classes = 10;
  ConvNeXt head(train::model_config_from(classes), 1);
  const std::string h = error_of([&] { train::load_checkpoint(path, head, nullptr); });
  EXPECT_NE(h.find("the config stored in it has num_classes 4 (the model: 10); "),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("head.fc.bias (checkpoint [4], model [10])"), std::string::npos) << h;
  // fine-tuning takes another num_classes (a new head): the dims are what does not fit
  const std::string f = error_of([&] { train::load_initial_checkpoint(path, other); });
  EXPECT_NE(f.find("initial_checkpoint " + path), std::string::npos) << f;
  EXPECT_NE(f.find("the config stored in it has dims [8, 16] (the model: [8, 32])"),
            std::string::npos)
      << f;
  EXPECT_EQ(f.find("num_classes 4"), std::string::npos) << f;
}

// A run with the program's own thread count may run fewer threads while other processes keep cores
// busy (core/thread_tuner.h); when it ends, the kernels run on every thread again.
TEST_F(TrainerTest, ThreadsLoweredDuringARunAreGivenBackAtItsEnd) {
  const int saved = cpu_threads();
  if (set_cpu_threads(2) != 2) GTEST_SKIP() << "built without OpenMP: one thread";
  const char* env = std::getenv("OMP_NUM_THREADS");
  const std::string saved_env = env ? env : "";
  unsetenv("OMP_NUM_THREADS");  // the count is the program's choice only without it
  train::Config c = smoke_config((root_ / "t").string());
  c.epochs = 1;
  c.threads = 0;
  train::TrainOptions o;
  o.plain_output = true;
  int during = 0;
  o.after_step = [&](int64_t, int64_t step, ConvNeXt&) {
    if (step == 1) {
      during = cpu_threads();
      set_active_cpu_threads(1);  // what the tuner does beside a busy process
    }
    return false;
  };
  train::train(c, o);
  EXPECT_EQ(during, 2);
  EXPECT_EQ(cpu_threads(), 2);
  EXPECT_EQ(cpu_split_threads(), 2);
  set_cpu_threads(saved);
  if (env) setenv("OMP_NUM_THREADS", saved_env.c_str(), 1);
}

// lr 0 (timm trains with it: debugging, measuring throughput) is a whole run whose weights never
// move: no warmup (it would rise from warmup_lr), min_lr 0, AdamW's weight decay (scaled by lr)
// included. Started from a checkpoint, the run's last.safetensors holds the very same bits; the
// curves are drawn although the lr panel's values are all 0 (its log scale had no point to draw).
TEST_F(TrainerTest, LrZeroTrainsWithoutMovingAWeight) {
  const train::TrainOptions quiet = quiet_options();
  train::Config a = smoke_config((root_ / "a").string());
  a.epochs = 1;
  const fs::path start = fs::path(train::train(a, quiet).run_dir) / "last.safetensors";

  train::Config z = smoke_config((root_ / "z").string());
  z.lr = 0.0;
  z.min_lr = 0.0;
  z.warmup_epochs = 0;
  z.epochs = 2;
  ASSERT_GT(z.weight_decay, 0);
  z.initial_checkpoint = start.string();
  const fs::path run = train::train(z, quiet).run_dir;
  const safetensors::File before = safetensors::load(start.string()),
                          after = safetensors::load((run / "last.safetensors").string());
  int compared = 0;
  for (const auto& [name, t] : before.tensors) {
    if (name.rfind("optimizer.", 0) == 0) continue;
    SCOPED_TRACE(name);
    ASSERT_TRUE(after.tensors.count(name));
    const Tensor& u = after.tensors.at(name);
    ASSERT_EQ(u.nbytes(), t.nbytes());
    EXPECT_EQ(std::memcmp(u.data_ptr(), t.data_ptr(), t.nbytes()), 0);
    ++compared;
  }
  EXPECT_GT(compared, 10);
  EXPECT_EQ(train::read_csv_columns((run / "summary.csv").string()).at("lr"),
            (std::vector<double>{0.0, 0.0}));
  if (train::gnuplot_available()) {
    EXPECT_TRUE(fs::exists(run / "curves.png"));
    EXPECT_EQ(slurp(run / "log.txt").find("no curves.png"), std::string::npos)
        << slurp(run / "log.txt");
  }
}

// wt_levels / wtconv_mode on a ConvNeXt model changed nothing, unsaid, while the run's args.yaml
// recorded them (timm's create_model refuses a keyword its model does not take; here the key
// stays valid, as a run's args.yaml may carry it, and the run says it is unused).
TEST(TrainerWarnings, WTConvKeysOnAConvNeXtAndOneClassAreSaid) {
  const fs::path root = fs::temp_directory_path() / ("hg_wt_keys_" + std::to_string(::getpid()));
  train::Config c = smoke_config(root.string());
  c.model = "convnext_atto";
  c.depths = {1, 1};
  c.dims = {8, 16};
  c.wt_levels = {3, 3};
  c.epochs = 1;
  c.max_steps_per_epoch = 1;
  const train::TrainOptions quiet = quiet_options();
  const train::TrainResult r = train::train(c, quiet);
  const std::string log = slurp(fs::path(r.run_dir) / "log.txt");
  EXPECT_NE(log.find("wt_levels [3, 3] changes nothing: model convnext_atto has no WTConv layers"),
            std::string::npos)
      << log;
  // one class: loss 0 and top-1 100% every epoch, unsaid (timm says nothing either)
  train::Config one = smoke_config(root.string());
  one.num_classes = 1;
  one.epochs = 1;
  one.max_steps_per_epoch = 1;
  const train::TrainResult r1 = train::train(one, quiet);
  const std::string log1 = slurp(fs::path(r1.run_dir) / "log.txt");
  EXPECT_NE(log1.find("num_classes 1: every prediction is the one class"), std::string::npos)
      << log1;
  EXPECT_EQ(log1.find("changes nothing"), std::string::npos) << log1;  // a WTConv model
  fs::remove_all(root);
}

// ---- no validation (val_split '') ---------------------------------------------------------------

namespace {

/// A smoke run without validation (timm's `--val-split ''`) whose train loss is lowest at epoch 4
/// of 5 and rises at epoch 5 (lr 0.02 held constant, no drop path: measured 1.358, 1.273, 1.139,
/// 1.049, 1.164), so that "the best is the last epoch" or "the highest loss" would pick another
/// epoch. A model EMA is kept (it trains, with nothing to evaluate it on).
train::Config no_val_config(const std::string& out, const std::string& name) {
  train::Config c = smoke_config(out);
  c.experiment = name;
  c.val_split = "";
  c.epochs = 5;
  c.lr = 0.02;
  c.sched = "none";
  c.warmup_epochs = 0;
  c.drop_path = 0.0;
  c.checkpoint_hist = 2;
  c.model_ema = true;
  return c;
}

/// The train losses of summary.csv's rows, epoch by epoch (the column by name).
std::vector<double> train_losses(const fs::path& run) {
  return train::read_csv_columns((run / "summary.csv").string()).at("train_loss");
}

/// The 1-based epochs of `losses` from the lowest loss up.
std::vector<int64_t> epochs_by_loss(const std::vector<double>& losses) {
  std::vector<int64_t> e(losses.size());
  for (size_t i = 0; i < e.size(); ++i) e[i] = static_cast<int64_t>(i) + 1;
  std::stable_sort(e.begin(), e.end(), [&](int64_t a, int64_t b) {
    return losses[static_cast<size_t>(a - 1)] < losses[static_cast<size_t>(b - 1)];
  });
  return e;
}

std::vector<int64_t> history_epochs(const fs::path& run) {
  std::vector<int64_t> out;
  for (const auto& e : fs::directory_iterator(run))
    if (const auto epoch = train::history_epoch(e.path().filename().string()))
      out.push_back(*epoch);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

// timm's train.py without an eval split trains on, ranks each epoch by its train metrics (the loss:
// lower is better) and writes summary.csv without eval columns. haargrad refused an empty
// val_split of image_folder and idx, and read one of synthetic data as its usual validation.
TEST_F(TrainerTest, WithoutValidationTheLowestTrainLossIsTheBest) {
  const train::TrainResult r = train::train(no_val_config(root_.string(), "nv"), quiet_options());
  const fs::path dir = r.run_dir;
  const std::vector<std::string> summary = lines(dir / "summary.csv");
  ASSERT_EQ(summary.size(), 6u);
  EXPECT_EQ(summary[0], train::kSummaryNoEvalHeader);
  for (size_t i = 1; i < summary.size(); ++i) {  // no eval values, no stand-in zeros or nan
    EXPECT_EQ(std::count(summary[i].begin(), summary[i].end(), ','), 4) << summary[i];
    EXPECT_EQ(summary[i].find("nan"), std::string::npos) << summary[i];
  }
  const std::vector<double> losses = train_losses(dir);
  const std::vector<int64_t> ranked = epochs_by_loss(losses);
  ASSERT_EQ(ranked.front(), 4) << "the run this test needs: its lowest train loss before its end";

  EXPECT_EQ(r.best_epoch, 4);
  EXPECT_NEAR(r.best_train_loss, losses[3], 1e-6);
  EXPECT_EQ(r.best_top1, -1);
  EXPECT_EQ(r.last_top1, -1);
  EXPECT_EQ(r.last_top1_ema, -1);
  const train::TrainState best =
      *train::read_train_state((dir / "model_best.safetensors").string());
  EXPECT_EQ(best.epoch, 4);  // model_best is epoch 4's checkpoint
  EXPECT_EQ(best.best_epoch, 4);
  EXPECT_NEAR(best.train_loss, losses[3], 1e-6);
  EXPECT_EQ(best.eval_top1, -1);
  // checkpoint_hist 2: the two lowest losses, each file recording its epoch's
  EXPECT_EQ(history_epochs(dir), (std::vector<int64_t>{3, 4}));  // epochs 4 and 3, in order
  for (int64_t e : history_epochs(dir))
    EXPECT_NEAR(train::read_train_state((dir / train::history_file_name(e)).string())->train_loss,
                losses[static_cast<size_t>(e - 1)], 1e-6);
  // the EMA trained (its tensors are saved), with nothing to evaluate it on
  const safetensors::File last = safetensors::load((dir / "last.safetensors").string());
  EXPECT_TRUE(last.tensors.count(std::string(train::kEmaPrefix) + "stem.0.weight"));
  // said once at the start, and the end names the best epoch by its train loss
  const std::string log = slurp(dir / "log.txt");
  const std::string said = "no validation, as timm's train.py without an eval split";
  EXPECT_NE(log.find(said), std::string::npos) << log;
  EXPECT_EQ(log.find(said), log.rfind(said)) << log;
  EXPECT_NE(log.find("done: best train loss " + fmt::format("{:.4f}", losses[3]) + " (epoch 4"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("eval loss"), std::string::npos) << log;
}

// A run without validation resumed (in place, after its best epoch): the same rows, the same best
// and checkpoint history as the run straight through; the best it records round-trips, so the
// worse epoch after the resume does not take model_best. A finished run resumed keeps its best.
TEST_F(TrainerTest, WithoutValidationAResumeGoesOnWithTheRunsBest) {
  const train::TrainResult straight =
      train::train(no_val_config(root_.string(), "straight"), quiet_options());
  const train::Config c = no_val_config(root_.string(), "resumed");
  const train::TrainResult first = train::train(c, stopped_after(4));
  EXPECT_EQ(first.best_epoch, 4);
  const fs::path dir = first.run_dir;
  const train::TrainResult resumed = resume_last(c, dir, 5);
  EXPECT_EQ(resumed.run_dir, first.run_dir);

  // epoch, train_loss and lr: the deterministic columns of a summary without eval ones
  const auto columns = [](const fs::path& run) {
    std::vector<std::string> out;
    for (const std::string& row : lines(run / "summary.csv")) {
      std::stringstream cells(row);
      std::string kept;
      std::string cell;
      for (int i = 0; i < 3 && std::getline(cells, cell, ','); ++i) kept += cell + ",";
      out.push_back(kept);
    }
    return out;
  };
  EXPECT_EQ(columns(dir), columns(straight.run_dir));
  EXPECT_EQ(resumed.best_epoch, 4);
  EXPECT_EQ(resumed.best_train_loss, straight.best_train_loss);
  EXPECT_EQ(train::read_train_state((dir / "model_best.safetensors").string())->epoch, 4);
  EXPECT_EQ(history_epochs(dir), history_epochs(straight.run_dir));

  const train::TrainResult done = resume_last(c, dir, 5);  // all 5 epochs done: nothing trains
  EXPECT_EQ(done.best_epoch, 4);
  EXPECT_EQ(done.best_train_loss, straight.best_train_loss);
  EXPECT_EQ(done.last_top1, -1);  // no eval column: none, not the NaN of a missing cell
  EXPECT_EQ(done.last_top5, -1);
  EXPECT_NE(last_line_with(dir / "log.txt", "nothing to train")
                .find(fmt::format("(best train loss {:.4f} at epoch 4)", done.best_train_loss)),
            std::string::npos)
      << slurp(dir / "log.txt");
}

// timm's --start-epoch: a new run begun at epoch 1 of 3 trains epochs 2 and 3 with the lr of the
// run that trained all three (its schedule and update count as if epoch 1 had run), names its
// rows and checkpoints by them, and args.yaml reruns it. A resume in place goes on without a note
// about rows before its start, and may not change start_epoch.
TEST_F(TrainerTest, StartEpochStartsANewRunAtThatEpochAsTimm) {
  const train::TrainResult full = train::train(run_config("full", 3), quiet_options());
  train::Config late = run_config("late", 3);
  late.start_epoch = 1;
  const train::TrainResult r = train::train(late, quiet_options());
  const fs::path dir = r.run_dir;
  const auto sf = train::read_csv_columns((fs::path(full.run_dir) / "summary.csv").string()),
             sl = train::read_csv_columns((dir / "summary.csv").string());
  ASSERT_EQ(sl.at("epoch"), (std::vector<double>{2, 3}));
  ASSERT_EQ(sf.at("lr").size(), 3u);
  EXPECT_EQ(sl.at("lr"), (std::vector<double>{sf.at("lr")[1], sf.at("lr")[2]}));
  // checkpoints named by the epochs that ran (2 and 3; smoke.yaml keeps the best one, and the
  // log says which went); none for epoch 1, which did not run
  EXPECT_TRUE(fs::exists(dir / "checkpoint-2.safetensors") !=
              fs::exists(dir / "checkpoint-3.safetensors"));
  EXPECT_FALSE(fs::exists(dir / "checkpoint-1.safetensors"));
  const std::optional<train::TrainState> st =
      train::read_train_state((dir / "last.safetensors").string());
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->epoch, 3);
  EXPECT_EQ(st->updates, 9);  // 3 updates an epoch, counted from epoch 1's end
  EXPECT_TRUE(train::load_config((dir / "args.yaml").string()) == late);  // reruns it

  train::Config longer = resume_of(late, dir);
  longer.epochs = 4;
  const train::TrainResult r2 = train::train(longer, quiet_options());
  EXPECT_EQ(r2.run_dir, r.run_dir);
  EXPECT_EQ(train::read_csv_columns((dir / "summary.csv").string()).at("epoch"),
            (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(last_line_with(dir / "log.txt", "no row for"), "");

  train::Config changed = resume_of(late, dir);
  changed.start_epoch = std::nullopt;
  changed.epochs = 5;  // (a run with epochs left: the resume is reconciled, not just reported)
  try {
    train::train(changed, quiet_options());
    ADD_FAILURE() << "a resume changed start_epoch";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("resume: start_epoch 1 -> null cannot change on a resume"),
              std::string::npos)
        << e.what();
  }
}

// timm's --no-resume-opt: the resume restores the weights and position with the optimizer state
// from zero, which is what resuming a copy of the checkpoint without its optimizer tensors does;
// it differs from a plain resume, and the run's args.yaml keeps false.
TEST_F(TrainerTest, NoResumeOptResumesAsACheckpointWithoutOptimizerState) {
  const train::Config a = run_config("a", 2);  // adamw: its moments are state
  const train::TrainResult first = train::train(a, stopped_after(1));
  const fs::path dir = first.run_dir;
  const fs::path copies = root_ / "copies";
  fs::create_directories(copies);
  for (const char* name : {"plain", "reset", "stripped"})
    fs::copy(dir, copies / name, fs::copy_options::recursive);
  safetensors::File f = safetensors::load((copies / "stripped" / "last.safetensors").string());
  std::vector<std::pair<std::string, Tensor>> kept;
  for (const std::string& name : f.order)
    if (name.rfind("optimizer.", 0) != 0) kept.emplace_back(name, f.tensors.at(name));
  ASSERT_LT(kept.size(), f.order.size());
  safetensors::save((copies / "stripped" / "last.safetensors").string(), kept, f.metadata);

  std::map<std::string, fs::path> run_dir;
  const auto resumed = [&](const char* name, bool reset) {
    train::Config c = resume_of(a, copies / name);
    c.no_resume_opt = reset;
    run_dir[name] = train::train(c, quiet_options()).run_dir;
    // the epoch the resume trained (its folder may be a new one, with that row alone)
    return deterministic_columns({lines(run_dir[name] / "summary.csv").back()});
  };
  const auto plain = resumed("plain", false), reset = resumed("reset", true),
             stripped = resumed("stripped", false);
  ASSERT_EQ(reset.size(), 1u);
  EXPECT_EQ(reset[0].rfind("2,", 0), 0u) << reset[0];
  EXPECT_EQ(reset, stripped);
  EXPECT_NE(reset, plain);
  EXPECT_NE(last_line_with(run_dir["reset"] / "log.txt", "no_resume_opt: the optimizer state of"),
            "");
  EXPECT_FALSE(train::load_config((run_dir["reset"] / "args.yaml").string()).no_resume_opt);
}

// timm's --recovery-interval: recovery.safetensors every that many updates inside an epoch (not
// at its last step: the epoch's checkpoints follow and remove it); a resume from one written
// mid-epoch ends as the uninterrupted run.
TEST_F(TrainerTest, RecoveryIntervalWritesThePositionAndAResumeFromItMatchesTheRun) {
  train::Config c = run_config("run", 2);
  c.ls_init_value = 1.0;  // the weights' change shows in the losses' digits
  c.recovery_interval = 1;
  const fs::path kept = root_ / "recovery-copy.safetensors";
  std::vector<int64_t> seen_steps;
  train::TrainOptions o = quiet_options();
  o.after_step = [&](int64_t epoch, int64_t step, ConvNeXt&) {
    const fs::path rec = root_ / "run" / "recovery.safetensors";
    if (fs::exists(rec)) {
      seen_steps.push_back(train::read_train_state(rec.string())->step_in_epoch);
      if (epoch == 1 && step == 2) fs::copy_file(rec, kept);  // written after epoch 2's step 1
    } else {
      seen_steps.push_back(-1);
    }
    return false;
  };
  const train::TrainResult r = train::train(c, o);
  const fs::path dir = r.run_dir;
  ASSERT_EQ(dir, root_ / "run");
  // (the hook runs after each step, before that step's recovery is written)
  EXPECT_EQ(seen_steps, (std::vector<int64_t>{-1, 1, 2, -1, 1, 2}));
  EXPECT_FALSE(fs::exists(dir / "recovery.safetensors"));
  ASSERT_TRUE(fs::exists(kept));
  const std::optional<train::TrainState> st = train::read_train_state(kept.string());
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->epoch, 1);
  EXPECT_EQ(st->step_in_epoch, 1);

  train::Config again = c;
  again.recovery_interval = 0;  // a session key: this resume writes none
  again.resume = kept.string();
  const train::TrainResult r2 = train::train(again, quiet_options());
  const auto sa = lines(dir / "summary.csv"), sb = lines(fs::path(r2.run_dir) / "summary.csv");
  ASSERT_EQ(sa.size(), 3u);
  ASSERT_FALSE(sb.empty());
  EXPECT_EQ(deterministic_columns({sb.back()}), deterministic_columns({sa.back()}));

  // every 2 updates of an epoch of 3, counted from the epoch's first as timm's (update_idx + 1) %
  // recovery_interval: after step 2 of each epoch (counted over the run, the second epoch's would
  // come after its step 1)
  train::Config two = run_config("two", 2);
  two.recovery_interval = 2;
  seen_steps.clear();
  train::TrainOptions o2 = quiet_options();
  o2.after_step = [&](int64_t, int64_t, ConvNeXt&) {
    const fs::path rec = root_ / "two" / "recovery.safetensors";
    seen_steps.push_back(fs::exists(rec) ? train::read_train_state(rec.string())->step_in_epoch
                                         : -1);
    return false;
  };
  (void)train::train(two, o2);
  EXPECT_EQ(seen_steps, (std::vector<int64_t>{-1, -1, 2, -1, -1, 2}));
}

// sched plateau end to end: the summary's lr column follows the epochs' eval top-1 as timm's
// scheduler does (stepped with each epoch's metric after its row), every checkpoint keeps the
// plateau's state, and a run stopped after epoch 3 and resumed gives the rows of the run straight
// through, though its lr decayed before the stop (timm's own resume starts the plateau afresh).
TEST_F(TrainerTest, PlateauFollowsTheEvalTop1AndSurvivesAResume) {
  const auto config = [&](const std::string& name) {
    train::Config c = run_config(name, 6);
    c.sched = "plateau";
    c.patience_epochs = 0;
    c.decay_rate = 0.5;
    c.lr = 2e-3;
    return c;
  };
  const train::TrainResult ra = train::train(config("straight"), quiet_options());
  const fs::path straight = ra.run_dir;
  const auto cols = train::read_csv_columns((straight / "summary.csv").string());
  const std::vector<double>& top1 = cols.at("eval_top1");
  const std::vector<double>& lr = cols.at("lr");
  ASSERT_EQ(lr.size(), 6u);
  // the lrs a plateau schedule gives for these top-1s (its rules: schedule_test)
  train::RunSchedule want(config("straight"), 3);
  for (int64_t e = 0; e < 6; ++e) {
    const size_t i = static_cast<size_t>(e);
    EXPECT_NEAR(lr[i], want.lr(e, 0, e * 3), 1e-7 * lr[i]) << "epoch " << e + 1;
    want.end_epoch(e, top1[i]);
  }
  ASSERT_LT(lr[3], lr[1]) << "the run this test needs: a decay before its stop after epoch 3";
  const std::optional<train::TrainState> end =
      train::read_train_state((straight / "last.safetensors").string());
  ASSERT_TRUE(end && end->plateau);
  EXPECT_EQ(end->plateau->lr, want.plateau()->lr);
  EXPECT_EQ(end->plateau->bad_epochs, want.plateau()->bad_epochs);

  const train::Config b = config("resumed");
  const train::TrainResult rb1 = train::train(b, stopped_after(3));
  const fs::path dir = rb1.run_dir;
  const std::optional<train::TrainState> stop =
      train::read_train_state((dir / "last.safetensors").string());
  ASSERT_TRUE(stop && stop->plateau);
  EXPECT_LT(stop->plateau->lr, lr[1]);  // the decay the checkpoint must carry
  const train::TrainResult rb2 = resume_last(b, dir, 6);
  EXPECT_EQ(rb2.run_dir, rb1.run_dir);
  EXPECT_EQ(deterministic_columns(lines(straight / "summary.csv")),
            deterministic_columns(lines(dir / "summary.csv")));
}
