// state_dict / load_state_dict (see checkpoint.h).
#include "models/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/autograd.h"

namespace hg {

std::vector<std::pair<std::string, Tensor>> state_dict(const Module& m) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const ParamRef& p : m.named_tensors()) out.emplace_back(p.name, p.tensor);
  return out;
}

WeightCount nonfinite_weights(const Module& m) {
  WeightCount c;
  for (const ParamRef& p : m.named_tensors()) {
    for (double v : p.tensor.to_vector<double>()) {
      if (std::isfinite(v)) continue;
      if (c.nonfinite++ == 0) c.first = p.name;
    }
    c.total += p.tensor.numel();
  }
  return c;
}

void check_finite_weights(const Module& m, const std::string& what, const std::string& instead) {
  const WeightCount w = nonfinite_weights(m);
  HG_CHECK(w.nonfinite == 0, what, ": ", w.nonfinite, " of its ", w.total,
           " weights are non-finite (NaN or Inf; the first in '", w.first,
           "'): the run it comes from diverged, or the file was damaged; ", instead);
}

std::vector<std::pair<std::string, Tensor>> timm_state_dict(const ConvNeXt& m) {
  std::vector<std::pair<std::string, Tensor>> out = state_dict(m);
  if (!m.config.conv_mlp) return out;
  const auto ends_with = [](const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  for (auto& [name, t] : out)
    if (t.ndim() == 2 && (ends_with(name, ".mlp.fc1.weight") || ends_with(name, ".mlp.fc2.weight")))
      t = t.reshape({t.size(0), t.size(1), 1, 1});
  return out;
}

std::map<std::string, Tensor> clean_state_dict(std::map<std::string, Tensor> tensors) {
  std::map<std::string, Tensor> out;
  for (auto& [name, t] : tensors)
    out.emplace(name.rfind("module.", 0) == 0 ? name.substr(7) : name, std::move(t));
  return out;
}

void load_state_dict(const Module& m, const std::map<std::string, Tensor>& tensors, bool strict,
                     const std::string& prefix) {
  std::vector<std::string> missing, mis_shaped, bad_fixed, not_float;
  std::set<std::string> used;
  std::vector<std::pair<Tensor, Tensor>> copies;  // (destination, source): applied only if all is well
  for (const ParamRef& p : m.named_tensors()) {
    auto it = tensors.find(prefix + p.name);
    if (it == tensors.end()) {
      missing.push_back(p.name);
      continue;
    }
    used.insert(it->first);
    Tensor src = it->second;
    const Shape& want = p.tensor.shape();
    if (src.shape() != want && src.ndim() == 4 && want.size() == 2 && src.size(2) == 1 && src.size(3) == 1 &&
        src.size(0) == want[0] && src.size(1) == want[1])
      src = src.reshape(want);  // conv_mlp checkpoint (out, in, 1, 1) -> Linear (out, in)
    if (src.shape() != want) {
      mis_shaped.push_back(str(p.name, " (checkpoint ", shape_str(src.shape()), ", model ", shape_str(want), ")"));
      continue;
    }
    // integers or booleans are no weights: converted, a float's bits read as an I32 loaded as
    // values near 1e9, unsaid (a damaged or hand-made file)
    if (!is_floating(src.dtype())) {
      not_float.push_back(str(p.name, " (", dtype_name(src.dtype()), ")"));
      continue;
    }
    if (!p.trainable) {
      std::vector<double> a = src.to_vector<double>(), b = p.tensor.to_vector<double>();
      for (size_t i = 0; i < a.size(); ++i)
        if (std::fabs(a[i] - b[i]) > 1e-6) {
          bad_fixed.push_back(str(p.name, " (element ", i, " is ", a[i], ", expected ", b[i], ")"));
          break;
        }
      continue;
    }
    copies.emplace_back(p.tensor, src);
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, t] : tensors)
    if (name.rfind(prefix, 0) == 0 && !used.count(name)) unexpected.push_back(name.substr(prefix.size()));

  auto join = [](const std::vector<std::string>& v) {
    // the first 8 names: enough to see the pattern without a wall of text
    std::string s;
    for (size_t i = 0; i < v.size() && i < 8; ++i) s += (s.empty() ? "" : ", ") + v[i];
    if (v.size() > 8) s += str(", ... (", v.size() - 8, " more)");
    return s;
  };
  std::string problems;
  if (!missing.empty()) problems += str("\n  missing keys (", missing.size(), "): ", join(missing));
  if (strict && !unexpected.empty()) problems += str("\n  unexpected keys (", unexpected.size(), "): ", join(unexpected));
  if (!mis_shaped.empty()) problems += str("\n  mis-shaped keys (", mis_shaped.size(), "): ", join(mis_shaped));
  if (!bad_fixed.empty()) problems += str("\n  fixed filters that are not the Haar filters: ", join(bad_fixed));
  if (!not_float.empty())
    problems +=
        str("\n  keys that are not floating point (", not_float.size(), "): ", join(not_float));
  if (strict ? !problems.empty()
             : (!mis_shaped.empty() || !bad_fixed.empty() || !not_float.empty()))
    throw Error("load_state_dict: the checkpoint does not match the model:" + problems);

  autograd::NoGradGuard no_grad;
  for (auto& [dst, src] : copies) {
    Tensor d = dst;
    d.copy_(src.dtype() == dst.dtype() ? src : src.to(dst.dtype()));
  }
}

}  // namespace hg
