// The measured thread count (core/thread_tuner.h) on a made-up machine: step times per thread
// count, alone and with other processes on some cores, as measured on the 2-core development
// machine (default job: 2 threads 1,884 img/s alone, 754 with one core busy; 1 thread ~1,150 alone,
// 1,256 busy).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "core/error.h"
#include "core/thread_tuner.h"

namespace hg {
namespace {

constexpr int64_t kBatch = 128;

// Seconds of one step at `threads` threads, with `busy` cores taken by others, on `cores` cores:
// the threads that share a core with another process make every loop wait (the measured collapse).
double step_seconds(int threads, int busy, int cores) {
  const double one = kBatch / 1150.0;  // one thread alone
  if (busy == 0) return one / (threads == 1 ? 1.0 : 1.0 + 0.64 * (threads - 1) / (cores - 1));
  const int free_cores = cores - busy;
  if (threads <= free_cores) return one / (1.0 + 0.64 * (threads - 1) / (cores - 1)) * 0.95;
  return kBatch / 754.0 *
         (1.0 + 0.1 * (threads - free_cores - 1));  // a thread beside another process
}

struct Trace {
  std::vector<int> used;  // the count of every step
  double seconds = 0;
};

double wobble(int64_t step, double jitter) {
  return 1.0 + jitter * (((step * 7919) % 17) / 8.0 - 1.0);
}

// `steps` steps; busy(step) gives the cores other processes take at that step. Step times vary
// deterministically by up to `jitter`.
Trace simulate(ThreadTuner& t, int cores, int64_t steps, const std::function<int(int64_t)>& busy,
               double jitter = 0.08) {
  Trace r;
  for (int64_t i = 0; i < steps; ++i) {
    const int n = t.threads();
    const double s = step_seconds(n, busy(i), cores) * wobble(i, jitter);
    r.used.push_back(n);
    r.seconds += s;
    t.add_step(s, kBatch);
  }
  return r;
}

// The same steps at a fixed count.
double fixed_seconds(int threads, int cores, int64_t steps, const std::function<int(int64_t)>& busy,
                     double jitter = 0.08) {
  double total = 0;
  for (int64_t i = 0; i < steps; ++i)
    total += step_seconds(threads, busy(i), cores) * wobble(i, jitter);
  return total;
}

int64_t steps_at(const Trace& r, int n, int64_t from, int64_t to) {
  int64_t c = 0;
  for (int64_t i = from; i < to; ++i) c += r.used[static_cast<size_t>(i)] == n;
  return c;
}

TEST(ThreadTuner, AloneKeepsEveryThreadAndTriesRarely) {
  ThreadTuner t(2);
  const Trace r = simulate(t, 2, 4000, [](int64_t) { return 0; });  // ~4 minutes of the default job
  EXPECT_EQ(t.settled_threads(), 2);
  EXPECT_EQ(t.kept_tries(), 0);
  // the tries cost little: under 2% of the steps ran at one thread, fewer later as the wait doubles
  EXPECT_LT(steps_at(r, 1, 0, 4000), 4000 * 2 / 100);
  EXPECT_LT(steps_at(r, 1, 2000, 4000), 2000 * 1 / 100);
  EXPECT_GE(t.tries(), 3);
  EXPECT_LT(r.seconds, 1.012 * fixed_seconds(2, 2, 4000, [](int64_t) { return 0; }));
}

TEST(ThreadTuner, ABusyCoreDropsAThreadAndAFreedOneGetsItBack) {
  ThreadTuner t(2);
  auto busy = [](int64_t i) { return i >= 1000 && i < 3000 ? 1 : 0; };
  const Trace r = simulate(t, 2, 5000, busy);
  // soon after the other process starts, one thread; most busy steps at one thread
  EXPECT_GT(steps_at(r, 1, 1100, 3000), 1900 * 95 / 100);
  // after it stops, back to two within the longest wait (64 windows of 8 steps)
  EXPECT_GT(steps_at(r, 2, 3000 + 64 * 8 + 16, 5000), (5000 - 3000 - 64 * 8 - 16) * 97 / 100);
  EXPECT_EQ(t.settled_threads(), 2);
  // faster overall than either fixed count, and within 3% of the best count at every step
  EXPECT_LT(r.seconds, 0.8 * fixed_seconds(2, 2, 5000, busy));
  EXPECT_LT(r.seconds, 0.9 * fixed_seconds(1, 2, 5000, busy));
  double best = 0;
  for (int64_t i = 0; i < 5000; ++i)
    best += std::min(step_seconds(1, busy(i), 2), step_seconds(2, busy(i), 2)) * wobble(i, 0.08);
  EXPECT_LT(r.seconds, 1.03 * best);
}

TEST(ThreadTuner, ABusyCoreFromTheStartCostsOnlyTheFirstWindows) {
  ThreadTuner t(2);
  const Trace r = simulate(t, 2, 1000, [](int64_t) { return 1; });
  // one skipped window, one measured, one try, one measured again and the try's second: 5 windows
  // of 8 steps (0.4 s at least), 3 at two threads
  EXPECT_EQ(r.used[39], 1);
  EXPECT_EQ(r.used[40], 1);
  EXPECT_EQ(steps_at(r, 2, 0, 40), 24);
  EXPECT_GT(steps_at(r, 1, 40, 1000), 960 * 95 / 100);  // then a try of two now and then
}

// The quick start dropped to one thread 3 s in: the first try came after one measured window and
// was kept on one window against one, so a burst of another process in the window before it was
// enough. A try is kept only when it wins twice, against a new window at the count in use.
TEST(ThreadTuner, ABurstInTheWindowBeforeATryDropsNoThread) {
  ThreadTuner t(2);
  // alone but for a burst over the first measured window (steps 8 .. 15: 8-step windows)
  const Trace r = simulate(t, 2, 2000, [](int64_t i) { return i >= 8 && i < 16 ? 1 : 0; });
  EXPECT_EQ(t.kept_tries(), 0);
  EXPECT_EQ(t.settled_threads(), 2);
  EXPECT_GE(t.tries(), 2);  // the try after the burst, and its second, which lost
  EXPECT_LT(steps_at(r, 1, 0, 2000), 2000 * 3 / 100);  // the tries alone (6 windows of 8 steps)
}

TEST(ThreadTuner, EightCoresWithOneBusyUseSeven) {
  ThreadTuner t(8);
  const Trace r = simulate(t, 8, 4000, [](int64_t i) { return i >= 500 ? 1 : 0; });
  EXPECT_EQ(t.settled_threads(), 7);
  EXPECT_GT(steps_at(r, 7, 1000, 4000), 3000 * 97 / 100);
}

TEST(ThreadTuner, OneThreadNeverTriesAndBadOptionsThrow) {
  ThreadTuner one(1);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(one.add_step(0.1, kBatch), 1);
  EXPECT_EQ(one.tries(), 0);
  EXPECT_THROW(ThreadTuner(0), Error);
  EXPECT_THROW(ThreadTuner(2, ThreadTuner::Options{0, 0.4, 0.1, 0.3, 4, 64}), Error);
  EXPECT_THROW(ThreadTuner(2, ThreadTuner::Options{8, 0.4, 0.1, 0.3, 8, 4}), Error);
  // steps without images (or with a bad time) are not counted
  ThreadTuner t(2);
  for (int i = 0; i < 1000; ++i) t.add_step(0.1, 0);
  EXPECT_EQ(t.tries(), 0);
}

}  // namespace
}  // namespace hg
