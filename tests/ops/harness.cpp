// The op test harness: registry, inputs, comparison and the grad / bf16 / device modes (harness.h).
#include "harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <sstream>

#include "core/autograd.h"
#include "core/debug_fill.h"
#include "test_util.h"

#ifdef HAARGRAD_WITH_CUDA
#include "kernels/cuda/context.h"
#endif

namespace hg::test::ops {

Input act(std::string name, Shape shape, double lo, double hi) {
  return {std::move(name), std::move(shape), Role::activation, lo, hi, true, 0};
}
Input param(std::string name, Shape shape, double lo, double hi) {
  return {std::move(name), std::move(shape), Role::parameter, lo, hi, true, 0};
}
Input frozen(Input in) {
  in.grad = false;
  return in;
}
Input labels(std::string name, int64_t n, int64_t classes) {
  return {std::move(name), {n}, Role::labels, 0, 0, false, classes};
}

std::string OpCase::shapes() const {
  std::string s;
  for (const Input& in : inputs) s += (s.empty() ? "" : " ") + in.name + shape_str(in.shape);
  return s;
}

// ---- registry ----------------------------------------------------------------------------------

namespace {
std::vector<OpCase>& mutable_registry() {
  static std::vector<OpCase> cases;
  return cases;
}
}  // namespace

const std::vector<OpCase>& registry() { return mutable_registry(); }

bool register_cases(std::vector<OpCase> cases) {
  std::vector<OpCase>& all = mutable_registry();
  for (OpCase& c : cases) {
    for (const OpCase& o : all)
      HG_CHECK(o.id() != c.id(), "op harness: case ", c.id(), " registered twice");
    all.push_back(std::move(c));
  }
  return true;
}

std::vector<const OpCase*> cases_with(Mode mode) {
  std::vector<const OpCase*> out;
  for (const OpCase& c : registry())
    if (c.modes & mode) out.push_back(&c);
  return out;
}

// ---- inputs ------------------------------------------------------------------------------------

namespace {

uint64_t input_seed(const OpCase& c, size_t i) { return c.seed * 1000003 + 17 * i + 1; }

Tensor random_labels(int64_t n, int64_t classes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t& y : v) y = static_cast<int64_t>(rng() % static_cast<uint64_t>(classes));
  return Tensor::from_vector<int64_t>({n}, v);
}

// The values of input i in f64 (labels: i64), before any rounding.
Tensor base_values(const OpCase& c, size_t i) {
  const Input& in = c.inputs[i];
  if (in.role == Role::labels) return random_labels(in.shape[0], in.classes, input_seed(c, i));
  return test::random(in.shape, input_seed(c, i), DType::f64, in.lo, in.hi);
}

Tensor leaf(Tensor t, const Input& in) {
  if (in.grad && in.role != Role::labels) t.requires_grad_();
  return t;
}

}  // namespace

std::vector<Tensor> make_inputs(const OpCase& c, DType dtype, Device device) {
  autograd::NoGradGuard ng;  // making the inputs is not recorded
  std::vector<Tensor> out;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    Tensor t = base_values(c, i);
    if (c.inputs[i].role != Role::labels) t = t.to(dtype);
    out.push_back(leaf(t.to(device), c.inputs[i]));
  }
  return out;
}

std::vector<Tensor> make_bf16_inputs(const OpCase& c, Device device) {
  autograd::NoGradGuard ng;
  std::vector<Tensor> out;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    Tensor t = base_values(c, i);
    if (c.inputs[i].role != Role::labels) {
      t = t.to(DType::bf16);
      if (c.inputs[i].role == Role::parameter) t = t.to(DType::f32);  // exact: bf16 widens
    }
    out.push_back(leaf(t.to(device), c.inputs[i]));
  }
  return out;
}

std::vector<Tensor> convert_inputs(const OpCase& c, const std::vector<Tensor>& inputs,
                                   DType dtype, Device device, bool keep_dtype) {
  autograd::NoGradGuard ng;
  std::vector<Tensor> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor t = inputs[i];
    if (!keep_dtype && c.inputs[i].role != Role::labels) t = t.to(dtype);
    t = t.to(device).clone();  // a fresh leaf even when nothing changed
    out.push_back(leaf(t, c.inputs[i]));
  }
  return out;
}

// ---- results -----------------------------------------------------------------------------------

Result forward_backward(const OpCase& c, const std::vector<Tensor>& inputs, const Tensor& gy) {
  Tensor y = c.fn(inputs);
  Tensor g;
  {
    autograd::NoGradGuard ng;
    HG_CHECK(gy.shape() == y.shape(), c.id(), ": upstream gradient ", gy.describe(), " for ",
             y.describe());
    g = gy.to(y.dtype()).to(y.device());
  }
  autograd::backward(y, g);
  Result r;
  r.y_device = y.device();
  r.y = y.to(Device::cpu);
  for (const Tensor& t : inputs)
    r.grads.push_back(t.grad().defined() ? t.grad().to(Device::cpu) : Tensor());
  return r;
}

namespace {
/// One bf16 ulp at |v|: 2^(e - 7) for |v| in [2^e, 2^(e+1)) (bf16 keeps 8 significant bits).
double ulp_bf16(double v) {
  v = std::fabs(v);
  if (v < 1.1754943508222875e-38) return std::ldexp(1.0, -133);  // the subnormal spacing
  return std::ldexp(1.0, std::ilogb(v) - 7);
}
}  // namespace

double bf16_ulp_excess(const Tensor& a, const Tensor& b) {
  HG_CHECK(a.shape() == b.shape(), "bf16_ulp_excess: shapes differ: ", a.describe(), " vs ",
           b.describe());
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double excess = 0, max_ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = std::fabs(x[i] - y[i]);
    if (std::isnan(d)) return INFINITY;  // a poisoned element never written, or a NaN computed
    excess = std::max(excess, d - ulp_bf16(std::max(std::fabs(x[i]), std::fabs(y[i]))));
    max_ref = std::max(max_ref, std::fabs(y[i]));
  }
  if (max_ref == 0) return INFINITY;  // an all-zero reference tests nothing
  return excess / max_ref;
}

std::vector<Diff> compare(const OpCase& c, const Result& got, const Result& want, Tol out, Tol grad,
                          const std::map<std::string, Tol>& grad_overrides,
                          const std::optional<Tol>& bf16_ulp) {
  std::vector<Diff> d;
  auto add = [&](const std::string& what, const Tensor& a, const Tensor& b, Tol bound,
                 bool overridden) {
    if (a.defined() != b.defined()) {
      d.push_back({what + (a.defined() ? " (unexpected)" : " (missing)"), INFINITY, bound.value});
      return;
    }
    if (!a.defined()) return;
    if (a.shape() != b.shape()) {
      d.push_back({what + " shape " + shape_str(a.shape()) + " vs " + shape_str(b.shape()),
                   INFINITY, bound.value});
      return;
    }
    if (bf16_ulp && !overridden && a.dtype() == DType::bf16 && b.dtype() == DType::bf16) {
      d.push_back({what + " (beyond 1 bf16 ulp)", bf16_ulp_excess(a, b), bf16_ulp->value});
      return;
    }
    d.push_back({what, test::rel_error(a, b), bound.value});
  };
  add("y", got.y, want.y, out, false);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    auto o = grad_overrides.find(c.inputs[i].name);
    const bool overridden = o != grad_overrides.end();
    add("grad " + c.inputs[i].name, got.grads.at(i), want.grads.at(i),
        overridden ? o->second : grad, overridden);
  }
  return d;
}

std::string format_diffs(const std::vector<Diff>& diffs) {
  std::vector<Diff> v = diffs;
  std::stable_sort(v.begin(), v.end(), [](const Diff& a, const Diff& b) { return !a.ok() && b.ok(); });
  std::ostringstream os;
  os.precision(3);
  for (const Diff& x : v)
    os << (os.tellp() > 0 ? ", " : "") << x.what << ' ' << x.error
       << (x.ok() ? " < " : " NOT < ") << x.bound;
  return os.str();
}

namespace {

bool all_ok(const std::vector<Diff>& diffs) {
  return std::all_of(diffs.begin(), diffs.end(), [](const Diff& x) { return x.ok(); });
}

/// Fills (poison + guard bytes) every allocation on `device` while it lives; reports the guards
/// found damaged by allocations freed in its lifetime through damaged().
class DebugFill {
 public:
  explicit DebugFill(Device device)
      : device_(device), saved_(memory::debug_fill(device)), before_(memory::guard_violations()) {
    memory::set_debug_fill(device, true);
  }
  ~DebugFill() { memory::set_debug_fill(device_, saved_); }
  int64_t damaged() const { return memory::guard_violations() - before_; }

 private:
  Device device_;
  bool saved_;
  int64_t before_;
};

// The upstream gradient for an output of `shape`: fixed random values, rounded through `dtype` so
// every side of a comparison sees the same numbers.
Tensor upstream(const OpCase& c, const Shape& shape, DType dtype) {
  return test::random(shape, c.seed * 7919 + 5, DType::f64).to(dtype).to(DType::f64);
}

// Each gradient must come in its input's dtype: bf16 for bf16 activations, f32 for the f32 master
// parameters (never rounded to bf16 on the way into the optimizer).
std::string grad_dtype_failures(const OpCase& c, const Result& got, const std::vector<Tensor>& inputs) {
  std::string f;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (got.grads[i].defined() && got.grads[i].dtype() != inputs[i].dtype())
      f += str("grad ", c.inputs[i].name, " is ", dtype_name(got.grads[i].dtype()), ", its input ",
               dtype_name(inputs[i].dtype()), "; ");
  return f;
}

Shape output_shape(const OpCase& c, const std::vector<Tensor>& inputs) {
  autograd::NoGradGuard ng;
  return c.fn(inputs).shape();
}

}  // namespace

// ---- grad --------------------------------------------------------------------------------------

void run_grad(const OpCase& c) {
  DebugFill fill(Device::cpu);
  {
    std::vector<Tensor> in = make_inputs(c, DType::f64, Device::cpu);
    const double worst = test::gradcheck(c.fn, in, c.grad_step.value, c.seed + 7);
    EXPECT_LT(worst, c.grad.value) << c.id() << " (" << c.shapes() << "): worst relative error of "
                                   << "the gradients; bound: " << c.grad.reason;
    for (size_t i = 0; i < in.size(); ++i) {
      if (!c.inputs[i].grad) {
        EXPECT_FALSE(in[i].grad().defined())
            << c.id() << ": frozen input " << c.inputs[i].name << " got a gradient";
      }
    }
    EXPECT_EQ(autograd::tape_size(), 0u) << c.id();
  }
  EXPECT_EQ(fill.damaged(), 0) << c.id() << ": a CPU kernel wrote past the end of a buffer";
}

// ---- bf16 on the CPU ---------------------------------------------------------------------------

std::string check_bf16_cpu(const OpCase& c) {
  DebugFill fill(Device::cpu);
  std::string failure;
  try {
    const std::vector<Tensor> in_b = make_bf16_inputs(c, Device::cpu);
    const std::vector<Tensor> in_f = convert_inputs(c, in_b, DType::f32, Device::cpu);
    const Tensor gy = upstream(c, output_shape(c, in_f), DType::bf16);
    const Result ref = forward_backward(c, in_f, gy);
    Result got;
    try {
      got = forward_backward(c, in_b, gy);
    } catch (const Error& e) {
      autograd::clear_tape();
      return str("the op on bf16 inputs throws: ", e.what());
    }
    if (got.y.dtype() != c.bf16_output)
      failure += str("output dtype ", dtype_name(got.y.dtype()), ", want ",
                     dtype_name(c.bf16_output), "; ");
    failure += grad_dtype_failures(c, got, in_b);
    // The output must be the f32 result rounded once to the output dtype.
    Result want = ref;
    {
      autograd::NoGradGuard ng;
      want.y = ref.y.to(c.bf16_output);
    }
    std::vector<Diff> d = compare(c, got, want, c.bf16_out, c.bf16_grad, c.bf16_grad_overrides);
    if (!all_ok(d)) failure += format_diffs(d);
    else std::printf("  [bf16 cpu] %-40s %s\n", c.id().c_str(), format_diffs(d).c_str());
  } catch (const Error& e) {
    autograd::clear_tape();
    failure += str("error: ", e.what());
  }
  if (fill.damaged() > 0) failure += str("; ", fill.damaged(), " buffer(s) written past the end");
  return failure;
}

// ---- device ------------------------------------------------------------------------------------

bool gpu_available() {
#ifdef HAARGRAD_WITH_CUDA
  return cuda::available();
#else
  return false;
#endif
}

const std::vector<Precision>& precisions() {
  static const std::vector<Precision> p = {
      {"f32", DType::f32, false}, {"tf32", DType::f32, true}, {"bf16", DType::bf16, false}};
  return p;
}

namespace {
#ifdef HAARGRAD_WITH_CUDA
class Tf32Scope {
 public:
  explicit Tf32Scope(bool on) : saved_(cuda::allow_tf32()) { cuda::set_allow_tf32(on); }
  ~Tf32Scope() { cuda::set_allow_tf32(saved_); }

 private:
  bool saved_;
};
#endif
}  // namespace

std::string check_device(const OpCase& c, const Precision& p) {
#ifndef HAARGRAD_WITH_CUDA
  (void)c;
  (void)p;
  return "built without CUDA";
#else
  if (!cuda::available()) return "no CUDA device";
  Tf32Scope tf32(p.tf32);
  std::string failure;
  int64_t damaged = 0;
  // The CUDA run: inputs copied from `cpu_inputs` (keeping their dtypes), forward, backward, all
  // under the debug fill; the guards are checked as the buffers are freed, inside its lifetime.
  auto run_cuda = [&](const std::vector<Tensor>& cpu_inputs, const Tensor& gy) {
    DebugFill fill(Device::cuda);
    Result r;
    {
      const std::vector<Tensor> in = convert_inputs(c, cpu_inputs, DType::f32, Device::cuda, true);
      r = forward_backward(c, in, gy);
      cuda::synchronize();
    }
    damaged += fill.damaged();
    return r;
  };
  try {
    Result ref, got;
    Tol out = c.f32, grad = c.f32;
    std::map<std::string, Tol> overrides = c.f32_grad_overrides;
    std::optional<Tol> bf16_ulp;
    DType want_dtype = DType::f32;
    if (p.storage == DType::bf16) {
      // CUDA bf16 against the CPU bf16 reference, on the same inputs (activations bf16).
      const std::vector<Tensor> in_cpu = make_bf16_inputs(c, Device::cpu);
      const Tensor gy = upstream(c, output_shape(c, in_cpu), DType::bf16);
      try {
        ref = forward_backward(c, in_cpu, gy);
      } catch (const Error& e) {
        autograd::clear_tape();
        return str("the CPU bf16 reference throws: ", e.what());
      }
      got = run_cuda(in_cpu, gy);
      failure += grad_dtype_failures(c, got, in_cpu);
      out = grad = c.bf16_device;
      overrides.clear();
      if (c.bf16_device_param_grad)
        for (const Input& in : c.inputs)
          if (in.role == Role::parameter) overrides.emplace(in.name, *c.bf16_device_param_grad);
      bf16_ulp = c.bf16_device_ulp;
      want_dtype = c.bf16_output;
    } else {
      // CUDA f32 (or TF32 math) against the f64 CPU op on the same f32 values.
      const std::vector<Tensor> in32 = make_inputs(c, DType::f32, Device::cpu);
      const std::vector<Tensor> in64 = convert_inputs(c, in32, DType::f64, Device::cpu);
      const Tensor gy = upstream(c, output_shape(c, in64), DType::f32);
      ref = forward_backward(c, in64, gy);
      got = run_cuda(in32, gy);
      if (p.tf32 && c.tensor_cores) {
        out = grad = c.tf32;
        overrides.clear();
      }
    }
    if (got.y_device != Device::cuda) failure += "output not on the GPU; ";
    if (got.y.dtype() != want_dtype)
      failure += str("output dtype ", dtype_name(got.y.dtype()), ", want ", dtype_name(want_dtype),
                     "; ");
    std::vector<Diff> d = compare(c, got, ref, out, grad, overrides, bf16_ulp);
    if (!all_ok(d)) failure += format_diffs(d);
    else std::printf("  [%s cuda] %-40s %s\n", p.name, c.id().c_str(), format_diffs(d).c_str());
  } catch (const Error& e) {
    autograd::clear_tape();
    failure += str("error: ", e.what());
  }
  if (damaged > 0) failure += str("; ", damaged, " CUDA buffer(s) written past the end");
  return failure;
#endif
}

}  // namespace hg::test::ops
