// An independent statement of the fused WTConv2d's bf16 op (kernels/wtconv.h): the operator of
// docs/wtconv-operator.md in its reference order (Haar analysis level by level, the level convs,
// the recursive reconstruction), written as plain loops over double images, with values rounded
// to bf16 (round to nearest even, this file's own rounding) at exactly the points the contract
// names: the Haar coefficients of x and of G = dL/dy (hence their LL pyramids), the level outputs
// t_l, the level gradients conv^T(H(gR_l)), the level filters s_l * w_l (an f32 product), and y and
// grad_x. Every sum between two roundings is exact-ish (double), so the op under test (f32 sums in
// its own order) may round a value lying within f32 noise of a rounding boundary the other way:
// rare single-ulp differences, not systematic ones (wtconv_test.cpp's WTConvBf16 tests).
#pragma once

#include "kernels/wtconv.h"

namespace hg::test {

/// y (bf16) of the fused bf16 op for bf16 x (B, H, W, C) and f32 weights.
Tensor wtconv_bf16_oracle_forward(const Tensor& x, const kernels::WTConvWeights& w, int stride);

/// grad_x (bf16) and every parameter gradient (f32) of the fused bf16 op for bf16 x and grad_y.
kernels::WTConvGrads wtconv_bf16_oracle_backward(const Tensor& x, const kernels::WTConvWeights& w,
                                                 const Tensor& grad_y, int stride);

}  // namespace hg::test
