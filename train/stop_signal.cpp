// Stop signals (see stop_signal.h).
#include "train/stop_signal.h"

#include <unistd.h>
#include <atomic>
#include <csignal>
#include <iterator>

namespace hg::train {
namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1};
std::atomic<int> g_stop_signal{0};

void on_stop_signal(int sig) {
  g_stop_signal = sig;
  std::signal(sig, SIG_DFL);  // a second one kills at once
  // async-signal-safe: one write(2) of a constant text
  static const char kText[] =
      "\nhaargrad: stop signal: stopping after this step (a recovery "
      "checkpoint follows; the same signal again stops at once)\n";
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kText, sizeof kText - 1);
}

}  // namespace

StopSignalGuard::StopSignalGuard() {
  static_assert(std::size(kStopSignals) == std::size(decltype(previous_){}));
  g_stop_signal = 0;
  for (size_t i = 0; i < std::size(kStopSignals); ++i)
    previous_[i] = std::signal(kStopSignals[i], on_stop_signal);
  previous_pipe_ = std::signal(SIGPIPE, SIG_IGN);
}

StopSignalGuard::~StopSignalGuard() {
  for (size_t i = 0; i < std::size(kStopSignals); ++i) std::signal(kStopSignals[i], previous_[i]);
  std::signal(SIGPIPE, previous_pipe_);
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
