// The `haargrad` program: parses the command line and runs one subcommand (train, validate, info,
// bench, bench-layer, export, models, ...; each lives in its own app/<command>.cpp).
#include <spdlog/spdlog.h>

#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "app/command.h"
#include "app/config_help.h"
#include "app/version.h"
#include "core/cuda_queues.h"
#include "core/error.h"
#include "core/parse_number.h"
#include "core/similar_names.h"
#include "core/threads.h"
#include "train/config.h"
#include "train/timm_keys.h"

namespace hg::app {
std::vector<Command>& commands() {
  static std::vector<Command> list;
  return list;
}

int& exit_status() {
  static int status = 0;
  return status;
}

namespace {

// Every numeric option of every command parses as a decimal number: CLI11 alone would read "010"
// as 8 and "0x10" as 16. Integers are rewritten without leading zeros (CLI11's conversion would
// still take "010" as octal); the transform runs before an option's other checks.
void require_decimal_numbers(CLI::App& app) {
  const CLI::Validator integer(
      [](std::string& text) {
        std::string why;
        const std::optional<int64_t> v = parse_decimal_int(text, &why);
        if (!v) return str("'", text, "' is ", why);
        text = std::to_string(*v);
        return std::string();
      },
      "", "decimal integer");
  const CLI::Validator number(
      [](std::string& text) {
        std::string why;
        return parse_decimal_float(text, &why) ? std::string() : str("'", text, "' is ", why);
      },
      "", "decimal number");
  for (CLI::Option* o : app.get_options()) {
    const std::string full = o->get_type_name();  // e.g. "INT" or "INT:POSITIVE" (with its checks)
    const std::string type = full.substr(0, full.find(':'));
    if (type == "INT" || type == "UINT") o->transform(integer);
    if (type == "FLOAT" || type == "NUMBER") o->check(number);
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) require_decimal_numbers(*sub);
}

}  // namespace
}  // namespace hg::app

namespace {

// Idle OpenMP threads wait for the next parallel loop by spinning (GCC's libgomp: 300,000 spins, up
// to about a millisecond). When another process wants the same cores, that spinning takes the time
// the working threads need: a 2-core CPU training step ran 2-3x slower beside one busy process. A
// short spin, then sleep, keeps the quick hand-off between the many small loops of a step and gives
// the cores back otherwise. libgomp reads its settings once, while the program loads, before main()
// and before any constructor of ours (and a .preinit_array function cannot set the environment: libc
// resets it afterwards). So, unless the user chose a policy, the program sets GOMP_SPINCOUNT and
// starts itself again, once (the variable is then set): a few milliseconds.
void default_openmp_wait_policy(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  if (setenv("GOMP_SPINCOUNT", "10000", 1) != 0) return;
  execv("/proc/self/exe", argv);  // returns only on failure: then run on with libgomp's default
}

// The commands whose CONFIG is their first argument. timm's scripts name it -c / --config, which
// these take too by moving it there, before CLI11 parses; export and infer, whose first argument
// is no config, have -c / --config as a CLI11 option.
bool takes_config_first(const std::string& command) {
  for (const char* c : {"train", "validate", "bench", "bench-data"})
    if (command == c) return true;
  return false;
}

// The command `name` of `app`, or nullptr.
const CLI::App* command_named(const CLI::App& app, const std::string& name) {
  for (const CLI::App* c : app.get_subcommands([](const CLI::App*) { return true; }))
    if (c->get_name() == name) return c;
  return nullptr;
}

// `args` less the options of `command` (CLI11's, not config keys) and the value each takes: what
// CLI11 leaves to the command's split_config_args. A value named *.yaml (bench-data's `--output
// rows.yaml`) was read there as a CONFIG.
std::vector<std::string> without_own_options(const CLI::App& command,
                                             const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const CLI::Option* o =
        args[i].size() > 1 && args[i][0] == '-' ? command.get_option_no_throw(args[i]) : nullptr;
    if (o == nullptr || o->get_positional()) {
      out.push_back(args[i]);
      continue;
    }
    // the words CLI11 gives it whatever they are (a flag takes none; --name=value is no match)
    const int takes = std::min(o->get_type_size_min(), o->get_items_expected_min());
    i += static_cast<size_t>(std::max(takes, 0));
  }
  return out;
}

// `train -c X ...` becomes `train X ...` in `args` (and so for each takes_config_first command of
// `app`). Returns why it cannot ("" when it could, or there is nothing to do): a missing value, or
// a second config, as a second -c / --config or as the CONFIG argument (found as the train command
// finds it, also after options: `train --epochs 1 x.yaml -c y.yaml`; an option's value is none).
// Before, only a CONFIG first was seen; a second --config reached the config overrides as
// "unknown key 'config'", a second -c as "config keys take two dashes", and a CONFIG after
// options as "expected '--key value'".
std::string config_option_as_argument(const CLI::App& app, std::vector<std::string>& args) {
  if (args.size() < 2 || !takes_config_first(args[1])) return "";
  std::vector<std::string> configs, others;  // given as -c / --config; the other arguments
  for (size_t i = 2; i < args.size(); ++i) {
    const bool split = args[i] == "-c" || args[i] == "--config";
    if (!split && args[i].rfind("--config=", 0) != 0) {
      others.push_back(args[i]);
      continue;
    }
    const std::string option = split ? args[i] : "--config";
    const std::string config = !split ? args[i].substr(9) : i + 1 < args.size() ? args[++i] : "";
    // an empty one (`--config=`) read as no config, and an option (`-c --epochs 1`) as a config
    // beside the CONFIG '1'
    if (config.empty() || (split && config[0] == '-'))
      return option + " needs a value: the YAML config" +
             (config.empty() ? "" : ", not the option '" + config + "'");
    configs.push_back(config);
  }
  if (configs.empty()) return "";
  const hg::app::ConfigArgs ca =
      hg::app::split_config_args(without_own_options(*command_named(app, args[1]), others));
  // `--unknown e.yaml -c x.yaml`: e.yaml is the option's value, which apply_overrides names
  const std::string positional = ca.after_unknown_option ? "" : ca.config;
  if (!positional.empty())
    return args[1] + ": two configs, '" + positional + "' and --config '" + configs[0] +
           "'; give one";
  if (configs.size() > 1)
    return args[1] + ": two configs, --config '" + configs[0] + "' and --config '" + configs[1] +
           "'; give one";
  args.resize(2);
  // a relative name starting with '-' (only `--config=-x.yaml` gives one) would read as an option
  // in the CONFIG slot: "config is required"
  args.push_back(configs[0][0] == '-' ? "./" + configs[0] : configs[0]);
  args.insert(args.end(), others.begin(), others.end());
  return "";
}

// The error for `first`, the first argument, an option other than haargrad's own (--help, -h,
// --version), or "". A mistyped --version ("--versoin") read as a missing command ("A subcommand
// is required"), and a command's option put first (`haargrad --epochs 3 train ...`) as "The
// following arguments were not expected: 3 --epochs", under `haargrad train --help`.
std::string option_before_command(const std::string& first) {
  const std::vector<std::string> own = {"--help", "-h", "--version"};
  if (std::find(own.begin(), own.end(), first) != own.end()) return "";
  const std::vector<std::string> close = hg::similar_names(first, own);
  return "unknown option '" + first + "'" +
         (close.empty() ? "" : " (did you mean '" + close[0] + "'?)") +
         ": haargrad takes --help and --version alone, and a command's options after the "
         "command: `haargrad COMMAND [options]` (`haargrad --help` lists the commands)";
}

// The error for the first long option in argv[2..] that `command` does not have, or "".
// - A command without config keys (info, models, plot, export-png, bench-augment, alloc-trace,
//   ...): any such option. It read as "The following arguments were not expected: 64 --img" (its
//   words backwards, no suggestion), and beside plot's run folders as "runs: Directory does not
//   exist: 100" (`plot RUN --widht 100`): it is named, with the close option names.
// - A command with config keys (train, validate, infer, export, ...): only one that is no config
//   key (nor timm's: --resplit near bench-data's --split keeps its timm message) and a few typos
//   from one of the command's own options. It read as an unknown config key with a key's hint
//   ("unknown key 'use_emma'" for validate's --use-ema), or, where the option was required, as
//   that option missing (infer --inptu: "--input is required"); the others are apply_overrides'
//   to name, with the close config keys. bench names its own, with the value.
std::string unknown_option_of(const CLI::App& command, int argc, char** argv) {
  const bool keys_too = command.get_allow_extras();
  if (keys_too && command.get_name() == "bench") return "";
  const std::vector<std::string> keys =
      keys_too ? hg::train::config_keys() : std::vector<std::string>{};
  const std::vector<std::string> names = hg::app::long_option_names(command);
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;  // what follows is no option
    // a long option as CLI11 reads one: "--- A vs B ---" is a value (plot's --title), no option
    std::string bare, value;
    if (!CLI::detail::split_long(arg, bare, value)) continue;
    const std::string name = "--" + bare;
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    std::string close;
    if (!keys_too) {
      close = hg::app::close_option(command, name);
    } else {
      std::string key = bare;
      std::replace(key.begin(), key.end(), '-', '_');
      if (std::find(keys.begin(), keys.end(), key) != keys.end() ||
          !hg::train::timm_key_hint(key).empty())
        continue;
      const std::vector<std::string> near = hg::similar_names(name, names);
      if (near.empty()) continue;
      close = near[0];
    }
    return "unknown option '" + name + "' of " + command.get_name() +
           (close.empty() ? "" : "; did you mean '" + close + "'?") + " (`haargrad " +
           command.get_name() + " --help` lists the options)";
  }
  return "";
}

// The error for `name`, the first argument, when no command has it, or "". A mistyped command
// ("trian") would otherwise read as a missing one ("A subcommand is required").
std::string unknown_command(const CLI::App& app, const std::string& name) {
  if (command_named(app, name) != nullptr) return "";
  std::vector<std::string> names;
  for (const CLI::App* c : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(c->get_name());
  const std::vector<std::string> close = hg::similar_names(name, names);
  return "unknown command '" + name + "'" +
         (close.empty() ? "" : "; did you mean '" + close[0] + "'?") +
         " (`haargrad --help` lists the commands)";
}

// The error for the first of `command`'s own options in argv[2..] spelt with underscores, as the
// config keys may be ("--use_ema"), or "": it would reach the config overrides and be called an
// unknown config key. A config key (bench's --img_size beside its --img-size) stays one.
std::string underscored_option_of(const CLI::App& command, int argc, char** argv) {
  const std::vector<std::string> keys = hg::train::config_keys();
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::string name = arg.substr(0, arg.find('='));
    if (name.rfind("--", 0) != 0 || name.find('_') == std::string::npos) continue;
    std::string dashed = name;
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    if (std::find(keys.begin(), keys.end(), name.substr(2)) != keys.end() ||
        !command.get_option_no_throw(dashed))
      continue;
    return "unknown option '" + name + "'; did you mean '" + dashed + "'? (`haargrad " +
           command.get_name() + " --help` lists the options)";
  }
  return "";
}

// The first error the arguments show before CLI11 parses them (each check above), or "".
std::string error_before_parsing(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) return "";
  if (argv[1][0] == '-') return option_before_command(argv[1]);
  const CLI::App* command = command_named(app, argv[1]);
  if (command == nullptr) return unknown_command(app, argv[1]);
  if (std::string why = underscored_option_of(*command, argc, argv); !why.empty()) return why;
  return unknown_option_of(*command, argc, argv);
}

// Whether what the program wrote to stdout reached it, or, where it did not, why: results
// redirected to a full disk (`validate > res.csv`, a 0-byte file) or /dev/full ended with exit
// status 0. A closed pipe (`... | head`) is no failure: the reader has what it asked for.
std::string stdout_failure() {
  const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (!failed) return "";
  struct stat st {};
  if (fstat(STDOUT_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return "";
  return "the standard output could not be written (a full disk, a closed output, or a device "
         "that takes no data): what this command printed there is lost or incomplete (the files "
         "it writes, a run's log.txt and checkpoints among them, are not)";
}

std::string without_trailing_newline(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  default_openmp_wait_policy(argv);
  // Before any CUDA call: the driver reads it when it creates the context (core/cuda_queues.h).
  hg::default_cuda_queues();
  // A file-size limit (ulimit -f) makes writes fail with EFBIG, reported by the file writer with
  // the file's name, instead of killing the process.
  std::signal(SIGXFSZ, SIG_IGN);
  // A closed pipe (`haargrad train ... | head`) makes writes to it fail instead of killing the
  // process: a run must not die between claiming its folder and its first step, or at its end.
  std::signal(SIGPIPE, SIG_IGN);
  spdlog::set_pattern("[%H:%M:%S] %^%l%$: %v");  // the trainer's console format (train/console.cpp)
  CLI::App app{"haargrad: train image classifiers with fused wavelet convolutions"};
  app.require_subcommand(1);
  app.option_defaults()->always_capture_default();  // every --help shows each option's default
  app.set_version_flag("--version", [] { return without_trailing_newline(hg::app::version_text()); },
                       "print the version, the git commit, the CUDA / cuDNN versions and the optional parts built");
  app.footer("Each command has its own --help; `haargrad train --help` lists every config key.");
  std::vector<hg::app::Command>& commands = hg::app::commands();
  std::stable_sort(commands.begin(), commands.end(),
                   [](const auto& a, const auto& b) { return a.file < b.file; });
  for (auto& c : commands) c.setup(app);
  hg::app::require_decimal_numbers(app);
  if (const std::string why = error_before_parsing(app, argc, argv); !why.empty()) {
    std::fprintf(stderr, "haargrad: error: %s\n", why.c_str());
    return 2;
  }
  std::vector<std::string> args(argv, argv + argc);
  try {
    hg::set_cpu_threads(0);  // the cores available; commands with a config apply its `threads`
    // `--out=~/x`: the shell leaves a '~' after an option's '=' as it is (it reads one at the
    // start of a word, or after the '=' of an assignment), which made a folder named '~'. It is
    // the home folder, as in the separate word of `--out ~/x`.
    for (std::string& w : args) {
      const size_t eq = w.find('=');
      if (w.rfind("--", 0) == 0 && eq != std::string::npos && eq + 1 < w.size() && w[eq + 1] == '~')
        w = w.substr(0, eq + 1) + hg::train::expand_home(w.substr(eq + 1));
    }
    // after that: `--config=~/x.yaml` became the CONFIG '~/x.yaml', which no command expands
    if (const std::string why = config_option_as_argument(app, args); !why.empty()) {
      std::fprintf(stderr, "haargrad: error: %s (`haargrad %s --help` lists the options)\n",
                   why.c_str(), args[1].c_str());
      return 2;
    }
    std::vector<char*> arg_ptrs;  // (after the last change to args: they point into its strings)
    for (std::string& a : args) arg_ptrs.push_back(a.data());
    app.parse(static_cast<int>(arg_ptrs.size()), arg_ptrs.data());  // subcommand callbacks run here
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version: what they print is all they do
      const int rc = app.exit(e);
      if (const std::string why = stdout_failure(); !why.empty()) {
        std::fprintf(stderr, "haargrad: error: %s\n", why.c_str());
        return 1;
      }
      return rc;
    }
    // a command-line mistake reads like every other error, with where to look; exit status 2, as
    // getopt and argparse programs use for usage errors
    const std::vector<CLI::App*> given = app.get_subcommands();
    const std::string help =
        given.empty() ? "haargrad --help" : "haargrad " + given.front()->get_name() + " --help";
    std::fprintf(stderr, "haargrad: error: %s (`%s` lists the options)\n", e.what(), help.c_str());
    return 2;
  } catch (const hg::Error& e) {
    std::fprintf(stderr, "haargrad: error: %s\n", e.what());
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // A file-system call outside the checked writers: its text names the operation and path(s).
    std::fprintf(stderr, "haargrad: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "haargrad: error: out of host memory (an allocation failed); try a smaller batch_size, "
                         "img_size or workers\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "haargrad: error: %s (an unexpected C++ exception: please report it)\n", e.what());
    return 1;
  }
  if (const std::string why = stdout_failure(); !why.empty()) {
    std::fprintf(stderr, "haargrad: error: %s\n", why.c_str());
    return hg::app::exit_status() != 0 ? hg::app::exit_status() : 1;
  }
  return hg::app::exit_status();
}
