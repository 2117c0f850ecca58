// Runs the built `haargrad` program for the app tests and gives back its exit code and output;
// a temporary folder per test.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace hg::test {

inline const std::string kProgram = HAARGRAD_BINARY_DIR "/haargrad";

struct ProgramRun {
  int exit_code = -1;
  std::string output;  ///< stdout and stderr together
};

/// `[env] haargrad args 2>&1` through the shell (`env` e.g. "OMP_DISPLAY_ENV=true ").
ProgramRun run_program(const std::string& args, const std::string& env = "");

/// A fresh folder under the temporary directory, removed at the end of the test.
class ProgramTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

}  // namespace hg::test
