// WTConv2d: the Haar wavelet convolution layer of Finder et al., "Wavelet Convolutions for Large
// Receptive Fields" (ECCV 2024), computed by kernels/wtconv.h in the fused formulation of Aflalo
// et al. (2026) or in the reference order. The operator is stated exactly in
// docs/wtconv-operator.md; this file holds the layer (parameters, init, checkpoint names) and the
// autograd-recording functional op.
#pragma once

#include <string>
#include <vector>

#include "core/random.h"
#include "core/tensor.h"
#include "kernels/wtconv.h"
#include "layers/module.h"

namespace hg {

using kernels::WTConvMode;

/// y = wtconv2d(x, w, stride, mode): x (B, H, W, C) NHWC; y (B, ceil(H/stride), ceil(W/stride), C),
/// same dtype/device as x. The weights follow the PyTorch checkpoint layouts of
/// kernels::WTConvWeights; an undefined base_bias means "no bias".
/// dtypes: x and the weights all f32 (CPU, CUDA) or all f64 (CPU); or mixed precision: x bf16
/// (CPU, CUDA) with f32 weights, read in f32 by the kernels (no bf16 copy of the parameters), y
/// and grad_x bf16, the parameter gradients f32, all arithmetic in f32; the fused mode also
/// stores its level intermediates in bf16 (kernels/wtconv.h says where), on the CPU and CUDA alike.
/// Records one autograd entry (forward and backward kernels of the chosen mode), with gradients
/// for x and every weight that requires one. The entry keeps x; the reference mode also keeps the
/// intermediates the PyTorch reference module's autograd keeps (kernels::WTConvSaved: about 5 N
/// elements of f32 (f64 for f64 x) for an N-element x), until its backward has run, and its
/// backward reads them instead of recomputing the forward. Throws hg::Error on shape / dtype /
/// device mismatch (message names "wtconv2d" and the shapes).
Tensor wtconv2d(const Tensor& x, const kernels::WTConvWeights& w, int stride = 1,
                WTConvMode mode = WTConvMode::fused);

/// The kernels wtconv2d runs, for x's device and dtype, without recording anything (bf16 on the
/// CPU as described above). Used by wtconv2d and by tests that compare devices. w.base_bias must
/// be defined; grad_y must have x's dtype. saved: the reference mode's intermediates, filled by
/// the forward and read by the backward (kernels/wtconv.h, WTConvSaved); none: the backward
/// recomputes them.
Tensor wtconv2d_run_forward(const Tensor& x, const kernels::WTConvWeights& w, int stride,
                            WTConvMode mode, kernels::WTConvSaved* saved = nullptr);
kernels::WTConvGrads wtconv2d_run_backward(const Tensor& x, const kernels::WTConvWeights& w,
                                           const Tensor& grad_y, int stride, bool need_grad_x,
                                           WTConvMode mode,
                                           const kernels::WTConvSaved* saved = nullptr);

/// Hyper-parameters of a WTConv2d besides its channel counts (defaults: WTConvNeXt's).
struct WTConv2dOptions {
  int kernel_size = 5;          ///< odd, >= 1
  int wt_levels = 1;            ///< >= 1
  int stride = 1;               ///< >= 1; subsamples y (adds the reference's stride_filter buffer)
  bool bias = true;             ///< base_conv.bias
  std::string wavelet = "db1";  ///< "db1" or "haar" (the same filters); nothing else
  DType dtype = DType::f32;
  Device device = Device::cpu;
};

class WTConv2d : public Module {
 public:
  /// Creates the parameters with WTConvNeXt's init: conv weights trunc normal std 0.02 (drawn
  /// from `gen`: base_conv first, then wavelet_convs.0, 1, ...), bias 0, base scale 1.0, wavelet
  /// scales 0.1; the fixed Haar filters wt_filter / iwt_filter.
  /// Throws hg::Error (naming the value) when in_channels != out_channels, channels < 1,
  /// kernel_size is even or < 1, wt_levels < 1, stride < 1, or the wavelet is not Haar/db1.
  WTConv2d(int64_t in_channels, int64_t out_channels, const WTConv2dOptions& opt, Generator& gen);

  /// x (B, H, W, C) NHWC -> y (B, ceil(H/stride), ceil(W/stride), C). Throws hg::Error naming the
  /// layer when x is not 4-D or its channel count differs. Levels deeper than the input allows
  /// (a 1x1 map) still run; the model says so once (models/config.h wtconv_level_advice).
  Tensor forward(const Tensor& x);

  /// Tensors in the reference WTConv2d's state_dict order: wt_filter, iwt_filter,
  /// base_conv.weight, base_conv.bias (when bias), base_scale.weight, wavelet_convs.{l}.weight,
  /// wavelet_scale.{l}.weight, stride_filter (when stride > 1). Filters are trainable = false,
  /// scales no_weight_decay = true (and the bias: timm excludes 1-D parameters).
  void collect(const std::string& prefix, std::vector<ParamRef>& out) const override;

  /// Copies checkpoint filters into wt_filter / iwt_filter after checking they are the Haar
  /// filters: shape (4C, 1, 2, 2) and values within 1e-6 of haar_filter(C) (PyTorch builds them
  /// in f32 from 1/sqrt(2)). Throws hg::Error naming the layer, the tensor and the first bad value.
  void load_fixed_filters(const Tensor& wt, const Tensor& iwt);

  /// The weights as the kernels take them (shares storage with the members).
  kernels::WTConvWeights weights() const;

  void set_mode(WTConvMode m) { mode_ = m; }
  WTConvMode mode() const { return mode_; }
  int64_t channels() const { return channels_; }
  int kernel_size() const { return kernel_size_; }
  int wt_levels() const { return static_cast<int>(wavelet_weight.size()); }
  int stride() const { return stride_; }

  std::string name = "WTConv2d";  ///< state_dict prefix set by the model, used in messages

  // Checkpoint tensors (names as in the reference implementation).
  Tensor wt_filter, iwt_filter;        ///< (4C, 1, 2, 2) fixed Haar analysis / synthesis filters
  Tensor base_weight;                  ///< base_conv.weight (C, 1, K, K)
  Tensor base_bias;                    ///< base_conv.bias (C); undefined when bias = false
  Tensor base_scale;                   ///< base_scale.weight (1, C, 1, 1)
  std::vector<Tensor> wavelet_weight;  ///< wavelet_convs.{l}.weight (4C, 1, K, K)
  std::vector<Tensor> wavelet_scale;   ///< wavelet_scale.{l}.weight (1, 4C, 1, 1)
  Tensor stride_filter;  ///< (C, 1, 1, 1) ones, only when stride > 1 (reference buffer)

 private:
  int64_t channels_;
  int kernel_size_, stride_;
  WTConvMode mode_ = WTConvMode::fused;
};

/// The reference WTConv2d's Haar filters for C channels, (4C, 1, 2, 2): filter 4c + s is
/// sub-band s of docs/wtconv-operator.md laid out as [[a, b], [c, d]] weights: s0 = +.5 everywhere,
/// s1 = +.5 top / -.5 bottom, s2 = +.5 left / -.5 right, s3 = +.5 on the diagonal a, d and -.5 on
/// b, c. The synthesis filter (iwt_filter) has the same values (the transform is orthonormal).
Tensor haar_filter(int64_t channels, DType dtype = DType::f32, Device device = Device::cpu);

}  // namespace hg
