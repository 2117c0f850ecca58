// Model configurations: timm's ConvNeXt variants and the reference WTConvNeXt (Finder et al. 2024),
// with every field settable. Field names and defaults follow timm's `ConvNeXt.__init__`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hg {

struct ModelConfig {
  std::string model = "convnext_tiny";   ///< registry name it came from (for logs / checkpoints)
  bool wtconv = false;                   ///< blocks use WTConv2d instead of a KxK depthwise conv
  std::vector<int> depths{3, 3, 9, 3};   ///< blocks per stage
  std::vector<int> dims{96, 192, 384, 768};  ///< channels per stage
  int kernel_size = 7;                   ///< depthwise (or WTConv) kernel size, odd
  std::vector<int> wt_levels{5, 4, 3, 2};    ///< WTConv levels per stage (wtconv only)
  double drop_path_rate = 0.0;           ///< stochastic depth, linear 0 -> rate over all blocks
  double drop_rate = 0.0;                ///< dropout before head.fc in training (timm's drop_rate)
  std::optional<double> ls_init_value = 1e-6;  ///< layer scale gamma init; nullopt = no gamma (timm: None)
  int num_classes = 1000;
  int in_chans = 3;
  int patch_size = 4;                    ///< stem: patch_size x patch_size conv, stride patch_size
  double head_init_scale = 1.0;          ///< head.fc weight and bias are multiplied by this at init
  int default_img_size = 224;            ///< the input size (pixels) the variant is meant for
  /// the evaluation crop fraction timm's pretrained config gives the variant, which timm's
  /// train.py and validate.py take for crop_pct None: 0.95 for convnext_{nano,tiny,small} (their
  /// default weights, .in12k_ft_in1k), 0.875 (timm's default) for the other ConvNeXts and every
  /// WTConvNeXt (the reference registers no pretrained config), 1.0 for wtconvnext_fmnist
  double default_crop_pct = 0.875;
  /// timm's conv_mlp (its atto .. nano): timm's MLP is then two 1x1 convs, so checkpoints and
  /// exports hold fc1 / fc2 weights as (out, in, 1, 1) (timm_state_dict); our MLP is a Linear over
  /// the channels-last pixels either way, the same function.
  bool conv_mlp = false;

  /// Throws hg::Error naming the field when a value is out of range, sizes disagree, there are more
  /// than 4 stages (timm's ConvNeXt builds 4), or the strides would pass timm's output stride 32
  /// (where timm dilates instead of downsampling, which haargrad does not implement).
  void validate() const;

  /// Stride of each stage's downsample, by timm's rule: stage 0 strides 2 only after a patch-2
  /// stem, every later stage 2. A stage has a downsample (LayerNorm2d + Conv2d, kernel 2 when the
  /// stride is 2, else 1) when its stride is > 1 or its width differs from the previous one.
  std::vector<int> stage_strides() const;
  /// patch_size x the stage strides: the input side (pixels) that maps to one pixel at the end,
  /// which is also the smallest input side the model takes (every stage keeps >= 1x1).
  int total_stride() const;
  /// Throws hg::Error when an img_size x img_size input cannot pass the model, naming the minimum.
  void check_img_size(int64_t img_size) const;
  /// JSON object text of the fields (stored in checkpoints' __metadata__.config).
  std::string to_json() const;
};

/// A named variant: convnext_{atto,femto,pico,nano,tiny,small,base} and
/// wtconvnext_{atto,...,base} (kernel 5, wt_levels (5,4,3,2)), plus wtconvnext_fmnist (a small model
/// for 28x28 inputs). Throws hg::Error listing the known names for an unknown one.
ModelConfig model_config(const std::string& name);
std::vector<std::string> model_names();

/// Forward multiply-accumulates for one image of img_size x img_size (analytic count).
double forward_macs(const ModelConfig& cfg, int img_size);

/// Parameter elements of the model `cfg` describes, counted from the config (no model is built):
/// trainable = what ConvNeXt::num_trainable() reports, fixed = the WTConv Haar filter buffers
/// (ConvNeXt::num_fixed()).
struct ParamCount {
  int64_t trainable = 0, fixed = 0;
};
ParamCount param_count(const ModelConfig& cfg);

/// Spatial side of each stage's maps for an img_size x img_size input (stem: patch_size stride,
/// then each stage's stride, stage_strides()).
std::vector<int64_t> stage_sizes(const ModelConfig& cfg, int64_t img_size);

/// For a WTConv model at img_size, the one-line advice when some WTConv level sees no spatial data,
/// else "": a stage whose input map is already 1x1 (every level, and the base kernel, see just the
/// centre tap: a larger img_size, a smaller patch_size or one stage fewer would change that), or
/// levels beyond the first whose map is 1x1 (their input is 1x1, so they add parameters but no
/// receptive field: the advice names the wt_levels that gives the same). ConvNeXt models: "".
std::string wtconv_level_advice(const ModelConfig& cfg, int64_t img_size);

}  // namespace hg
