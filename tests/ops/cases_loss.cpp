// Registry cases: cross_entropy with and without label smoothing (layers/loss.h).
#include "harness.h"
#include "layers/loss.h"

namespace hg::test::ops {
namespace {

constexpr bool kPending = true;  // bf16: cross_entropy refuses bf16 logits (layers/loss.cpp)

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

const bool registered = register_cases({
    ce_case("s0_4x6", 4, 6, 0.0, 2, kGrad | kBf16 | kDevice),
    ce_case("s01_4x6", 4, 6, 0.1, 2, kGrad | kBf16 | kDevice),
    ce_case("s01_16x100", 16, 100, 0.1, 3, kDevice | kBf16),
    ce_case("s0_37x1000", 37, 1000, 0.0, 5, kDevice),
    ce_case("s01_37x1000", 37, 1000, 0.1, 5, kDevice | kBf16),
    ce_case("s0_128x10", 128, 10, 0.0, 5, kDevice),
    ce_case("s01_3x33", 3, 33, 0.1, 5, kDevice),
    ce_case("imagenet_b128", 128, 1000, 0.1, 5, kPerf),
});

}  // namespace
}  // namespace hg::test::ops
