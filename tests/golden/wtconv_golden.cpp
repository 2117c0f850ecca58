// Golden checker for WTConv2d layer cases (shared/golden/README.md, docs/wtconv-operator.md): runs
// every case of a file through layers/wtconv.h in both modes and compares y and every gradient.
#include <nlohmann/json.hpp>

#include "core/autograd.h"
#include "golden.h"
#include "layers/wtconv.h"
#include "test_util.h"

namespace hg::test {
namespace {

const char* mode_name(WTConvMode m) { return m == WTConvMode::fused ? "fused" : "reference"; }

/// One case's tensors, converted to the requested dtype / device and to NHWC for activations.
struct CaseTensors {
  Tensor x, grad_y;
  kernels::WTConvWeights w;
  std::vector<std::string> param_names;  ///< checkpoint names, in the order of params()
  std::vector<Tensor> params() const {
    std::vector<Tensor> p{w.base_weight, w.base_bias, w.base_scale};
    for (int l = 0; l < w.levels(); ++l) p.push_back(w.wavelet_weight[l]);
    for (int l = 0; l < w.levels(); ++l) p.push_back(w.wavelet_scale[l]);
    return p;
  }
};

const Tensor& get(const safetensors::File& f, const std::string& key) {
  auto it = f.tensors.find(key);
  HG_CHECK(it != f.tensors.end(), "wtconv golden: key '", key, "' missing from the file");
  return it->second;
}

Tensor nchw_to_nhwc(const Tensor& t) { return t.permute({0, 2, 3, 1}).contiguous(); }

}  // namespace

bool is_wtconv_cases(const safetensors::File& f) {
  return f.metadata.count("cases") && f.tensors.count("case0.x") && f.tensors.count("case0.y");
}

std::vector<GoldenCheck> check_wtconv_cases(const safetensors::File& f, DType dtype,
                                            Device device) {
  HG_CHECK(is_wtconv_cases(f), "check_wtconv_cases: not a WTConv2d cases file");
  HG_CHECK(dtype == DType::f32 || dtype == DType::f64 || dtype == DType::bf16,
           "check_wtconv_cases: dtype ", dtype_name(dtype), " not supported");
  // bf16 (mixed precision): x and grad_y rounded to bf16 move every result by up to ~2^-9 of the
  // sum of the |terms| behind it (a few times the largest result), and y / grad_x are rounded to
  // bf16 once more; the fused mode also rounds its coefficient planes, level outputs, level
  // gradients and level filters to bf16 (kernels/wtconv.h), a few 2^-9 of the level terms more:
  // 2e-2 of the largest element (measured on the golden cases: fused <= 9.4e-3, reference
  // <= 4.4e-3). f32 and f64 keep the project's bounds.
  const double tol = dtype == DType::f64 ? 1e-10 : dtype == DType::f32 ? 1e-5 : 2e-2;
  // mixed precision keeps the parameters f32
  const DType param_dtype = dtype == DType::bf16 ? DType::f32 : dtype;
  nlohmann::json cases = nlohmann::json::parse(f.metadata.at("cases"));
  HG_CHECK(cases.is_array() && !cases.empty(),
           "check_wtconv_cases: metadata 'cases' is not a list");

  std::vector<GoldenCheck> out;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string p = str("case", i, ".");
    const int L = cases[i].at("wt_levels").get<int>();
    const int stride = cases[i].value("stride", 1);
    // clone: to() may return the file's own tensor, whose gradient must not accumulate.
    auto load = [&](const std::string& key, DType dt) {
      return get(f, p + key).to(dt).to(device).clone();
    };
    auto load_param = [&](const std::string& key) { return load(key, param_dtype); };

    for (WTConvMode mode : {WTConvMode::fused, WTConvMode::reference}) {
      CaseTensors c;
      c.x = nchw_to_nhwc(load("x", dtype));
      c.grad_y = nchw_to_nhwc(load("grad_y", dtype));
      c.w.base_weight = load_param("base_conv.weight");
      c.w.base_bias = load_param("base_conv.bias");
      c.w.base_scale = load_param("base_scale.weight");
      c.param_names = {"base_conv.weight", "base_conv.bias", "base_scale.weight"};
      for (int l = 0; l < L; ++l) {
        c.w.wavelet_weight.push_back(load_param(str("wavelet_convs.", l, ".weight")));
        c.param_names.push_back(str("wavelet_convs.", l, ".weight"));
      }
      for (int l = 0; l < L; ++l) {
        c.w.wavelet_scale.push_back(load_param(str("wavelet_scale.", l, ".weight")));
        c.param_names.push_back(str("wavelet_scale.", l, ".weight"));
      }
      c.x.requires_grad_();
      for (Tensor& t : c.params()) t.requires_grad_();

      // loss = sum(y * grad_y), as the file states: backward seeded with grad_y.
      Tensor y = wtconv2d(c.x, c.w, stride, mode);
      autograd::backward(y, c.grad_y);

      const std::string tag =
          str(" [", mode_name(mode), " ", dtype_name(dtype), " ", device_name(device), "]");
      out.push_back({p + "y" + tag, rel_error(y, nchw_to_nhwc(get(f, p + "y"))), tol});
      out.push_back(
          {p + "grad.x" + tag, rel_error(c.x.grad(), nchw_to_nhwc(get(f, p + "grad.x"))), tol});
      std::vector<Tensor> params = c.params();
      for (size_t k = 0; k < params.size(); ++k) {
        const std::string key = p + "grad." + c.param_names[k];
        out.push_back({key + tag, rel_error(params[k].grad(), get(f, key)), tol});
      }
    }
  }
  return out;
}

}  // namespace hg::test
