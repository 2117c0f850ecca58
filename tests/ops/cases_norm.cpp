// Registry cases: layer_norm over the last dim (layers/norm.h).
#include "harness.h"
#include "layers/norm.h"

namespace hg::test::ops {
namespace {

constexpr bool kPending = false;  // bf16 supported (set true for a case whose bf16 path is missing)

// Mean, variance, normalise, scale: ~8 operations per element forward, ~12 backward.
// dweight and dbias are f32 in the bf16 run: both sides sum the same bf16 values in f32.
OpCase f32_param_grads(OpCase c) {
  c.bf16_device_param_grad =
      Tol{1e-5, "dweight, dbias: f32 sums over the rows of the same bf16 values on both sides"};
  return c;
}

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
    f32_param_grads(norm_case("nhwc_2x7x9x96", {2, 7, 9, 96}, -2, 3, kDevice)),
    f32_param_grads(norm_case("odd_3x5x5x33", {3, 5, 5, 33}, -2, 3, kDevice | kBf16)),
    f32_param_grads(norm_case("wide_3x1000", {3, 1000}, -2, 3, kDevice)),
    norm_case("rows_4x32x32x64", {4, 32, 32, 64}, -2, 3, kDevice),
    f32_param_grads(norm_case("one_row_1x1x1x7", {1, 1, 1, 7}, -2, 3, kDevice | kBf16)),
    // the one-pass backward (dx and the parameter sums, rows strided over one wave of blocks) at
    // ConvNeXt-T's widths: 4 and 6 (of 8) vectors a lane, a full 8, and more rows than one sweep
    norm_case("one_pass_2x28x28x384", {2, 28, 28, 384}, -2, 3, kDevice),
    norm_case("one_pass_1x40x40x768", {1, 40, 40, 768}, -2, 3, kDevice),
    norm_case("one_pass_2x3x1024", {2, 3, 1024}, -2, 3, kDevice),
    norm_case("sweeps_16x56x56x96", {16, 56, 56, 96}, -2, 3, kDevice),
    // the vector widths of the bf16 kernels: C % 8 == 0, C % 4 == 0, odd C
    norm_case("vec8_3x5x7x96", {3, 5, 7, 96}, -2, 3, kDevice),
    norm_case("vec4_3x5x7x12", {3, 5, 7, 12}, -2, 3, kDevice | kBf16),
    norm_case("vec1_3x5x7x7", {3, 5, 7, 7}, -2, 3, kDevice),
    // several rows a warp (bf16 rows of 8-channel units: 8 lanes a row for C = 64 and 40, 16 for
    // 96), row counts that leave a warp's last rows empty, 32 lanes with 2 units (C = 200 f32)
    norm_case("lanes8_5x7x3x64", {5, 7, 3, 64}, -2, 3, kDevice),
    norm_case("lanes8_idle_3x5x7x40", {3, 5, 7, 40}, -2, 3, kDevice),
    norm_case("lanes16_1x1x13x96", {1, 1, 13, 96}, -2, 3, kDevice),
    norm_case("odd_rows_1x1x13x200", {1, 1, 13, 200}, -2, 3, kDevice),
    // ConvNeXt-T at batch 64 (stages 1 and 4) and at batch 128 (its four stages)
    norm_case("convnext_t_s1_b64", {64, 56, 56, 96}, -2, 3, kPerf),
    norm_case("convnext_t_s4_b64", {64, 7, 7, 768}, -2, 3, kPerf),
    norm_case("convnext_t_s1_b128", {128, 56, 56, 96}, -2, 3, kPerf),
    norm_case("convnext_t_s2_b128", {128, 28, 28, 192}, -2, 3, kPerf),
    norm_case("convnext_t_s3_b128", {128, 14, 14, 384}, -2, 3, kPerf),
    norm_case("convnext_t_s4_b128", {128, 7, 7, 768}, -2, 3, kPerf),
});

}  // namespace
}  // namespace hg::test::ops
