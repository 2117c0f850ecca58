// `haargrad bench-augment`: the CPU cost of each training augmentation on one image, without decoding
// or a loader: the random-resized-crop resample (bilinear, bicubic) from an ImageNet-sized source,
// every RandAugment op at one magnitude (default 9) on the img_size x img_size 8-bit crop, the whole
// RandAugment of a spec, ColorJitter, random erasing (probability 1, so the cost of an erased image),
// and Transform::apply_plan end to end with each stage on or off. Each row: mean and min microseconds
// per image over --reps calls after --warmup calls, single thread, in the thread's CPU time (so time
// the thread spends preempted on a shared machine does not count). The source is a smooth synthetic
// picture with noise (ops whose cost depends on content, equalize / autocontrast, see real ranges), or
// a file given with --image. Use it to find the hot ops and to compare builds (docs/data-loading.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/bench_report.h"
#include "app/command.h"
#include "core/error.h"
#include "core/random.h"
#include "data/color_jitter.h"
#include "data/image.h"
#include "data/image_ops.h"
#include "data/rand_augment.h"
#include "data/random_erasing.h"
#include "data/transforms.h"

namespace hg::app {
namespace {

struct AugmentOptions {
  int64_t size = 224;        // crop side, pixels
  int64_t reps = 200, warmup = 10;
  double magnitude = 9;      // RandAugment M of the per-op rows
  std::string interp = "bicubic";  // geometric ops' and the crop's filter
  std::string spec = "rand-m9-mstd0.5-inc1";
  std::string image;         // optional source file; else a synthetic 500 x 375 picture
  std::string output;        // optional JSON or CSV of the rows
  std::string only;          // optional: time only the rows whose name contains this text
};

// A 375 x 500 RGB picture with smooth gradients, a few blobs and pixel noise: a histogram spread
// over the whole range like a photograph's.
data::Image synthetic_source(Generator& gen) {
  data::Image img{375, 500, 3, {}};
  img.pixels.resize(size_t(img.height * img.width * 3));
  for (int64_t y = 0; y < img.height; ++y)
    for (int64_t x = 0; x < img.width; ++x)
      for (int64_t c = 0; c < 3; ++c) {
        const double v = 128 + 70 * std::sin(0.013 * double(x) * double(c + 1) + 0.02 * double(y)) +
                         40 * std::cos(0.031 * double(y) - 0.7 * double(c)) + 12 * gen.normal();
        img.pixels[size_t((y * img.width + x) * 3 + c)] = uint8_t(std::clamp(v, 0.0, 255.0));
      }
  return img;
}

struct AugmentRow {
  std::string name;
  double mean_us = 0, min_us = 0;
};

// CPU time of the calling thread, microseconds.
double thread_cpu_us() {
  timespec ts{};
  HG_CHECK(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0, "bench-augment: clock_gettime failed");
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

// Runs `f(i)` warmup + reps times (i counts calls, to vary seeds); times the last reps.
AugmentRow time_it(const std::string& name, const AugmentOptions& o,
                   const std::function<void(int64_t)>& f) {
  if (!o.only.empty() && name.find(o.only) == std::string::npos) return AugmentRow{name, -1, -1};
  for (int64_t i = 0; i < o.warmup; ++i) f(i);
  double total = 0, best = 1e300;
  for (int64_t i = 0; i < o.reps; ++i) {
    const double t0 = thread_cpu_us();
    f(o.warmup + i);
    const double us = thread_cpu_us() - t0;
    total += us;
    best = std::min(best, us);
  }
  AugmentRow r{name, total / double(o.reps), best};
  std::printf("%-34s %10.1f %10.1f\n", r.name.c_str(), r.mean_us, r.min_us);
  std::fflush(stdout);
  return r;
}

void run(const AugmentOptions& o) {
  // the option values are checked by CLI11 (exit status 2); the spec before any timing
  data::parse_rand_augment(o.spec);
  if (!o.output.empty()) check_rows_output(o.output, "bench-augment: --output", "stage");
  const data::Interp interp = data::parse_interp(o.interp);
  Generator gen(1);
  const data::Image src = o.image.empty() ? synthetic_source(gen) : data::read_image(o.image, 3);
  const int64_t S = o.size;
  // The 8-bit crop the ops see: the source's centre region resampled to S x S, rounded.
  std::vector<float> buf(size_t(S * S * 3));
  const data::CropBox centre = data::center_crop_box(src.height, src.width, S, 0.875);
  data::resample(src, centre, S, S, false, interp, buf.data());
  data::Image crop{S, S, 3, std::vector<uint8_t>(buf.size())};
  for (size_t i = 0; i < buf.size(); ++i)
    crop.pixels[i] = uint8_t(std::clamp(std::lround(buf[i]), 0L, 255L));
  std::printf(
      "bench-augment: %lldx%lld source (width x height) -> %lldx%lld crop, %s, M %g, %lld reps "
      "after %lld warm-up, 1 thread, CPU time\n",
      (long long)src.width, (long long)src.height, (long long)S, (long long)S, o.interp.c_str(),
      o.magnitude, (long long)o.reps, (long long)o.warmup);
  std::printf("%-34s %10s %10s\n", "stage", "mean us", "min us");
  std::vector<AugmentRow> rows;
  volatile uint8_t sink = 0;  // keeps results alive

  for (const data::Interp ip : {data::Interp::bilinear, data::Interp::bicubic})
    rows.push_back(time_it(str("rrc resample ", data::interp_name(ip)), o, [&](int64_t i) {
      Generator g{uint64_t(i)};
      const data::CropBox box = data::random_resized_crop_box(src.height, src.width, {0.08, 1.0},
                                                              {3.0 / 4.0, 4.0 / 3.0}, g);
      data::resample(src, box, S, S, false, ip, buf.data());
      sink = sink + uint8_t(buf[0]);
    }));

  data::AugmentParams params;
  params.interp = interp;
  for (int k = 0; k <= static_cast<int>(data::AugOp::TranslateYRel); ++k) {
    const auto op = static_cast<data::AugOp>(k);
    rows.push_back(time_it(str("op ", data::aug_op_name(op)), o, [&](int64_t i) {
      Generator g{uint64_t(i)};
      const data::Image out = data::apply_aug_op(op, crop, o.magnitude, params, g);
      sink = sink + out.pixels[0];
    }));
  }
  const data::RandAugment ra(data::parse_rand_augment(o.spec), params);
  rows.push_back(time_it(str("RandAugment ", o.spec), o, [&](int64_t i) {
    Generator g{uint64_t(i)};
    sink = sink + ra.apply(crop, g).pixels[0];
  }));
  const data::ColorJitter jitter(0.4, 0.4, 0.4);
  rows.push_back(time_it("ColorJitter 0.4", o, [&](int64_t i) {
    Generator g{uint64_t(i)};
    sink = sink + jitter.apply(crop, g).pixels[0];
  }));
  const data::RandomErasing erase(data::RandomErasingOptions{1.0, "pixel", 1, 0.02, 1.0 / 3.0, 0.3});
  rows.push_back(time_it("RandomErasing pixel (p 1)", o, [&](int64_t i) {
    Generator g{uint64_t(i)};
    erase.apply(buf.data(), S, S, 3, g);
    sink = sink + uint8_t(buf[0]);
  }));

  // The whole train transform with the stages on or off (mean over draws: RandAugment applies
  // ~n * p ops, random erasing fires with its probability).
  struct Variant {
    const char* name;
    std::string aa;
    double jitter, reprob;
  };
  for (const Variant& v : {Variant{"transform plain", "", 0, 0}, Variant{"transform jitter 0.4", "", 0.4, 0},
                           Variant{"transform aa", o.spec, 0, 0},
                           Variant{"transform aa + reprob 0.25", o.spec, 0, 0.25}}) {
    data::TransformOptions to;
    to.img_size = S;
    to.train = true;
    to.interpolation = o.interp;
    to.auto_augment = v.aa;
    to.color_jitter = {v.jitter};
    to.random_erasing.probability = v.reprob;
    const data::Transform t(to);
    rows.push_back(time_it(v.name, o, [&](int64_t i) {
      Generator g{uint64_t(i)};
      t.apply(src, g, buf.data());
      sink = sink + uint8_t(buf[0]);
    }));
  }
  // the examples are the rows' first words, each of which matches (the list written out here
  // before offered 'crop', which matched no row)
  std::vector<std::string> words;
  for (const AugmentRow& r : rows) {
    const std::string word = r.name.substr(0, r.name.find(' '));
    if (std::find(words.begin(), words.end(), word) == words.end()) words.push_back(word);
  }
  std::string examples;
  for (const std::string& w : words) examples += str(examples.empty() ? "" : ", ", "'", w, "'");
  HG_CHECK(o.only.empty() || std::any_of(rows.begin(), rows.end(),
                                         [](const AugmentRow& r) { return r.mean_us >= 0; }),
           "bench-augment: --only '", o.only, "' matches no row's name, which start ", examples,
           " (the text is matched in its case)");
  if (!o.output.empty()) {
    std::vector<nlohmann::ordered_json> j;
    for (const AugmentRow& r : rows)
      if (r.mean_us >= 0)
        j.push_back({{"stage", r.name}, {"mean_us", r.mean_us}, {"min_us", r.min_us}});
    write_rows_file(o.output, "bench-augment: --output", j, "stage");
    std::printf("wrote %s\n", o.output.c_str());
  }
}

}  // namespace

HG_REGISTER_COMMAND([](CLI::App& root) {
  auto o = std::make_shared<AugmentOptions>();
  CLI::App* cmd = root.add_subcommand(
      "bench-augment", "Time each CPU training augmentation (crop resample, every RandAugment op, ColorJitter, "
                       "random erasing, the whole transform) on one image, single thread: microseconds per image");
  // bounds as CLI11 checks: a bad value names its option and exits 2, as for every command
  cmd->add_option("--size", o->size, "crop side in pixels (1 .. 4096)")
      ->check(CLI::Range(int64_t(1), int64_t(4096)))
      ->capture_default_str();
  cmd->add_option("--reps", o->reps, "timed calls per row")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "untimed calls first")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--magnitude", o->magnitude,
                  "RandAugment magnitude of the per-op rows (0 .. 100; timm's scale: 10 is its "
                  "default maximum, mmax)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  cmd->add_option("--interp", o->interp, "crop and geometric-op filter: bilinear, bicubic or nearest")
      ->capture_default_str();
  cmd->add_option("--spec", o->spec, "RandAugment spec of the whole-RandAugment and transform rows")
      ->capture_default_str();
  cmd->add_option("--image", o->image, "source image file (default: a synthetic 500 x 375 picture)");
  cmd->add_option("--output", o->output, "also write the rows to FILE.json or FILE.csv");
  cmd->add_option("--only", o->only,
                  "time only the rows whose name contains this text (e.g. 'op ')");
  cmd->callback([o] { run(*o); });
});

}  // namespace hg::app
