// The WTConv kernel lab (dev/wtconv/README.md): variants the product does not use, callable from
// the lab program. Not part of haargrad_lib; built only with -DHAARGRAD_DEV=ON and CUDA.
#pragma once

#include "core/tensor.h"

namespace hg::lab {

/// One level of the fused path's level convolutions with the Haar analysis formed on the fly:
/// t (B, hp, wp, C, 4) = depthwise "same" conv of H(x) (sub-band s of channel c at [.., c, s]) with
/// the weights ws[4c+s] * ww[4c+s][tap], and ll (B, hp, wp, C) = the LL band of x, where
/// (hp, wp) = (ceil(hi/2), ceil(wi/2)). x (B, hi, wi, C), ww (4C, 1, K, K), ws (1, 4C, 1, 1), t and
/// ll: dense f32 cuda tensors. variant 1: one channel per thread (any odd K <= 15); 2: 4 channels
/// per thread (C % 4 == 0, K = 3 or 5, 16-byte aligned; returns false for any other shape).
/// Throws hg::Error on a bad K, shape or variant.
bool level_conv_otf(int variant, const Tensor& x, const Tensor& ww, const Tensor& ws, int K,
                    const Tensor& t, const Tensor& ll);

}  // namespace hg::lab
