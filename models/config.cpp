// Model variants (timm's depths / dims) and the analytic MAC count.
#include "models/config.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/similar_names.h"

namespace hg {
namespace {

struct Variant {
  std::vector<int> depths, dims;
  bool conv_mlp = false;
  double crop_pct = 0.875;  // timm's pretrained config of the variant's default weights
};
// timm convnext.py: atto..nano set conv_mlp (their MLP is two 1x1 convs); our MLP is a Linear over
// the channels-last tensor, the same function: checkpoints of those variants differ only in the fc
// weight shape (out, in, 1, 1), which timm_state_dict writes and the checkpoint loader accepts.
const std::map<std::string, Variant>& variants() {
  static const std::map<std::string, Variant> v = {
      {"atto", {{2, 2, 6, 2}, {40, 80, 160, 320}, true}},
      {"femto", {{2, 2, 6, 2}, {48, 96, 192, 384}, true}},
      {"pico", {{2, 2, 6, 2}, {64, 128, 256, 512}, true}},
      {"nano", {{2, 2, 8, 2}, {80, 160, 320, 640}, true, 0.95}},  // timm's .in12k_ft_in1k
      {"tiny", {{3, 3, 9, 3}, {96, 192, 384, 768}, false, 0.95}},
      {"small", {{3, 3, 27, 3}, {96, 192, 384, 768}, false, 0.95}},
      {"base", {{3, 3, 27, 3}, {128, 256, 512, 1024}}},
  };
  return v;
}

template <typename T>
std::string json_list(const std::vector<T>& v) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << ']';
  return os.str();
}

int64_t conv_out(int64_t n, int k, int s, int p) { return (n + 2 * p - k) / s + 1; }

}  // namespace

namespace {

// timm's ConvNeXt builds its stages with output_stride 32: a stage that would stride 2 once the
// running stride has reached 32 is dilated instead. Returns the stage index where that happens for
// this patch size and stage count, or -1.
int first_dilated_stage(int patch_size, size_t stages) {
  int64_t curr = patch_size;
  for (size_t i = 0; i < stages; ++i) {
    const int stride = (curr == 2 || i > 0) ? 2 : 1;
    if (curr >= 32 && stride > 1) return static_cast<int>(i);
    curr *= stride;
  }
  return -1;
}

}  // namespace

void ModelConfig::validate() const {
  HG_CHECK(!depths.empty() && depths.size() == dims.size(), "model config: depths ",
           shape_str(depths), " and dims ", shape_str(dims), " must have the same, non-zero length");
  HG_CHECK(depths.size() <= 4, "model config: ", depths.size(), " stages (depths ", shape_str(depths),
           "); timm's ConvNeXt has at most 4");
  for (int d : depths) HG_CHECK(d >= 0, "model config: depths must be >= 0, got ", shape_str(depths));
  for (int d : dims) HG_CHECK(d > 0, "model config: dims must be > 0, got ", shape_str(dims));
  HG_CHECK(kernel_size > 0 && kernel_size % 2 == 1, "model config: kernel_size must be odd and positive, got ",
           kernel_size);
  if (wtconv) {
    HG_CHECK(wt_levels.size() == depths.size(), "model config: wt_levels ", shape_str(wt_levels),
             " needs one entry per stage (", depths.size(), ")");
    for (int l : wt_levels) HG_CHECK(l >= 1, "model config: wt_levels must be >= 1, got ", shape_str(wt_levels));
  }
  HG_CHECK(drop_path_rate >= 0 && drop_path_rate < 1, "model config: drop_path_rate must be in [0, 1), got ",
           drop_path_rate);
  HG_CHECK(drop_rate >= 0 && drop_rate < 1, "model config: drop_rate must be in [0, 1), got ",
           drop_rate);
  // as the f32 parameter holds it: 1e39 is a finite double and an infinite float
  HG_CHECK(!ls_init_value || std::isfinite(static_cast<float>(*ls_init_value)),
           "model config: ls_init_value must be finite as an f32 (|v| < 3.4e38), got ",
           *ls_init_value);
  HG_CHECK(num_classes > 0, "model config: num_classes must be > 0, got ", num_classes);
  HG_CHECK(in_chans > 0, "model config: in_chans must be > 0, got ", in_chans);
  HG_CHECK(patch_size > 0, "model config: patch_size must be > 0, got ", patch_size);
  const int dilated = first_dilated_stage(patch_size, depths.size());
  if (dilated >= 0) {
    int largest = patch_size;
    while (largest > 1 && first_dilated_stage(largest, depths.size()) >= 0) --largest;
    throw Error(str("model config: patch_size ", patch_size, " with ", depths.size(), " stages passes a total stride ",
                    "of 32 before stage ", dilated, "; timm dilates such stages instead of downsampling (output ",
                    "stride 32), which haargrad does not implement: use patch_size <= ", largest, " or fewer stages"));
  }
}

std::vector<int> ModelConfig::stage_strides() const {
  std::vector<int> strides;
  int64_t curr = patch_size;
  for (size_t i = 0; i < depths.size(); ++i) {
    const int stride = (curr == 2 || i > 0) ? 2 : 1;  // timm ConvNeXt.__init__
    strides.push_back(stride);
    curr *= stride;
  }
  return strides;
}

int ModelConfig::total_stride() const {
  int total = patch_size;
  for (int s : stage_strides()) total *= s;
  return total;
}

void ModelConfig::check_img_size(int64_t img_size) const {
  const int total = total_stride();
  if (img_size >= total) return;
  std::string how = str("patch_size ", patch_size);
  for (int s : stage_strides())
    if (s > 1) how += str(" x ", s);
  throw Error(str("img_size ", img_size, " is below the total stride ", total, " of model ", model, " (", how,
                  "): the last stage would get no pixel; the smallest img_size for this model is ", total));
}

std::string ModelConfig::to_json() const {
  std::ostringstream os;
  os.precision(17);
  os << "{\"model\": \"" << (wtconv ? "wtconvnext" : "convnext") << "\", \"name\": \"" << model
     << "\", \"depths\": " << json_list(depths) << ", \"dims\": " << json_list(dims)
     << ", \"num_classes\": " << num_classes << ", \"kernel_size\": " << kernel_size;
  if (wtconv) os << ", \"wt_levels\": " << json_list(wt_levels);
  os << ", \"in_chans\": " << in_chans << ", \"patch_size\": " << patch_size
     << ", \"ls_init_value\": ";
  if (ls_init_value)
    os << *ls_init_value;
  else
    os << "null";
  os << ", \"drop_path_rate\": " << drop_path_rate << ", \"drop_rate\": " << drop_rate
     << ", \"conv_mlp\": " << (conv_mlp ? "true" : "false") << "}";
  return os.str();
}

ModelConfig model_config(const std::string& name) {
  ModelConfig c;
  c.model = name;
  if (name == "wtconvnext_fmnist") {  // small WTConvNeXt for 28x28 grayscale (the default main job)
    c.wtconv = true;
    c.depths = {2, 2};
    c.dims = {48, 96};
    c.kernel_size = 3;        // maps of 7x7 and less: a 5x5 kernel is mostly padding
    c.wt_levels = {2, 2};     // level maps 4x4, 2x2 (stage 0) and 2x2, 1x1 of a 2x2 map (stage 1)
    c.patch_size = 4;         // 7x7 -> 3x3 maps: a third stage would be 1x1
    c.ls_init_value = 1.0;    // short schedules: see configs/fashion_mnist.yaml
    c.in_chans = 1;
    c.num_classes = 10;
    c.default_img_size = 28;
    c.default_crop_pct = 1.0;  // the 28 x 28 images as they are
    return c;
  }
  std::string family, size;
  if (name.rfind("wtconvnext_", 0) == 0) {
    family = "wtconvnext";
    size = name.substr(11);
  } else if (name.rfind("convnext_", 0) == 0) {
    family = "convnext";
    size = name.substr(9);
  }
  auto it = variants().find(size);
  if (family.empty() || it == variants().end()) {
    // timm's "convnext_tiny.fb_in1k" (a pretrained tag), "timm/..." or "hf-hub:timm/...": an
    // architecture with weights timm downloads
    std::string arch = name;
    if (arch.rfind("hf-hub:", 0) == 0) arch = arch.substr(7);
    if (const size_t slash = arch.rfind('/'); slash != std::string::npos)
      arch = arch.substr(slash + 1);
    arch = arch.substr(0, arch.find('.'));
    const std::vector<std::string> names = model_names();
    if (arch != name && std::find(names.begin(), names.end(), arch) != names.end())
      throw Error(str("unknown model '", name, "': timm's name of ", arch,
                      " with the pretrained weights timm downloads; haargrad builds model ", arch,
                      " and reads weights from initial_checkpoint, a .safetensors file (in Python: "
                      "safetensors.torch.save_file(timm.create_model('",
                      name, "', pretrained=True).state_dict(), 'w.safetensors'))"));
    std::string known;
    for (const auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
    const std::vector<std::string> close = similar_names(name, model_names());
    throw Error(str("unknown model '", name, "'",
                    close.empty() ? std::string() : str(" (did you mean '", close[0], "'?)"),
                    "; known models: ", known));
  }
  c.depths = it->second.depths;
  c.dims = it->second.dims;
  c.conv_mlp = it->second.conv_mlp;
  // the reference WTConvNeXt registers no pretrained config: timm's default, 0.875
  if (family == "convnext") c.default_crop_pct = it->second.crop_pct;
  if (family == "wtconvnext") {
    c.wtconv = true;
    c.kernel_size = 5;
    c.wt_levels = {5, 4, 3, 2};
  }
  return c;
}

std::vector<std::string> model_names() {
  // smallest first within a family (timm's order: atto, femto, pico, nano, tiny, small, base), not
  // the map's alphabetical order: by stem width, then depth
  std::vector<std::pair<std::string, const Variant*>> sizes;
  for (const auto& [size, v] : variants()) sizes.emplace_back(size, &v);
  auto key = [](const Variant& v) {
    int64_t depth = 0;
    for (int64_t d : v.depths) depth += d;
    return std::make_pair(v.dims[0], depth);
  };
  std::sort(sizes.begin(), sizes.end(),
            [&](const auto& a, const auto& b) { return key(*a.second) < key(*b.second); });
  std::vector<std::string> names;
  for (const char* family : {"convnext_", "wtconvnext_"})
    for (const auto& sv : sizes) names.push_back(family + sv.first);
  names.push_back("wtconvnext_fmnist");
  return names;
}

double forward_macs(const ModelConfig& cfg, int img_size) {
  double macs = 0;
  int64_t h = conv_out(img_size, cfg.patch_size, cfg.patch_size, 0), w = h;
  macs += double(h * w) * cfg.dims[0] * cfg.in_chans * cfg.patch_size * cfg.patch_size;  // stem
  const int K2 = cfg.kernel_size * cfg.kernel_size;
  const std::vector<int> strides = cfg.stage_strides();
  for (size_t s = 0; s < cfg.depths.size(); ++s) {
    const int64_t c = cfg.dims[s];
    const int64_t c_in = s > 0 ? cfg.dims[s - 1] : cfg.dims[0];
    if (strides[s] > 1 || c_in != c) {  // downsample: kernel 2 stride 2, or a 1x1 conv
      const int k = strides[s] > 1 ? 2 : 1;
      h = conv_out(h, k, strides[s], 0);
      w = conv_out(w, k, strides[s], 0);
      macs += double(h * w) * c * c_in * k * k;
    }
    double dw = double(h * w) * c * K2;  // depthwise (or WTConv base conv)
    if (cfg.wtconv) {
      int64_t lh = h, lw = w;
      for (int l = 0; l < cfg.wt_levels[s]; ++l) {
        lh = (lh + 1) / 2;
        lw = (lw + 1) / 2;
        dw += double(lh * lw) * 4 * c * K2;
      }
    }
    const double mlp = double(h * w) * c * 4 * c * 2;
    macs += cfg.depths[s] * (dw + mlp);
  }
  macs += double(cfg.dims.back()) * cfg.num_classes;  // head fc
  return macs;
}

ParamCount param_count(const ModelConfig& cfg) {
  cfg.validate();
  ParamCount n;
  const int64_t k2 = int64_t(cfg.kernel_size) * cfg.kernel_size;
  const int64_t d0 = cfg.dims[0];
  n.trainable += int64_t(cfg.in_chans) * d0 * cfg.patch_size * cfg.patch_size + d0;  // stem conv
  n.trainable += 2 * d0;                                                               // stem norm
  const std::vector<int> strides = cfg.stage_strides();
  for (size_t s = 0; s < cfg.depths.size(); ++s) {
    const int64_t c = cfg.dims[s], in = s == 0 ? d0 : cfg.dims[s - 1];
    if (in != c || strides[s] > 1) {  // downsample: norm + conv, kernel 2 when striding, else 1
      const int64_t k = strides[s] > 1 ? 2 : 1;
      n.trainable += 2 * in + in * c * k * k + c;
    }
    int64_t block = 2 * c + (c * 4 * c + 4 * c) + (4 * c * c + c);  // norm, fc1, fc2
    if (cfg.ls_init_value) block += c;  // gamma whenever ls_init_value is set (timm: not None)
    int64_t fixed = 0;
    if (cfg.wtconv) {
      // base conv (weight + bias) and scale; per level a (4C, 1, K, K) conv and a (1, 4C) scale
      block += c * k2 + c + c + cfg.wt_levels[s] * (4 * c * k2 + 4 * c);
      fixed = 2 * 4 * c * 4;  // wt_filter and iwt_filter, (4C, 1, 2, 2) each
    } else {
      block += c * k2 + c;  // depthwise conv weight + bias
    }
    n.trainable += cfg.depths[s] * block;
    n.fixed += cfg.depths[s] * fixed;
  }
  const int64_t last = cfg.dims.back();
  n.trainable += 2 * last + last * cfg.num_classes + cfg.num_classes;  // head norm + fc
  return n;
}

std::vector<int64_t> stage_sizes(const ModelConfig& cfg, int64_t img_size) {
  std::vector<int64_t> sizes;
  int64_t h = conv_out(img_size, cfg.patch_size, cfg.patch_size, 0);
  const std::vector<int> strides = cfg.stage_strides();
  for (size_t s = 0; s < cfg.depths.size(); ++s) {
    if (strides[s] > 1) h = conv_out(h, 2, 2, 0);
    sizes.push_back(h);
  }
  return sizes;
}

std::string wtconv_level_advice(const ModelConfig& cfg, int64_t img_size) {
  if (!cfg.wtconv) return "";
  const std::vector<int64_t> sizes = stage_sizes(cfg, img_size);
  std::vector<std::string> flat_stages;   // stages whose input is already 1x1
  std::vector<int> useful(sizes.size());  // levels that see more than one pixel
  bool extra_levels = false;
  for (size_t s = 0; s < sizes.size(); ++s) {
    if (cfg.depths[s] == 0) {
      useful[s] = cfg.wt_levels[s];
      continue;
    }
    if (sizes[s] <= 1) flat_stages.push_back(std::to_string(s));
    // Level l takes a ceil(h / 2^l) map: the first level whose input is 1x1 or smaller only scales
    // the same pixel, and so does every level after it.
    int64_t in = sizes[s];
    int keep = 0;
    for (int l = 0; l < cfg.wt_levels[s] && in > 1; ++l, in = (in + 1) / 2) ++keep;
    useful[s] = std::max(keep, 1);
    if (useful[s] < cfg.wt_levels[s]) extra_levels = true;
  }
  std::string msg;
  if (extra_levels) {
    std::string levels;
    for (size_t s = 0; s < useful.size(); ++s) levels += str(s ? ", " : "", useful[s]);
    msg += str("WTConv levels past a 1x1 map add parameters but no receptive field at img_size ", img_size,
               " (stage maps ", shape_str(sizes), "): wt_levels [", levels, "] gives the same receptive field");
  }
  if (!flat_stages.empty()) {
    std::string list;
    for (size_t i = 0; i < flat_stages.size(); ++i) list += (i ? ", " : "") + flat_stages[i];
    msg += str(msg.empty() ? "" : "; ", flat_stages.size() == 1 ? "stage " : "stages ", list, " of ", cfg.model,
               " work on 1x1 maps at img_size ", img_size, " (stage maps ", shape_str(sizes),
               "), where every WTConv level and kernel sees only its centre: a larger img_size, a smaller "
               "patch_size or one stage fewer (depths / dims / wt_levels) gives them spatial data");
  }
  return msg;
}

}  // namespace hg
