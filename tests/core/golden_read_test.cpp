// Reads every golden file (test::golden_dir()) with our safetensors reader and checks that the keys
// documented in shared/golden/README.md are there with consistent shapes, dtypes and values.
// Files are recognised by their keys and metadata, never by name; other files of the same kinds pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "core/safetensors.h"
#include "test_util.h"

using namespace hg;
using json = nlohmann::json;

namespace {

bool has(const safetensors::File& f, const std::string& key) { return f.tensors.count(key) > 0; }
bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

enum class Kind { wtconv_cases, model, unknown };
Kind kind_of(const safetensors::File& f) {
  if (f.metadata.count("cases") && has(f, "case0.x")) return Kind::wtconv_cases;
  if (f.metadata.count("config") && has(f, "input") && has(f, "logits")) return Kind::model;
  return Kind::unknown;
}

std::vector<std::string> golden_files() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(test::golden_dir()))
    if (e.is_regular_file() && e.path().extension() == ".safetensors") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Expects `key` to exist as an F64 tensor of `shape` with only finite values.
void expect_f64(const safetensors::File& f, const std::string& key, const Shape& shape,
                const std::string& file) {
  ASSERT_TRUE(has(f, key)) << file << ": missing " << key;
  const Tensor& t = f.tensors.at(key);
  EXPECT_EQ(t.dtype(), DType::f64) << file << ": " << key;
  EXPECT_EQ(t.shape(), shape) << file << ": " << key;
  for (double v : t.to_vector<double>()) ASSERT_TRUE(std::isfinite(v)) << file << ": " << key;
}

std::vector<int64_t> ints(const json& j) { return j.get<std::vector<int64_t>>(); }

void check_wtconv_cases(const safetensors::File& f, const std::string& file) {
  json cases = json::parse(f.metadata.at("cases"));
  ASSERT_TRUE(cases.is_array() && !cases.empty()) << file;
  std::set<std::string> expected_keys;
  for (size_t i = 0; i < cases.size(); ++i) {
    const json& c = cases[i];
    const int64_t B = c.at("B"), C = c.at("C"), H = c.at("H"), W = c.at("W"), K = c.at("kernel_size"),
                  L = c.at("wt_levels");
    const std::string p = "case" + std::to_string(i) + ".";
    SCOPED_TRACE(file + " " + p);
    // Activations (PyTorch layout NCHW in the file) and the loss weight grad_y.
    for (const char* k : {"x", "y", "grad_y", "grad.x"}) {
      expect_f64(f, p + k, {B, C, H, W}, file);
      expected_keys.insert(p + k);
    }
    // Parameters (shapes of docs/wtconv-operator.md), each with a gradient of the same shape.
    std::vector<std::pair<std::string, Shape>> params{{"base_conv.weight", {C, 1, K, K}},
                                                      {"base_conv.bias", {C}},
                                                      {"base_scale.weight", {1, C, 1, 1}}};
    for (int64_t l = 0; l < L; ++l) {
      params.push_back({"wavelet_convs." + std::to_string(l) + ".weight", {4 * C, 1, K, K}});
      params.push_back({"wavelet_scale." + std::to_string(l) + ".weight", {1, 4 * C, 1, 1}});
    }
    for (const auto& [name, shape] : params) {
      expect_f64(f, p + name, shape, file);
      expect_f64(f, p + "grad." + name, shape, file);
      expected_keys.insert(p + name);
      expected_keys.insert(p + "grad." + name);
    }
    EXPECT_FALSE(has(f, p + "wavelet_convs." + std::to_string(L) + ".weight")) << "more levels than wt_levels";
  }
  // Nothing undocumented: every key belongs to a case described in the metadata.
  for (const std::string& k : f.order) EXPECT_TRUE(expected_keys.count(k)) << file << ": unexpected key " << k;
}

// Mean cross entropy of logits (N, classes) against integer labels, computed here in double.
double mean_cross_entropy(const Tensor& logits, const Tensor& labels) {
  const int64_t N = logits.size(0), K = logits.size(1);
  std::vector<double> z = logits.to_vector<double>();
  std::vector<int64_t> y = labels.to_vector<int64_t>();
  double total = 0;
  for (int64_t n = 0; n < N; ++n) {
    double m = z[static_cast<size_t>(n * K)];
    for (int64_t k = 1; k < K; ++k) m = std::max(m, z[static_cast<size_t>(n * K + k)]);
    double s = 0;
    for (int64_t k = 0; k < K; ++k) s += std::exp(z[static_cast<size_t>(n * K + k)] - m);
    total += m + std::log(s) - z[static_cast<size_t>(n * K + y[static_cast<size_t>(n)])];
  }
  return total / static_cast<double>(N);
}

void check_model_file(const safetensors::File& f, const std::string& file) {
  SCOPED_TRACE(file);
  json cfg = json::parse(f.metadata.at("config"));
  const std::string model = cfg.at("model");
  EXPECT_TRUE(model == "convnext" || model == "wtconvnext") << model;
  std::vector<int64_t> depths = ints(cfg.at("depths")), dims = ints(cfg.at("dims"));
  const int64_t classes = cfg.at("num_classes");
  ASSERT_EQ(depths.size(), dims.size());
  if (model == "wtconvnext") {
    ASSERT_TRUE(cfg.contains("wt_levels"));
    EXPECT_EQ(ints(cfg.at("wt_levels")).size(), depths.size());
  }
  EXPECT_TRUE(f.metadata.count("adamw3")) << "optimizer settings of the adamw3.* steps";

  // Batch: input NCHW, integer labels in range, logits and the scalar loss.
  ASSERT_TRUE(has(f, "input"));
  const Shape in = f.tensors.at("input").shape();
  ASSERT_EQ(in.size(), 4u);
  if (f.metadata.count("input_shape")) {
    EXPECT_EQ(ints(json::parse(f.metadata.at("input_shape"))), in);
  }
  const int64_t N = in[0], H = in[2], W = in[3];
  expect_f64(f, "input", in, file);
  ASSERT_TRUE(has(f, "labels"));
  const Tensor& labels = f.tensors.at("labels");
  EXPECT_EQ(labels.dtype(), DType::i64);
  ASSERT_EQ(labels.shape(), Shape{N});
  for (int64_t y : labels.to_vector<int64_t>()) EXPECT_TRUE(y >= 0 && y < classes) << "label " << y;
  expect_f64(f, "logits", {N, classes}, file);
  ASSERT_TRUE(has(f, "loss"));
  EXPECT_EQ(f.tensors.at("loss").numel(), 1);
  // The data, not just the header: the stored loss is the cross entropy of the stored logits.
  const double loss = f.tensors.at("loss").to_vector<double>()[0];
  EXPECT_NEAR(mean_cross_entropy(f.tensors.at("logits"), labels), loss, 1e-12 * std::max(1.0, loss));

  // Activations: stem at 1/4 resolution, each later stage halves it.
  expect_f64(f, "act.stem", {N, dims[0], H / 4, W / 4}, file);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t s = int64_t(4) << i;
    expect_f64(f, "act.stages." + std::to_string(i), {N, dims[i], H / s, W / s}, file);
  }

  // Parameters: one gradient and one AdamW result of the same shape each, except the fixed Haar
  // filters, which have neither and hold exactly +-0.5.
  int params = 0;
  for (const std::string& key : f.order) {
    if (!starts_with(key, "param.")) continue;
    ++params;
    const std::string name = key.substr(6);
    const Tensor& p = f.tensors.at(key);
    EXPECT_EQ(p.dtype(), DType::f64) << key;
    bool fixed = ends_with(name, "wt_filter");  // wt_filter and iwt_filter
    if (fixed) {
      EXPECT_EQ(model, "wtconvnext") << key;
      EXPECT_FALSE(has(f, "grad." + name)) << "fixed filter with a gradient: " << key;
      for (double v : p.to_vector<double>()) EXPECT_EQ(std::fabs(v), 0.5) << key;
      continue;
    }
    for (const std::string& prefix : {std::string("grad."), std::string("adamw3.")}) {
      ASSERT_TRUE(has(f, prefix + name)) << "missing " << prefix << name;
      EXPECT_EQ(f.tensors.at(prefix + name).shape(), p.shape()) << prefix << name;
    }
  }
  EXPECT_GT(params, 0);
  for (const std::string& key : f.order) {  // and no gradient without its parameter
    if (starts_with(key, "grad.")) {
      EXPECT_TRUE(has(f, "param." + key.substr(5))) << key;
    }
    if (starts_with(key, "adamw3.") && key != "adamw3.losses") {
      EXPECT_TRUE(has(f, "param." + key.substr(7))) << key;
    }
  }
  // The blocks the config describes, and no more.
  for (size_t i = 0; i < depths.size(); ++i) {
    std::string stage = "param.stages." + std::to_string(i) + ".blocks.";
    auto block_exists = [&](int64_t j) {
      std::string b = stage + std::to_string(j) + ".";
      return std::any_of(f.order.begin(), f.order.end(), [&](const std::string& k) { return starts_with(k, b); });
    };
    for (int64_t j = 0; j < depths[i]; ++j) EXPECT_TRUE(block_exists(j)) << "stage " << i << " block " << j;
    EXPECT_FALSE(block_exists(depths[i])) << "stage " << i << " has more than " << depths[i] << " blocks";
  }
  expect_f64(f, "param.head.fc.weight", {classes, dims.back()}, file);
  // adamw3.losses: the loss before each of the three steps; the first is the file's loss.
  expect_f64(f, "adamw3.losses", {3}, file);
  EXPECT_NEAR(f.tensors.at("adamw3.losses").to_vector<double>()[0], loss, 1e-10 * std::max(1.0, loss));
}

}  // namespace

TEST(GoldenRead, EveryFileIsReadableAndConsistent) {
  std::vector<std::string> files = golden_files();
  ASSERT_FALSE(files.empty()) << "no .safetensors in " << test::golden_dir();
  int wtconv = 0, model = 0;
  std::set<std::string> models;
  for (const std::string& file : files) {
    safetensors::File f = safetensors::load(file);
    ASSERT_EQ(f.order.size(), f.tensors.size()) << file;
    switch (kind_of(f)) {
      case Kind::wtconv_cases:
        ++wtconv;
        check_wtconv_cases(f, file);
        break;
      case Kind::model:
        ++model;
        models.insert(json::parse(f.metadata.at("config")).at("model").get<std::string>());
        check_model_file(f, file);
        break;
      case Kind::unknown:
        ADD_FAILURE() << file << ": neither WTConv cases nor a model file";
    }
  }
  EXPECT_GE(wtconv, 1) << "no WTConv case file in " << test::golden_dir();
  EXPECT_GE(model, 1) << "no model file in " << test::golden_dir();
}

TEST(GoldenRead, ReserializingAGoldenFileReproducesItsTensors) {
  // Our writer + reader keep every golden tensor bit-exact (the files come from another writer).
  for (const std::string& file : golden_files()) {
    safetensors::File f = safetensors::load(file);
    std::vector<std::pair<std::string, Tensor>> all;
    for (const std::string& k : f.order) all.emplace_back(k, f.tensors.at(k));
    safetensors::File g = safetensors::parse(safetensors::serialize(all, f.metadata), "reserialized " + file);
    EXPECT_EQ(g.order, f.order) << file;
    EXPECT_EQ(g.metadata, f.metadata) << file;
    for (const std::string& k : f.order) {
      const Tensor &a = f.tensors.at(k), &b = g.tensors.at(k);
      ASSERT_EQ(a.nbytes(), b.nbytes()) << k;
      EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()), 0) << file << ": " << k;
    }
  }
}
