// The CPU thread count of a training run, chosen from its own step times (issue 16: "degrades
// gracefully when another process uses a core").
//
// Every parallel loop of a CPU step ends at a barrier, so it takes as long as its slowest thread.
// When another process keeps one core busy, the thread that shares that core runs in turns with it
// (time slices of milliseconds) and every loop waits for it: on the 2-core development machine two
// threads trained the default job at 678 img/s beside a busy process, one thread at 952, while two
// threads alone ran at 1,378 and one at 901 (core/threads.h has the figures). No fixed count is
// right both ways. So the trainer measures: it runs at the full count, and now and then tries one
// thread fewer (or, after a cut, one more) for one short window of steps, and keeps whichever was
// faster by a clear margin twice in a row: a try that wins is made once more after a new window at
// the count in use (one window against one is a single sample, and a burst of another process in
// the window before the first try was enough to drop a thread: a new user's quick start dropped
// one 3 s in). The first try follows the first measured window; a failed try doubles the wait
// before the next one (up to 128 windows, about a minute alone: the tries then cost about
// 1%); a window much slower or faster than the one before it (another process started or stopped)
// brings the next try forward. It steps one thread at a time, so with more cores it finds the count
// when one fewer thread is measurably faster (one busy core), not necessarily beyond.
//
// This class is the decision alone (no clock, no OpenMP): the trainer feeds it each step's time and
// applies the count it returns (set_active_cpu_threads, which keeps the kernels' split of the work
// and so every result), which keeps it testable with made-up timings.
#pragma once

#include <cstdint>

namespace hg {

class ThreadTuner {
 public:
  struct Options {
    int window_steps = 8;         ///< steps per measured window (at least)
    double window_seconds = 0.4;  ///< and at least this long
    double gain = 0.10;           ///< a try is kept when its seconds per image are this much lower
    /// a window this far from the one before it makes the next try come at once
    double change = 0.30;
    /// windows before a try after a kept one (the first try follows the first measured window)
    int first_wait = 4;
    int max_wait = 128;  ///< the wait doubles after each failed try, up to this
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
  int direction_ = -1;       // the next try: one thread fewer (-1) or one more (+1)
  bool skip_window_ = true;  // the run's first window: warm-up (allocations, caches), not measured
  bool won_once_ = false;    // the try was faster once: to be confirmed by a second, same try
  double last_rate_ = 0;     // seconds per image of the last window at current_ (0: none yet)
  int wait_ = 0;             // windows left before the next try
  int wait_length_ = 0;      // the wait after a failed try
  int64_t steps_ = 0, images_ = 0;
  double seconds_ = 0;
  int64_t tries_ = 0, kept_ = 0;
};

}  // namespace hg
