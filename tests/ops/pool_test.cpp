// global_avg_pool and flatten: values against ops::mean, shapes, errors. Gradients (also of the
// ConvNeXt head path conv -> pool -> flatten -> linear), devices and dtypes: the op harness
// (cases_pool.cpp).
#include "layers/pool.h"

#include <gtest/gtest.h>

#include <string>

#include "core/autograd.h"
#include "core/ops.h"
#include "test_util.h"

using namespace hg;

TEST(GlobalAvgPool, MatchesMeanOverHW) {
  for (Shape s : {Shape{2, 3, 4, 5}, Shape{1, 1, 1, 7}, Shape{3, 7, 7, 16}}) {
    Tensor x = test::random(s, 1);
    Tensor y = global_avg_pool(x);
    ASSERT_EQ(y.shape(), (Shape{s[0], s[3]}));
    EXPECT_LT(test::rel_error(y, ops::mean(x, {1, 2})), 1e-14);
    Tensor y32 = global_avg_pool(x.to(DType::f32));
    EXPECT_LT(test::rel_error(y32, y), 1e-6);
  }
}

TEST(GlobalAvgPool, BadInputThrows) {
  try {
    global_avg_pool(test::random({2, 3, 4}, 1));
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("global_avg_pool"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3, 4]"), std::string::npos) << m;
  }
  EXPECT_THROW(global_avg_pool(Tensor::empty({2, 0, 3, 4}, DType::f64)), Error);
}

TEST(Flatten, ShapesValuesAndGradient) {
  Tensor x = test::random({2, 3, 4, 5}, 4);
  EXPECT_EQ(flatten(x).shape(), (Shape{2, 60}));
  EXPECT_EQ(flatten(x, 0).shape(), (Shape{120}));
  EXPECT_EQ(flatten(x, 2).shape(), (Shape{2, 3, 20}));
  EXPECT_EQ(flatten(x, -1).shape(), (Shape{2, 3, 4, 5}));
  EXPECT_EQ(flatten(x, -2).shape(), (Shape{2, 3, 20}));
  EXPECT_EQ(flatten(x).to_vector<double>(), x.to_vector<double>());  // row-major order kept
  Tensor p = x.permute({0, 3, 1, 2});  // not dense: flatten must copy in logical order
  EXPECT_EQ(flatten(p).to_vector<double>(), p.contiguous().to_vector<double>());
  EXPECT_THROW(flatten(x, 4), Error);
  EXPECT_THROW(flatten(x, -5), Error);
}
