// The `haargrad` command-line program: subcommands train, validate, info, bench, bench-layer.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"haargrad: train image classifiers with fused wavelet convolutions"};
  app.require_subcommand(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const hg::Error& e) {
    std::fprintf(stderr, "haargrad: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
