// GPU WTConv2d kernels (fused and reference order) against the f32 CPU implementation of
// kernels/wtconv.h on random inputs: forward, every gradient, odd sizes, K = 1..11, 1..5 levels,
// strides 1..3; fused == reference order; bit-identical weight gradients run to run; input errors;
// y and grad_x written into given (guarded) buffers. bf16 (mixed precision) at stage shapes: each
// path against the CPU bf16 op of the same mode (kernels/wtconv.h: the fused one rounds its level
// intermediates to bf16 where the CUDA kernels store them), and the fused path against the
// reference order. Every kernel variant in f32 and bf16 against the CPU, into poisoned, guarded
// buffers: the op harness (cases_wtconv.cpp, the ulp_ cases held element by element in bf16).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "core/autograd.h"
#include "core/memory.h"
#include "gpu/gpu_util.h"
#include "kernels/wtconv.h"
#include "layers/wtconv.h"
#include "test_util.h"

namespace hg {
namespace {

using kernels::WTConvGrads;
using kernels::WTConvMode;
using kernels::WTConvWeights;

struct Case {
  int B, H, W, C, K, L, stride;
  std::string name() const {
    return str("B", B, "_H", H, "_W", W, "_C", C, "_K", K, "_L", L, "_s", stride);
  }
};

// fp32 layer tolerance (project rule); both sides are fp32 with different summation orders.
constexpr double kTol = 1e-5;

// Odd sizes, every compiled K (1, 3, 5, 7, 9) and the generic one (11), 1..5 levels, strides 1..3,
// C above one 32-channel chunk and not a multiple of 4.
const std::vector<Case> kCases = {
    {2, 16, 16, 8, 5, 2, 1},  {1, 13, 11, 5, 3, 3, 1},  {2, 9, 10, 6, 7, 2, 1},
    {1, 8, 8, 4, 1, 1, 1},    {1, 12, 15, 3, 9, 2, 1},  {1, 32, 29, 4, 5, 5, 1},
    {2, 15, 14, 6, 5, 2, 2},  {1, 11, 13, 3, 3, 4, 3},  {1, 10, 9, 40, 5, 3, 1},
    {1, 12, 12, 4, 11, 2, 1}, {1, 7, 7, 2, 7, 3, 2},    {3, 6, 5, 33, 3, 1, 1},
    // C % 4 == 0: the 4-channel kernels (K 3, 5, 7, 9; odd sizes; tiles cut by W; > 32 vectors)
    {2, 13, 19, 12, 3, 3, 1}, {1, 14, 17, 16, 7, 2, 1}, {1, 21, 23, 36, 5, 4, 1},
    {1, 9, 11, 132, 5, 2, 1}, {1, 10, 13, 8, 9, 2, 1},  {2, 19, 21, 20, 5, 5, 2},
};

/// Random CPU f32 weights of a WTConv2d(C, K, L); scales and biases random too (never the init's
/// constants, which would hide a missing or swapped scale).
WTConvWeights random_weights(int C, int K, int L, uint64_t seed) {
  WTConvWeights w;
  w.base_weight = test::random({C, 1, K, K}, seed + 1, DType::f32, -0.5, 0.5);
  w.base_bias = test::random({C}, seed + 2, DType::f32, -0.5, 0.5);
  w.base_scale = test::random({1, C, 1, 1}, seed + 3, DType::f32, 0.5, 1.5);
  for (int l = 0; l < L; ++l) {
    w.wavelet_weight.push_back(test::random({4 * C, 1, K, K}, seed + 10 + l, DType::f32, -0.5, 0.5));
    w.wavelet_scale.push_back(test::random({1, 4 * C, 1, 1}, seed + 30 + l, DType::f32, 0.2, 1.2));
  }
  return w;
}

WTConvWeights to_gpu(const WTConvWeights& w) {
  WTConvWeights g;
  g.base_weight = w.base_weight.to(Device::cuda);
  g.base_bias = w.base_bias.to(Device::cuda);
  g.base_scale = w.base_scale.to(Device::cuda);
  for (const Tensor& t : w.wavelet_weight) g.wavelet_weight.push_back(t.to(Device::cuda));
  for (const Tensor& t : w.wavelet_scale) g.wavelet_scale.push_back(t.to(Device::cuda));
  return g;
}

/// Fills the caching allocator with NaN blocks of the sizes the kernels are about to ask for, so an
/// output (or workspace) element that a kernel forgets to write stays NaN and fails the comparison.
/// The allocator reuses freed blocks of exactly the same size (core/block_cache.h: best fit).
void poison_cache(const std::vector<Shape>& shapes) {
  std::vector<Tensor> held;
  for (const Shape& s : shapes)
    for (int i = 0; i < 4; ++i) held.push_back(Tensor::full(s, std::nan(""), DType::f32, Device::cuda));
}

std::vector<Shape> output_shapes(const Case& c) {
  const int Ho = (c.H + c.stride - 1) / c.stride, Wo = (c.W + c.stride - 1) / c.stride;
  std::vector<Shape> s = {{c.B, Ho, Wo, c.C}, {c.B, c.H, c.W, c.C}, {c.C, 1, c.K, c.K}, {c.C},
                          {4 * c.C, 1, c.K, c.K}, {4 * c.C}};
  return s;
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what << ": undefined";
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const double err = test::rel_error(got.to(Device::cpu), want.to(Device::cpu));
  EXPECT_LE(err, kTol) << what << ": rel error " << err;
  std::printf("  rel error %.2e  %s\n", err, what.c_str());  // the GPU log keeps the numbers
}

void expect_grads_close(const WTConvGrads& got, const WTConvGrads& want, const std::string& what,
                        bool with_x) {
  if (with_x) expect_close(got.x, want.x, what + " grad x");
  expect_close(got.base_weight, want.base_weight, what + " grad base_weight");
  expect_close(got.base_bias, want.base_bias, what + " grad base_bias");
  expect_close(got.base_scale, want.base_scale, what + " grad base_scale");
  ASSERT_EQ(got.wavelet_weight.size(), want.wavelet_weight.size()) << what;
  ASSERT_EQ(got.wavelet_scale.size(), want.wavelet_scale.size()) << what;
  for (size_t l = 0; l < want.wavelet_weight.size(); ++l) {
    expect_close(got.wavelet_weight[l], want.wavelet_weight[l], str(what, " grad wavelet_weight[", l, "]"));
    expect_close(got.wavelet_scale[l], want.wavelet_scale[l], str(what, " grad wavelet_scale[", l, "]"));
  }
}

bool bit_identical(const Tensor& a, const Tensor& b) {
  // widened to double (exact and one-to-one for f32 and bf16), then compared bit by bit
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  return a.dtype() == b.dtype() && x.size() == y.size() &&
         std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
}

class WTConvGpu : public ::testing::TestWithParam<Case> {};

TEST_P(WTConvGpu, ForwardMatchesCpu) {
  HG_REQUIRE_GPU();
  autograd::NoGradGuard ng;
  const Case c = GetParam();
  const uint64_t seed = 100 + c.K * 7 + c.L;
  Tensor x = test::random({c.B, c.H, c.W, c.C}, seed, DType::f32);
  WTConvWeights w = random_weights(c.C, c.K, c.L, seed);
  const Tensor want = kernels::cpu::wtconv_forward(x, w, c.stride, WTConvMode::reference);
  const Tensor xg = x.to(Device::cuda);
  const WTConvWeights wg = to_gpu(w);
  poison_cache(output_shapes(c));
  const Tensor ref = kernels::cuda::wtconv_forward(xg, wg, c.stride, WTConvMode::reference);
  expect_close(ref, want, "reference forward " + c.name());
  poison_cache(output_shapes(c));
  const Tensor fused = kernels::cuda::wtconv_forward(xg, wg, c.stride, WTConvMode::fused);
  expect_close(fused, want, "fused forward " + c.name());
  expect_close(fused, ref, "fused vs reference forward " + c.name());
}

TEST_P(WTConvGpu, BackwardMatchesCpu) {
  HG_REQUIRE_GPU();
  autograd::NoGradGuard ng;
  const Case c = GetParam();
  const uint64_t seed = 500 + c.K * 7 + c.L;
  const int Ho = (c.H + c.stride - 1) / c.stride, Wo = (c.W + c.stride - 1) / c.stride;
  Tensor x = test::random({c.B, c.H, c.W, c.C}, seed, DType::f32);
  Tensor gy = test::random({c.B, Ho, Wo, c.C}, seed + 99, DType::f32);
  WTConvWeights w = random_weights(c.C, c.K, c.L, seed);
  const WTConvGrads want = kernels::cpu::wtconv_backward(x, w, gy, c.stride, true, WTConvMode::reference);
  const Tensor xg = x.to(Device::cuda), gyg = gy.to(Device::cuda);
  const WTConvWeights wg = to_gpu(w);
  for (const WTConvMode mode : {WTConvMode::fused, WTConvMode::reference}) {
    const std::string what = str(mode == WTConvMode::fused ? "fused " : "reference ", c.name());
    poison_cache(output_shapes(c));
    const WTConvGrads got = kernels::cuda::wtconv_backward(xg, wg, gyg, c.stride, true, mode);
    expect_grads_close(got, want, what, true);
    // without grad_x: the same parameter gradients and no grad_x
    poison_cache(output_shapes(c));
    const WTConvGrads nox = kernels::cuda::wtconv_backward(xg, wg, gyg, c.stride, false, mode);
    EXPECT_FALSE(nox.x.defined()) << what;
    expect_grads_close(nox, want, what + " (no grad_x)", false);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, WTConvGpu, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name(); });

// Larger than the small cases (many row groups per weight-gradient launch), so a race or an
// order-dependent sum would show up as differing bits.
TEST(WTConvGpuDeterminism, WeightGradientsBitIdentical) {
  HG_REQUIRE_GPU();
  autograd::NoGradGuard ng;
  const int B = 4, H = 40, W = 36, C = 72, K = 5, L = 3;
  const WTConvWeights w = to_gpu(random_weights(C, K, L, 9));
  for (DType dt : {DType::f32, DType::bf16}) {  // bf16: activations bf16, gradients still f32
    Tensor x = test::random({B, H, W, C}, 7, DType::f32).to(dt).to(Device::cuda);
    Tensor gy = test::random({B, H, W, C}, 8, DType::f32).to(dt).to(Device::cuda);
    for (const WTConvMode mode : {WTConvMode::fused, WTConvMode::reference}) {
      SCOPED_TRACE(str(dtype_name(dt), mode == WTConvMode::fused ? " fused" : " reference"));
      const WTConvGrads a = kernels::cuda::wtconv_backward(x, w, gy, 1, true, mode);
      const WTConvGrads b = kernels::cuda::wtconv_backward(x, w, gy, 1, true, mode);
      EXPECT_EQ(a.base_weight.dtype(), DType::f32);
      EXPECT_TRUE(bit_identical(a.base_weight, b.base_weight));
      EXPECT_TRUE(bit_identical(a.base_bias, b.base_bias));
      EXPECT_TRUE(bit_identical(a.base_scale, b.base_scale));
      for (int l = 0; l < L; ++l) {
        EXPECT_TRUE(bit_identical(a.wavelet_weight[l], b.wavelet_weight[l])) << "level " << l;
        EXPECT_TRUE(bit_identical(a.wavelet_scale[l], b.wavelet_scale[l])) << "level " << l;
      }
      EXPECT_EQ(a.x.dtype(), dt);
      EXPECT_TRUE(bit_identical(a.x, b.x));
      EXPECT_TRUE(bit_identical(kernels::cuda::wtconv_forward(x, w, 1, mode),
                                kernels::cuda::wtconv_forward(x, w, 1, mode)));
    }
  }
}

// The split path's backward keeps H(x) of each level and the level tail's per-slice sums in
// grad_x's memory until its synthesis writes grad_x (docs/fused-wtconv.md, section 15): its
// workspace peaks at level 0 with gt_0, H(G) and the level-1 LL bands of x and G (2.5 N elements of
// x's dtype, N = B H W C) plus the folded filters. Without the reuse it would be 3.5 N at level 0,
// and at 192/28/4 the tail's bf16 sums (0.76 N with one image a block) on top of its 2 N. The stage
// shapes of WTConvNeXt-T's first two stages, at N = 19.3 M (bench-layer's B = 64 at 96/56), where
// what does not grow with the batch (folded filters, the weight gradients' per-slice sums: at most
// ~4 MB on a 132-multiprocessor GPU) stays near 0.1 N. That is the peak where level 0 runs a Haar
// pass and a conv (a GPU whose shared memory cannot hold the Haar kernels' tiles). Where they take
// level 0 (kernels::cuda::wtconv_haar_conv_from: bf16 or f32 on an H100 / H200), neither H(G)
// nor H(x) is stored (haar_wgrad_kernel
// forms both: docs/fused-wtconv.md, section 16), so the peak is at level 1 (96/56/5: gt_0, the
// level-1 LL bands, gt_1 and the level-2 LL bands, 1.875 N) or in the tail (192/28/4: gt_0, the LL
// bands and the tail's f32 output, 2.0 N in bf16, 1.75 N in f32, where that output is no wider
// than x), plus the per-slice sums.
TEST(WTConvGpuMemory, SplitBackwardReusesGradX) {
  HG_REQUIRE_GPU();
  autograd::NoGradGuard ng;
  struct Shp {
    int B, H, C, L;
  };
  for (const Shp sh : {Shp{64, 56, 96, 5}, Shp{128, 28, 192, 4}})
    for (DType dt : {DType::f32, DType::bf16}) {
      const int K = 5;
      SCOPED_TRACE(str(dtype_name(dt), " ", sh.C, "/", sh.H, "/", sh.L, " B ", sh.B));
      ASSERT_FALSE(
          kernels::cuda::wtconv_plane_path({sh.B, sh.H, sh.H, sh.C}, K, sh.L, 1, dt, true));
      const WTConvWeights w = to_gpu(random_weights(sh.C, K, sh.L, 41));
      const Tensor x =
          test::random({sh.B, sh.H, sh.H, sh.C}, 42, DType::f32).to(dt).to(Device::cuda);
      const Tensor gy =
          test::random({sh.B, sh.H, sh.H, sh.C}, 43, DType::f32).to(dt).to(Device::cuda);
      const int64_t before = memory::stats(Device::cuda).total_current;
      memory::reset_peak(Device::cuda);
      const WTConvGrads g = kernels::cuda::wtconv_backward(x, w, gy, 1, true, WTConvMode::fused);
      int64_t kept = int64_t(g.x.nbytes() + g.base_weight.nbytes() + g.base_bias.nbytes() +
                             g.base_scale.nbytes());
      for (int l = 0; l < sh.L; ++l)
        kept += int64_t(g.wavelet_weight[l].nbytes() + g.wavelet_scale[l].nbytes());
      const double n_bytes = double(x.nbytes());
      const double extra = double(memory::stats(Device::cuda).total_peak - before - kept) / n_bytes;
      std::printf("  %s %d/%d/%d B %d: backward workspace peak %.3f N\n", dtype_name(dt), sh.C,
                  sh.H, sh.L, sh.B, extra);
      const bool haar_kernels =
          kernels::cuda::wtconv_haar_conv_from({sh.B, sh.H, sh.H, sh.C}, K, sh.L, dt) == 0;
      const double lo = haar_kernels ? 1.7 : 2.5, hi = haar_kernels ? 2.25 : 2.7;
      EXPECT_GE(extra, lo);  // gt_0, the LL bands (and H(G) without the Haar kernels) are real
      EXPECT_LE(extra, hi);
    }
}

// A bigger fused-vs-reference check at a ConvNeXt-like stage shape (C % 4 == 0, many blocks).
TEST(WTConvGpuFusedVsReference, StageShape) {
  HG_REQUIRE_GPU();
  autograd::NoGradGuard ng;
  const int B = 2, H = 28, W = 28, C = 96, K = 5, L = 4;
  Tensor x = test::random({B, H, W, C}, 21, DType::f32).to(Device::cuda);
  Tensor gy = test::random({B, H, W, C}, 22, DType::f32).to(Device::cuda);
  const WTConvWeights w = to_gpu(random_weights(C, K, L, 23));
  expect_close(kernels::cuda::wtconv_forward(x, w, 1, WTConvMode::fused),
               kernels::cuda::wtconv_forward(x, w, 1, WTConvMode::reference), "forward");
  expect_grads_close(kernels::cuda::wtconv_backward(x, w, gy, 1, true, WTConvMode::fused),
                     kernels::cuda::wtconv_backward(x, w, gy, 1, true, WTConvMode::reference),
                     "backward", true);
}

// The reference order's saved intermediates (kernels::WTConvSaved): a backward that reads them
// gives the recomputing backward's gradients bit for bit (the same kernels on the same values),
// in f32 and bf16, at stride 1 and 2; they are f32 activations of the documented shapes, held
// between the two calls; the fused mode refuses them.
TEST(WTConvGpuReference, BackwardFromSavedEqualsRecomputed) {
  HG_REQUIRE_GPU();
  autograd::NoGradGuard ng;
  for (const Case& c : {Case{2, 15, 14, 6, 5, 3, 1}, Case{1, 11, 13, 8, 3, 2, 2}})
    for (DType dt : {DType::f32, DType::bf16}) {
      SCOPED_TRACE(c.name() + " " + dtype_name(dt));
      const WTConvWeights w = to_gpu(random_weights(c.C, c.K, c.L, 71));
      const Tensor x = test::random({c.B, c.H, c.W, c.C}, 72, DType::f32).to(dt).to(Device::cuda);
      const int Ho = (c.H + c.stride - 1) / c.stride, Wo = (c.W + c.stride - 1) / c.stride;
      const Tensor gy = test::random({c.B, Ho, Wo, c.C}, 73, DType::f32).to(dt).to(Device::cuda);
      const int act = static_cast<int>(Category::activations);
      const int64_t before = memory::stats(Device::cuda).current[act];
      kernels::WTConvSaved saved;
      const Tensor y1 =
          kernels::cuda::wtconv_forward(x, w, c.stride, WTConvMode::reference, Tensor(), &saved);
      EXPECT_GE(memory::stats(Device::cuda).current[act] - before, saved.nbytes());
      const Tensor y0 = kernels::cuda::wtconv_forward(x, w, c.stride, WTConvMode::reference);
      EXPECT_TRUE(bit_identical(y1, y0));
      ASSERT_EQ(saved.conv.size(), size_t(c.L));
      int64_t elems = int64_t(c.B) * c.H * c.W * c.C, h = c.H, wd = c.W;
      for (int l = 0; l < c.L; ++l) {
        h = (h + 1) / 2, wd = (wd + 1) / 2;
        EXPECT_EQ(saved.coeff[size_t(l)].shape(), (Shape{c.B, h, wd, 4 * c.C})) << l;
        elems += 3 * c.B * h * wd * 4 * c.C;
      }
      EXPECT_EQ(saved.base.dtype(), DType::f32);
      EXPECT_EQ(saved.nbytes(), elems * 4);
      const WTConvGrads a =
          kernels::cuda::wtconv_backward(x, w, gy, c.stride, true, WTConvMode::reference);
      const WTConvGrads b = kernels::cuda::wtconv_backward(x, w, gy, c.stride, true,
                                                           WTConvMode::reference, Tensor(), &saved);
      EXPECT_TRUE(bit_identical(a.x, b.x));
      EXPECT_TRUE(bit_identical(a.base_weight, b.base_weight));
      EXPECT_TRUE(bit_identical(a.base_scale, b.base_scale));
      for (int l = 0; l < c.L; ++l) {
        EXPECT_TRUE(bit_identical(a.wavelet_weight[size_t(l)], b.wavelet_weight[size_t(l)])) << l;
        EXPECT_TRUE(bit_identical(a.wavelet_scale[size_t(l)], b.wavelet_scale[size_t(l)])) << l;
      }
      EXPECT_THROW(
          kernels::cuda::wtconv_forward(x, w, c.stride, WTConvMode::fused, Tensor(), &saved),
          Error);
    }
}

// Which shapes take the whole-plane kernels (kernels/wtconv.h): WTConvNeXt-T's 14 x 14 and 7 x 7
// stages in f32 and bf16, forward and backward; not 28 x 28 (over the 256-pixel bound), not K = 9
// (no kernel compiled for it), not stride 2, not zero levels. The GPU tests of this file run both
// paths only because their shapes lie on both sides of this choice.
TEST(WTConvGpuPlanePath, TakesTheSmallStagesOnly) {
  HG_REQUIRE_GPU();
  for (DType dt : {DType::f32, DType::bf16})
    for (bool backward : {false, true}) {
      const std::string what = str(dtype_name(dt), backward ? " backward" : " forward");
      EXPECT_TRUE(kernels::cuda::wtconv_plane_path({128, 14, 14, 384}, 5, 3, 1, dt, backward))
          << what;
      EXPECT_TRUE(kernels::cuda::wtconv_plane_path({128, 7, 7, 768}, 5, 2, 1, dt, backward))
          << what;
      EXPECT_TRUE(kernels::cuda::wtconv_plane_path({1, 15, 17, 5}, 3, 3, 1, dt, backward)) << what;
      EXPECT_FALSE(kernels::cuda::wtconv_plane_path({128, 28, 28, 192}, 5, 4, 1, dt, backward))
          << what;
      EXPECT_FALSE(kernels::cuda::wtconv_plane_path({128, 14, 14, 384}, 9, 3, 1, dt, backward))
          << what;
      EXPECT_FALSE(kernels::cuda::wtconv_plane_path({128, 14, 14, 384}, 5, 3, 2, dt, backward))
          << what;
      EXPECT_FALSE(kernels::cuda::wtconv_plane_path({128, 14, 14, 384}, 5, 0, 1, dt, backward))
          << what;
    }
  EXPECT_THROW(kernels::cuda::wtconv_plane_path({14, 14, 384}, 5, 3, 1, DType::f32, false), Error);
}

// Where the split path hands its levels to a level tail (kernels/wtconv.h): from the first LL
// band of at most 256 pixels, when C % 4 == 0 and K is 3, 5 or 7. Run by the op harness's ulp_
// cases (cases_wtconv.cpp) with C % 4 == 0 and K <= 7 in both dtypes (21 x 23, 19 x 21, 17 x 9,
// 32 x 29: s = 1; 29 x 27, K = 7: s = 1; 37 x 41: s = 2), WTConvGpu's cases of those sizes (f32),
// WTConvGpuOut (37 x 41), the stage shapes of
// WTConvGpuBf16 and WTConvGpuFusedVsReference (28 x 28: s = 1) and the determinism test
// (40 x 36: s = 2, a one-level tail).
TEST(WTConvGpuPlanePath, LevelTailFromTheFirstSmallBand) {
  HG_REQUIRE_GPU();
  for (DType dt : {DType::f32, DType::bf16})
    for (bool backward : {false, true}) {
      const std::string what = str(dtype_name(dt), backward ? " backward" : " forward");
      EXPECT_EQ(kernels::cuda::wtconv_tail_level({64, 56, 56, 96}, 5, 5, dt, backward), 2) << what;
      EXPECT_EQ(kernels::cuda::wtconv_tail_level({64, 28, 28, 192}, 5, 4, dt, backward), 1) << what;
      EXPECT_EQ(kernels::cuda::wtconv_tail_level({1, 37, 41, 16}, 5, 4, dt, backward), 2) << what;
      EXPECT_EQ(kernels::cuda::wtconv_tail_level({2, 29, 27, 8}, 7, 3, dt, backward), 1) << what;
      EXPECT_EQ(kernels::cuda::wtconv_tail_level({4, 40, 36, 72}, 5, 3, dt, backward), 2) << what;
      EXPECT_EQ(kernels::cuda::wtconv_tail_level({1, 32, 29, 4}, 5, 5, dt, backward), 1) << what;
      // no level left below the band; C % 4 != 0; K = 9 (no plane kernel)
      EXPECT_EQ(kernels::cuda::wtconv_tail_level({64, 56, 56, 96}, 5, 2, dt, backward), 2) << what;
      EXPECT_EQ(kernels::cuda::wtconv_tail_level({1, 32, 29, 6}, 5, 5, dt, backward), 5) << what;
      EXPECT_EQ(kernels::cuda::wtconv_tail_level({1, 28, 28, 16}, 9, 3, dt, backward), 3) << what;
    }
  // a level count past the kernels' limit is an error, not a read past PlaneGeom's arrays
  EXPECT_THROW(kernels::cuda::wtconv_tail_level({1, 28, 28, 16}, 5, 13, DType::f32, false), Error);
  EXPECT_THROW(kernels::cuda::wtconv_plane_path({1, 14, 14, 16}, 5, 13, 1, DType::f32, false),
               Error);
}

TEST(WTConvGpuErrors, BadInputsThrow) {
  HG_REQUIRE_GPU();
  autograd::NoGradGuard ng;
  const int C = 4, K = 3;
  Tensor x = test::random({1, 8, 8, C}, 1, DType::f32).to(Device::cuda);
  const WTConvWeights w = to_gpu(random_weights(C, K, 2, 2));
  for (WTConvMode mode : {WTConvMode::fused, WTConvMode::reference}) {
    EXPECT_THROW(kernels::cuda::wtconv_forward(x.to(Device::cpu), w, 1, mode), Error);
    EXPECT_THROW(kernels::cuda::wtconv_forward(x, w, 0, mode), Error);
    WTConvWeights bad = w;
    bad.wavelet_weight[1] = test::random({4 * C, 1, 5, 5}, 3, DType::f32).to(Device::cuda);
    EXPECT_THROW(kernels::cuda::wtconv_forward(x, bad, 1, mode), Error);
    bad = w;
    bad.base_bias = test::random({C + 1}, 4, DType::f32).to(Device::cuda);
    EXPECT_THROW(kernels::cuda::wtconv_forward(x, bad, 1, mode), Error);
    Tensor gy_bad = test::random({1, 4, 4, C}, 5, DType::f32).to(Device::cuda);
    EXPECT_THROW(kernels::cuda::wtconv_backward(x, w, gy_bad, 1, true, mode), Error);
    try {
      kernels::cuda::wtconv_forward(x, w, 0, mode);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("stride"), std::string::npos) << e.what();
    }
  }
}

// ---- bf16 against the CPU bf16 op of the same mode ---------------------------------------------
// The rule the op harness's wtconv2d ulp_ cases hold every kernel variant to (bf16_device_ulp,
// cases_wtconv.cpp), here at stage shapes.
// The CPU reference of a bf16 call is the CPU bf16 op of the same mode (kernels/wtconv.h, through
// layers/wtconv.h's wtconv2d_run_*): f32 math on the widened bf16 inputs, y and grad_x rounded to
// bf16, parameter gradients f32; the reference order keeps every intermediate f32, the fused mode
// rounds its coefficient planes, LL pyramids, level outputs, level gradients and level filters to
// bf16. At each of those points the CPU rounds the very f32 value the GPU rounds (same Haar sums,
// each level conv one fused multiply-add per tap in the filter's row-major order, as every variant
// of depthwise_conv_forward sums: kernels/cpu/wtconv_fused.cpp, Bf16Planes), so the stored
// intermediates are bit-identical and only the last sums differ in order:
//  * y, grad_x (bf16): both sides round an f32 value, and the two f32 values differ by at most the
//    f32 tolerance kTol of the largest element; rounding each to nearest moves it by at most half a
//    bf16 ulp, so |gpu - cpu| <= 1 ulp_bf16(max(|gpu|, |cpu|)) + kTol * max|cpu| per element.
//  * parameter gradients (f32): the f32 rule kTol (same inputs, f32 accumulation).

/// One bf16 ulp at |v| (2^(e - 7) for v in [2^e, 2^(e+1)); bf16 keeps 8 significant bits).
double ulp_bf16(double v) {
  v = std::fabs(v);
  if (v < 1.1754943508222875e-38) return std::ldexp(1.0, -133);  // subnormal spacing
  return std::ldexp(1.0, std::ilogb(v) - 7);
}

/// bf16 outputs: the per-element rule above. Prints the worst error in ulps and the share of
/// elements that differ at all (the GPU log keeps them).
void expect_bf16_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what << ": undefined";
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), DType::bf16) << what;
  ASSERT_EQ(want.dtype(), DType::bf16) << what;
  const std::vector<double> g = got.to_vector<double>(), r = want.to_vector<double>();
  double max_ref = 0;
  for (double v : r) max_ref = std::max(max_ref, std::fabs(v));
  ASSERT_GT(max_ref, 0.0) << what << ": an all-zero reference tests nothing";
  const double atol = kTol * max_ref;
  size_t bad = 0, differ = 0, first_bad = 0;
  double worst_ulps = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double d = std::fabs(g[i] - r[i]);
    const double ulp = ulp_bf16(std::max(std::fabs(g[i]), std::fabs(r[i])));
    if (!(d <= ulp + atol)) {  // NaN (a poisoned element never written) fails here too
      if (bad++ == 0) first_bad = i;
    }
    if (d != 0) ++differ;
    worst_ulps = std::max(worst_ulps, std::isnan(d) ? INFINITY : d / ulp);
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << g.size()
                     << " elements beyond 1 bf16 ulp + " << atol << "; first at " << first_bad
                     << ": gpu " << g[first_bad] << " vs cpu " << r[first_bad];
  std::printf("  bf16: worst %.2f ulp, %.2f%% of elements differ  %s\n", worst_ulps,
              100.0 * double(differ) / double(g.size()), what.c_str());
}

/// The two CUDA paths (fused, reference order).
struct Path {
  WTConvMode mode;
  const char* name;
};
const Path kPaths[] = {{WTConvMode::fused, "fused "}, {WTConvMode::reference, "reference "}};

// `out` / `grad_x_out` (kernels/wtconv.h): y and grad_x are written into the given buffers (here
// poisoned ones with guard bytes after them) and returned, bit for bit what the allocating call
// gives, on the whole-plane path (15 x 17), the split path at stride 2 and the split path with a
// level tail (37 x 41: s = 2), in each dtype and mode. Their values against the CPU: the op
// harness (every device case's buffers are poisoned and guarded too).
TEST(WTConvGpuOut, WritesIntoTheGivenBuffers) {
  HG_REQUIRE_GPU();
  autograd::NoGradGuard ng;
  for (const Case& c :
       {Case{1, 15, 17, 5, 3, 3, 1}, Case{2, 15, 14, 12, 5, 2, 2}, Case{1, 37, 41, 16, 5, 4, 1}})
    for (DType dt : {DType::f32, DType::bf16})
      for (const Path& path : kPaths) {
        const std::string what = str(path.name, dtype_name(dt), " ", c.name());
        const uint64_t seed = 700 + c.K * 7 + c.L;
        const int Ho = (c.H + c.stride - 1) / c.stride, Wo = (c.W + c.stride - 1) / c.stride;
        const Tensor x =
            test::random({c.B, c.H, c.W, c.C}, seed, DType::f32).to(dt).to(Device::cuda);
        const Tensor gy =
            test::random({c.B, Ho, Wo, c.C}, seed + 99, DType::f32).to(dt).to(Device::cuda);
        const WTConvWeights w = to_gpu(random_weights(c.C, c.K, c.L, seed));
        test::Guarded y({c.B, Ho, Wo, c.C}, dt), gx(x.shape(), dt);
        const Tensor got = kernels::cuda::wtconv_forward(x, w, c.stride, path.mode, y.tensor());
        const WTConvGrads g =
            kernels::cuda::wtconv_backward(x, w, gy, c.stride, true, path.mode, gx.tensor());
        const Tensor want_y = kernels::cuda::wtconv_forward(x, w, c.stride, path.mode);
        const WTConvGrads want_g =
            kernels::cuda::wtconv_backward(x, w, gy, c.stride, true, path.mode);
        cuda::synchronize();
        EXPECT_EQ(got.data_ptr(), y.tensor().data_ptr()) << what << ": y not written into `out`";
        EXPECT_TRUE(y.guard_intact()) << what << ": wrote past the end of y";
        EXPECT_TRUE(bit_identical(y.tensor(), want_y)) << what << ": y";
        ASSERT_TRUE(g.x.defined()) << what;
        EXPECT_EQ(g.x.data_ptr(), gx.tensor().data_ptr())
            << what << ": grad_x not written into `grad_x_out`";
        EXPECT_TRUE(gx.guard_intact()) << what << ": wrote past the end of grad_x";
        EXPECT_TRUE(bit_identical(gx.tensor(), want_g.x)) << what << ": grad_x";
        EXPECT_TRUE(bit_identical(g.base_weight, want_g.base_weight))
            << what << ": grad base_weight";
      }
}

// bf16 at ConvNeXt-like stage shapes (C % 8 == 0: every vector kernel, the staged synthesis and
// the staged level convs; many blocks): each CUDA path against the CPU bf16 op of its mode (the
// rule above), and the fused path against the reference order on the GPU within kBf16VsRef: the
// fused mode's intermediate roundings (kernels/wtconv.h) move y and grad_x by a few 2^-9 of the
// level terms (CPU, tests/ops/wtconv_test.cpp: <= 3.9e-3 of the largest element for y, 1.1e-2 for
// any gradient against f32; 2e-2 is the bf16-vs-f32 bound used there). The parameter gradients
// are compared with the CPU only: a deep level's gradient can nearly cancel, and the fused
// mode's rounded G pyramid then differs from the reference order's f32 one by far more than
// 2^-9 of that level's largest gradient (cases_wtconv.cpp).
constexpr double kBf16VsRef = 2e-2;

TEST(WTConvGpuBf16, StageShapesFusedVsReference) {
  HG_REQUIRE_GPU();
  autograd::NoGradGuard ng;
  struct Stage {
    int B, H, C, K, L;
  };
  const Stage stages[] = {{2, 28, 96, 5, 4}, {2, 14, 192, 5, 3}, {4, 7, 384, 7, 2}};
  for (const Stage& st : stages) {
    const std::string name = str("B", st.B, " H", st.H, " C", st.C, " K", st.K, " L", st.L);
    const Tensor x = test::random({st.B, st.H, st.H, st.C}, 31, DType::f32).to(DType::bf16);
    const Tensor gy = test::random({st.B, st.H, st.H, st.C}, 32, DType::f32).to(DType::bf16);
    const WTConvWeights w = random_weights(st.C, st.K, st.L, 33);
    const Tensor xg = x.to(Device::cuda), gyg = gy.to(Device::cuda);
    const WTConvWeights wg = to_gpu(w);
    Tensor y[2];
    WTConvGrads g[2];
    for (int k = 0; k < 2; ++k) {
      const Path& path = kPaths[k];
      const std::string what = str(path.name, name, " vs cpu");
      const Tensor y_cpu = wtconv2d_run_forward(x, w, 1, path.mode);
      const WTConvGrads g_cpu = wtconv2d_run_backward(x, w, gy, 1, true, path.mode);
      y[k] = kernels::cuda::wtconv_forward(xg, wg, 1, path.mode);
      g[k] = kernels::cuda::wtconv_backward(xg, wg, gyg, 1, true, path.mode);
      expect_bf16_close(y[k], y_cpu, what + " forward");
      expect_bf16_close(g[k].x, g_cpu.x, what + " grad x");
      WTConvGrads params = g[k];
      params.x = Tensor();
      expect_grads_close(params, g_cpu, what, false);
    }
    for (const auto& [got, want, what] :
         {std::tuple{y[0], y[1], "forward"}, std::tuple{g[0].x, g[1].x, "grad x"}}) {
      const double err = test::rel_error(got.to(Device::cpu), want.to(Device::cpu));
      EXPECT_LE(err, kBf16VsRef) << "fused vs reference " << what << " " << name;
      EXPECT_GT(err, 0.0) << "fused vs reference " << what << " " << name
                          << ": the fused path rounds its intermediates, the reference does not";
      std::printf("  bf16 fused vs reference %s %s: rel error %.2e\n", what, name.c_str(), err);
    }
  }
}

TEST(WTConvGpuBf16, MixedDtypeErrors) {
  HG_REQUIRE_GPU();
  autograd::NoGradGuard ng;
  const int C = 8, K = 3;
  const Tensor x = test::random({1, 9, 9, C}, 41, DType::bf16).to(Device::cuda);
  const WTConvWeights w = to_gpu(random_weights(C, K, 2, 42));
  for (WTConvMode mode : {WTConvMode::fused, WTConvMode::reference}) {
    // bf16 parameters: the kernels read f32 master weights only
    WTConvWeights wb = w;
    wb.base_weight = w.base_weight.to(DType::bf16);
    try {
      kernels::cuda::wtconv_forward(x, wb, 1, mode);
      ADD_FAILURE() << "bf16 base_weight accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("base_weight"), std::string::npos) << e.what();
    }
    // grad_y of another dtype than x
    const Tensor gy32 = test::random({1, 9, 9, C}, 43, DType::f32).to(Device::cuda);
    try {
      kernels::cuda::wtconv_backward(x, w, gy32, 1, true, mode);
      ADD_FAILURE() << "f32 grad_y accepted for bf16 x";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("grad_y"), std::string::npos) << e.what();
    }
    // an output buffer of the wrong dtype or shape
    const Tensor out_f32 = Tensor::empty({1, 9, 9, C}, DType::f32, Device::cuda);
    const Tensor out_bf16 = Tensor::empty({1, 9, 9, C}, DType::bf16, Device::cuda);
    EXPECT_THROW(kernels::cuda::wtconv_forward(x, w, 1, mode, out_f32), Error);
    EXPECT_THROW(kernels::cuda::wtconv_forward(x, w, 2, mode, out_bf16), Error);  // y is 5x5
    // f16 activations are not supported
    EXPECT_THROW(kernels::cuda::wtconv_forward(x.to(DType::f16), w, 1, mode), Error);
  }
}

}  // namespace
}  // namespace hg
