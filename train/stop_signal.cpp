// Stop signals (see stop_signal.h).
#include "train/stop_signal.h"

#include <unistd.h>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <iterator>

namespace hg::train {
namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1};
// The stop signal that came (0: none) and the outcome the handler says, in one word: the flag goes
// up with the outcome in force then, and change_stop_outcome changes it only while no flag is up.
// Two words would leave a window (the signal can land on any thread) where the handler says one
// outcome and the trainer, having checked the flag a moment before, does another. A lock-free
// atomic is async-signal-safe.
std::atomic<uint32_t> g_state{0};
static_assert(std::atomic<uint32_t>::is_always_lock_free);
int g_guards = 0;  // guards alive (main thread only)

constexpr uint32_t pack(int sig, StopOutcome outcome) {
  return static_cast<uint32_t>(sig) << 8 | static_cast<uint32_t>(outcome);
}
int signal_of(uint32_t state) { return static_cast<int>(state >> 8); }
StopOutcome outcome_of(uint32_t state) { return static_cast<StopOutcome>(state & 0xff); }

// Whether the handler writes its line (set_stop_messages). A lock-free atomic: async-signal-safe.
std::atomic<bool> g_say{true};
static_assert(std::atomic<bool>::is_always_lock_free);

// Raises the flag unless it is up already: the first stop signal is the one that stops the run, so
// it stays the one the run reports (a later one of another kind, say SIGTERM after Ctrl-C, must
// not replace it). The state before: its signal is 0 when this call raised the flag, and its
// outcome is then the one in force, which the run keeps to.
uint32_t raise_stop_flag(int sig) {
  uint32_t state = g_state.load();
  while (signal_of(state) == 0 &&
         !g_state.compare_exchange_weak(state, pack(sig, outcome_of(state)))) {
  }
  return state;
}

// When each kind of stop signal first came (CLOCK_MONOTONIC, ns; 0: not yet), in kStopSignals'
// order. A repeat of a kind sooner than kRepeatWindowNs after its first is the same request
// delivered twice, not a second one: coreutils' `timeout` sends its signal to the child and then
// to its process group, and a terminal's Ctrl-C reaches every process of the group, so a lone
// request can arrive twice within microseconds.
std::atomic<int64_t> g_first_ns[std::size(kStopSignals)];
static_assert(std::atomic<int64_t>::is_always_lock_free);
constexpr int64_t kRepeatWindowNs = 1'000'000'000;

int64_t monotonic_ns() {  // clock_gettime is async-signal-safe
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

void on_stop_signal(int sig) {
  const int64_t now = monotonic_ns();
  size_t kind = 0;
  while (kind + 1 < std::size(kStopSignals) && kStopSignals[kind] != sig) ++kind;
  int64_t first = 0;
  if (g_first_ns[kind].compare_exchange_strong(first, now)) {
    // this kind's first: the first stop signal of all raises the flag and says its line; one of
    // another kind after it changes nothing (the first one stopped the run: it is the one
    // reported and said)
    const uint32_t before = raise_stop_flag(sig);
    if (signal_of(before) != 0 || !g_say.load()) return;  // quiet ranks: set_stop_messages
    // async-signal-safe: one write(2) of a constant text
    const char* text = stop_message(outcome_of(before));
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, text, std::strlen(text));
    return;
  }
  // a kind that came before, again a second or more later: the user insists, so it kills at once
  // (the default disposition, raised again); sooner, it is the same delivery twice
  if (now - first >= kRepeatWindowNs) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

}  // namespace

StopSignalGuard::StopSignalGuard() {
  static_assert(std::size(kStopSignals) == std::size(decltype(previous_){}));
  outermost_ = g_guards++ == 0;
  if (!outermost_) return;  // the outer guard's handlers and flag stand
  g_state = pack(0, StopOutcome::end_before_training);
  for (auto& t : g_first_ns) t = 0;
  // A stop signal the process was started ignoring stays ignored: `nohup` (SIGHUP) and a
  // non-interactive shell's `cmd &` (SIGINT) ask so, and Python (timm) keeps to it; a run under
  // nohup stopped when its session ended.
  for (size_t i = 0; i < std::size(kStopSignals); ++i) {
    struct sigaction now {};
    const bool ignored =
        sigaction(kStopSignals[i], nullptr, &now) == 0 && now.sa_handler == SIG_IGN;
    previous_[i] = ignored ? SIG_IGN : std::signal(kStopSignals[i], on_stop_signal);
  }
  previous_pipe_ = std::signal(SIGPIPE, SIG_IGN);
}

StopSignalGuard::~StopSignalGuard() {
  --g_guards;
  if (!outermost_) return;
  for (size_t i = 0; i < std::size(kStopSignals); ++i) std::signal(kStopSignals[i], previous_[i]);
  std::signal(SIGPIPE, previous_pipe_);
  g_state = pack(stop_signal(), StopOutcome::end_before_training);  // the flag stays readable
}

bool change_stop_outcome(StopOutcome outcome) {
  uint32_t state = g_state.load();
  do {
    if (signal_of(state) != 0) return false;
  } while (!g_state.compare_exchange_weak(state, pack(0, outcome)));
  return true;
}

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
    case StopOutcome::finish:
      return "\nhaargrad: stop signal: the last epoch is done: the run saves it and ends normally "
             "(the same signal again stops at once)\n";
    case StopOutcome::finish_if_all_ranks:
      return "\nhaargrad: stop signal: the last epoch is done: the run saves it and ends normally, "
             "unless another rank was stopped before it got there (a recovery checkpoint then; "
             "none when a rank has died or mpirun kills the ranks first; the same signal again "
             "stops at once)\n";
  }
  return "\nhaargrad: stop signal\n";
}

int stop_signal() { return signal_of(g_state.load()); }

void set_stop_messages(bool say) { g_say = say; }

void request_stop(int sig) { raise_stop_flag(sig); }

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
