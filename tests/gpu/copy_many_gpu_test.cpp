// copy_many (kernels/cuda/copy.h, core/tensor.h): many device-to-device copies in few launches,
// checked byte for byte against the host's copy of the same sources, into poisoned and guarded
// destinations.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "gpu_util.h"
#include "kernels/cuda/copy.h"
#include "test_util.h"

using namespace hg;

namespace {
std::vector<uint8_t> bytes_of(const Tensor& t) {
  const Tensor h = t.to(Device::cpu).contiguous();
  const auto* p = static_cast<const uint8_t*>(h.data_ptr());
  return std::vector<uint8_t>(p, p + h.nbytes());
}
}  // namespace

// 300 items (three launches of the 128-item table): sizes from 1 byte to 3 chunks of 64 KiB and
// a bit, sources at odd byte offsets (the byte path) and 16-byte aligned ones (the vector path),
// each item's destination poisoned and followed by guard bytes.
TEST(CopyMany, ByteExactAcrossTablesSizesAndAlignments) {
  HG_REQUIRE_GPU();
  const int n = 300;
  const Tensor src_all = test::random({int64_t(1) << 20}, 7, DType::f32).to(Device::cuda);
  std::vector<test::Guarded> dst;
  std::vector<kernels::cuda::CopyItem> items;
  std::vector<std::pair<int64_t, int64_t>> spans;  // (source byte offset, bytes)
  for (int i = 0; i < n; ++i) {
    const int64_t bytes = i % 7 == 0 ? 1 + i : (i % 5 == 0 ? 3 * 65536 + 16 * i + 3 : 64 * i + 4);
    const int64_t off = i % 2 ? 16 * (i % 13) : 1 + i % 15;  // aligned / not
    spans.emplace_back(off, bytes);
    dst.emplace_back(Shape{bytes}, DType::u8);
  }
  const auto* base = static_cast<const uint8_t*>(src_all.data_ptr());
  for (int i = 0; i < n; ++i)
    items.push_back({dst[size_t(i)].tensor().data_ptr(), base + spans[size_t(i)].first,
                     spans[size_t(i)].second});
  kernels::cuda::copy_many(items);
  const std::vector<uint8_t> host = bytes_of(src_all);
  for (int i = 0; i < n; ++i) {
    const auto [off, bytes] = spans[size_t(i)];
    const std::vector<uint8_t> got = bytes_of(dst[size_t(i)].tensor());
    ASSERT_EQ(got, std::vector<uint8_t>(host.begin() + off, host.begin() + off + bytes))
        << "item " << i << ": " << bytes << " bytes from offset " << off;
    ASSERT_TRUE(dst[size_t(i)].guard_intact()) << "item " << i;
  }
}

// hg::copy_many: dense same-dtype GPU pairs go through the kernel; the rest (a host pair, a
// strided view, a dtype conversion) through copy_; every pair ends equal to its source.
TEST(CopyMany, TensorPairsOfEveryKind) {
  HG_REQUIRE_GPU();
  const Tensor a = test::random({37, 5}, 11, DType::f32).to(Device::cuda);
  const Tensor b = test::random({1000}, 12, DType::f32).to(DType::bf16).to(Device::cuda);
  const Tensor c = test::random({6, 4}, 13, DType::f32).to(Device::cuda);
  const Tensor h = test::random({9}, 14, DType::f64);
  test::Guarded da({37, 5}), db({1000}, DType::bf16), dc_f32({4, 6});
  Tensor dh = Tensor::zeros({9}, DType::f64, Device::cpu);
  Tensor conv = Tensor::zeros({1000}, DType::f32, Device::cuda);
  copy_many({da.tensor(), db.tensor(), dc_f32.tensor(), dh, conv}, {a, b, c.permute({1, 0}), h, b});
  EXPECT_EQ(bytes_of(da.tensor()), bytes_of(a));
  EXPECT_EQ(bytes_of(db.tensor()), bytes_of(b));
  EXPECT_EQ(dc_f32.tensor().to(Device::cpu).to_vector<double>(),
            c.permute({1, 0}).contiguous().to(Device::cpu).to_vector<double>());
  EXPECT_EQ(dh.to_vector<double>(), h.to_vector<double>());
  EXPECT_EQ(conv.to(Device::cpu).to_vector<double>(),
            b.to(DType::f32).to(Device::cpu).to_vector<double>());
  EXPECT_TRUE(da.guard_intact() && db.guard_intact() && dc_f32.guard_intact());
  EXPECT_THROW(copy_many({da.tensor()}, {}), Error);
}
