// Registry cases: drop_path, scale_samples and add_scaled_samples (layers/drop_path.h); drop_path
// in training, with a fixed generator seed so every evaluation (and both devices) draw the same
// per-sample mask on the host.
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

// scale_samples, the op drop_path records, with a dropped (0), a doubled and a 1.25 sample in
// turn (the cycle entered `phase` places in); the scale is f32 for bf16 activations (the f32
// draw of the host), else x's dtype.
OpCase samples_case(std::string name, Shape x, unsigned modes, size_t phase = 0) {
  return {.op = "scale_samples",
          .name = std::move(name),
          .inputs = {act("x", x)},
          .fn =
              [phase](const std::vector<Tensor>& v) {
                const DType dt = v[0].dtype() == DType::bf16 ? DType::f32 : v[0].dtype();
                std::vector<double> s(static_cast<size_t>(v[0].size(0)));
                for (size_t i = 0; i < s.size(); ++i) {
                  const size_t k = (i + phase) % 3;
                  s[i] = k == 0 ? 0.0 : k == 1 ? 2.0 : 1.25;
                }
                return scale_samples(
                    v[0], Tensor::from_vector<double>({v[0].size(0)}, s).to(dt).to(v[0].device()));
              },
          .modes = modes,
          .flops = per_element(double(shape_numel(x)), 1, 1),
          .bf16_pending = kPending,
          .f32 = {1e-6, "one f32 multiply per element by an exact scale"}};
}

// add_scaled_samples: shortcut + z * scale[n] (the residual add of a dropped branch), with the
// same fixed scales as samples_case.
OpCase add_case(std::string name, Shape x, unsigned modes) {
  return {.op = "add_scaled_samples",
          .name = std::move(name),
          .inputs = {act("shortcut", x), act("z", x)},
          .fn =
              [](const std::vector<Tensor>& v) {
                const DType dt = v[0].dtype() == DType::bf16 ? DType::f32 : v[0].dtype();
                std::vector<double> s(static_cast<size_t>(v[0].size(0)));
                for (size_t i = 0; i < s.size(); ++i)
                  s[i] = i % 3 == 0 ? 0.0 : i % 3 == 1 ? 2.0 : 1.25;
                const Tensor scale = Tensor::from_vector<double>({v[0].size(0)}, s).to(dt);
                return add_scaled_samples(v[0], v[1], scale.to(v[0].device()));
              },
          .modes = modes,
          .flops = per_element(double(shape_numel(x)), 2, 1),
          .bf16_pending = kPending,
          .f32 = {1e-6, "one f32 multiply-add per element by an exact scale"}};
}

const bool registered = register_cases({
    add_case("small_3x2x2", {3, 2, 2}, kGrad | kBf16 | kDevice),
    add_case("vec8_3x5x7x96", {3, 5, 7, 96}, kDevice | kBf16),
    add_case("vec4_3x5x7x12", {3, 5, 7, 12}, kDevice),
    add_case("rows_cross_vectors_4x3x5", {4, 3, 5}, kDevice | kBf16),
    add_case("convnext_t_s1_b64", {64, 56, 56, 96}, kPerf),

    samples_case("small_3x2x2", {3, 2, 2}, kGrad | kBf16 | kDevice),
    samples_case("vec8_3x5x7x96", {3, 5, 7, 96}, kDevice | kBf16),
    samples_case("vec4_3x5x7x12", {3, 5, 7, 12}, kDevice),
    samples_case("vec1_3x5x7x7", {3, 5, 7, 7}, kDevice),
    // drop_path's shapes below with three different scales (one sample: a kept one)
    samples_case("rows_8x14x14x48", {8, 14, 14, 48}, kDevice),
    samples_case("3x5", {3, 5}, kDevice),
    samples_case("1x7", {1, 7}, kDevice, 1),
    samples_case("convnext_t_s1_b64", {64, 56, 56, 96}, kPerf),

    drop_case("p05_6x2x2x3", {6, 2, 2, 3}, 0.5, 5, kGrad | kBf16 | kDevice),
    drop_case("p04_16x4x4x8", {16, 4, 4, 8}, 0.4, 9, kDevice | kBf16),
    drop_case("p03_8x14x14x48", {8, 14, 14, 48}, 0.3, 3, kDevice),
    drop_case("p05_3x5", {3, 5}, 0.5, 4, kDevice | kBf16),
    drop_case("p02_1x7", {1, 7}, 0.2, 6, kDevice),
    drop_case("p01_convnext_t_s1_b64", {64, 56, 56, 96}, 0.1, 1, kPerf),
});

}  // namespace
}  // namespace hg::test::ops
