// The op test harness: one registry of op cases, run in four modes.
//
// A case is one autograd-recording op (a layer function of layers/*.h or core/ops.h, or a short
// composition of them) on fixed input shapes and parameters, with its tolerances (each with a
// one-line reason) and its FLOP count. The modes:
//   grad    f64 central finite differences on the CPU against the autograd gradients of every
//           input that requires one (test::gradcheck); inputs marked frozen must get no gradient.
//   bf16    the CPU bf16 reference (layers/dispatch.h): the op on bf16 activations must give
//           round_bf16(the f32 op on the same bf16-rounded values), and its gradients must be
//           within a stated bound of the f32 op's gradients.
//   device  the op on Device::cuda against the CPU: f32 and tf32 against the f64 op on the same
//           f32 inputs, bf16 against the CPU bf16 reference (relative to the largest element, or
//           element by element within one bf16 ulp where a case asks: bf16_device_ulp); every
//           CUDA allocation poisoned (0xFF, NaN in every float dtype) and followed by guard bytes
//           (memory::set_debug_fill).
//   perf    forward and forward+backward timed after warm-up (CUDA events, or the host clock on
//           the CPU), reported as ms, GB/s, TFLOP/s and the percentage of measured ceilings.
// Adding an op (or a shape) is one entry in a cases_*.cpp file; adding a dtype is one entry in
// kPrecisions (harness.cpp). The gtest driver (registry_test.cpp) turns every case into tests:
// `Ops/OpGrad.*`, `Ops/OpBf16.*` (CPU, run in CI) and `Gpu/OpDevice.*` (label gpu, skip without
// a GPU); `test_ops --perf` prints the perf table (perf.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace hg::test::ops {

/// A bound and the reason it is what it is (shown when a check fails).
struct Tol {
  double value;
  const char* reason;
};

/// What an input is, which decides its dtype in each mode.
enum class Role : uint8_t {
  activation,  ///< f64 in grad mode, f32 on the device, bf16 in the bf16 modes
  parameter,   ///< like an activation, except that it stays f32 (the master weight) in bf16 modes
  labels,      ///< int64 class indices in [0, classes), never differentiated
};

struct Input {
  std::string name;
  Shape shape;
  Role role = Role::activation;
  double lo = -1.0, hi = 1.0;  ///< uniform values in [lo, hi)
  bool grad = true;            ///< false: a constant; the op must leave its gradient undefined
  int64_t classes = 0;         ///< labels only
};

Input act(std::string name, Shape shape, double lo = -1.0, double hi = 1.0);
Input param(std::string name, Shape shape, double lo = -1.0, double hi = 1.0);
/// An input the op does not differentiate (same dtype rules as an activation).
Input frozen(Input in);
Input labels(std::string name, int64_t n, int64_t classes);

/// Which modes run a case (a bit set).
enum Mode : unsigned { kGrad = 1, kBf16 = 2, kDevice = 4, kPerf = 8 };

/// Floating-point operations of one forward and one backward (a multiply-add counts 2).
struct Flops {
  double fwd = 0, bwd = 0;
};

/// The op: outputs one tensor from the inputs (in the order of OpCase::inputs).
using OpFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Default bounds; a case overrides one by giving its own Tol (with its own reason).
inline constexpr Tol kGradTol{1e-8, "f64 central differences, step 1e-6: ~1e-10 round-off"};
inline constexpr Tol kF32Tol{1e-5, "fp32 layer tolerance (project rule) against the f64 oracle"};
inline constexpr Tol kTf32GemmTol{
    5e-3, "TF32 keeps 10 mantissa bits: 2^-11 relative rounding per product"};
inline constexpr Tol kBf16OutTol{
    1e-12, "bit-identical: a CPU bf16 op is f32 math rounded once to bf16 (layers/dispatch.h)"};
inline constexpr Tol kBf16GradTol{
    1.0 / 256, "f32 math rounded once to bf16: half an ulp, at most 2^-8 of the largest"};
// For a composition (or a fused op) that keeps an intermediate in bf16.
inline constexpr Tol kBf16OutIntermediateTol{
    1.0 / 128, "an intermediate rounded to bf16 on the way: up to one more ulp (2^-7)"};
inline constexpr Tol kBf16GradIntermediateTol{
    1.0 / 64, "gradients through an intermediate rounded to bf16: a few ulps (2^-6)"};
inline constexpr Tol kBf16DeviceTol{
    2e-2, "f32 math, bf16 storage, other summation orders: a sum near a rounding boundary rounds "
          "the other way (2^-8) and feeds later roundings"};

struct OpCase {
  std::string op;    ///< the op or family ("conv2d"); test names are op_name
  std::string name;  ///< the shape / parameter variant, unique within op
  std::vector<Input> inputs;
  OpFn fn;
  unsigned modes = kGrad | kBf16;
  Flops flops;
  /// Uses GEMM / convolution math that TF32 changes (the tf32 device run uses `tf32`).
  bool tensor_cores = false;
  /// bf16 not implemented by the layer yet: the bf16 checks still run and report their failure,
  /// but do not fail the test (a pending case that passes fails: flip the flag).
  bool bf16_pending = false;
  /// The op has no CUDA implementation (core/ops.h's sum / mean / sum_all reduce on the CPU only):
  /// the case never runs in device mode and the registry does not ask the op for a device case.
  bool cpu_only = false;
  /// dtype of the output in the bf16 modes (f32 for a loss: cross-entropy stays f32).
  DType bf16_output = DType::bf16;

  Tol grad = kGradTol;
  Tol grad_step{1e-6, "central differences: truncation ~step^2, round-off ~1e-16/step"};
  Tol f32 = kF32Tol;
  Tol tf32 = kTf32GemmTol;  ///< used only when tensor_cores; otherwise tf32 runs use f32
  Tol bf16_out = kBf16OutTol;
  Tol bf16_grad = kBf16GradTol;
  Tol bf16_device = kBf16DeviceTol;
  /// The bf16 device run's bound for the parameters' gradients (f32 master gradients: both sides
  /// f32 sums of the same bf16 values) instead of bf16_device; unset: bf16_device.
  std::optional<Tol> bf16_device_param_grad = std::nullopt;
  /// The bf16 device run's rule for its bf16 tensors (y and the activations' gradients) instead of
  /// bf16_device: element by element, |cuda - cpu| <= one bf16 ulp of max(|cuda|, |cpu|) + value
  /// x max |cpu| (both sides round the same f32 value up to an f32 summation order; the measured
  /// error is the excess over one ulp, relative to max |cpu|). Unset: bf16_device.
  std::optional<Tol> bf16_device_ulp = std::nullopt;
  /// Per-input device bounds (input name -> bound), e.g. a reduction's gradient in f32.
  std::map<std::string, Tol> f32_grad_overrides = {};
  /// Per-input bounds of the bf16 CPU mode (input name -> bound), e.g. gradients through many
  /// intermediates rounded to bf16.
  std::map<std::string, Tol> bf16_grad_overrides = {};
  uint64_t seed = 1;

  std::string id() const { return op + "_" + name; }
  /// "x[2, 3, 4] weight[5, 4]" for tables and messages.
  std::string shapes() const;
};

/// Every registered case, in registration order (cases_*.cpp register at static-init time).
const std::vector<OpCase>& registry();
/// The cases of registry() that run in `mode`.
std::vector<const OpCase*> cases_with(Mode mode);
/// Adds cases; used as `static const bool registered = register_cases({...});`. Throws on a
/// duplicate id.
bool register_cases(std::vector<OpCase> cases);

// ---- FLOP counts (a multiply-add counts 2) -------------------------------------------------------

/// y = x W^T (+ b) with x (M, K), W (N, K): forward 2MKN (+ MN for the bias); backward dX and dW,
/// 4MKN (+ MN for the bias gradient).
inline Flops gemm_flops(double M, double K, double N, bool bias) {
  return {2 * M * K * N + (bias ? M * N : 0), 4 * M * K * N + (bias ? M * N : 0)};
}
/// `fwd` and `bwd` operations per element of an n-element elementwise / row op.
inline Flops per_element(double n, double fwd, double bwd) { return {n * fwd, n * bwd}; }

// ---- the inputs of a case ----------------------------------------------------------------------

// Every input set of a case holds the same values (drawn from c.seed), up to the rounding of its
// dtype; each tensor is a fresh leaf that requires grad where Input::grad says so.

/// Activations and parameters in `dtype` (f64 or f32) on `device`; labels i64.
std::vector<Tensor> make_inputs(const OpCase& c, DType dtype, Device device);
/// The bf16 set: activations bf16, parameters f32 holding bf16-representable values, labels i64.
std::vector<Tensor> make_bf16_inputs(const OpCase& c, Device device);
/// `inputs` copied to `device`, every floating tensor converted to `dtype` (bf16 widens exactly),
/// or kept in its own dtype when keep_dtype.
std::vector<Tensor> convert_inputs(const OpCase& c, const std::vector<Tensor>& inputs,
                                   DType dtype, Device device, bool keep_dtype = false);

// ---- results -----------------------------------------------------------------------------------

/// Output and gradients of one forward + backward, copied to the CPU.
struct Result {
  Tensor y;
  Device y_device = Device::cpu;  ///< where the op put y
  std::vector<Tensor> grads;  ///< per input; undefined where the input needs no gradient
};
/// Runs fn on `inputs`, then backward with upstream gradient `gy` (y's shape; converted to y's
/// dtype and device), and copies everything to the CPU. Throws what the op throws.
Result forward_backward(const OpCase& c, const std::vector<Tensor>& inputs, const Tensor& gy);

/// One compared tensor: its name and the relative error (max |a - b| / max |b|).
struct Diff {
  std::string what;
  double error;
  double bound;
  bool ok() const { return error < bound; }  ///< strict, as the tests' EXPECT_LT
};
/// Compares y and every gradient of `got` against `want` with bound `out` for y and `grad` (or
/// an override) for gradients; a gradient that is defined on one side only is an error. With
/// `bf16_ulp`, a tensor that is bf16 on both sides (and has no override) is compared element by
/// element instead (bf16_ulp_excess, bound bf16_ulp).
std::vector<Diff> compare(const OpCase& c, const Result& got, const Result& want, Tol out, Tol grad,
                          const std::map<std::string, Tol>& grad_overrides = {},
                          const std::optional<Tol>& bf16_ulp = std::nullopt);
/// max over elements of max(0, |a - b| - one bf16 ulp of max(|a|, |b|)) / max |b|: the excess over
/// one bf16 ulp relative to the largest reference element; infinite where an element is NaN or
/// every element of b is 0 (nothing tested).
double bf16_ulp_excess(const Tensor& a, const Tensor& b);
/// "y 3e-06 NOT < 1e-06, grad x 2e-07 < 1e-05" (the failing ones first).
std::string format_diffs(const std::vector<Diff>& diffs);

// ---- modes (they catch the op's errors and report them) -------------------------------------------

/// The grad mode; failures are gtest failures.
void run_grad(const OpCase& c);
/// The bf16 CPU check; returns "" on success, else why it failed.
std::string check_bf16_cpu(const OpCase& c);

/// A device precision: f32, tf32 (f32 storage, TF32 tensor-core math) or bf16.
struct Precision {
  const char* name;
  DType storage;
  bool tf32;
};
/// The device precisions in the order they run.
const std::vector<Precision>& precisions();
/// The device check of one precision; "" on success, else why it failed. Needs a GPU.
std::string check_device(const OpCase& c, const Precision& p);
bool gpu_available();

}  // namespace hg::test::ops
