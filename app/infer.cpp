// `haargrad infer --checkpoint W --input BATCH.safetensors --out LOGITS.safetensors`: the logits of
// a batch, for comparing haargrad with another implementation on the same input
// (scripts/timm-check.py does so with timm). The input tensor is named "input" (or is the file's
// only tensor), NCHW like PyTorch's (--layout nhwc for channels-last), any float dtype; the output
// holds "logits" (N, num_classes) float32. The batch goes into the model as it is: it must be
// normalised already (the config's mean and std apply to the data loader, not here).
// The input may also be an image file or a folder of them (its image files by name, not its
// sub-folders, which a warning names), so that no PyTorch is needed to write it: they go through
// the config's evaluation transform, validate's (a JPEG is decoded at full size here, where
// validate's loader may decode it downscaled: the last bits may differ). An image it cannot read is
// met as training's ImageFolder meets one, by corrupt_images: skip (the default) names it and why
// and leaves its row out, error stops there; the logits file's metadata "images" names the rows
// either way. The model takes -b / --batch-size rows a forward pass (timm's inference.py's 256),
// so memory does not grow with the input.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "app/command.h"
#include "app/config_help.h"
#include "app/model_from_args.h"
#include "core/autograd.h"
#include "core/safetensors.h"
#include "core/threads.h"
#include "core/utf8.h"
#include "data/from_config.h"
#include "data/image.h"
#include "data/image_folder.h"
#include "data/transforms.h"
#include "models/convnext.h"
#include "train/checkpoint.h"
#include "train/run_folder.h"
#include "train/trainer.h"

namespace hg::app {
namespace {

namespace fs = std::filesystem;

struct InferArgs {
  std::string checkpoint, input, out, config, layout = "nchw";
  bool ema = false;
  int topk = 5;
  int64_t batch_size = 256;  // rows a forward pass takes (timm's inference.py -b, its default)
  std::vector<std::string> overrides;
};

/// At most this many images get their top-k printed (a folder of thousands would flood the
/// console; the logits file holds every row).
constexpr size_t kTopkShown = 20;

/// One image's line: its `k` most probable classes (softmax of its n logits, in double), most
/// probable first, as "class (percent)", ties by the lower index.
std::string topk_line(const float* logits, int64_t n, int k,
                      const std::vector<std::string>& names) {
  const float top = *std::max_element(logits, logits + n);
  double sum = 0;
  for (int64_t c = 0; c < n; ++c) sum += std::exp(double(logits[c]) - double(top));
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t c = 0; c < n; ++c) order[static_cast<size_t>(c)] = c;
  const auto kk = static_cast<size_t>(std::min<int64_t>(k, n));
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(kk), order.end(),
                    [&](int64_t a, int64_t b) {
                      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
                    });
  std::string line;
  for (size_t i = 0; i < kk; ++i) {
    const double p = std::exp(double(logits[order[i]]) - double(top)) / sum;
    const size_t c = static_cast<size_t>(order[i]);
    line += fmt::format("{}{} ({}{:.1f}%)", i == 0 ? "" : ", ", order[i],
                        c < names.size() ? printable(names[c]) + ", " : std::string(), 100 * p);
  }
  return line;
}

/// The top-k classes of the first kTopkShown rows on stdout (timm's inference.py reports top-k
/// too), one line each: "IMAGE: 3 (91.2%), 7 (4.1%), ...", or "row 0: ..." for a safetensors
/// batch (`images` empty). Class indices: the position of the class folder in timm's order, as
/// training's ImageFolder numbered them; with the class names the checkpoint's run recorded,
/// "3 (sneaker, 91.2%)".
void print_topk(const Tensor& logits, const std::vector<std::string>& images, int k,
                const std::vector<std::string>& names) {
  if (k <= 0) return;
  const int64_t n = logits.size(1);
  const std::vector<float> v = logits.to_vector<float>();
  const auto rows = static_cast<size_t>(logits.size(0));
  const size_t shown = std::min(rows, kTopkShown);
  for (size_t r = 0; r < shown; ++r) {
    // a control character in a name (a newline) as \xHH: one line an image, nothing sent to the
    // terminal as a command
    const std::string name = images.empty() ? str("row ", r) : printable(images[r]);
    std::printf("%s: %s\n", name.c_str(),
                topk_line(v.data() + static_cast<int64_t>(r) * n, n, k, names).c_str());
  }
  if (rows > shown)
    std::printf("... and %zu more %s (their logits are in the file)\n", rows - shown,
                images.empty() ? "rows" : "images");
  std::fflush(stdout);
}

/// The batch as NHWC f32, with the shape as the file holds it in *stored (for messages).
Tensor read_input(const std::string& path, const std::string& layout, Shape* stored) {
  safetensors::File f;
  try {
    f = safetensors::load(path);
  } catch (const Error& e) {
    throw Error(str("infer: --input ", path, ": ", e.what(),
                    " (infer takes a batch already sized and normalised, as a safetensors tensor "
                    "'input' of N x C x H x W: in Python, safetensors.torch.save_file({'input': "
                    "batch}, 'batch.safetensors'); or an image file or a folder of images, which "
                    "it sizes and normalises itself)"));
  }
  auto it = f.tensors.find("input");
  if (it == f.tensors.end()) {
    HG_CHECK(f.tensors.size() == 1, "infer: ", path, " has no tensor named 'input' and ", f.tensors.size(),
             " tensors in all; name the batch 'input'");
    it = f.tensors.begin();
  }
  const Tensor& x = it->second;
  *stored = x.shape();
  HG_CHECK(x.ndim() == 4, "infer: '", it->first, "' of ", path, " must be a batch of images (4-D), got ",
           shape_str(x.shape()));
  HG_CHECK(x.numel() > 0, "infer: '", it->first, "' of ", path, " is empty (", shape_str(x.shape()),
           "): nothing to infer");
  HG_CHECK(x.dtype() == DType::f32 || x.dtype() == DType::f64, "infer: '", it->first, "' of ", path,
           " must be float32 or float64, got ", dtype_name(x.dtype()));
  const Tensor nhwc = layout == "nchw" ? x.permute({0, 2, 3, 1}).contiguous() : x;
  return nhwc.to(DType::f32);
}

/// Whether a file's name says image: one the decoders read, or one of the image formats they do
/// not (TIFF, WebP and GIF, the last not in torchvision's ImageFolder list either), so that the
/// decoder names it ("a GIF file, which haargrad does not decode") rather than the safetensors
/// reader ("header length ... runs past the end of the file").
bool named_as_image(const std::string& path) {
  return data::is_image_file(path) || data::undecodable_image_file(path) ||
         data::lower_extension(path) == ".gif";
}

/// An image file or a folder's image files, by name (the files the batch's rows are).
std::vector<std::string> input_images(const std::string& path) {
  std::error_code ec;
  // a pipe (`--input <(cat a.png)`) or a FIFO: its first bytes, read here to tell an image from
  // a batch, were gone for the reader ("empty file", a batch's header length garbled), and a
  // FIFO with no writer blocked the open for ever
  const fs::file_status st = fs::status(path, ec);
  HG_CHECK(ec || fs::is_regular_file(st) || fs::is_directory(st), "infer: --input ", path,
           " is not a regular file or a folder (a pipe, FIFO or device): infer reads its input "
           "more than once; write it to a file first");
  if (!fs::is_directory(path, ec)) {
    // by its bytes, as the data loader tells images, or by its name (a plain-text PGM, a text
    // file named .png, a GIF: the decoder says what it is); a .safetensors batch whose header
    // length happens to read "BM" or "P5" stays a batch
    uint8_t head[16] = {};
    std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(head), sizeof head);
    const bool image = data::sniff_image_format(head, sizeof head) != data::ImageFormat::unknown ||
                       named_as_image(path);
    return image && fs::path(path).extension() != ".safetensors" ? std::vector{path}
                                                                 : std::vector<std::string>{};
  }
  std::vector<std::string> files, folders, others;
  for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
    const std::string name = e.path().filename().string();
    // hidden files go unsaid, as the ImageFolder of training leaves them out: .DS_Store, and
    // macOS's AppleDouble files named as images (._a.jpg), which no decoder reads
    if (!name.empty() && name[0] == '.') continue;
    // an image's link whose target is gone was left out as a file "no image by its name": it is
    // one of the images, which read_images cannot read (and says why)
    const bool broken_link =
        data::is_image_file(name) && !data::broken_link_reason(e.path().string()).empty();
    if (broken_link || (e.is_regular_file(ec) && data::is_image_file(e.path().string())))
      files.push_back(e.path().string());
    else if (e.is_directory(ec))
      folders.push_back(e.path().string());
    else
      others.push_back(e.path().string());
  }
  // rows in timm's order (its folder reader sorts by natural_key: img2 before img10, "alpha"
  // before "UP.JPG"), as its inference.py writes them
  std::sort(files.begin(), files.end(), data::natural_less);
  std::sort(folders.begin(), folders.end());
  std::sort(others.begin(), others.end());
  // the rows are the folder's images: what is left out is said, the images it cannot decode
  // (WebP, TIFF, GIF) first
  std::stable_partition(others.begin(), others.end(), named_as_image);
  if (!files.empty() && !others.empty())
    spdlog::warn("infer: {} left out {} {} that {} no JPEG, PNG, BMP, PPM or PGM by {} name ({}{})",
                 printable(path), others.size(), others.size() == 1 ? "file" : "files",
                 others.size() == 1 ? "is" : "are", others.size() == 1 ? "its" : "their",
                 printable(others.front()), others.size() > 1 ? ", ..." : "");
  // rows of the folder's own images alone: its sub-folders' images (a class folder beside loose
  // images) are not rows, which was unsaid
  if (!files.empty() && !folders.empty())
    spdlog::warn(
        "infer: {} left out {} {} ({}{}): infer reads the folder's own images only, not those of "
        "its sub-folders (give a sub-folder as --input for its images)",
        printable(path), folders.size(), folders.size() == 1 ? "sub-folder" : "sub-folders",
        printable(folders.front()), folders.size() > 1 ? ", ..." : "");
  // an ImageFolder split (one folder per class) given whole: its images are a level down
  const std::string sub = folders.empty()
                              ? std::string()
                              : str(" at its top (infer does not look into its ", folders.size(),
                                    " sub-folders: give one of them, e.g. ", folders.front(), ")");
  HG_CHECK(!files.empty(), "infer: --input ", path, " is a folder without image files (",
           ec ? ec.message() : std::string("JPEG, PNG, BMP, PPM or PGM by their names"), ")", sub,
           "; give an image, a folder of images or a safetensors batch");
  return files;
}

/// The images as NHWC f32 through the evaluation transform of `cfg` (resize, center crop,
/// normalise: img_size, crop_pct, interpolation, mean, std). An image that cannot be read is met
/// as the ImageFolder of training and validate meets one (cfg.corrupt_images): error stops at it,
/// naming it and why; skip names it so in a warning and leaves it out of *files, which then holds
/// the images the rows are (none, when none of them could be read). `listed`: the images of the
/// whole input (one image alone has no others to go on with).
Tensor read_images(std::vector<std::string>* files, const train::Config& cfg, size_t listed) {
  const data::CorruptPolicy policy = data::parse_corrupt_policy(cfg.corrupt_images);
  const data::Transform t(data::make_transform_options(cfg, false));
  Tensor x =
      Tensor::empty({static_cast<int64_t>(files->size()), cfg.img_size, cfg.img_size, cfg.in_chans},
                    DType::f32, Device::cpu);
  Generator unused(0);  // evaluation draws nothing
  std::vector<std::string> read;
  for (const std::string& f : *files) {
    // a link's own path shows no target: it is said (gone, or cannot be followed and why)
    std::string why = data::broken_link_reason(f);
    if (!why.empty()) {
      why = str("cannot read ", f, ", ", why);
    } else {
      try {
        t.apply(data::read_image(f, static_cast<int>(cfg.in_chans)), unused,
                static_cast<float*>(x.data_ptr()) +
                    static_cast<int64_t>(read.size()) * t.output_numel());
        read.push_back(f);
        continue;
      } catch (const data::CorruptImage& e) {
        why = e.what();
      }
    }
    if (policy == data::CorruptPolicy::error || listed == 1)
      throw Error(str("infer: ", why,
                      listed == 1 ? std::string()
                                  : " (corrupt_images: error; skip leaves such an image out and "
                                    "goes on with the others)",
                      "; nothing was written"));
    spdlog::warn("infer: {}; its row is left out (corrupt_images: skip)", why);
  }
  *files = std::move(read);
  return x.slice(0, 0, static_cast<int64_t>(files->size())).contiguous();
}

/// The model's logits (eval mode, f32 on the host) for the rows of `x` (NHWC, on the host).
Tensor logits_of(ConvNeXt& model, const Tensor& x, Device device) {
  autograd::NoGradGuard no_grad;
  return model.forward(x.to(device), false).to(Device::cpu).contiguous();
}

/// Logits row blocks stacked into one (N, classes) tensor.
Tensor stack_rows(const std::vector<Tensor>& blocks, int64_t classes) {
  std::vector<float> rows;
  for (const Tensor& b : blocks) {
    const std::vector<float> v = b.to_vector<float>();
    rows.insert(rows.end(), v.begin(), v.end());
  }
  return Tensor::from_vector(Shape{static_cast<int64_t>(rows.size()) / classes, classes}, rows);
}

/// The images' logits, `batch` images a forward pass: memory does not grow with the folder (one
/// batch of every image took ~14 MB an image, 6 GB for 400 at 224 px). *images keeps those read.
Tensor image_logits(ConvNeXt& model, std::vector<std::string>* images, const train::Config& cfg,
                    int64_t batch, Device device) {
  const size_t listed = images->size(), step = static_cast<size_t>(batch);
  std::vector<std::string> kept;
  std::vector<Tensor> blocks;
  for (size_t at = 0; at < listed; at += step) {
    std::vector<std::string> chunk(
        images->begin() + static_cast<std::ptrdiff_t>(at),
        images->begin() + static_cast<std::ptrdiff_t>(std::min(listed, at + step)));
    const Tensor x = read_images(&chunk, cfg, listed);
    if (chunk.empty()) continue;
    blocks.push_back(logits_of(model, x, device));
    kept.insert(kept.end(), chunk.begin(), chunk.end());
  }
  HG_CHECK(!kept.empty(), "infer: none of the ", listed,
           " images could be read (each named above); nothing was written");
  *images = std::move(kept);
  return stack_rows(blocks, model.config.num_classes);
}

/// The logits of the safetensors batch --input (read_input), checked against the model's
/// channels and total stride, `a.batch_size` rows a forward pass.
Tensor batch_logits(ConvNeXt& model, const InferArgs& a, Device device) {
  Shape stored;
  const Tensor x = read_input(a.input, a.layout, &stored);
  const int64_t C = model.config.in_chans;
  const std::string& name = model.config.model;
  if (x.size(3) != C) {
    // the other layout's channel axis holding C is the likely mistake; otherwise no hint
    const int64_t other = a.layout == "nchw" ? stored[3] : stored[1];
    throw Error(str("infer: the input ", shape_str(stored), " read as ", a.layout, " has ",
                    x.size(3), x.size(3) == 1 ? " channel" : " channels", "; ", name, " takes ", C,
                    other != C           ? std::string()
                    : a.layout == "nchw" ? " (a channels-last batch needs --layout nhwc)"
                                         : " (an NCHW batch needs --layout nchw)"));
  }
  const int64_t side = model.config.total_stride();
  HG_CHECK(x.size(1) >= side && x.size(2) >= side, "infer: the input ", shape_str(stored), " (",
           a.layout, ") has ", x.size(1), " x ", x.size(2), " pixels; ", name, " takes at least ",
           side, " x ", side, " (its total stride)");
  std::vector<Tensor> blocks;
  for (int64_t at = 0; at < x.size(0); at += a.batch_size)
    blocks.push_back(logits_of(
        model, x.slice(0, at, std::min(x.size(0), at + a.batch_size)).contiguous(), device));
  return stack_rows(blocks, model.config.num_classes);
}

void run_infer(const InferArgs& a) {
  refuse_mpirun("infer");
  HG_CHECK(a.layout == "nchw" || a.layout == "nhwc", "infer: --layout must be nchw or nhwc, got '", a.layout, "'");
  check_replaces_safetensors_only(a.out, "infer: --out");
  train::check_output_file(a.out, "infer: --out", "the logits",
                           {{"the checkpoint", a.checkpoint}, {"the input batch", a.input}});
  // of safetensors files, logits only: weights or a batch given as --out by mistake stay
  check_replaces_its_kind_only(
      a.out, "infer: --out", [](const std::string& name) { return name == "logits"; }, "logits");
  std::vector<std::string> images = input_images(a.input);
  // the logits file names the images in its JSON header, which holds UTF-8 only: a name in
  // another encoding failed that write, after the model had run
  for (const std::string& image : images)
    HG_CHECK(invalid_utf8_at(image) == std::string::npos, "infer: the image path '",
             utf8_shown(image),
             "' is not UTF-8 text, which the logits file's metadata 'images' (JSON) cannot hold: "
             "rename it in UTF-8 (e.g. `convmv -f latin1 -t utf-8 --notest FILE`)");
  // the keys of the model and of where it runs, and for images those of their transform; the
  // others (precision, ...) shape training, which infer does not do
  std::vector<std::string> taken(std::begin(kRunKeys), std::end(kRunKeys));
  if (!images.empty())
    taken.insert(taken.end(), std::begin(kEvalImageKeys), std::end(kEvalImageKeys));
  refuse_keys_that_change_nothing(
      "infer", a.overrides,
      images.empty()
          ? "runs the model in float32 on the batch as given (already normalised and sized)"
          : "runs the model in float32 on the images through the evaluation transform",
      taken);
  // a batch's own size is checked against the model below; img_size is not used then
  const ResolvedConfig rc = config_for_checkpoint(
      a.config, a.checkpoint, a.overrides,
      images.empty() ? train::ImgSizeCheck::unused : train::ImgSizeCheck::against_model);
  set_cpu_threads(static_cast<int>(rc.config.threads));
  const Device device = train::resolve_device(rc.config.device);
  ConvNeXt model(train::model_config_from(rc.config), 0, DType::f32, device);
  // the WTConv path the key asks for (it was taken and not applied): equal up to float rounding
  model.set_wtconv_mode(train::wtconv_mode_of(rc.config));
  if (!a.ema) {
    load_weights_of(rc, a.checkpoint, model);
    // timm's inference.py takes a checkpoint's EMA by default (load_checkpoint's use_ema), its
    // validate.py only with --use-ema, as infer and validate here: the choice is said
    const std::vector<std::string> names = safetensors::tensor_names(a.checkpoint);
    if (std::any_of(names.begin(), names.end(),
                    [](const std::string& n) { return n.rfind(train::kEmaPrefix, 0) == 0; }))
      spdlog::info(
          "infer: {} holds model EMA weights too; these logits are the model's own (--ema for "
          "the EMA's, which timm's inference.py takes by default)",
          a.checkpoint);
  } else {
    HG_CHECK(train::load_ema_weights(a.checkpoint, model), "infer --ema: ", a.checkpoint,
             " holds no model EMA weights (", train::kEmaPrefix,
             "*): its run kept no model_ema, or it is an "
             "export (export --ema writes the EMA's weights under the plain names); infer without "
             "--ema");
  }
  const size_t listed = images.size();
  const Tensor logits = images.empty()
                            ? batch_logits(model, a, device)
                            : image_logits(model, &images, rc.config, a.batch_size, device);
  int64_t bad = 0;
  for (const float v : logits.to_vector<float>()) bad += std::isfinite(v) ? 0 : 1;
  HG_CHECK(bad == 0, "infer: ", bad, " of ", logits.numel(),
           " logits are not finite (NaN or inf) for ", a.input, ": the weights of ", a.checkpoint,
           " or the input hold non-finite values; nothing was written");
  // which row is which image, in the file too: the metadata's "images" is a JSON list of paths
  std::map<std::string, std::string> meta = {{"format", "pt"}, {"model", rc.config.model}};
  if (!images.empty()) meta["images"] = nlohmann::json(images).dump();
  // the class of each logit column, where the checkpoint's run recorded its class folders
  std::vector<std::string> classes;
  if (const std::optional<train::TrainState> st = train::read_train_state(a.checkpoint))
    if (static_cast<int64_t>(st->class_names.size()) == logits.size(1)) classes = st->class_names;
  if (!classes.empty()) meta["classes"] = nlohmann::json(classes).dump();
  safetensors::save(a.out, {{"logits", logits}}, meta);
  // once written: said before the model ran, it told of a file's rows that a later failure (NaN
  // logits: "nothing was written") never wrote
  if (images.size() < listed)
    spdlog::warn(
        "infer: {} of the {} images of {} could not be read and are left out (named above): the "
        "logits have {} rows, which the file's metadata \"images\" names",
        listed - images.size(), listed, a.input, images.size());
  spdlog::info("infer: {} logits of {}{} ({}) on {} written to {}", shape_str(logits.shape()),
               rc.config.model, a.ema ? "'s model EMA" : "", rc.source, device_name(device), a.out);
  if (images.size() > 1)  // which row is which image
    spdlog::info(
        "infer: rows 0 .. {} are the images {} .. {} (by name; the file's metadata "
        "\"images\" lists them all)",
        images.size() - 1, printable(images.front()), printable(images.back()));
  print_topk(logits, images, a.topk, classes);
}

}  // namespace

HG_REGISTER_COMMAND([](CLI::App& root) {
  auto a = std::make_shared<InferArgs>();
  CLI::App* cmd = root.add_subcommand(
      "infer",
      "haargrad infer --checkpoint W --input BATCH.safetensors|IMAGE|FOLDER --out "
      "LOGITS.safetensors [--key value ...]\n"
      "The logits of a batch (eval mode): a safetensors tensor, or images (one row each) through "
      "the\n"
      "config's evaluation transform. The model comes from -c / --config, else the config "
      "stored in\n"
      "the checkpoint, else the config defaults; --key value overrides apply on top (a timm\n"
      "state_dict: --model convnext_tiny, plus --num-classes N when it is not 1000).");
  cmd->add_option("--checkpoint", a->checkpoint, "weights: a haargrad checkpoint, an export, or a timm state_dict")
      ->required();
  cmd->add_option(
         "--input", a->input,
         "safetensors file with the batch: its tensor 'input' (or its only tensor), float32 or "
         "float64, already normalised with the model's mean and std; or an image file (JPEG, PNG, "
         "BMP, PPM, PGM) or a folder of them (one row per image, by file name), through the "
         "evaluation transform: resized, center-cropped and normalised (img_size, crop_pct, "
         "interpolation, mean, std). An image of a folder that cannot be read is named with why "
         "and, as training's ImageFolder does by the config's corrupt_images, left out under "
         "skip (the default; the metadata 'images' names the rows written) or the end of infer "
         "under error (--corrupt-images error)")
      ->required();
  cmd->add_flag("--ema", a->ema, "use the checkpoint's model EMA weights (as validate --use-ema)");
  cmd->add_option("--out", a->out,
                  "safetensors file to write, with the tensor 'logits' (and, for images, the "
                  "metadata 'images': a JSON list of their paths, row by row)")
      ->required();
  cmd->add_option("--layout", a->layout, "the input's layout: nchw (PyTorch) or nhwc");
  cmd->add_option("--topk", a->topk,
                  "print each image's (or batch row's) K most probable classes (class index, "
                  "softmax %; the first 20), as timm's inference.py reports top-k; 0 = none")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  cmd->add_option("-b,--batch-size", a->batch_size,
                  "images (or batch rows) a forward pass takes: memory is that of one such batch, "
                  "whatever the input's size (timm's inference.py -b)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("-c,--config", a->config, "YAML config of the model (timm's -c / --config)");
  cmd->allow_extras();
  cmd->footer(config_keys_pointer());
  cmd->callback([a, cmd] {
    a->overrides = cmd->remaining();
    // a run folder means its model_best.safetensors, as for validate
    a->checkpoint = checkpoint_file(a->checkpoint, "infer: --checkpoint", "running");
    run_infer(*a);
  });
});

}  // namespace hg::app
