// Names for haargrad's own threads, as debuggers and profilers show them (gdb and cuda-gdb, Nsight
// Systems' per-thread rows, `top -H`, /proc/PID/task/TID/comm): the data loader's workers
// ("hg-load-N") and its GPU thread ("hg-load-gpu"), so that a trace of a training run says which
// thread made a slow call.
#pragma once

#include <string>

namespace hg {

/// Names the calling thread. Linux keeps the first 15 bytes of `name`. Best effort: where the
/// platform has no thread names, or refuses this one, the thread keeps its name.
void name_this_thread(const std::string& name);

/// The calling thread's name; "" where the platform has none.
std::string this_thread_name();

}  // namespace hg
