// FNV-1a, 64-bit: a cheap fingerprint of bytes, for comparing what ranks hold (parameters, data
// lists), not for security. One place for its constants.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hg {

inline constexpr uint64_t kFnv1aSeed = 1469598103934665603ull;

/// FNV-1a of `n` bytes at `p`, continuing from `h` (kFnv1aSeed to start): chain calls to hash
/// several pieces as one.
inline uint64_t fnv1a(const void* p, size_t n, uint64_t h = kFnv1aSeed) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

}  // namespace hg
