// Internal to dist/: the NCCL side of collectives.h (CUDA tensors). Built with HAARGRAD_WITH_NCCL.
//
// The communicator is made on first use: rank 0 draws the unique id (ncclGetUniqueId), MPI
// broadcasts it, every rank calls ncclCommInitRank on its GPU (in a single process: a one-rank
// communicator, no MPI). Collectives run on one non-blocking stream, ordered after the default
// stream by an event; each returns an event the watchdog thread watches against the timeout.
#pragma once

#ifdef HAARGRAD_WITH_NCCL
#include <cstddef>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "dist/collectives.h"

namespace hg::dist::detail {

enum class NcclOp { all_reduce, reduce_scatter, all_gather, broadcast };

/// Starts one collective on `count` elements at `data` (device memory). all_reduce: count is the
/// whole buffer; reduce_scatter / all_gather: count is the whole buffer too (size() chunks).
std::shared_ptr<WorkImpl> nccl_start(NcclOp op, void* data, size_t count, DType dtype, Reduce reduce, int root,
                                     const std::string& what);
void nccl_shutdown();

}  // namespace hg::dist::detail
#endif
