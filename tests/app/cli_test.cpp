// The program explains itself: `train --help` lists every config key with type, default and help;
// every --help shows defaults; --version; `models`; unknown keys get close suggestions only; no GPU
// suggests --device cpu; the thread settings reach OpenMP and OpenBLAS; the default model prints no
// warning; `bench CONFIG.yaml` benches the config's model and training step.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "core/memory.h"
#include "core/safetensors.h"
#include "data/image.h"
#include "layers/loss.h"
#include "models/config.h"
#include "models/convnext.h"
#include "program.h"
#include "train/config.h"
#include "train/trainer.h"

#ifdef HAARGRAD_WITH_CUDA
#include "kernels/cuda/context.h"
#endif

namespace hg {
namespace {

using test::exited;
using test::ProgramRun;
using test::run_program;
using CliTest = test::ProgramTest;

const std::string kSource = HAARGRAD_SOURCE_DIR;
const std::string kDefaultConfig = kSource + "/configs/fashion_mnist.yaml";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream s(text);
  for (std::string line; std::getline(s, line);) out.push_back(line);
  return out;
}

std::string with_commas(int64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(CliTest, TrainHelpListsEveryConfigKeyWithTypeDefaultAndHelp) {
  const ProgramRun r = run_program("train --help");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<std::string> lines = lines_of(r.output);
  const auto docs = train::config_key_docs();
  ASSERT_EQ(docs.size(), train::config_keys().size());
  for (const auto& d : docs) {
    EXPECT_FALSE(d.help.empty()) << "config key '" << d.key << "' has no help line in the key table (train/config.cpp)";
    EXPECT_FALSE(d.type.empty()) << d.key;
    // "  key   type (default value)" then the help line below it
    bool found = false;
    for (size_t i = 0; i + 1 < lines.size() && !found; ++i) {
      const std::string& l = lines[i];
      if (l.rfind("  " + d.key + " ", 0) != 0) continue;
      found = true;
      EXPECT_NE(l.find(d.type + " (default " + d.default_value + ")"), std::string::npos) << l;
      EXPECT_NE(lines[i + 1].find(d.help), std::string::npos) << lines[i + 1];
    }
    EXPECT_TRUE(found) << "`train --help` does not list config key '" << d.key << "':\n" << r.output;
  }
  // A few rows spelled out, so the generator itself is checked too.
  EXPECT_NE(r.output.find("weight_decay           float >= 0 (default 2e-05)"), std::string::npos) << r.output;
  EXPECT_NE(
      r.output.find("opt                    one of adamw|sgd|nesterov|momentum (default \"sgd\")"),
      std::string::npos);
  EXPECT_NE(r.output.find("threads                int in [0, 4096] (default 0)"), std::string::npos);
  // an empty choice is shown, not dropped ("one of linear|sqrt" hid the default)
  EXPECT_NE(r.output.find("lr_base_scale          one of \"\"|linear|sqrt (default \"\")"),
            std::string::npos);
  EXPECT_NE(r.output.find("clip_grad              float > 0 or null (default null)"), std::string::npos);
}

TEST_F(CliTest, EveryHelpShowsDefaults) {
  struct Case {
    std::string command;
    std::vector<std::string> defaults;
  };
  const std::vector<Case> cases = {
      {"bench",
       {"--batch INT:POSITIVE=128", "=224", "=20", "=5", "--device TEXT=auto",
        "--threads INT:INT in [0 - 4096]=0"}},
      {"info", {"--img-size INT:POSITIVE=the model's", "--batch INT:POSITIVE=1"}},
      {"train", {"--stop-after-epoch INT=-1"}},
      {"validate", {"--results-file"}},
      {"export-png", {"TEXT=/usr/share/datasets/fashion-mnist", "NONNEGATIVE=0"}},
      {"infer", {"--layout TEXT=nchw"}},
  };
  for (const Case& c : cases) {
    const ProgramRun r = run_program(c.command + " --help");
    EXPECT_EQ(r.exit_code, 0) << c.command << "\n" << r.output;
    for (const std::string& d : c.defaults) EXPECT_NE(r.output.find(d), std::string::npos) << c.command << " --help: " << r.output;
  }
  const ProgramRun root = run_program("--help");
  for (const char* cmd : {"train", "validate", "bench", "export", "infer", "models", "info", "--version"})
    EXPECT_NE(root.output.find(cmd), std::string::npos) << root.output;
}

TEST_F(CliTest, VersionNamesCommitAndOptionalParts) {
  const ProgramRun r = run_program("--version");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(^haargrad (\d+\.\d+\.\d+) \(commit ([0-9a-f]{12}|unknown))")))
      << r.output;
  // The commit baked in at configure time is the one these sources are at (when git can tell).
  FILE* git = popen(("git -C " + kSource + " rev-parse --short=12 HEAD 2>/dev/null").c_str(), "r");
  char buf[64] = {0};
  const bool have_git = git && fgets(buf, sizeof buf, git) != nullptr;
  if (git) pclose(git);
  if (have_git) {
    EXPECT_EQ(m[2].str(), std::string(buf).substr(0, 12)) << r.output;
  }
  for (const char* part :
       {"\ncuda: ", "\nblas: ", "\nopenmp: ", "\nmpi: ", "\nnccl: ", "\nnvjpeg: ", "\ncpu: "})
    EXPECT_NE(r.output.find(part), std::string::npos) << part << " missing:\n" << r.output;
#ifdef HAARGRAD_WITH_CUDA
  EXPECT_NE(r.output.find("cudnn: built with"), std::string::npos) << r.output;
#else
  EXPECT_NE(r.output.find("cuda: not built"), std::string::npos) << r.output;
#endif
#ifdef HAARGRAD_WITH_BLAS
  EXPECT_NE(r.output.find("on 1 thread per call"), std::string::npos) << r.output;
#endif
}

TEST_F(CliTest, ModelsListsEveryNameWithParameterCounts) {
  const ProgramRun r = run_program("models");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const std::string& name : model_names()) {
    const ParamCount n = param_count(model_config(name));
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.output, m, std::regex("\n" + name + " +([0-9,]+) +([0-9,]+) ")))
        << name << " missing:\n" << r.output;
    EXPECT_EQ(m[1].str(), with_commas(n.trainable)) << name;
    EXPECT_EQ(m[2].str(), with_commas(n.fixed)) << name;
  }
  // timm's / the reference's counts (README)
  EXPECT_TRUE(std::regex_search(r.output, std::regex("\nconvnext_tiny +28,589,128 +0 "))) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("\nwtconvnext_tiny +30,383,656 +211,968 "))) << r.output;
  // and each model's own img_size and crop_pct (timm's pretrained config for convnext_tiny)
  EXPECT_TRUE(std::regex_search(r.output, std::regex("\nconvnext_tiny +28,589,128 +0 +224 +0.95 ")))
      << r.output;
  EXPECT_TRUE(
      std::regex_search(r.output, std::regex("\nwtconvnext_fmnist +233,530 +9,216 +28 +1 ")))
      << r.output;
}

TEST_F(CliTest, UnknownKeysSuggestOnlyCloseMatches) {
  // timm's --amp has no key of a close name: no suggestion (not 'lr'), but its counterpart
  const ProgramRun amp = run_program("train " + kDefaultConfig + " --amp true");
  EXPECT_NE(amp.exit_code, 0);
  EXPECT_NE(amp.output.find("unknown key 'amp'"), std::string::npos) << amp.output;
  EXPECT_EQ(amp.output.find("did you mean"), std::string::npos) << amp.output;
  EXPECT_NE(amp.output.find("train --help"), std::string::npos) << amp.output;
  const ProgramRun wd = run_program("train " + kDefaultConfig + " --wieght-decay 0.1");
  EXPECT_NE(wd.output.find("did you mean 'weight_decay'?"), std::string::npos) << wd.output;
}

// An option before the command: `haargrad --versoin` said "A subcommand is required", and
// `haargrad --epochs 3 train ...` "The following arguments were not expected: 3 --epochs". Both
// name the option (with a suggestion when close) and say that options follow the command.
TEST_F(CliTest, AnOptionBeforeTheCommandIsNamed) {
  const ProgramRun typo = run_program("--versoin");
  EXPECT_EQ(typo.exit_code, 2) << typo.output;
  EXPECT_NE(typo.output.find("unknown option '--versoin' (did you mean '--version'?)"),
            std::string::npos)
      << typo.output;
  const ProgramRun first = run_program("--epochs 3 train " + kDefaultConfig);
  EXPECT_EQ(first.exit_code, 2) << first.output;
  EXPECT_NE(first.output.find("unknown option '--epochs': haargrad takes --help and --version "
                              "alone, and a command's options after the command"),
            std::string::npos)
      << first.output;
  EXPECT_EQ(run_program("--version").exit_code, 0);
  EXPECT_EQ(run_program("--help").exit_code, 0);
  EXPECT_EQ(run_program("-h").exit_code, 0);
}

// A mistyped option of a command without config keys read as "The following arguments were not
// expected: 64 --img" (backwards, no suggestion), and beside plot's run folders as "runs:
// Directory does not exist: 100". The option is named, with the one it likely is.
TEST_F(CliTest, AMistypedOptionOfACommandWithoutConfigKeysIsNamed) {
  const ProgramRun info = run_program("info convnext_atto --img 64");
  EXPECT_EQ(info.exit_code, 2) << info.output;
  EXPECT_NE(info.output.find("unknown option '--img' of info; did you mean '--img-size'?"),
            std::string::npos)
      << info.output;
  const ProgramRun plot = run_program("plot " + dir_.string() + " --widht 100");
  EXPECT_EQ(plot.exit_code, 2) << plot.output;
  EXPECT_NE(plot.output.find("unknown option '--widht' of plot; did you mean '--width'?"),
            std::string::npos)
      << plot.output;
  // a run folder that is not there is named as plot's, not as CLI11's "runs: Directory does not
  // exist: X", and is no command-line mistake: status 1, as every missing file
  const ProgramRun missing = run_program("plot " + (dir_ / "no-such-run").string());
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_NE(missing.output.find("plot: the run folder '" + (dir_ / "no-such-run").string() +
                                "' does not exist"),
            std::string::npos)
      << missing.output;
  // the command's own options, also as --name=value, still run
  EXPECT_EQ(run_program("info --model=convnext_atto --img-size 64 --no-measure").exit_code, 0);
  // a value that starts with dashes is no option, as CLI11 reads it (it was "unknown option
  // '--- A vs B ---' of plot, a usage error); this folder holds no run, which plot then says
  const ProgramRun title = run_program("plot " + dir_.string() + " --title '--- A vs B ---'");
  EXPECT_EQ(title.exit_code, 1) << title.output;
  EXPECT_EQ(title.output.find("unknown option"), std::string::npos) << title.output;
}

TEST_F(CliTest, AMistypedCommandIsNamedWithASuggestion) {
  const ProgramRun t = run_program("trian " + kDefaultConfig);
  EXPECT_EQ(t.exit_code, 2);  // usage errors exit 2, as getopt / argparse programs do
  EXPECT_NE(t.output.find("unknown command 'trian'; did you mean 'train'?"), std::string::npos)
      << t.output;
  const ProgramRun far = run_program("frobnicate");
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_NE(far.output.find("unknown command 'frobnicate' (`haargrad --help`"), std::string::npos)
      << far.output;
  EXPECT_EQ(run_program("models").exit_code, 0);  // a real command still runs
  // a missing or malformed argument reads like every other error, with where to look
  const ProgramRun v = run_program("validate");
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.output.find("haargrad: error: --checkpoint is required (`haargrad validate --help`"),
            std::string::npos)
      << v.output;
  const ProgramRun b = run_program("bench --batch abc");
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.output.find("haargrad: error: --batch: 'abc'"), std::string::npos) << b.output;
  EXPECT_EQ(run_program("").exit_code, 2);                      // no command
  EXPECT_EQ(run_program("models extra").exit_code, 2);          // an extra argument
  EXPECT_EQ(run_program("export x.safetensors").exit_code, 2);  // --out missing
}

// A command's own option spelt with underscores, as the config keys may be ("--use_ema",
// "--stop_after_epoch"), reached the config overrides and was called an unknown config key, with
// `haargrad train --help` to look in (validate's too). It is named with its spelling instead; a
// config key written with underscores stays a config key.
TEST_F(CliTest, AnOptionSpeltWithUnderscoresIsNamed) {
  const ProgramRun v = run_program("validate --checkpoint " + file("x.safetensors") + " --use_ema");
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(
      v.output.find(
          "unknown option '--use_ema'; did you mean '--use-ema'? (`haargrad validate --help`"),
      std::string::npos)
      << v.output;
  const ProgramRun r = run_program("validate --checkpoint " + file("x.safetensors") +
                                   " --results_file=" + file("r.csv"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("did you mean '--results-file'?"), std::string::npos) << r.output;
  const ProgramRun t =
      run_program("train " + kDefaultConfig + " --stop_after_epoch 1 --output " + file("out"));
  EXPECT_EQ(t.exit_code, 2);
  EXPECT_NE(
      t.output.find("unknown option '--stop_after_epoch'; did you mean '--stop-after-epoch'?"),
      std::string::npos)
      << t.output;
  EXPECT_FALSE(std::filesystem::exists(file("out")));
  // bench has --img-size of its own, and img_size is a config key: --img_size stays the key's
  const ProgramRun k = run_program("bench " + kDefaultConfig + " --img_size 0");
  EXPECT_NE(k.output.find("key 'img_size'"), std::string::npos) << k.output;
}

// Output that could not be written (`validate > res.csv` on a full disk: a 0-byte file) ended
// with exit status 0. It is an error, named; a closed pipe (`| head`) is none.
TEST_F(CliTest, OutputThatCannotBeWrittenIsAnError) {
  // "{ haargrad models > /dev/full; } 2>&1": the message, on stderr, still reaches the test
  const ProgramRun full = run_program("models > /dev/full; }", "{ ");
  EXPECT_EQ(full.exit_code, 1) << full.output;
  EXPECT_NE(full.output.find("haargrad: error: the standard output could not be written"),
            std::string::npos)
      << full.output;
  const ProgramRun help = run_program("--version > /dev/full; }", "{ ");
  EXPECT_EQ(help.exit_code, 1) << help.output;
  // "( sleep 1; haargrad models; echo $? > rc ) | true": the reader has closed the pipe before
  // the first write
  const ProgramRun piped =
      run_program("models; echo $? > " + file("rc") + " ) | true", "( sleep 1; ");
  EXPECT_EQ(piped.exit_code, 0) << piped.output;
  std::ifstream rc(file("rc"));
  int status = -1;
  rc >> status;
  EXPECT_EQ(status, 0) << piped.output;
}

// A command's own option mistyped (validate --use-emma, infer --inptu) read as an unknown config
// key with a config key's hint, or as the option missing ("--input is required"). It is named,
// with the option it is close to; a mistyped config key keeps its config message.
TEST_F(CliTest, AMistypedOptionOfACommandIsNamed) {
  const ProgramRun v =
      run_program("validate --checkpoint " + file("x.safetensors") + " --use-emma");
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.output.find("unknown option '--use-emma' of validate; did you mean '--use-ema'?"),
            std::string::npos)
      << v.output;
  const ProgramRun i = run_program("infer --checkpoint " + file("x.safetensors") +
                                   " --inptu x.png --out " + file("y.safetensors"));
  EXPECT_EQ(i.exit_code, 2);
  EXPECT_NE(i.output.find("unknown option '--inptu' of infer; did you mean '--input'?"),
            std::string::npos)
      << i.output;
  const ProgramRun t = run_program("train " + kDefaultConfig + " --epoch 3 --output " + file("o"));
  EXPECT_NE(t.output.find("unknown key 'epoch' (command line); did you mean 'epochs'?"),
            std::string::npos)
      << t.output;
  EXPECT_FALSE(std::filesystem::exists(file("o")));
}

// bf16 and tf32 on the cpu were accepted without a word and the log did not name the precision:
// bf16 ran ~12x slower than fp32 (the CPU's bf16 is the reference CUDA is tested against), tf32
// as fp32. The model line names the precision; both say what they are on the cpu.
TEST_F(CliTest, TrainSaysWhatBf16AndTf32AreOnTheCpu) {
  const std::string smoke = kSource + "/configs/smoke.yaml";
  for (const std::string p : {"fp32", "bf16", "tf32"}) {
    const ProgramRun r = run_program("train " + smoke + " --device cpu --threads 1 --epochs 1 " +
                                     "--precision " + p + " --output " + file("out") + " --plain");
    EXPECT_EQ(r.exit_code, 0) << p << r.output;
    EXPECT_NE(r.output.find("device cpu, precision " + p), std::string::npos) << r.output;
    EXPECT_EQ(
        r.output.find("precision bf16 on the cpu runs the bf16 reference") != std::string::npos,
        p == "bf16")
        << r.output;
    EXPECT_EQ(r.output.find("precision tf32 on the cpu computes in fp32") != std::string::npos,
              p == "tf32")
        << r.output;
    std::filesystem::remove_all(file("out"));
  }
}

// timm's train.py takes its config as -c / --config: train read it as "unknown key 'config'" or
// "expected '--key value', got '-c'". Both spellings are the positional CONFIG, as validate's
// --config is; two configs, or none, are usage errors naming them, before any run folder.
TEST_F(CliTest, TrainTakesTimmsConfigOption) {
  const std::string smoke = kSource + "/configs/smoke.yaml";
  for (const std::string opt : {"--config ", "-c ", "--config="}) {
    const ProgramRun r =
        run_program("train " + opt + smoke + " --device cpu --threads 1 --epochs 1 --output " +
                    file("out") + " --experiment e --plain");
    EXPECT_EQ(r.exit_code, 0) << opt << r.output;
    EXPECT_TRUE(std::filesystem::exists(file("out/e/last.safetensors"))) << opt;
    std::filesystem::remove_all(file("out"));
  }
  const ProgramRun two =
      run_program("train " + kDefaultConfig + " --config " + smoke + " --output " + file("out"));
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.output.find("two configs, '" + kDefaultConfig + "' and --config '" + smoke + "'"),
            std::string::npos)
      << two.output;
  const ProgramRun none = run_program("train --plain");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("haargrad: error: config is required"), std::string::npos)
      << none.output;
  const ProgramRun no_value = run_program("train --epochs 1 -c");
  EXPECT_EQ(no_value.exit_code, 2);
  EXPECT_NE(no_value.output.find("-c needs a value"), std::string::npos) << no_value.output;
  EXPECT_FALSE(std::filesystem::exists(file("out")));
}

// timm's scripts take their config as -c / --config; train alone took -c (validate, export and
// infer only --config; bench neither, "'-c' is not a bench option"). Every command with a config
// takes both spellings now: train, validate and bench as their positional CONFIG, export and
// infer as their --config (bench-data: BenchData.TakesTheConfigAsDashCOrDashDashConfig).
TEST_F(CliTest, EveryCommandWithAConfigTakesDashCAndDashDashConfig) {
  const std::string smoke = kSource + "/configs/smoke.yaml";
  const ProgramRun run = run_program("train -c " + smoke + " --device cpu --threads 1 --epochs 1 " +
                                     "--output " + file("out") + " --experiment e --plain");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string ck = file("out/e/last.safetensors");
  data::Image img{40, 40, 3, std::vector<uint8_t>(40 * 40 * 3, 128)};
  const std::string png = file("in.png");
  data::write_png(png, img);
  for (const std::string opt : {"-c ", "--config "}) {
    SCOPED_TRACE(opt);
    const ProgramRun v =
        run_program("validate " + opt + smoke + " --device cpu --threads 1 --checkpoint " + ck);
    EXPECT_EQ(v.exit_code, 0) << v.output;
    EXPECT_NE(v.output.find("model,img_size"), std::string::npos) << v.output;
    const std::string w = file("w.safetensors");
    const ProgramRun e = run_program("export " + ck + " " + opt + smoke + " --out " + w);
    EXPECT_EQ(e.exit_code, 0) << e.output;
    const ProgramRun i = run_program("infer " + opt + smoke + " --device cpu --checkpoint " + w +
                                     " --input " + png + " --out " + file("logits.safetensors"));
    EXPECT_EQ(i.exit_code, 0) << i.output;
    EXPECT_NE(i.output.find(smoke), std::string::npos) << i.output;  // the config it used
    const ProgramRun b = run_program("bench " + opt + smoke + " --device cpu --steps 1 --warmup 0");
    EXPECT_EQ(b.exit_code, 0) << b.output;
    EXPECT_NE(b.output.find("wtconvnext_fmnist"), std::string::npos) << b.output;
  }
  // two configs, or -c without a value, are usage errors naming the command
  const ProgramRun two =
      run_program("validate " + smoke + " -c " + kDefaultConfig + " --checkpoint " + ck);
  EXPECT_EQ(two.exit_code, 2) << two.output;
  EXPECT_NE(two.output.find("validate: two configs, '" + smoke + "' and --config '" +
                            kDefaultConfig + "'"),
            std::string::npos)
      << two.output;
  const ProgramRun no_value = run_program("bench --device cpu -c");
  EXPECT_EQ(no_value.exit_code, 2) << no_value.output;
  EXPECT_NE(no_value.output.find("-c needs a value"), std::string::npos) << no_value.output;
}

// -c / --config without a value: `train -c --epochs 1` said "two configs, '1' and --config
// '--epochs'", and an empty one (`--config=`, `-c ''`) read as no config ("config is required";
// validate went on to the checkpoint, bench-data "cannot open file ''"). Each says it needs one.
TEST_F(CliTest, AConfigOptionWithoutAValueSaysSo) {
  const ProgramRun option = run_program("train -c --epochs 1 --output " + file("out"));
  EXPECT_EQ(option.exit_code, 2) << option.output;
  EXPECT_NE(option.output.find("-c needs a value: the YAML config, not the option '--epochs'"),
            std::string::npos)
      << option.output;
  for (const std::string& args : {std::string("train --config= --epochs 1"),
                                  "validate -c '' --checkpoint " + file("x.safetensors"),
                                  std::string("bench-data --config=")}) {
    const ProgramRun r = run_program(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
    EXPECT_NE(r.output.find("needs a value: the YAML config ("), std::string::npos)
        << args << ": " << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(file("out")));
}

// A second config given as an option was not seen as one: `train --config A --config B` said
// "unknown key 'config'", `train -c A -c B` "config keys take two dashes; the short options are
// timm's -b, -vb and -j" (-c is one), and `train --epochs 1 A --config B` "expected '--key
// value', got 'A'". Each is the usage error that names both configs.
TEST_F(CliTest, TrainNamesASecondConfigGivenAsAnOption) {
  const std::string smoke = kSource + "/configs/smoke.yaml";
  const std::string both =
      "two configs, --config '" + kDefaultConfig + "' and --config '" + smoke + "'";
  for (const std::string& args : {"--config " + kDefaultConfig + " --config " + smoke,
                                  "-c " + kDefaultConfig + " -c " + smoke,
                                  "--config=" + kDefaultConfig + " --epochs 1 --config=" + smoke}) {
    const ProgramRun r = run_program("train " + args + " --output " + file("out"));
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
    EXPECT_NE(r.output.find(both), std::string::npos) << args << ": " << r.output;
  }
  const ProgramRun after = run_program("train --epochs 1 " + kDefaultConfig + " --config " + smoke +
                                       " --output " + file("out"));
  EXPECT_EQ(after.exit_code, 2) << after.output;
  EXPECT_NE(after.output.find("two configs, '" + kDefaultConfig + "' and --config '" + smoke + "'"),
            std::string::npos)
      << after.output;
  EXPECT_FALSE(std::filesystem::exists(file("out")));
}

// An option's value named *.yaml counted as a config: `bench-data -c X.yaml --output rows.yaml`
// said "two configs, 'rows.yaml' and --config 'X.yaml'" (main.cpp looked for a CONFIG among all
// the other arguments), and a config key's value came before the CONFIG after it (`train
// --experiment e.yaml X.yaml` read e.yaml as the config). A value is never a config: --output
// rows.yaml is refused for its extension, and e.yaml is the experiment's name.
TEST_F(CliTest, AnOptionsValueNamedYamlIsNoConfig) {
  const std::string smoke = kSource + "/configs/smoke.yaml", rows = file("rows.yaml");
  const std::string refused = "--output '" + rows + "' must end in .json or .csv";
  EXPECT_TRUE(exited(run_program("bench-data -c " + smoke + " --output " + rows), 1,
                     {"bench-data: " + refused}, {"two configs"}));
  EXPECT_TRUE(exited(run_program("bench --config " + smoke + " --device cpu --output " + rows), 1,
                     {"bench: " + refused}, {"two configs"}));
  EXPECT_TRUE(
      exited(run_program("bench-augment --output " + rows), 1, {"bench-augment: " + refused}));
  EXPECT_FALSE(std::filesystem::exists(rows));
  const std::string run =
      " --device cpu --threads 1 --epochs 1 --output " + file("out") + " --plain";
  EXPECT_TRUE(
      exited(run_program("train --experiment e.yaml -c " + smoke + run), 0, {}, {"two configs"}));
  EXPECT_TRUE(std::filesystem::exists(file("out/e.yaml/last.safetensors")));
  EXPECT_TRUE(exited(run_program("train --experiment f.yaml " + smoke + run), 0, {}));
  EXPECT_TRUE(std::filesystem::exists(file("out/f.yaml/last.safetensors")));
}

// timm's flags that haargrad lacks (--amp, --sync-bn) before the CONFIG: the CONFIG was taken for
// the unknown key's value, and the run said "config is required" instead of naming the key and
// what to write here.
TEST_F(CliTest, AnUnknownFlagBeforeTheConfigIsNamed) {
  for (const std::string flag : {"--amp", "--sync-bn"}) {
    SCOPED_TRACE(flag);
    EXPECT_TRUE(
        exited(run_program("train " + flag + " " + kDefaultConfig + " --output " + file("out")), 1,
               {"unknown key '", "(command line): timm's " + flag}, {"config is required"}));
  }
  EXPECT_FALSE(std::filesystem::exists(file("out")));
}

// The same with the unknown option's value named *.yaml before the CONFIG: `train --unknown e.yaml
// x.yaml` took e.yaml for the CONFIG and said "cannot open file 'e.yaml'", naming no option.
// e.yaml is the option's value, x.yaml the CONFIG, and the option is named.
TEST_F(CliTest, AnUnknownOptionsYamlValueBeforeTheConfigIsNoConfig) {
  std::filesystem::copy_file(kSource + "/configs/smoke.yaml", file("x.yaml"));
  EXPECT_TRUE(exited(run_program("train --unknown " + file("e.yaml") + " " + file("x.yaml") +
                                 " --output " + file("out")),
                     1, {"unknown key 'unknown' (command line)"},
                     {"e.yaml", "config is required"}));
  // and with the CONFIG as -c: e.yaml was a second config ("two configs")
  EXPECT_TRUE(exited(run_program("train --unknown " + file("e.yaml") + " -c " + file("x.yaml") +
                                 " --output " + file("out")),
                     1, {"unknown key 'unknown' (command line)"}, {"two configs"}));
  // one *.yaml after an unknown flag stays the CONFIG (--amp x.yaml: timm's flag)
  EXPECT_TRUE(exited(run_program("train --amp " + file("x.yaml") + " --output " + file("out")), 1,
                     {"unknown key 'amp' (command line): timm's --amp"}, {"config is required"}));
  EXPECT_FALSE(std::filesystem::exists(file("out")));
}

// A relative path starting with '-' went into the commands the program suggests as it was, where
// the command may read it as an option (`haargrad train -runs/e/args.yaml ...`): it is ./-runs/...
// (core/shell_quote.h).
TEST_F(CliTest, ASuggestedCommandGivesAPathStartingWithADashAsAFile) {
  safetensors::save(file("-w.safetensors"), {{"w", Tensor::zeros({1})}});  // weights alone
  const std::string in_dir = "cd '" + dir_.string() + "' && ";
  EXPECT_TRUE(exited(run_program("train --resume=-w.safetensors", in_dir), 1,
                     {"`haargrad train CONFIG.yaml --initial-checkpoint ./-w.safetensors`"}));
}

// `--config=-x.yaml` (a config whose name starts with '-') said "config is required": moved to
// the CONFIG slot, the name read as an option there.
TEST_F(CliTest, AConfigNamedWithALeadingDashIsReadAsAFile) {
  std::filesystem::copy_file(kSource + "/configs/smoke.yaml", file("-weird.yaml"));
  const std::string in_dir = "cd '" + dir_.string() + "' && ";
  // read, and refused for its override (nothing trains)
  EXPECT_TRUE(exited(run_program("train --config=-weird.yaml --epochs 0", in_dir), 1,
                     {"key 'epochs' (command line)"}, {"required"}));
}

// `train --resume CKPT` without a config was refused ("is a checkpoint, not a YAML config: resume
// it with `haargrad train RUN/args.yaml --resume CKPT`"); a timm user expects the run's recorded
// config. It reads the args.yaml of the checkpoint's folder, says which (console and log.txt), and
// goes on as the command with it does, overrides included. Without that args.yaml the message names
// the file and the command with a config; --resume auto (which searches a config's output) and no
// --resume at all still ask for a config.
TEST_F(CliTest, TrainResumeWithoutAConfigReadsTheRunsArgsYaml) {
  const std::string smoke = kSource + "/configs/smoke.yaml";
  const ProgramRun first =
      run_program("train " + smoke + " --device cpu --threads 1 --stop-after-epoch 1 --output " +
                  file("out") + " --experiment e --plain");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const std::string run = file("out/e"), ck = run + "/last.safetensors", args = run + "/args.yaml";
  auto summary_rows = [&] {
    std::ifstream in(run + "/summary.csv");
    int n = -1;  // the header
    for (std::string line; std::getline(in, line);) n += !line.empty();
    return n;
  };
  ASSERT_EQ(summary_rows(), 1);
  const std::string used = "config: " + args + " (no config given: the resumed run's own)";
  const ProgramRun resumed = run_program("train --resume " + ck + " --plain");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find(used), std::string::npos) << resumed.output;
  EXPECT_EQ(summary_rows(), 2);  // the run's second epoch, in its own folder
  EXPECT_FALSE(std::filesystem::exists(file("out/e-2")));
  std::ifstream log_in(run + "/log.txt");
  const std::string log((std::istreambuf_iterator<char>(log_in)), std::istreambuf_iterator<char>());
  EXPECT_NE(log.find(used), std::string::npos) << log;
  // timm's --resume=CKPT, with an override: one more epoch
  const ProgramRun more = run_program("train --resume=" + ck + " --epochs 3 --plain");
  ASSERT_EQ(more.exit_code, 0) << more.output;
  EXPECT_NE(more.output.find("epochs 2 -> 3"), std::string::npos) << more.output;
  EXPECT_EQ(summary_rows(), 3);
  // a config given is still checked against the run's record: another seed is refused
  const ProgramRun other =
      run_program("train " + args + " --resume " + ck + " --seed 5 --epochs 4");
  EXPECT_EQ(other.exit_code, 1) << other.output;
  EXPECT_NE(other.output.find("seed"), std::string::npos) << other.output;
  EXPECT_EQ(summary_rows(), 3);
  // no args.yaml beside the checkpoint (removed, as the trainer's advice for an edited one says):
  // the config the checkpoint stores is the run's (it was refused, naming args.yaml, which sent
  // the user round in a loop)
  std::filesystem::rename(args, run + "/args.yaml.bak");
  const ProgramRun stored = run_program("train --resume " + ck + " --epochs 4 --plain");
  ASSERT_EQ(stored.exit_code, 0) << stored.output;
  EXPECT_NE(stored.output.find("config: the config stored in " + ck +
                               " (no config given: the resumed run's own)"),
            std::string::npos)
      << stored.output;
  EXPECT_EQ(summary_rows(), 4);
  EXPECT_FALSE(std::filesystem::exists(file("out/e-2")));
  // a checkpoint that stores no config, with no args.yaml: both named, with the command
  std::filesystem::remove(args);
  const std::string bare = file("bare.safetensors");
  {
    hg::safetensors::File f = hg::safetensors::load(ck);
    f.metadata.erase("config");
    hg::safetensors::save(bare, f);
  }
  const ProgramRun missing = run_program("train --resume " + bare + " --epochs 5");
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_NE(missing.output.find("stores no config"), std::string::npos) << missing.output;
  EXPECT_NE(missing.output.find("`haargrad train CONFIG.yaml --resume " + bare + "`"),
            std::string::npos)
      << missing.output;
  EXPECT_EQ(summary_rows(), 4);
  // an args.yaml beside it that is a folder was said to be "empty"
  const std::string beside = file("args.yaml");
  std::filesystem::create_directory(beside);
  const ProgramRun folder = run_program("train --resume " + bare + " --epochs 5");
  EXPECT_EQ(folder.exit_code, 1) << folder.output;
  EXPECT_NE(folder.output.find(beside + " is a folder and " + bare + " stores no config"),
            std::string::npos)
      << folder.output;
  std::filesystem::remove(beside);
  const ProgramRun gone = run_program("train --resume " + file("nothing.safetensors"));
  EXPECT_EQ(gone.exit_code, 1) << gone.output;
  EXPECT_NE(gone.output.find("checkpoint " + file("nothing.safetensors") + " does not exist"),
            std::string::npos)
      << gone.output;
  // a link that leads to itself is there, unreadable: it was said not to exist here (without a
  // config) while the trainer (with one) and validate said why it cannot be read
  const std::string loop = file("loop.safetensors");
  std::filesystem::create_symlink(loop, loop);
  const ProgramRun looped = run_program("train --resume " + loop);
  EXPECT_EQ(looped.exit_code, 1) << looped.output;
  EXPECT_NE(
      looped.output.find("checkpoint " + loop + " cannot be read: " +
                         std::make_error_code(std::errc::too_many_symbolic_link_levels).message()),
      std::string::npos)
      << looped.output;
  const ProgramRun autopick = run_program("train --resume auto");
  EXPECT_EQ(autopick.exit_code, 2) << autopick.output;
  EXPECT_NE(autopick.output.find("config is required with --resume auto"), std::string::npos)
      << autopick.output;
}

// timm's train.py needs no config (`train.py --data-dir DIR --model NAME`): keys alone go on top of
// the defaults, said in the log, and args.yaml records the run; nothing at all is still a usage
// error. (It said "config is required".)
TEST_F(CliTest, TrainWithKeysAloneStartsFromTheDefaults) {
  const ProgramRun r = run_program(
      "train --model wtconvnext_fmnist --depths 1,1 --dims 8,16 --patch-size 2 --wt-levels 1,1 "
      "--num-classes 4 --img-size 32 --crop-pct 1.0 --dataset synthetic --synthetic-size 16 "
      "--batch-size 8 --epochs 1 --max-steps-per-epoch 2 --warmup-epochs 0 --device cpu --threads "
      "1 --workers 0 --output " +
      file("out") + " --experiment d --plain");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("config: none given: the defaults"), std::string::npos) << r.output;
  const hg::train::Config args = hg::train::load_config(file("out/d/args.yaml"));
  EXPECT_EQ(args.model, "wtconvnext_fmnist");
  EXPECT_EQ(args.epochs, 1);
  EXPECT_EQ(args.weight_decay, hg::train::Config{}.weight_decay);  // a default, recorded
  const ProgramRun none = run_program("train --plain");
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("keys alone on top of the defaults"), std::string::npos)
      << none.output;
}

// A run started from keys alone goes on with the same keys and --resume auto, which searches their
// output and experiment (it was refused: "config is required with --resume auto").
TEST_F(CliTest, TrainWithKeysAloneResumesWithResumeAuto) {
  const std::string keys =
      "train --model wtconvnext_fmnist --depths 1,1 --dims 8,16 --patch-size 2 --wt-levels 1,1 "
      "--num-classes 4 --img-size 32 --crop-pct 1.0 --dataset synthetic --synthetic-size 16 "
      "--batch-size 8 --epochs 2 --max-steps-per-epoch 2 --warmup-epochs 0 --device cpu --threads "
      "1 --workers 0 --output " +
      file("out") + " --experiment d --plain";
  const ProgramRun first = run_program(keys + " --stop-after-epoch 1");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const ProgramRun resumed = run_program(keys + " --resume auto");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("config: none given: the defaults"), std::string::npos)
      << resumed.output;
  std::ifstream in(file("out/d/summary.csv"));
  int rows = -1;  // the header
  for (std::string line; std::getline(in, line);) rows += !line.empty();
  EXPECT_EQ(rows, 2);  // its second epoch, in its own folder
  EXPECT_FALSE(std::filesystem::exists(file("out/d-2")));
}

// Overrides before the config (`train --epochs 1 x.yaml`, as timm's argparse takes options in any
// order) said "config is required": the config is the first argument named *.yaml after options,
// also after --resume CKPT.
TEST_F(CliTest, OverridesMayComeBeforeTheConfig) {
  const std::string smoke = kSource + "/configs/smoke.yaml";
  const ProgramRun r = run_program("train --device cpu --threads 1 --epochs 1 " + smoke +
                                   " --output " + file("out") + " --experiment e --plain");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(file("out/e/last.safetensors"))) << r.output;
  // the config after --resume CKPT (it said "expected '--key value', got 'smoke.yaml'")
  const ProgramRun resumed = run_program("train --resume " + file("out/e/last.safetensors") + " " +
                                         smoke + " --device cpu --threads 1 --epochs 2 --output " +
                                         file("out") + " --experiment e --plain");
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(resumed.output.find("no config given"), std::string::npos) << resumed.output;
}

// `train --resume CKPT` without a config takes the args.yaml beside CKPT as the run's own; a
// checkpoint copied into another run's folder (its run.json names another run) would go on with
// that other run's config (here its lr, experiment and output, keys a resume may change) while the
// log said "the resumed run's own". Refused, naming the checkpoint, args.yaml and run.json, before
// any run folder is claimed.
TEST_F(CliTest, TrainResumeWithoutAConfigRefusesAnotherRunsArgsYaml) {
  const std::string smoke = kSource + "/configs/smoke.yaml";
  const std::string common = " --device cpu --threads 1 --epochs 1 --plain --output " + file("out");
  const ProgramRun a = run_program("train " + smoke + common + " --experiment a");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const ProgramRun b = run_program("train " + smoke + common + " --experiment b --lr 0.002");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const std::string copy = file("out/b/from_a.safetensors");
  std::filesystem::copy_file(file("out/a/last.safetensors"), copy);
  const ProgramRun resumed = run_program("train --resume " + copy + " --epochs 2 --plain");
  EXPECT_EQ(resumed.exit_code, 1) << resumed.output;
  EXPECT_NE(resumed.output.find(file("out/b/args.yaml")), std::string::npos) << resumed.output;
  EXPECT_NE(resumed.output.find(file("out/b/run.json")), std::string::npos) << resumed.output;
  EXPECT_NE(resumed.output.find("another run"), std::string::npos) << resumed.output;
  EXPECT_NE(resumed.output.find("`haargrad train CONFIG.yaml --resume " + copy + "`"),
            std::string::npos)
      << resumed.output;
  EXPECT_FALSE(std::filesystem::exists(file("out/b-2")));
  // the run's own checkpoint beside that args.yaml still goes on with it
  const ProgramRun own =
      run_program("train --resume " + file("out/b/last.safetensors") + " --epochs 2 --plain");
  EXPECT_EQ(own.exit_code, 0) << own.output;
}

// A run.json edited to lack its "id" (and the host, pid and created that name a marker from before
// ids) was read as the run "::": `train --resume CKPT` said "... run.json names run ::" as if the
// folder were another run's. A marker without an id names no run: the resume goes on in place,
// and the warning names the file and the missing field.
TEST_F(CliTest, AResumeWithARunMarkerWithoutItsIdNamesTheMissingField) {
  const std::string smoke = kSource + "/configs/smoke.yaml";
  const ProgramRun a =
      run_program("train " + smoke + " --device cpu --threads 1 --epochs 1 --plain --output " +
                  file("out") + " --experiment e");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  std::ofstream(file("out/e/run.json"), std::ios::trunc) << "{\"format\": \"haargrad-run-1\"}\n";
  const ProgramRun resumed =
      run_program("train --resume " + file("out/e/last.safetensors") + " --epochs 2 --plain");
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(resumed.output.find("names run ::"), std::string::npos) << resumed.output;
  EXPECT_NE(resumed.output.find(file("out/e/run.json") +
                                " cannot be read as the run folder's marker (a JSON object "
                                "without its \"id\" field"),
            std::string::npos)
      << resumed.output;
  EXPECT_FALSE(std::filesystem::exists(file("out/e-2")));  // went on in its own folder
}

// `train --resume RUN` with a run folder and no config logged "config: RUN/args.yaml (no config
// given: the resumed run's own)" before the trainer said the folder is no checkpoint (and a folder
// without args.yaml was sent to `train CONFIG.yaml --resume FOLDER`, which then said it). The
// folder is said first and alone, with the checkpoints in it as commands to paste.
TEST_F(CliTest, TrainResumeOfARunFolderNamesItsCheckpointsFirst) {
  const std::string smoke = kSource + "/configs/smoke.yaml";
  const ProgramRun run = run_program("train " + smoke + " --device cpu --threads 1 --epochs 1 " +
                                     "--output " + file("out") + " --experiment e --plain");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const std::string& folder : {file("out/e"), file("out/e/")}) {
    SCOPED_TRACE(folder);
    const ProgramRun r = run_program("train --resume " + folder + " --plain");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_EQ(r.output.find("config:"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("resume: " + folder + " is a folder, not a checkpoint"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("`haargrad train --resume " + file("out/e/last.safetensors") + "`"),
              std::string::npos)
        << r.output;
  }
  // with a config the trainer says it, with the option to give instead
  const ProgramRun with_config =
      run_program("train " + smoke + " --device cpu --resume " + file("out/e") + " --plain");
  EXPECT_EQ(with_config.exit_code, 1) << with_config.output;
  EXPECT_NE(with_config.output.find(file("out/e") +
                                    " is a folder, not a checkpoint: resume from a checkpoint in "
                                    "it, --resume " +
                                    file("out/e/last.safetensors")),
            std::string::npos)
      << with_config.output;
  // a folder without checkpoints says so
  std::filesystem::create_directories(file("empty"));
  const ProgramRun empty = run_program("train --resume " + file("empty") + " --plain");
  EXPECT_EQ(empty.exit_code, 1) << empty.output;
  EXPECT_EQ(empty.output.find("config:"), std::string::npos) << empty.output;
  EXPECT_NE(empty.output.find(file("empty") + " is a folder, not a checkpoint, and holds no"),
            std::string::npos)
      << empty.output;
}

// `train --resume X.yaml` (a config where the checkpoint goes) read the YAML as a safetensors file
// and sent the user to "the folder itself where the command takes one", which --resume refuses.
// Without a config and with one, it says what --resume takes and where the config goes.
TEST_F(CliTest, TrainResumeOfAYamlConfigSaysWhatResumeTakes) {
  const std::string smoke = kSource + "/configs/smoke.yaml";
  const std::string yaml = file("some.yaml"), yml = file("args.YML");
  std::ofstream(yaml) << "model: convnext_atto\n";
  std::ofstream(yml) << "model: convnext_atto\n";
  const std::vector<std::string> wrong = {"folder itself", "header length", "config:"};
  EXPECT_TRUE(exited(run_program("train --resume " + yaml + " --plain"), 1,
                     {"resume: " + yaml +
                          " is a YAML config, not a checkpoint: --resume takes a "
                          "checkpoint file of a run (RUN/last.safetensors",
                      "or auto; a config goes as the CONFIG argument (`haargrad train " + yaml +
                          " --resume auto` resumes"},
                     wrong));
  EXPECT_TRUE(exited(run_program("train " + smoke + " --device cpu --output " + file("out") +
                                 " --resume " + yml + " --plain"),
                     1,
                     {"resume: " + yml + " is a YAML config, not a checkpoint",
                      "a config goes as the CONFIG argument (this command has one)"},
                     {"folder itself", "header length"}));
  EXPECT_FALSE(std::filesystem::exists(file("out"))) << "a run folder was made";
}

// A folder without args.yaml (checkpoints copied out of their run folder) given to `train --resume`
// without a config was sent to `haargrad train --resume FOLDER/last.safetensors`, which then said
// that FOLDER/args.yaml does not exist: the command to paste takes the run's config.
TEST_F(CliTest, TrainResumeOfAFolderWithoutArgsYamlAsksForTheConfig) {
  std::filesystem::create_directories(file("copied"));
  std::ofstream(file("copied/last.safetensors")) << "whatever";  // the folder is refused first
  const ProgramRun r = run_program("train --resume " + file("copied") + " --plain");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("`haargrad train CONFIG.yaml --resume " +
                          file("copied/last.safetensors") + "`"),
            std::string::npos)
      << r.output;
}

// `train --resume` without a config: weights alone (an export) were sent to "give the run's
// config, `haargrad train CONFIG.yaml --resume W`", which then said they hold weights only; and
// `--resume --epochs 2` said "checkpoint --epochs does not exist".
TEST_F(CliTest, TrainResumeWithoutAConfigNamesWeightsAndAMissingValue) {
  const std::string smoke = kSource + "/configs/smoke.yaml";
  const ProgramRun run = run_program("train " + smoke + " --device cpu --threads 1 --epochs 1 " +
                                     "--output " + file("out") + " --experiment e --plain");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string w = file("w.safetensors");
  const ProgramRun exported =
      run_program("export " + file("out/e/last.safetensors") + " --out " + w);
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  const ProgramRun weights = run_program("train --resume " + w + " --epochs 2 --plain");
  EXPECT_EQ(weights.exit_code, 1) << weights.output;
  EXPECT_NE(weights.output.find(w + " holds weights only"), std::string::npos) << weights.output;
  EXPECT_NE(weights.output.find("--initial-checkpoint " + w), std::string::npos) << weights.output;
  const ProgramRun no_value = run_program("train --resume --epochs 2 --plain");
  EXPECT_EQ(no_value.exit_code, 2) << no_value.output;
  EXPECT_NE(no_value.output.find("--resume needs a value"), std::string::npos) << no_value.output;
}

// A folder given as the config, or a stop position that means nothing, is named before any run
// folder is claimed.
TEST_F(CliTest, AFolderAsConfigAndABadStopAreNamed) {
  const ProgramRun dir = run_program("train " + dir_.string() + " --output " + file("out"));
  EXPECT_NE(dir.exit_code, 0);
  EXPECT_NE(dir.output.find("is a folder, not a YAML file"), std::string::npos) << dir.output;
  EXPECT_NE(dir.output.find("a data folder (timm's positional DATA_DIR) is given as --data-dir"),
            std::string::npos)
      << dir.output;
  for (const char* stop : {"0", "-5", "+0"}) {
    const ProgramRun r = run_program("train " + kDefaultConfig + " --stop-after-epoch " + stop +
                                     " --output " + file("out"));
    EXPECT_EQ(r.exit_code, 2) << r.output;  // a usage error, as the README says
    EXPECT_NE(r.output.find("--stop-after-epoch"), std::string::npos) << r.output;
    // ("+0", which the old character test let through, is read as 0)
    EXPECT_NE(r.output.find(std::string("must be >= 1 (or -1: every epoch), got ") +
                            (stop[0] == '+' ? stop + 1 : stop)),
              std::string::npos)
        << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(file("out")));
}

// plot draws a PNG: another extension for --out is refused before anything is drawn.
TEST_F(CliTest, PlotOutMustBeAPng) {
  const ProgramRun r = run_program("plot " + dir_.string() + " --out " + file("curves.svg"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("must end in .png"), std::string::npos) << r.output;
}

// `--out=~/x` reaches the program with its '~' (the shell expands a '~' only at the start of a
// word, or after the '=' of an assignment): it was read as a folder named '~'. It is the home
// folder, as for a separate word.
TEST_F(CliTest, ATildeAfterAnOptionsEqualsSignIsTheHomeFolder) {
  const ProgramRun r =
      run_program("plot " + dir_.string() + " --out=~/curves.svg", "HOME=" + dir_.string() + " ");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("plot: --out " + file("curves.svg") + " must end in .png"),
            std::string::npos)
      << r.output;
}

// `--config=~/c.yaml` became the CONFIG '~/c.yaml' before the '~' after an option's '=' was read
// as the home folder: "cannot open file '~/c.yaml'" (validate's own --config option, which that
// move replaced, had taken it). It is the home folder's c.yaml for every command with a config.
TEST_F(CliTest, ATildeInDashDashConfigEqualsIsTheHomeFolder) {
  std::ofstream(file("c.yaml")) << "no_such_key: 1\n";
  std::ofstream(file("x.safetensors")) << "whatever";  // validate reads the config first
  for (const std::string& command :
       {std::string("train"), "validate --checkpoint " + file("x.safetensors"),
        std::string("bench"), std::string("bench-data")}) {
    const ProgramRun r = run_program(command + " --config=~/c.yaml", "HOME=" + dir_.string() + " ");
    EXPECT_EQ(r.output.find("~/c.yaml"), std::string::npos) << command << ": " << r.output;
    EXPECT_NE(r.output.find("no_such_key"), std::string::npos) << command << ": " << r.output;
  }
}

// An output suffix in capitals (R.CSV, CURVES.PNG) was refused by bench and plot, where validate
// takes one in any case: any case is that suffix.
TEST_F(CliTest, OutputSuffixesAreReadInAnyCase) {
  const ProgramRun p = run_program("plot " + dir_.string() + " --out " + file("CURVES.PNG"));
  EXPECT_NE(p.exit_code, 0);
  EXPECT_EQ(p.output.find("must end in"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("holds no summary.csv"), std::string::npos) << p.output;
  const ProgramRun b =
      run_program("bench --device cpu --models convnext_foo --output " + file("R.CSV"));
  EXPECT_NE(b.exit_code, 0);
  EXPECT_EQ(b.output.find("must end in"), std::string::npos) << b.output;
  EXPECT_NE(b.output.find("unknown model 'convnext_foo'"), std::string::npos) << b.output;
}

// export-png into a folder that holds files already is refused: the earlier images would stay and
// be trained on beside the new ones.
TEST_F(CliTest, ExportPngRefusesANonEmptyFolder) {
  std::filesystem::create_directories(file("png/train"));
  { std::ofstream(file("png/train/old.png")) << "x"; }
  const ProgramRun r = run_program("export-png --out " + file("png") + " --limit-per-class 1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("is not empty"), std::string::npos) << r.output;
  // --out '' passed both checks and wrote into the working folder, logged as /train and /val
  const ProgramRun empty = run_program("export-png --out '' --limit-per-class 1");
  EXPECT_EQ(empty.exit_code, 1) << empty.output;
  EXPECT_NE(empty.output.find("--out is empty"), std::string::npos) << empty.output;
}

// export-png has no config: a --data-dir it cannot read is named as its option, not as "the
// config's data_dir".
TEST_F(CliTest, ExportPngNamesItsDataDirOption) {
  for (const std::string& dir : {file("missing"), std::string("''")}) {
    const ProgramRun r = run_program("export-png --out " + file("png") + " --data-dir " + dir);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("--data-dir"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("config"), std::string::npos) << r.output;
  }
}

// export-png read the test split only after writing the train split (minutes for all of it): a
// data folder without the test files left a half export behind, which a rerun then refused as
// not empty. Both splits are read first; an --out that is a file is named as one.
TEST_F(CliTest, ExportPngReadsBothSplitsBeforeWriting) {
  const std::string src = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(src + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << src << " is not installed (dataset-fashion-mnist)";
  std::filesystem::create_directories(file("fm"));
  for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"})
    std::filesystem::create_symlink(src + "/" + f, file("fm/") + f);
  const ProgramRun r = run_program("export-png --out " + file("png") + " --data-dir " + file("fm") +
                                   " --limit-per-class 1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("t10k-labels-idx1-ubyte"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(file("png/train"))) << r.output;
  { std::ofstream(file("empty.txt")); }
  const ProgramRun f =
      run_program("export-png --out " + file("empty.txt") + " --limit-per-class 1");
  EXPECT_NE(f.exit_code, 0);
  EXPECT_NE(f.output.find("export-png: --out " + file("empty.txt") + " is a file"),
            std::string::npos)
      << f.output;
}

// export-png found a label past the ten classes only in the writer of its split, after the train
// split's export ("10 class folder names for 58 classes", naming no file): it is named with its
// sample and file before anything is written. And an export is written beside --out and moved
// into it when whole (an empty --out folder too): one stopped half-way left a partial --out.
TEST_F(CliTest, ExportPngChecksTheLabelsFirstAndWritesItsFolderWhole) {
  // an IDX file: its magic and sizes as big-endian u32, then the bytes
  const auto idx = [&](const std::string& name, const std::vector<uint32_t>& header,
                       const std::string& data) {
    std::string bytes;
    for (const uint32_t v : header)
      for (const int shift : {24, 16, 8, 0}) bytes += static_cast<char>((v >> shift) & 0xff);
    std::ofstream(file("fm/" + name), std::ios::binary) << bytes + data;
  };
  std::filesystem::create_directories(file("fm"));
  idx("train-images-idx3-ubyte", {0x803, 3, 4, 4}, std::string(48, '\x40'));
  idx("train-labels-idx1-ubyte", {0x801, 3}, std::string("\x00\x01\x02", 3));
  idx("t10k-images-idx3-ubyte", {0x803, 2, 4, 4}, std::string(32, '\x80'));
  idx("t10k-labels-idx1-ubyte", {0x801, 2}, std::string("\x01\x39", 2));  // 57
  const ProgramRun bad =
      run_program("export-png --out " + file("png") + " --data-dir " + file("fm"));
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("the first that of sample 1 (label 57) in '" +
                            file("fm/t10k-labels-idx1-ubyte") + "'"),
            std::string::npos)
      << bad.output;
  EXPECT_NE(bad.output.find("nothing was written"), std::string::npos) << bad.output;
  EXPECT_FALSE(std::filesystem::exists(file("png")));
  idx("t10k-labels-idx1-ubyte", {0x801, 2}, std::string("\x01\x09", 2));
  // an empty folder is taken, and so is one holding only the staging folder of an export stopped
  // half-way, which is cleared
  std::filesystem::create_directories(file("png/.export-png-123/train/0_t-shirt_top"));
  const ProgramRun ok =
      run_program("export-png --out " + file("png") + " --data-dir " + file("fm"));
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_TRUE(std::filesystem::exists(file("png/val/9_ankle_boot/00001.png"))) << ok.output;
  EXPECT_TRUE(std::filesystem::exists(file("png/train/2_pullover/00002.png"))) << ok.output;
  std::vector<std::string> names;  // no staging folder is left
  for (const auto& e : std::filesystem::directory_iterator(file("png")))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"train", "val"}));
  // '.' as --out: the folder itself is filled (a staging folder beside it could not move there)
  std::filesystem::create_directories(file("here"));
  const ProgramRun here =
      run_program("export-png --out . --data-dir " + file("fm"), "cd " + file("here") + " && ");
  EXPECT_EQ(here.exit_code, 0) << here.output;
  EXPECT_TRUE(std::filesystem::exists(file("here/val/1_trouser/00000.png"))) << here.output;
}

// `info convnext_atto` in a folder holding a file of that name read the file as a config
// ("expected a mapping"): a model's name is the model.
TEST_F(CliTest, InfoTakesAModelsNameOverAFileOfThatName) {
  std::filesystem::create_directories(file("here"));
  { std::ofstream(file("here/convnext_atto")) << "not a config\n"; }
  const ProgramRun r =
      run_program("info convnext_atto --no-measure", "cd " + file("here") + " && ");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("trainable params 3695520"), std::string::npos) << r.output;
}

// alloc-trace --save of a folder that exists but cannot be written was found when the first trace
// was saved, after its recording (minutes for the default models); it is refused first. As root
// the program runs as nobody, for whom the folder is read-only.
TEST_F(CliTest, AllocTraceRefusesAFolderItCannotWriteBeforeRecording) {
  namespace fs = std::filesystem;
  fs::create_directories(file("ro"));
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(file("ro"), fs::perms::owner_read | fs::perms::owner_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  const std::string as =
      ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  const ProgramRun r = run_program(
      "alloc-trace --models convnext_atto --batches 2,4 --img-size 32 "
      "--steps 1 --device cpu --save " +
          file("ro"),
      as);
  fs::permissions(file("ro"), fs::perms::owner_all);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("alloc-trace: --save " + file("ro") +
                          ": the folder cannot be written (Permission denied)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("during the recording"), std::string::npos)
      << "recorded first: " << r.output;
}

// alloc-trace --models with an unknown name last recorded and saved every model before it, then
// failed: each name is checked first.
TEST_F(CliTest, AllocTraceChecksEveryModelBeforeRecording) {
  const ProgramRun r = run_program(
      "alloc-trace --models wtconvnext_fmnist,bogus --img-size 28 --steps 1 --device cpu --save " +
      file("traces"));
  EXPECT_TRUE(
      exited(r, 1, {"alloc-trace: --models: unknown model 'bogus'"}, {"during the recording"}));
  EXPECT_TRUE(std::filesystem::is_empty(file("traces")));
}

// alloc-trace --batches 0,2 exited 1, where README's rule (and --steps 0 beside it) gives 2 for a
// value below its bound; two batches that are not two different ones stay an error of meaning (1).
TEST_F(CliTest, AllocTraceBatchesBelowTheirBoundAreAUsageError) {
  EXPECT_TRUE(
      exited(run_program("alloc-trace --batches 0,2"), 2, {"--batches: must be >= 1, got 0"}));
  EXPECT_TRUE(exited(run_program("alloc-trace --batches 2,2"), 1,
                     {"--batches takes two different batches >= 1"}));
}

// alloc-trace --load with a recording's option (--models, --precision, ...) replayed the trace as
// it was recorded and ignored the option unsaid; one trace also ignored --batches, --scale-batch
// and --save.
TEST_F(CliTest, AllocTraceLoadRefusesTheRecordingsOptions) {
  const std::string t = file("m-b1.trace");
  std::ofstream(t) << "# haargrad allocation trace v1\n# m fp32 batch 1 @28 on cpu, 1 training "
                      "steps\na 1 256 activations\ns\nf 1\n";
  EXPECT_TRUE(exited(run_program(str("alloc-trace --load ", t)), 0, {"live MiB"}));
  EXPECT_TRUE(exited(
      run_program(str("alloc-trace --load ", t, " --precision bf16 --steps 2")), 1,
      {"alloc-trace: --precision, --steps cannot go with --load of one trace", "leave them out"},
      {"live MiB"}));
  EXPECT_TRUE(
      exited(run_program(str("alloc-trace --load ", t, " --scale-batch 4")), 1,
             {"alloc-trace: --scale-batch cannot go with --load of one trace", "leave it out"}));
  EXPECT_TRUE(exited(run_program(str("alloc-trace --load ", t, ",", t, " --models convnext_atto")),
                     1, {"alloc-trace: --models cannot go with --load (the traces are replayed"}));
}

// alloc-trace --load A B extrapolates A as recorded at the first of --batches and B at the second.
// Swapped files, or one file twice, printed an extrapolation off by a factor under "extrapolated
// from batches 1 and 2"; each trace's header records its batch, which is checked now.
TEST_F(CliTest, AllocTraceLoadRefusesTracesOfOtherBatchesThanGiven) {
  // one step whose activation grows with the batch, as alloc-trace --save writes it
  auto write_trace = [&](const std::string& name, int batch) {
    std::ofstream(file(name)) << "# haargrad allocation trace v1\n# m fp32 batch " << batch
                              << " @28 on cpu, 1 training steps\na 1 " << 256 * batch
                              << " activations\ns\nf 1\n";
    return file(name);
  };
  const std::string b1 = write_trace("m-b1.trace", 1), b2 = write_trace("m-b2.trace", 2);
  EXPECT_TRUE(exited(run_program(str("alloc-trace --load ", b1, " ", b2, " --scale-batch 4")), 0,
                     {"extrapolated from batches 1 and 2"}));
  EXPECT_TRUE(exited(run_program(str("alloc-trace --load ", b2, " ", b1, " --scale-batch 4")), 1,
                     {str("alloc-trace: --load ", b2,
                          " records batch 2 in its header but is "
                          "loaded for batch 1, the first of --batches 1,2"),
                      str("--load ", b1, " ", b2)},
                     {"extrapolated"}));
  EXPECT_TRUE(exited(run_program(str("alloc-trace --load ", b1, " ", b1)), 1,
                     {str("alloc-trace: --load ", b1, " and ", b1, " both record batch 1")},
                     {"extrapolated"}));
  // --batches as recorded takes them in any order
  EXPECT_TRUE(exited(run_program(str("alloc-trace --load ", b2, " ", b1, " --batches 2,1")), 0,
                     {"extrapolated from batches 2 and 1"}));
  EXPECT_TRUE(
      exited(run_program(str("alloc-trace --load ", b1, " ", b2, " --batches 1,3")), 1,
             {str("--load ", b2, " records batch 2 in its header but is loaded for batch 3"),
              "give --batches 1,2"}));
}

TEST_F(CliTest, MissingGpuSuggestsDeviceCpu) {
#ifdef HAARGRAD_WITH_CUDA
  if (cuda::available()) GTEST_SKIP() << "a GPU is present";
#endif
  const ProgramRun b = run_program("bench --device cuda --models convnext_atto --steps 1");
  EXPECT_NE(b.exit_code, 0);
  EXPECT_NE(b.output.find("--device cpu"), std::string::npos) << b.output;
  // the message says which it is: a build without CUDA, or no GPU
#ifdef HAARGRAD_WITH_CUDA
  const std::string why = "no usable GPU";
#else
  const std::string why = "built without CUDA";
#endif
  EXPECT_NE(b.output.find(why), std::string::npos) << b.output;
  // and a run that cannot start leaves no run folder behind (the next run keeps the plain name)
  const std::filesystem::path out =
      std::filesystem::temp_directory_path() / ("hg_cli_nogpu_" + std::to_string(::getpid()));
  std::filesystem::remove_all(out);
  const ProgramRun t =
      run_program("train " + kDefaultConfig + " --device cuda --epochs 1 --output " + out.string());
  EXPECT_NE(t.exit_code, 0);
  EXPECT_NE(t.output.find("--device cpu"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find(why), std::string::npos) << t.output;
  EXPECT_EQ(t.output.find("run folder"), std::string::npos) << t.output;
  EXPECT_FALSE(std::filesystem::exists(out / "fashion_mnist")) << t.output;
  std::filesystem::remove_all(out);
}

TEST_F(CliTest, ThreadsOptionReachesTheKernelsAndOpenMpWaitsBriefly) {
  const std::string bench = "bench --device cpu --models convnext_atto --batch 2 --img-size 32 --steps 1 --warmup 1";
  const ProgramRun one = run_program(bench + " --threads 1");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_NE(one.output.find("cpu: 1 threads"), std::string::npos) << one.output;
  const ProgramRun three = run_program(bench + " --threads 3");
  EXPECT_NE(three.output.find("cpu: 3 threads"), std::string::npos) << three.output;
  // a config's `threads` key, and --threads as its override
  const ProgramRun cfg = run_program("bench " + kSource + "/configs/smoke.yaml --device cpu --steps 1 --warmup 1 --threads 2");
  EXPECT_NE(cfg.output.find("cpu: 2 threads"), std::string::npos) << cfg.output;
  const ProgramRun bad = run_program("train " + kDefaultConfig + " --threads -1");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("'threads'"), std::string::npos) << bad.output;
  // OpenMP's idle threads spin briefly by default, and the user's own setting wins (app/main.cpp).
  const ProgramRun env = run_program("--version", "OMP_DISPLAY_ENV=verbose ");
  EXPECT_NE(env.output.find("GOMP_SPINCOUNT = '10000'"), std::string::npos) << env.output;
  const ProgramRun mine = run_program("--version", "OMP_DISPLAY_ENV=verbose GOMP_SPINCOUNT=123 ");
  EXPECT_NE(mine.output.find("GOMP_SPINCOUNT = '123'"), std::string::npos) << mine.output;
}

TEST_F(CliTest, DefaultModelPrintsNoWarning) {
  // The default job's model at its image size: every WTConv level sees more than one pixel.
  train::Config cfg = train::load_config(kDefaultConfig);
  EXPECT_EQ(wtconv_level_advice(train::model_config_from(cfg), cfg.img_size), "");
  const ProgramRun b = run_program("bench " + kDefaultConfig + " --device cpu --batch 8 --steps 1 --warmup 2");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(b.output.find("warn"), std::string::npos) << b.output;
  const ProgramRun i = run_program("info wtconvnext_fmnist");
  ASSERT_EQ(i.exit_code, 0) << i.output;
  EXPECT_EQ(i.output.find("warn"), std::string::npos) << i.output;
  // Too many levels for the input: one line for the whole model, with wt_levels that exist.
  const ProgramRun deep = run_program("info wtconvnext_atto --img-size 32");
  ASSERT_EQ(deep.exit_code, 0) << deep.output;
  EXPECT_EQ(count_of(deep.output, "warning"), 1) << deep.output;
  EXPECT_NE(deep.output.find("wt_levels [3, 2, 1, 1]"), std::string::npos) << deep.output;
}

// info takes a config too (as train, bench and validate do): the config's model with its model keys
// and img_size. The smoke config changes its model's dims, so the counts differ from the name's.
// info's activation bytes at a batch: a per-image part times the batch plus a per-step part (the
// folded fc2 weights), checked against the tape measured at that batch here.
TEST_F(CliTest, InfoActivationBytesMatchTheTapeAtTheBatch) {
  const int batch = 5, img = 32;
  const ProgramRun r = run_program("info convnext_atto --img-size 32 --batch 5");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("activation bytes ([0-9]+) "))) << r.output;
  const int64_t reported = std::stoll(m[1].str());
  ConvNeXt model(model_config("convnext_atto"), 0);
  Tensor x = Tensor::full({batch, img, img, 3}, 0.5);
  Tensor labels = Tensor::zeros({batch}, DType::i64);
  autograd::clear_tape();
  const auto live = [] {
    return memory::stats(Device::cpu).current[static_cast<int>(Category::activations)];
  };
  const int64_t before = live();
  Tensor loss = cross_entropy(model.forward(x, true), labels);
  const int64_t measured = live() - before;
  autograd::clear_tape();
  // within allocation rounding (small tensors' sizes round up; batch 5 is not exactly linear)
  EXPECT_NEAR(static_cast<double>(reported), static_cast<double>(measured), 0.005 * measured)
      << r.output;
}

// `info --img-size 100000` printed the model, its parameters and GMACs, then "out of host memory:
// asked for 120001134592 bytes ... try a smaller img_size or batch_size" (config keys, not its
// options). The measurement's memory is estimated before anything is printed: the error alone,
// naming the option and its value; --no-measure prints the rest at that size.
TEST_F(CliTest, InfoRefusesASizeItCannotMeasureBeforePrintingAnything) {
  const ProgramRun r = run_program("info convnext_atto --img-size 100000");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.rfind("haargrad: error: info: --img-size 100000: measuring the activation "
                           "bytes (batches 1 and 2) would need about ",
                           0),
            0u)
      << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;  // nothing else
  const ProgramRun counts = run_program("info convnext_atto --img-size 100000 --no-measure");
  EXPECT_EQ(counts.exit_code, 0) << counts.output;
  EXPECT_NE(counts.output.find("at 100000x100000"), std::string::npos) << counts.output;
}

// The size check's reference measurement (64 px) ran the model's first forward, which says the
// WTConv level advice once per model: "info wtconvnext_tiny --img-size 224" warned about levels
// "at img_size 64", a size nobody asked for (a new user's report). The advice is for the asked
// size.
TEST_F(CliTest, InfoGivesTheLevelAdviceForTheAskedSize) {
  const ProgramRun fine = run_program("info wtconvnext_atto --img-size 224");
  ASSERT_EQ(fine.exit_code, 0) << fine.output;
  EXPECT_EQ(fine.output.find("img_size 64"), std::string::npos) << fine.output;
  EXPECT_EQ(fine.output.find("WTConv levels past"), std::string::npos) << fine.output;
  const ProgramRun small = run_program("info wtconvnext_atto --img-size 80");
  ASSERT_EQ(small.exit_code, 0) << small.output;
  EXPECT_EQ(small.output.find("img_size 64"), std::string::npos) << small.output;
  EXPECT_NE(small.output.find("at img_size 80"), std::string::npos) << small.output;
}

TEST_F(CliTest, InfoTakesAConfig) {
  const ProgramRun by_config = run_program("info " + kDefaultConfig + " --no-measure");
  ASSERT_EQ(by_config.exit_code, 0) << by_config.output;
  const ProgramRun by_name = run_program("info wtconvnext_fmnist --no-measure");
  ASSERT_EQ(by_name.exit_code, 0) << by_name.output;
  auto line = [](const std::string& out, const std::string& key) {
    const size_t at = out.find(key);
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_NE(by_config.output.find("wtconvnext_fmnist (" + kDefaultConfig + ")"), std::string::npos)
      << by_config.output;
  EXPECT_EQ(line(by_config.output, "trainable params"), line(by_name.output, "trainable params"));
  EXPECT_NE(by_config.output.find("at 28x28"), std::string::npos) << by_config.output;
  train::Config smoke = train::load_config(kSource + "/configs/smoke.yaml");
  ConvNeXt smoke_model(train::model_config_from(smoke), 0);
  const ProgramRun s = run_program("info " + kSource + "/configs/smoke.yaml --no-measure");
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_EQ(line(s.output, "trainable params"),
            "trainable params " + std::to_string(smoke_model.num_trainable()));
  const ProgramRun missing = run_program("info " + kSource + "/configs/nope.yaml");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.output.find("cannot open file"), std::string::npos) << missing.output;
}

// A config's wtconv_mode reference is measured as train runs it: info gave the fused path's bytes
// whatever the config said (the reference order saves every sub-band on the tape).
TEST_F(CliTest, InfoMeasuresTheConfigsWtconvMode) {
  const auto bytes = [&](const std::string& mode) {
    const std::string cfg = file("m_" + mode + ".yaml");
    std::ofstream(cfg) << "model: wtconvnext_fmnist\nimg_size: 28\nwtconv_mode: " << mode << "\n";
    const ProgramRun r = run_program("info " + cfg);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const size_t at = r.output.find("activation bytes ");
    return at == std::string::npos ? -1 : std::stoll(r.output.substr(at + 17));
  };
  const long long fused = bytes("fused"), reference = bytes("reference");
  EXPECT_GT(fused, 0);
  EXPECT_GT(reference, fused);
}

// info takes a CONFIG.yaml as its argument, but not as timm's -c / --config, which 9b9709d gave
// every other command with a config ("The following argument was not expected: -c", "unknown
// option '--config' of info"). Both name it now; given beside the argument, it is given twice.
TEST_F(CliTest, InfoTakesTheConfigAsDashCOrDashDashConfig) {
  const ProgramRun by_argument = run_program("info " + kDefaultConfig + " --no-measure");
  ASSERT_EQ(by_argument.exit_code, 0) << by_argument.output;
  for (const std::string opt : {"-c ", "--config "}) {
    const ProgramRun r = run_program("info " + opt + kDefaultConfig + " --no-measure");
    EXPECT_EQ(r.exit_code, 0) << opt << r.output;
    EXPECT_EQ(r.output, by_argument.output) << opt;
  }
  const ProgramRun twice =
      run_program("info wtconvnext_fmnist --config " + kDefaultConfig + " --no-measure");
  EXPECT_EQ(twice.exit_code, 2) << twice.output;
  EXPECT_NE(twice.output.find("the model is given twice, as the argument 'wtconvnext_fmnist' and "
                              "as --config '" +
                              kDefaultConfig + "'"),
            std::string::npos)
      << twice.output;
}

// timm's scripts name the model with --model (train.py, validate.py, benchmark.py): info read it
// as "The following argument was not expected: --model". It takes --model as its argument's other
// spelling; both at once, or neither, are named.
TEST_F(CliTest, InfoTakesTimmsModelOption) {
  const ProgramRun by_option = run_program("info --model wtconvnext_fmnist --no-measure");
  ASSERT_EQ(by_option.exit_code, 0) << by_option.output;
  const ProgramRun by_name = run_program("info wtconvnext_fmnist --no-measure");
  ASSERT_EQ(by_name.exit_code, 0) << by_name.output;
  EXPECT_EQ(by_option.output, by_name.output);
  const ProgramRun both = run_program("info convnext_atto --model wtconvnext_fmnist --no-measure");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.output.find("'convnext_atto'"), std::string::npos) << both.output;
  EXPECT_NE(both.output.find("--model 'wtconvnext_fmnist'"), std::string::npos) << both.output;
  const ProgramRun none = run_program("info --no-measure");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("haargrad: error: a model is required"), std::string::npos)
      << none.output;
}

// bench by name takes --models (a list); timm's benchmark.py spells it --model, which bench
// called a config key needing a CONFIG.yaml. It names --models instead.
TEST_F(CliTest, BenchNamesModelsForTimmsModelOption) {
  for (const std::string arg : {"--model convnext_atto", "--model=convnext_atto"}) {
    const ProgramRun r = run_program("bench " + arg + " --device cpu");
    EXPECT_EQ(r.exit_code, 2) << arg;
    EXPECT_NE(r.output.find("did you mean --models convnext_atto?"), std::string::npos) << r.output;
  }
  // its -b / --batch-size are bench's --batch (-b was read as a config file named '-b')
  for (const std::string arg : {"-b 4", "--batch-size 4"}) {
    const ProgramRun r = run_program("bench " + arg + " --device cpu");
    EXPECT_EQ(r.exit_code, 2) << arg;
    EXPECT_NE(r.output.find("did you mean --batch 4?"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("cannot open file"), std::string::npos) << r.output;
  }
}

// bench-layer's --kernel and --channels were not checked: --channels 100 (no stage has it) timed
// nothing and printed an empty table, an even or negative --kernel reached the kernels. Both are
// usage errors naming the values it takes, before any GPU work (so also in a CPU-only build).
TEST_F(CliTest, BenchLayerRefusesAKernelOrChannelsItCannotTime) {
  const ProgramRun c = run_program("bench-layer --channels 100");
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_NE(c.output.find("--channels: 100 is not a stage's channel count (96, 192, 384 or 768"),
            std::string::npos)
      << c.output;
  for (const char* k : {"4", "0", "-3"}) {
    const ProgramRun r = run_program(std::string("bench-layer --kernel ") + k);
    EXPECT_EQ(r.exit_code, 2) << k << r.output;
    EXPECT_NE(r.output.find("--kernel: expected an odd kernel size >= 1, got " + std::string(k)),
              std::string::npos)
        << r.output;
  }
}

TEST_F(CliTest, BenchTakesATrainingConfig) {
  const std::string out = file("row.json");
  const ProgramRun r = run_program("bench " + kSource + "/configs/smoke.yaml --device cpu --steps 2 --warmup 2 "
                                   "--smoothing 0.2 --opt sgd --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream f(out);
  const nlohmann::json rows = nlohmann::json::parse(f);
  ASSERT_EQ(rows.size(), 1u) << rows.dump(1);
  const nlohmann::json& row = rows[0];
  EXPECT_EQ(row["model"], "wtconvnext_fmnist");
  EXPECT_EQ(row["train_batch_size"], 8);  // the config's batch_size and img_size
  EXPECT_EQ(row["train_img_size"], 32);
  EXPECT_EQ(row["smoothing"], 0.2);  // the trainer's loss and optimizer
  EXPECT_EQ(row["opt"], "sgd");
  // the config's own model (dims 8, 16; 4 classes; 3 channels), not the registered one
  const ModelConfig mc = train::model_config_from(train::load_config(kSource + "/configs/smoke.yaml"));
  EXPECT_NE(param_count(mc).trainable, param_count(model_config("wtconvnext_fmnist")).trainable);
  EXPECT_EQ(row["param_count_exact"], param_count(mc).trainable);
  // options that belong to the name mode, and config keys without a config, are errors
  const ProgramRun both = run_program("bench " + kSource + "/configs/smoke.yaml --models convnext_atto --device cpu");
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.output.find("either CONFIG.yaml or --models"), std::string::npos) << both.output;
  const ProgramRun stray = run_program("bench --batch-size 4 --device cpu");
  EXPECT_EQ(stray.exit_code, 2);  // a usage error, as every unknown option
  EXPECT_NE(stray.output.find("need a CONFIG.yaml"), std::string::npos) << stray.output;
  // a misspelt bench option is named with the one it is close to
  for (const auto& [arg, close] :
       {std::pair<std::string, std::string>{"--batchsize 3", "--batch 3"},
        {"--batchsize=5", "--batch 5"},
        {"--img-szie 64", "--img-size 64"},
        {"--stepss 2", "--steps 2"},
        {"--retyr", "--retry"}}) {  // --retry: a flag, no value
    const ProgramRun r = run_program("bench " + arg + " --device cpu");
    EXPECT_EQ(r.exit_code, 2) << arg;
    EXPECT_NE(r.output.find("did you mean " + close + "?"), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace hg
