// The `haargrad` program: parses the command line and runs one subcommand (train, validate, info,
// bench, bench-layer, export-png, ...; each lives in its own app/<command>.cpp).
#include <spdlog/spdlog.h>

#include <cstdio>
#include <exception>

#include "app/command.h"
#include "core/error.h"

namespace hg::app {
std::vector<CommandSetup>& commands() {
  static std::vector<CommandSetup> list;
  return list;
}
}  // namespace hg::app

int main(int argc, char** argv) {
  spdlog::set_pattern("[%H:%M:%S] %^%l%$: %v");  // the trainer's console format (train/console.cpp)
  CLI::App app{"haargrad: train image classifiers with fused wavelet convolutions"};
  app.require_subcommand(1);
  for (auto& setup : hg::app::commands()) setup(app);
  try {
    app.parse(argc, argv);  // subcommand callbacks run here
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const hg::Error& e) {
    std::fprintf(stderr, "haargrad: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "haargrad: unexpected error: %s\n", e.what());
    return 2;
  }
  return 0;
}
