// Stop signals during training: SIGINT (Ctrl-C), SIGTERM (kill, timeout, docker stop, Slurm),
// SIGHUP (the terminal or ssh session went away) and SIGUSR1 (what mpirun forwards to every rank:
// `kill -USR1 <mpirun>`; mpirun forwards SIGINT / SIGTERM too but kills the ranks after a short
// grace) ask the run to stop
// after the current step; the trainer then writes a recovery checkpoint and returns. A second
// signal of the same kind kills at once (the default disposition is restored on the first).
#pragma once

namespace hg::train {

/// While alive: the stop signals set the stop flag instead of killing the process, and SIGPIPE is
/// ignored (a closed pipe on stdout, `haargrad train ... | head`, must not kill the run). The
/// constructor clears the flag; the destructor restores the previous dispositions.
class StopSignalGuard {
 public:
  StopSignalGuard();
  ~StopSignalGuard();
  StopSignalGuard(const StopSignalGuard&) = delete;
  StopSignalGuard& operator=(const StopSignalGuard&) = delete;

 private:
  void (*previous_[4])(int);
  void (*previous_pipe_)(int);
};

/// The stop signal that came (SIGINT, ...), 0 while none did. Safe from any thread.
int stop_signal();
/// Asks the run to stop as if `sig` had come (a test's after_step hook).
void request_stop(int sig);
/// "SIGINT", "SIGTERM", ...; 0: "a stop signal on another rank" (a rank stopping because another
/// one was told to).
const char* stop_signal_name(int sig);

}  // namespace hg::train
