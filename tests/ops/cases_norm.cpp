// Registry cases: layer_norm over the last dim (layers/norm.h).
#include "harness.h"
#include "layers/norm.h"

namespace hg::test::ops {
namespace {

constexpr bool kPending = false;  // bf16 supported (set true for a case whose bf16 path is missing)

// Mean, variance, normalise, scale: ~8 operations per element forward, ~12 backward.
OpCase norm_case(std::string name, Shape x, double lo, double hi, unsigned modes, double eps = 1e-6) {
  const int64_t C = x.back();
  const double n = double(shape_numel(x));
  return {.op = "layer_norm",
          .name = std::move(name),
          .inputs = {act("x", x, lo, hi), param("weight", {C}, 0.5, 1.5), param("bias", {C})},
          .fn = [eps](const std::vector<Tensor>& v) { return layer_norm(v[0], v[1], v[2], eps); },
          .modes = modes,
          .flops = per_element(n, 8, 12),
          .bf16_pending = kPending,
          // 1 / sqrt(var + eps) amplifies the rounding of x - mean where the variance is small
          .grad = {1e-7, "f64 central differences through 1/sqrt(var): ~1e-9 round-off"}};
}

const bool registered = register_cases({
    norm_case("nhwc_2x3x3x5", {2, 3, 3, 5}, -1, 1, kGrad | kBf16 | kDevice),
    // a permuted (non-dense) view of a 3-D tensor; weight and bias constants
    [] {
      OpCase c = norm_case("permuted_only_x", {4, 3, 5}, -1, 1, kGrad | kBf16 | kDevice, 1e-5);
      c.inputs[1] = frozen(param("weight", {4}));
      c.inputs[2] = frozen(param("bias", {4}));
      c.fn = [](const std::vector<Tensor>& v) {
        return layer_norm(v[0].permute({2, 1, 0}), v[1], v[2], 1e-5);
      };
      return c;
    }(),
    // launch shapes: ConvNeXt-like NHWC, odd C (not a multiple of 32), large C with few rows, many
    // rows (chunked weight gradients), a single row
    norm_case("nhwc_2x6x5x48", {2, 6, 5, 48}, -1, 2, kDevice | kBf16),
    norm_case("nhwc_2x7x9x96", {2, 7, 9, 96}, -2, 3, kDevice),
    norm_case("odd_3x5x5x33", {3, 5, 5, 33}, -2, 3, kDevice | kBf16),
    norm_case("wide_3x1000", {3, 1000}, -2, 3, kDevice),
    norm_case("rows_4x32x32x64", {4, 32, 32, 64}, -2, 3, kDevice),
    norm_case("one_row_1x1x1x7", {1, 1, 1, 7}, -2, 3, kDevice | kBf16),
    // the vector widths of the bf16 kernels: C % 8 == 0, C % 4 == 0, odd C
    norm_case("vec8_3x5x7x96", {3, 5, 7, 96}, -2, 3, kDevice),
    norm_case("vec4_3x5x7x12", {3, 5, 7, 12}, -2, 3, kDevice | kBf16),
    norm_case("vec1_3x5x7x7", {3, 5, 7, 7}, -2, 3, kDevice),
    // ConvNeXt-T at batch 64: stage 1 and stage 4
    norm_case("convnext_t_s1_b64", {64, 56, 56, 96}, -2, 3, kPerf),
    norm_case("convnext_t_s4_b64", {64, 7, 7, 768}, -2, 3, kPerf),
});

}  // namespace
}  // namespace hg::test::ops
