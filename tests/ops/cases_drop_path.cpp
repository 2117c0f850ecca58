// Registry cases: drop_path (layers/drop_path.h) in training, with a fixed generator seed so every
// evaluation (and both devices) draw the same per-sample mask on the host.
#include "core/random.h"
#include "harness.h"
#include "layers/drop_path.h"

namespace hg::test::ops {
namespace {

constexpr bool kPending = false;  // bf16 supported (set true for a case whose bf16 path is missing)

OpCase drop_case(std::string name, Shape x, double p, uint64_t gen_seed, unsigned modes) {
  const double n = double(shape_numel(x));
  return {.op = "drop_path",
          .name = std::move(name),
          .inputs = {act("x", x)},
          .fn = [p, gen_seed](const std::vector<Tensor>& v) {
            Generator gen(gen_seed);  // the same mask on every evaluation
            return drop_path(v[0], p, true, gen);
          },
          .modes = modes,
          .flops = per_element(n, 1, 1),
          .bf16_pending = kPending,
          // one multiply by 0 or 1/keep per element: exact up to one rounding
          .f32 = {1e-6, "one f32 multiply per element (the scale is exact in f32)"}};
}

const bool registered = register_cases({
    drop_case("p05_6x2x2x3", {6, 2, 2, 3}, 0.5, 5, kGrad | kBf16 | kDevice),
    drop_case("p04_16x4x4x8", {16, 4, 4, 8}, 0.4, 9, kDevice | kBf16),
    drop_case("p03_8x14x14x48", {8, 14, 14, 48}, 0.3, 3, kDevice),
    drop_case("p05_3x5", {3, 5}, 0.5, 4, kDevice | kBf16),
    drop_case("p02_1x7", {1, 7}, 0.2, 6, kDevice),
    drop_case("p01_convnext_t_s1_b64", {64, 56, 56, 96}, 0.1, 1, kPerf),
});

}  // namespace
}  // namespace hg::test::ops
