// `haargrad validate` like timm's validate.py: its columns, the results file (CSV or JSON), the config
// taken from the checkpoint when none is given, and the same top-1 / loss as the trainer's own
// evaluation of the same weights.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/safetensors.h"
#include "data/image.h"
#include "models/config.h"
#include "models/convnext.h"
#include "program.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/trainer.h"

namespace hg {
namespace {

using test::ProgramRun;
using test::run_program;

const std::string kSmoke = HAARGRAD_SOURCE_DIR "/configs/smoke.yaml";
const std::vector<std::string> kColumns = {"model",       "img_size", "top1",         "top1_err",
                                           "top5",        "top5_err", "loss",         "img_per_sec",
                                           "param_count", "crop_pct", "interpolation"};

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::stringstream s(line);
  for (std::string cell; std::getline(s, cell, sep);) out.push_back(cell);
  return out;
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class ValidateCommand : public test::ProgramTest {
 protected:
  // One short smoke run (synthetic data, tiny model) per test; its run folder.
  std::string train_once() {
    const ProgramRun r = run_program("train " + kSmoke + " --device cpu --output " + file("out") +
                                     " --experiment run --plain --epochs 1");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return file("out/run");
  }
  // <dir>/data/{train,validation}/{a,b,c,d}/0.png (32 x 32 RGB: the smoke config's input) and
  // validation/a/1.png, a whole PNG with spoilt pixel data: the scan passes it, decoding fails
  void image_folder_with_a_spoilt_val_png() {
    for (const char* c : {"a", "b", "c", "d"})
      for (const char* split : {"train", "validation"}) {
        const std::string folder = file(std::string("data/") + split + "/" + c);
        std::filesystem::create_directories(folder);
        data::Image img{32, 32, 3, std::vector<uint8_t>(32 * 32 * 3)};
        for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = uint8_t(i * 7 + c[0]);
        data::write_png(folder + "/0.png", img);
      }
    std::string png = read(file("data/validation/a/0.png"));
    for (size_t i = 60; i < png.size() - 20; ++i) png[i] = char(0xff);
    std::ofstream(file("data/validation/a/1.png"), std::ios::binary) << png;
  }
  // A checkpoint (no run position) whose stored config reads images from 'data_of_the_run', a
  // folder that does not exist; its path.
  std::string checkpoint_of_missing_data() {
    train::Config c = train::load_config(kSmoke);
    c.dataset = "image_folder";
    c.data_dir = "data_of_the_run";
    ConvNeXt model(train::model_config_from(c), 3);
    const std::string ck = file("ck.safetensors");
    train::save_checkpoint(ck, model, nullptr, train::TrainState{}, train::to_yaml(c));
    return ck;
  }
};

TEST_F(ValidateCommand, ColumnsResultsFilesAndConfigFromTheCheckpoint) {
  const std::string run = train_once();
  const std::string csv = file("results.csv"), js = file("results.json");
  // No CONFIG: the one stored in the checkpoint (synthetic data, the smoke model).
  const ProgramRun r = run_program("validate --checkpoint " + run + "/last.safetensors --results-file " + csv);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const ProgramRun rj =
      run_program("validate " + kSmoke + " --device cpu --checkpoint " + run + "/last.safetensors --results-file " + js);
  ASSERT_EQ(rj.exit_code, 0) << rj.output;
  // --config, as export and infer spell it, is the positional CONFIG; both at once is an error
  const ProgramRun rc = run_program("validate --config " + kSmoke + " --device cpu --checkpoint " +
                                    run + "/last.safetensors");
  ASSERT_EQ(rc.exit_code, 0) << rc.output;
  EXPECT_EQ(rc.output.substr(rc.output.find("model,img_size")).substr(0, 40),
            rj.output.substr(rj.output.find("model,img_size")).substr(0, 40));
  const ProgramRun two = run_program("validate " + kSmoke + " --config " + kSmoke +
                                     " --checkpoint " + run + "/last.safetensors");
  EXPECT_NE(two.exit_code, 0);
  EXPECT_NE(two.output.find("two configs"), std::string::npos) << two.output;

  // stdout: the header and one row, as in the CSV file
  const std::string printed = r.output.substr(r.output.find("model,img_size"));
  const std::vector<std::string> lines = split(read(csv), '\n');
  ASSERT_EQ(lines.size(), 2u) << read(csv);
  EXPECT_EQ(printed, read(csv));
  EXPECT_EQ(split(lines[0], ','), kColumns);
  const std::vector<std::string> row = split(lines[1], ',');
  ASSERT_EQ(row.size(), kColumns.size()) << lines[1];
  EXPECT_EQ(row[0], "wtconvnext_fmnist");
  EXPECT_EQ(row[1], "32");
  const double top1 = std::stod(row[2]), top1_err = std::stod(row[3]), top5 = std::stod(row[4]),
               top5_err = std::stod(row[5]), loss = std::stod(row[6]), ips = std::stod(row[7]);
  EXPECT_GE(top1, 0);
  EXPECT_LE(top1, top5);
  EXPECT_NEAR(top1 + top1_err, 100.0, 1e-9);
  EXPECT_NEAR(top5 + top5_err, 100.0, 1e-9);
  EXPECT_EQ(top5, 100.0);  // 4 classes: the top 5 always holds the label
  EXPECT_GT(loss, 0);
  EXPECT_GT(ips, 0);
  // param_count: millions, 2 decimals (timm); the smoke model has a few thousand parameters
  train::Config cfg = train::load_config(kSmoke);
  char expect_params[32];
  std::snprintf(expect_params, sizeof expect_params, "%.2f",
                double(param_count(train::model_config_from(cfg)).trainable +
                       param_count(train::model_config_from(cfg)).fixed) /
                    1e6);
  EXPECT_EQ(row[8], expect_params);
  // the evaluation transform the row was measured with, as timm's validate.py writes it
  EXPECT_EQ(row[9], "1.0");  // smoke.yaml's crop_pct
  EXPECT_EQ(row[10], cfg.interpolation);

  // The trainer evaluated the same weights on the same split after its epoch: same top-1 and loss.
  const std::vector<std::string> summary = split(read(run + "/summary.csv"), '\n');
  const std::vector<std::string> header = split(summary[0], ','), last = split(summary.back(), ',');
  auto col = [&](const std::string& name) {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return std::stod(last.at(i));
    ADD_FAILURE() << "summary.csv has no column " << name;
    return -1.0;
  };
  EXPECT_NEAR(top1, col("eval_top1"), 1e-4);
  EXPECT_NEAR(loss, col("eval_loss"), 1e-5 * std::max(1.0, loss));

  // JSON: the same columns, in order, the same numbers
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(read(js));
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, kColumns);
  EXPECT_EQ(j["model"], "wtconvnext_fmnist");
  EXPECT_EQ(j["img_size"], 32);
  EXPECT_NEAR(j["top1"].get<double>(), top1, 1e-4);
  EXPECT_NEAR(j["loss"].get<double>(), loss, 1e-5 * loss);
  EXPECT_EQ(j["param_count"].get<double>(), std::stod(expect_params));
  EXPECT_EQ(j["crop_pct"].get<double>(), 1.0);
  EXPECT_EQ(j["interpolation"], cfg.interpolation);
}

// param_count as timm's validate.py counts it, model.parameters(): the reference WTConv2d's Haar
// filters are parameters (requires_grad=False), so they count. They were left out (0.23 for
// wtconvnext_fmnist's 233,530 trainable and 9,216 fixed).
TEST_F(ValidateCommand, ParamCountHoldsTheHaarFiltersAsTimmCountsThem) {
  train::Config c = train::load_config(kSmoke);
  c.depths.clear();
  c.dims.clear();
  c.wt_levels.clear();
  c.kernel_size.reset();
  c.patch_size.reset();
  const ParamCount pc = param_count(train::model_config_from(c));
  ASSERT_GT(pc.fixed, 0);
  char all[32], trainable[32];
  std::snprintf(all, sizeof all, "%.2f", double(pc.trainable + pc.fixed) / 1e6);
  std::snprintf(trainable, sizeof trainable, "%.2f", double(pc.trainable) / 1e6);
  ASSERT_STRNE(all, trainable);  // the test tells them apart
  ConvNeXt model(train::model_config_from(c), 3);
  const std::string ck = file("ck.safetensors");
  train::save_checkpoint(ck, model, nullptr, train::TrainState{}, train::to_yaml(c));
  const ProgramRun r =
      run_program("validate --checkpoint " + ck + " --device cpu --results-file " + file("r.csv"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<std::string> rows = split(read(file("r.csv")), '\n');
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(split(rows[1], ',').at(8), all) << rows[1];  // param_count
}

// A training key on validate's command line (--epochs 5, --lr) was taken and changed nothing,
// unsaid; timm's validate.py refuses an option it has not. It is refused, named; the data's and
// the transform's keys, and timm's short options, still apply.
TEST_F(ValidateCommand, ATrainingKeyIsRefusedAsChangingNothing) {
  const std::string run = train_once();
  const ProgramRun r = run_program("validate --checkpoint " + run + " --device cpu --epochs 5");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("validate: --epochs changes nothing here: validate evaluates the "
                          "checkpoint on the validation split"),
            std::string::npos)
      << r.output;
  const ProgramRun timm_split = run_program("validate --checkpoint " + run + " --split val");
  EXPECT_NE(timm_split.output.find("timm's validate.py --split is --val-split here"),
            std::string::npos)
      << timm_split.output;
  const ProgramRun ok = run_program("validate --checkpoint " + run +
                                    " --device cpu -b 4 -j 1 --crop-pct 0.9 --img-size 32");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  // validate evaluates in fp32: precision is a training key here
  const ProgramRun bf16 =
      run_program("validate --checkpoint " + run + " --device cpu --precision bf16");
  EXPECT_EQ(bf16.exit_code, 1) << bf16.output;
  EXPECT_NE(bf16.output.find("--precision changes nothing here"), std::string::npos) << bf16.output;
  // wtconv_mode is applied (it was taken and not): the reference order gives the same metrics
  const ProgramRun fused = run_program("validate --checkpoint " + run + " --device cpu");
  const ProgramRun ref =
      run_program("validate --checkpoint " + run + " --device cpu --wtconv-mode reference");
  ASSERT_EQ(ref.exit_code, 0) << ref.output;
  const auto row = [](const std::string& out) {  // the CSV row's top1 .. loss cells
    const std::vector<std::string> lines = split(out, '\n');
    const std::vector<std::string> cells = split(lines.back(), ',');
    return cells.size() > 6 ? std::vector<std::string>(cells.begin() + 2, cells.begin() + 7)
                            : cells;
  };
  EXPECT_EQ(row(ref.output), row(fused.output)) << ref.output << fused.output;
}

// A CONFIG of another model listed the keys that differ but not the way out: the checkpoint
// stores the config it was trained with, which validate uses when CONFIG is left out.
TEST_F(ValidateCommand, ACheckpointOfAnotherModelThanTheConfigNamesItsStoredConfig) {
  const std::string ck = train_once() + "/last.safetensors";
  const ProgramRun r = run_program("validate " HAARGRAD_SOURCE_DIR
                                   "/configs/fashion_mnist.yaml --device cpu --checkpoint " +
                                   ck);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(ck + " stores the config it was trained with: leave the config (" +
                          HAARGRAD_SOURCE_DIR "/configs/fashion_mnist.yaml) out to use it"),
            std::string::npos)
      << r.output;
  // a config of about the same size but another key (its num_classes) fails in the load: the same
  std::string yaml = read(kSmoke);
  yaml.replace(yaml.find("num_classes: 4"), 14, "num_classes: 3");
  std::ofstream(file("three.yaml")) << yaml;
  const ProgramRun k =
      run_program("validate " + file("three.yaml") + " --device cpu --checkpoint " + ck);
  EXPECT_EQ(k.exit_code, 1) << k.output;
  EXPECT_NE(k.output.find("does not fit model"), std::string::npos) << k.output;
  EXPECT_NE(k.output.find(ck + " stores the config it was trained with"), std::string::npos)
      << k.output;
  // export says it too (one helper for validate, export and infer)
  const ProgramRun e = run_program("export " + ck + " --config " + file("three.yaml") + " --out " +
                                   file("w.safetensors"));
  EXPECT_NE(e.exit_code, 0) << e.output;
  EXPECT_NE(e.output.find(ck + " stores the config it was trained with"), std::string::npos)
      << e.output;
  // a model key from the command line would apply to the stored config too: no such hint
  const ProgramRun o =
      run_program("validate " + kSmoke + " --device cpu --num-classes 3 --checkpoint " + ck);
  EXPECT_EQ(o.exit_code, 1) << o.output;
  EXPECT_EQ(o.output.find("leave the config"), std::string::npos) << o.output;
  // without CONFIG it fits (the stored config), so there is nothing to say
  const ProgramRun ok = run_program("validate --checkpoint " + ck);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

// A run folder as --checkpoint evaluates its model_best.safetensors (the log says so); a folder
// without one is refused with what to give.
TEST_F(ValidateCommand, ARunFolderMeansItsBestCheckpoint) {
  const std::string run = train_once();
  const ProgramRun folder = run_program("validate --checkpoint " + run);
  ASSERT_EQ(folder.exit_code, 0) << folder.output;
  EXPECT_NE(folder.output.find("model_best.safetensors"), std::string::npos) << folder.output;
  const ProgramRun best = run_program("validate --checkpoint " + run + "/model_best.safetensors");
  ASSERT_EQ(best.exit_code, 0) << best.output;
  auto row = [](const std::string& out) {
    return split(split(out.substr(out.find("model,img_size")), '\n').at(1), ',');
  };
  const std::vector<std::string> rf = row(folder.output), rb = row(best.output);
  for (size_t i : {0, 1, 2, 4, 6}) EXPECT_EQ(rf.at(i), rb.at(i)) << kColumns[i];
  const std::string empty = file("empty_run");
  std::filesystem::create_directories(empty);
  const ProgramRun none = run_program("validate --checkpoint " + empty);
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.output.find("is a folder without model_best.safetensors"), std::string::npos)
      << none.output;
}

// A checkpoint named through a link that leads to itself was said not to exist ("--checkpoint
// w.safetensors does not exist") by validate, export and infer, while `ls` lists it: the reason
// the file cannot be read is given instead.
TEST_F(ValidateCommand, ACheckpointLinkThatLoopsIsNotSaidToBeMissing) {
  const std::string loop = file("loop.safetensors");
  std::filesystem::create_symlink(loop, loop);
  const std::string why = std::make_error_code(std::errc::too_many_symbolic_link_levels).message();
  for (const std::string& cmd : {"validate " + kSmoke + " --checkpoint " + loop,
                                 "export " + loop + " --out " + file("w.safetensors"),
                                 "infer -c " + kSmoke + " --checkpoint " + loop + " --input " +
                                     file("in.png") + " --out " + file("o.safetensors")})
    EXPECT_TRUE(exited(run_program(cmd), 1, {loop + " cannot be read: " + why}, {"does not exist"}))
        << cmd;
}

// --use-ema evaluates the checkpoint's model EMA: the trainer's EMA columns of the same epoch; the
// plain call still evaluates the model. `export --ema` writes the EMA under the plain names. A
// checkpoint without an EMA is refused by both, clearly.
TEST_F(ValidateCommand, UseEmaEvaluatesTheEmaAndExportEmaWritesIt) {
  const ProgramRun t =
      run_program("train " + kSmoke + " --device cpu --output " + file("out") +
                  " --experiment ema --plain --epochs 1 --model_ema --model_ema_decay 0.5");
  ASSERT_EQ(t.exit_code, 0) << t.output;
  // the result line says its best_top1 is the EMA's (last_top1 is the model's)
  EXPECT_NE(t.output.find("  best_top1_of ema"), std::string::npos) << t.output;
  const std::string ck = file("out/ema") + "/last.safetensors";
  {  // and so does the finished run's resume (nothing to train: the run's result, the same best)
    const ProgramRun done = run_program("train --resume " + ck + " --plain");
    ASSERT_EQ(done.exit_code, 0) << done.output;
    EXPECT_NE(done.output.find("nothing to train"), std::string::npos) << done.output;
    EXPECT_NE(done.output.find("  best_top1_of ema"), std::string::npos) << done.output;
  }
  const std::vector<std::string> summary = split(read(file("out/ema") + "/summary.csv"), '\n');
  const std::vector<std::string> header = split(summary[0], ','), last = split(summary.back(), ',');
  auto col = [&](const std::string& name) {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return std::stod(last.at(i));
    ADD_FAILURE() << "summary.csv has no column " << name;
    return -1.0;
  };
  auto row_of = [&](const std::string& args) {
    const ProgramRun r =
        run_program("validate --checkpoint " + ck + args + " --results-file " + file("r.csv"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return split(split(read(file("r.csv")), '\n').at(1), ',');
  };
  const std::vector<std::string> ema = row_of(" --use-ema"), model = row_of("");
  EXPECT_NEAR(std::stod(ema[2]), col("eval_top1_ema"), 1e-4);
  EXPECT_NEAR(std::stod(ema[6]), col("eval_loss_ema"), 1e-5 * std::max(1.0, col("eval_loss_ema")));
  EXPECT_NEAR(std::stod(model[6]), col("eval_loss"), 1e-5 * std::max(1.0, col("eval_loss")));
  EXPECT_NE(col("eval_loss"), col("eval_loss_ema")) << "decay 0.5 over 3 updates: the EMA differs";

  const ProgramRun e = run_program("export " + ck + " --ema --out " + file("ema.safetensors"));
  ASSERT_EQ(e.exit_code, 0) << e.output;
  const safetensors::File exported = safetensors::load(file("ema.safetensors")),
                          in = safetensors::load(ck);
  size_t ema_tensors = 0;
  for (const auto& [name, t] : in.tensors) ema_tensors += name.rfind(train::kEmaPrefix, 0) == 0;
  ASSERT_GT(ema_tensors, 0u);
  EXPECT_EQ(exported.tensors.size(), ema_tensors);
  for (const auto& [name, t] : exported.tensors)
    EXPECT_EQ(t.to_vector<float>(), in.tensors.at(train::kEmaPrefix + name).to_vector<float>())
        << name;

  const std::string plain = train_once() + "/last.safetensors";  // a run without an EMA
  const ProgramRun v = run_program("validate --checkpoint " + plain + " --use-ema");
  EXPECT_NE(v.exit_code, 0);
  EXPECT_NE(v.output.find("holds no model EMA weights"), std::string::npos) << v.output;
  const ProgramRun x = run_program("export " + plain + " --ema --out " + file("none.safetensors"));
  EXPECT_NE(x.exit_code, 0);
  EXPECT_NE(x.output.find("holds no model EMA weights"), std::string::npos) << x.output;
}

TEST_F(ValidateCommand, BadResultsFileAndMissingConfigFailClearly) {
  const std::string run = train_once();
  const ProgramRun txt = run_program("validate --checkpoint " + run + "/last.safetensors --results-file " +
                                     file("r.txt"));
  EXPECT_NE(txt.exit_code, 0);
  EXPECT_NE(txt.output.find(".csv or .json"), std::string::npos) << txt.output;
  EXPECT_EQ(txt.output.find("model,img_size"), std::string::npos) << "evaluated before failing: " << txt.output;
  // Weights without a stored config (a timm state_dict: an export's tensors without its
  // metadata): the message says what to give.
  const ProgramRun ex = run_program("export " + run + "/last.safetensors --out " + file("w.safetensors"));
  ASSERT_EQ(ex.exit_code, 0) << ex.output;
  {
    const safetensors::File w = safetensors::load(file("w.safetensors"));
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const std::string& k : w.order) tensors.emplace_back(k, w.tensors.at(k));
    safetensors::save(file("plain.safetensors"), tensors, {{"format", "pt"}});
  }
  const ProgramRun none = run_program("validate --checkpoint " + file("plain.safetensors"));
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.output.find("CONFIG.yaml"), std::string::npos) << none.output;
  // an export carries its config: it validates as it is
  const ProgramRun own = run_program("validate --device cpu --checkpoint " + file("w.safetensors"));
  EXPECT_EQ(own.exit_code, 0) << own.output;
  // ... and with the config, exported weights validate like the checkpoint they came from.
  const ProgramRun a = run_program("validate " + kSmoke + " --device cpu --checkpoint " + run + "/last.safetensors");
  const ProgramRun b = run_program("validate " + kSmoke + " --device cpu --checkpoint " + file("w.safetensors"));
  ASSERT_EQ(b.exit_code, 0) << b.output;
  auto row = [](const std::string& out) { return split(split(out.substr(out.find("model,img_size")), '\n').at(1), ','); };
  const std::vector<std::string> ra = row(a.output), rb = row(b.output);
  for (size_t i : {0, 1, 2, 4, 6, 8}) EXPECT_EQ(ra.at(i), rb.at(i)) << kColumns[i];
}

// A results file whose folder is missing or read-only is refused before the evaluation (the
// read-only one used to be found only when the row was written, after the whole split). As root
// the program runs as nobody, for whom the folder is read-only.
TEST_F(ValidateCommand, ResultsFileInAFolderThatCannotBeWrittenFailsBeforeTheEvaluation) {
  const std::string run = train_once();
  const ProgramRun missing = run_program("validate --checkpoint " + run +
                                         "/last.safetensors --results-file " + file("no/r.csv"));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.output.find("the folder " + file("no") + " does not exist"), std::string::npos)
      << missing.output;
  EXPECT_EQ(missing.output.find("model,img_size"), std::string::npos) << missing.output;

  std::filesystem::create_directories(file("ro"));
  namespace fs = std::filesystem;
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(file("ro"), fs::perms::owner_read | fs::perms::owner_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  const std::string as =
      ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  const ProgramRun ro = run_program(
      "validate --checkpoint " + run + "/last.safetensors --results-file " + file("ro/r.csv"), as);
  fs::permissions(file("ro"), fs::perms::owner_all);
  EXPECT_NE(ro.exit_code, 0) << ro.output;
  EXPECT_NE(ro.output.find("validate: --results-file " + file("ro/r.csv") + ": the folder " +
                           file("ro") + " cannot be written (Permission denied)"),
            std::string::npos)
      << ro.output;
  EXPECT_EQ(ro.output.find("model,img_size"), std::string::npos)
      << "evaluated first: " << ro.output;
  EXPECT_FALSE(fs::exists(file("ro/r.csv")));
}

// A results file replaces an earlier results file only: a user's CSV or any other file given by
// mistake stays, and is refused before the evaluation (it was replaced, unsaid, even through a
// symbolic link).
TEST_F(ValidateCommand, AResultsFileReplacesOnlyAnEarlierResultsFile) {
  namespace fs = std::filesystem;
  const std::string run = train_once();
  const std::string ck = " --device cpu --checkpoint " + run + "/last.safetensors --results-file ";
  const std::string mine = file("mine.csv"), kept = "my,important,data\n1,2,3\n";
  std::ofstream(mine, std::ios::binary) << kept;
  fs::create_symlink(mine, file("link.csv"));
  std::ofstream(file("other.json"), std::ios::binary) << "{\"a\": 1}\n";
  for (const std::string& f : {mine, file("link.csv"), file("other.json")}) {
    const ProgramRun r = run_program("validate" + ck + f);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("validate: --results-file " + f + " exists and is not a"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("is not replaced; give another name, or remove it first"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("model,img_size"), std::string::npos) << "evaluated: " << r.output;
  }
  EXPECT_EQ(read(mine), kept);
  EXPECT_EQ(read(file("other.json")), "{\"a\": 1}\n");
  // its own files, again and again (CSV and JSON)
  for (const std::string& f : {file("r.csv"), file("r.json")})
    for (int i = 0; i < 2; ++i) {
      const ProgramRun r = run_program("validate" + ck + f);
      EXPECT_EQ(r.exit_code, 0) << f << " " << i << ": " << r.output;
    }
  EXPECT_EQ(read(file("r.csv")).rfind("model,img_size,", 0), 0u) << read(file("r.csv"));
}

// timm's --results-format (csv or json) names the results file's format whatever its name; it was
// an unknown option. A name of the other format is refused before the evaluation.
TEST_F(ValidateCommand, TimmsResultsFormatNamesTheFilesFormat) {
  const std::string run = train_once();
  const std::string ck = " --device cpu --checkpoint " + run + "/last.safetensors --results-file ";
  const ProgramRun json = run_program("validate" + ck + file("r.txt") + " --results-format json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_EQ(nlohmann::ordered_json::parse(read(file("r.txt"))).begin().key(), "model");
  const ProgramRun other = run_program("validate" + ck + file("r.csv") + " --results-format json");
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.output.find("names a .csv file, but --results-format is json"), std::string::npos)
      << other.output;
  EXPECT_EQ(other.output.find("model,img_size"), std::string::npos)
      << "evaluated: " << other.output;
}

// timm's short options (validate.py -b 64) after the options: "-b" was taken for the config file
// ("config: cannot open file '-b'"); it is an option (timm's batch size).
TEST_F(ValidateCommand, ATimmShortOptionIsNotTakenForTheConfig) {
  train::Config c = train::load_config(kSmoke);
  ConvNeXt model(train::model_config_from(c), 3);
  train::save_checkpoint(file("w.safetensors"), model, nullptr, train::TrainState{},
                         train::to_yaml(c));
  const ProgramRun r = run_program("validate --checkpoint " + file("w.safetensors") + " -b 64");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("cannot open"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("top1,top1_err"), std::string::npos) << r.output;
}

// `validate RUN/last.safetensors` (the checkpoint where the config goes) or timm's `validate.py
// DATA_DIR` said "--checkpoint is required" alone: the message says where the file or folder goes.
TEST_F(ValidateCommand, ACheckpointOrFolderGivenAsTheConfigSaysWhereItGoes) {
  train::Config c = train::load_config(kSmoke);
  ConvNeXt model(train::model_config_from(c), 3);
  train::save_checkpoint(file("w.safetensors"), model, nullptr, train::TrainState{},
                         train::to_yaml(c));
  const ProgramRun ck = run_program("validate " + file("w.safetensors"));
  EXPECT_EQ(ck.exit_code, 2) << ck.output;
  EXPECT_NE(ck.output.find("--checkpoint is required; '" + file("w.safetensors") +
                           "' is a checkpoint: give it as --checkpoint " + file("w.safetensors")),
            std::string::npos)
      << ck.output;
  const ProgramRun dir = run_program("validate " + dir_.string());
  EXPECT_EQ(dir.exit_code, 2) << dir.output;
  EXPECT_NE(dir.output.find("--checkpoint is required; '" + dir_.string() +
                            "' is a folder: a run folder goes as --checkpoint"),
            std::string::npos)
      << dir.output;
  EXPECT_NE(dir.output.find("a data folder as --data-dir"), std::string::npos) << dir.output;
}

// A checkpoint of a diverged run (NaN / Inf weights) was evaluated on every image, and only then
// refused from its outputs, counting its non-finite weights but naming none. validate refuses it
// as it loads, as initial_checkpoint does: the file, both counts and the first tensor; the model
// EMA's weights under --use-ema the same.
TEST_F(ValidateCommand, NonFiniteWeightsAreNamedWhenLoaded) {
  const train::Config c = train::load_config(kSmoke);
  ConvNeXt model(train::model_config_from(c), 3), ema(train::model_config_from(c), 4);
  const auto spoil = [](ConvNeXt& m) {
    for (const ParamRef& p : m.named_tensors())
      if (p.name == "stem.0.bias") {
        static_cast<float*>(p.tensor.data_ptr())[1] = std::numeric_limits<float>::quiet_NaN();
        static_cast<float*>(p.tensor.data_ptr())[2] = std::numeric_limits<float>::infinity();
      }
  };
  spoil(model);
  const std::string ck = file("nan.safetensors");
  train::save_checkpoint(ck, model, nullptr, train::TrainState{}, train::to_yaml(c), &ema);
  const std::string count = " weights are non-finite (NaN or Inf; the first in 'stem.0.bias')";
  EXPECT_TRUE(test::exited(run_program("validate --checkpoint " + ck), 1,
                           {"validate: checkpoint " + ck + ": 2 of its ", count,
                            "validate an earlier checkpoint of that run"},
                           {"outputs"}));
  EXPECT_TRUE(test::exited(run_program("validate --checkpoint " + ck + " --use-ema"), 0, {}));
  spoil(ema);
  train::save_checkpoint(ck, ConvNeXt(train::model_config_from(c), 3), nullptr, train::TrainState{},
                         train::to_yaml(c), &ema);
  EXPECT_TRUE(test::exited(run_program("validate --checkpoint " + ck + " --use-ema"), 1,
                           {"validate: checkpoint " + ck + " (its model EMA): 2 of its ", count}));
}

// The data of a checkpoint's stored config may not be there (a relative data_dir, run from another
// folder; another machine): "the data folder 'data' does not exist" did not say where that
// data_dir came from nor how to point elsewhere.
TEST_F(ValidateCommand, MissingDataNamesWhereItsDataDirComesFrom) {
  const std::string ck = checkpoint_of_missing_data();
  const ProgramRun r = run_program("validate --checkpoint " + ck);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("the data folder 'data_of_the_run' does not exist"), std::string::npos)
      << r.output;
  EXPECT_NE(
      r.output.find("validate: data_dir 'data_of_the_run' is from the config stored in " + ck +
                    "; --data-dir DIR (and --val-split NAME) evaluate on data elsewhere"),
      std::string::npos)
      << r.output;
}

// The same with --data-dir given: the hint that data_dir came from the checkpoint's config (and
// to give --data-dir) was added to any data error, so it told the user to do what they had done.
TEST_F(ValidateCommand, ADataDirGivenOnTheCommandLineGetsNoHintAboutTheStoredOne) {
  const std::string ck = checkpoint_of_missing_data();
  const std::string given = file("elsewhere");
  const ProgramRun r = run_program("validate --checkpoint " + ck + " --data-dir " + given);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("the data folder '" + given + "' does not exist"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("is from the config stored in"), std::string::npos) << r.output;
}

// A checkpoint that does not exist (a typo) is named with the option it was given as: validate
// and infer said "cannot read 'x': No such file or directory", which named no option.
TEST_F(ValidateCommand, AMissingCheckpointIsNamedWithItsOption) {
  const std::string nope = file("nope.safetensors");
  const ProgramRun v = run_program("validate " + kSmoke + " --checkpoint " + nope);
  EXPECT_EQ(v.exit_code, 1) << v.output;
  EXPECT_NE(v.output.find("validate: --checkpoint " + nope + " does not exist"), std::string::npos)
      << v.output;
  const ProgramRun i = run_program("infer --checkpoint " + nope + " --input " +
                                   file("in.safetensors") + " --out " + file("o.safetensors"));
  EXPECT_EQ(i.exit_code, 1) << i.output;
  EXPECT_NE(i.output.find("infer: --checkpoint " + nope + " does not exist"), std::string::npos)
      << i.output;
  const ProgramRun e = run_program("export " + nope + " --out " + file("w.safetensors"));
  EXPECT_EQ(e.exit_code, 1) << e.output;
  EXPECT_NE(e.output.find("export: checkpoint " + nope + " does not exist"), std::string::npos)
      << e.output;
}

// A validation image that passes the folder scan but fails to decode is replaced by its next good
// neighbour (data-loading.md): the metrics then count that neighbour in its place. validate said
// only "skipping corrupt image", which reads as left out of the metrics. It names how many were
// replaced and what that does to the row.
TEST_F(ValidateCommand, ImagesReplacedInTheEvaluationAreNamedWithTheirEffect) {
  const std::string run = train_once();
  image_folder_with_a_spoilt_val_png();
  const ProgramRun r = run_program("validate --checkpoint " + run +
                                   " --dataset image_folder --data-dir " + file("data"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1 of the 5 validation images failed to decode after the folder scan "
                          "and were replaced by their next good neighbour"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("count that neighbour in their place"), std::string::npos) << r.output;
}

// The same in training: its end said "1 corrupt images were skipped", while every evaluation had
// counted the replacing neighbour in the image's place.
TEST_F(ValidateCommand, TrainingNamesValidationImagesReplacedInItsEvaluations) {
  image_folder_with_a_spoilt_val_png();
  const ProgramRun r = run_program("train " + kSmoke + " --device cpu --output " + file("out") +
                                   " --experiment run --plain --epochs 1 --dataset image_folder "
                                   "--data-dir " +
                                   file("data") + " --batch-size 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1 of the 5 validation images failed to decode after the folder scan "
                          "and were replaced by their next good neighbour"),
            std::string::npos)
      << r.output;
}

// timm's `--val-split ''` on an image folder: training reads no validation split (the run said
// "val_split is empty ... which haargrad does not have"), and validate of that run, whose stored
// config has the empty val_split, names the key to give; given it, the same run is evaluated.
TEST_F(ValidateCommand, ARunWithoutValidationTrainsAndValidateNamesValSplit) {
  image_folder_with_a_spoilt_val_png();
  const ProgramRun r = run_program("train " + kSmoke + " --device cpu --output " + file("out") +
                                   " --experiment run --plain --epochs 2 --dataset image_folder "
                                   "--data-dir " +
                                   file("data") + " --batch-size 2 --val-split ''");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("val:   none (val_split '')"), std::string::npos) << r.output;
  // the spoilt validation PNG is never read
  EXPECT_EQ(r.output.find("validation images"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("done: best train loss"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("best_top1 n/a  last_top1 n/a"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  best_train_loss "), std::string::npos) << r.output;  // what ranked

  const ProgramRun none = run_program("validate --checkpoint " + file("out/run"));
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_NE(none.output.find("validate: val_split is empty (from the config stored in " +
                             file("out/run/model_best.safetensors")),
            std::string::npos)
      << none.output;
  EXPECT_NE(none.output.find("--val-split NAME"), std::string::npos) << none.output;
  const ProgramRun named =
      run_program("validate --checkpoint " + file("out/run") + " --val-split validation");
  EXPECT_EQ(named.exit_code, 0) << named.output;
}

// An empty val_split was said to come "from the config stored in CK; a run trained without
// validation stores that" wherever it came from: `--val-split ''` on the command line, or a config
// file given, blamed a checkpoint that stores val_split 'validation'. The message names its source.
TEST_F(ValidateCommand, AnEmptyValSplitIsNamedWithWhereItCameFrom) {
  train::Config c = train::load_config(kSmoke);
  c.val_split = "validation";
  ConvNeXt model(train::model_config_from(c), 3);
  const std::string ck = file("ck.safetensors");
  train::save_checkpoint(ck, model, nullptr, train::TrainState{}, train::to_yaml(c));
  const std::string stored_hint = "a run trained without validation stores that";
  EXPECT_TRUE(test::exited(
      run_program("validate --checkpoint " + ck + " --val-split ''"), 1,
      {"validate: val_split is empty (from the command line's --val-split): give the split"},
      {"the config stored in", stored_hint}));
  c.val_split = "";
  const std::string yaml = file("no_val.yaml");
  train::save_config(c, yaml);
  EXPECT_TRUE(test::exited(run_program("validate " + yaml + " --checkpoint " + ck), 1,
                           {"validate: val_split is empty (from " + yaml + "): give the split"},
                           {"the config stored in", stored_hint}));
  // a checkpoint of a run without validation: its stored config is the source, and says why
  const std::string none = file("none.safetensors");
  train::save_checkpoint(none, model, nullptr, train::TrainState{}, train::to_yaml(c));
  EXPECT_TRUE(test::exited(run_program("validate --checkpoint " + none), 1,
                           {"validate: val_split is empty (from the config stored in " + none +
                            "; " + stored_hint + ")"}));
}

}  // namespace
}  // namespace hg
