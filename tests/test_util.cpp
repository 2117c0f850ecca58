// Shared test helpers (see test_util.h).
#include "test_util.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>

#include "core/autograd.h"
#include "core/error.h"
#include "core/ops.h"

namespace hg::test {

Tensor random(const Shape& shape, uint64_t seed, DType dtype, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (double& x : v) x = dist(rng);
  return Tensor::from_vector(shape, v).to(dtype);
}

double rel_error(const Tensor& a, const Tensor& b) {
  HG_CHECK(a.shape() == b.shape(), "rel_error: shapes differ: ", a.describe(), " vs ", b.describe());
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double d = std::fabs(x[i] - y[i]);
    if (std::isnan(d)) return INFINITY;
    max_diff = std::max(max_diff, d);
    max_ref = std::max(max_ref, std::fabs(y[i]));
  }
  return max_diff / std::max(max_ref, 1e-30);
}

double gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                 std::vector<Tensor> inputs, double eps, uint64_t seed) {
  // Loss = sum(f(x) * w) with a fixed random w, so every output element matters.
  Tensor probe;
  {
    autograd::NoGradGuard ng;
    probe = f(inputs);
  }
  Tensor w = random(probe.shape(), seed, DType::f64);
  auto loss_of = [&](const std::vector<Tensor>& in) {
    return ops::sum_all(ops::mul(f(in), w.to(probe.device())));
  };
  for (Tensor& t : inputs)
    if (t.requires_grad()) t.clear_grad();
  autograd::backward(loss_of(inputs));

  double worst = 0;
  autograd::NoGradGuard ng;
  for (Tensor& t : inputs) {
    if (!t.requires_grad()) continue;
    HG_CHECK(t.dtype() == DType::f64, "gradcheck: inputs must be f64, got ", t.describe());
    HG_CHECK(t.grad().defined(), "gradcheck: no gradient reached an input ", t.describe());
    std::vector<double> analytic = t.grad().to_vector<double>();
    std::vector<double> numeric(analytic.size());
    double* p = t.data<double>();
    for (size_t i = 0; i < numeric.size(); ++i) {
      double orig = p[i];
      p[i] = orig + eps;
      double lp = loss_of(inputs).item();
      p[i] = orig - eps;
      double lm = loss_of(inputs).item();
      p[i] = orig;
      numeric[i] = (lp - lm) / (2 * eps);
    }
    Tensor a = Tensor::from_vector(t.shape(), analytic), n = Tensor::from_vector(t.shape(), numeric);
    worst = std::max(worst, rel_error(a, n));
  }
  return worst;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string golden_dir() {
  const char* env = std::getenv("HAARGRAD_GOLDEN_DIR");
  const std::string dir = env && *env ? env : HAARGRAD_GOLDEN_DIR_DEFAULT;
  // A clone that is not beside the project's shared/ folder has none: say what the tests need
  // (it failed as "filesystem error: directory iterator cannot open directory").
  if (!std::filesystem::is_directory(dir))
    throw std::runtime_error(
        "the golden files (reference values from PyTorch / timm and the reference WTConv, "
        "*.safetensors) are not in '" +
        dir + "'" +
        (env && *env ? " ($HAARGRAD_GOLDEN_DIR)" : " (../shared/golden beside the sources)") +
        ": set HAARGRAD_GOLDEN_DIR to the folder that holds them (README, Tests)");
  return dir;
}

}  // namespace hg::test
