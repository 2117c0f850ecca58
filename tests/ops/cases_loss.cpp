// Registry cases: cross_entropy with and without label smoothing, and soft_target_cross_entropy
// (layers/loss.h).
#include "harness.h"
#include "layers/loss.h"

namespace hg::test::ops {
namespace {

constexpr bool kPending = false;  // bf16 logits: widened to f32, the loss in f32 (layers/loss.h)

// log-sum-exp and the smoothed target: ~6 operations per logit forward, ~4 backward.
OpCase ce_case(std::string name, int64_t N, int64_t K, double smoothing, double range,
               unsigned modes) {
  return {.op = "cross_entropy",
          .name = std::move(name),
          .inputs = {act("logits", {N, K}, -range, range), labels("labels", N, K)},
          .fn = [smoothing](const std::vector<Tensor>& v) { return cross_entropy(v[0], v[1], smoothing); },
          .modes = modes,
          .flops = per_element(double(N * K), 6, 4),
          .bf16_pending = kPending,
          .bf16_output = DType::f32,  // the loss and softmax stay f32 in mixed precision
          .grad = {1e-7, "f64 central differences through exp and log: ~1e-9 round-off"}};
}

// soft_target_cross_entropy (mixup / cutmix): targets are rows of a fixed softmax-like
// distribution (positive, summing to 1), made in the logits' dtype on their device.
OpCase soft_case(std::string name, int64_t N, int64_t K, double range, unsigned modes) {
  return {.op = "soft_target_cross_entropy",
          .name = std::move(name),
          .inputs = {act("logits", {N, K}, -range, range)},
          .fn =
              [N, K](const std::vector<Tensor>& v) {
                std::vector<double> t(static_cast<size_t>(N * K));
                for (int64_t i = 0; i < N; ++i) {
                  double row = 0;
                  for (int64_t j = 0; j < K; ++j)
                    row += t[size_t(i * K + j)] = 1.0 + double((i + 3 * j) % 5);
                  for (int64_t j = 0; j < K; ++j) t[size_t(i * K + j)] /= row;
                }
                const DType dt = v[0].dtype() == DType::bf16 ? DType::f32 : v[0].dtype();
                const Tensor targets = Tensor::from_vector<double>({N, K}, t).to(dt);
                return soft_target_cross_entropy(v[0], targets.to(v[0].device()));
              },
          .modes = modes,
          .flops = per_element(double(N * K), 6, 4),
          .bf16_pending = kPending,
          .bf16_output = DType::f32,  // the loss and softmax stay f32 in mixed precision
          .grad = {1e-7, "f64 central differences through exp and log: ~1e-9 round-off"}};
}

// Targets as given, rows whose mass is not 1 (the gradient weighs the softmax by each row's
// mass): uniform in [0, 2 / K), a frozen input (f32 beside bf16 logits, like the loader's soft
// targets).
OpCase mass_case(std::string name, int64_t N, int64_t K, double range, unsigned modes) {
  return {.op = "soft_target_cross_entropy",
          .name = "mass_" + std::move(name),
          .inputs = {act("logits", {N, K}, -range, range),
                     frozen(param("targets", {N, K}, 0, 2.0 / double(K)))},
          .fn = [](const std::vector<Tensor>& v) { return soft_target_cross_entropy(v[0], v[1]); },
          .modes = modes,
          .flops = per_element(double(N * K), 6, 4),
          .bf16_pending = kPending,
          .bf16_output = DType::f32,  // the loss and softmax stay f32 in mixed precision
          .grad = {1e-7, "f64 central differences through exp and log: ~1e-9 round-off"}};
}

const bool registered = register_cases({
    soft_case("4x6", 4, 6, 2, kGrad | kBf16 | kDevice),
    soft_case("16x100", 16, 100, 3, kDevice | kBf16),
    soft_case("37x1000", 37, 1000, 5, kDevice),
    soft_case("imagenet_b128", 128, 1000, 5, kPerf),
    mass_case("4x6", 4, 6, 2, kGrad | kBf16 | kDevice),
    mass_case("16x100", 16, 100, 3, kDevice),
    mass_case("37x1000", 37, 1000, 5, kDevice),
    mass_case("128x10", 128, 10, 5, kDevice),
    mass_case("3x33", 3, 33, 5, kDevice),

    ce_case("s0_4x6", 4, 6, 0.0, 2, kGrad | kBf16 | kDevice),
    ce_case("s01_4x6", 4, 6, 0.1, 2, kGrad | kBf16 | kDevice),
    ce_case("s01_16x100", 16, 100, 0.1, 3, kDevice | kBf16),
    ce_case("s0_37x1000", 37, 1000, 0.0, 5, kDevice),
    ce_case("s01_37x1000", 37, 1000, 0.1, 5, kDevice | kBf16),
    ce_case("s0_128x10", 128, 10, 0.0, 5, kDevice),
    ce_case("s01_128x10", 128, 10, 0.1, 5, kDevice),
    ce_case("s0_3x33", 3, 33, 0.0, 5, kDevice),
    ce_case("s01_3x33", 3, 33, 0.1, 5, kDevice),
    ce_case("imagenet_b128", 128, 1000, 0.1, 5, kPerf),
});

}  // namespace
}  // namespace hg::test::ops
