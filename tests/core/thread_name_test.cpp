// Thread names (core/thread_name.h): set and read back on Linux, cut to the kernel's 15 bytes;
// elsewhere a no-op that reads "".
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "core/thread_name.h"

TEST(ThreadName, NamesTheCallingThreadOnly) {
  std::string inside, cut, outside_before = hg::this_thread_name();
  std::thread t([&] {
    hg::name_this_thread("hg-test");
    inside = hg::this_thread_name();
    hg::name_this_thread("hg-test-0123456789abcdef");  // 24 bytes
    cut = hg::this_thread_name();
  });
  t.join();
#ifdef __linux__
  EXPECT_EQ(inside, "hg-test");
  EXPECT_EQ(cut, "hg-test-0123456");  // the first 15 bytes
#else
  EXPECT_EQ(inside, "");
#endif
  EXPECT_EQ(hg::this_thread_name(), outside_before);  // the test's own thread kept its name
}
