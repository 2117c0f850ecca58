// The CPU's own Phi / phi (kernels/cpu/normal_cdf.h) against double-precision erfc / exp over a dense
// sweep of floats, and the float GELU kernels built on them against the double reference.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/normal_cdf.h"
#include "kernels/gelu.h"

namespace hg {
namespace {

using kernels::cpu::normal_cdf_pdf;

double phi_ref(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
double pdf_ref(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI); }

// Every 509th float of [0, 12.5] and its negative (~4.3 million points, all binades down to 1e-38).
std::vector<float> sweep() {
  std::vector<float> xs;
  const uint32_t top = std::bit_cast<uint32_t>(12.5f);
  for (uint32_t b = 0; b <= top; b += 509) {
    const float v = std::bit_cast<float>(b);
    xs.push_back(v);
    xs.push_back(-v);
  }
  xs.push_back(12.5f);
  xs.push_back(-12.5f);
  return xs;
}

// The bounds the header states.
constexpr double kCdfRel = 5e-7, kPdfRel = 3e-7;

TEST(NormalCdf, MatchesErfcAndExpWithinStatedRelativeError) {
  double worst_cdf = 0, worst_pdf = 0, worst_cdf_at = 0, worst_pdf_at = 0;
  for (float x : sweep()) {
    float cdf, pdf;
    normal_cdf_pdf(x, cdf, pdf);
    const double ec = std::fabs(cdf - phi_ref(x)) / phi_ref(x);
    const double ep = std::fabs(pdf - pdf_ref(x)) / pdf_ref(x);
    if (ec > worst_cdf) worst_cdf = ec, worst_cdf_at = x;
    if (ep > worst_pdf) worst_pdf = ep, worst_pdf_at = x;
  }
  EXPECT_LE(worst_cdf, kCdfRel) << "at x = " << worst_cdf_at;
  EXPECT_LE(worst_pdf, kPdfRel) << "at x = " << worst_pdf_at;
  std::printf("max relative error: Phi %.3g (x = %.9g), phi %.3g (x = %.9g)\n", worst_cdf, worst_cdf_at, worst_pdf,
              worst_pdf_at);
}

TEST(NormalCdf, TailsAndSpecialValues) {
  float cdf, pdf;
  normal_cdf_pdf(0.0f, cdf, pdf);
  EXPECT_NEAR(cdf, 0.5, 0.5 * kCdfRel);
  EXPECT_NEAR(pdf, 0.3989422804f, 1e-7);
  normal_cdf_pdf(-10.0f, cdf, pdf);  // 7.6e-24: 1 + erf(x / sqrt 2) would give 0 in float
  EXPECT_NEAR(cdf / phi_ref(-10.0), 1.0, kCdfRel);
  normal_cdf_pdf(-40.0f, cdf, pdf);  // clamped to Phi(-12.5), still a normal float
  EXPECT_GT(cdf, 0.0f);
  EXPECT_LT(cdf, 4e-36f);
  EXPECT_GE(cdf, 1.17549435e-38f);
  normal_cdf_pdf(40.0f, cdf, pdf);
  EXPECT_EQ(cdf, 1.0f);
  normal_cdf_pdf(-INFINITY, cdf, pdf);
  EXPECT_LT(cdf, 4e-36f);
  normal_cdf_pdf(INFINITY, cdf, pdf);
  EXPECT_EQ(cdf, 1.0f);
  // NaN (an exploded step) stays NaN through GELU and its gradient: x multiplies both.
  const float nan_in = NAN, one = 1.0f;
  float y, dx;
  kernels::cpu::gelu_forward_backward<float>(&nan_in, &one, &y, &dx, 1);
  EXPECT_TRUE(std::isnan(y));
  EXPECT_TRUE(std::isnan(dx));
}

// The float kernels (vectorised, threaded over chunks) against the double ones, on a size that takes
// the parallel path and a ragged tail.
TEST(NormalCdf, FloatGeluKernelsMatchDoubleReference) {
  const int64_t n = 200003;
  std::vector<float> x(n), dy(n), y(n), dx(n), y2(n), dx2(n);
  std::vector<double> xd(n), dyd(n), yd(n), dxd(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(-14.0 + 28.0 * static_cast<double>(i) / static_cast<double>(n - 1));
    dy[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
    xd[i] = x[i];
    dyd[i] = dy[i];
  }
  kernels::cpu::gelu_forward<float>(x.data(), y.data(), n);
  kernels::cpu::gelu_backward<float>(x.data(), dy.data(), dx.data(), n);
  kernels::cpu::gelu_forward_backward<float>(x.data(), dy.data(), y2.data(), dx2.data(), n);
  kernels::cpu::gelu_forward<double>(xd.data(), yd.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    const double v = xd[i];
    const double cdf = phi_ref(v), pdf = pdf_ref(v);
    // y = x Phi(x): relative error of Phi plus one rounding; x < -12.5 is clamped (|y| < 5e-35).
    const double y_ref = v * cdf;
    const double y_tol = v < -12.5 ? 1e-33 : 6e-7 * std::fabs(y_ref) + 1e-45;
    ASSERT_LE(std::fabs(y[i] - y_ref), y_tol) << "x = " << v;
    // dy (Phi + x phi) cancels near x = -0.75: bound by the size of the terms.
    const double dx_ref = dyd[i] * (cdf + v * pdf);
    const double dx_tol = 1e-6 * std::fabs(dyd[i]) * (cdf + std::fabs(v) * pdf) + 1e-33;
    ASSERT_LE(std::fabs(dx[i] - dx_ref), dx_tol) << "x = " << v;
    EXPECT_EQ(y2[i], y[i]);
    EXPECT_EQ(dx2[i], dx[i]);
    // the double reference keeps its own formula (0.5 x (1 + erf)): close to Phi where it has digits
    if (v > -5) {
      ASSERT_NEAR(yd[i], y_ref, 1e-12 * std::max(1.0, std::fabs(y_ref)) + 1e-15) << "x = " << v;
    }
  }
}

}  // namespace
}  // namespace hg
