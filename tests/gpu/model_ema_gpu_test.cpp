// GPU model EMA: the one-launch chunked update equals the CPU loop bit for bit (explicit rounding,
// no FMA), over tensors of many sizes (chunk edges), for both lerp branches; and ModelEma on a
// CUDA model equals ModelEma on the same CPU model.
#include <gtest/gtest.h>

#include "core/autograd.h"
#include "gpu/gpu_util.h"
#include "kernels/ema.h"
#include "test_util.h"
#include "train/config.h"
#include "train/model_ema.h"
#include "train/trainer.h"

using namespace hg;

TEST(GpuModelEma, ChunkedKernelEqualsCpuLoop) {
  HG_REQUIRE_GPU();
  const std::vector<int64_t> sizes = {1,
                                      5,
                                      kernels::kEmaChunk - 1,
                                      kernels::kEmaChunk,
                                      kernels::kEmaChunk + 1,
                                      3 * kernels::kEmaChunk + 17};
  for (float weight : {0.0002f, 0.3f, 0.5f, 0.9f, 1.0f}) {
    std::vector<Tensor> ema_cpu, model_cpu, ema_gpu, model_gpu;
    std::vector<float*> ema_ptrs;
    std::vector<const float*> model_ptrs;
    for (size_t i = 0; i < sizes.size(); ++i) {
      ema_cpu.push_back(test::random({sizes[i]}, 10 + i, DType::f32, -2, 2));
      model_cpu.push_back(test::random({sizes[i]}, 20 + i, DType::f32, -2, 2));
      ema_gpu.push_back(ema_cpu.back().to(Device::cuda));
      model_gpu.push_back(model_cpu.back().to(Device::cuda));
      ema_ptrs.push_back(ema_gpu.back().data<float>());
      model_ptrs.push_back(model_gpu.back().data<float>());
    }
    const auto chunks = kernels::ema_chunks(ema_ptrs, model_ptrs, sizes);
    const auto bytes = static_cast<int64_t>(chunks.size() * sizeof(kernels::EmaChunk));
    Tensor table = Tensor::from_bytes({bytes}, DType::u8, chunks.data(), Device::cuda);
    kernels::cuda::ema_update(static_cast<const kernels::EmaChunk*>(table.data_ptr()),
                              static_cast<int64_t>(chunks.size()), weight);
    for (size_t i = 0; i < sizes.size(); ++i) {
      kernels::cpu::ema_update(ema_cpu[i].data<float>(), model_cpu[i].data<float>(), sizes[i],
                               weight);
      EXPECT_EQ(ema_gpu[i].to_vector<float>(), ema_cpu[i].to_vector<float>())
          << "size " << sizes[i] << " weight " << weight;
    }
  }
}

TEST(GpuModelEma, CudaModelEqualsCpuModel) {
  HG_REQUIRE_GPU();
  train::Config c = train::load_config(std::string(HAARGRAD_SOURCE_DIR) + "/configs/smoke.yaml");
  const ModelConfig mc = train::model_config_from(c);
  ConvNeXt cpu(mc, 5, DType::f32, Device::cpu), gpu(mc, 5, DType::f32, Device::cuda);
  train::ModelEma ec(cpu, 0.9, true), eg(gpu, 0.9, true);
  for (int64_t step = 1; step <= 4; ++step) {
    autograd::NoGradGuard no_grad;
    for (ConvNeXt* m : {&cpu, &gpu}) {  // the same change to both models
      uint64_t i = 0;  // a seed per tensor: same-shaped tensors differ, so a mix-up would show
      for (const ParamRef& p : m->named_tensors())
        if (p.trainable) {
          Tensor t = p.tensor;
          t.copy_(test::random(p.tensor.shape(), 100 + 1000 * step + i++, DType::f32, -1, 1));
        }
    }
    ec.update(cpu, step);
    eg.update(gpu, step);
  }
  const auto a = ec.module().named_tensors(), b = eg.module().named_tensors();
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(a[i].tensor.to_vector<float>(), b[i].tensor.to_vector<float>()) << a[i].name;
}
