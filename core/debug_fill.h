// Test aid of the allocator (core/memory.cpp): poisoned allocations with guard bytes after them,
// used by the op harness (tests/ops) to catch an op that leaves an output element unwritten or
// writes past the end of a buffer, on any device and in any dtype.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace hg::memory {

/// Bytes of the known pattern that follow every allocation made while the debug fill is on.
inline constexpr size_t kGuardBytes = 256;

/// While on for `device`, every allocation there (in grad mode or not) starts filled with 0xFF
/// bytes, which read as NaN in f32, f64 and bf16, and is followed by kGuardBytes of a pattern that
/// is checked when the memory is freed (also after the fill was turned off again). Costs a fill
/// per allocation and a device-to-host copy per free: tests only, never in training.
void set_debug_fill(Device device, bool on);
bool debug_fill(Device device);
/// Number of guarded allocations (any device) freed with a damaged guard since the process began.
int64_t guard_violations();

}  // namespace hg::memory
