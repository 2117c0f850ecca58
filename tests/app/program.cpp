// The app tests' program runner (see program.h).
#include "program.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

namespace hg::test {

ProgramRun run_program(const std::string& args, const std::string& env) {
  ProgramRun r;
  const std::string cmd = env + kProgram + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) r.output.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

::testing::AssertionResult exited(const ProgramRun& r, int code,
                                  const std::vector<std::string>& has,
                                  const std::vector<std::string>& lacks) {
  std::string wrong;
  if (r.exit_code != code)
    wrong += "exit status " + std::to_string(r.exit_code) + ", not " + std::to_string(code) + "; ";
  for (const std::string& text : has)
    if (r.output.find(text) == std::string::npos) wrong += "no '" + text + "'; ";
  for (const std::string& text : lacks)
    if (r.output.find(text) != std::string::npos) wrong += "'" + text + "' present; ";
  if (wrong.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << wrong << "the output:\n" << r.output;
}

void ProgramTest::SetUp() {
  ASSERT_TRUE(std::filesystem::exists(kProgram)) << kProgram << " is missing: build the `haargrad` target first";
  dir_ = std::filesystem::temp_directory_path() /
         ("hg_app_" + std::to_string(getpid()) + "_" +
          ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name() + "_" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
}

void ProgramTest::TearDown() { std::filesystem::remove_all(dir_); }

}  // namespace hg::test
