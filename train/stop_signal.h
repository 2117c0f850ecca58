// Stop signals during training: SIGINT (Ctrl-C), SIGTERM (kill, timeout, docker stop, Slurm),
// SIGHUP (the terminal or ssh session went away) and SIGUSR1 (what mpirun forwards to every rank:
// `kill -USR1 <mpirun>`; mpirun forwards SIGINT / SIGTERM too but kills the ranks after a short
// grace) ask the run to stop: during start-up before the first step (nothing is saved), later
// after the current step (the trainer then writes a recovery checkpoint and returns), and once the
// last epoch is done not at all (the run saves it and ends normally). A kind that came before,
// again a second or more later, kills at once; sooner it is the same request delivered twice
// (coreutils' `timeout` signals the child and then its process group) and changes nothing. A
// signal of another kind than the first is not reported (the first one stopped the run: it is
// the one reported and said).
#pragma once

namespace hg::train {

/// While alive: the stop signals set the stop flag instead of killing the process, and SIGPIPE is
/// ignored (a closed pipe on stdout, `haargrad train ... | head`, must not kill the run); a stop
/// signal ignored when the guard is made (`nohup`'s SIGHUP, SIGINT of a background job of a
/// script) stays ignored. The
/// outermost guard clears the flag and installs the handlers; its destructor restores the previous
/// dispositions. A guard inside another (`haargrad train` holds one from its first moment, train()
/// holds one too) changes nothing, so a signal that came during start-up is not forgotten.
/// Construct and destroy guards on the main thread only.
class StopSignalGuard {
 public:
  StopSignalGuard();
  ~StopSignalGuard();
  StopSignalGuard(const StopSignalGuard&) = delete;
  StopSignalGuard& operator=(const StopSignalGuard&) = delete;

 private:
  bool outermost_ = false;
  void (*previous_[4])(int) = {};
  void (*previous_pipe_)(int) = nullptr;
};

/// What a stop signal leads to at this point of the run: the handler's console line says it, and
/// must not promise what cannot happen.
enum class StopOutcome {
  end_before_training,    ///< start-up: the run ends before its first step, nothing is saved
  recovery,               ///< one process trains: a recovery checkpoint after the current step
  recovery_if_all_ranks,  ///< under mpirun: a recovery checkpoint only if every rank finishes the
                          ///< step (not when a rank died or mpirun kills the ranks first)
  finish,                 ///< after the last epoch's last stop check: the run saves it and ends
                          ///< normally (one process)
  finish_if_all_ranks,    ///< the same under mpirun, unless another rank was stopped before it
};
/// Makes `outcome` what the handler says from now on, unless a stop signal has already come: false
/// then, and the outcome stays the one the handler said, which the run must keep to. The check and
/// the change are one atomic step, so no signal (on whichever thread) falls between them. The
/// outermost guard starts at end_before_training.
bool change_stop_outcome(StopOutcome outcome);
/// The line the handler writes on stderr for `outcome` (for tests).
const char* stop_message(StopOutcome outcome);

/// The first stop signal that came (SIGINT, ...), 0 while none did. Safe from any thread.
int stop_signal();
/// Whether the handler writes its line on stderr (yes until told otherwise). mpirun forwards a
/// signal to every rank: rank 0 alone says it, not one line per rank (`haargrad train` sets this
/// from mpirun's environment before its handlers are in place, and again once MPI has given the
/// rank). Only an atomic store: the handler reads it.
void set_stop_messages(bool say);
/// Asks the run to stop as if `sig` had come (a test's after_step hook).
void request_stop(int sig);
/// "SIGINT", "SIGTERM", ...; 0: "a stop signal on another rank" (a rank stopping because another
/// one was told to).
const char* stop_signal_name(int sig);

}  // namespace hg::train
