// IDX (MNIST format) reading through zlib, and the IdxDataset over an images/labels file pair.
#include "data/idx_dataset.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include <spdlog/spdlog.h>

#include "core/big_endian.h"

namespace hg::data {

IdxArray read_idx(const std::string& path, uint32_t expected_magic) {
  // a device reads without end (or nothing), a folder or a link that loops was named as gzip
  // data: named before the open. A FIFO is read (a stream of the file, a test's pacing).
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  HG_CHECK(!ec, "IDX: cannot read '", path, "': ", ec.message());
  HG_CHECK(!fs::is_directory(st), "IDX: '", path, "' is a folder, not an IDX file");
  HG_CHECK(fs::is_regular_file(st) || fs::is_fifo(st), "IDX: '", path, "' is not a regular file (",
           fs::is_character_file(st) || fs::is_block_file(st) ? "a device"
           : fs::is_socket(st)                                ? "a socket"
                                                              : "a special file",
           "): give the IDX file itself (gzip or plain)");
  // gzopen reads gzip files and passes plain files through unchanged.
  std::unique_ptr<gzFile_s, int (*)(gzFile)> f(gzopen(path.c_str(), "rb"), gzclose);
  HG_CHECK(f != nullptr, "IDX: cannot open '", path, "'");
  size_t unpacked = 0;  // bytes read so far, the header's included
  // Appends to `out` until it holds `limit` bytes or the data ends (false then).
  const auto fill = [&](std::vector<uint8_t>& out, size_t limit) {
    while (out.size() < limit) {
      const size_t at = out.size(), want = std::min(limit - at, size_t{1} << 20);
      out.resize(at + want);
      const int n = gzread(f.get(), out.data() + at, static_cast<unsigned>(want));
      if (n < 0) {
        int code = 0;
        const char* msg = gzerror(f.get(), &code);
        throw Error(str("IDX: corrupt or unreadable gzip data in '", path,
                        "': ", msg ? msg : "unknown error"));
      }
      out.resize(at + static_cast<size_t>(n));
      unpacked += static_cast<size_t>(n);
      if (n > 0) continue;
      // zlib ends a gzip stream cut short like a whole one, with this error set
      int code = Z_OK;
      gzerror(f.get(), &code);
      HG_CHECK(code != Z_BUF_ERROR, "IDX: the gzip data of '", path, "' ends early (", unpacked,
               " bytes unpacked): the file is cut short (a download or copy that stopped?)");
      return false;
    }
    return true;
  };
  std::vector<uint8_t> head;
  fill(head, 4);
  HG_CHECK(head.size() >= 4, "IDX: '", path, "' is too short (", head.size(),
           " bytes) to hold a header");
  const uint32_t magic = read_be32(head.data());
  HG_CHECK(magic == expected_magic, "IDX: '", path, "' has magic 0x", std::hex, magic, ", expected 0x",
           expected_magic, std::dec, expected_magic == 0x803 ? " (images)" : " (labels)");
  const size_t ndim = magic & 0xff;
  const size_t header = 4 + 4 * ndim;
  HG_CHECK(fill(head, header), "IDX: '", path, "' is truncated inside its header");
  IdxArray out;
  size_t expect = 1;
  for (size_t d = 0; d < ndim; ++d) out.dims.push_back(read_be32(head.data() + 4 + 4 * d));
  // a product past 64 bits is named, not wrapped (40 x 2^31 x 2^30 wrapped to 0, matched an empty
  // file and failed later as "out of host memory")
  bool wraps = false;
  for (const int64_t dim : out.dims) {
    wraps = wraps || (dim != 0 && expect > SIZE_MAX / static_cast<size_t>(dim));
    expect *= static_cast<size_t>(dim);
  }
  HG_CHECK(!wraps, "IDX: '", path, "': its header ", shape_str(out.dims),
           " says more than 2^64 data bytes");
  // no more than one byte past what the header says: a file holding more (a header that lies, a
  // small gzip file of gigabytes) was unpacked whole before this check, and then copied
  const bool more = fill(out.data, std::min(expect, SIZE_MAX - 1) + 1);
  HG_CHECK(!more, "IDX: '", path, "' holds more than the ", expect, " data bytes its header ",
           shape_str(out.dims), " says");
  HG_CHECK(out.data.size() == expect, "IDX: '", path, "' has ", out.data.size(),
           " data bytes, its header ", shape_str(out.dims), " says ", expect);
  return out;
}

namespace {
// <dir>/<name>.gz when present, else <dir>/<name>.
std::string find_file(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  fs::path gz = fs::path(dir) / (name + ".gz"), plain = fs::path(dir) / name;
  std::error_code ec;
  if (fs::exists(gz, ec)) {
    // two copies that may differ (one unpacked and edited since): the one read is said
    if (fs::exists(plain, ec))
      spdlog::warn("IdxDataset: both '{}' and '{}' exist: reading the .gz one", gz.string(),
                   plain.string());
    return gz.string();
  }
  if (fs::exists(plain, ec)) return plain.string();
  // neither can be followed: a link that loops or leads nowhere is named by read_idx, as such
  for (const fs::path& p : {gz, plain})
    if (fs::is_symlink(fs::symlink_status(p, ec))) return p.string();
  // a folder of image folders given to the idx dataset (an IDX config's --data-dir changed alone)
  std::vector<std::string> folders;
  bool idx_files = false;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.find("-ubyte") != std::string::npos) idx_files = true;
    if (!n.empty() && n[0] != '.' && e.is_directory(ec)) folders.push_back(n);
  }
  std::sort(folders.begin(), folders.end());
  std::string hint;
  if (!idx_files && !folders.empty()) {
    for (size_t i = 0; i < folders.size() && i < 8; ++i)
      hint += str(i == 0 ? "" : ", ", "'", folders[i], "'");
    hint = str("; '", dir, "' holds no IDX files but the folders ", hint,
               folders.size() > 8 ? ", ..." : "",
               ": for a folder of images per class set dataset: image_folder");
  }
  throw Error(
      str("IdxDataset: neither '", gz.string(), "' nor '", plain.string(), "' exists", hint));
}
}  // namespace

IdxDataset::IdxDataset(const std::string& dir, const std::string& split, int64_t channels) {
  namespace fs = std::filesystem;
  std::error_code ec;
  HG_CHECK(!dir.empty(),
           "IdxDataset: data_dir is not set (it is empty): give the folder of "
           "the IDX files, e.g. --data-dir /usr/share/datasets/fashion-mnist");
  // the configs' default is where Debian's dataset-fashion-mnist puts it (scripts/install-deps.sh)
  HG_CHECK(fs::exists(dir, ec), "IdxDataset: the data folder '", dir,
           "' does not exist (data_dir, --data-dir)",
           dir.rfind("/usr/share/datasets/", 0) == 0
               ? "; Debian's dataset-fashion-mnist installs Fashion-MNIST in "
                 "/usr/share/datasets/fashion-mnist (scripts/install-deps.sh installs it)"
               : "");
  HG_CHECK(fs::is_directory(dir, ec), "IdxDataset: the data folder '", dir,
           "' is not a folder (data_dir, --data-dir): give the folder that holds the "
           "train-images-idx3-ubyte(.gz) and t10k-* files");
  // timm's names too (its MNIST-like sets read the test part for any split but a train name)
  static const std::set<std::string> train = {"train", "training"},
                                     test = {"test",       "t10k", "val",       "valid",
                                             "validation", "eval", "evaluation"};
  std::string prefix;
  if (train.count(split))
    prefix = "train";
  else if (test.count(split))
    prefix = "t10k";
  else
    throw Error(str(
        "IdxDataset: split '", split,
        "' (the config's train_split / val_split) must be train (or training: the "
        "train-*-ubyte files) or test (or t10k, val, valid, validation, eval, "
        "evaluation: the t10k-*-ubyte files)",
        split.find('/') == std::string::npos
            ? std::string()
            : str("; it is a name, not a path: the files are looked for in data_dir '", dir, "'")));
  load(find_file(dir, prefix + "-images-idx3-ubyte"), find_file(dir, prefix + "-labels-idx1-ubyte"), channels);
}

IdxDataset IdxDataset::from_files(const std::string& images_path, const std::string& labels_path,
                                  int64_t channels) {
  IdxDataset d;
  d.load(images_path, labels_path, channels);
  return d;
}

void IdxDataset::load(const std::string& images_path, const std::string& labels_path, int64_t channels) {
  HG_CHECK(channels == 1 || channels == 3, "IdxDataset: channels must be 1 or 3, got ", channels);
  IdxArray images = read_idx(images_path, 0x803), labels = read_idx(labels_path, 0x801);
  HG_CHECK(images.dims[0] == labels.dims[0], "IdxDataset: '", images_path, "' has ", images.dims[0],
           " images but '", labels_path, "' has ", labels.dims[0], " labels");
  HG_CHECK(images.dims[0] > 0 && images.dims[1] > 0 && images.dims[2] > 0, "IdxDataset: '", images_path,
           "' holds no pixels: ", shape_str(images.dims));
  source_ = images_path;
  labels_source_ = labels_path;
  count_ = images.dims[0];
  height_ = images.dims[1];
  width_ = images.dims[2];
  channels_ = channels;
  images_ = std::move(images.data);
  labels_ = std::move(labels.data);
  num_classes_ = int64_t(*std::max_element(labels_.begin(), labels_.end())) + 1;
}

std::vector<int64_t> IdxDataset::label_counts() const {
  std::vector<int64_t> n(static_cast<size_t>(num_classes()), 0);
  for (const uint8_t l : labels_) ++n[l];
  return n;
}

std::string IdxDataset::labels_at_or_above(int64_t num_classes) const {
  int64_t count = 0, first = -1;
  for (size_t i = 0; i < labels_.size(); ++i)
    if (labels_[i] >= num_classes) {
      if (count++ == 0) first = static_cast<int64_t>(i);
    }
  if (count == 0) return "";
  return str("; ", count, " of its ", labels_.size(), " labels are >= ", num_classes,
             ", the first that of sample ", first, " (label ",
             int(labels_[static_cast<size_t>(first)]), ") in '", labels_source_, "'",
             count * 100 < static_cast<int64_t>(labels_.size()) ? " (a damaged labels file?)" : "");
}

Sample IdxDataset::get(int64_t index) const {
  HG_CHECK(index >= 0 && index < count_, "IdxDataset::get: index ", index, " out of range [0, ", count_, ")");
  Sample s;
  s.label = labels_[static_cast<size_t>(index)];
  s.image.height = height_;
  s.image.width = width_;
  s.image.channels = channels_;
  const size_t plane = static_cast<size_t>(height_ * width_);
  const uint8_t* src = images_.data() + static_cast<size_t>(index) * plane;
  s.image.pixels.resize(plane * static_cast<size_t>(channels_));
  for (size_t p = 0; p < plane; ++p)
    for (int64_t c = 0; c < channels_; ++c) s.image.pixels[p * static_cast<size_t>(channels_) + c] = src[p];
  return s;
}

int64_t IdxDataset::label(int64_t index) const {
  HG_CHECK(index >= 0 && index < count_, "IdxDataset::label: index ", index, " out of range [0, ", count_, ")");
  return labels_[static_cast<size_t>(index)];
}

std::string IdxDataset::describe() const {
  // the labels file named with the class count: a num_classes error is about that file's values
  return str("IdxDataset '", source_, "': ", count_, " images ", height_, "x", width_, ", ",
             num_classes_, " classes (labels 0..", num_classes_ - 1, " in '", labels_source_,
             "'), ", channels_, " channels");
}

const std::vector<std::string>& fashion_mnist_classes() {
  static const std::vector<std::string> names = {"t-shirt_top", "trouser", "pullover", "dress", "coat",
                                                 "sandal",      "shirt",   "sneaker",  "bag",   "ankle_boot"};
  return names;
}

}  // namespace hg::data
