// Weights out and in, checked against timm itself through the golden model files (../shared/golden:
// `param.<name>` there is timm's state_dict, `logits` timm's output):
//  - `haargrad export` writes exactly timm's names and shapes (what load_state_dict(strict=True)
//    needs), the model's values, and no optimizer state;
//  - `haargrad infer` on timm's weights and input gives timm's logits (fp32 tolerance).
// The same with torch and timm themselves: scripts/timm-check.py (on the GPU machine).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/atomic_file.h"
#include "core/autograd.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "data/from_config.h"
#include "data/image.h"
#include "data/transforms.h"
#include "golden/golden.h"
#include "models/checkpoint.h"
#include "models/convnext.h"
#include "program.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/optimizer.h"
#include "train/trainer.h"

namespace hg {
namespace {

using test::exited;
using test::ProgramRun;
using test::run_program;
namespace fs = std::filesystem;

struct GoldenModel {
  std::string path;
  safetensors::File file;
  train::Config config;                 // the golden model as a training config
  std::map<std::string, Tensor> params;  // timm's state_dict
};

// The golden ConvNeXt model files (recognised by keys and metadata, not by name).
std::vector<GoldenModel> golden_convnext_models() {
  std::vector<GoldenModel> out;
  for (const auto& e :
       fs::directory_iterator(test::golden_dir())) {  // (throws, naming it, if absent)
    if (e.path().extension() != ".safetensors") continue;
    GoldenModel g;
    g.path = e.path().string();
    g.file = safetensors::load(g.path);
    if (!test::is_model_file(g.file)) continue;
    const auto meta = nlohmann::json::parse(g.file.metadata.at("config"));
    const bool wtconv = meta.at("model") == "wtconvnext";
    g.config.model =
        wtconv ? "wtconvnext_tiny" : "convnext_tiny";  // no conv_mlp, as the golden files
    g.config.depths = meta.at("depths").get<std::vector<int64_t>>();
    g.config.dims = meta.at("dims").get<std::vector<int64_t>>();
    g.config.num_classes = meta.at("num_classes").get<int64_t>();
    g.config.kernel_size = meta.value("kernel_size", wtconv ? 5 : 7);
    if (wtconv) g.config.wt_levels = meta.at("wt_levels").get<std::vector<int64_t>>();
    g.config.device = "cpu";
    for (const auto& [k, t] : g.file.tensors)
      if (k.rfind("param.", 0) == 0) g.params.emplace(k.substr(6), t);
    out.push_back(std::move(g));
  }
  return out;
}

using ExportCommand = test::ProgramTest;

// configs/<name>.yaml on the CPU: the configs of the models the command tests export and infer
// with.
train::Config cpu_config(const std::string& name) {
  train::Config c = train::load_config(HAARGRAD_SOURCE_DIR "/configs/" + name + ".yaml");
  c.device = "cpu";
  return c;
}

// A training checkpoint at `path` of the model `c` describes (seed 3), `c` stored in it.
void save_model_checkpoint(const std::string& path, const train::Config& c) {
  ConvNeXt model(train::model_config_from(c), 3);
  train::save_checkpoint(path, model, nullptr, train::TrainState{}, train::to_yaml(c));
}

// The smoke config's checkpoint: the weights most command tests export and infer with.
void save_smoke_checkpoint(const std::string& path) {
  save_model_checkpoint(path, cpu_config("smoke"));
}

// An input batch for infer at `path`: random values of `shape` drawn from `seed`.
void save_input(const std::string& path, const Shape& shape, uint64_t seed) {
  safetensors::save(path, {{"input", test::random(shape, seed)}}, {});
}

// `haargrad infer` of `checkpoint` on `input`, its logits to `out`, with `options` (each option
// with its leading space).
/// A 32 x 32 grey PNG at `path`.
void write_grey_png(const std::string& path) {
  data::write_png(path, data::Image{32, 32, 3, std::vector<uint8_t>(32 * 32 * 3, 90)});
}

/// The folder `dir` with a.png and c.png (grey) and b.png, which is no image.
void folder_with_unreadable_b(const std::string& dir) {
  fs::create_directories(dir);
  write_grey_png(dir + "/a.png");
  write_grey_png(dir + "/c.png");
  std::ofstream(dir + "/b.png") << "not an image\n";
}

ProgramRun infer(const std::string& checkpoint, const std::string& input, const std::string& out,
                 const std::string& options = "") {
  return run_program("infer --checkpoint " + checkpoint + " --input " + input + " --out " + out +
                     options);
}

TEST_F(ExportCommand, WritesTimmsStateDictNamesAndShapesWithoutOptimizerState) {
  const std::vector<GoldenModel> models = golden_convnext_models();
  ASSERT_FALSE(models.empty()) << "no golden model files in " << test::golden_dir();
  for (const GoldenModel& g : models) {
    SCOPED_TRACE(g.path);
    // A training checkpoint of the golden weights after one AdamW step: it holds optimizer.* too.
    ConvNeXt model(train::model_config_from(g.config), 0);
    load_state_dict(model, g.params);
    std::vector<ParamRef> trainable;
    for (const ParamRef& p : model.named_tensors())
      if (p.trainable) trainable.push_back(p);
    train::AdamW opt(train::param_groups_weight_decay(trainable, 1e-3, 0.05));
    for (const ParamRef& p : trainable) p.tensor.grad_slot()->grad = Tensor::full(p.tensor.shape(), 0.01);
    {
      autograd::NoGradGuard no_grad;
      opt.step();
    }
    const std::string ck = file("ck.safetensors"), out = file("weights.safetensors");
    train::save_checkpoint(ck, model, &opt, train::TrainState{}, train::to_yaml(g.config));
    int64_t optimizer_keys = 0;
    for (const auto& [k, t] : safetensors::load(ck).tensors) optimizer_keys += k.rfind("optimizer.", 0) == 0;
    ASSERT_GT(optimizer_keys, 0);

    const ProgramRun r = run_program("export " + ck + " --out " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // the log names what it left out, and only what the checkpoint holds (no EMA here)
    EXPECT_NE(r.output.find("other tensors of " + ck + ": optimizer state)"), std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("model EMA"), std::string::npos) << r.output;
    const safetensors::File w = safetensors::load(out);
    // Exactly timm's state_dict keys and shapes: load_state_dict(strict=True) needs no more, no less.
    std::map<std::string, Shape> got, want;
    for (const auto& [k, t] : w.tensors) got[k] = t.shape();
    for (const auto& [k, t] : g.params) want[k] = t.shape();
    EXPECT_EQ(got, want);
    // ... and the model's own state_dict, in its order (PyTorch's), float32, values as trained.
    const auto sd =
        timm_state_dict(model);  // fc weights (out, in, 1, 1) for timm's conv_mlp variants
    ASSERT_EQ(w.order.size(), sd.size());
    for (size_t i = 0; i < sd.size(); ++i) {
      EXPECT_EQ(w.order[i], sd[i].first);
      const Tensor& t = w.tensors.at(sd[i].first);
      EXPECT_EQ(t.dtype(), DType::f32) << sd[i].first;
      EXPECT_EQ(test::rel_error(t.to(DType::f64), sd[i].second.to(DType::f64)), 0.0) << sd[i].first;
    }
    EXPECT_EQ(w.metadata.at("format"), "pt");
  }
  // Refuses to overwrite the checkpoint with its own weights.
  const ProgramRun same = run_program("export " + file("ck.safetensors") + " --out " + file("ck.safetensors"));
  EXPECT_NE(same.exit_code, 0);
  EXPECT_NE(same.output.find("another file"), std::string::npos) << same.output;
}

TEST_F(ExportCommand, InferOnTimmWeightsGivesTimmsLogits) {
  const std::vector<GoldenModel> models = golden_convnext_models();
  ASSERT_FALSE(models.empty()) << "no golden model files in " << test::golden_dir();
  for (const GoldenModel& g : models) {
    SCOPED_TRACE(g.path);
    // timm's state_dict alone (no config in the file) and timm's NCHW input, as float64
    const std::string weights = file("timm.safetensors"), input = file("input.safetensors"), out = file("logits.safetensors");
    std::vector<std::pair<std::string, Tensor>> sd(g.params.begin(), g.params.end());
    safetensors::save(weights, sd);
    safetensors::save(input, {{"input", g.file.tensors.at("input")}});
    auto list = [](const std::vector<int64_t>& v) {
      std::string s;
      for (size_t i = 0; i < v.size(); ++i) s += str(i ? "," : "", v[i]);
      return s;
    };
    std::string model_args = str("--model ", g.config.model, " --num-classes ", g.config.num_classes, " --depths ",
                                 list(g.config.depths), " --dims ", list(g.config.dims), " --kernel-size ",
                                 *g.config.kernel_size, " --device cpu");
    if (!g.config.wt_levels.empty()) model_args += " --wt-levels " + list(g.config.wt_levels);
    const ProgramRun r = infer(weights, input, out, " " + model_args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const Tensor logits = safetensors::load(out).tensors.at("logits");
    EXPECT_EQ(logits.dtype(), DType::f32);
    const Tensor& want = g.file.tensors.at("logits");
    ASSERT_EQ(logits.shape(), want.shape());
    EXPECT_LT(test::rel_error(logits.to(DType::f64), want.to(DType::f64)), 1e-4);  // fp32, whole model
  }
}

// A bare state_dict of a gray 10-class model, given with --model alone (the defaults: 3 channels,
// 1000 classes), was refused with its mis-shaped keys and no hint; the message now says the keys
// its stem and head call for.
TEST_F(ExportCommand, ABareStateDictThatDoesNotFitSaysItsChannelsAndClasses) {
  const train::Config c = cpu_config("fashion_mnist");
  const std::string ck = file("ck.safetensors"), sd = file("sd.safetensors");
  save_model_checkpoint(ck, c);
  safetensors::File f = safetensors::load(ck);
  std::vector<std::pair<std::string, Tensor>> weights;
  for (const std::string& name : f.order)
    if (name.rfind("optimizer.", 0) != 0 && name.rfind(train::kEmaPrefix, 0) != 0)
      weights.emplace_back(name, f.tensors.at(name));
  safetensors::save(sd, weights);  // no metadata: no config
  const ProgramRun r =
      run_program("export " + sd + " --out " + file("w.safetensors") + " --model " + c.model);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("mis-shaped keys"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("its stem and head say: --in-chans 1 --num-classes 10"),
            std::string::npos)
      << r.output;
  // the same in half precision was refused by its size, before the load, with no hint; and with
  // the "module." names of torch's DataParallel (which the load takes) its stem and head were not
  // found
  std::vector<std::pair<std::string, Tensor>> half, wrapped;
  for (const auto& [name, t] : weights) {
    half.emplace_back(name, t.to(DType::bf16));
    wrapped.emplace_back("module." + name, t);
  }
  for (const auto& [path, tensors] : {std::pair{file("half.safetensors"), half},
                                      std::pair{file("module.safetensors"), wrapped}}) {
    safetensors::save(path, tensors);
    const ProgramRun h =
        run_program("export " + path + " --out " + file("w.safetensors") + " --model " + c.model);
    EXPECT_EQ(h.exit_code, 1) << h.output;
    EXPECT_NE(h.output.find("its stem and head say: --in-chans 1 --num-classes 10"),
              std::string::npos)
        << h.output;
  }
}

// An export carries its config, so infer (and validate) build its model from the file alone, as
// from a training checkpoint. Files are guarded: export never replaces a training checkpoint, infer
// never writes its logits over the checkpoint or the input; an input read in the wrong layout is
// named by the shape the file holds.
TEST_F(ExportCommand, ExportsCarryTheirConfigAndNoFileIsOverwritten) {
  const train::Config c = cpu_config("fashion_mnist");
  const std::string ck = file("ck.safetensors"), w = file("w.safetensors"),
                    in = file("in.safetensors"), logits = file("logits.safetensors");
  save_model_checkpoint(ck, c);
  const ProgramRun ex = run_program("export " + ck + " --out " + w);
  ASSERT_EQ(ex.exit_code, 0) << ex.output;
  EXPECT_EQ(train::config_from_yaml(safetensors::load(w).metadata.at("config"), "w").model,
            c.model);

  const std::string ck_bytes = io::read_file(ck);
  const ProgramRun over = run_program("export " + w + " --out " + ck);
  EXPECT_NE(over.exit_code, 0);
  EXPECT_NE(over.output.find("is a training checkpoint"), std::string::npos) << over.output;
  EXPECT_EQ(io::read_file(ck), ck_bytes);

  save_input(in, {2, 1, 28, 28}, 5);
  const ProgramRun inf = infer(w, in, logits);
  ASSERT_EQ(inf.exit_code, 0) << inf.output;  // the model from the export's config: no --model
  EXPECT_EQ(safetensors::load(logits).tensors.at("logits").shape(), (Shape{2, 10}));

  const std::string in_bytes = io::read_file(in), w_bytes = io::read_file(w);
  for (const std::string& target : {w, in}) {
    const ProgramRun r = infer(w, in, target);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("itself; write the logits to another file"), std::string::npos)
        << r.output;
  }
  EXPECT_EQ(io::read_file(in), in_bytes);
  EXPECT_EQ(io::read_file(w), w_bytes);

  save_input(in, {2, 28, 28, 1}, 6);  // channels last
  const ProgramRun layout = infer(w, in, logits);
  EXPECT_NE(layout.exit_code, 0);
  EXPECT_NE(layout.output.find("[2, 28, 28, 1]"), std::string::npos) << layout.output;
  EXPECT_NE(layout.output.find("--layout nhwc"), std::string::npos) << layout.output;
}

// A training checkpoint of another format (a later haargrad version's: read_train_state refuses
// it, naming its 'format') still holds a run's position and optimizer state: the output guard took
// the refusal for "not a checkpoint", and export wrote its weights over it.
TEST_F(ExportCommand, NoOutputReplacesACheckpointOfAnotherFormat) {
  const train::Config c = cpu_config("fashion_mnist");
  const std::string ck = file("ck.safetensors"), w = file("w.safetensors"),
                    newer = file("newer.safetensors");
  save_model_checkpoint(ck, c);
  ASSERT_EQ(run_program("export " + ck + " --out " + w).exit_code, 0);
  const safetensors::File f = safetensors::load(ck);
  ASSERT_TRUE(f.metadata.count("state"));
  std::map<std::string, std::string> meta = f.metadata;
  meta["format"] = "haargrad-train-checkpoint-2";
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const std::string& name : f.order) tensors.emplace_back(name, f.tensors.at(name));
  safetensors::save(newer, tensors, meta);
  const std::string bytes = io::read_file(newer);
  const ProgramRun over = run_program("export " + w + " --out " + newer);
  EXPECT_NE(over.exit_code, 0) << over.output;
  EXPECT_NE(over.output.find("is a training checkpoint"), std::string::npos) << over.output;
  EXPECT_TRUE(io::read_file(newer) == bytes) << "replaced";
}

// infer took only a safetensors batch, which only a Python snippet (PyTorch or safetensors) wrote
// (a new user's report). It takes an image file or a folder of images too (its image files by name,
// one row each), through the evaluation transform of the config, as validate reads them: the
// logits equal those of the batch that transform makes.
TEST_F(ExportCommand, InferTakesImagesThroughTheEvaluationTransform) {
  train::Config c = cpu_config("fashion_mnist");
  c.crop_pct = 0.875;  // a resize and a crop, not a copy
  const std::string ck = file("ck.safetensors");
  save_model_checkpoint(ck, c);
  fs::create_directories(file("images"));
  const std::vector<std::string> names = {file("images/a.png"), file("images/b.png")};
  for (size_t i = 0; i < names.size(); ++i) {
    data::Image img{36, 40, 1, std::vector<uint8_t>(36 * 40)};
    for (size_t p = 0; p < img.pixels.size(); ++p)
      img.pixels[p] = static_cast<uint8_t>((p * (7 + i)) % 251);
    data::write_png(names[i], img);
  }
  std::ofstream(file("images/notes.txt")) << "not an image\n";
  // the batch the evaluation transform makes, NHWC
  const data::Transform t(data::make_transform_options(c, false));
  Tensor batch = Tensor::empty({2, 28, 28, 1}, DType::f32, Device::cpu);
  Generator unused(0);
  for (size_t i = 0; i < names.size(); ++i)
    t.apply(data::read_image(names[i], 1), unused,
            static_cast<float*>(batch.data_ptr()) + static_cast<int64_t>(i) * t.output_numel());
  safetensors::save(file("batch.safetensors"), {{"input", batch}}, {});
  auto logits_of = [&](const std::string& input, const std::string& extra) {
    const ProgramRun r = infer(ck, input, file("logits.safetensors"), extra);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.exit_code == 0 ? safetensors::load(file("logits.safetensors")).tensors.at("logits")
                            : Tensor();
  };
  const Tensor want = logits_of(file("batch.safetensors"), " --layout nhwc");
  const Tensor folder = logits_of(file("images"), ""), one = logits_of(names[1], "");
  ASSERT_TRUE(want.defined() && folder.defined() && one.defined());
  ASSERT_EQ(folder.shape(), (Shape{2, 10}));
  EXPECT_EQ(folder.to_vector<float>(), want.to_vector<float>());
  // which row is which image: the file's metadata lists them (the log said only the first and
  // the last), and the folder's other file is named, not left out unsaid
  const ProgramRun noted = infer(ck, file("images"), file("logits.safetensors"));
  EXPECT_NE(
      noted.output.find("left out 1 file that is no JPEG, PNG, BMP, PPM or PGM by its name (" +
                        file("images/notes.txt") + ")"),
      std::string::npos)
      << noted.output;
  // each image's most probable classes on stdout, the first its logits' argmax (timm's
  // inference.py reports top-k); --topk 0 prints none
  const std::vector<float> rows = want.to_vector<float>();
  for (size_t i = 0; i < names.size(); ++i) {
    const auto first = rows.begin() + 10 * static_cast<std::ptrdiff_t>(i);
    const auto best = std::max_element(first, first + 10) - first;
    EXPECT_NE(noted.output.find(names[i] + ": " + std::to_string(best) + " ("), std::string::npos)
        << noted.output;
  }
  // a batch's rows by their index
  const ProgramRun rows_run =
      infer(ck, file("batch.safetensors"), file("batch_logits.safetensors"), " --layout nhwc");
  EXPECT_NE(rows_run.output.find("row 1: "), std::string::npos) << rows_run.output;
  const ProgramRun quiet = infer(ck, file("images"), file("logits.safetensors"), " --topk 0");
  EXPECT_EQ(quiet.output.find(names[0] + ": "), std::string::npos) << quiet.output;
  // a newline in a name is printed as \n (printable): one line an image
  fs::create_directories(file("odd"));
  fs::copy_file(names[0], file("odd") + "/a\nb.png");
  // and an ESC sequence reaches the terminal from no line (the rows line printed names raw)
  fs::copy_file(names[0], file("odd") + "/z\x1b[31mred.png");
  const ProgramRun odd = infer(ck, file("odd"), file("odd_logits.safetensors"));
  EXPECT_EQ(odd.exit_code, 0) << odd.output;
  EXPECT_NE(odd.output.find(file("odd") + "/a\\nb.png: "), std::string::npos) << odd.output;
  EXPECT_NE(odd.output.find("/z\\x1b[31mred.png: "), std::string::npos) << odd.output;
  EXPECT_EQ(odd.output.find('\x1b'), std::string::npos) << odd.output;
  const auto meta = safetensors::load(file("logits.safetensors")).metadata;
  ASSERT_TRUE(meta.count("images")) << "no 'images' metadata";
  EXPECT_EQ(meta.at("images"), "[\"" + names[0] + "\",\"" + names[1] + "\"]");
  // one image alone: the second row, to the last bits a batch of 1 sums differently
  const std::vector<float> w = want.to_vector<float>(), o = one.to_vector<float>();
  ASSERT_EQ(o.size(), 10u);
  for (size_t k = 0; k < o.size(); ++k) EXPECT_NEAR(o[k], w[10 + k], 1e-5) << k;
  // the transform's keys apply to images, and change nothing for a batch
  EXPECT_EQ(logits_of(file("images"), " --img-size 32").shape(), (Shape{2, 10}));
  const ProgramRun batch_size = infer(ck, file("batch.safetensors"), file("logits.safetensors"),
                                      " --layout nhwc --img-size 32");
  EXPECT_EQ(batch_size.exit_code, 1);
  EXPECT_NE(batch_size.output.find("--img-size changes nothing here"), std::string::npos)
      << batch_size.output;
}

// infer names each top class by the class folder its run trained it on (the checkpoint records
// them) and writes the columns' classes in the logits file's metadata: it printed indices alone,
// which a user had to map to folders in timm's order by hand.
TEST_F(ExportCommand, InferNamesTheClassesTheCheckpointRecords) {
  const train::Config c = cpu_config("smoke");  // 4 classes
  ConvNeXt model(train::model_config_from(c), 3);
  train::TrainState st;
  st.class_names = {"cat", "dog", "owl", "yak"};
  const std::string ck = file("named.safetensors"), in = file("in.safetensors");
  train::save_checkpoint(ck, model, nullptr, st, train::to_yaml(c));
  ASSERT_EQ(train::read_train_state(ck)->class_names, st.class_names);
  save_input(in, {2, 3, 32, 32}, 5);
  const ProgramRun r = infer(ck, in, file("l.safetensors"), " --topk 4");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* name : {"cat, ", "dog, ", "owl, ", "yak, "})
    EXPECT_NE(r.output.find(name), std::string::npos) << name << " not in: " << r.output;
  EXPECT_EQ(safetensors::load(file("l.safetensors")).metadata.at("classes"),
            "[\"cat\",\"dog\",\"owl\",\"yak\"]");
  // a checkpoint without names (IDX data, older files): indices alone, no metadata
  save_smoke_checkpoint(ck);
  const ProgramRun plain = infer(ck, in, file("l.safetensors"), " --topk 1");
  EXPECT_EQ(plain.output.find("cat"), std::string::npos) << plain.output;
  EXPECT_EQ(safetensors::load(file("l.safetensors")).metadata.count("classes"), 0u);
}

// export and infer do not use img_size: timm's convnext_atto weights for 28 px gray images, given
// with the Fashion-MNIST config (img_size 28) and --model convnext_atto (total stride 32), were
// refused for "img_size 28 is below the total stride 32". They export and infer; validate, which
// resizes to img_size, still refuses it.
TEST_F(ExportCommand, ExportAndInferDoNotCheckAnImgSizeTheyDoNotUse) {
  ModelConfig atto = model_config("convnext_atto");
  atto.num_classes = 10;
  atto.in_chans = 1;
  const ConvNeXt model(atto, 3);
  const std::string sd = file("atto.safetensors"), in = file("in.safetensors");
  safetensors::save(sd, timm_state_dict(model));  // timm's state_dict: no config stored
  save_input(in, {2, 1, 32, 32}, 5);
  const std::string model_args =
      " --config " HAARGRAD_SOURCE_DIR "/configs/fashion_mnist.yaml --model convnext_atto";
  const ProgramRun ex =
      run_program("export " + sd + " --out " + file("w.safetensors") + model_args);
  EXPECT_EQ(ex.exit_code, 0) << ex.output;
  EXPECT_EQ(ex.output.find("img_size"), std::string::npos) << ex.output;
  const ProgramRun inf = infer(sd, in, file("logits.safetensors"), model_args);
  EXPECT_EQ(inf.exit_code, 0) << inf.output;
  const ProgramRun val = run_program("validate --checkpoint " + sd + model_args);
  EXPECT_EQ(val.exit_code, 1) << val.output;
  // the key the command line left is named at its line of the config file
  EXPECT_NE(
      val.output.find("key 'img_size' (" HAARGRAD_SOURCE_DIR "/configs/fashion_mnist.yaml line "),
      std::string::npos)
      << val.output;
  EXPECT_NE(val.output.find("img_size 28 is below the total stride 32"), std::string::npos)
      << val.output;
}

// validate takes a run folder for its model_best.safetensors; export and infer said "safetensors
// 'RUN': read failed: Is a directory". They take a run folder the same way, and name a folder
// without model_best.
TEST_F(ExportCommand, ARunFolderMeansItsModelBest) {
  fs::create_directories(file("run"));
  save_model_checkpoint(file("run/model_best.safetensors"), cpu_config("fashion_mnist"));
  const ProgramRun from_dir =
      run_program("export " + file("run") + " --out " + file("a.safetensors"));
  ASSERT_EQ(from_dir.exit_code, 0) << from_dir.output;
  EXPECT_NE(from_dir.output.find("model_best.safetensors"), std::string::npos) << from_dir.output;
  ASSERT_EQ(run_program("export " + file("run/model_best.safetensors") + " --out " +
                        file("b.safetensors"))
                .exit_code,
            0);
  EXPECT_EQ(io::read_file(file("a.safetensors")), io::read_file(file("b.safetensors")));
  save_input(file("in.safetensors"), {2, 1, 28, 28}, 5);
  const ProgramRun inf = infer(file("run"), file("in.safetensors"), file("logits.safetensors"));
  ASSERT_EQ(inf.exit_code, 0) << inf.output;
  fs::create_directories(file("bare"));
  const ProgramRun bare = run_program("export " + file("bare") + " --out " + file("c.safetensors"));
  EXPECT_NE(bare.exit_code, 0);
  EXPECT_NE(bare.output.find("is a folder without model_best.safetensors"), std::string::npos)
      << bare.output;
}

// A stored config far larger than the file's weights (an edit: num_classes 60000000) is refused
// before a model of many GB is built, by validate, export and infer alike.
TEST_F(ExportCommand, AStoredConfigLargerThanItsFileIsRefused) {
  const train::Config c = cpu_config("smoke");
  ConvNeXt model(train::model_config_from(c), 3);
  train::Config edited = c;
  edited.num_classes = 60000000;
  const std::string ck = file("ck.safetensors");
  train::save_checkpoint(ck, model, nullptr, train::TrainState{}, train::to_yaml(edited));
  for (const std::string& cmd :
       {"export " + ck + " --out " + file("w.safetensors"), "validate --checkpoint " + ck,
        "infer --checkpoint " + ck + " --input " + file("in.safetensors") + " --out " +
            file("o.safetensors")}) {
    const ProgramRun r = run_program(cmd);
    EXPECT_EQ(r.exit_code, 1) << cmd;
    EXPECT_NE(r.output.find("num_classes 60000000) cannot be the one in " + ck), std::string::npos)
        << r.output;
  }
}

// A checkpoint cut short (a copy that stopped) or no safetensors file at all, given with the
// config of its model, is named as what it is: it used to be refused as a file whose config
// "does not belong to these weights", which sent the user looking for another config.
TEST_F(ExportCommand, ACutCheckpointIsNamedAsSuchNotAsAnotherModels) {
  const std::string ck = file("ck.safetensors");
  save_smoke_checkpoint(ck);
  const std::string bytes = io::read_file(ck);
  for (const size_t keep : {size_t{5}, size_t{10000}}) {
    const std::string cut = file("cut" + std::to_string(keep) + ".safetensors");
    std::ofstream(cut, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(keep));
    const ProgramRun r = run_program(
        "validate " HAARGRAD_SOURCE_DIR "/configs/smoke.yaml --device cpu --checkpoint " + cut);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("safetensors '" + cut + "': "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(keep == 5 ? "too short for the 8-byte header length"
                                      : "not a safetensors file, or a truncated one"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("does not belong"), std::string::npos) << r.output;
  }
}

// export and infer write safetensors whatever the name: `--out model.pth` made a file that
// torch.load (what a timm user does with a .pth) fails on. A name of another format is refused
// before any work, naming the file, the format written and the name to give instead.
TEST_F(ExportCommand, AnOutNamedForAnotherFormatIsRefusedNamingSafetensors) {
  const std::string ck = file("ck.safetensors"), in = file("in.safetensors");
  save_smoke_checkpoint(ck);
  save_input(in, {1, 3, 32, 32}, 5);
  for (const std::string name : {"model.pth", "model.pt", "pytorch_model.bin", "model.pth.tar"}) {
    const ProgramRun r = run_program("export " + ck + " --out " + file(name));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("export: --out " + file(name) +
                            ": haargrad writes safetensors, which torch.load cannot read"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("give a name ending in .safetensors"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(file(name))) << name;
  }
  const ProgramRun npy = infer(ck, in, file("logits.npy"));
  EXPECT_EQ(npy.exit_code, 1) << npy.output;
  EXPECT_NE(npy.output.find("infer: --out " + file("logits.npy") +
                            ": haargrad writes safetensors, which numpy.load cannot read"),
            std::string::npos)
      << npy.output;
  EXPECT_FALSE(fs::exists(file("logits.npy")));
  ASSERT_EQ(run_program("export " + ck + " --out " + file("model.safetensors")).exit_code, 0);
}

// export and infer took any other name as well (logits.txt, weights without an extension) and
// wrote safetensors under it, where validate --results-file, bench --output and plot --out refuse
// a name of another format than they write: both refuse it the same way (exit status 1), naming
// the option, the file and the name to give, before any work.
TEST_F(ExportCommand, AnOutNotEndingInSafetensorsIsRefused) {
  const std::string ck = file("ck.safetensors"), in = file("in.safetensors");
  save_smoke_checkpoint(ck);
  save_input(in, {1, 3, 32, 32}, 5);
  EXPECT_TRUE(exited(run_program("export " + ck + " --out " + file("x.txt")), 1,
                     {"export: --out '" + file("x.txt") + "' must end in .safetensors",
                      "e.g. " + file("x.safetensors")}));
  EXPECT_TRUE(exited(run_program("export " + ck + " --out " + file("weights")), 1,
                     {"export: --out '" + file("weights") + "' must end in .safetensors",
                      "e.g. " + file("weights.safetensors")}));
  EXPECT_TRUE(exited(infer(ck, in, file("logits.txt")), 1,
                     {"infer: --out '" + file("logits.txt") + "' must end in .safetensors",
                      "e.g. " + file("logits.safetensors")}));
  // a name with no file name: an example that is one ("e.g. ..safetensors" it was)
  EXPECT_TRUE(exited(run_program("export " + ck + " --out " + file(".")), 1,
                     {"must end in .safetensors", "e.g. " + file("./model.safetensors")}));
  EXPECT_TRUE(exited(run_program("export " + ck + " --out ''"), 1,
                     {"--out '' must end in .safetensors", "e.g. model.safetensors"}));
  for (const char* name : {"x.txt", "weights", "logits.txt"}) EXPECT_FALSE(fs::exists(file(name)));
  // the extension in any case, as validate's and plot's
  EXPECT_TRUE(exited(run_program("export " + ck + " --out " + file("W.SafeTensors")), 0, {}));
  EXPECT_TRUE(exited(infer(ck, in, file("L.SAFETENSORS")), 0, {}));
}

// infer --out replaced any safetensors file that was not a training checkpoint nor an input of
// the command: an export of weights (or another input batch) given by mistake became logits. It
// replaces logits only; a file holding other tensors is refused, named with what it holds.
TEST_F(ExportCommand, InferReplacesLogitsOnlyNotWeightsOrBatches) {
  const std::string ck = file("ck.safetensors"), w = file("w.safetensors"),
                    in = file("in.safetensors"), other = file("other.safetensors"),
                    logits = file("logits.safetensors");
  save_smoke_checkpoint(ck);
  ASSERT_EQ(run_program("export " + ck + " --out " + w).exit_code, 0);
  save_input(in, {1, 3, 32, 32}, 5);
  save_input(other, {1, 3, 32, 32}, 6);
  for (const std::string& target : {w, other}) {
    const std::string before = io::read_file(target);
    const ProgramRun r = infer(ck, in, target);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("infer: --out " + target + " holds "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("not logits: it is not replaced"), std::string::npos) << r.output;
    EXPECT_EQ(io::read_file(target), before);
  }
  ASSERT_EQ(infer(ck, in, logits).exit_code, 0);
  EXPECT_EQ(infer(ck, in, logits).exit_code, 0);  // earlier logits: replaced
}

// export --out over another safetensors file of the user's (an input batch) replaced it with
// weights; it replaces weights (a model's state_dict) and logits only.
TEST_F(ExportCommand, ExportReplacesWeightsNotABatch) {
  const std::string ck = file("ck.safetensors"), w = file("w.safetensors"),
                    in = file("in.safetensors");
  save_smoke_checkpoint(ck);
  save_input(in, {1, 3, 32, 32}, 5);
  const std::string before = io::read_file(in);
  const ProgramRun r = run_program("export " + ck + " --out " + in);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("export: --out " + in +
                          " holds 1 tensor (input), not weights: it is not "
                          "replaced"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(io::read_file(in), before);
  ASSERT_EQ(run_program("export " + ck + " --out " + w).exit_code, 0);
  EXPECT_EQ(run_program("export " + ck + " --out " + w).exit_code, 0);  // weights: replaced
}

// infer --input given a NumPy array said "header length ... runs past the end of the file": the
// error names the option, what the file is, and the inputs infer takes. (An image is an input now:
// one it cannot decode is named as such.)
TEST_F(ExportCommand, InferNamesAnImageOrNumpyInputAsSuch) {
  const std::string ck = file("ck.safetensors");
  save_smoke_checkpoint(ck);
  std::ofstream(file("cat.png"), std::ios::binary)
      << std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x20\0\0\0\x20\x08\x02", 26);
  std::ofstream(file("batch.npy"), std::ios::binary)
      << std::string("\x93NUMPY\x01\0v\0{'descr': '<f4', 'fortran_order': False}", 50);
  const ProgramRun r = infer(ck, file("batch.npy"), file("logits.safetensors"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("infer: --input " + file("batch.npy") + ": safetensors '"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("it is a NumPy array (numpy.save)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("infer takes a batch already sized and normalised"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("or an image file or a folder of images"), std::string::npos) << r.output;
  const ProgramRun png = infer(ck, file("cat.png"), file("logits.safetensors"));
  EXPECT_EQ(png.exit_code, 1) << png.output;
  EXPECT_NE(png.output.find("cannot decode image '" + file("cat.png") + "'"), std::string::npos)
      << png.output;
}

// infer on a FIFO (or a pipe, `--input <(cat a.png)`): the bytes read to tell an image from a
// batch were gone for the decoder ("empty file"), and a FIFO with no writer blocked for ever. It
// is refused, named, before anything opens it.
TEST_F(ExportCommand, InferRefusesAPipeAsInput) {
  const std::string ck = file("ck.safetensors");
  save_smoke_checkpoint(ck);
  ASSERT_EQ(mkfifo(file("fifo.png").c_str(), 0600), 0);
  const ProgramRun r = infer(ck, file("fifo.png"), file("logits.safetensors"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("infer: --input " + file("fifo.png") +
                          " is not a regular file or a folder (a pipe, FIFO or device)"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(file("logits.safetensors")));
}

// infer: a file named as an image is read as one, whatever its bytes: a plain-text PGM (P2) or a
// text file named .png was taken for a safetensors batch ("it is a text file (a YAML config such
// as a run's args.yaml?)"); the decoder's message names the file and what it is.
TEST_F(ExportCommand, InferReadsAFileNamedAsAnImageAsAnImage) {
  const std::string ck = file("ck.safetensors");
  save_smoke_checkpoint(ck);
  std::ofstream(file("plain.pgm")) << "P2\n2 2\n255\n0 1 2 3\n";
  std::ofstream(file("notes.png")) << "not an image\n";
  const auto infer_image = [&](const std::string& input) {
    return infer(ck, input, file("logits.safetensors"));
  };
  const ProgramRun pgm = infer_image(file("plain.pgm"));
  EXPECT_EQ(pgm.exit_code, 1) << pgm.output;
  EXPECT_NE(pgm.output.find("cannot decode image '" + file("plain.pgm") +
                            "': a plain-text (ASCII) PGM (P2)"),
            std::string::npos)
      << pgm.output;
  EXPECT_EQ(pgm.output.find("safetensors"), std::string::npos) << pgm.output;
  const ProgramRun txt = infer_image(file("notes.png"));
  EXPECT_EQ(txt.exit_code, 1) << txt.output;
  EXPECT_NE(txt.output.find("cannot decode image '" + file("notes.png") + "': not a JPEG, PNG"),
            std::string::npos)
      << txt.output;
  EXPECT_EQ(txt.output.find("YAML"), std::string::npos) << txt.output;
  // image formats the decoders do not read, by their names: the decoder names the format (they
  // were read as safetensors: "header length ... runs past the end of the file")
  std::ofstream(file("anim.gif"), std::ios::binary) << "GIF89a" << std::string(26, '\x01');
  std::ofstream(file("photo.webp"), std::ios::binary)
      << "RIFF" << std::string(4, '\x20') << "WEBPVP8 " << std::string(20, '\x01');
  for (const auto& [name, kind] : {std::pair<std::string, std::string>{"anim.gif", "a GIF file"},
                                   {"photo.webp", "a WebP file"}}) {
    const ProgramRun r = infer_image(file(name));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("cannot decode image '" + file(name) + "': " + kind +
                            ", which haargrad does not decode"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("header length"), std::string::npos) << r.output;
  }
}

// An image whose name is not UTF-8 (Latin-1 "caf\xe9.png") ran the model and then failed to
// write the logits ("[json.exception.type_error.316] invalid UTF-8 byte ... please report it"):
// the file's metadata 'images' is JSON. The name is refused first, escaped.
TEST_F(ExportCommand, InferNamesAnImageWhoseNameIsNotUtf8) {
  const std::string ck = file("ck.safetensors");
  save_smoke_checkpoint(ck);
  fs::create_directories(file("images"));
  const data::Image img{32, 32, 3, std::vector<uint8_t>(32 * 32 * 3, 100)};
  data::write_png(file("images/a.png"), img);
  data::write_png(file("images/caf\xe9.png"), img);
  const ProgramRun r = infer(ck, file("images"), file("logits.safetensors"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("infer: the image path '" + file("images/caf\\xe9.png") +
                          "' is not UTF-8 text"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("unexpected"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(file("logits.safetensors")));
}

// infer: an ImageFolder split given whole (DIR/val, its images in one folder per class) was "a
// folder without image files" and no more; the message says that infer does not look into its
// sub-folders and names one.
TEST_F(ExportCommand, InferOnAFolderOfClassFoldersNamesThem) {
  const std::string ck = file("ck.safetensors");
  save_smoke_checkpoint(ck);
  std::filesystem::create_directories(file("val/cat"));
  std::filesystem::create_directories(file("val/dog"));
  const ProgramRun r = infer(ck, file("val"), file("logits.safetensors"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("infer: --input " + file("val") + " is a folder without image files"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("infer does not look into its 2 sub-folders: give one of them, e.g. " +
                          file("val/cat")),
            std::string::npos)
      << r.output;
  // an empty folder: no word of sub-folders
  std::filesystem::create_directories(file("empty"));
  const ProgramRun e = infer(ck, file("empty"), file("logits.safetensors"));
  EXPECT_EQ(e.exit_code, 1) << e.output;
  EXPECT_EQ(e.output.find("sub-folders"), std::string::npos) << e.output;
}

// infer on a folder of images beside sub-folders (a class folder among loose images) made rows of
// the folder's own images and left the sub-folders' out unsaid; a warning names them now.
TEST_F(ExportCommand, InferNamesTheSubFoldersItLeavesOut) {
  const std::string ck = file("ck.safetensors");
  save_smoke_checkpoint(ck);
  fs::create_directories(file("imgs/cat"));
  fs::create_directories(file("imgs/dog"));
  write_grey_png(file("imgs/a.png"));
  write_grey_png(file("imgs/cat/b.png"));
  write_grey_png(file("imgs/dog/c.png"));
  EXPECT_TRUE(exited(infer(ck, file("imgs"), file("logits.safetensors")), 0,
                     {"infer: " + file("imgs") + " left out 2 sub-folders (" + file("imgs/cat") +
                      ", ...): infer reads the folder's own images only"}));
  EXPECT_EQ(safetensors::load(file("logits.safetensors")).tensors.at("logits").size(0), 1);
  fs::remove_all(file("imgs/dog"));
  EXPECT_TRUE(exited(infer(ck, file("imgs"), file("logits.safetensors")), 0,
                     {"infer: " + file("imgs") + " left out 1 sub-folder (" + file("imgs/cat") +
                      "): infer reads"}));
}

// A folder copied from macOS holds AppleDouble files named as images (._a.png: hidden, no image):
// infer read them and failed on "cannot decode image '._a.png'", where training's ImageFolder
// leaves hidden files out. infer leaves them out too, unsaid, as it does .DS_Store.
TEST_F(ExportCommand, InferLeavesOutHiddenFilesAsTheImageFolderDoes) {
  const std::string ck = file("ck.safetensors");
  save_smoke_checkpoint(ck);
  fs::create_directories(file("imgs/.thumbs"));
  write_grey_png(file("imgs/a.png"));
  std::ofstream(file("imgs/._a.png"), std::ios::binary) << std::string("\0\5\26\7\0\2\0\0", 8);
  std::ofstream(file("imgs/.DS_Store"), std::ios::binary) << "Bud1";
  const ProgramRun r = infer(ck, file("imgs"), file("logits.safetensors"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(safetensors::load(file("logits.safetensors")).tensors.at("logits").size(0), 1);
  EXPECT_EQ(r.output.find("._a.png"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("sub-folder"), std::string::npos) << r.output;
}

// A link named as an image whose target is gone was left out "as no JPEG, PNG, BMP, PPM or PGM by
// its name", which its name contradicts. infer names the link and its missing target, as any image
// it cannot read: left out under corrupt_images: skip, the end under error.
TEST_F(ExportCommand, InferNamesAnImageLinkToNothing) {
  const std::string ck = file("ck.safetensors");
  save_smoke_checkpoint(ck);
  fs::create_directories(file("imgs"));
  write_grey_png(file("imgs/a.png"));
  fs::create_symlink(file("gone.jpg"), file("imgs/b.jpg"));
  const std::string gone =
      file("imgs/b.jpg") + ", a symbolic link to '" + file("gone.jpg") + "', which does not exist";
  EXPECT_TRUE(exited(infer(ck, file("imgs"), file("logits.safetensors")), 0,
                     {gone + "; its row is left out"}));
  EXPECT_TRUE(exited(infer(ck, file("imgs"), file("logits.safetensors"), " --corrupt-images error"),
                     1, {gone}));
  // a link that cannot be followed (here a loop) was said to lead nowhere, "which does not exist"
  fs::remove(file("imgs/b.jpg"));
  fs::create_symlink("c.jpg", file("imgs/c.jpg"));
  EXPECT_TRUE(
      exited(infer(ck, file("imgs"), file("logits.safetensors"), " --corrupt-images error"), 1,
             {file("imgs/c.jpg") + ", a symbolic link to 'c.jpg', which cannot be followed"},
             {"does not exist"}));
}

// infer on a folder stopped at its first unreadable image ("cannot decode image 'b.png': ..."),
// naming neither the command nor what became of the other images. It meets such an image as
// training's ImageFolder does, by corrupt_images: skip (the default) names it and why, leaves its
// row out (the metadata 'images' names the rows written) and goes on; error stops at it, naming it,
// and writes nothing.
TEST_F(ExportCommand, InferLeavesOutAnUnreadableImageAsCorruptImagesSays) {
  const std::string ck = file("ck.safetensors");
  save_smoke_checkpoint(ck);
  folder_with_unreadable_b(file("imgs"));
  const std::string why = "cannot decode image '" + file("imgs/b.png") + "': not a JPEG, PNG";
  EXPECT_TRUE(exited(infer(ck, file("imgs"), file("logits.safetensors")), 0,
                     {"infer: " + why, "; its row is left out (corrupt_images: skip)",
                      "infer: 1 of the 3 images of " + file("imgs") + " could not be read"}));
  const safetensors::File out = safetensors::load(file("logits.safetensors"));
  EXPECT_EQ(out.tensors.at("logits").size(0), 2);
  EXPECT_EQ(out.metadata.at("images"),
            "[\"" + file("imgs/a.png") + "\",\"" + file("imgs/c.png") + "\"]");
  // one image a forward pass (-b 1; the folder went into one batch, ~14 MB an image): the same
  // rows, and the unreadable image's batch is empty
  EXPECT_TRUE(exited(infer(ck, file("imgs"), file("one_each.safetensors"), " -b 1"), 0,
                     {"infer: " + why, "infer: 1 of the 3 images of " + file("imgs")}));
  const safetensors::File each = safetensors::load(file("one_each.safetensors"));
  EXPECT_EQ(each.metadata.at("images"), out.metadata.at("images"));
  const std::vector<float> whole = out.tensors.at("logits").to_vector<float>(),
                           split = each.tensors.at("logits").to_vector<float>();
  ASSERT_EQ(split.size(), whole.size());
  for (size_t k = 0; k < whole.size(); ++k) EXPECT_NEAR(split[k], whole[k], 1e-5) << k;
  EXPECT_TRUE(exited(infer(ck, file("imgs"), file("x.safetensors"), " -b 0"), 2, {"--batch-size"}));
  fs::remove(file("logits.safetensors"));
  EXPECT_TRUE(exited(infer(ck, file("imgs"), file("logits.safetensors"), " --corrupt-images error"),
                     1, {"infer: " + why, "(corrupt_images: error;", "nothing was written"}));
  EXPECT_FALSE(fs::exists(file("logits.safetensors")));
  // a safetensors batch in forward passes of -b rows: the same logits
  save_input(file("in.safetensors"), {3, 3, 32, 32}, 1);
  ASSERT_TRUE(exited(infer(ck, file("in.safetensors"), file("all.safetensors")), 0, {}));
  ASSERT_TRUE(exited(infer(ck, file("in.safetensors"), file("twos.safetensors"), " -b 2"), 0, {}));
  const std::vector<float> all =
      safetensors::load(file("all.safetensors")).tensors.at("logits").to_vector<float>();
  const std::vector<float> twos =
      safetensors::load(file("twos.safetensors")).tensors.at("logits").to_vector<float>();
  ASSERT_EQ(twos.size(), all.size());
  for (size_t k = 0; k < all.size(); ++k) EXPECT_NEAR(twos[k], all[k], 1e-5) << k;
  // a batch is read whole: the key changes nothing for it
  EXPECT_TRUE(exited(
      infer(ck, file("in.safetensors"), file("logits.safetensors"), " --corrupt-images error"), 1,
      {"--corrupt-images changes nothing here"}));
}

// The closing warning of the images left out ("the logits have 2 rows, which the file's metadata
// \"images\" names") was said before the model ran: when the logits then failed (non-finite:
// "nothing was written"), it told of a file that was never written. It is said once the file is
// written.
TEST_F(ExportCommand, InferSaysTheRowsLeftOutOnlyOfAFileWritten) {
  const train::Config c = cpu_config("smoke");
  ConvNeXt model(train::model_config_from(c), 3);
  model.stages[0]->blocks[0]->fc1.weight.fill_(std::nanf(""));
  const std::string ck = file("nan.safetensors");
  train::save_checkpoint(ck, model, nullptr, train::TrainState{}, train::to_yaml(c));
  folder_with_unreadable_b(file("imgs"));
  EXPECT_TRUE(exited(infer(ck, file("imgs"), file("logits.safetensors")), 1,
                     {"; its row is left out (corrupt_images: skip)", "logits are not finite",
                      "nothing was written"},
                     {"could not be read and are left out", "the logits have 2 rows"}));
  EXPECT_FALSE(fs::exists(file("logits.safetensors")));
}

// A folder's rows were in byte order ("UP.png" before "alpha.png", "img10" before "img2"), where
// timm's inference.py writes them in its folder reader's natural order.
TEST_F(ExportCommand, InferTakesAFoldersImagesInTimmsOrder) {
  const train::Config c = cpu_config("fashion_mnist");
  const std::string ck = file("ck.safetensors");
  save_model_checkpoint(ck, c);
  fs::create_directories(file("order"));
  for (const char* name : {"img10.png", "UP.png", "img2.png", "alpha.png"})
    data::write_png(file(std::string("order/") + name),
                    data::Image{28, 28, 1, std::vector<uint8_t>(28 * 28, 90)});
  ASSERT_EQ(infer(ck, file("order"), file("o.safetensors")).exit_code, 0);
  const auto images =
      nlohmann::json::parse(safetensors::load(file("o.safetensors")).metadata.at("images"));
  std::vector<std::string> names;
  for (const auto& p : images) names.push_back(fs::path(p.get<std::string>()).filename().string());
  EXPECT_EQ(names, (std::vector<std::string>{"alpha.png", "img2.png", "img10.png", "UP.png"}));
}

// infer: the EMA's weights on request; keys that would change nothing refused; shape mistakes
// named in the layout the file holds; export refuses non-finite weights and a non-.safetensors out.
TEST_F(ExportCommand, InferTakesTheEmaAndRefusesWhatWouldChangeNothing) {
  const train::Config c = cpu_config("fashion_mnist");
  ConvNeXt model(train::model_config_from(c), 3), ema(train::model_config_from(c), 4);
  const std::string ck = file("ck.safetensors"), in = file("in.safetensors"),
                    a = file("a.safetensors"), b = file("b.safetensors");
  train::save_checkpoint(ck, model, nullptr, train::TrainState{}, train::to_yaml(c), &ema);
  save_input(in, {2, 1, 28, 28}, 5);
  // without --ema the model's own, said beside the EMA's that timm's inference.py would take
  EXPECT_TRUE(exited(infer(ck, in, a), 0,
                     {"holds model EMA weights too; these logits are the model's own (--ema"}));
  const ProgramRun e = infer(ck, in, b, " --ema");
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_NE(e.output.find("'s model EMA"), std::string::npos) << e.output;
  EXPECT_EQ(e.output.find("holds model EMA weights too"), std::string::npos) << e.output;
  const Tensor la = safetensors::load(a).tensors.at("logits"),
               lb = safetensors::load(b).tensors.at("logits");
  EXPECT_GT(test::rel_error(la.to(DType::f64), lb.to(DType::f64)), 1e-3);  // other weights
  // validate's spelling names this command's, and the other way round
  EXPECT_TRUE(exited(infer(ck, in, b, " --use-ema"), 1, {"--ema here; --use-ema is validate's"}));
  EXPECT_TRUE(exited(run_program("validate --checkpoint " + ck + " --ema"), 1,
                     {"validate evaluates a checkpoint's with --use-ema"}));
  for (const char* key : {"--mean 0.5", "--precision bf16", "--img-size 64"}) {
    const ProgramRun r = infer(ck, in, file("c.safetensors"), std::string(" ") + key);
    EXPECT_EQ(r.exit_code, 1) << key;
    EXPECT_NE(r.output.find("changes nothing here"), std::string::npos) << r.output;
  }
  save_input(in, {2, 3, 28, 28}, 5);
  const ProgramRun rgb = infer(ck, in, file("c.safetensors"));
  EXPECT_NE(rgb.output.find("has 3 channels; wtconvnext_fmnist takes 1"), std::string::npos)
      << rgb.output;
  EXPECT_EQ(rgb.output.find("--layout"), std::string::npos) << rgb.output;  // no wrong hint
  save_input(in, {2, 1, 2, 2}, 5);
  const ProgramRun tiny = infer(ck, in, file("c.safetensors"));
  EXPECT_NE(tiny.output.find("the input [2, 1, 2, 2] (nchw) has 2 x 2 pixels"), std::string::npos)
      << tiny.output;

  // an existing file of another kind is not replaced, though named .safetensors
  std::ofstream(file("res.safetensors")) << "model,top1\n";
  const ProgramRun csv = run_program("export " + ck + " --out " + file("res.safetensors"));
  EXPECT_NE(csv.output.find("exists and is not a safetensors file"), std::string::npos)
      << csv.output;
  EXPECT_EQ(io::read_file(file("res.safetensors")), "model,top1\n");
  std::ofstream(file("raw.safetensors")) << "bytes";
  const ProgramRun bin = infer(ck, in, file("raw.safetensors"));
  EXPECT_NE(bin.output.find("exists and is not a safetensors file"), std::string::npos)
      << bin.output;
  EXPECT_EQ(run_program("export " + ck + " --out " + file("w.safetensors")).exit_code, 0);
  EXPECT_EQ(run_program("export " + ck + " --out " + file("w.safetensors")).exit_code,
            0);  // replaced: its kind
  const ProgramRun epochs =
      run_program("export " + ck + " --out " + file("e.safetensors") + " --epochs 3");
  EXPECT_NE(epochs.output.find("export: --epochs changes nothing here"), std::string::npos)
      << epochs.output;
  // no config key at all: named unknown (it was "changes nothing here", as if it were a key)
  const ProgramRun bogus =
      run_program("export " + ck + " --out " + file("e.safetensors") + " --modle convnext_atto");
  EXPECT_EQ(bogus.exit_code, 1);
  EXPECT_NE(bogus.output.find("export: unknown option --modle (did you mean --model?)"),
            std::string::npos)
      << bogus.output;
  // a model the command line asked for is named as the command line's, not the stored config's
  const ProgramRun other =
      run_program("export " + ck + " --out " + file("e.safetensors") + " --dims 480,960");
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_NE(other.output.find("the model of the config stored in " + ck +
                              " with the command line's --dims ("),
            std::string::npos)
      << other.output;
  {
    autograd::NoGradGuard no_grad;
    Tensor w = model.stages[0]->blocks[0]->fc1.weight;
    std::vector<float> v = w.to_vector<float>();
    v[3] = std::nanf("");
    w.copy_(Tensor::from_vector(w.shape(), v));
  }
  train::save_checkpoint(ck, model, nullptr, train::TrainState{}, train::to_yaml(c));
  const ProgramRun nan = run_program("export " + ck + " --out " + file("nan.safetensors"));
  EXPECT_EQ(nan.exit_code, 1);
  EXPECT_NE(nan.output.find("1 of "), std::string::npos) << nan.output;
  EXPECT_NE(nan.output.find("are non-finite"), std::string::npos) << nan.output;
  // the first such tensor named, as validate and a resume name it (one check for all of them)
  EXPECT_NE(nan.output.find("the first in 'stages.0.blocks.0.mlp.fc1.weight'"), std::string::npos)
      << nan.output;
  EXPECT_FALSE(fs::exists(file("nan.safetensors")));
}

}  // namespace
}  // namespace hg
