// The data-parallel process group: which process this is among how many, the host-side collectives
// the trainer needs, the collective timeout, and the one way a failed run ends on every rank.
//
// Launch (README "Data-parallel training"): `mpirun -np N haargrad train CONFIG` starts N copies of
// the program, one per GPU. init() sees mpirun's environment (Open MPI, MPICH/Hydra or PMIx
// variables) and only then calls MPI_Init; a process started without mpirun never makes an MPI call
// and is rank 0 of 1, exactly as a build without MPI. The local rank (rank among the processes of
// one machine, from an MPI shared-memory split) picks the GPU.
//
// Collectives: every rank must call the same collectives in the same order (`what` names the call
// in error messages). Each waits at most timeout() seconds; then it throws hg::Error naming this
// rank and the call ("another rank failed, stalled or called something else"), and the caller ends
// the run with abort_all(), so a failure never leaves the other ranks hanging.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hg::dist {

struct Info {
  int rank = 0;          ///< 0 .. size-1
  int size = 1;          ///< processes in the run (world size)
  int local_rank = 0;    ///< rank among the processes of this machine (picks the GPU)
  int local_size = 1;    ///< processes on this machine
  bool mpi = false;      ///< MPI was initialised (launched by mpirun, MPI build)
  std::string host;      ///< this machine's name
};

/// True when the environment says this process was started by mpirun / mpiexec / srun with PMI
/// (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK, MPI_LOCALNRANKS), whatever the build.
bool launched_by_mpirun();

/// This process's rank as the launcher announces it in the environment before MPI starts
/// (OMPI_COMM_WORLD_RANK: Open MPI's mpirun; PMIX_RANK: PMIx launchers; PMI_RANK: MPICH/Hydra),
/// or -1 when none does (a plain process) or the value is not a rank. For what must be known
/// before init() has asked MPI: `haargrad train` keeps ranks other than 0 quiet about a stop
/// signal from their first moment, MPI's start-up included.
int launcher_rank();

/// Starts the process group (see the file comment); idempotent. Throws hg::Error when mpirun
/// started several processes but this build has no MPI, or when MPI fails to start. In a CUDA
/// build launched by mpirun it also makes the local rank's GPU the only visible one
/// (CUDA_VISIBLE_DEVICES), before anything touches CUDA.
void init();
/// Ends MPI when init() started it (after a barrier, so no rank leaves while another still
/// talks); idempotent.
void finalize();

const Info& info();
inline int rank() { return info().rank; }
inline int size() { return info().size; }
inline bool is_main() { return info().rank == 0; }
/// "rank 1 of 4 (host a, local rank 1)" for messages.
std::string describe();

/// Seconds any collective may wait before it is declared hung (config key dist_timeout); > 0.
void set_timeout(double seconds);
double timeout();

/// "error on rank R of N (host H, local rank L): message", the rank named once (messages of dist/
/// already start with describe()).
std::string rank_error(const std::string& message);

/// Prints "haargrad: " + rank_error(message) to stderr and ends the run on every rank: MPI_Abort
/// when MPI is up (mpirun then stops the other ranks), else exit(code). Safe to call from any
/// thread.
[[noreturn]] void abort_all(const std::string& message, int code = 1);

// ---- host collectives (blocking; identity in a single process) ----------------------------------

void barrier(const char* what);
/// Element-wise sum over ranks; every rank passes the same length and gets the sums.
std::vector<double> sum(const std::vector<double>& values, const char* what);
/// True on every rank when `flag` is true on any rank.
bool any(bool flag, const char* what);
/// Rank `root`'s string on every rank.
std::string broadcast(const std::string& s, int root, const char* what);
/// Every rank's vector (all of the same length n), concatenated in rank order (size() * n values).
std::vector<uint64_t> all_gather(const std::vector<uint64_t>& values, const char* what);

}  // namespace hg::dist
