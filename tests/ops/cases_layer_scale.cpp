// Registry cases: layer_scale, residual_add and the fused residual_layer_scale
// (layers/layer_scale.h), the end of a ConvNeXt block.
#include "harness.h"
#include "layers/layer_scale.h"

namespace hg::test::ops {
namespace {

constexpr bool kPending = false;  // bf16 supported (set true for a case whose bf16 path is missing)

OpCase scale_case(std::string name, Shape x, unsigned modes) {
  const double n = double(shape_numel(x));
  return {.op = "layer_scale",
          .name = std::move(name),
          .inputs = {act("x", x), param("gamma", {x.back()})},
          .fn = [](const std::vector<Tensor>& v) { return layer_scale(v[0], v[1]); },
          .modes = modes,
          .flops = per_element(n, 1, 3),  // y = x g; dx = dy g, dgamma += dy x
          .bf16_pending = kPending};
}

// The block pattern x + layer_scale(h, gamma), composed from the two unfused ops.
OpCase residual_case(std::string name, Shape x, unsigned modes) {
  const double n = double(shape_numel(x));
  return {.op = "residual_add",
          .name = std::move(name),
          .inputs = {act("shortcut", x), act("h", x), param("gamma", {x.back()})},
          .fn = [](const std::vector<Tensor>& v) { return residual_add(v[0], layer_scale(v[1], v[2])); },
          .modes = modes,
          .flops = per_element(n, 2, 3),
          .bf16_pending = kPending,
          .bf16_out = kBf16OutIntermediateTol,  // h * gamma is rounded before the add
          .bf16_grad = kBf16GradIntermediateTol};
}

OpCase fused_case(std::string name, Shape x, unsigned modes) {
  const double n = double(shape_numel(x));
  return {.op = "residual_layer_scale",
          .name = std::move(name),
          .inputs = {act("shortcut", x), act("h", x), param("gamma", {x.back()})},
          .fn = [](const std::vector<Tensor>& v) { return residual_layer_scale(v[0], v[1], v[2]); },
          .modes = modes,
          .flops = per_element(n, 2, 3),
          .bf16_pending = kPending};
}

// Bounds at the rounding of the op: y = x gamma and dx = dy gamma are one f32 multiply each;
// dgamma an f32 sum over the rows, in the bf16 run too (both sides sum the same bf16 products in
// f32).
OpCase tight(OpCase c) {
  c.f32 = {1e-6, "one f32 multiply per element (x gamma, dy gamma): 2^-24"};
  c.f32_grad_overrides = {{"gamma", {1e-5, "dgamma sums one product a row in f32"}}};
  c.bf16_device_param_grad = Tol{1e-5, "dgamma: f32 sums of the same bf16 products on both sides"};
  return c;
}

OpCase positive_gamma(OpCase c) {
  c.inputs.back().lo = 0.1;
  c.inputs.back().hi = 1.0;
  return c;
}

const bool registered = register_cases({
    scale_case("nhwc_2x3x3x5", {2, 3, 3, 5}, kGrad | kBf16 | kDevice),
    // gamma only, x a constant permuted view
    [] {
      OpCase c = scale_case("gamma_only_permuted_x", {2, 3, 3, 5}, kGrad | kBf16 | kDevice);
      c.inputs[0] = frozen(c.inputs[0]);
      c.fn = [](const std::vector<Tensor>& v) { return layer_scale(v[0].permute({0, 2, 1, 3}), v[1]); };
      return c;
    }(),
    tight(scale_case("convnext_4x28x28x96", {4, 28, 28, 96}, kDevice)),
    tight(scale_case("odd_3x5x5x33", {3, 5, 5, 33}, kDevice | kBf16)),
    tight(scale_case("one_row_1x1x1x5", {1, 1, 1, 5}, kDevice | kBf16)),
    // the vector widths of the bf16 kernels (C % 8, C % 4, odd), gamma in [0.1, 1) as trained
    positive_gamma(scale_case("vec8_3x5x7x96", {3, 5, 7, 96}, kDevice)),
    positive_gamma(scale_case("vec4_3x5x7x12", {3, 5, 7, 12}, kDevice | kBf16)),
    positive_gamma(scale_case("vec1_3x5x7x7", {3, 5, 7, 7}, kDevice)),
    scale_case("convnext_t_s1_b64", {64, 56, 56, 96}, kPerf),

    residual_case("block_2x2x3", {2, 2, 3}, kGrad | kBf16 | kDevice),
    [] {
      // one multiply or add per element against the f64 oracle; dgamma sums 98 products in f32
      OpCase c = residual_case("block_2x7x7x40", {2, 7, 7, 40}, kDevice | kBf16);
      c.f32 = {1e-6, "one f32 multiply and add per element: 2^-24 each"};
      c.f32_grad_overrides = {{"gamma", {1e-5, "dgamma sums 98 products per channel in f32"}}};
      return c;
    }(),

    fused_case("small_2x3x4", {2, 3, 4}, kGrad | kBf16 | kDevice),
    fused_case("convnext_2x14x14x96", {2, 14, 14, 96}, kDevice | kBf16),
    fused_case("odd_3x5x5x33", {3, 5, 5, 33}, kDevice),
    fused_case("convnext_4x28x28x96", {4, 28, 28, 96}, kDevice),
    fused_case("one_row_1x1x1x5", {1, 1, 1, 5}, kDevice),
    positive_gamma(fused_case("vec8_3x5x7x96", {3, 5, 7, 96}, kDevice | kBf16)),
    positive_gamma(fused_case("vec4_3x5x7x12", {3, 5, 7, 12}, kDevice)),
    positive_gamma(fused_case("vec1_3x5x7x7", {3, 5, 7, 7}, kDevice)),
    fused_case("convnext_t_s1_b64", {64, 56, 56, 96}, kPerf),
});

}  // namespace
}  // namespace hg::test::ops
