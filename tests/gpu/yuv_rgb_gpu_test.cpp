// The CUDA YCbCr-to-RGB batch conversion (kernels/cuda/yuv_rgb.cu) equals the CPU reference bit for
// bit: a batch of items at every subsampling and grayscale, odd sizes, padded pitches, random bytes,
// into a poisoned destination with a guard after it.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/random.h"
#include "gpu/gpu_util.h"
#include "kernels/yuv_rgb.h"

using namespace hg;

TEST(YuvToRgbGpu, EqualsCpuReference) {
  HG_REQUIRE_GPU();
  struct Kind {
    int sx, sy, gray, h, w;
  };
  const std::vector<Kind> kinds = {{1, 1, 0, 333, 457}, {0, 0, 0, 17, 29}, {1, 0, 0, 64, 65},
                                   {0, 1, 0, 5, 3},     {2, 0, 0, 41, 23}, {2, 1, 0, 9, 31},
                                   {0, 0, 1, 37, 11},   {1, 1, 0, 1, 1}};
  std::vector<kernels::YuvItem> items;
  int64_t src_bytes = 256, dst_bytes = 0;  // the items would sit first in the decoder's buffer
  for (const Kind& k : kinds) {
    kernels::YuvItem it;
    it.width = k.w, it.height = k.h, it.shift_x = k.sx, it.shift_y = k.sy, it.gray = k.gray;
    it.c_width = (k.w + (1 << k.sx) - 1) >> k.sx;
    it.c_height = (k.h + (1 << k.sy) - 1) >> k.sy;
    it.y_pitch = k.w + 16;
    it.c_pitch = it.c_width + 9;
    it.y_offset = src_bytes;
    it.cb_offset = it.y_offset + int64_t(it.y_pitch) * k.h;
    it.cr_offset = it.cb_offset + int64_t(it.c_pitch) * it.c_height;
    src_bytes = it.cr_offset + int64_t(it.c_pitch) * it.c_height;
    it.dst_offset = dst_bytes;
    dst_bytes += int64_t(k.h) * k.w * 3;
    items.push_back(it);
  }
  Generator g(11);
  std::vector<uint8_t> src(static_cast<size_t>(src_bytes));
  for (auto& b : src) b = static_cast<uint8_t>(g.randint(256));
  std::vector<uint8_t> want(static_cast<size_t>(dst_bytes));
  kernels::cpu::yuv_to_rgb(src.data(), items.data(), int64_t(items.size()), want.data());

  const Tensor dsrc = Tensor::from_bytes({src_bytes}, DType::u8, src.data(), Device::cuda);
  const int64_t item_bytes = int64_t(items.size() * sizeof(kernels::YuvItem));
  const Tensor ditems = Tensor::from_bytes({item_bytes}, DType::u8, items.data(), Device::cuda);
  test::Guarded out({dst_bytes}, DType::u8);
  kernels::cuda::yuv_to_rgb(static_cast<const uint8_t*>(dsrc.data_ptr()),
                            static_cast<const kernels::YuvItem*>(ditems.data_ptr()),
                            int64_t(items.size()), static_cast<uint8_t*>(out.tensor().data_ptr()),
                            hg::cuda::stream());
  ASSERT_EQ(cudaStreamSynchronize(hg::cuda::stream()), cudaSuccess);
  const Tensor host = out.tensor().to(Device::cpu);
  std::vector<uint8_t> got(static_cast<size_t>(dst_bytes));
  std::memcpy(got.data(), host.data_ptr(), got.size());
  EXPECT_TRUE(out.guard_intact());
  int64_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i) differ += got[i] != want[i];
  EXPECT_EQ(differ, 0) << "of " << got.size() << " bytes";
}
