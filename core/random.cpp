// Generator and trunc_normal_ (see random.h).
#include "core/random.h"

#include <cmath>
#include <sstream>
#include <vector>

namespace hg {

double Generator::uniform(double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(engine_);
}
double Generator::normal(double mean, double std) {
  return std::normal_distribution<double>(mean, std)(engine_);
}
void Generator::fill_normal(float* out, int64_t n) {
  constexpr float kTwoPi = 6.28318530717958647692f;
  for (int64_t i = 0; i < n; i += 2) {
    const uint64_t r = engine_();
    const float u1 = (static_cast<float>(r >> 40) + 1.0f) * 0x1p-24f;      // (0, 1]: log is finite
    const float u2 = static_cast<float>((r >> 16) & 0xFFFFFF) * 0x1p-24f;  // [0, 1)
    const float radius = std::sqrt(-2.0f * std::log(u1));
    out[i] = radius * std::cos(kTwoPi * u2);
    if (i + 1 < n) out[i + 1] = radius * std::sin(kTwoPi * u2);
  }
}

int64_t Generator::randint(int64_t n) {
  HG_CHECK(n > 0, "Generator::randint: n must be positive, got ", n);
  return std::uniform_int_distribution<int64_t>(0, n - 1)(engine_);
}
std::string Generator::state() const {
  std::ostringstream os;
  os << engine_;
  return os.str();
}
void Generator::set_state(const std::string& s) {
  std::istringstream is(s);
  std::mt19937_64 e;
  is >> e;
  HG_CHECK(!is.fail(), "Generator::set_state: malformed RNG state string");
  engine_ = e;
}

void trunc_normal_(Tensor& t, Generator& gen, double mean, double std, double a, double b) {
  HG_CHECK(is_floating(t.dtype()), "trunc_normal_: needs a floating tensor, got ", t.describe());
  HG_CHECK(a < b, "trunc_normal_: empty interval [", a, ", ", b, "]");
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (double& x : v) {
    do {
      x = gen.normal(mean, std);
    } while (x < a || x > b);
  }
  t.copy_(Tensor::from_vector(t.shape(), v));
}

}  // namespace hg
