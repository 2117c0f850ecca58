// GPU test aid: stands in for the work a training step leaves queued when the loader makes the next
// batch (a backward still running, reading memory it already gave back to the caching allocator).
// A decoder that writes into such memory before the queued work has run is caught by the sum.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hg::test {

/// Queues on the default stream, returning at once: a one-thread kernel that spins for `ms`
/// milliseconds of GPU time (%globaltimer), then a kernel that adds the `n` bytes at device pointer
/// `bytes` into *sum (a device uint64, not cleared). So *sum holds the bytes as they are `ms` after
/// the queue reaches this point.
void queue_spin_then_sum(const uint8_t* bytes, size_t n, unsigned long long* sum, double ms);

}  // namespace hg::test
