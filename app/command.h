// Subcommand registry of the `haargrad` program: each app/<command>.cpp registers itself with a
// static HG_REGISTER_COMMAND, so adding a command touches no other file.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace hg::app {

/// Adds one subcommand (and its callback) to the program's CLI::App.
using CommandSetup = std::function<void(CLI::App& root)>;
std::vector<CommandSetup>& commands();

struct CommandRegistrar {
  explicit CommandRegistrar(CommandSetup setup) { commands().push_back(std::move(setup)); }
};

}  // namespace hg::app

#define HG_APP_CONCAT2(a, b) a##b
#define HG_APP_CONCAT(a, b) HG_APP_CONCAT2(a, b)
/// At namespace scope in app/<command>.cpp: HG_REGISTER_COMMAND([](CLI::App& root) { ... });
#define HG_REGISTER_COMMAND(setup) \
  static ::hg::app::CommandRegistrar HG_APP_CONCAT(hg_command_, __LINE__)(setup)
