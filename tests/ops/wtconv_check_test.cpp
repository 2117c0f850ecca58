// The WTConv2d shape check shared by the CPU and CUDA entry points (kernels/wtconv_check.h): the
// accepted shapes return K; every rejected one throws a message that names the op, the tensor,
// the shape it must have and the one it has, both called directly and through the CPU entry
// points (which must use it: the same message with their op name). The CUDA entry points:
// tests/ops/wtconv_cuda_test.cpp (WTConvGpuErrors).
#include "kernels/wtconv_check.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "test_util.h"

namespace hg {
namespace {

using kernels::WTConvMode;
using kernels::WTConvWeights;

WTConvWeights weights(int64_t C, int64_t K, int levels, DType dtype = DType::f64) {
  WTConvWeights w;
  w.base_weight = test::random({C, 1, K, K}, 1, dtype);
  w.base_bias = test::random({C}, 2, dtype);
  w.base_scale = test::random({1, C, 1, 1}, 3, dtype);
  for (int l = 0; l < levels; ++l) {
    w.wavelet_weight.push_back(test::random({4 * C, 1, K, K}, 10 + l, dtype));
    w.wavelet_scale.push_back(test::random({1, 4 * C, 1, 1}, 20 + l, dtype));
  }
  return w;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

/// One bad call: what to change from a valid (x, w, stride) and the phrases its message must hold.
struct Bad {
  const char* name;
  std::function<void(Tensor& x, WTConvWeights& w, int& stride)> change;
  std::vector<std::string> phrases;
};

}  // namespace

TEST(WTConvCheck, AcceptedShapesReturnK) {
  for (int64_t K : {1, 3, 5, 7}) {
    for (int levels : {1, 3}) {
      const Tensor x = test::random({2, 7, 5, 3}, 4);
      EXPECT_EQ(kernels::wtconv_check_shapes("op", x, weights(3, K, levels), 1), K);
      EXPECT_EQ(kernels::wtconv_check_shapes("op", x, weights(3, K, levels), 3), K);
    }
  }
  // grad_y of a strided call: ceil(H / stride) x ceil(W / stride)
  const Tensor x = test::random({1, 7, 6, 2}, 5);
  EXPECT_NO_THROW(kernels::wtconv_check_grad_y("op", x, test::random({1, 4, 3, 2}, 6), 2));
  EXPECT_NO_THROW(kernels::wtconv_check_grad_y("op", x, test::random({1, 7, 6, 2}, 6), 1));
}

TEST(WTConvCheck, EveryBadShapeNamesTheTensorAndTheShapes) {
  // valid: x (1, 6, 6, 2), K = 3, two levels, stride 1
  const std::vector<Bad> bad = {
      {"x undefined",
       [](Tensor& x, WTConvWeights&, int&) { x = Tensor(); },
       {"x must be NHWC (B, H, W, C)", "got undefined"}},
      {"x rank 3",
       [](Tensor& x, WTConvWeights&, int&) {
         x = test::random({6, 6, 2}, 7);
       },
       {"x must be NHWC (B, H, W, C)", "got [6, 6, 2]"}},
      {"x empty",
       [](Tensor& x, WTConvWeights&, int&) {
         x = Tensor::empty({1, 0, 6, 2});
       },
       {"x [1, 0, 6, 2] is empty"}},
      {"stride 0", [](Tensor&, WTConvWeights&, int& s) { s = 0; }, {"stride must be >= 1, got 0"}},
      {"base_weight undefined",
       [](Tensor&, WTConvWeights& w, int&) { w.base_weight = Tensor(); },
       {"base_weight must have shape (C, 1, K, K) with C = 2", "got undefined"}},
      {"base_weight other C",
       [](Tensor&, WTConvWeights& w, int&) {
         w.base_weight = test::random({3, 1, 3, 3}, 8);
       },
       {"base_weight must have shape (C, 1, K, K) with C = 2", "for x [1, 6, 6, 2]",
        "got [3, 1, 3, 3]"}},
      {"base_weight not square",
       [](Tensor&, WTConvWeights& w, int&) {
         w.base_weight = test::random({2, 1, 3, 5}, 8);
       },
       {"base_weight must have shape (C, 1, K, K)", "got [2, 1, 3, 5]"}},
      {"even K",
       [](Tensor&, WTConvWeights& w, int&) {
         w.base_weight = test::random({2, 1, 4, 4}, 8);
       },
       {"base_weight [2, 1, 4, 4] has kernel size K = 4", "must be odd"}},
      {"base_bias",
       [](Tensor&, WTConvWeights& w, int&) { w.base_bias = test::random({3}, 9); },
       {"base_bias must have shape [2] (C) for x [1, 6, 6, 2]", "got [3]"}},
      {"base_scale",
       [](Tensor&, WTConvWeights& w, int&) { w.base_scale = test::random({2}, 9); },
       {"base_scale must have shape [1, 2, 1, 1] (1, C, 1, 1)", "got [2]"}},
      {"no levels",
       [](Tensor&, WTConvWeights& w, int&) {
         w.wavelet_weight.clear();
         w.wavelet_scale.clear();
       },
       {"needs at least one wavelet level", "no wavelet_weight"}},
      {"scale count",
       [](Tensor&, WTConvWeights& w, int&) { w.wavelet_scale.pop_back(); },
       {"2 wavelet_weight tensors but 1 wavelet_scale tensors"}},
      {"wavelet_weight[1] K",
       [](Tensor&, WTConvWeights& w, int&) {
         w.wavelet_weight[1] = test::random({8, 1, 5, 5}, 11);
       },
       {"wavelet_weight[1] must have shape [8, 1, 3, 3] (4C, 1, K, K)", "got [8, 1, 5, 5]"}},
      {"wavelet_weight[0] C",
       [](Tensor&, WTConvWeights& w, int&) {
         w.wavelet_weight[0] = test::random({2, 1, 3, 3}, 11);
       },
       {"wavelet_weight[0] must have shape [8, 1, 3, 3]", "got [2, 1, 3, 3]"}},
      {"wavelet_scale[0] undefined",
       [](Tensor&, WTConvWeights& w, int&) { w.wavelet_scale[0] = Tensor(); },
       {"wavelet_scale[0] must have shape [1, 8, 1, 1] (1, 4C, 1, 1)", "got undefined"}},
      {"wavelet_scale[1]",
       [](Tensor&, WTConvWeights& w, int&) {
         w.wavelet_scale[1] = test::random({1, 2, 1, 1}, 12);
       },
       {"wavelet_scale[1] must have shape [1, 8, 1, 1]", "got [1, 2, 1, 1]"}},
  };
  for (const Bad& b : bad) {
    Tensor x = test::random({1, 6, 6, 2}, 13);
    WTConvWeights w = weights(2, 3, 2);
    int stride = 1;
    b.change(x, w, stride);
    const std::string direct =
        error_of([&] { kernels::wtconv_check_shapes("some_op", x, w, stride); });
    const std::string fwd =
        error_of([&] { kernels::cpu::wtconv_forward(x, w, stride, WTConvMode::reference); });
    const std::string bwd = error_of([&] {
      kernels::cpu::wtconv_backward(x, w, test::random({1, 6, 6, 2}, 14), stride, true,
                                    WTConvMode::fused);
    });
    EXPECT_EQ(direct.rfind("some_op: ", 0), 0u) << b.name << ": " << direct;
    for (const std::string& p : b.phrases)
      EXPECT_NE(direct.find(p), std::string::npos)
          << b.name << ": '" << p << "' not in: " << direct;
    // the CPU entry points report exactly the shared check's message under their op name
    EXPECT_EQ(fwd, "wtconv_forward" + direct.substr(7)) << b.name;
    EXPECT_EQ(bwd, "wtconv_backward" + direct.substr(7)) << b.name;
  }
}

TEST(WTConvCheck, GradYShapeNamed) {
  const Tensor x = test::random({1, 7, 6, 2}, 15);
  const WTConvWeights w = weights(2, 3, 1);
  const Tensor gy = test::random({1, 3, 3, 2}, 16);
  const std::string direct = error_of([&] { kernels::wtconv_check_grad_y("some_op", x, gy, 2); });
  EXPECT_NE(direct.find("some_op: grad_y must have shape [1, 4, 3, 2]"), std::string::npos)
      << direct;
  EXPECT_NE(direct.find("x [1, 7, 6, 2] at stride 2"), std::string::npos) << direct;
  EXPECT_NE(direct.find("got [1, 3, 3, 2]"), std::string::npos) << direct;
  EXPECT_NE(error_of([&] {
              kernels::wtconv_check_grad_y("some_op", x, Tensor(), 1);
            }).find("got undefined"),
            std::string::npos);
  const std::string bwd =
      error_of([&] { kernels::cpu::wtconv_backward(x, w, gy, 2, true, WTConvMode::reference); });
  EXPECT_EQ(bwd, "wtconv_backward" + direct.substr(7));
}

// The level grids (kernels/wtconv.h): grid 0 is H x W, each next one the previous halved and
// rounded up, for any level count (the CPU takes more levels than the CUDA kernels' 12).
TEST(WTConvCheck, LevelGridsHalveRoundingUp) {
  static_assert(kernels::wtconv_level_size(7) == 4 && kernels::wtconv_level_size(56) == 28 &&
                kernels::wtconv_level_size(1) == 1);
  const kernels::WTConvLevels g(7, 12, 4);
  EXPECT_EQ(g.h, (std::vector<int64_t>{7, 4, 2, 1, 1}));
  EXPECT_EQ(g.w, (std::vector<int64_t>{12, 6, 3, 2, 1}));
  EXPECT_EQ(kernels::WTConvLevels(5, 3, 0).h, std::vector<int64_t>{5});
  EXPECT_EQ(kernels::WTConvLevels(4096, 1, 14).h.back(), 1);
  EXPECT_NE(error_of([] { kernels::WTConvLevels(4, 4, -1); }).find("must be >= 0, got -1"),
            std::string::npos);
}

// What stays per backend: the CPU kernels take f32 / f64 CPU tensors of one dtype.
TEST(WTConvCheck, CpuKeepsItsDtypeChecks) {
  const Tensor x = test::random({1, 6, 6, 2}, 17);  // f64
  WTConvWeights w = weights(2, 3, 2);
  w.wavelet_scale[1] = w.wavelet_scale[1].to(DType::f32);
  const std::string m = error_of([&] { kernels::cpu::wtconv_forward(x, w, 1, WTConvMode::fused); });
  EXPECT_NE(m.find("wtconv_forward: wavelet_scale[1] is f32"), std::string::npos) << m;
  EXPECT_NE(m.find("but x is f64"), std::string::npos) << m;
}

}  // namespace hg
