// ConvNeXt (Liu et al. 2022, timm's implementation) and WTConvNeXt (Finder et al. 2024: the block's
// depthwise conv replaced by WTConv2d). Same structure, parameter names and init as timm:
//
//   stem      = Conv2d(in_chans, dims[0], k=patch, s=patch) -> LayerNorm2d        "stem.0",
//   "stem.1" stage i   = [downsample: LayerNorm2d -> Conv2d(k=2, s=2)] "stages.i.downsample.{0,1}"
//               (timm's rule: when the stage strides (every stage after the first, and the first
//               after a patch-2 stem; ModelConfig::stage_strides) or its width changes)
//               blocks: x + drop_path(gamma * fc2(gelu(fc1(norm(conv_dw(x))))))
//               "stages.i.blocks.j.*"
//   head      = global avg pool -> LayerNorm2d -> dropout (drop_rate) -> Linear   "head.norm",
//   "head.fc"
//
// Activations are NHWC: input (N, H, W, in_chans), logits (N, num_classes). LayerNorm2d over NHWC
// is a LayerNorm over the last dim, and the MLP is two GEMMs with no permutes.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/random.h"
#include "layers/conv2d.h"
#include "layers/linear.h"
#include "layers/module.h"
#include "layers/norm.h"
#include "layers/wtconv.h"
#include "models/config.h"

namespace hg {

class ConvNeXtBlock : public Module {
 public:
  ConvNeXtBlock(int64_t dim, const ModelConfig& cfg, int wt_levels, double drop_path, Generator& gen,
                DType dtype, Device device, const std::string& name);
  Tensor forward(const Tensor& x, bool training, Generator& gen);
  void collect(const std::string& prefix, std::vector<ParamRef>& out) const override;

  /// How forward() ends the block after fc1 (its ops; `haargrad bench --breakdown` times the same):
  /// fused_residual: gelu_linear_residual (layer scale, no drop path); scaled_drop:
  /// gelu_linear_scaled + add_scaled_samples (layer scale and drop path); plain: gelu_linear +
  /// residual_add, drop path on the branch when it drops (no layer scale).
  enum class End { fused_residual, scaled_drop, plain };
  End end(bool training) const;

  std::unique_ptr<Conv2d> conv_dw;      ///< ConvNeXt: KxK depthwise
  std::unique_ptr<WTConv2d> wt_conv_dw;  ///< WTConvNeXt: WTConv2d (same name "conv_dw")
  LayerNorm norm;
  Linear fc1, fc2;                      ///< "mlp.fc1", "mlp.fc2"
  Tensor gamma;                          ///< layer scale (C); undefined when ls_init_value is nullopt
  double drop_path_prob;
};

class ConvNeXtStage : public Module {
 public:
  ConvNeXtStage(int64_t in_dim, int64_t out_dim, int stride, int depth, const ModelConfig& cfg, int wt_levels,
                const std::vector<double>& drop_path, Generator& gen, DType dtype, Device device,
                const std::string& name);
  Tensor forward(const Tensor& x, bool training, Generator& gen);
  void collect(const std::string& prefix, std::vector<ParamRef>& out) const override;

  std::unique_ptr<LayerNorm> down_norm;  ///< "downsample.0" (absent when stride 1 and same width)
  std::unique_ptr<Conv2d> down_conv;     ///< "downsample.1"
  std::vector<std::unique_ptr<ConvNeXtBlock>> blocks;
};

class ConvNeXt : public Module {
 public:
  /// Builds the model with timm's init drawn from Generator(seed). Throws hg::Error on a bad config.
  ConvNeXt(const ModelConfig& cfg, uint64_t seed = 0, DType dtype = DType::f32,
           Device device = Device::cpu);

  /// x (N, H, W, in_chans) -> logits (N, num_classes). `training` enables drop path (drawn from
  /// the model's generator). The first call warns (spdlog, once) when WTConv levels see no spatial
  /// data at this input size (wtconv_level_advice). When `acts` is given, appends ("act.stem", ...), ("act.stages.i", ...).
  Tensor forward(const Tensor& x, bool training = false,
                 std::vector<std::pair<std::string, Tensor>>* acts = nullptr);
  /// The head on the last stage's output h (N, H, W, C): global average pool, head.norm, the
  /// dropout (drop_rate, in training), head.fc -> logits (N, num_classes) in the parameters'
  /// dtype (f32 for bf16 activations). forward() ends with it; bench --breakdown times it alone.
  Tensor head(const Tensor& h, bool training);
  void collect(const std::string& prefix, std::vector<ParamRef>& out) const override;

  /// fused / reference for every WTConv2d (no effect on ConvNeXt).
  void set_wtconv_mode(WTConvMode mode);
  int64_t num_trainable() const;  ///< elements of trainable tensors
  int64_t num_fixed() const;      ///< elements of fixed buffers (WTConv Haar filters)
  /// forward() gives no level advice: for a copy of a model that gives it (the model EMA), so that
  /// a run says it once.
  void skip_level_advice() { level_advice_given_ = true; }
  /// The WTConv level advice for inputs of `img_size` (the shorter side), now, unless this model
  /// gave it already; forward() then gives none. For a caller whose first forward runs at another
  /// size than the one it reports on (info's reference measurement).
  void give_level_advice(int64_t img_size);

  ModelConfig config;
  DType dtype;  ///< the parameters' dtype (f32 master weights in training)
  Device device;
  /// The activations' dtype (the parameters' dtype unless set): forward casts its input to it and
  /// the logits back to the parameters' dtype. bf16 with f32 parameters is mixed precision (bf16
  /// activations, f32 accumulation; layers/dispatch.h).
  DType compute_dtype;
  Generator drop_gen;  ///< drop-path and head-dropout randomness (its state goes into checkpoints)

  std::unique_ptr<Conv2d> stem_conv;  ///< "stem.0"
  std::unique_ptr<LayerNorm> stem_norm;  ///< "stem.1"
  std::vector<std::unique_ptr<ConvNeXtStage>> stages;
  std::unique_ptr<LayerNorm> head_norm;  ///< "head.norm"
  std::unique_ptr<Linear> head_fc;       ///< "head.fc"

 private:
  bool level_advice_given_ = false;  ///< forward() warns once (wtconv_level_advice) per model
};

}  // namespace hg
