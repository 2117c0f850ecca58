// `haargrad info MODEL|CONFIG.yaml [--img-size N] [--batch N]`: parameter counts, forward GMACs
// and the activation bytes the tape holds for one training step.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "app/command.h"
#include "core/autograd.h"
#include "core/memory.h"
#include "layers/loss.h"
#include "models/convnext.h"
#include "train/config.h"

namespace hg::app {
namespace {

struct InfoArgs {
  std::string model;
  std::string model_option;  // --model, timm's spelling of the argument
  std::string config_option;  // -c / --config, timm's spelling of a CONFIG.yaml argument
  int img_size = 0;  // 0: the model's default_img_size
  std::string img_size_config;  // the config file img_size came from; "": --img-size or the model's
  int batch = 1;
  bool no_measure = false;
  std::string wtconv_mode = "fused";  // a config's: the reference order saves more on the tape
};

// Records one training step's forward + loss at `batch` images on the CPU and returns the bytes the
// activation bytes live when the loss is computed (what the tape holds until backward).
int64_t measured_activation_bytes(ConvNeXt& model, int batch, int img_size) {
  Tensor x = Tensor::full({batch, img_size, img_size, model.config.in_chans}, 0.5);
  Tensor labels = Tensor::zeros({batch}, DType::i64);
  memory::step_done(Device::cpu);
  autograd::clear_tape();
  const int64_t before = memory::stats(Device::cpu).current[static_cast<int>(Category::activations)];
  Tensor loss = cross_entropy(model.forward(x, true), labels);
  const int64_t after = memory::stats(Device::cpu).current[static_cast<int>(Category::activations)];
  autograd::clear_tape();
  return after - before;
}

// The activation bytes of a training step: a per-image part times the batch plus a per-step part
// that does not grow with it (fc2's weight with the layer scale folded in, gelu_linear_residual):
// two small measurements, at batches 1 and 2, give both, fast even for tiny at 224 px.
struct ActivationBytes {
  int64_t per_image = 0, per_step = 0;
};

ActivationBytes activation_bytes(ConvNeXt& model, int img_size) {
  const int64_t one = measured_activation_bytes(model, 1, img_size);
  const int64_t per_image = measured_activation_bytes(model, 2, img_size) - one;
  return {per_image, one - per_image};
}

// "--img-size 100000", or "img_size 100000 (CONFIG.yaml)": the size as the user gave it.
std::string img_size_text(const InfoArgs& a) {
  return a.img_size_config.empty() ? str("--img-size ", a.img_size)
                                   : str("img_size ", a.img_size, " (", a.img_size_config, ")");
}

// "12.3" (GiB) for a byte count; large counts in whole GiB ("1e+06" would hide the size).
std::string gib_text(double bytes) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", bytes < double(int64_t(1) << 40) ? 1 : 0,
                bytes / double(int64_t(1) << 30));
  return b;
}

// An img_size whose measurement would not fit this machine's memory is refused before anything is
// printed (it failed "out of host memory" under half a table; a size just below that would have
// made the system swap or kill the process): the batch-2 measurement's input and activations,
// estimated from a measurement at a small size scaled by the pixels, against the physical memory.
void check_measurable(ConvNeXt& model, const InfoArgs& a) {
  const int img_size = a.img_size;
  const int ref = std::max(64, model.config.total_stride());
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (img_size <= ref || pages <= 0 || page <= 0) return;
  // The reference forward below runs at `ref` px: the model's once-only WTConv level advice would
  // name that size (a user who asked for 224 read "at img_size 64"). Say it for the asked size.
  model.give_level_advice(img_size);
  const double pixels = double(img_size) * img_size;
  const double input = 2 * pixels * model.config.in_chans * sizeof(float);
  const double need =
      2 * double(activation_bytes(model, ref).per_image) * pixels / (double(ref) * ref) + input;
  const double have = double(pages) * double(page);
  if (need <= have) return;
  throw Error(str("info: ", img_size_text(a),
                  ": measuring the activation bytes (batches 1 and 2) would need about ",
                  gib_text(need), " GiB of memory (scaled from ", ref, " px), more than this ",
                  "machine's ", gib_text(have), " GiB; give a smaller --img-size, or ",
                  "--no-measure for the parameter counts and GMACs alone"));
}

// The measurement at the run's sizes, its errors naming the options (the allocator's own message
// names the config keys img_size and batch_size).
ActivationBytes measure(ConvNeXt& model, const InfoArgs& a) {
  check_measurable(model, a);
  ActivationBytes b;
  try {
    b = activation_bytes(model, a.img_size);
  } catch (const Error& e) {
    throw Error(str("info: ", img_size_text(a), ": ", e.what(),
                    "; --no-measure gives the parameter counts and GMACs alone"));
  }
  HG_CHECK(b.per_image <= (std::numeric_limits<int64_t>::max() - b.per_step) / a.batch,
           "info: --batch ", a.batch, ": the activation bytes at ", img_size_text(a), " (",
           b.per_image, " per image) overflow a 64-bit count");
  return b;
}

// MODEL is a registered name, or a config file (as train, bench and validate take): then its model
// with the config's model keys (kernel_size, dims, ...) and its img_size unless --img-size is
// given.
ModelConfig model_of(InfoArgs& a) {
  const std::string ext = std::filesystem::path(a.model).extension().string();
  // a model's name is the model, even where a file of that name lies in the working folder (it
  // was read as a config: "expected a mapping")
  const std::vector<std::string> names = model_names();
  const bool named = std::find(names.begin(), names.end(), a.model) != names.end();
  if (named || (ext != ".yaml" && ext != ".yml" && !std::filesystem::is_regular_file(a.model)))
    return model_config(a.model);
  const train::Config c = train::load_config(a.model);
  if (a.img_size == 0) {
    a.img_size = static_cast<int>(c.img_size);
    a.img_size_config = a.model;
  }
  a.model = c.model + " (" + a.model + ")";
  a.wtconv_mode = c.wtconv_mode;
  return train::model_config_from(c);
}

// Every figure is computed before the first line is printed: an error is then the only output.
void run_info(InfoArgs a) {
  ModelConfig cfg = model_of(a);
  if (a.img_size == 0) a.img_size = cfg.default_img_size;
  cfg.check_img_size(a.img_size);
  ConvNeXt model(cfg, 0);
  // the config's WTConv path, as train runs it (it measured the fused path's bytes whatever the
  // config said)
  const bool reference = a.wtconv_mode == "reference" && model.config.wtconv;
  if (reference) model.set_wtconv_mode(WTConvMode::reference);
  const double gmacs = forward_macs(cfg, a.img_size) / 1e9;
  const ActivationBytes act = a.no_measure ? ActivationBytes{} : measure(model, a);
  std::printf("model            %s\n", a.model.c_str());
  std::printf("trainable params %s\n", std::to_string(model.num_trainable()).c_str());
  std::printf("fixed params     %s\n", std::to_string(model.num_fixed()).c_str());
  std::printf("forward GMACs    %.4g per image at %dx%d", gmacs, a.img_size, a.img_size);
  if (a.batch > 1) std::printf(" (%.4g for batch %d)", gmacs * a.batch, a.batch);
  std::printf("\n");
  if (!a.no_measure) {
    const int64_t per_image = act.per_image, per_step = act.per_step;
    const int64_t total = per_step + per_image * a.batch;
    const auto mib = [](int64_t b) { return static_cast<double>(b) / (1 << 20); };
    std::printf(
        "activation bytes %lld for one fp32 training step at batch %d (%.1f MiB: %.2f MiB per "
        "image and "
        "%.1f MiB per step; measured on the tape at batches 1 and 2%s)\n",
        static_cast<long long>(total), a.batch, mib(total), mib(per_image), mib(per_step),
        reference ? "; wtconv_mode reference" : "");
  }
}

}  // namespace

HG_REGISTER_COMMAND([](CLI::App& root) {
  auto args = std::make_shared<InfoArgs>();
  CLI::App* cmd = root.add_subcommand("info", "Parameter counts, GMACs and activation memory of a model");
  cmd->add_option(
      "model", args->model,
      "model name (e.g. convnext_tiny, wtconvnext_tiny; `haargrad models` lists them) or a "
      "CONFIG.yaml (its model, model keys and img_size); required, as the argument or --model");
  cmd->add_option("--model", args->model_option,
                  "the model as timm's scripts name it: --model convnext_tiny is the same as the "
                  "argument convnext_tiny");
  cmd->add_option(
         "--img-size", args->img_size,
         "input height = width in pixels (default: the model's, 224; 28 for wtconvnext_fmnist)")
      ->check(at_least(1))
      ->default_str("the model's");
  cmd->add_option("--batch", args->batch, "batch size for the activation bytes")
      ->check(at_least(1));
  cmd->add_option("-c,--config", args->config_option,
                  "a CONFIG.yaml as timm's scripts name it: the same as that argument");
  cmd->add_flag("--no-measure", args->no_measure, "skip the measured activation bytes");
  cmd->callback([args] {
    // a usage error (exit 2), as a missing argument is
    const std::vector<std::pair<std::string, std::string>> given = {
        {"the argument", args->model},
        {"--model", args->model_option},
        {"--config", args->config_option}};
    std::vector<std::pair<std::string, std::string>> set;
    for (const auto& g : given)
      if (!g.second.empty()) set.push_back(g);
    if (set.size() > 1)
      throw CLI::ValidationError(str("the model is given twice, as ", set[0].first, " '",
                                     set[0].second, "' and as ", set[1].first, " '", set[1].second,
                                     "': give one of them"));
    if (!set.empty()) args->model = set[0].second;
    if (args->model.empty())
      throw CLI::ValidationError(
          "a model is required: haargrad info MODEL (or --model MODEL), e.g. haargrad info "
          "convnext_tiny");
    run_info(*args);
  });
});

}  // namespace hg::app
