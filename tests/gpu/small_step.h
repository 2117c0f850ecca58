// A small model on the GPU with AdamW and a fixed batch, for tests of whole training steps
// (memory, host waits, CUDA graphs).
#pragma once

#include "core/autograd.h"
#include "layers/loss.h"
#include "models/convnext.h"
#include "test_util.h"
#include "train/optimizer.h"

namespace hg::test {

// A small model on the GPU with AdamW, a fixed batch of 4 images of `px` pixels (64 unless given)
// and 10 classes; activations in `compute` (f32 unless given; bf16 is mixed precision).
struct SmallStep {
  ConvNeXt model;
  train::AdamW opt;
  Tensor x, y;
  explicit SmallStep(const char* name, int64_t px = 64, DType compute = DType::f32)
      : SmallStep(config(name), px, compute) {}
  explicit SmallStep(const ModelConfig& cfg, int64_t px = 64, DType compute = DType::f32)
      : model(cfg, 1, DType::f32, Device::cuda), opt(groups(model)) {
    model.compute_dtype = compute;
    x = test::random({4, px, px, 3}, 2, DType::f32).to(Device::cuda);
    y = Tensor::from_vector<int64_t>({4}, {1, 2, 3, 4}).to(Device::cuda);
  }
  // zero_grad, forward in training mode, cross-entropy, backward
  void forward_backward() {
    opt.zero_grad();
    Tensor loss = cross_entropy(model.forward(x, true), y);
    autograd::backward(loss);
  }
  // forward_backward, AdamW step
  void run() {
    forward_backward();
    opt.step();
  }
  static ModelConfig config(const char* name) {
    ModelConfig cfg = model_config(name);
    cfg.num_classes = 10;
    return cfg;
  }
  static std::vector<train::ParamGroup> groups(const ConvNeXt& m) {
    std::vector<ParamRef> params;
    for (const ParamRef& p : m.named_tensors())
      if (p.trainable) params.push_back(p);
    return train::param_groups_weight_decay(params, 1e-3, 0.05);
  }
};
}  // namespace hg::test
