// Fault injection, one test (or a few) per class of fault of issue 17: nothing lost, nothing
// misleading. Diverged evaluations, full disks and read-only folders, run-folder identity, resume
// auto, the console bar's width, schedule changes at resume, decimal numbers, errors that reach
// the user, timm's downsample rule, checkpoint_hist after a resume, and inputs below the stride.
// The runs are the smoke config (synthetic data, a tiny model): about a second each on a CPU.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/parse_number.h"
#include "core/safetensors.h"
#include "data/image.h"
#include "layers/loss.h"
#include "models/convnext.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/checkpoint_history.h"
#include "train/config.h"
#include "train/console.h"
#include "train/run_folder.h"
#include "train/summary.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace hg;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::vector<std::string> lines(const fs::path& p) {
  std::istringstream in(slurp(p));
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The temporary files a failed write could have left in `dir`.
std::vector<std::string> temp_files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) out.push_back(e.path().string());
  return out;
}

std::string contains_msg(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos ? std::string() : str("'", part, "' not in: ", text);
}
#define EXPECT_CONTAINS(text, part) EXPECT_EQ(contains_msg(text, part), "")

using hg::test::error_of;

struct CommandResult {
  int rc;
  std::string output;
};
CommandResult run_command(const std::string& args) {
  const std::string cmd = std::string(HAARGRAD_BINARY_DIR) + "/haargrad " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string text;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) text.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, text};
}

std::string smoke_yaml() { return std::string(HAARGRAD_SOURCE_DIR) + "/configs/smoke.yaml"; }

// The state of a checkpoint (header only).
train::TrainState state_of(const fs::path& p) { return train::read_train_state(p.string()).value(); }

// Sets RLIMIT_FSIZE (writes past `bytes` fail with EFBIG, as on a full disk) until destroyed.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    old_ = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of being killed
    rlimit small = saved_;
    small.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &small);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_);
  }

 private:
  rlimit saved_{};
  void (*old_)(int);
};

// The parent's side of a forked child that writes into the pipe `fds`: everything it writes
// until it exits, and its exit code (128 when a signal ended it).
CommandResult collect_child(pid_t pid, int fds[2]) {
  close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, text};
}

// Runs `body` in a child process without the privileges that would let it write into a read-only
// folder (root ignores permission bits: the child becomes nobody). Returns the child's message.
// Only for code without OpenMP regions (see run_command_unprivileged).
std::string run_unprivileged(const std::function<std::string()>& body) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(3);
    std::string msg;
    try {
      msg = body();
    } catch (const std::exception& e) {
      msg = str("unexpected exception: ", e.what());
    }
    if (write(fds[1], msg.data(), msg.size()) < 0) _exit(4);
    _exit(0);
  }
  const CommandResult r = collect_child(pid, fds);
  if (r.rc != 0) return str("child failed, exit code ", r.rc, ": ", r.output);
  return r.output;
}

// `haargrad <args>` run as nobody when we are root (root ignores permission bits). A separate
// program, not a forked copy of this one: OpenMP's thread pool does not survive a fork.
CommandResult run_command_unprivileged(const std::string& args) {
  int fds[2];
  if (pipe(fds) != 0) return {-1, "pipe failed"};
  const std::string cmd = std::string(HAARGRAD_BINARY_DIR) + "/haargrad " + args;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(3);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return collect_child(pid, fds);
}

class Faults : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("hg_faults_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    fs::permissions(root_, fs::perms::all);  // the unprivileged children may write here
    quiet_.plain_output = true;
  }
  void TearDown() override {
    std::error_code ec;
    for (auto& e : fs::recursive_directory_iterator(root_, ec)) fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(root_, ec);
  }
  train::Config smoke(const std::string& experiment, int64_t epochs) const {
    train::Config c = train::load_config(smoke_yaml());
    c.output = root_.string();
    c.experiment = experiment;
    c.device = "cpu";
    c.workers = 2;
    c.epochs = epochs;
    return c;
  }
  /// Trains `c` with the run folder's `file` not writable at the epochs' checkpoints (a folder
  /// that holds a file is in its place, so the rename over it fails, as on a full disk); the error.
  std::string error_with_unwritable(const train::Config& c, const std::string& file) const {
    train::TrainOptions opts = quiet_;
    const fs::path blocked = root_ / c.experiment / file / "x";
    opts.before_checkpoints = [blocked](int64_t) { fs::create_directories(blocked); };
    return error_of([&] { train::train(c, opts); });
  }
  /// Trains `c` quietly until the end of epoch `epoch` (1-based), where it stops as after Ctrl-C.
  void train_until(const train::Config& c, int64_t epoch) const {
    train::TrainOptions o = quiet_;
    o.stop_after_epoch = epoch;
    train::train(c, o);
  }
  /// Writes an 8 x 8 grey PNG at root_/images/FILE (its folders made).
  void write_image(const std::string& file) const {
    const fs::path path = root_ / "images" / file;
    fs::create_directories(path.parent_path());
    data::write_png(path.string(), data::Image{8, 8, 3, std::vector<uint8_t>(8 * 8 * 3, 100)});
  }
  /// smoke(experiment, epochs) on an image folder root_/images of PER_CLASS images in each of
  /// train/ and validation/'s two classes, cat and dog.
  train::Config image_folder_run(const std::string& experiment, int64_t epochs,
                                 int per_class) const {
    for (const char* split : {"train", "validation"})
      for (const char* cls : {"cat", "dog"})
        for (int i = 0; i < per_class; ++i) write_image(str(split, "/", cls, "/", i, ".png"));
    train::Config c = smoke(experiment, epochs);
    c.dataset = "image_folder";
    c.data_dir = (root_ / "images").string();
    c.num_classes = 2;
    return c;
  }
  fs::path root_;
  train::TrainOptions quiet_;
};

// Stops the run (as Ctrl-C) after step `step` of epoch `epoch` (0-based).
std::function<bool(int64_t, int64_t, ConvNeXt&)> interrupt_at(int64_t epoch, int64_t step) {
  return [=](int64_t e, int64_t s, ConvNeXt&) { return e == epoch && s == step; };
}

}  // namespace

// ---- 1. non-finite outputs are never best --------------------------------------------------------

TEST(FaultsMetrics, NonFiniteLogitRowsCountAsWrong) {
  // row 0: NaN everywhere (every comparison is false: it used to rank the label first); row 1: an
  // Inf; row 2: finite and right. Labels 0, 1, 2.
  const double nan = std::nan("");
  Tensor logits = Tensor::from_vector({3, 3}, std::vector<double>{nan, nan, nan, 0, INFINITY, 1, 0, 0, 5});
  Tensor labels = Tensor::from_vector({3}, std::vector<int64_t>{0, 1, 2});
  EXPECT_EQ(correct_topk(logits, labels, 1), 1);
  EXPECT_EQ(correct_topk(logits, labels, 3), 1);
  EXPECT_EQ(nonfinite_rows(logits), 2);
}

TEST_F(Faults, NonFiniteEvalIsNotBestAndTheEarlierCheckpointSurvivesRotation) {
  train::Config c = smoke("div", 3);
  c.checkpoint_hist = 1;  // rotation keeps one: it must stay the finite epoch 1
  train::TrainOptions opts = quiet_;
  opts.after_step = [](int64_t epoch, int64_t step, ConvNeXt& m) {
    if (epoch == 1 && step == 3) m.head_fc->bias.fill_(std::nan(""));  // the model diverges in epoch 2
    return false;
  };
  const std::string msg = error_of([&] { train::train(c, opts); });
  const fs::path dir = root_ / "div";
  EXPECT_CONTAINS(msg, "epoch 2: the evaluation gave non-finite outputs for 12 of 12 images");
  EXPECT_CONTAINS(msg, "nothing of this epoch is saved");
  EXPECT_CONTAINS(msg, "the run can go on from " + (dir / "last.safetensors").string() + " (end of epoch 1)");
  EXPECT_CONTAINS(msg, "the best model is " + (dir / "model_best.safetensors").string() + " (epoch 1");
  EXPECT_EQ(state_of(dir / "last.safetensors").epoch, 1);
  EXPECT_EQ(state_of(dir / "model_best.safetensors").best_epoch, 1);
  EXPECT_TRUE(fs::exists(dir / "checkpoint-1.safetensors"));
  EXPECT_FALSE(fs::exists(dir / "checkpoint-2.safetensors"));
  const auto rows = lines(dir / "summary.csv");
  ASSERT_EQ(rows.size(), 3u);  // header, epoch 1, epoch 2 (recorded as it was)
  EXPECT_CONTAINS(rows[2], "2,");
  EXPECT_CONTAINS(rows[2], ",nan,0,0,");  // eval loss nan, top-1 0, top-5 0: never 100%
}

// A run with a model EMA ranks its epochs by the EMA's top-1: the messages named that score
// "top-1" alone, the model's own being another figure in the log.
TEST_F(Faults, TheBestOfARunWithAModelEmaIsNamedAsTheEmas) {
  train::Config c = smoke("divema", 2);
  c.model_ema = true;
  train::TrainOptions opts = quiet_;
  opts.after_step = [](int64_t epoch, int64_t step, ConvNeXt& m) {
    if (epoch == 1 && step == 3) m.head_fc->bias.fill_(std::nan(""));
    return false;
  };
  const std::string msg = error_of([&] { train::train(c, opts); });
  const std::string best = "the best model is " +
                           (root_ / "divema" / "model_best.safetensors").string() +
                           " (epoch 1, EMA top-1 ";
  EXPECT_CONTAINS(msg, best);
  // and after a resume from a recovery checkpoint, whose state holds no evaluation; the loss of a
  // step after it names what of the epoch is lost
  c.recovery_interval = 1;
  opts.after_step = [](int64_t epoch, int64_t step, ConvNeXt& m) {
    if (epoch == 1 && step == 2) m.head_fc->bias.fill_(std::nan(""));
    return false;
  };
  c.resume = (root_ / "divema" / "last.safetensors").string();
  (void)error_of([&] { train::train(c, opts); });  // recovery.safetensors after step 1
  c.resume = (root_ / "divema" / "recovery.safetensors").string();
  c.recovery_interval = 0;
  opts.after_step = [](int64_t epoch, int64_t step, ConvNeXt& m) {
    if (epoch == 1 && step == 3) m.head_fc->bias.fill_(std::nan(""));
    return false;
  };
  const std::string again = error_of([&] { train::train(c, opts); });
  EXPECT_CONTAINS(again, best);
  EXPECT_CONTAINS(again, "nothing of this epoch after step 1 is saved");
}

// Without validation nothing looked at the weights an epoch ends with: an epoch whose last update
// made them non-finite (every loss of the epoch came before it, finite) was saved as last,
// checkpoint-N and, by its lower train loss, model_best; the next step's NaN loss then named these
// files as the ones to go on from, which resume and validate refuse. That epoch stops the run
// instead, as a non-finite evaluation does, and the finite epoch's files stay.
TEST_F(Faults, WithoutValidationNonFiniteWeightsAtAnEpochsEndAreNotSaved) {
  train::Config c = smoke("nowts", 3);
  c.val_split = "";
  c.checkpoint_hist = 1;  // rotation keeps one: it must stay the finite epoch 1
  train::TrainOptions opts = quiet_;
  opts.after_step = [](int64_t epoch, int64_t step, ConvNeXt& m) {
    if (epoch == 1 && step == 3) m.head_fc->bias.fill_(std::nan(""));  // epoch 2's last update
    return false;
  };
  const std::string msg = error_of([&] { train::train(c, opts); });
  const fs::path dir = root_ / "nowts";
  EXPECT_CONTAINS(msg, "epoch 2: its last update left 4 of the model's");
  EXPECT_CONTAINS(msg, "weights non-finite (NaN or Inf; the first in 'head.fc.bias')");
  EXPECT_CONTAINS(msg, "nothing of this epoch is saved");
  std::string last = "the run can go on from ";
  last += (dir / "last.safetensors").string();
  last += " (end of epoch 1)";
  EXPECT_CONTAINS(msg, last);
  std::string best = "the best model is ";
  best += (dir / "model_best.safetensors").string();
  best += " (epoch 1";
  EXPECT_CONTAINS(msg, best);
  EXPECT_EQ(state_of(dir / "last.safetensors").epoch, 1);
  EXPECT_EQ(state_of(dir / "model_best.safetensors").best_epoch, 1);
  EXPECT_TRUE(fs::exists(dir / "checkpoint-1.safetensors"));
  EXPECT_FALSE(fs::exists(dir / "checkpoint-2.safetensors"));
}

TEST(FaultsMetrics, RotationNeverDeletesTheLastFiniteCheckpoint) {
  using train::HistoryEntry;
  const double nan = std::nan("");
  // an unknown / non-finite score ranks last, whatever its epoch
  EXPECT_EQ(train::history_to_delete({{1, 40.0}, {2, nan}}, 1), (std::vector<int64_t>{2}));
  EXPECT_EQ(train::history_to_delete({{1, nan}, {2, 10.0}, {3, 90.0}}, 2), (std::vector<int64_t>{1}));
  // ties keep the earlier epoch (timm's stable sort)
  EXPECT_EQ(train::history_to_delete({{1, 50.0}, {2, 50.0}, {3, 20.0}}, 1), (std::vector<int64_t>{2, 3}));
}

// Without validation (val_split '') the lowest train loss is the best (timm's CheckpointSaver with
// decreasing=True for a loss); unknown scores still rank last, ties keep the earlier epoch.
TEST(FaultsMetrics, WithoutValidationRotationKeepsTheLowestTrainLosses) {
  const double nan = std::nan("");
  const auto loss = train::RankMetric::train_loss;
  EXPECT_EQ(train::history_to_delete({{1, 0.9}, {2, 0.4}, {3, 0.7}}, 2, loss),
            (std::vector<int64_t>{1}));
  EXPECT_EQ(train::history_to_delete({{1, nan}, {2, 0.5}}, 1, loss), (std::vector<int64_t>{1}));
  EXPECT_EQ(train::history_to_delete({{1, 0.5}, {2, 0.5}, {3, 0.8}}, 1, loss),
            (std::vector<int64_t>{2, 3}));
}

// Weights that are finite but so large that the activations overflow (NaN / Inf weights are
// refused as validate loads them: ValidateCommand.NonFiniteWeightsAreNamedWhenLoaded).
TEST_F(Faults, ValidateSaysTheOutputsAreNonFinite) {
  train::Config c = train::load_config(smoke_yaml());
  ConvNeXt model(train::model_config_from(c), 0);
  model.stages[0]->blocks[0]->fc1.weight.fill_(3e38);
  const std::string ckpt = (root_ / "nan.safetensors").string();
  train::save_checkpoint(ckpt, model, nullptr, train::TrainState{}, train::to_yaml(c));
  const CommandResult r = run_command("validate " + smoke_yaml() + " --checkpoint " + ckpt + " --device cpu");
  EXPECT_NE(r.rc, 0) << r.output;
  EXPECT_CONTAINS(r.output, "non-finite (NaN or Inf) for 12 of 12 images");
  EXPECT_CONTAINS(r.output, "though its weights are finite");
  EXPECT_EQ(r.output.find("100.000"), std::string::npos) << r.output;
}

// ---- 2. failed writes lose nothing -------------------------------------------------------------

TEST_F(Faults, AtomicWriterKeepsThePreviousFileOnEveryFailure) {
  const std::string path = (root_ / "a.txt").string();
  io::write_file_atomic(path, "first version\n");
  {
    FileSizeLimit limit(4);  // the disk is "full" after 4 bytes
    const std::string msg = error_of([&] { io::write_file_atomic(path, "second, longer version\n"); });
    EXPECT_CONTAINS(msg, "cannot write '" + path + "'");
    EXPECT_CONTAINS(msg, "File too large");
    EXPECT_CONTAINS(msg, "is unchanged");
    const std::string copy = error_of([&] { io::copy_file_atomic(path, (root_ / "b.txt").string()); });
    EXPECT_CONTAINS(copy, "b.txt");
  }
  EXPECT_EQ(slurp(path), "first version\n");
  EXPECT_FALSE(fs::exists(root_ / "b.txt"));
  EXPECT_TRUE(temp_files(root_).empty());

  // a read-only folder: creating the temporary file fails, the file stays
  fs::create_directories(root_ / "ro");
  io::write_file_atomic((root_ / "ro" / "x.yaml").string(), "x: 1\n");
  fs::permissions(root_ / "ro", fs::perms::owner_read | fs::perms::owner_exec | fs::perms::others_read |
                                    fs::perms::others_exec | fs::perms::group_read | fs::perms::group_exec);
  const std::string ro = run_unprivileged([&] {
    return error_of([&] { io::write_file_atomic((root_ / "ro" / "x.yaml").string(), "x: 2\n"); });
  });
  EXPECT_CONTAINS(ro, "cannot write '" + (root_ / "ro" / "x.yaml").string() + "': Permission denied");
  EXPECT_EQ(slurp(root_ / "ro" / "x.yaml"), "x: 1\n");
}

// A results file that is a symbolic link (to a shared results folder, say) is written through the
// link, as a shell's `>` writes: the rename replaced the link itself with a file and left the file
// it led to as it was.
TEST_F(Faults, AFileThatIsALinkIsWrittenThroughTheLink) {
  const fs::path real = root_ / "shared" / "results.csv", link = root_ / "results.csv";
  fs::create_directories(real.parent_path());
  io::write_file_atomic(real.string(), "a\n");
  fs::create_symlink("shared/results.csv", link);  // relative, as `ln -s` makes them
  io::write_file_atomic(link.string(), "b\n");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(real), "b\n");
  io::copy_file_atomic(real.string(), (root_ / "copy.csv").string());
  fs::create_symlink(root_ / "shared" / "new.csv",
                     root_ / "dangling.csv");  // its file not yet made
  io::write_file_atomic((root_ / "dangling.csv").string(), "c\n");
  EXPECT_TRUE(fs::is_symlink(root_ / "dangling.csv"));
  EXPECT_EQ(slurp(root_ / "shared" / "new.csv"), "c\n");
  EXPECT_TRUE(temp_files(root_).empty());
  EXPECT_TRUE(temp_files(root_ / "shared").empty());
}

// A loop of symbolic links (a -> b -> c -> a) was written as if one of its links were the file:
// the rename replaced that link with a regular file (b, here), where a shell's `>` says "Too many
// levels of symbolic links". The write is refused, naming the path, and the links stay.
TEST_F(Faults, ALoopOfLinksIsNotWritten) {
  for (const std::vector<std::string>& loop :
       {std::vector<std::string>{"a", "b"}, std::vector<std::string>{"a", "b", "c"}}) {
    const fs::path dir = root_ / str("loop", loop.size());
    fs::create_directories(dir);
    for (size_t i = 0; i < loop.size(); ++i)
      fs::create_symlink(loop[(i + 1) % loop.size()], dir / loop[i]);
    const std::string path = (dir / "a").string();
    EXPECT_CONTAINS(error_of([&] { io::write_file_atomic(path, "x\n"); }),
                    "cannot write '" + path + "': Too many levels of symbolic links");
    for (const std::string& name : loop) EXPECT_TRUE(fs::is_symlink(dir / name)) << name;
    EXPECT_TRUE(temp_files(dir).empty());
  }
}

// A training run whose experiment (or output, data_dir, ...) is not UTF-8 trained its first epoch
// and then failed the checkpoint ("invalid UTF-8 byte": the config is recorded as JSON), having
// made the run folder. It is refused naming the key, before any folder.
TEST_F(Faults, ATrainingRunRefusesAPathThatIsNotUtf8BeforeItsFolder) {
  train::Config c = smoke("caf\xe9", 1);
  EXPECT_CONTAINS(error_of([&] { train::train(c, quiet_); }),
                  "config: key 'experiment' is 'caf\\xe9', not UTF-8 text");
  EXPECT_FALSE(fs::exists(root_ / "caf\xe9"));
}

// A link to a file on another file system (a shared results folder) could not be written: the
// temporary file was made beside the link, and the rename to the file the link leads to failed
// with "Invalid cross-device link". The temporary file is made beside that file.
TEST_F(Faults, AFileThatIsALinkToAnotherFileSystemIsWrittenThroughTheLink) {
  const fs::path other = fs::path("/dev/shm") / root_.filename();
  std::error_code ec;
  struct stat here {
  }, there{};
  if (!fs::create_directories(other, ec) || ::stat(root_.c_str(), &here) != 0 ||
      ::stat(other.c_str(), &there) != 0 || here.st_dev == there.st_dev) {
    fs::remove_all(other, ec);
    GTEST_SKIP() << "needs /dev/shm on another file system than " << root_;
  }
  const fs::path real = other / "results.csv", link = root_ / "results.csv";
  fs::create_symlink(real, link);  // its file not yet made
  std::string error;
  try {
    io::write_file_atomic(link.string(), "a\n");
    io::write_file_atomic(link.string(), "b\n");  // replacing it
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_EQ(error, "");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(real), "b\n");
  EXPECT_TRUE(temp_files(root_).empty());
  EXPECT_TRUE(temp_files(other).empty());
  fs::remove_all(other, ec);
}

// A file whose name is near the file system's limit (255 bytes) could not be written: its
// temporary file's name, the name plus ".tmp.<pid>.<n>", was too long ("File name too long" for
// a name the user may use). The temporary file's name is cut to fit.
TEST_F(Faults, AFileNamedNearTheLengthLimitIsWritten) {
  for (const size_t length : {size_t{240}, size_t{255}}) {
    const fs::path path = root_ / (std::string(length - 4, 'w') + ".csv");
    std::string error;
    try {
      io::write_file_atomic(path.string(), "a\n");
      io::write_file_atomic(path.string(), "b\n");  // replacing it
    } catch (const Error& e) {
      error = e.what();
    }
    EXPECT_EQ(error, "") << length;
    EXPECT_EQ(slurp(path), "b\n") << length;
  }
  EXPECT_TRUE(temp_files(root_).empty());
}

// A file replaced by the atomic writer keeps its permissions: a results file or config kept
// private (0600) became 0644 (the new file's mode), readable by every user.
TEST_F(Faults, AReplacedFileKeepsItsPermissions) {
  const std::string path = (root_ / "private.csv").string();
  io::write_file_atomic(path, "a\n");
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  io::write_file_atomic(path, "b\n");
  EXPECT_EQ(fs::status(path).permissions(), fs::perms::owner_read | fs::perms::owner_write);
  const std::string copy = (root_ / "copy.csv").string();
  io::write_file_atomic(copy, "c\n");
  fs::permissions(copy, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  io::copy_file_atomic(path, copy);
  EXPECT_EQ(fs::status(copy).permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  EXPECT_EQ(slurp(copy), "b\n");
}

// A results file in a sticky folder (like /tmp, mode 1777) that another user owns cannot be
// replaced: the rename at the end of the write fails with EPERM. The early check of an output
// file used to pass it (the folder is writable), so the whole evaluation ran before the error; it
// is refused first, naming the file and its owner, and the atomic writer says why when it happens.
TEST(FaultsStickyFolder, OnlyTheOwnerOfAFileTheFolderOrRootMayReplaceItInAStickyFolder) {
  const mode_t sticky = S_IFDIR | S_ISVTX | 0777, plain = S_IFDIR | 0777;
  EXPECT_TRUE(io::sticky_folder_refuses_replace(sticky, 0, 0, 1000));      // /tmp, root's file
  EXPECT_TRUE(io::sticky_folder_refuses_replace(sticky, 0, 1001, 1000));   // another user's
  EXPECT_FALSE(io::sticky_folder_refuses_replace(sticky, 0, 1000, 1000));  // our own file
  EXPECT_FALSE(io::sticky_folder_refuses_replace(sticky, 1000, 0, 1000));  // our own folder
  EXPECT_FALSE(io::sticky_folder_refuses_replace(sticky, 0, 1001, 0));     // root
  EXPECT_FALSE(io::sticky_folder_refuses_replace(plain, 0, 0, 1000));      // no sticky bit
}

// An output path under a file ("--out afile/w.safetensors") said "the folder afile is not a
// folder" (a new user's report); it says the path is a file.
TEST_F(Faults, AnOutputUnderAFileSaysThatIsAFile) {
  const fs::path file = root_ / "afile";
  io::write_file_atomic(file.string(), "a file\n");
  const std::string msg = error_of([&] {
    train::check_output_file((file / "w.safetensors").string(), "export: --out", "the weights");
  });
  EXPECT_CONTAINS(msg, "'" + file.string() + "' is a file, not a folder");
  EXPECT_EQ(msg.find("is not a folder"), std::string::npos) << msg;
}

TEST_F(Faults, AnotherUsersFileInAStickyFolderIsRefusedBeforeTheWork) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: a file of another user and a run as nobody";
  const fs::path dir = root_ / "tmp";
  fs::create_directories(dir);
  ASSERT_EQ(::chmod(dir.c_str(), 01777), 0);
  const std::string path = (dir / "r.csv").string();
  io::write_file_atomic(path, "old\n");
  ASSERT_EQ(::chown(path.c_str(), 0, 0), 0);
  const std::string early = run_unprivileged([&] {
    return error_of(
        [&] { train::check_output_file(path, "validate: --results-file", "the results"); });
  });
  EXPECT_CONTAINS(early, "validate: --results-file " + path +
                             " belongs to another user (uid 0) in the sticky folder " +
                             dir.string() + ", so it cannot be replaced; give another file name");
  const std::string late =
      run_unprivileged([&] { return error_of([&] { io::write_file_atomic(path, "new\n"); }); });
  EXPECT_CONTAINS(late, "cannot write '" + path + "': Operation not permitted");
  EXPECT_CONTAINS(late, "belongs to another user (uid 0) in the sticky folder " + dir.string());
  EXPECT_CONTAINS(late, "'" + path + "' is unchanged");
  EXPECT_EQ(slurp(path), "old\n");
  EXPECT_TRUE(temp_files(dir).empty());
  // our own file in the same folder is fine
  const std::string own = (dir / "own.csv").string();
  EXPECT_EQ(run_unprivileged([&] {
              return error_of([&] {
                train::check_output_file(own, "validate: --results-file", "the results");
                io::write_file_atomic(own, "a\n");
                train::check_output_file(own, "validate: --results-file", "the results");
                io::write_file_atomic(own, "b\n");
              });
            }),
            "");
  EXPECT_EQ(slurp(own), "b\n");
}

// A results file the user made read-only (chmod a-w) was replaced all the same (a rename needs
// only the folder to be writable), where a shell's `>` or Python's open(..., "w") refuse it. It is
// refused before the work, naming the file. Root writes any file, as with those.
TEST_F(Faults, AReadOnlyOutputFileIsNotReplaced) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: a file of nobody's, and a run as nobody";
  const std::string path = (root_ / "r.csv").string();
  io::write_file_atomic(path, "kept\n");
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
  fs::permissions(path, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const std::string msg = run_unprivileged([&] {
    return error_of(
        [&] { train::check_output_file(path, "validate: --results-file", "the results"); });
  });
  EXPECT_CONTAINS(msg, "validate: --results-file " + path +
                           " is read-only (Permission denied): it is not replaced");
  EXPECT_EQ(
      error_of([&] { train::check_output_file(path, "validate: --results-file", "the results"); }),
      "");  // root
  EXPECT_EQ(slurp(path), "kept\n");
}

// export / infer / validate into a run folder under a name its trainer manages, before that file
// exists (checkpoint-9.safetensors, recovery.safetensors): accepted, then rotated or deleted by
// the run's next resume without a word. Refused whether the file exists or not.
TEST_F(Faults, ARunFoldersNamesAreRefusedBeforeTheyExist) {
  const fs::path dir = root_ / "run";
  fs::create_directories(dir);
  io::write_file_atomic((dir / "run.json").string(), "{}\n");
  // (curves.png: `plot A --out B/curves.png` replaced run B's curves and their data, unsaid)
  for (const char* name : {"checkpoint-9.safetensors", "recovery.safetensors", "summary.csv",
                           "curves.png", "curves.dat"}) {
    const std::string path = (dir / name).string();
    EXPECT_CONTAINS(
        error_of([&] { train::check_output_file(path, "export: --out", "the weights"); }),
        "export: --out " + path + " is a file of the training run in " + dir.string());
    EXPECT_FALSE(fs::exists(path));
  }
  // outside a run folder the same names are free
  EXPECT_EQ(error_of([&] {
              train::check_output_file((root_ / "checkpoint-9.safetensors").string(),
                                       "export: --out", "the weights");
            }),
            "");
}

// A run folder deleted (or moved away) while the run trains: the epoch's end failed "cannot write
// 'RUN/summary.csv': No such file or directory (creating the temporary file ...); 'RUN/summary.csv'
// is unchanged", as if the file were still there, and the epoch's checkpoint was lost with the run.
// The folder is made again for that epoch's summary.csv and checkpoints, and the run stops with an
// error that names the folder and the checkpoint to resume (a run folder gone in the last epoch:
// the run ends normally, its results saved). The writer names a missing folder as such too.
TEST_F(Faults, ARunFolderDeletedDuringTheRunSaysSoAndSavesTheEpoch) {
  const std::string missing = (root_ / "nowhere" / "summary.csv").string();
  const std::string msg_file = error_of([&] { io::write_file_atomic(missing, "x\n"); });
  EXPECT_CONTAINS(msg_file, "cannot write '" + missing + "': its folder '" +
                                (root_ / "nowhere").string() + "' does not exist");
  EXPECT_EQ(msg_file.find("unchanged"), std::string::npos) << msg_file;

  train::Config c = smoke("gone", 3);
  const fs::path dir = root_ / "gone";
  const auto delete_in = [&dir](int64_t epoch) {
    return [&dir, epoch](int64_t e, int64_t s, ConvNeXt&) {
      if (e == epoch && s == 1) fs::remove_all(dir);
      return false;
    };
  };
  train::TrainOptions o = quiet_;
  o.after_step = delete_in(1);  // in epoch 2 of 3
  const std::string msg = error_of([&] { train::train(c, o); });
  EXPECT_CONTAINS(msg, "epoch 2: the run folder " + dir.string() +
                           " disappeared during the run (deleted or moved away)");
  EXPECT_CONTAINS(msg, "`haargrad train " + (dir / "args.yaml").string() + " --resume " +
                           (dir / "last.safetensors").string() + "`");
  EXPECT_EQ(msg.find("unchanged"), std::string::npos) << msg;
  EXPECT_EQ(state_of(dir / "last.safetensors").epoch, 2);
  EXPECT_EQ(lines(dir / "summary.csv").size(), 3u);   // the header, epochs 1 and 2
  EXPECT_FALSE(fs::exists(dir / train::kRunMarker));  // no run's folder now
  // the saved epoch goes on as the message says (in a new run folder: this one belongs to no run)
  train::Config again = train::load_config((dir / "args.yaml").string());
  again.resume = (dir / "last.safetensors").string();
  const train::TrainResult resumed = train::train(again, quiet_);
  EXPECT_NE(resumed.run_dir, dir.string());
  EXPECT_EQ(state_of(fs::path(resumed.run_dir) / "last.safetensors").epoch, 3);

  // gone in the last epoch: nothing is left to run, the run ends with its results saved
  train::Config last = smoke("gone_last", 2);
  const fs::path last_dir = root_ / "gone_last";
  train::TrainOptions at_end = quiet_;
  at_end.after_step = [&last_dir](int64_t e, int64_t s, ConvNeXt&) {
    if (e == 1 && s == 1) fs::remove_all(last_dir);
    return false;
  };
  train::train(last, at_end);
  EXPECT_EQ(state_of(last_dir / "last.safetensors").epoch, 2);
}

TEST_F(Faults, DiskFullAtTheSecondSaveKeepsSummaryAndArgs) {
  train::Config c = smoke("full", 2);
  train::TrainOptions first = quiet_;
  first.stop_after_epoch = 1;
  train::train(c, first);
  const fs::path dir = root_ / "full";
  const std::string summary = slurp(dir / "summary.csv"), args = slurp(dir / "args.yaml"),
                    last = slurp(dir / "last.safetensors");
  ASSERT_EQ(lines(dir / "summary.csv").size(), 2u);

  c.resume = (dir / "last.safetensors").string();
  std::string msg;
  {
    FileSizeLimit full(16);  // no file can grow past 16 bytes: every save of epoch 2 fails
    msg = error_of([&] { train::train(c, quiet_); });
  }
  EXPECT_CONTAINS(msg, "cannot write '" + (dir / "summary.csv").string() + "': File too large");
  EXPECT_EQ(slurp(dir / "summary.csv"), summary) << "summary.csv must keep epoch 1";
  EXPECT_EQ(slurp(dir / "args.yaml"), args);
  EXPECT_EQ(slurp(dir / "last.safetensors"), last);
  EXPECT_TRUE(temp_files(dir).empty());

  {
    FileSizeLimit small(16 << 10);  // room for summary.csv and the log, not for a checkpoint
    msg = error_of([&] { train::train(c, quiet_); });
  }
  EXPECT_CONTAINS(msg, "cannot write '" + (dir / "last.safetensors").string() + "': File too large");
  EXPECT_EQ(slurp(dir / "last.safetensors"), last) << "the epoch-1 checkpoint must stay loadable";
  EXPECT_EQ(slurp(dir / "args.yaml"), args);
  EXPECT_EQ(lines(dir / "summary.csv").size(), 3u);  // epoch 2 recorded before its checkpoint failed
  EXPECT_TRUE(temp_files(dir).empty());

  // with room again, the resume redoes epoch 2 from the intact checkpoint
  train::train(c, quiet_);
  EXPECT_EQ(lines(dir / "summary.csv").size(), 3u);
  EXPECT_EQ(state_of(dir / "last.safetensors").epoch, 2);
}

// A new run whose args.yaml cannot be written (a full disk): the folder kept its run.json alone and
// the next run took NAME-2; the message said args.yaml "is unchanged", a file that never was. The
// folder is given back as for any failure before the first step.
TEST_F(Faults, ARunWhoseArgsYamlCannotBeWrittenGivesItsFolderBack) {
  train::Config c = smoke("no_args", 1);
  const fs::path dir = root_ / "no_args";
  std::string msg;
  {
    FileSizeLimit full(256);  // room for the run's marker, not for args.yaml (~3 KiB)
    msg = error_of([&] { train::train(c, quiet_); });
  }
  EXPECT_CONTAINS(msg, "cannot write '" + (dir / "args.yaml").string() + "': File too large");
  EXPECT_CONTAINS(msg, "'" + (dir / "args.yaml").string() + "' was not created");
  EXPECT_EQ(msg.find("unchanged"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(dir)) << "the claimed folder must be given back";
  EXPECT_EQ(train::train(c, quiet_).run_dir, dir.string());  // the next run takes the name
}

// log.txt that cannot grow (a full disk) while the checkpoints still fit: the run trained and saved
// its epoch, each log line failure was a warning, and then the program's last line (appended after
// training) failed the command with exit status 1, as if nothing were saved. It is a warning too.
TEST_F(Faults, ALogThatCannotTakeTheLastLineLeavesTheRunSuccessful) {
  train::Config c = smoke("log_full", 1);
  train::train(c, quiet_);
  const fs::path dir = root_ / "log_full";
  constexpr rlim_t kLimit = 300 << 10;  // room for a checkpoint (~110 KiB), not for more log
  fs::resize_file(dir / "log.txt", kLimit);
  CommandResult r{-1, ""};
  {
    FileSizeLimit full(kLimit);
    r = run_command("train " + (dir / "args.yaml").string() + " --plain --epochs 2 --resume " +
                    (dir / "last.safetensors").string());
  }
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_CONTAINS(r.output, "best_top1 ");
  EXPECT_CONTAINS(r.output,
                  "cannot append to '" + (dir / "log.txt").string() + "': File too large");
  EXPECT_EQ(state_of(dir / "last.safetensors").epoch, 2);
  EXPECT_EQ(lines(dir / "summary.csv").size(), 3u);
}

// A resume in its run's folder ignores output and experiment (they name where a new run goes):
// the log called them "settings of this session only: experiment ... -> ...", as if this session
// wrote there. It says they are not used and where the run goes on.
TEST_F(Faults, AResumeInPlaceSaysItsOutputAndExperimentAreNotUsed) {
  train::Config c = smoke("here", 2);
  train_until(c, 1);
  const fs::path dir = root_ / "here";
  c.resume = (dir / "last.safetensors").string();
  c.output = (root_ / "elsewhere").string();
  c.experiment = "zz";
  EXPECT_EQ(train::train(c, quiet_).run_dir, dir.string());
  EXPECT_EQ(state_of(dir / "last.safetensors").epoch, 2);
  EXPECT_FALSE(fs::exists(root_ / "elsewhere"));
  const std::string log = slurp(dir / "log.txt");
  EXPECT_CONTAINS(log, "resume: output '" + c.output +
                           "', experiment 'zz' not used: a resume goes "
                           "on in its run's folder, " +
                           dir.string());
  EXPECT_EQ(log.find("settings of this session only"), std::string::npos) << log;
  // the run's own output spelt otherwise (a trailing slash, "/./") is the run's: nothing said
  c.epochs = 3;
  c.resume = (dir / "last.safetensors").string();
  c.output = root_.string() + "/./";
  c.experiment = "here";
  train::train(c, quiet_);
  const std::string again = slurp(dir / "log.txt").substr(log.size());
  EXPECT_EQ(again.find("not used"), std::string::npos) << again;
  // the run's own experiment with the -N a taken name got, and a nested experiment: the folders
  // they name (it said "experiment 'here' not used" at every resume of here-2, --resume auto's)
  for (const std::string name : {"here", "nest/sub"}) {
    train::Config n = smoke(name, 2);
    train::TrainOptions stop = quiet_;
    stop.stop_after_epoch = 1;
    const fs::path run = train::train(n, stop).run_dir;
    EXPECT_EQ(run.filename().string(), name == "here" ? "here-2" : "sub");
    n.resume = (run / "last.safetensors").string();
    train::train(n, quiet_);
    EXPECT_EQ(state_of(run / "last.safetensors").epoch, 2) << name;
    const std::string resumed = slurp(run / "log.txt");
    EXPECT_EQ(resumed.find("not used"), std::string::npos) << resumed;
  }
}

// A resume whose class folders do not give the labels the checkpoint's run gave says so: a folder
// renamed, and a run of haargrad before timm's class order (byte-wise: "10" before "2"), whose
// labels that order now numbers otherwise.
TEST_F(Faults, AResumeWhoseClassesAreNumberedOtherwiseSaysSo) {
  for (const char* split : {"train", "validation"})
    for (const char* cls : {"2", "10"})
      for (int i = 0; i < 4; ++i) write_image(str(split, "/", cls, "/", i, ".png"));
  train::Config c = smoke("classes", 2);
  c.dataset = "image_folder";
  c.data_dir = (root_ / "images").string();
  c.num_classes = 2;
  train_until(c, 1);
  const fs::path last = root_ / "classes" / "last.safetensors";
  // the checkpoint as a run that numbered its classes as `names` wrote it
  const auto recorded_as = [&](const std::vector<std::string>& names) {
    safetensors::File f = safetensors::load(last.string());
    nlohmann::json state = nlohmann::json::parse(f.metadata.at("state"));
    ASSERT_EQ(state.at("train_classes"), train::class_names_tag({"2", "10"}));  // timm's order
    state["train_classes"] = train::class_names_tag(names);
    f.metadata["state"] = state.dump();
    safetensors::save(last.string(), {f.tensors.begin(), f.tensors.end()}, f.metadata);
  };
  const auto resume_log = [&](int64_t epochs) {
    const size_t before = slurp(root_ / "classes" / "log.txt").size();
    train::Config r = c;
    r.epochs = epochs;
    r.resume = last.string();
    train_until(r, epochs);
    return slurp(root_ / "classes" / "log.txt").substr(before);
  };
  recorded_as({"10", "2"});
  // validate and a fine-tuning start from it say so too: their labels are another order's
  const CommandResult v = run_command("validate --checkpoint " + last.string());
  EXPECT_EQ(v.rc, 0) << v.output;
  EXPECT_CONTAINS(v.output, "its run numbered the classes in byte-wise order");
  train::Config ft = smoke("finetune", 1);
  ft.dataset = c.dataset;
  ft.data_dir = c.data_dir;
  ft.num_classes = 2;
  ft.initial_checkpoint = last.string();
  train::train(ft, quiet_);
  EXPECT_CONTAINS(slurp(root_ / "finetune" / "log.txt"),
                  "initial_checkpoint " + last.string() + ": its run numbered the classes");
  std::string said = resume_log(2);
  EXPECT_CONTAINS(said, "its run numbered the classes in byte-wise order");
  EXPECT_EQ(said.find("a class folder was renamed"), std::string::npos) << said;
  recorded_as({"2", "11"});
  said = resume_log(3);
  EXPECT_CONTAINS(said, "a class folder was renamed, added or removed");
  EXPECT_EQ(said.find("byte-wise"), std::string::npos) << said;
  // validate of a run on other class folders (its class names recorded) names the first label
  // that stands for another class; it scored them unsaid
  safetensors::File f = safetensors::load(last.string());
  nlohmann::json state = nlohmann::json::parse(f.metadata.at("state"));
  state["class_names"] = {"2", "11"};
  f.metadata["state"] = state.dump();
  safetensors::save(last.string(), {f.tensors.begin(), f.tensors.end()}, f.metadata);
  const CommandResult other = run_command("validate --checkpoint " + last.string());
  EXPECT_EQ(other.rc, 0) << other.output;
  EXPECT_CONTAINS(other.output,
                  "the class folders here are not those its run trained on (label 1 is '11' in "
                  "its run and '10' here)");
  EXPECT_EQ(other.output.find("byte-wise"), std::string::npos) << other.output;
}

TEST_F(Faults, ReadOnlyRunFolderFailsCleanlyAndKeepsItsFiles) {
  train::Config c = smoke("ro", 2);
  train_until(c, 1);
  const fs::path dir = root_ / "ro";
  const std::string summary = slurp(dir / "summary.csv"), args = slurp(dir / "args.yaml");
  fs::permissions(dir / "log.txt", fs::perms::all);  // the log can be appended, the folder not written
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                           fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  const CommandResult r = run_command_unprivileged("train " + (dir / "args.yaml").string() + " --plain --resume " +
                                                   (dir / "last.safetensors").string());
  EXPECT_EQ(r.rc, 1) << r.output;
  // found before any training (it used to surface at the epoch's end, at summary.csv)
  EXPECT_CONTAINS(r.output, "haargrad: error: resume: the run folder " + dir.string() +
                                " cannot be written (Permission denied)");
  EXPECT_EQ(slurp(dir / "summary.csv"), summary);
  EXPECT_EQ(slurp(dir / "args.yaml"), args);
  EXPECT_TRUE(temp_files(dir).empty());
}

// ---- 3. a run folder has an identity -----------------------------------------------------------

TEST_F(Faults, ReusedExperimentNameAfterAnInterruptedEpoch1GetsANewFolder) {
  train::Config c = smoke("s", 2);
  train::TrainOptions stop = quiet_;
  stop.after_step = interrupt_at(0, 2);  // Ctrl-C in epoch 1: no summary.csv yet
  const train::TrainResult first = train::train(c, stop);
  ASSERT_TRUE(first.interrupted);
  const fs::path dir = root_ / "s";
  ASSERT_TRUE(fs::exists(dir / "recovery.safetensors"));
  ASSERT_FALSE(fs::exists(dir / "summary.csv"));
  const std::string args = slurp(dir / "args.yaml"), log = slurp(dir / "log.txt"),
                    recovery = slurp(dir / "recovery.safetensors");

  const train::TrainResult second = train::train(c, quiet_);  // the same experiment, no --resume
  EXPECT_EQ(fs::path(second.run_dir), root_ / "s-2");
  // and its log says why the folder is s-2 (it was unsaid)
  EXPECT_CONTAINS(slurp(root_ / "s-2" / "log.txt"), "run folder " + (root_ / "s-2").string() +
                                                        " (" + dir.string() +
                                                        " holds another run's files)");
  EXPECT_EQ(slurp(dir / "args.yaml"), args);
  EXPECT_EQ(slurp(dir / "log.txt"), log);
  EXPECT_EQ(slurp(dir / "recovery.safetensors"), recovery);
  EXPECT_TRUE(fs::exists(root_ / "s-2" / train::kRunMarker));

  // an empty folder of that name (made by hand) is free; a non-empty one without a marker is not
  fs::create_directories(root_ / "e");
  EXPECT_EQ(fs::path(train::claim_run_folder(root_, "e")), root_ / "e");
  fs::create_directories(root_ / "f");
  std::ofstream(root_ / "f" / "notes.txt") << "mine\n";
  EXPECT_EQ(fs::path(train::claim_run_folder(root_, "f")), root_ / "f-2");
  // a file of that name is taken too (it was "cannot create the run folder 'g': File exists")
  std::ofstream(root_ / "g") << "a file\n";
  EXPECT_EQ(fs::path(train::claim_run_folder(root_, "g")), root_ / "g-2");
  EXPECT_EQ(slurp(root_ / "g"), "a file\n");
}

// An empty folder of the run's name that another user owns (a shared output root such as /tmp)
// cannot take the run's marker: the run stopped with "cannot claim the run folder ...: Permission
// denied". Like a folder that holds files, it is taken: the run gets the next -N name.
TEST_F(Faults, AnEmptyFolderOfAnotherUserIsTakenAndTheRunGetsTheNextName) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: a folder of another user and a run as nobody";
  const fs::path out = root_ / "shared";
  fs::create_directories(out / "smoke");
  ASSERT_EQ(::chmod(out.c_str(), 01777), 0);  // as /tmp
  const std::string claimed = run_unprivileged([&] {
    std::string dir;
    const std::string msg = error_of([&] { dir = train::claim_run_folder(out, "smoke").string(); });
    return msg.empty() ? dir : msg;
  });
  EXPECT_EQ(claimed, (out / "smoke-2").string());
  EXPECT_TRUE(fs::is_empty(out / "smoke"));
}

// An output root that is a file, or lies under one, said "cannot create the output folder 'f':
// Not a directory"; the error names the file that is in the way.
TEST_F(Faults, AnOutputRootUnderAFileNamesTheFile) {
  std::ofstream(root_ / "runs") << "a file\n";
  for (const fs::path& out : {root_ / "runs", root_ / "runs" / "sub"}) {
    const std::string msg = error_of([&] { train::claim_run_folder(out, "smoke"); });
    EXPECT_CONTAINS(msg, "cannot create the output folder '" + out.string() + "': '" +
                             (root_ / "runs").string() + "' is a file, not a folder");
  }
  EXPECT_EQ(slurp(root_ / "runs"), "a file\n");
  // resume auto there said "no run of experiment 'smoke' (runs/smoke ...) has a last.safetensors"
  EXPECT_CONTAINS(
      error_of([&] { train::pick_resume_checkpoint(root_ / "runs", "smoke", 3); }),
      "resume auto: the output " + (root_ / "runs").string() + " is a file, not a folder of runs");
  // a symbolic link whose target is gone said "File exists"
  fs::create_symlink(root_ / "gone", root_ / "link");
  const std::string msg = error_of([&] { train::claim_run_folder(root_ / "link", "smoke"); });
  EXPECT_CONTAINS(msg, "'" + (root_ / "link").string() + "' is a symbolic link to '" +
                           (root_ / "gone").string() + "', which does not exist");
}

// One folder, one run: a run folder inside another run's (an --output or an experiment name
// leading into it) was made, then moved, copied or deleted with the outer run, and found by a
// resume auto of the outer root. Refused, naming the run's folder.
TEST_F(Faults, NoRunFolderInsideAnotherRunsFolder) {
  const fs::path run = train::claim_run_folder(root_, "outer");
  for (const auto& [out, name] : std::vector<std::pair<fs::path, std::string>>{
           {run, "smoke"}, {root_, "outer/nested"}, {run / "deeper", "smoke"}}) {
    const std::string msg = error_of([&] { train::claim_run_folder(out, name); });
    EXPECT_CONTAINS(
        msg, hg::str("'", run.string(), "' is a run's folder (it holds ", train::kRunMarker, ")"));
  }
  EXPECT_FALSE(fs::exists(run / "smoke"));
  EXPECT_FALSE(fs::exists(run / "deeper"));
  EXPECT_FALSE(fs::exists(run / "nested"));
  // a run.json of another program (a common name) is no run's marker: the folder is free
  fs::create_directories(root_ / "project");
  std::ofstream(root_ / "project" / train::kRunMarker) << "{\"job\": 7}\n";
  EXPECT_EQ(fs::path(train::claim_run_folder(root_ / "project", "smoke")),
            root_ / "project" / "smoke");
}

TEST_F(Faults, ResumeAutoPicksTheNewestUnfinishedRunOfTheFamily) {
  train::Config c = smoke("s", 1);
  train::train(c, quiet_);  // s: finished
  train::TrainOptions stop = quiet_;
  stop.after_step = interrupt_at(0, 2);
  ASSERT_TRUE(train::train(c, stop).interrupted);  // s-2: interrupted in epoch 1
  train::train(c, quiet_);  // s-3: finished, and the newest
  train::Config other = smoke("t", 1);
  train::train(other, stop);  // another family: not a candidate

  c.resume = "auto";
  const train::TrainResult r = train::train(c, quiet_);
  EXPECT_EQ(fs::path(r.run_dir), root_ / "s-2");
  EXPECT_EQ(lines(root_ / "s-2" / "summary.csv").size(), 2u);
  EXPECT_FALSE(fs::exists(root_ / "s-2" / "recovery.safetensors"));
  const std::string log = slurp(root_ / "s-2" / "log.txt");
  EXPECT_CONTAINS(log, "resume auto: " + (root_ / "s-2" / "recovery.safetensors").string());
  EXPECT_CONTAINS(log, "stopped in epoch 1 after step 2");
  EXPECT_CONTAINS(log, "the newest run of experiment 's'");
  EXPECT_CONTAINS(log, "that stopped before its own end");
  EXPECT_CONTAINS(log, "s-3 (finished: 1 of 1 epochs)");
  const std::string auto_line = log.substr(log.find("resume auto:"), log.find('\n', log.find("resume auto:")) - log.find("resume auto:"));
  EXPECT_EQ(auto_line.find(" t ("), std::string::npos) << auto_line;  // another experiment's run

  // everything finished: the newest is named as such, and nothing is trained
  const std::string s3 = slurp(root_ / "s-3" / "summary.csv");
  const train::TrainResult again = train::train(c, quiet_);
  EXPECT_EQ(fs::path(again.run_dir), root_ / "s-2");  // s-2 finished last
  EXPECT_CONTAINS(slurp(root_ / "s-2" / "log.txt"), "no run of experiment 's'");
  EXPECT_EQ(slurp(root_ / "s-3" / "summary.csv"), s3);
}

// --resume auto without an experiment name looks at every run under the output root: it picked
// an unrelated one (the quick start's), which the resume then refused ("settings differ"). Only
// runs of this session's settings are candidates; the others are named as left alone.
TEST_F(Faults, ResumeAutoWithoutAnExperimentTakesOnlyRunsOfItsSettings) {
  train::Config other = smoke("quickstart", 1);
  train::train(other, quiet_);  // another run's settings, finished
  train::Config c = smoke("", 2);
  c.weight_decay = 0.01;  // a key that shapes the results
  c.resume = "auto";
  train::TrainOptions stop = quiet_;
  stop.stop_after_epoch = 1;
  const train::TrainResult first = train::train(c, stop);
  ASSERT_NE(fs::path(first.run_dir), root_ / "quickstart");
  const std::string said = slurp(fs::path(first.run_dir) / "log.txt");
  EXPECT_CONTAINS(
      said, "a new run starts; runs of other settings, left alone: quickstart (weight_decay ");
  const train::TrainResult again = train::train(c, quiet_);  // the same command relaunched
  EXPECT_EQ(again.run_dir, first.run_dir);
  EXPECT_EQ(lines(fs::path(first.run_dir) / "summary.csv").size(), 3u);
  EXPECT_EQ(lines(root_ / "quickstart" / "summary.csv").size(), 2u);  // left as it was
}

// --resume auto with a shorter --epochs than the run finished: the pick said "finished: 2 of 1
// epochs". It says how many the run did and what this session asks for; the session trains
// nothing, says so, and leaves the run's checkpoints, summary.csv and args.yaml as they were.
TEST_F(Faults, ResumeAutoWithFewerEpochsThanTheRunDidTrainsNothing) {
  train::Config c = smoke("long", 2);
  c.checkpoint_hist = 2;
  train::train(c, quiet_);
  const fs::path dir = root_ / "long";
  std::map<std::string, std::string> before;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename() != "log.txt") before[e.path().filename().string()] = slurp(e.path());
  c.resume = "auto";
  c.epochs = 1;
  const train::TrainResult r = train::train(c, quiet_);
  EXPECT_EQ(fs::path(r.run_dir), dir);
  const std::string log = slurp(dir / "log.txt");
  EXPECT_CONTAINS(log, "(finished: 2 epochs done (this session asks for 1), written ");
  EXPECT_EQ(log.find("2 of 1"), std::string::npos) << log;
  EXPECT_CONTAINS(log, "nothing to train: this run has done 2 epochs, more than epochs 1");
  EXPECT_CONTAINS(log, "its checkpoints and summary.csv are left as they are");
  std::map<std::string, std::string> after;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename() != "log.txt") after[e.path().filename().string()] = slurp(e.path());
  EXPECT_EQ(after, before);  // nothing written, nothing removed (curves.png included)
}

// ---- 4. the console bar fits the terminal --------------------------------------------------------

TEST(FaultsConsole, BarNeverExceedsTheWidth) {
  train::BarState s{"epoch 12/300", 1234, 46875, 754.0, "loss 2.3456 lr 0.000123 12345 img/s"};
  for (int width : {40, 80, 200}) {
    const std::string line = train::format_bar(s, width);
    EXPECT_LE(line.size(), static_cast<size_t>(width - 1)) << width << ": " << line;
    EXPECT_EQ(line.find('\n'), std::string::npos);
    EXPECT_CONTAINS(line, "epoch 12/300");
    EXPECT_CONTAINS(line, "1234/46875");
  }
  EXPECT_CONTAINS(train::format_bar(s, 200), "12345 img/s");  // room for everything
  EXPECT_CONTAINS(train::format_bar(s, 80), "[");             // still a bar
  for (int width = 2; width <= 220; ++width)
    EXPECT_LE(train::format_bar(s, width).size(), static_cast<size_t>(width - 1)) << width;
}

TEST(FaultsConsole, BarFollowsTheTerminalThroughAResize) {
  // A pseudo-terminal whose window size we set: what the Console writes is read back from the
  // master side, split at "\r" / "\n" with the clear-line escape removed.
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(grantpt(master), 0);
  ASSERT_EQ(unlockpt(master), 0);
  const int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(slave, 0);
  fcntl(master, F_SETFL, O_NONBLOCK);
  FILE* out = fdopen(slave, "w");
  auto set_width = [&](int cols) {
    winsize ws{};
    ws.ws_row = 24;
    ws.ws_col = static_cast<unsigned short>(cols);
    ioctl(slave, TIOCSWINSZ, &ws);
  };
  auto longest_line = [&] {
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = read(master, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
    for (size_t at; (at = text.find("\033[2K")) != std::string::npos;) text.erase(at, 4);
    size_t longest = 0, run = 0;
    for (char ch : text) run = (ch == '\r' || ch == '\n') ? 0 : run + 1, longest = std::max(longest, run);
    return longest;
  };
  const std::string suffix = "loss 2.3456 lr 0.000123 12345 img/s";
  {
    train::Console console("", false, out);
    ASSERT_TRUE(console.is_terminal());
    set_width(40);
    console.start_bar("epoch 3/300", 5000);
    console.update_bar(1, suffix);
    console.update_bar(2, suffix);
    EXPECT_LE(longest_line(), 39u);
    set_width(200);  // the window grows: the next draw uses it
    console.update_bar(3, suffix);
    const size_t wide = longest_line();
    EXPECT_GT(wide, 40u);
    EXPECT_LE(wide, 199u);
    set_width(80);
    console.update_bar(4, suffix);
    console.end_bar();
    EXPECT_LE(longest_line(), 79u);
  }
  fclose(out);
  close(master);
}

// ---- 5. a resume that changes the schedule says so and records it -------------------------------

// Both ways of stepping the schedule: per update, the summary's lr of the epoch before the change
// is the one its own schedule set after its last update (a rerun took the changed schedule's).
TEST_F(Faults, ScheduleChangedAtResumeIsRecordedAndArgsYamlRerunsIt) {
  for (const bool on_updates : {false, true}) {
    SCOPED_TRACE(on_updates ? "sched_on_updates" : "per epoch");
    const std::string name = on_updates ? "u" : "a";
    train::Config c = smoke(name, 2);
    c.drop_path = 0.1;
    c.sched_on_updates = on_updates;
    train::TrainOptions first = quiet_;
    first.stop_after_epoch = 1;
    train::train(c, first);
    const fs::path dir = root_ / name;
    train::Config more = c;
    more.resume = (dir / "last.safetensors").string();
    more.epochs = 3;
    more.lr = 2e-3;
    train::train(more, quiet_);

    const std::string log = slurp(dir / "log.txt");
    EXPECT_CONTAINS(log,
                    "the schedule changes from epoch 2 step 1 (after 3 updates) on: epochs 2 -> 3, "
                    "lr 0.001 -> 0.002");
    const train::Config args = train::load_config((dir / "args.yaml").string());
    EXPECT_EQ(args.epochs, 3);
    EXPECT_EQ(args.lr, 2e-3);
    ASSERT_EQ(args.schedule_history.size(), 1u);
    EXPECT_EQ(args.schedule_history[0].until_epoch, 1);
    EXPECT_EQ(args.schedule_history[0].epochs, 2);
    EXPECT_EQ(args.schedule_history[0].lr, 1e-3);

    // `haargrad train args.yaml` reruns what was run: the same losses and learning rates
    train::Config rerun = args;
    rerun.output = (root_ / "rerun").string();
    train::train(rerun, quiet_);
    auto columns = [](const fs::path& p) {  // epoch .. lr: throughput and memory are measurements
      std::vector<std::string> out;
      for (const std::string& row : lines(p)) {
        std::stringstream ss(row);
        std::string kept, cell;
        for (int i = 0; i < 6 && std::getline(ss, cell, ','); ++i) kept += cell + ",";
        out.push_back(kept);
      }
      return out;
    };
    EXPECT_EQ(columns(root_ / "rerun" / name / "summary.csv"), columns(dir / "summary.csv"));
  }
}

// summary.csv's lr of the epoch before a resume's schedule change is the one its own schedule
// gives, however that schedule stepped: (a) a per-epoch run resumed with sched_on_updates (the
// row took the session's per-update branch, the per-epoch schedule's next epoch: a rerun of
// args.yaml wrote another lr for epoch 1 than the run); (b) a per-epoch run stopped in epoch 1's
// evaluation and resumed with another lr (the row took the lr the resumed session set by its new
// schedule, 0.002, where the epoch trained at 0.001).
TEST_F(Faults, SummaryLrBeforeAScheduleChangeIsTheEpochsOwnStepPerEpochToo) {
  const auto lr_column = [](const fs::path& p) {
    std::vector<double> out;
    for (const train::SummaryRow& r : train::read_summary(p.string(), 1000).rows)
      out.push_back(r.lr);
    return out;
  };
  const auto rerun_of = [&](const fs::path& dir, const std::string& name) {
    train::Config rerun = train::load_config((dir / "args.yaml").string());
    rerun.output = (root_ / ("rerun-" + name)).string();
    train::train(rerun, quiet_);
    return root_ / ("rerun-" + name) / name / "summary.csv";
  };
  {  // (a) per epoch, then per update
    train::Config c = smoke("pe", 2);
    train::TrainOptions first = quiet_;
    first.stop_after_epoch = 1;
    train::train(c, first);
    const fs::path dir = root_ / "pe";
    const double epoch1 = lr_column(dir / "summary.csv").at(0);
    train::Config more = c;
    more.resume = (dir / "last.safetensors").string();
    more.epochs = 3;
    more.sched_on_updates = true;
    train::train(more, quiet_);
    EXPECT_EQ(lr_column(dir / "summary.csv").at(0), epoch1);
    EXPECT_EQ(lr_column(rerun_of(dir, "pe")), lr_column(dir / "summary.csv"));
  }
  {  // (b) per epoch, stopped in the evaluation, another lr
    train::Config c = smoke("ev", 2);
    c.warmup_epochs = 0;  // epoch 1 trains at lr
    train::TrainOptions first = quiet_;
    first.after_eval_batch = [](int64_t, int64_t) { return true; };  // a signal in the evaluation
    ASSERT_TRUE(train::train(c, first).interrupted);
    const fs::path dir = root_ / "ev";
    train::Config more = c;
    more.resume = (dir / "recovery.safetensors").string();
    more.epochs = 3;
    more.lr = 2e-3;
    train::train(more, quiet_);
    EXPECT_EQ(lr_column(dir / "summary.csv").at(0), 1e-3);  // the lr epoch 1 trained at
    EXPECT_EQ(lr_column(rerun_of(dir, "ev")), lr_column(dir / "summary.csv"));
  }
}

TEST_F(Faults, ResumeRefusesChangesToKeysThatShapeTheResults) {
  train::Config c = smoke("b", 2);
  train_until(c, 1);
  const fs::path dir = root_ / "b";
  const std::string summary = slurp(dir / "summary.csv");
  c.resume = (dir / "last.safetensors").string();
  c.weight_decay = 0.1;
  c.seed = 5;
  const std::string msg = error_of([&] { train::train(c, quiet_); });
  EXPECT_CONTAINS(msg, "weight_decay 0.05 -> 0.1");
  EXPECT_CONTAINS(msg, "seed 0 -> 5");
  EXPECT_CONTAINS(msg, (dir / "args.yaml").string());
  EXPECT_EQ(slurp(dir / "summary.csv"), summary);
}

// A resume cannot turn validation on or off (val_split ''): the run's best so far is by eval top-1
// with it and by train loss without it, which do not compare. Refused naming val_split, from the
// run's config, or from the best a checkpoint records when it stores no config (and its run folder
// no args.yaml); nothing of the run changes.
TEST_F(Faults, AResumeCannotTurnValidationOnOrOff) {
  train::TrainOptions first = quiet_;
  first.stop_after_epoch = 1;
  train::Config with = smoke("with", 2);
  train::train(with, first);
  train::Config without = smoke("without", 2);
  without.val_split = "";
  train::train(without, first);
  const fs::path with_dir = root_ / "with", without_dir = root_ / "without";
  const std::string summary = slurp(with_dir / "summary.csv");

  with.resume = (with_dir / "last.safetensors").string();
  with.val_split = "";
  std::string msg = error_of([&] { train::train(with, quiet_); });
  EXPECT_CONTAINS(msg,
                  "resume: val_split \"validation\" -> \"\" would turn validation off, "
                  "which a resume cannot (the run's val_split is from " +
                      (with_dir / "args.yaml").string());
  EXPECT_EQ(slurp(with_dir / "summary.csv"), summary);
  without.resume = (without_dir / "last.safetensors").string();
  without.val_split = "validation";
  msg = error_of([&] { train::train(without, quiet_); });
  EXPECT_CONTAINS(msg, "resume: val_split \"\" -> \"validation\" would turn validation on");

  // no config to compare: the best the checkpoint records says its run validated
  safetensors::File f = safetensors::load(with.resume);
  f.metadata.erase("config");
  safetensors::save(with.resume, f);
  fs::remove(with_dir / "args.yaml");
  msg = error_of([&] { train::train(with, quiet_); });
  EXPECT_CONTAINS(msg, "ranks its run's epochs by eval top-1, and this session has val_split \"\"");
  EXPECT_EQ(slurp(with_dir / "summary.csv"), summary);
}

// A run of synthetic data whose config says val_split '' but which was evaluated (an older version
// evaluated synthetic data whatever val_split said): its config agrees with a session without
// validation, its checkpoint's best (by top-1) does not. Such a resume went on without validation
// and wrote summary.csv rows without eval columns under the new header below the run's rows with
// them ("line 2: 8 cells, the header has 5" for plot), and a best_top1 beside a best_train_loss.
TEST_F(Faults, AnEvaluatedRunWhoseConfigSaysNoValidationIsNotResumedWithout) {
  train::TrainOptions first = quiet_;
  first.stop_after_epoch = 1;
  train::Config c = smoke("older", 2);
  train::train(c, first);
  const fs::path dir = root_ / "older";
  const std::string summary = slurp(dir / "summary.csv");
  // the record an older version left: val_split '' in args.yaml and in the checkpoint's config
  c.val_split = "";
  const std::string yaml = train::to_yaml(c);
  const std::string ckpt = (dir / "last.safetensors").string();
  safetensors::File f = safetensors::load(ckpt);
  f.metadata["config"] = yaml;
  safetensors::save(ckpt, f);
  io::write_file_atomic((dir / "args.yaml").string(), yaml);

  c.resume = ckpt;
  const std::string msg = error_of([&] { train::train(c, quiet_); });
  EXPECT_CONTAINS(msg,
                  "ranks its run's epochs by eval top-1, and this session has val_split \"\" "
                  "(as the run's config");
  EXPECT_CONTAINS(msg, "start a new run from its weights (initial_checkpoint)");
  EXPECT_EQ(slurp(dir / "summary.csv"), summary);
}

// ---- 6. numbers are decimal ----------------------------------------------------------------------

TEST(FaultsNumbers, DecimalOnly) {
  EXPECT_EQ(parse_decimal_int("010"), 10);  // not octal 8
  EXPECT_EQ(parse_decimal_int("-7"), -7);
  EXPECT_EQ(parse_decimal_int("+3"), 3);
  std::string why;
  for (const char* bad : {"0x10", "1e3", "2.0", "1_000", " 5", "", "-", "0b11"}) {
    EXPECT_FALSE(parse_decimal_int(bad, &why)) << bad;
    EXPECT_EQ(why, "not a decimal integer") << bad;
  }
  EXPECT_FALSE(parse_decimal_int("99999999999999999999", &why));
  EXPECT_EQ(why, "out of the 64-bit integer range");
  EXPECT_EQ(parse_decimal_float(".5"), 0.5);
  EXPECT_EQ(parse_decimal_float("5."), 5.0);
  EXPECT_EQ(parse_decimal_float("-2.5E+3"), -2500.0);
  EXPECT_EQ(parse_decimal_float("1e-3"), 1e-3);
  for (const char* bad : {"0x1p3", ".inf", "nan", "inf", "1,5", "e3", "1e", ".", "0x10"}) {
    EXPECT_FALSE(parse_decimal_float(bad, &why)) << bad;
    EXPECT_EQ(why, "not a decimal number") << bad;
  }
  EXPECT_FALSE(parse_decimal_float("1e400", &why));
  EXPECT_EQ(why, "out of the double range");

  // in a file a leading zero is refused: PyYAML (timm's config files) reads 010 as octal 8
  EXPECT_CONTAINS(error_of([] { train::config_from_yaml("epochs: 010\n", "x.yaml"); }),
                  "'010' has a leading zero");
  EXPECT_CONTAINS(error_of([] { train::config_from_yaml("lr: 0.1\nepochs: 0x10\n", "x.yaml"); }),
                  "key 'epochs' (x.yaml line 2): expected an integer, got '0x10' (not a decimal integer)");
  EXPECT_CONTAINS(error_of([] { train::config_from_yaml("lr: 1e400\n", "x.yaml"); }), "out of the double range");
  EXPECT_CONTAINS(error_of([] { train::config_from_yaml("lr: .inf\n", "x.yaml"); }), "not a decimal number");
  EXPECT_CONTAINS(error_of([] { train::config_from_yaml("dims: [8, 0x10]\ndepths: [1, 1]\n", "x.yaml"); }),
                  "'0x10' (not a decimal integer)");
  train::Config c;
  EXPECT_CONTAINS(error_of([&] { train::apply_overrides(c, {"--batch-size", "0x20"}); }),
                  "key 'batch_size' (command line)");
  train::apply_overrides(c, {"--batch-size", "064"});
  EXPECT_EQ(c.batch_size, 64);
}

TEST(FaultsNumbers, CommandLineOptionsAreDecimal) {
  const CommandResult hex = run_command("info convnext_atto --no-measure --img-size 0x40");
  EXPECT_NE(hex.rc, 0) << hex.output;
  EXPECT_CONTAINS(hex.output, "'0x40' is not a decimal integer");
  const CommandResult leading_zero = run_command("info convnext_atto --no-measure --img-size 064");
  EXPECT_EQ(leading_zero.rc, 0) << leading_zero.output;
  EXPECT_CONTAINS(leading_zero.output, "at 64x64");  // not octal 52
}

// ---- 7. errors that reach the user name the thing -----------------------------------------------

TEST_F(Faults, FileSystemErrorsNameThePathAndExitNonZero) {
  std::ofstream(root_ / "a_file") << "not a folder\n";
  const std::string out = (root_ / "a_file" / "runs").string();
  const CommandResult r = run_command("train " + smoke_yaml() + " --device cpu --output " + out);
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_CONTAINS(r.output, (root_ / "a_file").string());
  EXPECT_EQ(r.output.find("unexpected"), std::string::npos) << r.output;

  // a damaged summary.csv met by a resume: the file and line, not "stoll"
  train::Config c = smoke("d", 2);
  train_until(c, 1);
  std::ofstream(root_ / "d" / "summary.csv") << "epoch,train_loss\nx1,2\n";
  c.resume = (root_ / "d" / "last.safetensors").string();
  EXPECT_CONTAINS(error_of([&] { train::train(c, quiet_); }), (root_ / "d" / "summary.csv").string() + " line 2");
}

// ---- 8. the model follows timm: equal widths still downsample ------------------------------------

TEST(FaultsModel, EqualWidthStagesBuildTimmsDownsample) {
  ModelConfig m = model_config("wtconvnext_fmnist");  // three stages here, the last as wide as the second
  m.depths = {2, 2, 2};
  m.dims = {48, 96, 96};
  m.wt_levels = {1, 1, 1};
  const ConvNeXt model(m, 0);
  ASSERT_TRUE(model.stages[2]->down_conv);
  EXPECT_EQ(model.stages[2]->down_conv->weight.shape(), (Shape{96, 96, 2, 2}));
  std::vector<std::pair<std::string, Tensor>> acts;
  ConvNeXt net(m, 0);
  net.forward(Tensor::full({1, 28, 28, 1}, 0.5), false, &acts);
  EXPECT_EQ(acts.back().second.shape(), (Shape{1, 1, 1, 96}));  // 28 / 4 = 7 -> 3 -> 1
}

// ---- 9. checkpoint_hist ranks by the recorded score, also after a resume ------------------------

TEST_F(Faults, RotationAfterAResumeKeepsTheBest) {
  train::Config c = smoke("r", 4);
  c.checkpoint_hist = 2;
  train::TrainOptions first = quiet_;
  first.stop_after_epoch = 2;
  train::train(c, first);
  const fs::path dir = root_ / "r";
  // give the first two epochs scores no later epoch can reach (recorded in their metadata)
  for (auto [epoch, top1] : {std::pair<int, double>{1, 100.0}, {2, 99.99}}) {
    const std::string p = (dir / train::history_file_name(epoch)).string();
    safetensors::File f = safetensors::load(p);
    auto state = nlohmann::json::parse(f.metadata.at("state"));
    state["eval_top1"] = top1;
    f.metadata["state"] = state.dump();
    safetensors::save(p, f);
  }
  c.resume = (dir / "last.safetensors").string();
  train::train(c, quiet_);
  EXPECT_TRUE(fs::exists(dir / "checkpoint-1.safetensors"));
  EXPECT_TRUE(fs::exists(dir / "checkpoint-2.safetensors"));
  EXPECT_FALSE(fs::exists(dir / "checkpoint-3.safetensors"));
  EXPECT_FALSE(fs::exists(dir / "checkpoint-4.safetensors"));
  EXPECT_EQ(state_of(dir / "checkpoint-1.safetensors").eval_top1, 100.0);
}

// A resume with a lower checkpoint_hist, called a setting "of this session only", removed the
// run's older checkpoint-N files unsaid. The resume's note says it will, and the removal of an
// earlier session's file is a warning naming it in the run's log.
TEST_F(Faults, ALowerCheckpointHistOnAResumeSaysWhatItRemoves) {
  train::Config c = smoke("h", 3);
  c.checkpoint_hist = 3;
  train_until(c, 2);
  const fs::path dir = root_ / "h";
  c.checkpoint_hist = 1;
  c.resume = (dir / "last.safetensors").string();
  train::train(c, quiet_);
  const std::string log = slurp(dir / "log.txt");
  EXPECT_CONTAINS(log,
                  "checkpoint_hist 3 -> 1 (args.yaml keeps the run's); checkpoint_hist 1 "
                  "removes the run's checkpoint-N files beyond its best 1");
  int kept = 0;
  for (int e = 1; e <= 3; ++e) {
    const fs::path f = dir / train::history_file_name(e);
    if (fs::exists(f)) {
      ++kept;
    } else if (e <= 2) {
      EXPECT_CONTAINS(log, "checkpoint_hist 1: removed " + f.string() + " (an earlier session's");
    }
  }
  EXPECT_EQ(kept, 1);
}

// checkpoint_hist rotates the run's own files only: a checkpoint-N copied in from another run and
// an unreadable one are left alone (noted), never deleted on a guess.
TEST_F(Faults, RotationLeavesFilesItDidNotWriteAlone) {
  train::Config other = smoke("other", 1);
  train::train(other, quiet_);
  train::Config c = smoke("mine", 3);
  c.checkpoint_hist = 1;
  train_until(c, 1);
  const fs::path dir = root_ / "mine";
  fs::copy_file(root_ / "other" / "checkpoint-1.safetensors", dir / "checkpoint-9.safetensors");
  std::ofstream(dir / "checkpoint-7.safetensors") << "not a checkpoint";
  c.resume = (dir / "last.safetensors").string();
  train::train(c, quiet_);
  EXPECT_TRUE(fs::exists(dir / "checkpoint-9.safetensors"));
  EXPECT_TRUE(fs::exists(dir / "checkpoint-7.safetensors"));
  int ours = 0;
  for (int e = 1; e <= 3; ++e) ours += fs::exists(dir / train::history_file_name(e));
  EXPECT_EQ(ours, 1);  // checkpoint_hist 1 among the run's own
  // the note on the text file names it without the reader's advice for a file given on the
  // command line ("give a run folder's last.safetensors ..."): nobody gave it
  std::vector<std::string> notes;
  train::scan_history(dir, {}, "", &notes);
  std::string text;
  for (const std::string& n : notes) text += n + "\n";
  EXPECT_CONTAINS(text, "checkpoint-7.safetensors");
  EXPECT_CONTAINS(text, "it is a text file");
  EXPECT_EQ(text.find("give a run folder's"), std::string::npos) << text;
}

// Only the run's own checkpoint-N files rotate (as timm's CheckpointSaver deletes only those in
// its own list). A weights file named as the next epoch's checkpoint was replaced by it, and a
// checkpoint that records no run (an older version's, copied in) was ranked with the run's own
// and deleted, or kept in place of one of them. Both are left as they are, and said.
TEST_F(Faults, RotationNeitherReplacesNorDeletesAFileOfAnotherOrigin) {
  train::Config other = smoke("other", 1);
  train::train(other, quiet_);
  train::Config c = smoke("mine", 3);
  c.checkpoint_hist = 1;
  train_until(c, 1);
  const fs::path dir = root_ / "mine";
  // epoch 2's name: weights only (an export, timm's), no training state
  safetensors::save((dir / "checkpoint-2.safetensors").string(),
                    {{"head.fc.bias", Tensor::zeros({4})}}, {{"format", "pt"}});
  const std::string weights = slurp(dir / "checkpoint-2.safetensors");
  // an older version's checkpoint (no run id) with a score no epoch of this run reaches
  const safetensors::File f = safetensors::load((root_ / "other" / "last.safetensors").string());
  auto state = nlohmann::json::parse(f.metadata.at("state"));
  state.erase("run");
  state["eval_top1"] = 100.0;
  std::map<std::string, std::string> meta = f.metadata;
  meta["state"] = state.dump();
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const std::string& name : f.order) tensors.emplace_back(name, f.tensors.at(name));
  safetensors::save((dir / "checkpoint-8.safetensors").string(), tensors, meta);

  c.resume = (dir / "last.safetensors").string();
  train::train(c, quiet_);
  EXPECT_EQ(slurp(dir / "checkpoint-2.safetensors"), weights);
  EXPECT_TRUE(fs::exists(dir / "checkpoint-8.safetensors"));
  // checkpoint_hist 1 among the run's own: epoch 1 or 3 (epoch 2 has none)
  EXPECT_NE(fs::exists(dir / "checkpoint-1.safetensors"),
            fs::exists(dir / "checkpoint-3.safetensors"));
  const std::string log = slurp(dir / "log.txt");
  EXPECT_CONTAINS(log, (dir / "checkpoint-2.safetensors").string() +
                           ": holds no training state (a weights file, not a checkpoint of this "
                           "run); it is left as it is, not replaced: epoch 2 gets no "
                           "checkpoint-2.safetensors of this run");
  EXPECT_CONTAINS(log, (dir / "checkpoint-8.safetensors").string() +
                           " records no run (a checkpoint of a version from before run ids, or a "
                           "copy)");
  EXPECT_EQ(
      train::not_the_runs_file(dir / "checkpoint-3.safetensors", train::run_marker_id(dir)).empty(),
      fs::exists(dir / "checkpoint-3.safetensors"));
}

// A run folder whose run.json holds no id (damaged) goes on in place, and its run's own earlier
// checkpoint-N files (which record the id the marker held) were said to be "written by another
// run" and, unlike the session's, never rotated. Nothing in the folder can be told to be the
// run's now: the rotation says why, naming the marker, and removes none of them.
TEST_F(Faults, RotationInAFolderWhoseMarkerLostItsIdSaysSoAndRemovesNothing) {
  train::Config c = smoke("lost_id", 3);
  c.checkpoint_hist = 1;
  train_until(c, 1);
  const fs::path dir = root_ / "lost_id";
  std::ofstream(dir / "run.json", std::ios::trunc) << "garbage{";
  c.resume = (dir / "last.safetensors").string();
  EXPECT_EQ(fs::path(train::train(c, quiet_).run_dir), dir);
  const std::string log = slurp(dir / "log.txt");
  EXPECT_EQ(log.find("written by another run"), std::string::npos) << log;
  EXPECT_CONTAINS(log, (dir / "checkpoint-1.safetensors").string() +
                           " cannot be told to be this run's: " + (dir / "run.json").string() +
                           ", the folder's marker, holds no run id (not a file holding a JSON "
                           "object)");
  EXPECT_CONTAINS(log, "checkpoint_hist takes none of the folder's checkpoint-N files");
  for (int e = 1; e <= 3; ++e) EXPECT_TRUE(fs::exists(dir / train::history_file_name(e))) << e;
}

// A checkpoint of a version from before run ids (it records no run) under a name the trainer
// writes was resumed in its folder as the folder's own, while the rotation there never takes
// such a file as the run's (it cannot be told from a copy): the run's older checkpoint-N files
// piled up. One test decides both (match_run): the resume goes on in a new folder and the old one
// is left as it is; no file of unknown origin is deleted.
TEST_F(Faults, ACheckpointFromBeforeRunIdsIsNotTakenAsItsFoldersOwn) {
  EXPECT_EQ(train::match_run("r1", "r1"), train::RunMatch::own);
  EXPECT_EQ(train::match_run("r2", "r1"), train::RunMatch::other_run);
  EXPECT_EQ(train::match_run("", "r1"), train::RunMatch::records_no_run);
  EXPECT_EQ(train::match_run("", ""), train::RunMatch::marker_without_id);
  EXPECT_EQ(train::match_run("r1", ""), train::RunMatch::marker_without_id);

  train::Config c = smoke("pre_ids", 1);
  train::train(c, quiet_);
  const fs::path dir = root_ / "pre_ids";
  train::TrainState state = state_of(dir / "last.safetensors");
  state.run.clear();  // as written before run ids
  const std::string why =
      train::why_not_resumed_in_place(dir, (dir / "last.safetensors").string(), state);
  EXPECT_CONTAINS(why, (dir / "last.safetensors").string() +
                           " records no run (a checkpoint of a version from before run ids");
  // the rotation says the same of the same file
  EXPECT_CONTAINS(train::not_the_runs_file(dir / "checkpoint-1.safetensors", "another id"),
                  "was written by another run");
  state.run = train::run_marker_id(dir);
  EXPECT_EQ(train::why_not_resumed_in_place(dir, (dir / "last.safetensors").string(), state), "");
}

// A hand-edited or damaged run position is refused, naming the field, before it steers a run.
TEST_F(Faults, ARunPositionOutOfRangeIsRefusedNamingTheField) {
  train::Config c = smoke("pos", 2);
  train_until(c, 1);
  const std::string p = (root_ / "pos" / "last.safetensors").string();
  const safetensors::File f = safetensors::load(p);
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const std::string& name : f.order) tensors.emplace_back(name, f.tensors.at(name));
  const auto with = [&](const std::string& key, const nlohmann::json& value) {
    auto state = nlohmann::json::parse(f.metadata.at("state"));
    state[key] = value;
    std::map<std::string, std::string> meta = f.metadata;
    meta["state"] = state.dump();
    const std::string out = (root_ / ("edited-" + key + ".safetensors")).string();
    safetensors::save(out, tensors, meta);
    return out;
  };
  EXPECT_CONTAINS(error_of([&] { train::read_train_state(with("epoch", -7)); }),
                  "epoch is -7, below 0");
  EXPECT_CONTAINS(
      error_of([&] {
        train::read_train_state(with("epoch", nlohmann::json::parse("99999999999999999999")));
      }),
      "epoch is 1e+20, not an integer");
  EXPECT_CONTAINS(error_of([&] { train::read_train_state(with("updates", "5")); }),
                  "updates is \"5\", not an integer");
  EXPECT_CONTAINS(error_of([&] { train::read_train_state(with("eval_top1", 200)); }),
                  "eval_top1 is 200, outside [0, 100]");
  EXPECT_CONTAINS(error_of([&] { train::read_train_state(with("best_epoch", 50)); }),
                  "best_epoch is 50");
  EXPECT_CONTAINS(error_of([&] { train::read_train_state(with("best_train_loss", -3)); }),
                  "best_train_loss is -3, outside [0, inf] (or -1: none)");
  EXPECT_CONTAINS(error_of([&] { train::read_train_state(with("train_loss", "low")); }),
                  "train_loss is \"low\", not a number");
  EXPECT_CONTAINS(error_of([&] { train::read_train_state(with("world_size", 0)); }),
                  "world_size is 0, below 1");
  EXPECT_CONTAINS(error_of([&] { train::read_train_state(with("updates", int64_t{1} << 62)); }),
                  "updates is 4611686018427387904, beyond any run");
  c.resume = with("epoch", -7);
  EXPECT_CONTAINS(error_of([&] { train::train(c, quiet_); }), "metadata 'state': epoch is -7");
  // consistent with this session's epoch: updates and steps within what the epochs make
  c.resume = with("updates", 999999);
  EXPECT_CONTAINS(error_of([&] { train::train(c, quiet_); }),
                  "updates is 999999, more than 2 epochs of");
  EXPECT_EQ(train::read_train_state(p)->epoch, 1);  // the file itself reads
}

// The metadata's 'format' of a training checkpoint was written but never read: a file of another
// format (a later version's, an edit, another program's) or of none was taken as a checkpoint,
// its run position trusted. It is refused, naming the file and the field; plain weights (no
// training state: timm's, an export's "pt") are no training checkpoint and read as before.
TEST_F(Faults, ACheckpointOfAnotherFormatIsRefusedNamingTheField) {
  train::Config c = smoke("fmt", 1);
  train::train(c, quiet_);
  const std::string p = (root_ / "fmt" / "last.safetensors").string();
  const safetensors::File f = safetensors::load(p);
  EXPECT_EQ(f.metadata.at("format"), "haargrad-train-checkpoint-1");
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const std::string& name : f.order) tensors.emplace_back(name, f.tensors.at(name));
  const auto with_format = [&](const std::optional<std::string>& format) {
    std::map<std::string, std::string> meta = f.metadata;
    if (format)
      meta["format"] = *format;
    else
      meta.erase("format");
    const std::string out =
        (root_ / str(format ? *format : std::string("none"), ".safetensors")).string();
    safetensors::save(out, tensors, meta);
    return out;
  };
  const std::string none = with_format(std::nullopt);
  EXPECT_CONTAINS(error_of([&] { train::read_train_state(none); }),
                  "checkpoint " + none +
                      ": metadata 'format' is missing, not "
                      "'haargrad-train-checkpoint-1', though it holds a training state ('state')");
  const std::string newer = with_format("haargrad-train-checkpoint-2");
  EXPECT_CONTAINS(error_of([&] { train::read_train_state(newer); }),
                  "metadata 'format' is 'haargrad-train-checkpoint-2', not "
                  "'haargrad-train-checkpoint-1'");
  EXPECT_CONTAINS(error_of([&] { train::read_train_state(newer); }), "another haargrad version");
  const std::string odd = with_format("pt");
  EXPECT_CONTAINS(error_of([&] { train::read_train_state(odd); }),
                  "metadata 'format' is 'pt', not 'haargrad-train-checkpoint-1'");
  // a resume of it stops before anything is trained, with the same words
  train::Config r = c;
  r.resume = newer;
  r.epochs = 2;
  EXPECT_CONTAINS(error_of([&] { train::train(r, quiet_); }),
                  "checkpoint " + newer + ": metadata 'format' is 'haargrad-train-checkpoint-2'");
  // plain weights: no state, no check
  const std::string weights = (root_ / "weights.safetensors").string();
  safetensors::save(weights, {{"head.fc.bias", Tensor::zeros({4})}}, {{"format", "pt"}});
  EXPECT_FALSE(train::read_train_state(weights).has_value());
}

// A checkpoint whose drop-path generator state is damaged said only "Generator::set_state:
// malformed RNG state string", naming neither the file nor the key.
TEST_F(Faults, ADamagedRngStateNamesTheCheckpointAndKey) {
  train::Config c = smoke("rng", 1);
  train::train(c, quiet_);
  const std::string p = (root_ / "rng" / "last.safetensors").string();
  const safetensors::File f = safetensors::load(p);
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const std::string& name : f.order) tensors.emplace_back(name, f.tensors.at(name));
  std::map<std::string, std::string> meta = f.metadata;
  meta["rng.drop_path"] = "12 34";
  const std::string edited = (root_ / "edited.safetensors").string();
  safetensors::save(edited, tensors, meta);
  ConvNeXt model(train::model_config_from(c), 0);
  EXPECT_CONTAINS(
      error_of([&] { train::load_checkpoint(edited, model, nullptr); }),
      "checkpoint " + edited + ": metadata 'rng.drop_path' is not a random generator's state");
}

// A recovery checkpoint (recovery_interval, or a stop signal) was written from whatever the last
// update left: a diverging lr's non-finite weights, with the resumed session's args.yaml beside
// them, and the run's message then sent it to last.safetensors, which no longer matched args.yaml.
// Such weights are not written; a finite recovery checkpoint is what the run can go on from.
TEST_F(Faults, ARecoveryCheckpointIsNeverWrittenFromNonFiniteWeights) {
  for (const bool by_signal : {false, true}) {
    SCOPED_TRACE(by_signal ? "a stop signal" : "recovery_interval");
    const std::string name = by_signal ? "recsig" : "recint";
    train::Config c = smoke(name, 3);
    c.recovery_interval = 1;  // a recovery checkpoint after every update: epoch 2 step 1's stays
    train::TrainOptions opts = quiet_;
    opts.after_step = [by_signal](int64_t epoch, int64_t step, ConvNeXt& m) {
      if (epoch != 1 || step != 2) return false;
      m.head_fc->bias.fill_(std::nan(""));  // the update of epoch 2's step 2 diverged
      return by_signal;                     // and a stop signal came
    };
    const std::string msg = error_of([&] { train::train(c, opts); });
    const fs::path dir = root_ / name;
    EXPECT_CONTAINS(msg, "epoch 2 step 2: the updates so far left 4 of the model's");
    EXPECT_CONTAINS(msg, "no recovery checkpoint is written");
    EXPECT_CONTAINS(msg, "the run can go on from " + (dir / "recovery.safetensors").string() +
                             " (epoch 2 after step 1)");
    EXPECT_EQ(msg.find("nothing of this epoch is saved"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("could not be written"), std::string::npos) << msg;
    const train::TrainState st = state_of(dir / "recovery.safetensors");
    EXPECT_EQ(st.epoch, 1);
    EXPECT_EQ(st.step_in_epoch, 1);
    // and it resumes: the weights in it are finite
    c.resume = (dir / "recovery.safetensors").string();
    c.recovery_interval = 0;
    EXPECT_NO_THROW(train::train(c, quiet_));
  }
}

// The epoch's best model that could not be copied to model_best (a full disk) also lost the
// epoch's checkpoint-N: the history file was copied after model_best, and resume makes model_best
// again from last but not the history. It comes first now, as in timm's CheckpointSaver, and the
// error says what the run can go on from.
TEST_F(Faults, AModelBestThatCannotBeWrittenKeepsTheEpochsHistoryFile) {
  train::Config c = smoke("nobest", 2);
  const fs::path dir = root_ / "nobest";
  const std::string msg = error_with_unwritable(c, "model_best.safetensors");
  EXPECT_CONTAINS(msg, (dir / "model_best.safetensors").string());
  EXPECT_CONTAINS(msg, "stopping after epoch 1: the run can go on from " +
                           (dir / "last.safetensors").string() + " (end of epoch 1)");
  EXPECT_TRUE(fs::is_regular_file(dir / "checkpoint-1.safetensors"));
  EXPECT_EQ(state_of(dir / "last.safetensors").epoch, 1);
}

// crop_pct left unset is the model's own, which an older version chose otherwise (0.875 for every
// model): a resume with the run's own command was refused over it ("settings differ ... crop_pct
// 0.875 -> 0.95"). A key the session leaves to the model keeps the run's value; one it gives is
// still checked.
TEST_F(Faults, AResumeKeepsTheRunsCropPctWhereTheSessionLeavesItToTheModel) {
  train::Config c = smoke("crop", 1);
  c.crop_pct = 0.875;  // as an older version recorded it
  train::train(c, quiet_);
  train::Config again = c;
  again.epochs = 2;
  again.resume = (root_ / "crop" / "last.safetensors").string();
  again.crop_pct = 1.0;              // the model's own today
  again.model_own.crop_pct = false;  // given: a change of a result key, refused
  EXPECT_CONTAINS(error_of([&] { train::train(again, quiet_); }), "crop_pct 0.875 -> 1");
  again.model_own.crop_pct = true;  // left unset: the run's value
  const train::TrainResult r = train::train(again, quiet_);
  EXPECT_EQ(r.best_epoch > 0, true);
  EXPECT_CONTAINS(slurp(root_ / "crop" / "args.yaml"), "crop_pct: 0.875");
  EXPECT_CONTAINS(slurp(root_ / "crop" / "log.txt"),
                  "resume: crop_pct 0.875 (the run's; not given, the model's own is 1)");
}

// A last.safetensors that cannot be written (a full disk) stops the run saying what it can go on
// from, as a model_best that cannot be written does: the message was the writer's alone.
TEST_F(Faults, ALastCheckpointThatCannotBeWrittenNamesWhatTheRunCanGoOnFrom) {
  train::Config c = smoke("nolast", 1);
  c.recovery_interval = 1;  // a recovery checkpoint in the epoch: what is left to go on from
  const fs::path dir = root_ / "nolast";
  const std::string msg = error_with_unwritable(c, "last.safetensors");
  EXPECT_CONTAINS(msg, (dir / "last.safetensors").string());
  EXPECT_CONTAINS(msg, "stopping after epoch 1: the run can go on from " +
                           (dir / "recovery.safetensors").string() + " (epoch 1 after step ");
  EXPECT_TRUE(fs::is_regular_file(dir / "recovery.safetensors"));
}

// A checkpoint whose weights, EMA or optimizer state are damaged (a NaN weight, a negative second
// moment, a mis-shaped moment) was resumed: the first ones trained a step (the EMA: an epoch) and
// stopped at a non-finite loss (evaluation) whose message said the run "can go on from" that same
// file; the last said "AdamW state: exp_avg ... does not match parameter ...", naming neither file
// nor key. Each is refused before training, naming the checkpoint and what in it is wrong.
TEST_F(Faults, ADamagedCheckpointIsRefusedAtResumeNamingTheFileAndTensor) {
  train::Config c = smoke("dmg", 1);
  c.model_ema = true;
  train::train(c, quiet_);
  const safetensors::File f = safetensors::load((root_ / "dmg" / "last.safetensors").string());
  const auto edited = [&](const std::string& key, const std::function<Tensor(Tensor)>& edit) {
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const std::string& name : f.order)
      tensors.emplace_back(name,
                           name == key ? edit(f.tensors.at(name).clone()) : f.tensors.at(name));
    const std::string out = (root_ / ("edited-" + key + ".safetensors")).string();
    safetensors::save(out, tensors, f.metadata);
    return out;
  };
  const auto set_first = [](float v) {
    return [v](Tensor t) {
      t.data<float>()[0] = v;
      return t;
    };
  };
  c.epochs = 2;
  c.resume = edited("head.fc.weight", set_first(std::nanf("")));
  EXPECT_CONTAINS(error_of([&] { train::train(c, quiet_); }), c.resume);
  EXPECT_CONTAINS(error_of([&] { train::train(c, quiet_); }),
                  "non-finite (NaN or Inf; the first in 'head.fc.weight')");
  c.resume = edited("state_dict_ema.head.fc.weight", set_first(INFINITY));
  EXPECT_CONTAINS(error_of([&] { train::train(c, quiet_); }),
                  "checkpoint " + c.resume + " (its model EMA): 1 of its");
  c.resume = edited("optimizer.head.fc.weight.exp_avg_sq", set_first(-1));
  EXPECT_CONTAINS(
      error_of([&] { train::train(c, quiet_); }),
      "checkpoint " + c.resume + ": optimizer state: 'optimizer.head.fc.weight.exp_avg_sq'");
  c.resume =
      edited("optimizer.head.fc.weight.exp_avg", [](Tensor t) { return t.reshape({t.numel()}); });
  EXPECT_CONTAINS(
      error_of([&] { train::train(c, quiet_); }),
      "checkpoint " + c.resume + ": optimizer state: 'optimizer.head.fc.weight.exp_avg'");
  // a step count past the run's updates (it was resumed: AdamW bias-corrected as at step 77)
  const int64_t updates = state_of(root_ / "dmg" / "last.safetensors").updates;
  c.resume = edited("optimizer.head.fc.weight.step", [](Tensor t) {
    t.data<int64_t>()[0] = 77;
    return t;
  });
  EXPECT_CONTAINS(error_of([&] { train::train(c, quiet_); }),
                  str("checkpoint ", c.resume,
                      ": optimizer state 'optimizer.head.fc.weight.step' counts 77 steps, but the "
                      "run it holds made ",
                      updates, " updates"));
}

// A resume or initial_checkpoint named through a link that leads to itself was said not to exist,
// and /dev/null given as one too: the link is there but cannot be read, /dev/null is no file.
TEST_F(Faults, ACheckpointThatIsNoFileSaysWhyNotThatItIsMissing) {
  const std::string loop = (root_ / "loop.safetensors").string();
  fs::create_symlink(loop, loop);
  const std::string why = std::make_error_code(std::errc::too_many_symbolic_link_levels).message();
  train::Config c = smoke("nofile", 1);
  c.resume = loop;
  EXPECT_CONTAINS(error_of([&] { train::train(c, quiet_); }),
                  "resume: checkpoint " + loop + " cannot be read: " + why);
  c.resume = "/dev/null";
  EXPECT_CONTAINS(error_of([&] { train::train(c, quiet_); }), "/dev/null is not a regular file");
  c.resume.clear();
  c.initial_checkpoint = loop;
  EXPECT_CONTAINS(error_of([&] { train::train(c, quiet_); }),
                  "initial_checkpoint: " + loop + " cannot be read: " + why);
}

// A resume on training data that changed since its checkpoint went on unsaid: images added or
// removed (the epochs from there read other data than the run's) and a class folder renamed
// (labels may stand for other classes than the weights learnt). Both are said, with the figures;
// the next resume, on the data the checkpoints now record, says nothing.
TEST_F(Faults, AResumeSaysWhenTheTrainingDataChanged) {
  const fs::path images = root_ / "images";
  train::Config c = image_folder_run("run", 1, 4);
  train::train(c, quiet_);
  c.resume = (root_ / "run" / "last.safetensors").string();
  const auto resume_log = [&](int64_t epochs) {  // the lines this resume adds to log.txt
    const size_t before = slurp(root_ / "run" / "log.txt").size();
    c.epochs = epochs;
    train::train(c, quiet_);
    return slurp(root_ / "run" / "log.txt").substr(before);
  };
  write_image("train/cat/4.png");
  EXPECT_CONTAINS(resume_log(2), "resume: the train split has 9 images, 8 when " + c.resume +
                                     " was written: images were added or removed since");
  for (const char* split : {"train", "validation"})
    fs::rename(images / split / "dog", images / split / "ant");  // ant, cat: other labels
  EXPECT_CONTAINS(resume_log(3),
                  "resume: the train split's class folders are not those of " + c.resume);
  const std::string quiet = resume_log(4);
  EXPECT_EQ(quiet.find("the train split"), std::string::npos) << quiet;
}

// A run that corrupt_images: error stopped at an image it cannot decode said the image alone
// ("cannot decode image '...': ..."), as did one that skip stopped at too many: neither named the
// checkpoint the run can go on from nor the command that resumes it, as a Ctrl-C's message does.
TEST_F(Faults, ARunStoppedByACorruptImageSaysHowToResume) {
  const fs::path images = root_ / "images";
  train::Config c = image_folder_run("run", 3, 12);
  c.workers = 0;
  c.corrupt_images = "error";
  const fs::path dir = root_ / "run";
  const std::string last = (dir / "last.safetensors").string();
  const std::string resume =
      "`haargrad train " + (dir / "args.yaml").string() + " --resume " + last + "`";
  // the scan passed it; it breaks after the first epoch (before its checkpoint is written)
  train::TrainOptions breaking = quiet_;
  breaking.before_checkpoints = [&](int64_t epoch) {
    if (epoch == 0) std::ofstream(images / "train/cat/3.png") << "not an image any more\n";
  };
  const std::string msg = error_of([&] { train::train(c, breaking); });
  EXPECT_CONTAINS(msg, "cannot decode image '" + (images / "train/cat/3.png").string() + "'");
  EXPECT_CONTAINS(msg, "stopping at epoch 2");
  EXPECT_CONTAINS(msg, "the run can go on from " + last + " (end of epoch 1)");
  EXPECT_CONTAINS(msg, "fix or remove that image");
  EXPECT_CONTAINS(msg, "then resume with " + resume);
  EXPECT_CONTAINS(slurp(dir / "log.txt"), "then resume with " + resume);
  // skip stops at too many (more than 10 failing after the scan): said the same way
  write_image("train/cat/3.png");
  c.corrupt_images = "skip";
  c.resume = last;
  breaking.before_checkpoints = [&](int64_t epoch) {
    if (epoch != 1) return;
    for (const char* cls : {"cat", "dog"})
      for (int i = 0; i < 6; ++i)
        std::ofstream(images / "train" / cls / str(i, ".png")) << "not an image any more\n";
  };
  const std::string many = error_of([&] { train::train(c, breaking); });
  EXPECT_CONTAINS(many, "failed to decode after the scan passed them");
  EXPECT_CONTAINS(many, "stopping at epoch 3");
  EXPECT_CONTAINS(many, "the run can go on from " + last + " (end of epoch 2)");
  EXPECT_CONTAINS(many, "once its images read again, then resume with " + resume);
}

// A resume with another max_steps_per_epoch or batch_size (keys that shape the results) makes this
// session's epoch shorter than the run's: the error names the key and both values, not the
// checkpoint's position as if the file were damaged ("step_in_epoch is 2, past this session's
// epoch of 1 steps", "updates is 6, more than 3 epochs of 1 updates could make").
TEST_F(Faults, AResumeWithAShorterEpochNamesTheChangedKey) {
  train::Config c = smoke("short", 3);
  train::TrainOptions first = quiet_;
  first.after_step = interrupt_at(1, 2);  // epoch 2, after 2 of its 3 steps
  ASSERT_TRUE(train::train(c, first).interrupted);
  const fs::path dir = root_ / "short";
  c.resume = (dir / "recovery.safetensors").string();
  train::Config fewer_steps = c;
  fewer_steps.max_steps_per_epoch = 1;
  const std::string steps_msg = error_of([&] { train::train(fewer_steps, quiet_); });
  EXPECT_CONTAINS(steps_msg, "max_steps_per_epoch 3 -> 1");
  EXPECT_EQ(steps_msg.find("metadata 'state'"), std::string::npos) << steps_msg;
  train::Config larger_batch = c;
  larger_batch.batch_size = 64;  // the 64 synthetic images make one step
  const std::string batch_msg = error_of([&] { train::train(larger_batch, quiet_); });
  EXPECT_CONTAINS(batch_msg, "batch_size 8 -> 64");
  EXPECT_EQ(batch_msg.find("metadata 'state'"), std::string::npos) << batch_msg;
  EXPECT_TRUE(fs::exists(dir / "recovery.safetensors"));
  EXPECT_TRUE(train::train(c, quiet_).best_epoch >= 1);  // the run's own keys resume it
}

// The progress lines of an epoch resumed from a recovery checkpoint divided the whole epoch's
// images by this session's seconds alone: "step 300/468 ... 37024 img/s" right after a resume where
// the epoch's line said 2996 img/s. They count the epoch's seconds before the stop too, as that
// line.
TEST_F(Faults, AResumedEpochsProgressLinesGiveTheEpochsRate) {
  train::Config c = smoke("rate", 1);
  c.max_steps_per_epoch = 8;
  train::TrainOptions first = quiet_;
  first.after_step = [](int64_t, int64_t step, ConvNeXt&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a slow first part
    return step == 6;
  };
  ASSERT_TRUE(train::train(c, first).interrupted);
  const fs::path dir = root_ / "rate";
  c.resume = (dir / "recovery.safetensors").string();
  train::train(c, quiet_);
  // the rate of the last step's line and of the epoch's line, after the resume
  const auto rate_after = [](const std::string& line, const std::string& before) {
    const size_t end = line.rfind(" img/s");
    const size_t at = end == std::string::npos || end == 0 ? end : line.rfind(before, end - 1);
    return end == std::string::npos || at == std::string::npos
               ? -1.0
               : std::stod(line.substr(at + before.size(), end - at - before.size()));
  };
  double step_rate = -1, epoch_rate = -1;
  bool resumed = false;
  for (const std::string& l : lines(dir / "log.txt")) {
    resumed = resumed || l.find("resumed from") != std::string::npos;
    if (!resumed) continue;
    if (l.find("epoch 1/1 step 8/8 ") != std::string::npos) step_rate = rate_after(l, " ");
    if (l.find("epoch 1/1: train loss") != std::string::npos) epoch_rate = rate_after(l, ", ");
  }
  ASSERT_GT(step_rate, 0) << slurp(dir / "log.txt");
  ASSERT_GT(epoch_rate, 0) << slurp(dir / "log.txt");
  EXPECT_LT(step_rate, 1.25 * epoch_rate) << slurp(dir / "log.txt");
  EXPECT_GT(step_rate, 0.8 * epoch_rate) << slurp(dir / "log.txt");
}

// The stop message gave the resume as "(resume with --resume RUN/recovery.safetensors)", which
// alone is no command (train takes a config first; given only that, it read the checkpoint as the
// config): it gives the whole command, with the run's args.yaml, and that command resumes.
TEST_F(Faults, TheStopMessageGivesTheWholeResumeCommand) {
  train::Config c = smoke("stop", 1);
  train::TrainOptions first = quiet_;
  first.after_step = interrupt_at(0, 2);
  ASSERT_TRUE(train::train(c, first).interrupted);
  const fs::path dir = root_ / "stop";
  const std::string command = "haargrad train " + (dir / "args.yaml").string() + " --resume " +
                              (dir / "recovery.safetensors").string();
  EXPECT_CONTAINS(slurp(dir / "log.txt"), "(resume with `" + command + "`)");
  const CommandResult r = run_command(command.substr(std::string("haargrad ").size()));
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_CONTAINS(r.output, "continuing at epoch 1 step 3");
}

// A recovery checkpoint that cannot be written at a stop (a full disk; here a folder in its
// place) ended the run with the writer's message alone: it names what is still there to go on
// from, as a non-finite loss does.
TEST_F(Faults, ARecoveryCheckpointThatCannotBeWrittenNamesWhatToGoOnFrom) {
  train::Config c = smoke("full", 3);
  const fs::path dir = root_ / "full";
  train::TrainOptions stop = quiet_;
  stop.after_step = [&](int64_t e, int64_t step, ConvNeXt&) {
    if (e != 1 || step != 2) return false;
    fs::create_directories(dir / "recovery.safetensors" / "in_the_way");
    return true;
  };
  const std::string msg = error_of([&] { train::train(c, stop); });
  EXPECT_CONTAINS(msg, "recovery.safetensors");
  EXPECT_CONTAINS(msg, "the recovery checkpoint could not be written: the run can go on from " +
                           (dir / "last.safetensors").string() + " (end of epoch 1)");
}

// A stop signal during an epoch's evaluation leaves a recovery checkpoint after the epoch's last
// step: its resume goes on with that evaluation, and the log says so (it said "continuing at
// epoch 1 step 4" of a 3-step epoch, a step that does not exist).
TEST_F(Faults, AResumeIntoAnEvaluationSaysSo) {
  train::Config c = smoke("eval", 2);
  train::TrainOptions first = quiet_;
  first.after_eval_batch = [](int64_t, int64_t) { return true; };  // a signal in the evaluation
  ASSERT_TRUE(train::train(c, first).interrupted);
  const fs::path dir = root_ / "eval";
  ASSERT_EQ(train::read_train_state((dir / "recovery.safetensors").string())->step_in_epoch, 3);
  c.resume = (dir / "recovery.safetensors").string();
  train::train(c, quiet_);
  const std::string log = slurp(dir / "log.txt");
  EXPECT_CONTAINS(log, "0 epochs done, continuing with the evaluation of epoch 1 (its 3 steps");
  EXPECT_EQ(log.find("step 4"), std::string::npos) << log;
}

// A session that only finishes the evaluation its run was stopped in trains no step: its rates
// were reported as "train 0 img/s, data loading 0 img/s, waited for data 49% of the time" (of a
// few milliseconds), as if training had stalled. They are not known (-1, printed n/a), and the log
// says no step was trained.
TEST_F(Faults, ASessionThatTrainsNoStepReportsNoRates) {
  train::Config c = smoke("evalonly", 1);
  train::TrainOptions first = quiet_;
  first.after_eval_batch = [](int64_t, int64_t) { return true; };  // a signal in the evaluation
  ASSERT_TRUE(train::train(c, first).interrupted);
  const fs::path dir = root_ / "evalonly";
  c.resume = (dir / "recovery.safetensors").string();
  const train::TrainResult r = train::train(c, quiet_);
  EXPECT_EQ(r.best_epoch, 1);
  EXPECT_LT(r.train_img_per_sec, 0);
  EXPECT_LT(r.data_img_per_sec, 0);
  EXPECT_LT(r.data_wait_fraction, 0);
  const std::string log = slurp(dir / "log.txt");
  EXPECT_EQ(log.find("train 0 img/s"), std::string::npos) << log;
  EXPECT_CONTAINS(log, "no training step in this session");
}

// A resume that cannot go anywhere says so: a run stopped inside epoch 2 resumed with --epochs 1;
// a finished copy resumed into a new folder gives that folder back; an older checkpoint (no run
// id) under a name its folder's run does not write goes on in a new folder.
// A run that fails before training (weights that do not fit the model) gave back its run folder
// but left the output root it had made (`--output runs/new`: an empty runs/new). The folders it
// made go with the run folder; a root that was there stays.
TEST_F(Faults, ARunThatFailsBeforeTrainingLeavesNoOutputRootItMade) {
  train::Config c = smoke("w", 1);
  const std::string weights = (root_ / "w.safetensors").string();
  {
    ConvNeXt m(train::model_config_from(c), 1);
    train::save_checkpoint(weights, m, nullptr, train::TrainState{}, train::to_yaml(c));
  }
  c.initial_checkpoint = weights;
  c.dims = {8, 32};  // the weights do not fit: found once the model is built
  c.output = (root_ / "runs" / "new").string();
  EXPECT_CONTAINS(error_of([&] { train::train(c, quiet_); }), "does not fit model");
  EXPECT_FALSE(fs::exists(root_ / "runs")) << "the output root made for the run stays";
  fs::create_directories(root_ / "kept");
  c.output = (root_ / "kept").string();
  EXPECT_CONTAINS(error_of([&] { train::train(c, quiet_); }), "does not fit model");
  EXPECT_TRUE(fs::is_directory(root_ / "kept"));
  EXPECT_TRUE(fs::is_empty(root_ / "kept"));
}

TEST_F(Faults, ResumesThatCannotGoOnSaySoAndLeaveNoFolder) {
  train::Config c = smoke("edge", 2);
  train::TrainOptions stop = quiet_;
  stop.after_step = interrupt_at(1, 1);  // inside epoch 2
  train::train(c, stop);
  const fs::path dir = root_ / "edge";
  ASSERT_TRUE(fs::exists(dir / "recovery.safetensors"));
  train::Config r = c;
  r.resume = (dir / "recovery.safetensors").string();
  r.epochs = 1;
  EXPECT_CONTAINS(error_of([&] { train::train(r, quiet_); }),
                  "stopped inside epoch 2, past --epochs 1");

  train::Config done = smoke("done", 1);
  train::train(done, quiet_);
  fs::create_directories(root_ / "downloads");
  fs::copy_file(root_ / "done" / "last.safetensors", root_ / "downloads" / "copy.safetensors");
  train::Config again = done;
  again.resume = (root_ / "downloads" / "copy.safetensors").string();
  EXPECT_TRUE(train::train(again, quiet_).run_dir.empty());  // nothing to train, no folder to name
  EXPECT_FALSE(fs::exists(root_ / "done-2"));

  // an older checkpoint: its run id taken out, copied into the edge run's folder under another name
  const safetensors::File f = safetensors::load((root_ / "done" / "last.safetensors").string());
  auto state = nlohmann::json::parse(f.metadata.at("state"));
  state.erase("run");
  std::map<std::string, std::string> meta = f.metadata;
  meta["state"] = state.dump();
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const std::string& name : f.order) tensors.emplace_back(name, f.tensors.at(name));
  safetensors::save((dir / "older.safetensors").string(), tensors, meta);
  train::Config older = done;
  older.resume = (dir / "older.safetensors").string();
  older.epochs = 2;
  older.experiment = "edge";
  const std::string recovery = slurp(dir / "recovery.safetensors");
  EXPECT_NE(train::train(older, quiet_).run_dir, dir.string());
  EXPECT_EQ(slurp(dir / "recovery.safetensors"), recovery);
  // last.safetensors behind the run's recovery checkpoint goes on in place (it only redoes the
  // partial epoch the recovery holds)
  train::Config from_last = c;
  from_last.resume = (dir / "last.safetensors").string();
  EXPECT_EQ(train::train(from_last, quiet_).run_dir, dir.string());
  EXPECT_FALSE(fs::exists(dir / "recovery.safetensors"));  // superseded by the finished epoch
}

// ---- 10. an input the model cannot take is rejected at configuration time ------------------------

TEST_F(Faults, ImgSizeBelowTheTotalStrideIsRejectedWithTheMinimum) {
  EXPECT_CONTAINS(error_of([] {
                    train::config_from_yaml("model: wtconvnext_fmnist\nimg_size: 6\nin_chans: 1\nmean: [0.5]\n"
                                            "std: [0.5]\n", "fm.yaml");
                  }),
                  "key 'img_size' (fm.yaml line 2): img_size 6 is below the total stride 8");
  EXPECT_CONTAINS(error_of([] {
                    train::config_from_yaml("model: wtconvnext_fmnist\nimg_size: 6\nin_chans: 1\nmean: [0.5]\n"
                                            "std: [0.5]\n", "fm.yaml");
                  }),
                  "the smallest img_size for this model is 8");
  // patch 2: timm strides stage 0 too, so the smoke model needs 2 x 2 x 2 = 8 pixels
  train::Config c = smoke("tiny", 1);
  EXPECT_CONTAINS(error_of([&] { train::apply_overrides(c, {"--img-size", "4"}); }),
                  "key 'img_size' (command line): img_size 4 is below the total stride 8");
  c.img_size = 4;  // set in code: train() checks before it creates anything
  EXPECT_CONTAINS(error_of([&] { train::train(c, quiet_); }), "the smallest img_size for this model is 8");
  EXPECT_FALSE(fs::exists(root_ / "tiny"));
  const CommandResult info = run_command("info convnext_atto --no-measure --img-size 16");
  EXPECT_NE(info.rc, 0);
  EXPECT_CONTAINS(info.output, "the smallest img_size for this model is 32");
}
