// Big-endian integers in file headers (IDX dimensions, PNG chunk lengths and sizes, JPEG segment
// lengths): one way to read them, where data/idx_dataset.cpp, data/image.cpp and
// data/image_complete.cpp each had their own.
#pragma once

#include <cstdint>

namespace hg {

/// The 16-bit big-endian integer at p[0..1].
inline uint32_t read_be16(const uint8_t* p) { return uint32_t(p[0]) << 8 | uint32_t(p[1]); }

/// The 32-bit big-endian integer at p[0..3].
inline uint32_t read_be32(const uint8_t* p) { return read_be16(p) << 16 | read_be16(p + 2); }

}  // namespace hg
