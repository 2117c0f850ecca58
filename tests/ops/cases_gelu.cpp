// Registry cases: GELU (layers/activation.h), exact erf form.
#include "harness.h"
#include "layers/activation.h"

namespace hg::test::ops {
namespace {

constexpr bool kPending = false;  // bf16 supported (set true for a case whose bf16 path is missing)

// erf and exp as ~5 operations each: forward ~8, backward ~12 per element.
OpCase gelu_case(std::string name, Shape shape, unsigned modes, OpFn fn = nullptr,
                 double range = 4) {
  const double n = static_cast<double>(shape_numel(shape));
  return {.op = "gelu",
          .name = std::move(name),
          .inputs = {act("x", shape, -range, range)},
          .fn = fn ? fn : [](const std::vector<Tensor>& v) { return gelu(v[0]); },
          .modes = modes,
          .flops = per_element(n, 8, 12),
          .bf16_pending = kPending};
}

const bool registered = register_cases({
    gelu_case("small", {2, 3, 4}, kGrad | kBf16 | kDevice),
    // a permuted (non-dense) view: the op makes it contiguous, the gradient flows back through it
    gelu_case("permuted_view", {2, 3, 4}, kGrad | kBf16 | kDevice,
              [](const std::vector<Tensor>& v) {
                return gelu(v[0].permute({2, 0, 1}));
              }),
    // launch shapes: one element, an odd tail, > 64k elements with a tail, NHWC blocks
    gelu_case("n1", {1}, kDevice | kBf16),
    gelu_case("n255", {255}, kDevice | kBf16),
    gelu_case("n100003", {100003}, kDevice),
    gelu_case("nhwc_4x8x8x24", {4, 8, 8, 24}, kDevice | kBf16),
    gelu_case("mlp_2x28x28x384", {2, 28, 28, 384}, kDevice),
    // the vector widths of the bf16 kernels: C % 8 == 0, C % 4 == 0, odd C
    gelu_case("vec8_3x5x7x96", {3, 5, 7, 96}, kDevice | kBf16),
    gelu_case("vec4_3x5x7x12", {3, 5, 7, 12}, kDevice),
    gelu_case("vec1_3x5x7x7", {3, 5, 7, 7}, kDevice | kBf16),
    // x in [-6, 6], where erf saturates (GELU(x) -> x and 0): the tail of the 8-wide bf16
    // vectors at 7 elements, and > 64k elements with a tail
    gelu_case("n7_range6", {7}, kDevice, nullptr, 6),
    gelu_case("n100003_range6", {100003}, kDevice, nullptr, 6),
    gelu_case("convnext_t_s1_b64", {64, 56, 56, 384}, kPerf),
});

}  // namespace
}  // namespace hg::test::ops
