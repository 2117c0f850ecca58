// The small conv2d configurations shared by the registry (cases_conv2d.cpp: gradients, bf16,
// devices) and the NCHW-loop value test (conv2d_test.cpp).
#pragma once

#include <cstdint>

namespace hg::test::ops {

struct ConvConfig {
  const char* name;
  int64_t N, H, W, C, O, K;
  int stride, pad, groups;
  bool bias;
};

// Every path of the CPU kernels: dense (im2col), pointwise, patchify, depthwise, grouped; odd
// sizes, stride 2 with and without padding, no bias, a patchify conv whose input is not a multiple
// of k.
inline constexpr ConvConfig kConvConfigs[] = {
    {"dense3x3_pad1", 2, 5, 4, 3, 4, 3, 1, 1, 1, true},
    {"dense3x3_stride2_pad1_odd", 2, 5, 6, 2, 3, 3, 2, 1, 1, true},
    {"dense3x3_nobias", 1, 4, 5, 3, 2, 3, 1, 1, 1, false},
    {"pointwise1x1", 2, 3, 4, 5, 3, 1, 1, 0, 1, true},
    {"patchify4x4_in1", 2, 8, 8, 1, 5, 4, 4, 0, 1, true},
    {"downsample2x2", 2, 4, 6, 3, 6, 2, 2, 0, 1, true},
    {"patchify2x2_remainder", 1, 5, 7, 2, 3, 2, 2, 0, 1, true},
    {"groups2", 2, 4, 4, 4, 6, 3, 1, 1, 2, true},
    {"depthwise3x3", 2, 5, 4, 3, 3, 3, 1, 1, 3, true},
    {"depthwise7x7_pad3", 1, 6, 5, 2, 2, 7, 1, 3, 2, true},
    {"depthwise5x5_stride2_nobias", 2, 7, 6, 3, 3, 5, 2, 2, 3, false},
};

}  // namespace hg::test::ops
