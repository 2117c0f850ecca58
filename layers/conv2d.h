// 2-D convolution on NHWC activations: the autograd op `conv2d` and the `Conv2d` module (timm /
// PyTorch nn.Conv2d semantics and parameter names). Kernels: kernels/conv2d.h.
#pragma once

#include <string>
#include <vector>

#include "core/random.h"
#include "core/tensor.h"
#include "layers/module.h"

namespace hg {

/// y = conv2d(x, weight) + bias, cross-correlation like torch.nn.functional.conv2d but
/// channels-last.
///   x      (N, H, W, C)            NHWC
///   weight (O, C/groups, KH, KW)   PyTorch layout
///   bias   (O), or an undefined Tensor for none
///   -> y   (N, OH, OW, O), OH = (H + 2*padding - KH) / stride + 1 (floor), same for OW.
/// Zero padding on all four sides; stride and padding apply to H and W alike. dtype: f32 or f64 on
/// the CPU, f32 on CUDA, one dtype for all; or bf16 x (CPU, CUDA) with f32 weight and bias, y bf16,
/// f32 arithmetic (layers/dispatch.h); all tensors on one device. Gradients for x, weight, bias.
/// Throws hg::Error naming "conv2d" and the shapes on: wrong ranks, C or O not divisible by groups,
/// weight.size(1) != C/groups, bias size != O, stride < 1, padding < 0, an empty output, or a
/// dtype / device mismatch.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int stride = 1,
              int padding = 0, int groups = 1);

/// Constructor arguments of Conv2d (use designated initializers: {.in_channels = 3, ...}).
struct Conv2dOptions {
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int kernel_size = 1;  ///< square kernel
  int stride = 1;
  int padding = 0;
  int groups = 1;
  bool bias = true;
};

/// nn.Conv2d with timm's ConvNeXt init: weight ~ trunc_normal(std 0.02, [-2, 2]), bias = 0.
/// Tensors (state_dict names): "weight" (O, C/groups, K, K); "bias" (O) when options.bias
/// (no_weight_decay). Throws hg::Error on inconsistent options.
class Conv2d : public Module {
 public:
  Conv2d(const Conv2dOptions& options, Generator& gen, DType dtype = DType::f32,
         Device device = Device::cpu);
  /// x (N, H, W, in_channels) -> (N, OH, OW, out_channels).
  Tensor forward(const Tensor& x) const;
  void collect(const std::string& prefix, std::vector<ParamRef>& out) const override;

  Conv2dOptions options;
  Tensor weight;
  Tensor bias;  ///< undefined when options.bias is false
};

}  // namespace hg
