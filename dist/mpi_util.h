// Internal to dist/: MPI status checks and the timed wait every collective goes through.
// Only compiled into MPI builds (HAARGRAD_WITH_MPI).
#pragma once

#ifdef HAARGRAD_WITH_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only (no deprecated C++ bindings)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <memory>
#include <string>

namespace hg::dist::detail {

/// Throws hg::Error "rank R of N: MPI error in <call> (<what>): <MPI's message>" unless rc is
/// MPI_SUCCESS (MPI_COMM_WORLD returns errors instead of aborting: init() sets MPI_ERRORS_RETURN).
void mpi_check(int rc, const char* call, const std::string& what);

/// Completes a non-blocking MPI request, polling it (MPI_Test also drives progress) and sleeping
/// briefly between polls; after timeout() seconds throws hg::Error naming this rank and `what`.
void wait(MPI_Request& request, const std::string& what);

/// After a failed wait: keeps `buffers` alive (and the request unfreed) for the rest of the
/// process, because the abandoned collective may still complete and write into them. The run is
/// about to end (abort_all), so this is not a leak that grows.
void abandon(MPI_Request request, std::shared_ptr<const void> buffers);

/// wait(), abandoning the request and its buffers when it fails.
template <typename Buffers>
void wait_or_abandon(MPI_Request& request, const std::shared_ptr<Buffers>& buffers, const std::string& what) {
  try {
    wait(request, what);
  } catch (...) {
    abandon(request, buffers);
    throw;
  }
}

}  // namespace hg::dist::detail
#endif
