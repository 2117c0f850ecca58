// ImageFolder: scanning <root>/<split>/<class>/ and decoding files on demand (see image_folder.h).
#include "data/image_folder.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <system_error>

#include "core/similar_names.h"
#include "core/utf8.h"
#include "data/jpeg_decode.h"

namespace fs = std::filesystem;

namespace hg::data {

CorruptPolicy parse_corrupt_policy(const std::string& s) {
  if (s == "skip") return CorruptPolicy::skip;
  if (s == "error") return CorruptPolicy::error;
  throw Error(str("corrupt_images: expected 'skip' or 'error', got '", s, "'"));
}

RegionSample Dataset::get_region(int64_t index, const CropChooser& choose) const {
  Sample s = get(index);
  RegionSample r;
  r.region.box = choose(s.image.height, s.image.width).box;
  r.region.image = std::move(s.image);
  r.label = s.label;
  return r;
}

EncodedSample Dataset::get_encoded(int64_t index, const CropChooser& choose,
                                   const GpuTakes&) const {
  EncodedSample e;
  e.decoded = get_region(index, choose);
  e.label = e.decoded.label;
  return e;
}

std::string broken_link_reason(const std::string& path) {
  std::error_code ec, why;
  if (!fs::is_symlink(path, ec) || fs::exists(path, why)) return "";
  return str("a symbolic link to '", fs::read_symlink(path, ec).string(), "', ",
             why ? "which cannot be followed (" + why.message() + ")"
                 : std::string("which does not exist"));
}

std::string lower_extension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

bool is_image_file(const std::string& path) {
  const std::string ext = lower_extension(path);
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".bmp" || ext == ".ppm" || ext == ".pgm";
}

// Extensions torchvision's ImageFolder loads that our decoders do not: a folder of them trained
// on in PyTorch would lose those images here, so they are warned about, not skipped in silence.
bool undecodable_image_file(const std::string& path) {
  const std::string ext = lower_extension(path);
  return ext == ".tif" || ext == ".tiff" || ext == ".webp";
}

namespace {

const char* kLayout =
    "expected layout <root>/<split>/<class name>/<image>, e.g. data/train/cat/0001.jpg and "
    "data/train/dog/0002.png: one sub-folder per class, the class index is the folder's position "
    "in timm's natural order";

bool hidden(const fs::path& p) { return !p.filename().empty() && p.filename().string()[0] == '.'; }
}  // namespace

namespace {

// One piece of timm's natural_key: a run of ASCII digits (by value) or the text between two
// (ASCII letters lower-cased; other bytes as they are, i.e. by code point in UTF-8).
struct KeyPiece {
  bool number = false;
  std::string text;  // a number's digits without leading zeros
};

std::vector<KeyPiece> natural_key(const std::string& name) {
  std::vector<KeyPiece> key(1);  // re.split(r'(\d+)', s): text, number, text, ..., text
  for (size_t i = 0; i < name.size();) {
    const auto digit = [&](size_t j) {
      return j < name.size() && name[j] >= '0' && name[j] <= '9';
    };
    if (!digit(i)) {
      key.back().text += static_cast<char>(std::tolower(static_cast<unsigned char>(name[i++])));
      continue;
    }
    KeyPiece n{true, ""};
    for (; digit(i); ++i)
      if (!n.text.empty() || name[i] != '0') n.text += name[i];
    key.push_back(n);
    key.emplace_back();
  }
  return key;
}

// Pieces in the same place are of one kind (text at even places, numbers at odd), as in Python.
bool piece_less(const KeyPiece& a, const KeyPiece& b) {
  if (a.number && a.text.size() != b.text.size()) return a.text.size() < b.text.size();
  return a.text < b.text;
}

}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
  const std::vector<KeyPiece> ka = natural_key(a), kb = natural_key(b);
  if (std::lexicographical_compare(ka.begin(), ka.end(), kb.begin(), kb.end(), piece_less))
    return true;
  if (std::lexicographical_compare(kb.begin(), kb.end(), ka.begin(), ka.end(), piece_less))
    return false;
  return a < b;  // equal keys ("01" and "1", "Cat" and "cat"): timm's order is a set's; bytes here
}

std::vector<std::string> subfolders(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (!hidden(e.path()) && e.is_directory(ec)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end(), natural_less);
  return out;
}

namespace {

// timm's names of a split (dataset_factory's _TRAIN_SYNONYM, _EVAL_SYNONYM): the group `split`
// belongs to, or none.
const std::vector<std::string>& split_synonyms(const std::string& split) {
  static const std::vector<std::vector<std::string>> groups = {
      {"train", "training"}, {"val", "valid", "validation", "eval", "evaluation"}};
  static const std::vector<std::string> none;
  for (const std::vector<std::string>& names : groups)
    if (std::find(names.begin(), names.end(), split) != names.end()) return names;
  return none;
}

// A split given as a path ("/data/holdout", "val/sub"): a trailing '/' aside, it holds a '/'.
// timm joins it to data_dir as os.path.join does (an absolute one replaces data_dir), and so does
// fs::path's operator/; it is no split name, so no synonym is looked for.
bool split_is_path(std::string split) {
  while (split.size() > 1 && split.back() == '/') split.pop_back();
  return split.find('/') != std::string::npos;
}

// "val_split '/data/holdout'": the key that named the split (or both keys' names) and its value.
std::string split_named(const std::string& split, const std::string& key) {
  return key.empty() ? str("split '", split, "' (the config's train_split / val_split)")
                     : str(key, " '", split, "'");
}

// How a split that is a path was read: "absolute, so data_dir 'D' is not used for it" or
// "joined to data_dir 'D'".
std::string path_split_note(const std::string& root, const std::string& split) {
  return fs::path(split).is_absolute()
             ? str("absolute, so data_dir '", root, "' is not used for it")
             : str("joined to data_dir '", root, "'");
}

}  // namespace

std::string split_folder(const std::string& root, const std::string& split) {
  if (split.empty()) return root;
  const fs::path given = fs::path(root) / split;
  std::error_code ec;
  if (fs::is_directory(given, ec)) return given.string();
  for (const std::string& name : split_synonyms(split))
    if (fs::is_directory(fs::path(root) / name, ec)) return (fs::path(root) / name).string();
  return given.string();
}

namespace {

// A data_dir that is an archive (timm reads tar files as datasets; here they are unpacked first):
// an error saying so; nothing otherwise.
void refuse_archive(const std::string& root, const std::string& split) {
  std::string name = fs::path(root).filename().string();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  const auto ends = [&](const std::string& end) {
    return name.size() > end.size() && name.compare(name.size() - end.size(), end.size(), end) == 0;
  };
  for (const char* archive : {".tar", ".tar.gz", ".tgz", ".tar.xz", ".zip"})
    HG_CHECK(!ends(archive), "ImageFolder: the data folder '", root,
             "' is an archive (the config's data_dir): haargrad reads a folder of images, not "
             "an archive as timm's tar readers do; unpack it (tar -xf / unzip) and give the "
             "folder that holds its '",
             split, "' split; ", kLayout);
}

// A root given as a split folder itself (torchvision's ImageFolder takes root='.../train'): an
// error with the data_dir and split that read it when one of its first sub-folders `folders`
// holds images directly, as class folders do; nothing otherwise.
void refuse_split_as_root(const std::string& root, const std::string& split,
                          const std::vector<std::string>& folders) {
  std::error_code ec;
  std::string image;
  for (size_t i = 0; i < folders.size() && i < 3 && image.empty(); ++i)
    for (const auto& e : fs::directory_iterator(fs::path(root) / folders[i], ec))
      if (!hidden(e.path()) && e.is_regular_file(ec) && is_image_file(e.path().string())) {
        image = e.path().string();
        break;
      }
  if (image.empty()) return;
  // "data/train/" is "data/train"; "." and ".." are named by their absolute paths
  const auto named = [](fs::path p) {
    p = p.lexically_normal();
    return p.has_filename() ? p : p.parent_path();
  };
  fs::path r = named(root);
  if (r.filename() == "." || r.filename() == ".." || r.filename().empty())
    r = named(fs::absolute(root, ec));
  throw Error(str("ImageFolder: '", root,
                  "' looks like a split folder itself, not the folder of the splits (the "
                  "config's data_dir): its sub-folders hold images (e.g. '",
                  image, "'), and it has no '", split,
                  "' split; data_dir is the folder above it: --data-dir ",
                  r.parent_path().empty() ? "." : r.parent_path().string(), " --train-split ",
                  r.filename().string(), " (or --val-split ", r.filename().string(),
                  " for the validation split); ", kLayout));
}

// "; '<root>' holds IDX files (...): set dataset: idx" when MNIST-format files lie in root (the
// dataset key left at image_folder), else "".
std::string idx_files_hint(const std::string& root) {
  std::error_code ec;
  std::string idx_file;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string n = e.path().filename().string();
    if (n.find("-ubyte") != std::string::npos && (idx_file.empty() || n < idx_file)) idx_file = n;
  }
  if (idx_file.empty()) return "";
  return str("; '", root, "' holds IDX files (e.g. '", idx_file,
             "'): for MNIST-format files set dataset: idx (train_split train, val_split test)");
}

// What a missing split folder was looked for as, and where: the path a split given as a path led
// to, or the name and timm's other names for it in data_dir.
std::string split_search(const std::string& root, const std::string& split,
                         const std::string& key) {
  if (split_is_path(split))
    return str(split_named(split, key), " is a path, not a split name (",
               path_split_note(root, split),
               "); a split is a folder name such as train, validation or val, looked for in "
               "data_dir");
  std::string others;
  for (const std::string& name : split_synonyms(split))
    if (name != split) others += str(others.empty() ? "" : ", ", "'", name, "'");
  return str(split_named(split, key), " looked for in data_dir '", root, "'",
             others.empty() ? std::string() : str(", as timm's other names for it too: ", others));
}

// root and root/split must be folders; the error for a misnamed split lists the splits there are.
void check_split_folder(const std::string& root, const std::string& split, const std::string& dir,
                        const std::string& key) {
  std::error_code ec;
  // the ImageNet recipes ship with data_dir "" to be set: "'' does not exist" would not say so
  HG_CHECK(!root.empty(),
           "ImageFolder: data_dir is not set (the config's data_dir, --data-dir, is empty): give "
           "the folder that holds the '",
           split, "' split, e.g. --data-dir /data/imagenet (", kLayout, ")");
  HG_CHECK(fs::exists(root, ec), "ImageFolder: the data folder '", root,
           "' does not exist (data_dir, --data-dir)");
  if (!fs::is_directory(root, ec)) {
    refuse_archive(root, split);
    throw Error(
        str("ImageFolder: the data folder '", root, "' is not a folder (data_dir, --data-dir)"));
  }
  if (fs::is_directory(dir, ec)) return;
  const std::vector<std::string> folders =
      split.empty() ? std::vector<std::string>() : subfolders(root);
  refuse_split_as_root(root, split, folders);
  std::string present;
  for (size_t i = 0; i < folders.size() && i < 8; ++i)
    present += str(present.empty() ? "" : ", ", "'", folders[i], "'");
  if (folders.size() > 8) present = str(folders.size(), " folders: ", present, ", ...");
  throw Error(str("ImageFolder: '", dir, "' ",
                  fs::exists(dir, ec) ? "is not a folder" : "does not exist", " (",
                  split_search(root, split, key), ")",
                  split.empty()     ? std::string()
                  : present.empty() ? str("; '", root, "' holds no split folders")
                                    : str("; '", root, "' holds ", present),
                  idx_files_hint(root), "; ", kLayout));
}

// The class folders of `dir`, in timm's order. Images lying directly in `dir` and broken links are
// named (never fewer classes unsaid); no class folder at all is an error.
std::vector<std::string> class_folders(const std::string& dir) {
  const std::vector<std::string> found = subfolders(dir);
  int64_t loose = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (hidden(e.path())) continue;
    std::error_code ec;
    if (e.is_symlink(ec) && !fs::exists(e.path(), ec))
      // a link that loops (class -> class) was called a link to nothing
      spdlog::warn("ImageFolder: '{}' is a symbolic link {}: not a class folder",
                   printable(e.path().string()),
                   ec == std::errc::too_many_symbolic_link_levels ? "that loops" : "to nothing");
    else if (e.is_regular_file() && is_image_file(e.path().string()))
      ++loose;
  }
  if (found.empty()) {
    HG_CHECK(loose == 0, "ImageFolder: '", dir, "' holds ", loose,
             " images but no class sub-folders; ", kLayout);
    throw Error(str("ImageFolder: '", dir, "' has no class sub-folders; ", kLayout));
  }
  if (loose > 0)
    spdlog::warn("ImageFolder: ignoring {} images lying directly in '{}' (not in a class folder)",
                 loose, printable(dir));
  return found;
}

// The image files of one class folder (its sub-folders too, links followed), sorted; the files of
// other extensions are counted and their extensions collected, for the message of a folder with
// no images.
struct ClassFiles {
  std::vector<std::string> images;
  std::vector<std::string> dangling;  // image-named links to nothing: corrupt images, named
  int64_t others = 0;
  std::set<std::string> other_kinds;
  int64_t undecodable = 0;  // of `others`: images torchvision loads (undecodable_image_file)
  std::string undecodable_example;
};

// A link whose target does not exist, or an image's link that cannot be followed (one that leads
// to itself: ELOOP, which stopped the listing of the whole data set), named by
// broken_link_reason. A folder link that closes a loop is the listing's error, which names it.
bool dangling_link(const fs::directory_entry& e) {
  std::error_code ec, follow;
  if (!e.is_symlink(ec) || ec || fs::exists(e.path(), follow)) return false;
  return !follow || is_image_file(e.path().string());
}

// The folder a recursive listing reads when it moves on from `it`: the entry itself when it is a
// folder the listing enters, else the folder the entry lies in.
fs::path read_next(const fs::recursive_directory_iterator& it) {
  std::error_code ec;
  return it.recursion_pending() && it->is_directory(ec) ? it->path() : it->path().parent_path();
}

// The link that closes a loop on `reading` (a path inside `class_dir` that repeats itself): the
// first folder link on it whose target holds the link; "" when none is found.
std::string loop_link(const fs::path& class_dir, const fs::path& reading) {
  std::error_code ec;
  fs::path at = class_dir;
  for (const fs::path& part : reading.lexically_relative(class_dir)) {
    at /= part;
    if (!fs::is_symlink(at, ec)) continue;
    const fs::path target = fs::canonical(at, ec);
    if (ec) return "";
    const fs::path parent = fs::canonical(at.parent_path(), ec);
    if (ec) return "";
    if (std::mismatch(target.begin(), target.end(), parent.begin(), parent.end()).first ==
        target.end())
      return str("'", at.string(), "' (-> '", fs::read_symlink(at, ec).string(), "')");
  }
  return "";
}

ClassFiles class_files(const std::string& dir, const std::string& name) {
  ClassFiles out;
  // The folder that failed, for the error: libstdc++'s iterator throws without the path when it
  // cannot enter a sub-folder (mode 000), which would name the whole class folder instead.
  fs::path reading = fs::path(dir) / name;
  std::error_code ec;
  try {
    for (fs::recursive_directory_iterator it(reading,
                                             fs::directory_options::follow_directory_symlink, ec);
         !ec && it != fs::recursive_directory_iterator();
         reading = read_next(it), it.increment(ec)) {
      // hidden files and folders (.ipynb_checkpoints, macOS's ._x.jpg) are no images of the set
      if (hidden(it->path())) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      if (dangling_link(*it)) {
        if (is_image_file(it->path().string())) out.dangling.push_back(it->path().string());
        continue;
      }
      if (!it->is_regular_file()) continue;
      if (is_image_file(it->path().string())) {
        out.images.push_back(it->path().string());
      } else {
        ++out.others;
        out.other_kinds.insert(it->path().extension().string());
        if (undecodable_image_file(it->path().string()) && out.undecodable++ == 0)
          out.undecodable_example = it->path().string();
      }
    }
  } catch (const fs::filesystem_error& e) {  // an entry's type could not be read
    ec = e.code();
    if (!e.path1().empty()) reading = e.path1();
  }
  if (ec) {
    // a folder loop's path is thousands of characters long: the link that closes it is named
    // instead; with none (a file link that leads to itself) the path is that file's, short
    const bool loop = ec == std::errc::too_many_symbolic_link_levels;
    const std::string link = loop ? loop_link(fs::path(dir) / name, reading) : "";
    throw Error(
        str("ImageFolder: cannot list the files of class folder '", name, "' in '", dir, "': ",
            !loop          ? str("cannot read '", reading.string(), "'")
            : link.empty() ? str("'", reading.string(), "' is a loop of symbolic links")
                           : str("a symbolic link ", link, " leads back into a folder above it"),
            ": ", ec.message()));
  }
  std::sort(out.images.begin(), out.images.end());
  std::sort(out.dangling.begin(), out.dangling.end());
  if (out.images.empty() && out.dangling.empty()) {
    std::string kinds;
    for (const std::string& k : out.other_kinds)
      kinds += str(kinds.empty() ? "" : " ", k.empty() ? "(none)" : k);
    spdlog::warn(
        "ImageFolder: class folder '{}' in '{}' has no images{}", printable(name), printable(dir),
        out.others == 0
            ? std::string()
            : str(" (", out.others, " files of other extensions ignored: ", printable(kinds),
                  "; images are .jpg .jpeg .png .bmp .ppm .pgm)"));
  }
  return out;
}

// For a class folder missing from `classes`: "; it differs only in case from the train class
// 'x' (...)" when one of them matches it but for case (a val folder 'Cat' against train's 'cat'),
// else what may make two names look alike and the train classes (the first 10). Class names
// stay case-sensitive and byte-exact, as in torchvision's ImageFolder.
std::string class_hint(const std::string& name, const std::vector<std::string>& classes) {
  auto lower = [](std::string t) {
    for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return t;
  };
  for (const std::string& c : classes)
    if (lower(c) == lower(name))
      return str("; it differs only in case from the train class '", c,
                 "' (class names are case-sensitive: rename one of the two folders)");
  // names that look alike but are not: a trailing space, a typo, a different Unicode form (an
  // accented letter composed or not: 'café' in NFC and NFD print the same)
  std::string hint;
  if (!name.empty() && (std::isspace(static_cast<unsigned char>(name.front())) ||
                        std::isspace(static_cast<unsigned char>(name.back()))))
    hint += "; the name starts or ends with a space";
  if (const std::vector<std::string> close = similar_names(name, classes); !close.empty())
    hint += str("; did you mean '", close.front(), "'?");
  if (std::any_of(name.begin(), name.end(), [](char ch) { return ch & 0x80; }))
    hint +=
        "; it holds non-ASCII letters: a train folder of the same name in another Unicode "
        "form (NFC or NFD) differs in its bytes";
  std::string listed;
  for (size_t i = 0; i < classes.size() && i < 10; ++i)
    listed += str(i ? ", " : "", "'", classes[i], "'");
  return str(hint, "; the train classes: ", listed, classes.size() > 10 ? ", ..." : "");
}

// The log line for a split folder that is not data_dir/<the name>: one found by timm's other name
// for it, or a split given as a path (read, as timm reads it, but no split name).
void say_where_the_split_is(const std::string& root, const std::string& split,
                            const std::string& dir, const std::string& key) {
  if (split_is_path(split))
    spdlog::info("ImageFolder: {} is a path, not a split name: reading the folder '{}' ({})",
                 split_named(split, key), dir, path_split_note(root, split));
  else if (!split.empty() && dir != (fs::path(root) / split).string())
    spdlog::info(
        "ImageFolder: {} is the folder '{}' (data_dir '{}' has no '{}'; '{}' is timm's other "
        "name for it)",
        split_named(split, key), dir, root, split, fs::path(dir).filename().string());
}

}  // namespace

ImageFolder::ImageFolder(const std::string& root, const std::string& split, ImageFolderOptions opts)
    : opts_(std::move(opts)) {
  HG_CHECK(opts_.channels == 1 || opts_.channels == 3, "ImageFolder: channels must be 1 or 3, got ",
           opts_.channels);
  dir_ = split_folder(root, split);
  check_split_folder(root, split, dir_, opts_.split_key);
  say_where_the_split_is(root, split, dir_, opts_.split_key);
  const std::vector<std::string> found = class_folders(dir_);
  classes_ = opts_.classes.empty() ? found : opts_.classes;
  int64_t ignored = 0, undecodable = 0;
  std::string undecodable_example;
  for (const std::string& name : found) {
    auto it = std::find(classes_.begin(), classes_.end(), name);
    ClassFiles cf = class_files(dir_, name);
    // a folder of another class with nothing in it has no label to give: said and passed over
    // (timm numbers the classes of the images it finds); one with images is an error
    if (it == classes_.end() && cf.images.empty() && cf.dangling.empty()) {
      spdlog::warn(
          "ImageFolder: class folder '{}' in '{}' is not one of the {} given classes (from the "
          "train split) and holds no images: passed over",
          printable(name), printable(dir_), classes_.size());
      continue;
    }
    HG_CHECK(it != classes_.end(), "ImageFolder: class folder '", name, "' in '", dir_,
             "' is not one of the ", classes_.size(), " given classes (from the train split)",
             class_hint(name, classes_));
    const int64_t label = it - classes_.begin();
    ignored += cf.others;
    if (cf.undecodable > 0 && undecodable == 0) undecodable_example = cf.undecodable_example;
    undecodable += cf.undecodable;
    const size_t before = files_.size();
    for (const std::string& p : cf.dangling) reject(p, broken_link_reason(p));
    for (std::string& p :
         cf.images) {  // the cheap scan (probe_image): empty, foreign, cut-off files
      std::string reason;
      if (opts_.probe && !probe_image(p, &reason)) {
        reject(p, reason);
        continue;
      }
      files_.push_back(std::move(p));
      labels_.push_back(label);
    }
    const size_t listed = cf.images.size() + cf.dangling.size();
    if (listed > 0 && files_.size() == before)
      spdlog::warn("ImageFolder: class folder '{}' in '{}' has no readable images: all {} skipped",
                   printable(name), printable(dir_), listed);
  }
  HG_CHECK(!files_.empty(), "ImageFolder: no readable images under '", dir_, "' (", skipped_.load(),
           " corrupt); ", kLayout);
  if (undecodable > 0)
    spdlog::warn(
        "ImageFolder: {} TIFF / WebP files under '{}' are left out (e.g. '{}'): torchvision "
        "loads them, haargrad decodes .jpg .jpeg .png .bmp .ppm .pgm only; convert them to PNG or "
        "JPEG to train on them",
        undecodable, printable(dir_), printable(undecodable_example));
  if (ignored > undecodable)
    spdlog::debug("ImageFolder: ignored {} non-image files under '{}'", ignored - undecodable,
                  printable(dir_));
}

std::vector<int64_t> ImageFolder::label_counts() const {
  std::vector<int64_t> n(classes_.size(), 0);
  for (const int64_t l : labels_) ++n[static_cast<size_t>(l)];
  return n;
}

void ImageFolder::reject(const std::string& path, const std::string& reason) const {
  if (opts_.corrupt == CorruptPolicy::error) throw CorruptImage(path, reason);
  note_corrupt(path, reason);
}

bool ImageFolder::note_corrupt(const std::string& path, const std::string& reason) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!bad_.insert(path).second) return false;
  ++skipped_;
  // a file name is anyone's bytes: a "\n" or an ESC in it must not reach the terminal as such
  spdlog::warn("ImageFolder: skipping corrupt image '{}': {}", printable(path), printable(reason));
  return true;
}

// Reads file `index` with read(j) (j = the file's index); a corrupt file (CorruptImage) is
// replaced by its next good neighbour, the same one every time, unless the policy is to fail.
template <class Read>
auto ImageFolder::read_good(const char* what, int64_t index, Read&& read) const {
  HG_CHECK(index >= 0 && index < size(), "ImageFolder::", what, ": index ", index, " out of range [0, ", size(), ")");
  for (int64_t k = 0; k < size(); ++k) {
    const int64_t j = (index + k) % size();
    try {
      return read(static_cast<size_t>(j));
    } catch (const CorruptImage& e) {
      if (opts_.corrupt == CorruptPolicy::error) throw;
      const int64_t limit = std::max<int64_t>(10, size() / 100);
      if (note_corrupt(e.path(), e.what()) && ++failed_after_scan_ > limit)
        throw TooManyCorruptImages(
            str("ImageFolder: ", failed_after_scan_.load(), " of the ", size(), " images under '",
                dir_, "' failed to decode after the scan passed them (the last: ", e.what(),
                "); corrupt_images: skip passes over a few bad files (up to ", limit,
                " here), not this many: is a folder unreadable, or the disk failing?"));
    }
  }
  throw TooManyCorruptImages(str("ImageFolder: every image under '", dir_, "' failed to decode"));
}

Sample ImageFolder::get(int64_t index) const {
  return read_good("get", index, [&](size_t j) {
    return Sample{read_image(files_[j], static_cast<int>(opts_.channels), opts_.jpeg), labels_[j]};
  });
}

RegionSample ImageFolder::get_region(int64_t index, const CropChooser& choose) const {
  return read_good("get_region", index, [&](size_t j) {
    return RegionSample{read_image_region(files_[j], static_cast<int>(opts_.channels), choose, opts_.jpeg),
                        labels_[j]};
  });
}

EncodedSample ImageFolder::get_encoded(int64_t index, const CropChooser& choose,
                                       const GpuTakes& gpu_takes) const {
  return read_good("get_encoded", index, [&](size_t j) {
    const std::string& path = files_[j];
    EncodedSample e;
    e.path = path;
    e.label = labels_[j];
    std::vector<uint8_t> bytes = read_file_bytes(path);
    // A JPEG whose header parses and whose data reaches the end-of-image marker goes to the GPU; a
    // truncated one is decoded here, where libjpeg-turbo finds and names the truncation.
    if (opts_.jpeg != JpegDecoder::stb && is_jpeg(bytes.data(), bytes.size()) &&
        jpeg_has_end_marker(bytes.data(), bytes.size())) {
      const JpegHeader h = read_jpeg_header(bytes.data(), bytes.size(), path);
      if (gpu_takes && !gpu_takes(h)) {  // decoded here, at reduced scale where the crop allows
        e.decoded = RegionSample{
            decode_image_region(bytes, path, static_cast<int>(opts_.channels), choose, opts_.jpeg),
            e.label};
        return e;
      }
      e.height = h.height;
      e.width = h.width;
      e.request = choose(h.height, h.width);
      e.jpeg = std::move(bytes);
      return e;
    }
    e.decoded = RegionSample{read_image_region(path, static_cast<int>(opts_.channels), choose, opts_.jpeg), e.label};
    return e;
  });
}

std::string ImageFolder::describe() const {
  return str("ImageFolder '", dir_, "': ", size(), " images, ", num_classes(), " classes, ", opts_.channels,
             " channels, JPEG decoder ", decoder_name(opts_.jpeg));
}

const std::string& ImageFolder::path(int64_t index) const {
  HG_CHECK(index >= 0 && index < size(), "ImageFolder::path: index ", index, " out of range [0, ", size(), ")");
  return files_[static_cast<size_t>(index)];
}

int64_t ImageFolder::label(int64_t index) const {
  HG_CHECK(index >= 0 && index < size(), "ImageFolder::label: index ", index, " out of range [0, ", size(), ")");
  return labels_[static_cast<size_t>(index)];
}

std::vector<std::string> ImageFolder::corrupt_files() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {bad_.begin(), bad_.end()};
}

}  // namespace hg::data
