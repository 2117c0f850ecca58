// Big-endian reads (core/big_endian.h): the byte order of IDX and PNG headers and JPEG segment
// lengths, and bytes of 0x80 and above taken as unsigned (a PNG width of 2^31 is not negative).
#include <gtest/gtest.h>

#include <cstdint>

#include "core/big_endian.h"

TEST(BigEndian, MostSignificantByteFirstAndUnsigned) {
  const uint8_t idx_magic[] = {0x00, 0x00, 0x08, 0x03};
  EXPECT_EQ(hg::read_be32(idx_magic), 0x803u);
  const uint8_t high[] = {0xFF, 0xFE, 0x80, 0x01};
  EXPECT_EQ(hg::read_be16(high), 0xFFFEu);
  EXPECT_EQ(hg::read_be16(high + 2), 0x8001u);
  EXPECT_EQ(hg::read_be32(high), 0xFFFE8001u);
}
