// The measured CPU thread count (see thread_tuner.h).
#include "core/thread_tuner.h"

#include <algorithm>

#include "core/error.h"

namespace hg {

ThreadTuner::ThreadTuner(int max_threads, Options options)
    : o_(options), max_(max_threads), current_(max_threads) {
  HG_CHECK(max_threads >= 1, "ThreadTuner: max_threads must be >= 1, got ", max_threads);
  HG_CHECK(o_.window_steps >= 1 && o_.window_seconds >= 0 && o_.gain >= 0 && o_.gain < 1 &&
               o_.change > 0 && o_.first_wait >= 1 && o_.max_wait >= o_.first_wait,
           "ThreadTuner: options out of range (window_steps ", o_.window_steps, ", window_seconds ",
           o_.window_seconds, ", gain ", o_.gain, ", change ", o_.change, ", first_wait ",
           o_.first_wait, ", max_wait ", o_.max_wait, ")");
  // The first try right after the first measured window: a busy core costs from the start.
  wait_ = 1;
  wait_length_ = o_.first_wait;
}

int ThreadTuner::add_step(double seconds, int64_t images) {
  if (max_ == 1 || images <= 0 || !(seconds >= 0)) return threads();
  ++steps_;
  images_ += images;
  seconds_ += seconds;
  if (steps_ >= o_.window_steps && seconds_ >= o_.window_seconds) {
    const double rate = seconds_ / static_cast<double>(images_);
    steps_ = images_ = 0;
    seconds_ = 0;
    end_window(rate);
  }
  return threads();
}

void ThreadTuner::end_window(double rate) {
  if (skip_window_) {  // the run's first steps (allocations, caches) are slower than the rest
    skip_window_ = false;
    return;
  }
  if (trying_) {
    trying_ = false;
    ++tries_;
    const bool faster = rate < last_rate_ * (1 - o_.gain);
    if (faster && !won_once_) {
      // One window against one can be a transient (another process's burst during the window
      // before): measure current_ again, then the same try once more, and keep it if it wins again.
      won_once_ = true;
      wait_ = 1;
      return;
    }
    won_once_ = false;
    if (faster) {  // kept: go on in the same direction soon
      current_ = trial_;
      ++kept_;
      last_rate_ = rate;
      wait_ = wait_length_ = o_.first_wait;
    } else {  // back to current_; next time the other direction, after twice the wait
      direction_ = -direction_;
      wait_length_ = std::min(2 * wait_length_, o_.max_wait);
      wait_ = wait_length_;
    }
    return;
  }
  if (last_rate_ > 0 &&
      (rate > last_rate_ * (1 + o_.change) || rate < last_rate_ * (1 - o_.change))) {
    wait_ = 1;  // the load changed: try at once (after this window), and soon again after a failure
    wait_length_ = o_.first_wait;
  }
  last_rate_ = rate;
  if (--wait_ <= 0) start_try();
}

void ThreadTuner::start_try() {
  int trial = current_ + direction_;
  if (trial < 1 || trial > max_) {
    direction_ = -direction_;
    trial = current_ + direction_;
  }
  if (trial < 1 || trial > max_) return;
  trying_ = true;
  trial_ = trial;
}

}  // namespace hg
