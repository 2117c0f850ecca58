// Smoke tests of `haargrad bench` on the CPU: runs the built program on tiny configurations and
// checks the rows and columns it writes (JSON and CSV), the per-op breakdown, and that bad
// arguments fail with a message instead of running.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "models/convnext.h"
#include "program.h"

namespace hg {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// On the CPU a batch that does not fit in host memory ended the whole bench with an error (the
// allocator's "out of host memory" and std::bad_alloc were no out-of-memory to bench): it is the
// row's out-of-memory, reported as on the GPU (--retry would halve it).
TEST(BenchOutOfMemory, AHostBatchThatDoesNotFitIsTheRowsOutOfMemory) {
  const test::ProgramRun r = test::run_program(
      "bench --device cpu --threads 1 --models convnext_atto --batch 1073741824 --img-size 32 "
      "--steps 1 --warmup 0");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("out of memory at batch 1073741824"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--retry halves the batch until it fits"), std::string::npos) << r.output;
}

// A model below --img-size's stride failed when its row came, after the rows before it had run
// (their results lost); a mode or precision a CONFIG row is given was checked after its banner;
// --wtconv reference ran as a mode of its own name. All are checked first, and reference is
// unfused.
TEST(BenchArguments, AreCheckedBeforeTheFirstRow) {
  const std::string b = "bench --device cpu --threads 1 --batch 2 --steps 1 --warmup 0";
  const test::ProgramRun size =
      test::run_program(b + " --models wtconvnext_fmnist,convnext_atto --img-size 16");
  EXPECT_EQ(size.exit_code, 1) << size.output;
  EXPECT_NE(size.output.find("img_size 16 is below the total stride 32 of model convnext_atto"),
            std::string::npos)
      << size.output;
  EXPECT_EQ(size.output.find("bench: wtconvnext_fmnist"), std::string::npos) << size.output;
  const std::string smoke = " " HAARGRAD_SOURCE_DIR "/configs/smoke.yaml";
  for (const std::string bad : {" --wtconv foo", " --precision fp16"}) {
    const test::ProgramRun r = test::run_program(b + smoke + bad);
    EXPECT_EQ(r.exit_code, 1) << bad << r.output;
    EXPECT_EQ(r.output.find("bench: wtconvnext_fmnist"), std::string::npos) << r.output;
  }
  const test::ProgramRun modes = test::run_program(
      b + " --models wtconvnext_fmnist --img-size 28 --wtconv fused,reference,unfused");
  EXPECT_EQ(modes.exit_code, 0) << modes.output;
  EXPECT_NE(modes.output.find("wtconvnext_fmnist fused / unfused"), std::string::npos)
      << modes.output;
  EXPECT_EQ(modes.output.find("(reference)"), std::string::npos) << modes.output;
  size_t unfused = 0;
  for (size_t at = modes.output.find("bench: wtconvnext_fmnist (unfused)"); at != std::string::npos;
       at = modes.output.find("bench: wtconvnext_fmnist (unfused)", at + 1))
    ++unfused;
  EXPECT_EQ(unfused, 1u) << modes.output;
  // `--output ''` (an unset shell variable) wrote nothing, silently
  const test::ProgramRun empty = test::run_program(b + " --models convnext_atto --output ''");
  EXPECT_EQ(empty.exit_code, 1) << empty.output;
  EXPECT_NE(empty.output.find("bench: --output is empty"), std::string::npos) << empty.output;
}

// The smallest configuration that still runs every layer (atto at 32x32: stage 3 is 1x1).
const std::string kTiny = "bench --device cpu --batch 2 --img-size 32 --steps 2 --warmup 2";

using test::exited;
using test::ProgramRun;
using test::run_program;
using BenchCommand = test::ProgramTest;

json read_json(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  return json::parse(f);
}

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

TEST_F(BenchCommand, CpuJsonHasOneRowPerCombinationWithTimmColumns) {
  const std::string out = file("rows.json");
  const ProgramRun r = run_program(kTiny + " --models convnext_atto,wtconvnext_atto --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json rows = read_json(out);
  ASSERT_TRUE(rows.is_array());
  // convnext_atto has no WTConv axis; wtconvnext_atto runs fused and unfused.
  ASSERT_EQ(rows.size(), 3u) << rows.dump(1);
  const std::vector<std::pair<std::string, json>> expect = {
      {"convnext_atto", nullptr}, {"wtconvnext_atto", "fused"}, {"wtconvnext_atto", "unfused"}};
  const std::vector<std::string> timm_columns = {
      "model", "infer_samples_per_sec", "infer_step_time", "infer_batch_size", "infer_img_size",
      "train_samples_per_sec", "train_step_time", "train_batch_size", "train_img_size", "param_count"};
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& row = rows[i];
    SCOPED_TRACE(row.dump());
    for (const std::string& c : timm_columns) EXPECT_TRUE(row.contains(c)) << c;
    EXPECT_EQ(row["model"], expect[i].first);
    EXPECT_EQ(row["wtconv"], expect[i].second);
    EXPECT_EQ(row["precision"], "fp32");
    EXPECT_EQ(row["status"], "ok");
    EXPECT_EQ(row["infer_batch_size"], 2);
    EXPECT_EQ(row["train_batch_size"], 2);
    EXPECT_EQ(row["infer_img_size"], 32);
    EXPECT_EQ(row["train_img_size"], 32);
    for (const char* phase : {"infer", "train"}) {
      const std::string p = phase;
      const double med = row[p + "_step_time"], lo = row[p + "_step_time_min"], hi = row[p + "_step_time_max"];
      EXPECT_GT(lo, 0.0);
      EXPECT_LE(lo, med);
      EXPECT_LE(med, hi);
      // samples/s = batch / median step (both rounded in the file)
      EXPECT_NEAR(row[p + "_samples_per_sec"].get<double>(), 2 * 1000.0 / med, 0.01 * 2000.0 / med + 0.01);
      // Steady state: the timed steps make no malloc (warm-up 2 lets the allocator settle).
      EXPECT_EQ(row[p + "_system_allocs"], 0) << phase;
      EXPECT_TRUE(row[p + "_device_used_mib"].is_null());  // no driver figure on the CPU
      // total peak lies between the largest category peak and the sum of them
      double sum = 0, largest = 0;
      for (const char* c : {"parameters", "gradients", "optimizer_state", "activations", "workspace"}) {
        const double v = row[p + "_peak_" + c + "_mib"];
        sum += v;
        largest = std::max(largest, v);
      }
      const double total = row[p + "_peak_total_mib"];
      EXPECT_GE(total, largest - 0.01);
      EXPECT_LE(total, sum + 0.01);
      EXPECT_GE(row[p + "_reserved_mib"].get<double>(), total - 0.01);
      EXPECT_NEAR(row[p + "_reserved_ratio"].get<double>(),
                  row[p + "_reserved_mib"].get<double>() / total,
                  0.002 + 0.01 / total);  // both MiB figures rounded to 0.01
    }
    // Parameter counts as the model reports them (timm prints millions with 2 decimals).
    const ConvNeXt model(model_config(expect[i].first), 0);
    const int64_t trainable = model.num_trainable();
    EXPECT_EQ(row["param_count_exact"], trainable);
    EXPECT_EQ(row["param_count_fixed"], model.num_fixed());
    EXPECT_DOUBLE_EQ(row["param_count"].get<double>(), std::round(double(trainable) / 1e4) / 100);
    // Inference runs before the optimizer exists: no gradients or optimizer state in its peak.
    EXPECT_EQ(row["infer_peak_gradients_mib"], 0.0);
    EXPECT_EQ(row["infer_peak_optimizer_state_mib"], 0.0);
    EXPECT_GT(row["infer_peak_activations_mib"].get<double>(), 0.0);
    // Training: AdamW keeps two f32 moments per trainable element (each tensor rounded up to 256 B).
    const size_t tensors = model.named_tensors().size();
    const double moments = mib(2 * 4 * trainable);
    EXPECT_GE(row["train_peak_optimizer_state_mib"].get<double>(), moments - 0.01);
    EXPECT_LE(row["train_peak_optimizer_state_mib"].get<double>(), moments + mib(2 * 256 * tensors) + 0.01);
    EXPECT_GE(row["train_peak_gradients_mib"].get<double>(), mib(4 * trainable) - 0.01);
    EXPECT_GE(row["train_peak_parameters_mib"].get<double>(), mib(4 * (trainable + model.num_fixed())) - 0.01);
  }
  // The printed report names the ratios that matter.
  EXPECT_NE(r.output.find("wtconvnext_atto (fused) / convnext_atto"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("wtconvnext_atto fused / unfused"), std::string::npos) << r.output;
}

TEST_F(BenchCommand, CsvHasHeaderAndOneLinePerRow) {
  const std::string out = file("rows.csv");
  const ProgramRun r = run_program(kTiny + " --models wtconvnext_atto --wtconv fused --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream f(out);
  std::vector<std::vector<std::string>> lines;
  for (std::string line; std::getline(f, line);) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    lines.push_back(cells);
  }
  ASSERT_EQ(lines.size(), 2u);
  const auto& head = lines[0];
  const auto& row = lines[1];
  ASSERT_EQ(head.size(), row.size());
  auto cell = [&](const std::string& name) {
    for (size_t i = 0; i < head.size(); ++i)
      if (head[i] == name) return row[i];
    ADD_FAILURE() << "no column " << name;
    return std::string();
  };
  EXPECT_EQ(cell("model"), "wtconvnext_atto");
  EXPECT_EQ(cell("wtconv"), "fused");
  EXPECT_EQ(cell("train_batch_size"), "2");
  EXPECT_GT(std::stod(cell("train_samples_per_sec")), 0.0);
  EXPECT_GT(std::stod(cell("infer_step_time")), 0.0);
  EXPECT_EQ(cell("infer_device_used_mib"), "");  // null on the CPU
}

TEST_F(BenchCommand, BreakdownTimesEveryOpType) {
  const std::string out = file("rows.json");
  const ProgramRun r = run_program(kTiny + " --models wtconvnext_atto --wtconv fused --breakdown --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json rows = read_json(out);
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_TRUE(rows[0].contains("breakdown")) << rows.dump(1);
  const json& b = rows[0]["breakdown"];
  // Without drop path a block ends in one op (gelu_linear_residual), timed as such.
  for (const char* c : {"stem/downsample", "wtconv", "norm", "mlp fc1",
                        "gelu + fc2 + scale + residual", "head", "loss"}) {
    ASSERT_TRUE(b.contains(c)) << c;
    EXPECT_GT(b[c]["forward_ms"].get<double>(), 0.0) << c;
    EXPECT_GT(b[c]["backward_ms"].get<double>(), 0.0) << c;
  }
  EXPECT_GT(b["optimizer"]["forward_ms"].get<double>(), 0.0);
  EXPECT_FALSE(b.contains("conv_dw"));  // a WTConvNeXt has no plain depthwise conv
  for (const char* c : {"gelu", "mlp fc2", "layer scale + residual"})
    EXPECT_FALSE(b.contains(c)) << c << ": the model runs it inside the fused block end";
  // The roofline columns. fc1 of wtconvnext_atto (dims 40, 80, 160, 320, depths 2, 2, 6, 2) at
  // 32 px has 8x8, 4x4, 2x2, 1x1 tokens per stage: 4,915,200 multiply-adds per image, 2 images,
  // 2 FLOPs each, forward + input gradient + weight gradient: 0.0590 GFLOP; fc2 the same.
  EXPECT_NEAR(b["mlp fc1"]["gflop"].get<double>(), 0.0590, 6e-4);
  EXPECT_NEAR(b["gelu + fc2 + scale + residual"]["gflop"].get<double>(), 0.0590, 6e-4);  // fc2's
  for (const char* c : {"stem/downsample", "wtconv", "head"})
    EXPECT_GT(b[c]["gflop"].get<double>(), 0.0) << c;
  for (const char* c : {"norm", "loss", "optimizer"})
    EXPECT_EQ(b[c]["gflop"].get<double>(), 0.0) << c;  // no matmul: bytes only
  for (const auto& [c, e] : b.items()) {
    EXPECT_GT(e["gbytes"].get<double>(), 0.0) << c;
    EXPECT_GT(e["roofline_pct"].get<double>(), 0.0) << c;
  }
  EXPECT_GT(rows[0]["ceiling_copy_gb_per_s"].get<double>(), 0.0);
  EXPECT_GT(rows[0]["ceiling_gemm_tflop_per_s"].get<double>(), 0.0);
  EXPECT_NE(r.output.find("roofline"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("breakdown of one training step"), std::string::npos) << r.output;
  // the table prints three significant digits, so a tiny model's 0.0590 GFLOP is not "0.0"
  EXPECT_TRUE(std::regex_search(r.output, std::regex("\nmlp fc1 [^\n]* 0\\.0590 "))) << r.output;
}

// With drop path the block's end runs as two ops (models/convnext.cpp): the breakdown times those,
// not the fused op of a block without drop path nor GELU, fc2 and the layer scale one by one (it
// timed ops the model no longer ran since the drop path was fused into it).
TEST_F(BenchCommand, BreakdownTimesTheBlockEndAsTheModelRunsIt) {
  const std::string config = std::string(HAARGRAD_SOURCE_DIR) + "/configs/smoke.yaml";
  struct Case {
    std::string args;
    std::vector<std::string> timed;
  };
  // smoke.yaml has two blocks; drop path rises linearly over the blocks from 0 (timm), so the
  // first block never drops and ends as a block without drop path does
  for (const Case& c : std::vector<Case>{
           {" --drop-path 0.1",
            {"gelu + fc2 + scale + residual", "gelu + fc2 + scale", "drop path + residual"}},
           {" --drop-path 0.1 --ls-init-value null",
            {"gelu + fc2", "residual", "drop path + residual"}},
           {" --ls-init-value null", {"gelu + fc2", "residual"}},
           {"", {"gelu + fc2 + scale + residual"}}}) {
    const std::string out = file("rows.json");
    const ProgramRun r =
        run_program("bench " + config + " --device cpu --steps 1 --warmup 1 --breakdown --output " +
                    out + c.args);
    ASSERT_EQ(r.exit_code, 0) << c.args << "\n" << r.output;
    const json b = read_json(out)[0]["breakdown"];
    for (const std::string& op : c.timed) {
      ASSERT_TRUE(b.contains(op)) << c.args << ": " << op << " missing in " << b.dump(1);
      EXPECT_GT(b[op]["forward_ms"].get<double>(), 0.0) << c.args << ": " << op;
      EXPECT_GT(b[op]["backward_ms"].get<double>(), 0.0) << c.args << ": " << op;
    }
    size_t block_end_ops = 0;
    for (const char* op :
         {"gelu + fc2 + scale + residual", "gelu + fc2 + scale", "gelu + fc2",
          "drop path + residual", "residual", "gelu", "mlp fc2", "layer scale + residual"})
      block_end_ops += b.contains(op) ? 1 : 0;
    EXPECT_EQ(block_end_ops, c.timed.size()) << c.args << ": " << b.dump(1);
  }
}

TEST_F(BenchCommand, BadArgumentsFailBeforeRunning) {
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {" --models no_such_model", "no_such_model"},
      {" --models convnext_atto --output " + file("rows.txt"), ".json or .csv"},
      {" --models convnext_atto --precision tf32", "tf32"},
      {" --models wtconvnext_atto --wtconv sideways", "sideways"},
      {" --models convnext_atto --precision fp64", "fp64"},
  };
  for (const Case& c : cases) {
    const ProgramRun r = run_program(kTiny + c.args);
    EXPECT_NE(r.exit_code, 0) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output.find("timed steps"), std::string::npos) << "a row ran: " << r.output;
  }
  EXPECT_FALSE(fs::exists(file("rows.txt")));
}

// Options that contradict a CONFIG are usage errors, exit status 2 as a wrong option's (they exited
// 1 where `bench --models X --batch-size 4` exited 2).
TEST_F(BenchCommand, OptionsThatContradictTheConfigAreUsageErrors) {
  const std::string config = std::string(HAARGRAD_SOURCE_DIR) + "/configs/smoke.yaml --device cpu";
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {" --models convnext_atto", "give either CONFIG.yaml or --models, not both"},
           {" --precision fp32,bf16", "with a CONFIG, --precision takes one value"}}) {
    const ProgramRun r = run_program("bench " + config + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
  }
}

// An --output in a missing folder is refused before the first row, not after every row ran (bench,
// bench-augment; bench-data in bench_data_test.cpp).
TEST_F(BenchCommand, AnOutputFileInAMissingFolderFailsBeforeRunning) {
  const std::string missing = file("no") + " does not exist";
  const ProgramRun bench =
      run_program(kTiny + " --models convnext_atto --output " + file("no/rows.json"));
  EXPECT_NE(bench.exit_code, 0) << bench.output;
  EXPECT_NE(
      bench.output.find("bench: --output " + file("no/rows.json") + ": the folder " + missing),
      std::string::npos)
      << bench.output;
  EXPECT_EQ(bench.output.find("timed steps"), std::string::npos) << "a row ran: " << bench.output;
  const ProgramRun augment =
      run_program("bench-augment --reps 1 --warmup 0 --output " + file("no/augment.json"));
  EXPECT_NE(augment.exit_code, 0) << augment.output;
  EXPECT_NE(augment.output.find("bench-augment: --output " + file("no/augment.json") +
                                ": the folder " + missing),
            std::string::npos)
      << augment.output;
  EXPECT_EQ(augment.output.find("mean us"), std::string::npos) << "a row ran: " << augment.output;
}

// An --output replaces only a file of the command's own rows: a user's CSV, or another
// command's rows, stays and is refused before the first row (each was replaced, unsaid).
TEST_F(BenchCommand, AnOutputReplacesOnlyAFileOfTheCommandsOwnRows) {
  const std::string mine = file("mine.csv"), kept = "my,important,data\n1,2,3\n";
  std::ofstream(mine, std::ios::binary) << kept;
  const ProgramRun bench = run_program(kTiny + " --models convnext_atto --output " + mine);
  EXPECT_NE(bench.exit_code, 0) << bench.output;
  EXPECT_NE(bench.output.find("bench: --output " + mine +
                              " exists and is not a CSV file of rows "
                              "this command writes (a header starting with 'model')"),
            std::string::npos)
      << bench.output;
  EXPECT_EQ(bench.output.find("timed steps"), std::string::npos) << "a row ran: " << bench.output;
  const std::string base = "bench-augment --size 16 --reps 1 --warmup 0 --only 'op Inv' --output ";
  for (int i = 0; i < 2; ++i) {  // its own rows, again
    const ProgramRun own = run_program(base + file("augment.json"));
    EXPECT_EQ(own.exit_code, 0) << own.output;
  }
  std::ofstream(file("empty.csv"));  // an empty file (a name from mktemp): nothing to lose
  const ProgramRun empty = run_program(base + file("empty.csv"));
  EXPECT_EQ(empty.exit_code, 0) << empty.output;
  const ProgramRun other = run_program(base + mine);
  EXPECT_NE(other.exit_code, 0) << other.output;
  EXPECT_NE(other.output.find("(a header starting with 'stage')"), std::string::npos)
      << other.output;
  std::ifstream f(mine, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(f), {}), kept);
}

// bench-augment --output wrote JSON whatever the name (rows.csv held a JSON array), where bench
// writes CSV for a .csv name and refuses a name that is neither: it now does as bench does.
TEST_F(BenchCommand, BenchAugmentWritesCsvForACsvOutputAsBenchDoes) {
  const std::string base = "bench-augment --size 16 --reps 1 --warmup 0 --only 'op ' --output ";
  const ProgramRun csv = run_program(base + file("augment.csv"));
  ASSERT_EQ(csv.exit_code, 0) << csv.output;
  std::ifstream f(file("augment.csv"));
  std::string header, first;
  std::getline(f, header);
  std::getline(f, first);
  EXPECT_EQ(header, "stage,mean_us,min_us");
  EXPECT_EQ(first.rfind("op ", 0), 0u) << first;
  const ProgramRun txt = run_program(base + file("augment.txt"));
  EXPECT_EQ(txt.exit_code, 1) << txt.output;
  EXPECT_NE(txt.output.find("bench-augment: --output '" + file("augment.txt") +
                            "' must end in .json or .csv"),
            std::string::npos)
      << txt.output;
  EXPECT_EQ(txt.output.find("mean us"), std::string::npos) << "a row ran: " << txt.output;
  EXPECT_FALSE(fs::exists(file("augment.txt")));
}

// bench-layer --output wrote JSON whatever the name (layer.csv held a JSON array, layer.txt was
// written too), and its folder was checked only once a GPU was found, so a CPU-only build never
// named a bad one. Its name is checked first, as bench's (.json or .csv, in a folder that exists),
// before any GPU work; the rows are then written as bench writes its own.
TEST_F(BenchCommand, BenchLayerChecksItsOutputBeforeAnyGpuWork) {
  const std::string txt = file("layer.txt"), missing = file("no/layer.json");
  EXPECT_TRUE(exited(run_program("bench-layer --iters 1 --warmup 0 --output " + txt), 1,
                     {"bench-layer: --output '" + txt + "' must end in .json or .csv"},
                     {"copy bandwidth"}));
  EXPECT_TRUE(exited(
      run_program("bench-layer --iters 1 --warmup 0 --output " + missing), 1,
      {"bench-layer: --output " + missing + ": the folder " + file("no") + " does not exist"},
      {"copy bandwidth"}));
  EXPECT_FALSE(fs::exists(txt));
}

// bench-augment / bench-data option values out of range said one generic sentence (or named a
// training config's keys) with exit status 1; a bad RandAugment spec was found after every op
// row had been timed; --only matching nothing printed an empty table and exited 0.
TEST_F(BenchCommand, BenchAugmentAndBenchDataNameTheirBadOptions) {
  for (const auto& [args, option] : std::vector<std::pair<std::string, std::string>>{
           {"bench-augment --reps -3", "--reps"},
           {"bench-augment --size 100000", "--size"},
           {"bench-augment --warmup -1", "--warmup"},
           {"bench-data " + std::string(HAARGRAD_SOURCE_DIR) +
                "/configs/smoke.yaml --bench-epochs 0",
            "--bench-epochs"}}) {
    const ProgramRun r = run_program(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
    EXPECT_NE(r.output.find(option), std::string::npos) << r.output;
  }
  const ProgramRun spec = run_program("bench-augment --size 16 --reps 1 --warmup 0 --spec garbage");
  EXPECT_EQ(spec.exit_code, 1) << spec.output;
  EXPECT_NE(spec.output.find("RandAugment spec 'garbage'"), std::string::npos) << spec.output;
  EXPECT_EQ(spec.output.find("mean us"), std::string::npos) << "a row ran: " << spec.output;
  const ProgramRun only = run_program("bench-augment --size 16 --reps 1 --warmup 0 --only zzz");
  EXPECT_EQ(only.exit_code, 1) << only.output;
  EXPECT_NE(only.output.find("--only 'zzz' matches no row's name"), std::string::npos)
      << only.output;
}

// bench-augment's --only matching no row offered 'crop' as an example of a row's name, which
// matched none either ("--only 'crop' matches no row's name (e.g. 'op ', 'crop', ..."): every
// example the message gives now times its rows.
TEST_F(BenchCommand, BenchAugmentOnlyOffersExamplesThatMatch) {
  const std::string base = "bench-augment --size 16 --reps 1 --warmup 0 --only ";
  const ProgramRun none = run_program(base + "zzz");
  ASSERT_EQ(none.exit_code, 1) << none.output;
  const size_t at = none.output.find("matches no row's name");
  ASSERT_NE(at, std::string::npos) << none.output;
  std::vector<std::string> examples;
  const size_t from = at + std::string("matches no row's name").size();
  const std::string rest = none.output.substr(from, none.output.find('\n', from) - from);
  for (size_t q = rest.find('\''); q != std::string::npos; q = rest.find('\'', q)) {
    const size_t end = rest.find('\'', q + 1);
    ASSERT_NE(end, std::string::npos) << rest;
    examples.push_back(rest.substr(q + 1, end - q - 1));
    q = end + 1;
  }
  ASSERT_GE(examples.size(), 3u) << none.output;
  for (const std::string& word : examples) {
    const ProgramRun r = run_program(base + "'" + word + "'");
    EXPECT_EQ(r.exit_code, 0) << "--only '" << word << "': " << r.output;
  }
}

}  // namespace
}  // namespace hg
