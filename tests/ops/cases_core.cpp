// Registry cases: the tensor-level ops of core/ops.h (elementwise, matmul, reductions).
#include "core/ops.h"
#include "harness.h"

namespace hg::test::ops {
namespace {

// bf16: every op here (the reductions sum in f32 and round once).
constexpr bool kPending = false;

OpCase binary_case(std::string op, Shape s, OpFn fn, unsigned modes, double fwd, double bwd) {
  const double n = double(shape_numel(s));
  return {.op = std::move(op),
          .name = shape_str(s).substr(1, shape_str(s).size() - 2),
          .inputs = {act("a", s), act("b", s)},
          .fn = std::move(fn),
          .modes = modes,
          .flops = per_element(n, fwd, bwd),
          .bf16_pending = kPending};
}

OpCase matmul_case(std::string name, int64_t M, int64_t K, int64_t N, bool ta, bool tb,
                   unsigned modes) {
  OpCase c{.op = "matmul",
           .name = std::move(name),
           .inputs = {act("a", ta ? Shape{K, M} : Shape{M, K}), act("b", tb ? Shape{N, K} : Shape{K, N})},
           .fn = [ta, tb](const std::vector<Tensor>& v) { return hg::ops::matmul(v[0], v[1], ta, tb); },
           .modes = modes,
           .flops = gemm_flops(double(M), double(K), double(N), false),
           .tensor_cores = true,
           .bf16_pending = kPending};
  return c;
}

OpCase reduce_case(std::string op, std::string name, Shape s, OpFn fn, unsigned modes,
                   bool pending = kPending) {
  const bool cpu_only = op != "scale";  // sum, mean, sum_all: CPU reductions only (core/ops.h)
  return {.op = std::move(op),
          .name = std::move(name),
          .inputs = {act("x", s)},
          .fn = std::move(fn),
          .modes = cpu_only ? modes & ~unsigned(kDevice) : modes,
          .flops = per_element(double(shape_numel(s)), 1, 1),
          .bf16_pending = pending,
          .cpu_only = cpu_only};
}

Tensor add_fn(const std::vector<Tensor>& v) { return hg::ops::add(v[0], v[1]); }
Tensor sub_fn(const std::vector<Tensor>& v) { return hg::ops::sub(v[0], v[1]); }
Tensor mul_fn(const std::vector<Tensor>& v) { return hg::ops::mul(v[0], v[1]); }

constexpr unsigned kSmall = kGrad | kBf16 | kDevice;

const bool registered = register_cases({
    binary_case("add", {2, 3}, add_fn, kSmall, 1, 0),
    binary_case("add", {3, 5, 7, 33}, add_fn, kDevice | kBf16, 1, 0),
    binary_case("sub", {2, 3}, sub_fn, kSmall, 1, 1),
    binary_case("mul", {2, 3}, mul_fn, kSmall, 1, 2),
    binary_case("mul", {3, 5, 7, 33}, mul_fn, kDevice | kBf16, 1, 2),
    reduce_case("scale", "4", {4}, [](const std::vector<Tensor>& v) { return hg::ops::scale(v[0], 0.7); },
                kSmall, kPending),
    matmul_case("nn_3x4x5", 3, 4, 5, false, false, kSmall),
    matmul_case("tn_3x4x5", 3, 4, 5, true, false, kSmall),
    matmul_case("nt_3x4x5", 3, 4, 5, false, true, kSmall),
    matmul_case("tt_3x4x5", 3, 4, 5, true, true, kSmall),
    matmul_case("nn_37x19x23", 37, 19, 23, false, false, kDevice | kBf16),
    matmul_case("tt_64x96x40", 64, 96, 40, true, true, kDevice),
    matmul_case("nn_4096", 4096, 4096, 4096, false, false, kPerf),
    reduce_case("sum", "axes02_2x3x4", {2, 3, 4},
                [](const std::vector<Tensor>& v) { return hg::ops::sum(v[0], {0, 2}, false); }, kSmall),
    reduce_case("sum", "axes12_4x33x17", {4, 33, 17},
                [](const std::vector<Tensor>& v) { return hg::ops::sum(v[0], {1, 2}, false); },
                kDevice | kBf16),
    reduce_case("mean", "last_keepdim_2x3x4", {2, 3, 4},
                [](const std::vector<Tensor>& v) { return hg::ops::mean(v[0], {-1}, true); }, kSmall),
    reduce_case("mean", "axes0_100x7", {100, 7},
                [](const std::vector<Tensor>& v) { return hg::ops::mean(v[0], {0}, false); }, kGrad),
    reduce_case("sum_all", "3x5x7", {3, 5, 7},
                [](const std::vector<Tensor>& v) { return hg::ops::sum_all(v[0]); }, kSmall),
});

}  // namespace
}  // namespace hg::test::ops
