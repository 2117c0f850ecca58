// Runs the built `haargrad` program for the app tests and gives back its exit code and output;
// a temporary folder per test.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace hg::test {

inline const std::string kProgram = HAARGRAD_BINARY_DIR "/haargrad";

struct ProgramRun {
  int exit_code = -1;
  std::string output;  ///< stdout and stderr together
};

/// `[env] haargrad args 2>&1` through the shell (`env` e.g. "OMP_DISPLAY_ENV=true ").
ProgramRun run_program(const std::string& args, const std::string& env = "");

/// Success when `r` exited with `code` and its output holds each of `has` and none of `lacks`;
/// else a failure naming what differed, with the exit status and the whole output. For
/// EXPECT_TRUE(exited(run_program(...), 1, {"the message"})).
::testing::AssertionResult exited(const ProgramRun& r, int code,
                                  const std::vector<std::string>& has,
                                  const std::vector<std::string>& lacks = {});

/// A fresh folder under the temporary directory, removed at the end of the test.
class ProgramTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

}  // namespace hg::test
