// Seed mixing for the data pipeline: every random draw is a pure function of (seed, epoch, index), so
// a batch's contents do not depend on which worker thread made it, and a resumed run sees the same data.
#pragma once

#include <cstdint>

namespace hg::data {

/// SplitMix64 finaliser (Steele, Lea, Flood 2014): a bijective 64-bit mixer with good avalanche.
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// A seed for stream `stream` (e.g. 1 = shuffling, 2 = per-sample augmentation) of (seed, a, b).
inline uint64_t mix_seed(uint64_t seed, uint64_t stream, uint64_t a, uint64_t b = 0) {
  return splitmix64(splitmix64(splitmix64(splitmix64(seed) ^ stream) ^ a) ^ b);
}

}  // namespace hg::data
