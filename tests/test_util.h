// Shared test helpers: random tensors, error norms, finite-difference gradient checks.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace hg::test {

/// Uniform in [lo, hi) from a fixed seed (never zeros by accident: lo/hi default to [-1, 1)).
Tensor random(const Shape& shape, uint64_t seed, DType dtype = DType::f64, double lo = -1.0,
              double hi = 1.0);

/// max |a - b| / max(max |b|, tiny): the relative error measure of ../shared/golden/README.md.
double rel_error(const Tensor& a, const Tensor& b);

/// Checks d(sum(f(inputs) * w))/d(input) for every input that requires grad against central
/// finite differences in float64 (step eps). Returns the worst relative error; inputs must be f64.
double gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                 std::vector<Tensor> inputs, double eps = 1e-6, uint64_t seed = 1234);

/// Runs `f` and returns the message of the hg::Error it throws ("" when it throws none; any other
/// exception passes through).
std::string error_of(const std::function<void()>& f);

/// Directory of golden files: $HAARGRAD_GOLDEN_DIR or ../shared/golden beside the sources.
std::string golden_dir();

}  // namespace hg::test
