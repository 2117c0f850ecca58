// dist::launcher_rank(): the rank mpirun's environment names before MPI starts, which `haargrad
// train` uses to keep ranks other than 0 quiet about a stop signal from their first moment (the
// end-to-end check: MpiTrain.AStopSignalDuringMpiStartUpIsSaidOnce).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iterator>
#include <optional>
#include <string>

#include "dist/process_group.h"

using namespace hg;

namespace {

const char* const kNames[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};

// Clears the launcher's rank variables for the test and puts back what was there.
class LauncherRank : public ::testing::Test {
 protected:
  void SetUp() override {
    for (size_t i = 0; i < std::size(kNames); ++i) {
      if (const char* v = std::getenv(kNames[i])) saved_[i] = v;
      unsetenv(kNames[i]);
    }
  }
  void TearDown() override {
    for (size_t i = 0; i < std::size(kNames); ++i) {
      if (saved_[i])
        setenv(kNames[i], saved_[i]->c_str(), 1);
      else
        unsetenv(kNames[i]);
    }
  }
  std::optional<std::string> saved_[std::size(kNames)];
};

}  // namespace

// Outside mpirun: no rank (the process then speaks, as it always did).
TEST_F(LauncherRank, NoneWithoutALauncher) { EXPECT_EQ(dist::launcher_rank(), -1); }

// Open MPI, PMIx and MPICH name the rank each in its own variable; Open MPI's comes first.
TEST_F(LauncherRank, EachLaunchersVariableNamesTheRank) {
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  EXPECT_EQ(dist::launcher_rank(), 1);
  setenv("PMIX_RANK", "3", 1);
  EXPECT_EQ(dist::launcher_rank(), 1) << "Open MPI's variable comes first";
  unsetenv("OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(dist::launcher_rank(), 3);
  unsetenv("PMIX_RANK");
  setenv("PMI_RANK", "0", 1);
  EXPECT_EQ(dist::launcher_rank(), 0);
  setenv("PMI_RANK", "12", 1);
  EXPECT_EQ(dist::launcher_rank(), 12);
}

// A value that is not a rank names none: the process then speaks (a line too many, never one
// too few).
TEST_F(LauncherRank, AValueThatIsNotARankNamesNone) {
  for (const char* bad : {"", "x", "1x", "-1", "99999999999999999999"}) {
    setenv("OMPI_COMM_WORLD_RANK", bad, 1);
    EXPECT_EQ(dist::launcher_rank(), -1) << "'" << bad << "'";
  }
}
