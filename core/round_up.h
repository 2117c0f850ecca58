// Rounding a size up to a multiple: the allocators' one helper (core/memory.cpp,
// core/block_cache.cpp, core/pinned_memory.cpp). Each file kept its own copy in an anonymous
// namespace, and a unity build (HAARGRAD_UNITY, scripts/quickstart.sh) that put memory.cpp and
// pinned_memory.cpp in one source failed on the twin definitions.
#pragma once

#include <cstddef>

namespace hg {

/// n rounded up to a multiple of a (a > 0; no overflow check: sizes here are far below SIZE_MAX).
constexpr size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace hg
