// Stop signals (see stop_signal.h).
#include "train/stop_signal.h"

#include <unistd.h>
#include <atomic>
#include <csignal>
#include <cstring>
#include <iterator>

namespace hg::train {
namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1};
std::atomic<int> g_stop_signal{0};
// read by the handler: a lock-free atomic is async-signal-safe
std::atomic<StopOutcome> g_outcome{StopOutcome::end_before_training};
static_assert(std::atomic<StopOutcome>::is_always_lock_free);
int g_guards = 0;  // guards alive (main thread only)

void on_stop_signal(int sig) {
  g_stop_signal = sig;
  std::signal(sig, SIG_DFL);  // a second one kills at once
  // async-signal-safe: one write(2) of a constant text
  const char* text = stop_message(g_outcome.load());
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, text, std::strlen(text));
}

}  // namespace

StopSignalGuard::StopSignalGuard() {
  static_assert(std::size(kStopSignals) == std::size(decltype(previous_){}));
  outermost_ = g_guards++ == 0;
  if (!outermost_) return;  // the outer guard's handlers and flag stand
  g_stop_signal = 0;
  g_outcome = StopOutcome::end_before_training;
  for (size_t i = 0; i < std::size(kStopSignals); ++i)
    previous_[i] = std::signal(kStopSignals[i], on_stop_signal);
  previous_pipe_ = std::signal(SIGPIPE, SIG_IGN);
}

StopSignalGuard::~StopSignalGuard() {
  --g_guards;
  if (!outermost_) return;
  for (size_t i = 0; i < std::size(kStopSignals); ++i) std::signal(kStopSignals[i], previous_[i]);
  std::signal(SIGPIPE, previous_pipe_);
  g_outcome = StopOutcome::end_before_training;
}

void set_stop_outcome(StopOutcome outcome) { g_outcome = outcome; }

const char* stop_message(StopOutcome outcome) {
  // strlen and write(2) of these constants are async-signal-safe
  switch (outcome) {
    case StopOutcome::end_before_training:
      return "\nhaargrad: stop signal: stopping before the first step (nothing is trained or "
             "saved; the same signal again stops at once)\n";
    case StopOutcome::recovery:
      return "\nhaargrad: stop signal: stopping after this step (a recovery checkpoint follows; "
             "the same signal again stops at once)\n";
    case StopOutcome::recovery_if_all_ranks:
      return "\nhaargrad: stop signal: stopping after this step; a recovery checkpoint is written "
             "only if every rank finishes it (none when a rank has died or mpirun kills the ranks "
             "first; the same signal again stops at once)\n";
  }
  return "\nhaargrad: stop signal\n";
}

int stop_signal() { return g_stop_signal.load(); }

void request_stop(int sig) { g_stop_signal = sig; }

const char* stop_signal_name(int sig) {
  switch (sig) {
    case 0: return "a stop signal on another rank";
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGUSR1: return "SIGUSR1";
    default: return "a signal";
  }
}

}  // namespace hg::train
