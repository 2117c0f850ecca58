// CPU reference of the YCbCr-to-RGB batch conversion (kernels/yuv_rgb.h).
#include "kernels/yuv_rgb.h"

#include <algorithm>

namespace hg::kernels::cpu {

void yuv_to_rgb(const uint8_t* src, const YuvItem* items, int64_t n, uint8_t* dst) {
  for (int64_t k = 0; k < n; ++k) {
    const YuvItem& it = items[k];
    for (int32_t y = 0; y < it.height; ++y) {
      const uint8_t* yr = src + it.y_offset + int64_t(y) * it.y_pitch;
      const int64_t cy = it.gray ? 0 : std::min(y >> it.shift_y, it.c_height - 1);
      uint8_t* out = dst + it.dst_offset + int64_t(y) * it.width * 3;
      for (int32_t x = 0; x < it.width; ++x) {
        YuvRgb p{yr[x], yr[x], yr[x]};
        if (!it.gray) {
          const int64_t c = cy * it.c_pitch + std::min(x >> it.shift_x, it.c_width - 1);
          p = yuv_to_rgb_pixel(yr[x], src[it.cb_offset + c], src[it.cr_offset + c]);
        }
        out[3 * x] = p.r;
        out[3 * x + 1] = p.g;
        out[3 * x + 2] = p.b;
      }
    }
  }
}

}  // namespace hg::kernels::cpu
