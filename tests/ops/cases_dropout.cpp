// Registry cases: dropout (layers/dropout.h) in training, with a fixed generator seed so every
// evaluation (and both devices) draw the same per-element mask on the host.
#include "core/random.h"
#include "harness.h"
#include "layers/dropout.h"

namespace hg::test::ops {
namespace {

OpCase dropout_case(std::string name, Shape x, double p, uint64_t gen_seed, unsigned modes) {
  return {.op = "dropout",
          .name = std::move(name),
          .inputs = {act("x", x)},
          .fn =
              [p, gen_seed](const std::vector<Tensor>& v) {
                Generator gen(gen_seed);  // the same mask on every evaluation
                return dropout(v[0], p, true, gen);
              },
          .modes = modes,
          .flops = per_element(double(shape_numel(x)), 1, 1),
          // one multiply by 0 or 1/keep per element (f32 for bf16 activations): one rounding
          .f32 = {1e-6, "one f32 multiply per element (the scale is exact in f32)"}};
}

const bool registered = register_cases({
    dropout_case("p05_6x8", {6, 8}, 0.5, 5, kGrad | kBf16 | kDevice),
    dropout_case("p02_head_128x768", {128, 768}, 0.2, 9, kDevice | kBf16),
    dropout_case("p03_3x5x7", {3, 5, 7}, 0.3, 3, kDevice),
    dropout_case("p01_convnext_t_head_b128", {128, 768}, 0.1, 1, kPerf),
});

}  // namespace
}  // namespace hg::test::ops
