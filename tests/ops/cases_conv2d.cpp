// Registry cases: conv2d (layers/conv2d.h) on every route: dense (im2col / cuDNN), pointwise,
// patchify (kernel == stride: patch copy + GEMM), depthwise (our kernels), grouped.
#include "conv2d_configs.h"
#include "harness.h"
#include "layers/conv2d.h"

namespace hg::test::ops {
namespace {

constexpr bool kPending = false;  // bf16 supported (set true for a case whose bf16 path is missing)

struct Conv {
  int64_t N, H, W, C, O, K;
  int stride, pad, groups;
  bool bias;
};

OpCase conv_case(std::string name, Conv c, unsigned modes) {
  std::vector<Input> inputs = {act("x", {c.N, c.H, c.W, c.C}),
                               param("weight", {c.O, c.C / c.groups, c.K, c.K})};
  if (c.bias) inputs.push_back(param("bias", {c.O}));
  const double OH = double((c.H + 2 * c.pad - c.K) / c.stride + 1),
               OW = double((c.W + 2 * c.pad - c.K) / c.stride + 1);
  const double macs = double(c.N) * OH * OW * double(c.O) * double(c.C / c.groups * c.K * c.K);
  const double bias_flops = c.bias ? double(c.N) * OH * OW * double(c.O) : 0.0;
  const bool depthwise = c.groups == c.C && c.groups == c.O;
  return {.op = "conv2d",
          .name = std::move(name),
          .inputs = std::move(inputs),
          .fn = [c](const std::vector<Tensor>& v) {
            return conv2d(v[0], v[1], c.bias ? v[2] : Tensor(), c.stride, c.pad, c.groups);
          },
          .modes = modes,
          .flops = {2 * macs + bias_flops, 4 * macs + bias_flops},  // backward: data + weight
          .tensor_cores = !depthwise,  // depthwise runs our exact-fp32 kernels, whatever TF32
          .bf16_pending = kPending};
}

constexpr unsigned kSmall = kGrad | kBf16 | kDevice;

// Weights in [-0.3, 0.3], the scale of trained layers.
OpCase narrow(OpCase c) {
  c.inputs[1].lo = -0.3;
  c.inputs[1].hi = 0.3;
  return c;
}

std::vector<OpCase> small_cases() {
  std::vector<OpCase> v;
  for (const ConvConfig& c : kConvConfigs)
    v.push_back(conv_case(c.name, {c.N, c.H, c.W, c.C, c.O, c.K, c.stride, c.pad, c.groups, c.bias}, kSmall));
  return v;
}

const bool registered_small = register_cases(small_cases());

const bool registered = register_cases({
    // launch shapes on the device (and the bf16 reference for some): ConvNeXt's routes at small
    // batch, C not a multiple of 4 or 8, stride 2, odd maps, the patch copy of the stem
    conv_case("dw7x7_odd_C37", {3, 13, 11, 37, 37, 7, 1, 3, 37, true}, kDevice | kBf16),
    conv_case("dw7x7_stride2_odd_C37", {2, 13, 11, 37, 37, 7, 2, 3, 37, true}, kDevice),
    conv_case("dw7x7_C96_14", {2, 14, 14, 96, 96, 7, 1, 3, 96, true}, kDevice | kBf16),
    conv_case("dw7x7_C36_9", {2, 9, 9, 36, 36, 7, 1, 3, 36, false}, kDevice),
    conv_case("dw5x5_stride2_C9", {2, 15, 14, 9, 9, 5, 2, 2, 9, true}, kDevice),
    // rows so wide that the f32 staged weight gradient fits one staging buffer only (bf16: two)
    conv_case("dw7x7_wide_C16_96", {1, 12, 96, 16, 16, 7, 1, 3, 16, true}, kDevice),
    conv_case("patchify4x4_in1_fmnist", {4, 28, 28, 1, 48, 4, 4, 0, 1, true}, kDevice | kBf16),
    conv_case("patchify4x4_in3", {2, 32, 32, 3, 96, 4, 4, 0, 1, true}, kDevice),
    conv_case("downsample2x2_96", {2, 14, 14, 96, 192, 2, 2, 0, 1, true}, kDevice),
    conv_case("downsample2x2_odd", {3, 7, 9, 5, 10, 2, 2, 0, 1, true}, kDevice | kBf16),
    conv_case("dense3x3_pad1_16_24", {2, 9, 10, 16, 24, 3, 1, 1, 1, true}, kDevice),
    conv_case("groups2_8_6", {2, 8, 7, 8, 6, 3, 1, 1, 2, true}, kDevice),
    conv_case("pointwise_12_20", {2, 5, 6, 12, 20, 1, 1, 0, 1, true}, kDevice),
    // every route of the bf16 kernels at 12x12: depthwise vector widths 8 / 4 / 1, a run-time K,
    // patchify GEMMs, cuDNN (weights in [-0.3, 0.3])
    narrow(
        conv_case("bf16_dw7x7_vec8_C96", {2, 12, 12, 96, 96, 7, 1, 3, 96, true}, kDevice | kBf16)),
    narrow(conv_case("bf16_dw5x5_vec4_C12", {2, 12, 12, 12, 12, 5, 1, 2, 12, true}, kDevice)),
    narrow(
        conv_case("bf16_dw3x3_s2_vec1_C7", {2, 12, 12, 7, 7, 3, 2, 1, 7, true}, kDevice | kBf16)),
    narrow(conv_case("bf16_dw9x9_runtime_K", {2, 12, 12, 16, 16, 9, 1, 4, 16, true}, kDevice)),
    narrow(conv_case("bf16_patchify2x2_16_32", {2, 12, 12, 16, 32, 2, 2, 0, 1, true}, kDevice)),
    narrow(conv_case("bf16_stem4x4_3_24", {2, 12, 12, 3, 24, 4, 4, 0, 1, true}, kDevice | kBf16)),
    narrow(conv_case("bf16_dense3x3_8_12", {2, 12, 12, 8, 12, 3, 1, 1, 1, true}, kDevice)),
    // ConvNeXt-T at batch 64: stage-1 depthwise 7x7, the stem, the first downsampling
    conv_case("dw7x7_convnext_t_s1_b64", {64, 56, 56, 96, 96, 7, 1, 3, 96, true}, kPerf),
    conv_case("stem4x4_convnext_t_b64", {64, 224, 224, 3, 96, 4, 4, 0, 1, true}, kPerf),
    conv_case("down2x2_convnext_t_s1_b64", {64, 56, 56, 96, 192, 2, 2, 0, 1, true}, kPerf),
});

// Gradients flow only to what requires grad: a frozen weight still gives x its gradient.
const bool registered_frozen = register_cases({[] {
  OpCase c = conv_case("frozen_weight", {1, 4, 4, 2, 3, 3, 1, 1, 1, false}, kGrad | kBf16 | kDevice);
  c.inputs[1] = frozen(c.inputs[1]);
  return c;
}()});

}  // namespace
}  // namespace hg::test::ops
