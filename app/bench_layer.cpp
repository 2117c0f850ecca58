// `haargrad bench-layer`: one WTConv2d layer (fused and reference-order CUDA kernels) against our
// depthwise 7x7 and 5x5 convolutions (and cuDNN's with --cudnn-dw: conv2d's
// Conv2dBackend::cudnn) at the WTConvNeXt stage shapes (../shared/docs/anchors.md):
// training step (forward + backward) and inference medians over CUDA events after warm-up, extra
// device memory of a training step, and for WTConv the I/O model's bytes and achieved bandwidth
// against a measured device-to-device copy. Kernel-level calls (no autograd tape) for all four.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "app/bench_report.h"
#include "app/bench_run.h"
#include "app/command.h"
#include "app/device_ceilings.h"
#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/memory.h"
#include "core/random.h"
#include "core/tensor.h"
#include "kernels/wtconv.h"
#include "train/trainer.h"

#ifdef HAARGRAD_WITH_CUDA
#include "kernels/conv2d.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/context.h"
#endif

namespace hg::app {
namespace {

struct Options {
  int batch = 64, iters = 30, warmup = 5, K = 5;
  int only_channels = 0;  ///< run only the stage shape with this C (0: all four)
  std::string output;
  std::string precision = "fp32";  ///< fp32, tf32 (fp32 with TF32 allowed) or bf16 activations
  bool cudnn_dw = false;           ///< also time cuDNN's depthwise convs ("cudnn dw KxK" rows)
};

#ifdef HAARGRAD_WITH_CUDA
// ---- the I/O model: HBM elements read + written, kernel by kernel, as the kernels are written ----
// Each tensor a kernel touches counts once per kernel (halo re-reads of neighbours are assumed to hit
// L1/L2; the weight-gradient kernels run their K row shifts side by side for that reason). Parameters
// and the small per-block partial sums are left out (< 0.1% here). See docs/fused-wtconv.md.
struct IoCount {
  double forward = 0, step = 0;  // elements; step = forward + backward (with grad_x)
};

std::vector<double> level_sizes(double B, int H, int W, double C, int L) {
  std::vector<double> n;  // n[l] = B * h_l * w_l * C, l = 0..L
  for (int l = 0; l <= L; ++l) {
    n.push_back(B * H * W * C);
    H = (H + 1) / 2;
    W = (W + 1) / 2;
  }
  return n;
}

// The fused path (its level convs split: kernels/wtconv.h): each level's coefficients written by
// one Haar pass (read n_l, write 4 n_{l+1} and the LL n_{l+1}), then a depthwise conv over them.
// Levels from sf (forward) and sb (backward) on, when below L, are a level tail
// (kernels::cuda::wtconv_tail_level): one plane kernel reads ll_s (backward: and gR_s) and writes
// its f32 term on grid s, which the synthesis reads: n_s f32 values, counted as rt n_s elements
// of the activations' type (rt = 4 / its size in bytes: 2 for bf16, 1 for f32).
// From level hf on (kernels::cuda::wtconv_haar_conv_from) a level's Haar pass and conv are one
// kernel that builds the coefficients in shared memory: the forward reads n_l and writes t_l and
// the LL band;
// the backward's pass over G reads n_l and writes gt_l and G's LL band, and its weight gradient
// (haar_wgrad_kernel, taken with haar_conv_kernel) forms both coefficient sets again from x and G
// (reads 2 n_l) and writes x's LL band.
IoCount io_fused_split(int B, int H, int W, int C, int L, int sf, int sb, double rt, int hf) {
  const auto n = level_sizes(B, H, W, C, L);
  auto haar = [&](int l) { return n[l] + 4 * n[l + 1] + (l + 1 < L ? n[l + 1] : 0); };
  auto synth = [&](int s) {  // base conv + synthesis of the split levels and of the tail's term
    double v = 2 * n[0] + (s < L ? rt * n[s] : 0);
    for (int l = 0; l < s; ++l) v += 4 * n[l + 1];
    return v;
  };
  double fwd = sf < L ? n[sf] + rt * n[sf] : 0;                // the tail
  for (int l = 0; l < sf; ++l)  // Haar pass + conv (read, write), or the two in one kernel
    fwd += l >= hf ? haar(l) : haar(l) + 8 * n[l + 1];
  fwd += synth(sf);
  // synthesis of grad_x on G; base weight grad (x and G); the tail
  double bwd = synth(sb) + 2 * n[0] + (sb < L ? 2 * n[sb] + rt * n[sb] : 0);
  for (int l = 0; l < sb; ++l) {
    const double ll = l + 1 < L ? n[l + 1] : 0;  // a next level's LL band
    if (l >= hf)  // Haar of G + conv^T; the weight gradient over x and G
      bwd += (n[l] + 4 * n[l + 1] + ll) + (2 * n[l] + ll);
    else  // Haar of G and of x; conv^T; the weight gradient over both coefficient sets
      bwd += 2 * haar(l) + 8 * n[l + 1] + 8 * n[l + 1];
  }
  return {fwd, fwd + bwd};
}

/// The whole-plane kernels (kernels/wtconv.h, wtconv_plane_path): the forward reads x and writes
/// y; the backward reads x and G and writes grad_x (weight-gradient partials omitted, as above).
IoCount io_fused(int B, int H, int W, int C, int L, bool plane_fwd, bool plane_bwd, int sf, int sb,
                 double rt, int hf) {
  const IoCount split = io_fused_split(B, H, W, C, L, sf, sb, rt, hf);
  const double N = double(B) * H * W * C;
  const double fwd = plane_fwd ? 2 * N : split.forward;
  const double bwd = plane_bwd ? 3 * N : split.step - split.forward;
  return {fwd, fwd + bwd};
}

IoCount io_reference(int B, int H, int W, int C, int L) {
  const auto n = level_sizes(B, H, W, C, L);
  double lv = 0;  // per level: haar (read LL, write 4), dwconv (4 + 4), scale (4 + 4)
  for (int l = 0; l < L; ++l) lv += n[l] + 4 * n[l + 1] + 8 * n[l + 1] + 8 * n[l + 1];
  const double base = 2 * n[0];  // dwconv + bias
  double fwd = lv + base;
  for (int l = L - 1; l >= 0; --l)
    fwd += (l < L - 1 ? 9 * n[l + 1] : 0) + 4 * n[l + 1] + n[l];  // add_ll, ihaar
  fwd += 2 * n[0] + 3 * n[0];                                      // scale base, add -> y
  double bwd = 0;  // coeff / conv / base come from the forward (WTConvSaved), not recomputed
  bwd += 2 * n[0] + 2 * n[0] + 2 * n[0];  // base scale grad, G * scale, base weight grad
  for (int l = 0; l < L; ++l)
    bwd += n[l] + 4 * n[l + 1]      // haar of the gradient
           + 8 * n[l + 1]           // scale grad (conv, gT)
           + 8 * n[l + 1]           // gT * scale
           + 8 * n[l + 1]           // weight grad (coeff, g_conv)
           + 8 * n[l + 1];          // transposed dwconv
  for (int l = L - 1; l >= 0; --l) bwd += (l < L - 1 ? 9 * n[l + 1] : 0) + 4 * n[l + 1] + n[l];
  bwd += 2 * n[0] + 3 * n[0];  // transposed base conv, add
  return {fwd, fwd + bwd};
}


Tensor random_gpu(const Shape& shape, Generator& gen, double std) {
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& x : v) x = static_cast<float>(gen.normal(0.0, std));
  return Tensor::from_vector(shape, v, Device::cuda);
}

/// Median milliseconds of fn over `iters` CUDA-event-timed runs after `warmup` runs.
double median_ms(const std::function<void()>& fn, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) fn();
  cudaEvent_t a, b;
  HG_CUDA_CHECK(cudaEventCreate(&a));
  HG_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int i = 0; i < iters; ++i) {
    HG_CUDA_CHECK(cudaEventRecord(a, cuda::stream()));
    fn();
    HG_CUDA_CHECK(cudaEventRecord(b, cuda::stream()));
    HG_CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0;
    HG_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  HG_CUDA_CHECK_NOTHROW(cudaEventDestroy(a));
  HG_CUDA_CHECK_NOTHROW(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

/// Peak live device bytes of one call of fn beyond what was live before it and `kept` bytes.
int64_t extra_bytes(const std::function<int64_t()>& fn) {
  cuda::synchronize();
  const int64_t before = memory::stats(Device::cuda).total_current;
  memory::reset_peak(Device::cuda);
  const int64_t kept = fn();
  cuda::synchronize();
  return memory::stats(Device::cuda).total_peak - before - kept;
}

struct Row {
  std::string impl;
  int C, HW, L;
  double train_ms, infer_ms, extra_mib;
  double io_step_gb = 0, io_fwd_gb = 0;  // model bytes, 0 for cuDNN
};

/// One stage shape of the benchmark: C channels, HW x HW maps, L WTConv levels.
struct StageShape {
  int C, HW, L;
};

/// The WTConv rows of one stage shape, fused and reference order (a mode that cannot run this
/// dtype prints why and is skipped): training step and inference medians, extra memory, and the
/// I/O model's bytes (printed as elements per N).
void wtconv_rows(const Options& o, const StageShape& s, const Tensor& x, const Tensor& gy,
                 Generator& gen, std::vector<Row>& rows) {
  const int B = o.batch, K = o.K;
  const DType act = x.dtype();
  kernels::WTConvWeights w;
  w.base_weight = random_gpu({s.C, 1, K, K}, gen, 0.02);
  w.base_bias = random_gpu({s.C}, gen, 0.02);
  w.base_scale = Tensor::full({1, s.C, 1, 1}, 1.0, DType::f32, Device::cuda);
  for (int l = 0; l < s.L; ++l) {
    w.wavelet_weight.push_back(random_gpu({4 * s.C, 1, K, K}, gen, 0.02));
    w.wavelet_scale.push_back(Tensor::full({1, 4 * s.C, 1, 1}, 0.1, DType::f32, Device::cuda));
  }
  int64_t wbytes = int64_t(w.base_weight.nbytes() + w.base_bias.nbytes() + w.base_scale.nbytes());
  for (int l = 0; l < s.L; ++l)
    wbytes += int64_t(w.wavelet_weight[l].nbytes() + w.wavelet_scale[l].nbytes());
  for (const auto mode : {kernels::WTConvMode::fused, kernels::WTConvMode::reference}) {
    const bool fused = mode == kernels::WTConvMode::fused;
    auto step = [&] {
      // the reference mode's intermediates stay alive from its forward to its backward, as the
      // layer keeps them on the tape (PyTorch's reference module's saved tensors)
      kernels::WTConvSaved saved;
      kernels::WTConvSaved* keep = fused ? nullptr : &saved;
      Tensor y = kernels::cuda::wtconv_forward(x, w, 1, mode, Tensor(), keep);
      kernels::WTConvGrads g =
          kernels::cuda::wtconv_backward(x, w, gy, 1, true, mode, Tensor(), keep);
      return int64_t(g.x.nbytes()) + wbytes;  // grad_x and weight grads are not "extra"
    };
    Row r{fused ? "wtconv fused" : "wtconv reference", s.C, s.HW, s.L, 0, 0, 0};
    try {
      step();
    } catch (const Error& e) {  // e.g. a dtype this path does not take: say so, bench the rest
      std::printf("  %-17s C=%d: skipped (%s)\n", r.impl.c_str(), s.C, e.what());
      continue;
    }
    r.train_ms = median_ms([&] { step(); }, o.warmup, o.iters);
    r.infer_ms =
        median_ms([&] { kernels::cuda::wtconv_forward(x, w, 1, mode); }, o.warmup, o.iters);
    r.extra_mib = double(extra_bytes(step)) / (1 << 20);
    const bool plane_fwd =
        fused && kernels::cuda::wtconv_plane_path(x.shape(), K, s.L, 1, act, false);
    const bool plane_bwd =
        fused && kernels::cuda::wtconv_plane_path(x.shape(), K, s.L, 1, act, true);
    const int tail_fwd = kernels::cuda::wtconv_tail_level(x.shape(), K, s.L, act, false);
    const int tail_bwd = kernels::cuda::wtconv_tail_level(x.shape(), K, s.L, act, true);
    const int hf = kernels::cuda::wtconv_haar_conv_from(x.shape(), K, s.L, act);
    const IoCount io = fused ? io_fused(B, s.HW, s.HW, s.C, s.L, plane_fwd, plane_bwd, tail_fwd,
                                        tail_bwd, 4.0 / double(dtype_size(act)), hf)
                             : io_reference(B, s.HW, s.HW, s.C, s.L);
    r.io_step_gb = io.step * double(dtype_size(act)) / 1e9;
    r.io_fwd_gb = io.forward * double(dtype_size(act)) / 1e9;
    std::string path_note;
    if (plane_fwd || plane_bwd)
      path_note = ", whole-plane kernels";
    else if (fused && tail_fwd < s.L)
      path_note = str(", levels from ", tail_fwd, " as a level tail");
    if (fused && !(plane_fwd && plane_bwd) && hf < tail_fwd)
      path_note += hf == 0 ? std::string(", Haar pass + level conv in one kernel")
                           : str(", Haar pass + level conv in one kernel from level ", hf);
    std::printf("  %-17s C=%d: I/O model fwd %.2f N, step %.2f N elements (N = %.0f)%s\n",
                r.impl.c_str(), s.C, io.forward / x.numel(), io.step / x.numel(), double(x.numel()),
                path_note.c_str());
    rows.push_back(r);
  }
}

/// The depthwise conv rows at the same shape (7x7 and 5x5): ours (conv2d's default route) and,
/// with --cudnn-dw, cuDNN's; training step (forward, backward data, weight and bias) and inference.
void depthwise_rows(const Options& o, const StageShape& s, const Tensor& x, const Tensor& gy,
                    Generator& gen, std::vector<Row>& rows) {
  using kernels::cuda::Conv2dBackend;
  const int B = o.batch;
  const DType act = x.dtype();
  std::vector<std::pair<int, Conv2dBackend>> dw_runs;  // (K, backend)
  for (int k : {7, 5}) {
    dw_runs.emplace_back(k, Conv2dBackend::automatic);
    if (o.cudnn_dw) dw_runs.emplace_back(k, Conv2dBackend::cudnn);
  }
  for (const auto& run : dw_runs) {
    const int kc = run.first;
    const Conv2dBackend backend = run.second;
    const auto cs = kernels::make_conv2d_shape(B, s.HW, s.HW, s.C, s.C, kc, kc, 1, kc / 2, s.C);
    const Tensor cw = random_gpu({s.C, 1, kc, kc}, gen, 0.02), cb = random_gpu({s.C}, gen, 0.02);
    auto fwd = [&] {
      Tensor y = Tensor::empty({B, s.HW, s.HW, s.C}, act, Device::cuda);
      HG_DISPATCH_CUDA(act, "bench-layer", [&] {
        kernels::cuda::conv2d_forward(cs, x.data<scalar_t>(), cw.data<float>(), cb.data<float>(),
                                      y.data<scalar_t>(), backend);
      });
      return y;
    };
    auto step = [&] {
      Tensor y = fwd();
      Tensor gx = Tensor::empty(x.shape(), act, Device::cuda);
      Tensor gw = Tensor::empty(cw.shape(), DType::f32, Device::cuda);
      Tensor gb = Tensor::empty(cb.shape(), DType::f32, Device::cuda);
      HG_DISPATCH_CUDA(act, "bench-layer", [&] {
        kernels::cuda::conv2d_backward_data(cs, gy.data<scalar_t>(), cw.data<float>(),
                                            gx.data<scalar_t>(), backend);
        kernels::cuda::conv2d_backward_weight_bias(cs, x.data<scalar_t>(), gy.data<scalar_t>(),
                                                   gw.data<float>(), gb.data<float>(), backend);
      });
      return int64_t(gx.nbytes() + gw.nbytes() + gb.nbytes());
    };
    const bool cudnn = backend == Conv2dBackend::cudnn;
    Row r{str(cudnn ? "cudnn dw " : "ours dw ", kc, "x", kc), s.C, s.HW, s.L, 0, 0, 0};
    r.train_ms = median_ms([&] { step(); }, o.warmup, o.iters);
    r.infer_ms = median_ms([&] { fwd(); }, o.warmup, o.iters);
    r.extra_mib = double(extra_bytes(step)) / (1 << 20);
    rows.push_back(r);
  }
}

/// The table of all rows (and the rows written to --output, JSON or CSV as bench writes its own):
/// achieved bandwidth against the measured copy bandwidth `bw` (bytes / s) for the rows with an
/// I/O model.
void report(const Options& o, const std::vector<Row>& rows, double bw) {
  const int B = o.batch;
  std::printf("\nbatch %d, K = %d (WTConv), %s, NHWC; medians of %d runs after %d warm-up\n", B,
              o.K, o.precision.c_str(), o.iters, o.warmup);
  std::printf("%-17s %-11s %9s %9s %10s %10s %9s %8s\n", "impl", "C/HW/L", "train ms", "infer ms",
              "extra MiB", "I/O GB", "GB/s", "%copy");
  std::vector<nlohmann::ordered_json> out;
  for (const Row& r : rows) {
    const std::string shape = str(r.C, "/", r.HW, "/", r.L);
    nlohmann::ordered_json j = {{"impl", r.impl},
                                {"C", r.C},
                                {"HW", r.HW},
                                {"levels", r.L},
                                {"batch", B},
                                {"precision", o.precision},
                                {"train_ms", r.train_ms},
                                {"infer_ms", r.infer_ms},
                                {"extra_mib", r.extra_mib},
                                {"copy_gbps", bw / 1e9}};
    if (r.io_step_gb > 0) {
      const double gbps = r.io_step_gb / (r.train_ms * 1e-3);
      std::printf("%-17s %-11s %9.3f %9.3f %10.1f %10.3f %9.0f %7.1f%%\n", r.impl.c_str(), shape.c_str(),
                  r.train_ms, r.infer_ms, r.extra_mib, r.io_step_gb, gbps, 100 * gbps * 1e9 / bw);
      j["io_step_gb"] = r.io_step_gb;
      j["io_forward_gb"] = r.io_fwd_gb;
      j["io_step_ms_at_copy_bw"] = r.io_step_gb * 1e9 / bw * 1e3;
      j["achieved_step_gbps"] = gbps;
      j["achieved_forward_gbps"] = r.io_fwd_gb / (r.infer_ms * 1e-3);
    } else {
      std::printf("%-17s %-11s %9.3f %9.3f %10.1f %10s %9s %8s\n", r.impl.c_str(), shape.c_str(),
                  r.train_ms, r.infer_ms, r.extra_mib, "-", "-", "-");
    }
    out.push_back(j);
  }
  if (!o.output.empty()) {
    write_rows_file(o.output, "bench-layer: --output", out, "impl");
    std::printf("wrote %s\n", o.output.c_str());
  }
}

void run_bench(const Options& o) {
  HG_CHECK(cuda::available(),
           "bench-layer: no CUDA device (it times the CUDA kernels: it runs on a GPU only; ",
           train::cuda_unavailable_reason(), ")");
  autograd::NoGradGuard no_grad;  // kernel-level calls; allocations come from the caching allocator
  const double bw = copy_bytes_per_second(Device::cuda);
  std::printf("device-to-device copy bandwidth: %.0f GB/s (read + write)\n", bw / 1e9);
  const std::vector<StageShape> shapes = {{96, 56, 5}, {192, 28, 4}, {384, 14, 3}, {768, 7, 2}};
  Generator gen(1);
  std::vector<Row> rows;
  const DType act = o.precision == "bf16" ? DType::bf16 : DType::f32;
  // tf32: fp32 activations with TF32 tensor-core math allowed, as `bench --precision tf32`. Our
  // depthwise and WTConv kernels use no tensor cores, so their rows are fp32's; cuDNN's
  // (--cudnn-dw) may take TF32.
  const PrecisionScope precision(o.precision, Device::cuda, "bench-layer");
  for (const StageShape& s : shapes) {
    if (o.only_channels > 0 && s.C != o.only_channels) continue;
    const Tensor x = random_gpu({o.batch, s.HW, s.HW, s.C}, gen, 1.0).to(act);
    const Tensor gy = random_gpu({o.batch, s.HW, s.HW, s.C}, gen, 1.0).to(act);
    wtconv_rows(o, s, x, gy, gen, rows);
    depthwise_rows(o, s, x, gy, gen, rows);
  }
  report(o, rows, bw);
}
#endif

}  // namespace

HG_REGISTER_COMMAND([](CLI::App& root) {
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = root.add_subcommand("bench-layer",
                                      "time one WTConv2d layer (fused, reference order) against "
                                      "depthwise convs, on the GPU (CUDA kernels only)");
  cmd->add_option("--batch", opts->batch, "batch size")->check(at_least(1));
  cmd->add_option("--iters", opts->iters, "timed runs (median reported)")->check(at_least(1));
  cmd->add_option("--warmup", opts->warmup, "untimed runs first")->check(at_least(0));
  cmd->add_option("--kernel", opts->K, "WTConv kernel size (odd)")
      ->check(CLI::Validator(
          [](std::string& v) {
            const long k = std::strtol(v.c_str(), nullptr, 10);
            return k >= 1 && k % 2 == 1 ? std::string()
                                        : "expected an odd kernel size >= 1, got " + v;
          },
          "ODD"));
  cmd->add_option("--channels", opts->only_channels,
                  "only the stage shape with this C (96, 192, 384, 768)")
      ->check(CLI::Validator(
          [](std::string& v) {
            const long c = std::strtol(v.c_str(), nullptr, 10);
            return c == 0 || c == 96 || c == 192 || c == 384 || c == 768
                       ? std::string()
                       : v + " is not a stage's channel count (96, 192, 384 or 768; 0 = every "
                             "stage)";
          },
          "STAGE"));
  cmd->add_option("--output", opts->output, "also write the rows to FILE.json or FILE.csv");
  cmd->add_option("--precision", opts->precision,
                  "activation dtype: fp32, tf32 (fp32 with TF32 tensor-core math allowed, as in "
                  "`bench`; our kernels use none, cuDNN's may) or bf16 (weights stay f32)")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}))
      ->capture_default_str();
  cmd->add_flag("--cudnn-dw", opts->cudnn_dw,
                "also time cuDNN's depthwise convs (rows \"cudnn dw KxK\" beside \"ours dw KxK\")");
  cmd->callback([opts] {
    // before any GPU work, and on a build or machine without one: its name is checked as bench's
    if (!opts->output.empty()) check_rows_output(opts->output, "bench-layer: --output", "impl");
#ifdef HAARGRAD_WITH_CUDA
    run_bench(*opts);
#else
    throw Error("bench-layer: this haargrad was built without CUDA");
#endif
  });
});

}  // namespace hg::app
