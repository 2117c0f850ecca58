// Data-parallel training end to end on the CPU: `mpirun -np 2 haargrad train` against one process
// (the acceptance of README "Data-parallel training"): 2 ranks with batch B/2 reproduce 1 rank with
// batch B; ZeRO-1 equals plain data parallel; checkpoints move between 2 ranks and 1 rank (ZeRO
// shards included) both ways; a failing or stalled rank stops every rank with a message, a failing
// rank other than 0 leaves it in the run folder, and a rank killed outright leaves the survivor
// promising no recovery checkpoint.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/safetensors.h"
#include "data/export.h"
#include "data/temp_dir.h"
#include "dist_util.h"

namespace fs = std::filesystem;
using namespace hg;

namespace {

const std::string kProgram = HAARGRAD_BINARY_DIR "/haargrad";

// The smoke config (every kernel is deterministic), 3 epochs, clipping on (so the global norm is
// tested too), one loader thread and one OpenMP thread per rank. The layer scale starts at 1: at
// timm's 1e-6 the blocks' branches barely reach the loss (a frozen or dropped branch moves it by
// 1e-7 to 1e-6), so a bug in their parameters' data-parallel path stayed below the 1e-5 the
// summaries are compared to: WTConv kernels updated from each rank's own gradients passed four of
// the five comparisons below (the fifth failed on its replica check, dist_check_every).
std::string train_args(const fs::path& out, const std::string& experiment, int batch) {
  return " train " HAARGRAD_SOURCE_DIR
         "/configs/smoke.yaml --plain --device cpu --workers 0"
         " --epochs 3 --clip_grad 1.0 --ls_init_value 1 --output " +
         out.string() + " --experiment " + experiment + " --batch_size " + std::to_string(batch);
}

// The smoke config on the CPU for one long epoch (400,000 synthetic images: a run to signal or kill
// mid-way), every step logged, into dir/run; its console into dir/log.
std::string long_run_args(const fs::path& dir) {
  return " train " HAARGRAD_SOURCE_DIR
         "/configs/smoke.yaml --plain --device cpu --workers 0 --synthetic-size 400000"
         " --max-steps-per-epoch 0 --epochs 1 --log-interval 1 --experiment run --output " +
         dir.string() + " > " + (dir / "log").string() + " 2>&1";
}

// Every tensor of two runs' last.safetensors (weights, optimizer.*, the model EMA's) agrees,
// element by element, within kCheckpointRel of its tensor's root mean square in a: 2 ranks sum
// their halves of a batch in another order than 1 rank, and f32 rounding moved an element by up to
// 1e-5 of its tensor's rms (AdamW's exp_avg_sq; ZeRO-1 vs plain data parallel: 0) on the 2-core CPU
// machine. WTConv kernels updated from one rank's gradients moved them by 11 to 43.
constexpr double kCheckpointRel = 1e-4;
void expect_checkpoints_match(const fs::path& a, const fs::path& b, const std::string& what) {
  const auto x = safetensors::load((a / "last.safetensors").string()).tensors,
             y = safetensors::load((b / "last.safetensors").string()).tensors;
  ASSERT_EQ(x.size(), y.size()) << what;
  double worst = 0;
  std::string where;
  for (const auto& [name, t] : x) {
    ASSERT_TRUE(y.count(name)) << what << ": " << name;
    const std::vector<double> u = t.to_vector<double>(), v = y.at(name).to_vector<double>();
    ASSERT_EQ(u.size(), v.size()) << what << ": " << name;
    double rms = 0;
    for (double e : u) rms += e * e;
    rms = rms > 0 ? std::sqrt(rms / static_cast<double>(u.size())) : 1.0;
    for (size_t i = 0; i < u.size(); ++i)
      if (std::abs(u[i] - v[i]) / rms > worst) {
        worst = std::abs(u[i] - v[i]) / rms;
        where = name + "[" + std::to_string(i) + "]";
      }
  }
  EXPECT_LE(worst, kCheckpointRel) << what << ": largest difference / rms at " << where;
}

// Runs `cmd` under /bin/sh in a child process; its pid (negative if fork failed).
pid_t start_shell(const std::string& cmd) {
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// Whether process `pid` runs `program` and catches `sig` (has a handler for it: /proc/PID/status,
// SigCgt, a hex mask whose bit sig-1 is that signal's).
bool catches(pid_t pid, const fs::path& program, int sig) {
  const fs::path proc = fs::path("/proc") / std::to_string(pid);
  std::error_code ec;
  if (!fs::equivalent(fs::read_symlink(proc / "exe", ec), program, ec) || ec) return false;
  const std::string status = test::read_bytes(proc / "status");
  const size_t at = status.find("SigCgt:");
  if (at == std::string::npos) return false;
  const unsigned long long mask = std::strtoull(status.c_str() + at + 7, nullptr, 16);
  return (mask >> (sig - 1) & 1) != 0;
}

// How often `text` stands in `output` (a line said by each rank would stand there once a rank).
int occurrences(const std::string& output, const std::string& text) {
  int n = 0;
  for (size_t at = output.find(text); at != std::string::npos; at = output.find(text, at + 1)) ++n;
  return n;
}

// The pid a rank's shell wrote to `file` (echo $$ > file), 0 while the file is not complete.
pid_t pid_in(const fs::path& file) {
  const std::string text = test::read_bytes(file);
  return text.size() > 1 && text.back() == '\n' ? static_cast<pid_t>(std::stol(text)) : 0;
}

// Waits up to 30 s for dir/log to show step 5 and for `pid_file` to exist; whether both came.
bool wait_until_stepping(const fs::path& dir, const fs::path& pid_file) {
  for (int i = 0; i < 600; ++i) {
    usleep(50 * 1000);
    if (test::read_bytes(dir / "log").find("step 5/") != std::string::npos && fs::exists(pid_file))
      return true;
  }
  return false;
}

class MpiTrain : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("hg_mpi_train_" + std::to_string(::getpid()));
    fs::remove_all(root_);
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }
  void SetUp() override {
    if (test::mpiexec().empty()) GTEST_SKIP() << "MPI not found at configure time (scripts/install-deps.sh installs it)";
    ASSERT_TRUE(fs::exists(kProgram)) << kProgram << " is missing: build the `haargrad` target first";
  }
  // Runs `args` on n ranks (n == 0: a plain process); fails the test on a non-zero exit.
  static test::ProgramRun train(int n, const std::string& args) {
    const std::string cmd = (n == 0 ? std::string() : test::mpirun(n)) + kProgram + args;
    test::ProgramRun r = test::run_command(cmd);
    EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.output;
    return r;
  }
  // The reference: one process, batch 8, 3 epochs (made once for the suite).
  static fs::path reference() {
    static fs::path dir;
    if (dir.empty()) {
      train(0, train_args(root_, "one_rank_b8", 8));
      dir = root_ / "one_rank_b8";
    }
    return dir;
  }
  static fs::path root_;
};
fs::path MpiTrain::root_;

}  // namespace

TEST_F(MpiTrain, TwoRanksWithHalfTheBatchReproduceOneRank) {
  const auto r = train(2, train_args(root_, "two_ranks_b4", 4) + " --dist_check_every 1");
  EXPECT_NE(r.output.find("data parallel: 2 ranks, batch 4 per rank x 1 accumulation steps x 2 ranks = 8"),
            std::string::npos)
      << r.output;
  test::expect_summaries_match(reference() / "summary.csv", root_ / "two_ranks_b4" / "summary.csv", 1e-5,
                               "2 ranks x batch 4 vs 1 rank x batch 8");
  expect_checkpoints_match(reference(), root_ / "two_ranks_b4",
                           "2 ranks x batch 4 vs 1 rank x batch 8");
  // rank 0 alone wrote the run folder, in today's format
  for (const char* f : {"args.yaml", "summary.csv", "log.txt", "last.safetensors", "model_best.safetensors"})
    EXPECT_TRUE(fs::exists(root_ / "two_ranks_b4" / f)) << f;
  EXPECT_FALSE(fs::exists(root_ / "two_ranks_b4-2")) << "a second rank made a run folder of its own";
}

TEST_F(MpiTrain, GradientAccumulationOnTwoRanksReproducesOneRank) {
  // 2 ranks x batch 2 x 2 micro-steps = 8 images per update, as the reference's one batch of 8;
  // 6 steps per epoch so that there are as many updates (3) as in the reference
  train(2, train_args(root_, "two_ranks_accum", 2) + " --grad_accum_steps 2 --max_steps_per_epoch 6");
  test::expect_summaries_match(reference() / "summary.csv", root_ / "two_ranks_accum" / "summary.csv", 1e-5,
                               "2 ranks x batch 2 x 2 accumulation steps vs 1 rank x batch 8");
  expect_checkpoints_match(reference(), root_ / "two_ranks_accum",
                           "2 ranks x batch 2 x 2 accumulation steps vs 1 rank x batch 8");
}

// Peak optimizer_state MiB of the memory report at the end of a run's output.
double optimizer_state_mib(const std::string& output) {
  const size_t at = output.rfind("optimizer_state ");
  return at == std::string::npos ? -1.0 : std::stod(output.substr(at + 16));
}

TEST_F(MpiTrain, ZeroOneEqualsPlainDataParallel) {
  // wider than the smoke model (225k parameters) so that the state's MiB show the sharding
  const std::string wide = " --dims [64,128] --epochs 2";
  const auto dp = train(2, train_args(root_, "dp", 4) + wide);
  const auto z = train(2, train_args(root_, "zero1", 4) + wide + " --zero_stage 1 --dist_check_every 1");
  EXPECT_NE(z.output.find("ZeRO-1 optimizer state sharding"), std::string::npos) << z.output;
  test::expect_summaries_match(root_ / "dp" / "summary.csv", root_ / "zero1" / "summary.csv", 1e-5,
                               "ZeRO-1 vs plain data parallel, 2 ranks");
  expect_checkpoints_match(root_ / "dp", root_ / "zero1", "ZeRO-1 vs plain data parallel, 2 ranks");
  // the memory report: each rank holds half the optimizer state (1.7 MiB -> 0.86 MiB)
  const double full = optimizer_state_mib(dp.output), half = optimizer_state_mib(z.output);
  ASSERT_GT(full, 1.0) << dp.output;
  EXPECT_NEAR(half / full, 0.5, 0.05) << dp.output << z.output;
}

// 2 ranks (ZeRO-1: shards gathered into the checkpoint) -> 1 rank, and 1 rank -> 2 ranks (ZeRO-1:
// the full state split into shards), each against the uninterrupted single process.
TEST_F(MpiTrain, ResumeFromTwoRanksOnOneAndBack) {
  train(2, train_args(root_, "two_then_one", 4) + " --zero_stage 1 --stop-after-epoch 1");
  train(0, train_args(root_, "two_then_one", 8) + " --resume " + (root_ / "two_then_one/last.safetensors").string());
  test::expect_summaries_match(reference() / "summary.csv", root_ / "two_then_one" / "summary.csv", 1e-5,
                               "epoch 1 on 2 ranks (ZeRO-1), epochs 2-3 on 1 rank");
  expect_checkpoints_match(reference(), root_ / "two_then_one",
                           "epoch 1 on 2 ranks (ZeRO-1), epochs 2-3 on 1 rank");

  train(0, train_args(root_, "one_then_two", 8) + " --stop-after-epoch 1");
  train(2, train_args(root_, "one_then_two", 4) + " --zero_stage 1 --resume " +
               (root_ / "one_then_two/last.safetensors").string());
  test::expect_summaries_match(reference() / "summary.csv", root_ / "one_then_two" / "summary.csv", 1e-5,
                               "epoch 1 on 1 rank, epochs 2-3 on 2 ranks (ZeRO-1)");
  expect_checkpoints_match(reference(), root_ / "one_then_two",
                           "epoch 1 on 1 rank, epochs 2-3 on 2 ranks (ZeRO-1)");
}

// Model EMA on 2 ranks with ZeRO-1: the EMA follows the all-gathered parameters, so it is the same
// on every rank (each rank evaluates its shard with its own EMA) and equals one process's EMA.
TEST_F(MpiTrain, EmaWithZeroOneMatchesOneRank) {
  const std::string ema = " --epochs 2 --model_ema --model_ema_decay 0.5";
  train(0, train_args(root_, "ema_one", 8) + ema);
  train(2, train_args(root_, "ema_zero1", 4) + ema + " --zero_stage 1");
  const auto cols = [](const fs::path& csv) {  // eval_loss_ema, eval_top1_ema, eval_top5_ema
    std::ifstream f(csv);
    std::string line;
    std::getline(f, line);
    EXPECT_NE(line.find(",eval_loss_ema,eval_top1_ema,eval_top5_ema"), std::string::npos) << line;
    std::vector<double> v;
    while (std::getline(f, line)) {
      std::stringstream cells(line);
      std::string cell;
      for (int i = 0; std::getline(cells, cell, ','); ++i)
        if (i >= 8) v.push_back(std::stod(cell));
    }
    return v;
  };
  const auto a = cols(root_ / "ema_one" / "summary.csv"),
             b = cols(root_ / "ema_zero1" / "summary.csv");
  ASSERT_EQ(a.size(), 6u);
  ASSERT_EQ(b.size(), 6u);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], 1e-5 * std::max(1.0, std::abs(a[i]))) << i;
  test::expect_summaries_match(root_ / "ema_one" / "summary.csv",
                               root_ / "ema_zero1" / "summary.csv", 1e-5,
                               "model EMA: 2 ranks ZeRO-1 vs 1 rank");
  expect_checkpoints_match(root_ / "ema_one", root_ / "ema_zero1",
                           "model EMA: 2 ranks ZeRO-1 vs 1 rank");
}

// Ranks whose configs differ (two hosts' files) are stopped at the start, naming the key; --resume
// auto on 2 ranks picks on rank 0 alone (another rank would find the folder rank 0 had just
// locked).
TEST_F(MpiTrain, RanksMustRunOneConfigAndResumeAutoPicksOnce) {
  const fs::path out = root_ / "agree";
  const std::string one = test::mpirun(1) + kProgram + train_args(out, "mix", 4);
  const auto r = test::run_command(one + " : -np 1 " + kProgram + train_args(out, "mix", 8), 120);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("differs from rank 0 (rank 0 -> this rank): batch_size 4 -> 8"),
            std::string::npos)
      << r.output;
  // a session key that changes the ranks' collectives must agree too
  const auto li = test::run_command(test::mpirun(1) + kProgram + train_args(out, "li", 4) +
                                        " --log-interval 1 : -np 1 " + kProgram +
                                        train_args(out, "li", 4) + " --log-interval 3",
                                    120);
  EXPECT_NE(li.exit_code, 0) << li.output;
  EXPECT_NE(li.output.find("log_interval 1 -> 3"), std::string::npos) << li.output;
  // --stop-after-epoch is no config key, yet a rank that left early met the others' next
  // collective with its own (MPI_ERR_TRUNCATE, naming nothing)
  const auto sae =
      test::run_command(test::mpirun(1) + kProgram + train_args(out, "sae", 4) + " : -np 1 " +
                            kProgram + train_args(out, "sae", 4) + " --stop-after-epoch 1",
                        120);
  EXPECT_NE(sae.exit_code, 0) << sae.output;
  EXPECT_NE(sae.output.find("--stop-after-epoch: rank 1 has 1, rank 0 none"), std::string::npos)
      << sae.output;
  // a resume on a number of ranks over which the run's images per step do not split (8 over 3)
  train(2, train_args(out, "split", 4) + " --epochs 2 --stop-after-epoch 1");
  const auto three =
      test::run_command(test::mpirun(3) + kProgram + train_args(out, "split", 4) +
                            " --epochs 2 --resume " + (out / "split" / "last.safetensors").string(),
                        120);
  EXPECT_NE(three.exit_code, 0) << three.output;
  EXPECT_NE(three.output.find("8 images per step, which do not split over 3 ranks"),
            std::string::npos)
      << three.output;
  train(2, train_args(out, "auto", 4) + " --epochs 2 --max_steps_per_epoch 2");
  for (int epochs : {3, 4}) {
    const test::ProgramRun again =
        train(2, train_args(out, "auto", 4) + " --max_steps_per_epoch 2 --resume auto --epochs " +
                     std::to_string(epochs));
    EXPECT_NE(again.output.find("resume auto: "), std::string::npos) << again.output;
  }
}

// Each host may read its own copy of the data (data_dir differs), but the copies must hold the
// same images: with another number of images a rank had other steps per epoch (MPI then aborted
// with a corrupted heap, no message of ours), with other class names the same label meant other
// classes, unsaid. Both ranks stop at start-up, naming the difference.
TEST_F(MpiTrain, RanksMustReadTheSameData) {
  test::TempDir tmp;
  const auto folder = [&](const std::string& root, const std::vector<std::string>& classes,
                          int per_class) {
    for (const std::string& c : classes)
      for (const char* split : {"train", "validation"}) {
        fs::create_directories(tmp.path() / root / split / c);
        for (int i = 0; i < (std::string(split) == "train" ? per_class : 1); ++i)
          data::write_png(tmp / (root + "/" + split + "/" + c + "/" + std::to_string(i) + ".png"),
                          test::random_image(8, 8, 3, static_cast<uint64_t>(i + 1)));
      }
    return (tmp.path() / root).string();
  };
  const std::string a = folder("a", {"c0", "c1"}, 4), more = folder("more", {"c0", "c1"}, 5),
                    named = folder("named", {"c0", "c2"}, 4),
                    moved = folder("moved", {"c0", "c1"}, 4);
  // one train image in the other class folder: the same totals and names, other labels
  fs::rename(tmp.path() / "moved/train/c0/0.png", tmp.path() / "moved/train/c1/9.png");
  const auto args = [&](const std::string& dir) {
    return " train " HAARGRAD_SOURCE_DIR
           "/configs/smoke.yaml --plain --device cpu --workers 0"
           " --dataset image_folder --img_size 8 --num_classes 2 --batch_size 2"
           " --max_steps_per_epoch 0 --epochs 1 --dist_timeout 60 --output " +
           (tmp.path() / "out").string() + " --data_dir " + dir;
  };
  for (const auto& [other, said] :
       std::vector<std::pair<std::string, std::string>>{{more, "train split 10 images (rank 0: 8)"},
                                                        {named, "the class names differ"},
                                                        {moved, "the images per class differ"}}) {
    const auto r = test::run_command(
        test::mpirun(1) + kProgram + args(a) + " : -np 1 " + kProgram + args(other), 120);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("rank 1 reads other data than rank 0"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(said), std::string::npos) << r.output;
    EXPECT_LT(r.seconds, 50.0) << "a rank waited for the timeout";
  }
}

// One rank meets a truncated image (corrupt_images: error) while the other waits in a collective:
// the run ends on both, with the failing rank's message, well before any timeout.
TEST_F(MpiTrain, ARankThatThrowsStopsTheRun) {
  test::TempDir tmp;
  for (const char* d : {"train/c0", "train/c1", "validation/c0", "validation/c1"}) fs::create_directories(tmp.path() / d);
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 8; ++i)
      data::write_png(tmp / ("train/c" + std::to_string(c) + "/" + std::to_string(i) + ".png"),
                      test::random_image(8, 8, 3, static_cast<uint64_t>(10 * c + i)));
  data::write_png(tmp / "validation/c0/v.png", test::random_image(8, 8, 3, 99));
  data::write_png(tmp / "validation/c1/v.png", test::random_image(8, 8, 3, 98));
  data::write_png(tmp / "full.png", test::random_image(64, 64, 3, 5));
  const std::string png = test::read_bytes(tmp / "full.png");
  test::write_bytes(tmp / "train/c1/truncated.png", png.substr(0, png.size() / 2));  // header fine, pixels not
  const std::string args = " train " HAARGRAD_SOURCE_DIR "/configs/smoke.yaml --plain --device cpu --workers 0"
                           " --dataset image_folder --data_dir " + tmp.path().string() +
                           " --img_size 8 --num_classes 2 --batch_size 3 --max_steps_per_epoch 0 --corrupt_images error"
                           " --dist_timeout 120 --output " + (tmp.path() / "out").string();
  const auto r = test::run_command(test::mpirun(2) + kProgram + args, 180);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("haargrad: error on rank"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("truncated.png"), std::string::npos) << r.output;
  EXPECT_LT(r.seconds, 100.0) << "the other rank waited for its timeout instead of being stopped";
}

// A rank that stops answering: the other ends on dist_timeout with a message naming itself and
// the collective it waited in, and mpirun stops the stalled one.
TEST_F(MpiTrain, AStalledRankEndsTheRunOnTheTimeout) {
  const auto r = test::run_command("env HAARGRAD_DIST_TEST_STALL_RANK=1 " + test::mpirun(2) +
                                       "-x HAARGRAD_DIST_TEST_STALL_RANK " + kProgram +
                                       train_args(root_, "stalled", 4) + " --dist_timeout 3",
                                   180);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("haargrad: error on rank 0 of 2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("gradient bucket"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("did not complete within 3 s"), std::string::npos) << r.output;
  EXPECT_LT(r.seconds, 100.0);
}

// Rank 1 fails (its host's copy of the data holds truncated images; data_dir may differ from host
// to host) while rank 0 waits in a collective: log.txt is rank 0's, and the MPI_Abort that follows
// the error ends rank 0 before it could log it, so rank 1 leaves its error in the run folder as
// error-rank-1.txt, which log.txt names.
TEST_F(MpiTrain, AnErrorOnAnotherRankThanZeroIsLeftInTheRunFolder) {
  test::TempDir tmp;
  const std::string truncated = [&] {  // header fine, pixels not
    data::write_png(tmp / "full.png", test::random_image(64, 64, 3, 5));
    const std::string png = test::read_bytes(tmp / "full.png");
    return png.substr(0, png.size() / 2);
  }();
  for (const std::string copy : {"good", "bad"}) {
    for (int c = 0; c < 2; ++c) {
      const std::string cls = "/c" + std::to_string(c);
      fs::create_directories(tmp.path() / copy / ("train" + cls));
      fs::create_directories(tmp.path() / copy / ("validation" + cls));
      data::write_png(tmp / (copy + "/validation" + cls + "/v.png"),
                      test::random_image(8, 8, 3, 90 + c));
      for (int i = 0; i < 8; ++i) {
        const std::string image = tmp / (copy + "/train" + cls + "/" + std::to_string(i) + ".png");
        if (copy == "bad")
          test::write_bytes(image, truncated);
        else
          data::write_png(image, test::random_image(8, 8, 3, static_cast<uint64_t>(10 * c + i)));
      }
    }
  }
  const fs::path out = tmp.path() / "out";
  const auto args = [&](const std::string& copy) {
    return " train " HAARGRAD_SOURCE_DIR
           "/configs/smoke.yaml --plain --device cpu --workers 0"
           " --dataset image_folder --img_size 8 --num_classes 2 --batch_size 3 "
           "--max_steps_per_epoch 0"
           " --corrupt_images error --dist_timeout 120 --experiment failing --output " +
           out.string() + " --data_dir " + (tmp.path() / copy).string();
  };
  const auto r = test::run_command(
      test::mpirun(1) + kProgram + args("good") + " : -np 1 " + kProgram + args("bad"), 180);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("haargrad: error on rank 1 of 2"), std::string::npos) << r.output;
  const fs::path run = out / "failing";
  ASSERT_TRUE(fs::exists(run / "error-rank-1.txt")) << r.output;
  const std::string error = test::read_bytes(run / "error-rank-1.txt");
  EXPECT_NE(error.find("haargrad: error on rank 1 of 2 (host "), std::string::npos) << error;
  EXPECT_NE(error.find((tmp.path() / "bad" / "train").string()), std::string::npos)
      << error;  // the image
  EXPECT_EQ(error.find("\n"), error.size() - 1) << "one line: " << error;
  EXPECT_NE(test::read_bytes(run / "log.txt").find("error-rank-R.txt"), std::string::npos)
      << "log.txt does not say where the other ranks' errors go";
  for (const auto& e : fs::directory_iterator(run))  // the atomic writer left no temporary file
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

// A rank killed outright (SIGKILL: the OOM killer, a lost node). mpirun stops the other ranks with
// SIGTERM, but with a dead peer they cannot finish their step, so no recovery checkpoint can be
// written, and the survivor's console must not promise one.
TEST_F(MpiTrain, ARankKilledOutrightLeavesNoPromiseOfARecoveryCheckpoint) {
  const fs::path dir = root_ / "killed";
  fs::create_directories(dir);
  // each rank's shell writes its pid, then becomes haargrad (same pid)
  const std::string ranks = test::mpirun(2) + "sh -c 'echo $$ > " + dir.string() +
                            "/pid-$OMPI_COMM_WORLD_RANK; exec \"$@\"' rank " + kProgram;
  const std::string cmd = "exec timeout -k 5 120 " + ranks + long_run_args(dir);
  const pid_t pid = start_shell(cmd);
  ASSERT_GE(pid, 0);
  const bool stepping = wait_until_stepping(dir, dir / "pid-1");  // then rank 1 is killed
  const std::string pid_text = stepping ? test::read_bytes(dir / "pid-1") : "";
  if (!pid_text.empty()) kill(static_cast<pid_t>(std::stol(pid_text)), SIGKILL);
  int status = 0;
  if (pid_text.empty()) kill(pid, SIGTERM);
  waitpid(pid, &status, 0);
  const std::string output = test::read_bytes(dir / "log");
  ASSERT_TRUE(stepping) << "the run did not start stepping\n" << output;
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  EXPECT_NE(WEXITSTATUS(status), 124) << "timed out\n" << output;
  // the survivor was told to stop (mpirun's SIGTERM) ...
  ASSERT_NE(output.find("haargrad: stop signal: stopping after this step"), std::string::npos)
      << output;
  // ... and no recovery checkpoint came, nor was one promised
  EXPECT_FALSE(fs::exists(dir / "run" / "recovery.safetensors")) << output;
  EXPECT_EQ(output.find("a recovery checkpoint follows"), std::string::npos) << output;
  EXPECT_NE(output.find("only if every rank finishes it"), std::string::npos) << output;
}

// `kill -USR1 <mpirun>`: mpirun forwards the signal to every rank, and the run stops with its
// recovery checkpoint. The console says so once (rank 0 speaks for the run), not once per rank:
// neither the handler's line nor the "interrupted" warning comes twice, nor does a second
// handler line when mpirun ends the last rank with SIGTERM.
TEST_F(MpiTrain, AForwardedStopSignalIsSaidOnce) {
  const fs::path dir = root_ / "forwarded";
  fs::create_directories(dir);
  // the shell writes its pid, then becomes mpirun (same pid): `timeout` would not forward SIGUSR1
  const std::string cmd = "exec timeout -k 5 120 sh -c 'echo $$ > " +
                          (dir / "mpirun-pid").string() + "; exec \"$@\"' mpirun " +
                          test::mpirun(2) + kProgram + long_run_args(dir);
  const pid_t pid = start_shell(cmd);
  ASSERT_GE(pid, 0);
  const bool stepping = wait_until_stepping(dir, dir / "mpirun-pid");  // then the signal
  const std::string pid_text = stepping ? test::read_bytes(dir / "mpirun-pid") : "";
  kill(pid_text.empty() ? pid : static_cast<pid_t>(std::stol(pid_text)),
       pid_text.empty() ? SIGTERM : SIGUSR1);
  int status = 0;
  waitpid(pid, &status, 0);
  const std::string output = test::read_bytes(dir / "log");
  ASSERT_TRUE(stepping) << "the run did not start stepping\n" << output;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGUSR1) << output;
  EXPECT_TRUE(fs::exists(dir / "run" / "recovery.safetensors")) << output;
  EXPECT_EQ(occurrences(output, "haargrad: stop signal:"), 1) << output;
  EXPECT_EQ(occurrences(output, "interrupted (SIGUSR1) at epoch 1"), 1) << output;
}

// A warning of the run's start-up (its config, schedule, data set, checkpoint) is every rank's
// alike: rank 0 says it once for all. Each rank said it.
TEST_F(MpiTrain, AStartUpWarningIsSaidOnce) {
  const auto r = train(2, train_args(root_, "warned", 4) +
                              " --epochs 1 --precision bf16 --sched none --warmup_epochs 2");
  EXPECT_EQ(occurrences(r.output, "warmup_epochs 2 is not applied"), 1) << r.output;
  EXPECT_EQ(occurrences(r.output, "precision bf16 on the cpu runs the bf16 reference"), 1)
      << r.output;
}

// A stop signal during MPI's start-up, before MPI has told a rank its rank, is said once too: a
// rank other than 0 knows it is one from mpirun's environment (OMPI_COMM_WORLD_RANK) and keeps
// quiet from its first moment. Deterministic: rank 0 is held back before it starts the program, so
// rank 1 cannot get past start-up (its MPI start-up waits for rank 0); rank 1 gets SIGUSR1 as soon
// as its stop handler is in place (the first thing `haargrad train` does), then rank 0 is let go
// and gets SIGUSR1 once its handler is in place. Each rank is signalled directly, as mpirun's
// forwarding would (mpirun cannot be told to forward to one rank early).
TEST_F(MpiTrain, AStopSignalDuringMpiStartUpIsSaidOnce) {
  const fs::path dir = root_ / "startup";
  fs::create_directories(dir);
  // each rank's shell writes its pid; rank 0's waits for the file `go`; then each becomes haargrad
  const std::string ranks = test::mpirun(2) + "sh -c 'echo $$ > " + dir.string() +
                            "/pid-$OMPI_COMM_WORLD_RANK; if [ $OMPI_COMM_WORLD_RANK = 0 ]; then " +
                            "while [ ! -e " + (dir / "go").string() +
                            " ]; do sleep 0.02; done; fi; exec \"$@\"' rank " + kProgram;
  const pid_t pid = start_shell("exec timeout -k 5 120 " + ranks + long_run_args(dir));
  ASSERT_GE(pid, 0);
  // signals rank r once its handler is in place (up to 30 s); whether it was signalled
  const auto signal_when_ready = [&dir](int r) {
    for (int i = 0; i < 30000; ++i) {
      const pid_t rank = pid_in(dir / ("pid-" + std::to_string(r)));
      if (rank > 0 && catches(rank, kProgram, SIGUSR1)) return kill(rank, SIGUSR1) == 0;
      usleep(1000);
    }
    return false;
  };
  const bool rank1 = signal_when_ready(1);
  { std::ofstream(dir / "go").flush(); }
  const bool rank0 = signal_when_ready(0);
  if (!rank0 || !rank1) kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  const std::string output = test::read_bytes(dir / "log");
  ASSERT_TRUE(rank1 && rank0) << "rank 1 signalled: " << rank1 << ", rank 0: " << rank0 << "\n"
                              << output;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGUSR1)
      << "status " << status << "\n"
      << output;
  EXPECT_EQ(occurrences(output, "haargrad: stop signal:"), 1) << output;
  EXPECT_EQ(occurrences(output, "haargrad: stop signal: stopping before the first step"), 1)
      << output;
  EXPECT_EQ(occurrences(output, "stopped by SIGUSR1 before the first step"), 1) << output;
  EXPECT_FALSE(fs::exists(dir / "run")) << "the run started\n" << output;
}
