// `haargrad bench-data CONFIG [--key value ...]`: the data loader alone on the config's dataset, one
// row per decode backend (data/loader_bench.h: stb, turbo_full, turbo on the CPU; turbo_gpu_aug,
// nvjpeg, nvjpeg_gpu with the GPU transform): warm-up epochs, then timed epochs with img/s, compressed
// MB/s, the workers' busy fraction, the GPU stage's share of the time and how the files were decoded. Compare img/s with `train`'s img/s: a loader slower
// than the step makes the step wait (train logs that wait per epoch).
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "app/bench_report.h"
#include "app/command.h"
#include "core/error.h"
#include "data/loader_bench.h"
#include "train/config.h"
#include "train/trainer.h"

namespace hg::app {
namespace {

struct BenchDataArgs {
  std::string config;
  std::vector<std::string> decoders{"stb", "turbo_full", "turbo"};
  int64_t warmup = 1, epochs = 2;
  std::string split = "train";
  std::string output;
};

std::string decoded_str(const std::map<std::string, int64_t>& m) {
  std::string s;
  for (const auto& [key, n] : m) s += str(s.empty() ? "" : ", ", key, " ", n);
  return s;
}

void run(BenchDataArgs a, const std::vector<std::string>& overrides, bool decoders_given) {
  HG_CHECK(a.split == "train" || a.split == "val", "bench-data: --split must be train or val, got '", a.split, "'");
  HG_CHECK(!a.decoders.empty(), "bench-data: --decoders is empty");
  if (!a.output.empty()) check_rows_output(a.output, "bench-data: --output", "jpeg_decoder");
  const train::Config cfg = train::load_config_with_overrides(a.config, overrides);
  // said before any row: val_split '' (no validation) names no split to read
  HG_CHECK(a.split == "train" || train::has_validation(cfg),
           "bench-data --split val: val_split is empty, so there is no validation split: name one "
           "with --val-split NAME");
  // IDX files and synthetic images hold no JPEG: the three default CPU decoders were three rows
  // timing the same loader. One row, said; decoders asked for by name still run as asked.
  const bool no_decoder = cfg.dataset != "image_folder" && !decoders_given;
  if (no_decoder) {
    a.decoders.resize(1);
    std::printf(
        "bench-data: dataset %s holds no JPEG files, so the decoder does not apply: one row\n",
        cfg.dataset.c_str());
  }
  for (const std::string& dec : a.decoders) {  // every name checked before the first row runs
    train::Config c = cfg;
    data::apply_bench_row(c, dec);
    // and the GPU of a GPU row: without one, the row failed after the CPU rows had run, asking
    // for config keys the command line never gave ("set decode: cpu"); CPU rows ask no driver
    const std::string no_gpu = c.gpu_augment ? train::cuda_unavailable_reason() : "";
    HG_CHECK(no_gpu.empty(), "bench-data: --decoders ", dec, " runs on a GPU, and ", no_gpu,
             ": leave it out of --decoders");
  }
  std::printf(
      "bench-data: %s split, %lld worker%s, batch %lld, %lld px, %lld warm-up + %lld timed "
      "epochs\n",
      a.split.c_str(), static_cast<long long>(cfg.workers), cfg.workers == 1 ? "" : "s",
      static_cast<long long>(cfg.batch_size), static_cast<long long>(cfg.img_size),
      static_cast<long long>(a.warmup), static_cast<long long>(a.epochs));
  std::printf("%-13s %9s %9s %8s %8s %10s %10s %9s %8s  %s\n", "decoder", "img/s", "MB/s", "busy",
              "gpu", "worker/s", "cpu ms/img", "stage ms", "images", "decoded as");
  std::vector<nlohmann::ordered_json> rows;
  for (const std::string& dec : a.decoders) {
    data::LoaderBenchOptions o;
    o.jpeg_decoder = dec;
    o.train = a.split == "train";
    o.warmup_epochs = a.warmup;
    o.epochs = a.epochs;
    train::Config c = cfg;
    data::apply_bench_row(c, dec);  // validates the name first
    const data::LoaderBenchResult r = data::bench_loader(c, o);
    // stage ms: the GPU stage's stream time per batch (copies + crop kernel), GPU transform rows
    // only
    const std::string stage =
        r.gpu_stage_ms_per_batch > 0 ? fmt::format("{:.3f}", r.gpu_stage_ms_per_batch) : "-";
    // a row without a decoder is named by its dataset, and its MB/s (compressed bytes read) is
    // none: it read no files ("stb 0.0" read as a decoder that moved nothing)
    const std::string label = no_decoder ? "(" + cfg.dataset + ")" : dec;
    const std::string mb = no_decoder ? "-" : fmt::format("{:.1f}", r.megabytes_per_second);
    std::printf("%-13s %9.0f %9s %7.0f%% %7.0f%% %10.0f %10.2f %9s %8lld  %s\n", label.c_str(),
                r.images_per_second, mb.c_str(), 100 * r.busy_fraction, 100 * r.gpu_fraction,
                r.worker_images_per_second, r.cpu_ms_per_image, stage.c_str(),
                static_cast<long long>(r.images), decoded_str(r.decoded).c_str());
    std::fflush(stdout);
    rows.push_back(
        {{"jpeg_decoder", no_decoder ? nlohmann::ordered_json() : nlohmann::ordered_json(dec)},
         {"split", a.split},
         {"workers", r.workers},
         {"batch_size", cfg.batch_size},
         {"img_size", cfg.img_size},
         {"images", r.images},
         {"seconds", r.seconds},
         {"img_per_sec", r.images_per_second},
         {"mb_per_sec",
          no_decoder ? nlohmann::ordered_json() : nlohmann::ordered_json(r.megabytes_per_second)},
         {"decode", c.decode},
         {"gpu_augment", c.gpu_augment},
         {"busy_fraction", r.busy_fraction},
         {"gpu_fraction", r.gpu_fraction},
         {"worker_img_per_sec", r.worker_images_per_second},
         {"cpu_ms_per_img", r.cpu_ms_per_image},
         {"gpu_stage_ms_per_batch", r.gpu_stage_ms_per_batch},
         {"gpu_decode_wait_ms_per_batch", r.gpu_decode_wait_ms_per_batch},
         {"decoded", r.decoded},
         {"dataset", r.dataset}});
  }
  if (!a.output.empty()) {
    // a CSV cell holds no object: the decoded counts there as the table prints them
    if (csv_output(a.output))
      for (nlohmann::ordered_json& row : rows)
        row["decoded"] = decoded_str(row["decoded"].get<std::map<std::string, int64_t>>());
    write_rows_file(a.output, "bench-data: --output", rows, "jpeg_decoder");
    std::printf("wrote %s\n", a.output.c_str());
  }
}

}  // namespace

HG_REGISTER_COMMAND([](CLI::App& root) {
  auto a = std::make_shared<BenchDataArgs>();
  CLI::App* cmd = root.add_subcommand(
      "bench-data",
      "Time the data loader alone on a config's dataset, per JPEG decoder (img/s, MB/s, workers' "
      "busy fraction); config keys can be overridden as --key value (e.g. --workers 8); the config "
      "also as -c / --config CONFIG (timm's spelling)");
  cmd->add_option("config", a->config, "YAML config whose dataset, transforms and workers are used")->required();
  cmd->add_option("--decoders", a->decoders,
                  "decode backends to time, one row each: stb, turbo_full, turbo (CPU); turbo_gpu_aug, nvjpeg, "
                  "nvjpeg_gpu (GPU transform; need CUDA, nvjpeg* need nvJPEG)")
      ->delimiter(',')
      ->capture_default_str();
  // bounds as CLI11 checks: a bad value names its option and exits 2 before any row is timed
  cmd->add_option("--bench-warmup", a->warmup, "untimed epochs first")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--bench-epochs", a->epochs, "timed epochs")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--split", a->split, "train (train transforms) or val (eval transforms)")->capture_default_str();
  cmd->add_option("--output", a->output, "also write the rows to FILE.json or FILE.csv");
  cmd->allow_extras();  // everything else is a --key value config override
  cmd->callback([a, cmd] { run(*a, cmd->remaining(), cmd->count("--decoders") > 0); });
});

}  // namespace hg::app
