// Registry cases: global_avg_pool and flatten (layers/pool.h), and the ConvNeXt head path
// (patchify conv -> pool -> flatten -> linear) differentiated end to end.
#include "harness.h"
#include "layers/conv2d.h"
#include "layers/linear.h"
#include "layers/pool.h"

namespace hg::test::ops {
namespace {

constexpr bool kPending = false;  // bf16 supported (set true for a case whose bf16 path is missing)

OpCase pool_case(std::string name, Shape x, unsigned modes) {
  const double n = double(shape_numel(x));
  return {.op = "global_avg_pool",
          .name = std::move(name),
          .inputs = {act("x", x)},
          .fn = [](const std::vector<Tensor>& v) { return global_avg_pool(v[0]); },
          .modes = modes,
          .flops = per_element(n, 1, 1),
          .bf16_pending = kPending};
}

OpCase flatten_case(std::string name, Shape x, std::vector<int> perm, int start, unsigned modes) {
  return {.op = "flatten",
          .name = std::move(name),
          .inputs = {act("x", x)},
          .fn = [perm, start](const std::vector<Tensor>& v) { return flatten(v[0].permute(perm), start); },
          .modes = modes,
          .flops = per_element(double(shape_numel(x)), 0.5, 0.5),  // a copy: no arithmetic, count the move
          .bf16_pending = false};  // a copy in any dtype
}

// conv (2x2, stride 2) -> global_avg_pool -> flatten -> linear, every parameter differentiated.
OpCase head_case(std::string name, int64_t N, int64_t H, int64_t W, int64_t C, int64_t D,
                 int64_t classes, unsigned modes) {
  const double macs = double(N) * (H / 2) * (W / 2) * D * C * 4 + double(N) * D * classes;
  return {.op = "head_chain",
          .name = std::move(name),
          .inputs = {act("x", {N, H, W, C}), param("conv_weight", {D, C, 2, 2}), param("conv_bias", {D}),
                     param("fc_weight", {classes, D}), param("fc_bias", {classes})},
          .fn = [](const std::vector<Tensor>& v) {
            Tensor h = conv2d(v[0], v[1], v[2], 2, 0, 1);
            return linear(flatten(global_avg_pool(h), 1), v[3], v[4]);
          },
          .modes = modes,
          .flops = {2 * macs, 4 * macs},
          .tensor_cores = true,
          .bf16_pending = kPending,
          .bf16_out = kBf16OutIntermediateTol,  // conv and pool outputs rounded on the way
          .bf16_grad = kBf16GradIntermediateTol};
}

const bool registered = register_cases({
    pool_case("small_2x3x4x5", {2, 3, 4, 5}, kGrad | kBf16 | kDevice),
    pool_case("small_1x5x3x2", {1, 5, 3, 2}, kGrad | kBf16 | kDevice),
    pool_case("layer_2x4x3x10", {2, 4, 3, 10}, kDevice | kBf16),
    pool_case("head_2x7x7x768", {2, 7, 7, 768}, kDevice | kBf16),
    pool_case("odd_3x5x3x37", {3, 5, 3, 37}, kDevice),
    pool_case("large_map_1x56x56x96", {1, 56, 56, 96}, kDevice),
    pool_case("one_pixel_2x1x1x5", {2, 1, 1, 5}, kDevice | kBf16),
    pool_case("vec8_3x5x7x96", {3, 5, 7, 96}, kDevice),
    pool_case("vec4_3x5x7x12", {3, 5, 7, 12}, kDevice | kBf16),
    pool_case("vec1_3x5x7x7", {3, 5, 7, 7}, kDevice),
    pool_case("head_convnext_t_b128", {128, 7, 7, 768}, kPerf),

    flatten_case("permuted_2x3x2", {2, 3, 2}, {0, 2, 1}, 1, kGrad | kBf16 | kDevice),
    flatten_case("nchw_view_2x5x3x4", {2, 5, 3, 4}, {0, 2, 3, 1}, 1, kDevice),

    head_case("tiny", 2, 4, 5, 2, 3, 4, kGrad | kBf16 | kDevice),
    head_case("fmnist_like", 4, 8, 8, 8, 32, 10, kDevice | kBf16),
});

}  // namespace
}  // namespace hg::test::ops
