// Registry cases: linear, gelu_linear, gelu_linear_residual and gelu_linear_scaled
// (layers/linear.h).
#include "harness.h"
#include "layers/linear.h"

namespace hg::test::ops {
namespace {

constexpr bool kPending = false;  // bf16 supported (set true for a case whose bf16 path is missing)

Tensor linear_fn(const std::vector<Tensor>& v) { return linear(v[0], v[1], v.size() > 2 ? v[2] : Tensor()); }
Tensor gelu_linear_fn(const std::vector<Tensor>& v) {
  return gelu_linear(v[0], v[1], v.size() > 2 ? v[2] : Tensor());
}

// x (..., in) -> (..., out); M = the product of the leading dims.
OpCase linear_case(std::string name, Shape x, int64_t out, bool bias, unsigned modes,
                   bool fused_gelu = false) {
  const int64_t in = x.back(), M = shape_numel(x) / in;
  std::vector<Input> inputs = {act(fused_gelu ? "h" : "x", x), param("weight", {out, in})};
  if (bias) inputs.push_back(param("bias", {out}));
  Flops f = gemm_flops(double(M), double(in), double(out), bias);
  if (fused_gelu) f = {f.fwd + 8.0 * M * in, f.bwd + 20.0 * M * in};  // GELU, recomputed backward
  OpCase c{.op = fused_gelu ? "gelu_linear" : "linear",
           .name = std::move(name),
           .inputs = std::move(inputs),
           .fn = fused_gelu ? OpFn(gelu_linear_fn) : OpFn(linear_fn),
           .modes = modes,
           .flops = f,
           .tensor_cores = true,
           .bf16_pending = kPending};
  if (fused_gelu) {  // GELU(h) goes into the GEMM as bf16, like the CUDA path's scratch
    c.bf16_out = kBf16OutIntermediateTol;
    c.bf16_grad = kBf16GradIntermediateTol;
  }
  return c;
}

Tensor gelu_linear_residual_fn(const std::vector<Tensor>& v) {
  return gelu_linear_residual(v[0], v[1], v[2], v.size() > 4 ? v[4] : Tensor(), v[3]);
}
Tensor gelu_linear_scaled_fn(const std::vector<Tensor>& v) {
  return gelu_linear_scaled(v[0], v[1], v.size() > 3 ? v[3] : Tensor(), v[2]);
}

// The ConvNeXt block's end: shortcut (..., out) + gamma * fc2(gelu(h)), h (..., in); without the
// shortcut (`shortcut` false) its branch under drop path, gelu_linear_scaled.
OpCase residual_case(std::string name, Shape h, int64_t out, bool bias, unsigned modes,
                     bool shortcut = true) {
  const int64_t in = h.back(), M = shape_numel(h) / in;
  Shape x = h;
  x.back() = out;
  std::vector<Input> inputs = {act("h", h), param("weight", {out, in}, -0.3, 0.3),
                               param("gamma", {out}, 0.1, 1.0)};
  if (shortcut) inputs.insert(inputs.begin(), act("shortcut", x));
  if (bias) inputs.push_back(param("bias", {out}));
  const Flops f = gemm_flops(double(M), double(in), double(out), bias);
  OpCase c{.op = shortcut ? "gelu_linear_residual" : "gelu_linear_scaled",
           .name = std::move(name),
           .inputs = std::move(inputs),
           .fn = shortcut ? OpFn(gelu_linear_residual_fn) : OpFn(gelu_linear_scaled_fn),
           .modes = modes,
           .flops = {f.fwd + 8.0 * M * in + (shortcut ? M * out : 0.0), f.bwd + 20.0 * M * in},
           .tensor_cores = true,
           .bf16_pending = kPending};
  // GELU(h) and the folded weight gamma w enter the GEMM as bf16 (the f32 op keeps both in f32)
  c.bf16_out = kBf16OutIntermediateTol;
  c.bf16_grad = kBf16GradIntermediateTol;
  return c;
}
OpCase scaled_case(std::string name, Shape h, int64_t out, bool bias, unsigned modes) {
  return residual_case(std::move(name), std::move(h), out, bias, modes, /*shortcut=*/false);
}

// Weights in [-0.3, 0.3], the scale of trained layers (outputs stay O(1) for wide inputs).
OpCase narrow(OpCase c) {
  c.inputs[1].lo = -0.3;
  c.inputs[1].hi = 0.3;
  return c;
}

// The weight frozen, the bias trained: the bias gradient alone (on CUDA bias_grad_rows; beside
// the weight's gradient it comes from the weight GEMM's epilogue).
OpCase frozen_weight(OpCase c) {
  c.name += "_frozen_weight";
  c.inputs[1] = frozen(c.inputs[1]);
  return c;
}

// h in [-6, 6], where erf saturates (GELU(h) -> h and 0).
OpCase wide_h(OpCase c) {
  c.inputs[0].lo = -6;
  c.inputs[0].hi = 6;
  return c;
}

const bool registered = register_cases({
    // every rank, with and without bias
    linear_case("rank3", {2, 3, 4}, 5, true, kGrad | kBf16 | kDevice),
    linear_case("rank4", {2, 2, 2, 3}, 6, true, kGrad | kBf16 | kDevice),
    linear_case("rank2_nobias", {3, 4}, 2, false, kGrad | kBf16 | kDevice),
    linear_case("rank1", {4}, 3, true, kGrad | kBf16 | kDevice),
    // a permuted NCHW view as input: (2, 5, 2, 2) -> (2, 2, 2, 5)
    [] {
      OpCase c = linear_case("permuted_input", {2, 2, 2, 5}, 3, true, kGrad | kBf16 | kDevice);
      c.inputs[0].shape = {2, 5, 2, 2};  // NCHW, viewed as NHWC by the op
      c.fn = [](const std::vector<Tensor>& v) { return linear(v[0].permute({0, 2, 3, 1}), v[1], v[2]); };
      return c;
    }(),
    // launch shapes: NHWC MLP, odd sizes, the head, one row
    linear_case("nhwc_2x5x5x24_40", {2, 5, 5, 24}, 40, true, kDevice | kBf16),
    linear_case("odd_37x19_23", {37, 19}, 23, true, kDevice | kBf16),
    linear_case("odd_37x19_23_nobias", {37, 19}, 23, false, kDevice),
    linear_case("one_row_1x5_3", {1, 5}, 3, true, kDevice),
    linear_case("fc1_2x14x14x96_384", {2, 14, 14, 96}, 384, true, kDevice),
    linear_case("fc2_2x7x7x3072_768", {2, 7, 7, 3072}, 768, true, kDevice),
    linear_case("head_4x768_10", {4, 768}, 10, true, kDevice),
    // every kernel of the CUDA op at these shapes and ConvNeXt-T's stage-1 fc1 at batch 2: the
    // forward without bias and the weight gradient alone (no bias), the bias gradient alone
    // (frozen weight)
    linear_case("fc1_2x56x56x96_384_nobias", {2, 56, 56, 96}, 384, false, kDevice),
    frozen_weight(linear_case("fc1_2x56x56x96_384", {2, 56, 56, 96}, 384, true, kDevice)),
    linear_case("fc2_2x7x7x3072_768_nobias", {2, 7, 7, 3072}, 768, false, kDevice),
    frozen_weight(linear_case("fc2_2x7x7x3072_768", {2, 7, 7, 3072}, 768, true, kDevice)),
    linear_case("head_4x768_10_nobias", {4, 768}, 10, false, kDevice),
    frozen_weight(linear_case("head_4x768_10", {4, 768}, 10, true, kDevice)),
    frozen_weight(linear_case("odd_37x19_23", {37, 19}, 23, true, kDevice)),
    linear_case("one_row_1x5_3_nobias", {1, 5}, 3, false, kDevice),
    frozen_weight(linear_case("one_row_1x5_3", {1, 5}, 3, true, kDevice)),
    // ConvNeXt-T at batch 64 (stage 1 MLP) and the ImageNet head at batch 128
    linear_case("fc1_convnext_t_s1_b64", {64, 56, 56, 96}, 384, true, kPerf),
    linear_case("fc2_convnext_t_s1_b64", {64, 56, 56, 384}, 96, true, kPerf),
    linear_case("head_b128_1000", {128, 768}, 1000, true, kPerf),

    // every vector width of the bf16 kernels (in % 8 == 0, % 4 == 0, odd); weights in [-0.3, 0.3]
    narrow(linear_case("vec8_2x5x6x8_25", {2, 5, 6, 8}, 25, true, kDevice | kBf16)),
    narrow(linear_case("vec4_2x5x6x12_37", {2, 5, 6, 12}, 37, true, kDevice)),
    narrow(linear_case("vec1_2x5x6x7_22", {2, 5, 6, 7}, 22, true, kDevice)),
    narrow(linear_case("vec8_2x5x6x8_25", {2, 5, 6, 8}, 25, true, kDevice | kBf16, true)),
    narrow(linear_case("vec4_2x5x6x12_37", {2, 5, 6, 12}, 37, true, kDevice, true)),
    narrow(linear_case("vec1_2x5x6x7_22", {2, 5, 6, 7}, 22, true, kDevice, true)),

    linear_case("small", {2, 3, 5}, 4, true, kGrad | kBf16 | kDevice, true),
    linear_case("nobias", {3, 6}, 2, false, kGrad | kBf16 | kDevice, true),
    linear_case("fc2_2x7x7x384_96", {2, 7, 7, 384}, 96, true, kDevice | kBf16, true),
    // GELU and its backward in one pass (gelu_forward_backward) on one element, the tails of the
    // 8-wide bf16 vectors (7, 255) and > 64k elements with a 3-element tail: 285 x 351 = 100035,
    // like 100003 (prime: one row of it would make the GEMMs sum 100003 terms)
    wide_h(linear_case("n1_range6", {1}, 3, true, kDevice, true)),
    wide_h(linear_case("n7_range6", {7}, 3, true, kDevice, true)),
    wide_h(linear_case("n255_15x17_range6", {15, 17}, 3, true, kDevice, true)),
    wide_h(linear_case("n100035_285x351_range6", {285, 351}, 5, true, kDevice, true)),
    linear_case("fc2_convnext_t_s1_b64", {64, 56, 56, 384}, 96, true, kPerf, true),

    // fc2 + layer scale + residual in one op (layers/linear.h: gelu_linear_residual)
    residual_case("small", {2, 3, 5}, 4, true, kGrad | kBf16 | kDevice),
    residual_case("nobias", {3, 6}, 2, false, kGrad | kBf16 | kDevice),
    // its branch alone, for drop path (gelu_linear_scaled)
    scaled_case("small", {2, 3, 5}, 4, true, kGrad | kBf16 | kDevice),
    scaled_case("nobias", {3, 6}, 2, false, kGrad | kBf16 | kDevice),
    scaled_case("fc2_2x7x7x384_96", {2, 7, 7, 384}, 96, true, kDevice | kBf16),
    scaled_case("fc2_convnext_t_s1_b64", {64, 56, 56, 384}, 96, true, kPerf),
    residual_case("nhwc_2x5x5x24_8", {2, 5, 5, 24}, 8, true, kDevice | kBf16),
    residual_case("odd_37x19_23", {37, 19}, 23, true, kDevice | kBf16),
    residual_case("fc2_2x7x7x384_96", {2, 7, 7, 384}, 96, true, kDevice | kBf16),
    residual_case("fc2_convnext_t_s1_b64", {64, 56, 56, 384}, 96, true, kPerf),
});

}  // namespace
}  // namespace hg::test::ops
