// Subcommand registry of the `haargrad` program: each app/<command>.cpp registers itself with a
// static HG_REGISTER_COMMAND, so adding a command touches no other file.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/similar_names.h"
#include "dist/process_group.h"

namespace hg::app {

/// Adds one subcommand (and its callback) to the program's CLI::App.
using CommandSetup = std::function<void(CLI::App& root)>;
/// A subcommand's setup and the file that registered it: `haargrad --help` lists the commands in
/// the order of their files' names (static registrations run in an order the linker picks).
struct Command {
  std::string file;
  CommandSetup setup;
};
std::vector<Command>& commands();

/// The program's exit status when the command returns without an error: 0 unless the command sets
/// another (`train` stopped by a signal: 128 + its number, as a shell reports a killed process).
int& exit_status();

struct CommandRegistrar {
  CommandRegistrar(const char* file, CommandSetup setup) {
    commands().push_back({file, std::move(setup)});
  }
};

/// Throws hg::Error when the program was started by mpirun: `command` (validate, export, infer,
/// plot) works in one process, and under mpirun every rank would do the same work and write the
/// same file.
inline void refuse_mpirun(const char* command) {
  HG_CHECK(
      !dist::launched_by_mpirun(), command,
      " runs in one process (under mpirun every rank would do the same work and write the same "
      "file): start it without mpirun");
}

/// Option checks for a number of at least `lo` ("POSITIVE" for 1, "NONNEGATIVE" for 0 in the
/// help, as CLI11's own), whose error names the bound: CLI11's PositiveNumber says "not in range
/// 0.000000 to" a 309-digit number.
inline CLI::Validator at_least(int lo) {
  return CLI::Validator(
      [lo](std::string& value) -> std::string {
        try {
          if (std::stod(value) < lo) return "must be >= " + std::to_string(lo) + ", got " + value;
        } catch (const std::exception&) {  // not a number: the conversion says so
        }
        return "";
      },
      lo == 1   ? "POSITIVE"
      : lo == 0 ? "NONNEGATIVE"
                : ">= " + std::to_string(lo));
}

/// `command`'s long options, as typed ("--width").
inline std::vector<std::string> long_option_names(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::Option* o : command.get_options())
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
  return names;
}

/// The long option of `command` ("--name") closest to the unknown `name`, or "": one a few typos
/// away (similar_names: "--widht" -> "--width"), else the first that `name` cuts short ("--img" ->
/// "--img-size") or runs on past ("--batchsize" -> "--batch").
inline std::string close_option(const CLI::App& command, const std::string& name) {
  const std::vector<std::string> names = long_option_names(command);
  const std::vector<std::string> near = similar_names(name, names);
  if (!near.empty()) return near[0];
  for (const std::string& n : names)
    if (n.rfind(name, 0) == 0 || name.rfind(n, 0) == 0) return n;
  return "";
}

}  // namespace hg::app

#define HG_APP_CONCAT2(a, b) a##b
#define HG_APP_CONCAT(a, b) HG_APP_CONCAT2(a, b)
/// At namespace scope in app/<command>.cpp: HG_REGISTER_COMMAND([](CLI::App& root) { ... });
#define HG_REGISTER_COMMAND(setup) \
  static ::hg::app::CommandRegistrar HG_APP_CONCAT(hg_command_, __COUNTER__)(__FILE__, setup)
