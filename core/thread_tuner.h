// The CPU thread count of a training run, chosen from its own step times (issue 16: "degrades
// gracefully when another process uses a core").
//
// Every parallel loop of a CPU step ends at a barrier, so it takes as long as its slowest thread.
// When another process keeps one core busy, the thread that shares that core runs in turns with it
// (time slices of milliseconds) and every loop waits for it: two threads on two cores with one core
// taken trained at 754 img/s, one thread at 1,256, while two threads alone run at 1,884 (this
// machine, default job). No fixed count is right both ways, and no wait policy of OpenMP's fixes it
// (core/threads.h has the figures). So the trainer measures: it runs at the full count, and every
// few seconds tries one thread fewer (or, after a cut, one more) for one short window of steps, and
// keeps whichever was faster by a clear margin. A failed try doubles the wait before the next one
// (the tries cost about 1% once the count has settled); a window much slower or faster than the
// one before (another process started or stopped) makes the next try come at once.
//
// This class is the decision alone (no clock, no OpenMP): the trainer feeds it each step's time and
// applies the count it returns (set_cpu_threads), which keeps it testable with made-up timings.
#pragma once

#include <cstdint>

namespace hg {

class ThreadTuner {
 public:
  struct Options {
    int window_steps = 8;             ///< steps per measured window (at least)
    double window_seconds = 0.4;      ///< and at least this long
    double gain = 0.10;               ///< a try is kept when its seconds per image are this much lower
    double change = 0.30;             ///< a window this far from the one before it makes the next try come at once
    int first_wait = 4;               ///< windows before a try after a kept one (the first try follows the first window)
    int max_wait = 128;               ///< the wait doubles after each failed try, up to this
  };

  /// Chooses between 1 and `max_threads` threads (>= 1; 1 never tries anything), starting at
  /// `max_threads`. Throws hg::Error for max_threads < 1 or options out of range.
  explicit ThreadTuner(int max_threads, Options options);
  explicit ThreadTuner(int max_threads) : ThreadTuner(max_threads, Options()) {}

  /// One training step of `images` images that took `seconds` (excluding waits for data) at the
  /// count threads() returned before it. Returns the count for the next step.
  int add_step(double seconds, int64_t images);

  /// The count to use now.
  int threads() const { return trying_ ? trial_ : current_; }
  /// The count the tuner settled on (the one it returns outside a try).
  int settled_threads() const { return current_; }
  /// Tries so far, and how many of them were kept.
  int64_t tries() const { return tries_; }
  int64_t kept_tries() const { return kept_; }

 private:
  void end_window(double seconds_per_image);
  void start_try();

  Options o_;
  int max_;
  int current_;
  bool trying_ = false;
  int trial_ = 0;
  int direction_ = -1;    // the next try: one thread fewer (-1) or one more (+1)
  bool skip_window_ = true;  // the first window after a count change: warm-up, not measured
  double last_rate_ = 0;  // seconds per image of the last window at current_ (0: none yet)
  int wait_ = 0;          // windows left before the next try
  int wait_length_ = 0;   // the wait after a failed try
  int64_t steps_ = 0, images_ = 0;
  double seconds_ = 0;
  int64_t tries_ = 0, kept_ = 0;
};

}  // namespace hg
