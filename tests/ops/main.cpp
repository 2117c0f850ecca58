// test_ops: the op harness's tests (GoogleTest), or with --perf its perf table (perf.h).
#include <gtest/gtest.h>

#include <cstring>

#include "perf.h"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--perf") == 0) return hg::test::ops::perf_main(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
