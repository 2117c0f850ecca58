// DistributedSampler-style sharding of an epoch's order (see shard.h).
#include "data/shard.h"

#include "core/error.h"

namespace hg::data {

int64_t shard_size(int64_t n, int64_t rank, int64_t num_replicas, bool pad) {
  HG_CHECK(num_replicas >= 1 && rank >= 0 && rank < num_replicas, "shard: rank ", rank, " is not in [0, ",
           num_replicas, ")");
  if (pad) return (n + num_replicas - 1) / num_replicas;
  return n > rank ? (n - rank + num_replicas - 1) / num_replicas : 0;
}

std::vector<int64_t> shard_order(const std::vector<int64_t>& order, int64_t rank, int64_t num_replicas, bool pad) {
  const auto n = static_cast<int64_t>(order.size());
  const int64_t m = shard_size(n, rank, num_replicas, pad);
  if (num_replicas == 1) return order;
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(m));
  for (int64_t j = 0; j < m; ++j) {
    const int64_t pos = rank + j * num_replicas;  // in the padded order when pad
    // padding repeats the order from its start (wrapping again if it is shorter than the padding)
    out.push_back(order[static_cast<size_t>(n > 0 ? pos % n : 0)]);
  }
  return out;
}

}  // namespace hg::data
