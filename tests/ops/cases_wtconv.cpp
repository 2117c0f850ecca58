// Registry cases: wtconv2d (layers/wtconv.h), fused and reference order, on odd sizes, every K in
// {1, 3, 5, 7, 9, 15} with every wt_levels 1..5 (grad, bf16 and device modes), strides 1..3, thin
// inputs, without bias; every CUDA kernel variant with its bf16 run held element by element.
#include <algorithm>
#include <cmath>

#include "harness.h"
#include "layers/wtconv.h"

namespace hg::test::ops {
namespace {

constexpr bool kPending = false;  // bf16: supported on the CPU and on CUDA (layers/wtconv.h)

struct Cfg {
  int64_t B, H, W, C;
  int K, L, stride;
};

// Base conv, L level convs on 4C channels (each on a map halved L times) and the Haar analysis /
// synthesis (4 outputs x 4 taps per coefficient each way); the backward is counted as twice.
Flops wtconv_flops(const Cfg& c) {
  const double K2 = double(c.K) * c.K;
  double f = 2.0 * c.B * c.H * c.W * c.C * K2;
  double h = double(c.H), w = double(c.W);
  for (int l = 0; l < c.L; ++l) {
    h = std::ceil(h / 2), w = std::ceil(w / 2);
    f += 2.0 * c.B * h * w * 4 * c.C * K2 + 2 * 2.0 * c.B * h * w * 4 * c.C * 4;
  }
  return {f, 2 * f};
}

OpCase wt_case(std::string name, Cfg c, WTConvMode mode, unsigned modes, bool bias = true) {
  // Scales away from 0 so every path carries signal; never the init's constants.
  std::vector<Input> in = {act("x", {c.B, c.H, c.W, c.C}), param("base_weight", {c.C, 1, c.K, c.K})};
  if (bias) in.push_back(param("base_bias", {c.C}));
  in.push_back(param("base_scale", {1, c.C, 1, 1}, 0.5, 1.5));
  for (int l = 0; l < c.L; ++l) in.push_back(param(str("wavelet_weight", l), {4 * c.C, 1, c.K, c.K}));
  for (int l = 0; l < c.L; ++l)
    in.push_back(param(str("wavelet_scale", l), {1, 4 * c.C, 1, 1}, -1.5, 1.5));
  const int L = c.L, stride = c.stride;
  const char* mode_name = mode == WTConvMode::fused ? "fused_" : "reference_";
  OpCase oc{.op = "wtconv2d",
            .name = mode_name + name,
            .inputs = std::move(in),
            .fn =
                [L, stride, mode, bias](const std::vector<Tensor>& v) {
                  const size_t o = bias ? 1 : 0;  // offset of the tensors after the optional bias
                  kernels::WTConvWeights w{v[1], bias ? v[2] : Tensor(), v[2 + o], {}, {}};
                  for (int l = 0; l < L; ++l) w.wavelet_weight.push_back(v[3 + o + size_t(l)]);
                  for (int l = 0; l < L; ++l) w.wavelet_scale.push_back(v[3 + o + size_t(L + l)]);
                  return wtconv2d(v[0], w, stride, mode);
                },
            .modes = modes,
            .flops = wtconv_flops(c),
            .bf16_pending = kPending,
            .grad = {1e-7, "f64 central differences over up to 5 levels of Haar transforms"},
            // y is linear in each single input (x, a weight, a scale), so central differences
            // carry no truncation error: a large step only shrinks the round-off of the quotient.
            .grad_step = {1e-2, "y is linear in each input: no truncation error at any step"}};
  if (mode == WTConvMode::fused) {
    // The fused bf16 op stores its coefficient planes, level outputs and level gradients in bf16
    // and its level convs use bf16-rounded folded filters (kernels/wtconv.h); the reference order
    // keeps them f32 and meets the default (bit-identical y) bounds.
    oc.bf16_out = kBf16OutIntermediateTol;
    oc.bf16_grad = kBf16GradIntermediateTol;
    // A level's weight gradient sums products with H(gR_l), G's LL pyramid at level l: sums of
    // up to 4^l values of G, each level rounded to bf16 on the way. Where that sum nearly cancels
    // (deep levels, 1x1 maps: measured 0.27 at B1_H6_W7_C1_K3_L4 level 3) its error relative to
    // the level's own largest gradient is not bounded by a few ulps; a wrong gradient (sign,
    // layout, missing term) is still off by about 1.
    const Tol level{0.5, "G's LL pyramid rounded to bf16 at every level, deep sums cancel"};
    for (int l = 0; l < c.L; ++l) {
      oc.bf16_grad_overrides.emplace(str("wavelet_weight", l), level);
      oc.bf16_grad_overrides.emplace(str("wavelet_scale", l), level);
    }
  }
  return oc;
}

// Odd sizes, every K in {1, 3, 5, 7}, wt_levels 1..5, strides 1..3, thin inputs (H or W = 1).
const Cfg kSmall[] = {{1, 5, 7, 2, 3, 1, 1}, {2, 7, 6, 1, 5, 2, 1}, {1, 9, 5, 2, 7, 3, 1},
                      {1, 6, 7, 1, 3, 4, 1}, {1, 5, 5, 1, 3, 5, 1}, {1, 7, 5, 2, 3, 2, 2},
                      {1, 1, 9, 2, 3, 2, 1}, {1, 8, 1, 1, 5, 3, 1}, {1, 1, 1, 2, 3, 2, 1},
                      {1, 6, 9, 1, 1, 2, 3}};

// Every kernel variant of each dtype at K 1..11 (1..9 compiled, 11 the run-time K), 1..5 levels,
// odd sizes and strides 1..3: C % 4 != 0 (one-channel kernels), C % 4 == 0 but C % 8 != 0
// (4-channel kernels, scalar Haar), C % 8 == 0 (bf16: the 16-byte Haar kernel too), more than 32
// vectors; the split path's level tails (wtconv_tail_level: s = 1, s = 2 at 37 x 41 and K = 7 at
// 29 x 27); more images than whole-plane blocks fit the device at once (3 a multiprocessor on the
// H200: 396): the bf16 forward's blocks (f32 planes) take 5 images in turn, the last block 1, the
// backward's 2 (more than two waves' worth), the last 1. Their bf16 runs are held element by
// element (bf16_device_ulp); weights and scales as wtconv_cuda_test.cpp draws them (ulp_case).
const Cfg kUlpCfgs[] = {
    {2, 13, 11, 3, 1, 2, 1},  {1, 15, 17, 5, 3, 3, 1},  {2, 9, 10, 6, 7, 2, 1},
    {1, 12, 15, 4, 5, 4, 1},  {1, 21, 23, 8, 3, 3, 1},  {2, 19, 21, 16, 5, 5, 1},
    {1, 14, 17, 24, 7, 2, 1}, {1, 11, 13, 40, 1, 3, 1}, {2, 15, 14, 12, 5, 2, 2},
    {1, 11, 13, 8, 3, 4, 3},  {3, 6, 5, 33, 3, 1, 1},   {1, 9, 11, 136, 5, 2, 1},
    {1, 7, 7, 2, 7, 3, 2},    {1, 32, 29, 4, 5, 5, 1},  {1, 10, 13, 8, 9, 2, 1},
    {1, 12, 12, 8, 11, 2, 1}, {1, 17, 9, 20, 7, 3, 1},  {2, 5, 21, 8, 1, 1, 2},
    {1, 37, 41, 16, 5, 4, 1}, {2, 29, 27, 8, 7, 3, 1},  {1601, 7, 7, 32, 5, 2, 1}};

// The bf16 run against the CPU bf16 op of the same mode element by element: both round the very
// f32 values (bit-identical intermediates, each level conv summed in the same order: kernels/
// wtconv.h), only the last sums differ in order (the rule's derivation: wtconv_cuda_test.cpp,
// expect_bf16_close). Weights and biases in [-0.5, 0.5], the base scale in [0.5, 1.5], the level
// scales in [0.2, 1.2]: no level's scale near 0.
OpCase ulp_case(OpCase c) {
  c.bf16_device_ulp = Tol{1e-5, "both sides round the same f32 value: 1 bf16 ulp + f32 order"};
  c.bf16_device_param_grad =
      Tol{1e-5, "f32 gradients from the same bf16 intermediates: f32 summation orders"};
  for (Input& in : c.inputs) {
    if (in.name == "x") continue;
    const bool level_scale = in.name.rfind("wavelet_scale", 0) == 0;
    if (in.name == "base_scale")
      in.lo = 0.5, in.hi = 1.5;
    else if (level_scale)
      in.lo = 0.2, in.hi = 1.2;
    else
      in.lo = -0.5, in.hi = 0.5;
  }
  return c;
}

std::string cfg_name(const Cfg& c) {
  return str("B", c.B, "_H", c.H, "_W", c.W, "_C", c.C, "_K", c.K, "_L", c.L, "_s", c.stride);
}

// The CI grid of issue 12: every K in {1, 3, 5, 7, 9, 15} (15 is the CUDA fused path's kMaxK,
// kernels/wtconv.h; 1..9 are compiled constants there, 15 the run-time-K kernels) with every
// wt_levels 1..5, at odd sizes that shrink through odd and even level grids (9 -> 5 -> 3 -> 2 -> 1),
// at least K / 2 + 1 so that every tap of the base filter meets an image pixel (a nonzero gradient).
// At most 9 x 11 and one channel at K >= 9 keep the f64 finite differences (two forwards per
// weight, 4750 weights at K = 15, L = 5) at about 9 s for the 120 grad and bf16 cases on one core.
std::vector<Cfg> k_level_grid() {
  std::vector<Cfg> v;
  for (int K : {1, 3, 5, 7, 9, 15})
    for (int L = 1; L <= 5; ++L) {
      const int64_t H = std::max(std::min(2 * L + 1, 9), (K / 2 + 1) | 1), W = H + 2;
      const int64_t C = K >= 9 ? 1 : 2;
      v.push_back({1, H, W, C, K, L, 1});
    }
  return v;
}

std::vector<OpCase> all_cases() {
  std::vector<OpCase> v;
  for (WTConvMode mode : {WTConvMode::fused, WTConvMode::reference}) {
    for (const Cfg& c : kSmall) v.push_back(wt_case(cfg_name(c), c, mode, kGrad | kBf16));
    for (const Cfg& c : k_level_grid())
      v.push_back(wt_case(cfg_name(c), c, mode, kGrad | kBf16 | kDevice));
    v.push_back(wt_case("nobias_B1_H5_W6_C2_K3_L2", {1, 5, 6, 2, 3, 2, 1}, mode, kGrad | kBf16 | kDevice,
                        false));
    // launch shapes: C above one 32-channel chunk and not a multiple of 4; C % 4 == 0 (the
    // 4-channel kernels) and C % 8 == 0 (bf16 16-byte vectors); strides 2; 5 levels
    for (const Cfg& c : {Cfg{2, 16, 16, 8, 5, 2, 1}, Cfg{1, 13, 11, 5, 3, 3, 1}, Cfg{2, 15, 14, 6, 5, 2, 2},
                         Cfg{1, 10, 9, 40, 5, 3, 1}, Cfg{1, 21, 23, 36, 5, 4, 1},
                         Cfg{2, 19, 21, 20, 5, 5, 2}, Cfg{2, 28, 28, 96, 5, 4, 1}})
      v.push_back(wt_case(cfg_name(c), c, mode, kDevice));
    v.push_back(wt_case(cfg_name({1, 14, 17, 16, 7, 2, 1}), {1, 14, 17, 16, 7, 2, 1}, mode,
                        kDevice | kBf16));
    // the split path's bf16 levels with C % 8 == 0 (haar_conv_kernel, and the backward's
    // haar_wgrad_kernel: coefficients formed on the fly) at K = 3, 5, 7, odd level grids, more
    // than one 32-channel chunk with a partial last one, two split levels before the tail, and
    // two split levels with no tail (37 x 35, L = 2: the staged synthesis forms level 1 itself),
    // and rows so wide that the f32 staged synthesis fits one staging buffer only (W = 72; L = 1,
    // and L = 3 with a tail: level 1 formed in the bf16 synthesis, by levels_synth in f32)
    for (const Cfg& c :
         {Cfg{1, 37, 41, 40, 5, 4, 1}, Cfg{2, 33, 30, 16, 7, 3, 1}, Cfg{1, 35, 34, 24, 3, 3, 1},
          Cfg{2, 37, 35, 16, 5, 2, 1}, Cfg{1, 20, 72, 8, 5, 1, 1}, Cfg{1, 20, 72, 8, 5, 3, 1}})
      v.push_back(wt_case(cfg_name(c), c, mode, kDevice));
    for (const Cfg& c : kUlpCfgs)
      v.push_back(ulp_case(wt_case("ulp_" + cfg_name(c), c, mode, kDevice)));
    // WTConvNeXt-T stage 1 at batch 64 (docs/fused-wtconv.md)
    v.push_back(wt_case("wtconvnext_t_s1_b64", {64, 56, 56, 96, 5, 5, 1}, mode, kPerf));
  }
  return v;
}

const bool registered = register_cases(all_cases());

}  // namespace
}  // namespace hg::test::ops
