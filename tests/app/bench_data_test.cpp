// Smoke test of `haargrad bench-data` on the CPU: the built program over a small JPEG folder writes
// one row per decoder with the counts and rates it printed, and bad arguments fail with a message.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data/image.h"
#include "data/jpeg_encode.h"
#include "train/trainer.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct ProgramRun {
  int exit_code = -1;
  std::string output;
};

ProgramRun run_program(const std::string& args) {
  ProgramRun r;
  FILE* p = popen((HAARGRAD_BINARY_DIR "/haargrad " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) r.output.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class BenchData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hg_bench_data_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    for (const char* cls : {"x", "y"})
      for (int i = 0; i < 5; ++i) {
        hg::data::Image img{90 + 10 * i, 120, 3, {}};
        img.pixels.resize(static_cast<size_t>(img.height * img.width * 3));
        for (size_t k = 0; k < img.pixels.size(); ++k) img.pixels[k] = static_cast<uint8_t>((k * 7 + i * 13) % 251);
        const auto bytes = hg::data::encode_jpeg(img, {});
        for (const char* split : {"train", "validation"}) {
          fs::create_directories(dir_ / split / cls);
          std::ofstream(dir_ / split / cls / (std::to_string(i) + ".jpg"), std::ios::binary)
              .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        }
      }
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string args() const {
    return str(" " HAARGRAD_SOURCE_DIR "/configs/smoke.yaml --dataset image_folder --data-dir ", dir_.string(),
               " --workers 2 --batch-size 3 --bench-warmup 1 --bench-epochs 2");
  }
  template <typename... A>
  static std::string str(const A&... a) {
    return hg::str(a...);
  }
  fs::path dir_;
};

TEST_F(BenchData, OneRowPerDecoder) {
  const std::string out = (dir_ / "rows.json").string();
  const ProgramRun r = run_program("bench-data" + args() + " --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream f(out);
  const json rows = json::parse(f);
  ASSERT_EQ(rows.size(), 3u) << rows.dump(1);
  const std::vector<std::string> decoders = {"stb", "turbo_full", "turbo"};
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& row = rows[i];
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row["jpeg_decoder"], decoders[i]);
    EXPECT_EQ(row["images"], 2 * 3 * 3);  // 2 timed epochs of 3 full batches of 3 (10 images, drop_last)
    EXPECT_GT(row["img_per_sec"].get<double>(), 0);
    EXPECT_GT(row["mb_per_sec"].get<double>(), 0);
    EXPECT_GT(row["busy_fraction"].get<double>(), 0);
    EXPECT_GT(row["cpu_ms_per_img"].get<double>(), 0);
    EXPECT_LE(row["busy_fraction"].get<double>(), 1);
    EXPECT_EQ(row["gpu_stage_ms_per_batch"].get<double>(), 0);  // CPU rows: no GPU stage
    int64_t decoded = 0;
    for (auto it = row["decoded"].begin(); it != row["decoded"].end(); ++it) {
      decoded += it.value().get<int64_t>();
      EXPECT_EQ(it.key().rfind(i == 0 ? "jpeg stb" : "jpeg turbo", 0), 0u) << it.key();
    }
    EXPECT_EQ(decoded, 18);
  }
  EXPECT_NE(r.output.find("img/s"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("stage ms"), std::string::npos) << r.output;
}

// Synthetic images (and IDX files) hold no JPEG: the three default decoders were three rows of
// the same loader. One row, said; --decoders by name still gives its rows.
TEST_F(BenchData, DataWithoutJpegFilesIsOneRow) {
  const std::string smoke =
      " " HAARGRAD_SOURCE_DIR "/configs/smoke.yaml --bench-warmup 0 --bench-epochs 1";
  const std::string out = (dir_ / "rows.json").string();
  ProgramRun r = run_program("bench-data" + smoke + " --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("holds no JPEG files, so the decoder does not apply: one row"),
            std::string::npos)
      << r.output;
  const json one = json::parse(std::ifstream(out));
  ASSERT_EQ(one.size(), 1u);
  // the row is named by its dataset, not by a decoder it did not use, and reads no file bytes
  EXPECT_TRUE(one[0]["jpeg_decoder"].is_null()) << one.dump();
  EXPECT_TRUE(one[0]["mb_per_sec"].is_null()) << one.dump();
  EXPECT_NE(r.output.find("\n(synthetic) "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("\nstb "), std::string::npos) << r.output;
  r = run_program("bench-data" + smoke + " --decoders stb,turbo --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json::parse(std::ifstream(out)).size(), 2u);
}

// The split timed is the one read: a folder with only its validation split failed on the missing
// train split (which validate reads without), and one with only a train split on the missing
// validation split.
TEST_F(BenchData, TheOtherSplitIsNotNeeded) {
  fs::rename(dir_ / "train", dir_ / "moved_train");
  ProgramRun r = run_program("bench-data" + args() + " --split val --decoders turbo");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\nturbo "), std::string::npos) << r.output;
  fs::rename(dir_ / "moved_train", dir_ / "train");
  fs::remove_all(dir_ / "validation");
  r = run_program("bench-data" + args() + " --split train --decoders turbo");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\nturbo "), std::string::npos) << r.output;
}

TEST_F(BenchData, BadArgumentsFailWithAMessage) {
  ProgramRun r = run_program("bench-data" + args() + " --decoders turbo,nvjpg");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("nvjpg"), std::string::npos) << r.output;
  r = run_program("bench-data" + args() + " --split test");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--split"), std::string::npos) << r.output;
  // val_split '' (no validation) names no split to read: said before any row
  r = run_program("bench-data" + args() + " --split val --val-split ''");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("bench-data --split val: val_split is empty"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("img/s"), std::string::npos) << "a row ran: " << r.output;
  // an --output that cannot be written is found before the first row (it used to be found after
  // the last, through a writer of its own that left '<output>.tmp' behind)
  const std::string out = (dir_ / "no" / "rows.json").string();
  r = run_program("bench-data" + args() + " --output " + out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("bench-data: --output " + out + ": the folder " + (dir_ / "no").string() +
                          " does not exist"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("img/s"), std::string::npos) << "a row ran: " << r.output;
}

// bench-data --output wrote JSON whatever the name (rows.csv held a JSON array), where bench
// writes CSV for a .csv name and refuses a name that is neither: it now does as bench does, with
// the decoded counts in one cell as the table prints them.
TEST_F(BenchData, TheOutputIsCsvForACsvNameAsBenchWritesIt) {
  const std::string csv = (dir_ / "rows.csv").string();
  ProgramRun r = run_program("bench-data" + args() + " --decoders turbo --output " + csv);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream f(csv);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("jpeg_decoder,split,workers,", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(",decoded,"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1].rfind("turbo,train,", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find("jpeg turbo"), std::string::npos) << lines[1];
  const std::string txt = (dir_ / "rows.txt").string();
  r = run_program("bench-data" + args() + " --decoders turbo --output " + txt);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("bench-data: --output '" + txt + "' must end in .json or .csv"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("img/s"), std::string::npos) << "a row ran: " << r.output;
  EXPECT_FALSE(fs::exists(txt));
}

// timm's -c / --config name the config, as for every command with one ("-c" was left over as a
// config override before).
TEST_F(BenchData, TakesTheConfigAsDashCOrDashDashConfig) {
  for (const std::string opt : {" -c", " --config"}) {
    const ProgramRun r = run_program("bench-data" + opt + args() + " --decoders turbo");
    EXPECT_EQ(r.exit_code, 0) << opt << r.output;
    EXPECT_NE(r.output.find("bench-data: train split"), std::string::npos) << opt << r.output;
  }
}

// A GPU row on a machine without a usable GPU (--decoders turbo,nvjpeg) failed after the CPU
// rows had run, asking to "set decode: cpu", a config key the command line never gave. It is
// refused first, naming the decoder.
TEST_F(BenchData, AGpuRowWithoutAGpuIsNamedBeforeTheFirstRow) {
  if (hg::train::resolve_device("auto") == hg::Device::cuda) GTEST_SKIP() << "a GPU is usable here";
  const ProgramRun r = run_program("bench-data" + args() + " --decoders turbo,nvjpeg");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("bench-data: --decoders nvjpeg runs on a GPU, and "), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("img/s"), std::string::npos) << "a row ran: " << r.output;
}

}  // namespace
