// One rank's share of an epoch's sample order in data-parallel training (PyTorch / timm
// DistributedSampler semantics).
//
// Training (pad = true): the order (already shuffled by (seed, epoch), the same on every rank) is
// padded by repeating its first elements until its length is a multiple of num_replicas, and rank r
// takes positions r, r + num_replicas, r + 2 num_replicas, ...: every rank gets the same number of
// samples, so all ranks run the same number of steps. With batch_size B per rank, step k of rank r
// holds positions k*B*R + r + R*j (j < B): the R ranks' batches of step k together are exactly the
// positions [k*B*R, (k+1)*B*R) a single process with batch B*R would take at step k.
// Evaluation (pad = false): the same interleaving without padding (ranks may differ by one sample),
// so every sample is counted exactly once and the reduced metrics equal a single process's.
#pragma once

#include <cstdint>
#include <vector>

namespace hg::data {

/// Rank `rank`'s positions of `order` (see the file comment). num_replicas == 1 returns order.
/// Throws hg::Error unless 0 <= rank < num_replicas.
std::vector<int64_t> shard_order(const std::vector<int64_t>& order, int64_t rank, int64_t num_replicas, bool pad);

/// The length shard_order would return, without building it.
int64_t shard_size(int64_t n, int64_t rank, int64_t num_replicas, bool pad);

}  // namespace hg::data
