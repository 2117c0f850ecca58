// ImageFolder: images stored as <root>/<split>/<class>/<...>/<image>, the layout of torchvision's
// ImageFolder and timm's default dataset. The class index is the position of the class folder name
// in timm's natural order (natural_less: "1", "2", "10"; "cat", "Zebra"), as timm's folder reader
// numbers them (torchvision sorts byte-wise: "1", "10", "2"; "Zebra", "cat").
#pragma once

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace hg::data {

/// Thrown when corrupt_images: skip meets more images that fail to decode after the scan than it
/// passes over (or every image fails): the data as a whole, not one file, is at fault. The trainer
/// names where the run can go on from (train/trainer.cpp).
class TooManyCorruptImages : public Error {
 public:
  using Error::Error;
};

struct ImageFolderOptions {
  int64_t channels = 3;                          ///< the model's in_chans: 1 or 3
  CorruptPolicy corrupt = CorruptPolicy::skip;   ///< undecodable files: skip (warn, count) or throw
  /// Class names defining the label mapping; empty = the split's own folder names in timm's order.
  /// Give the train split's classes to the validation split so both map names to the same index.
  std::vector<std::string> classes;
  /// Read every file's header while scanning, so files stb cannot recognise are dropped up front.
  bool probe = true;
  JpegDecoder jpeg = JpegDecoder::turbo;         ///< how JPEG files are decoded (image.h)
  /// The config key that named the split ("train_split", "val_split"), for messages; "" = either.
  std::string split_key;
};

class ImageFolder : public Dataset {
 public:
  /// Scans <root>/<split> (or <root> when split is empty). Files ending in .jpg .jpeg .png .bmp .ppm
  /// .pgm (any case) under a class folder, at any depth, are images; other files are ignored. How a
  /// file is decoded follows its first bytes, not its name (a PNG named .jpg decodes as PNG).
  /// Throws hg::Error when the folder is missing, has images but no class sub-folders (the message
  /// shows the expected layout), has no images at all, or has a folder not in options.classes;
  /// throws CorruptImage for an unrecognised file under CorruptPolicy::error.
  ImageFolder(const std::string& root, const std::string& split, ImageFolderOptions opts = {});

  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  int64_t num_classes() const override { return static_cast<int64_t>(classes_.size()); }
  int64_t channels() const override { return opts_.channels; }
  /// Decodes file `index`. A file that fails to decode is skipped under CorruptPolicy::skip: the
  /// next file in order (wrapping) is returned instead, so the result depends on the index only.
  /// Skipping is for a few bad files: once more than max(10, 1% of the files) that passed the scan
  /// have failed (an unreadable class folder, a failing disk), it throws hg::Error naming the count
  /// and the last one, rather than train on what is left.
  Sample get(int64_t index) const override;
  /// As get(), decoding only what `choose`'s crop needs (image_region.h) with options.jpeg.
  RegionSample get_region(int64_t index, const CropChooser& choose) const override;
  /// A JPEG file (unless options.jpeg is stb) whose header parses, whose data reaches its
  /// end-of-image marker and that `gpu_takes` accepts: its bytes, undecoded; anything else decoded
  /// as get_region(). Corrupt files are skipped as in get().
  EncodedSample get_encoded(int64_t index, const CropChooser& choose,
                            const GpuTakes& gpu_takes = {}) const override;
  std::string describe() const override;
  int64_t corrupt_skipped() const override { return skipped_.load(); }
  int64_t replaced_after_scan() const override { return failed_after_scan_.load(); }

  const std::vector<std::string>& classes() const { return classes_; }
  /// The split's folder, <root>/<split>.
  const std::string& folder() const { return dir_; }
  std::vector<std::string> class_names() const override { return classes_; }
  std::vector<int64_t> label_counts() const override;
  const std::string& path(int64_t index) const;
  int64_t label(int64_t index) const;
  /// The files skipped as corrupt so far.
  std::vector<std::string> corrupt_files() const;

 private:
  /// A file the scan found bad: thrown as CorruptImage under CorruptPolicy::error, else noted.
  void reject(const std::string& path, const std::string& reason) const;
  /// Warns about and counts `path` once; true the first time.
  bool note_corrupt(const std::string& path, const std::string& reason) const;
  template <class Read>
  auto read_good(const char* what, int64_t index, Read&& read) const;

  std::string dir_;
  ImageFolderOptions opts_;
  std::vector<std::string> classes_;
  std::vector<std::string> files_;
  std::vector<int64_t> labels_;
  mutable std::mutex mu_;             // guards bad_
  mutable std::set<std::string> bad_;  // each corrupt file is warned about and counted once
  mutable std::atomic<int64_t> skipped_{0};
  mutable std::atomic<int64_t> failed_after_scan_{0};  // of skipped_: files the scan had passed
};

/// ".jpg" of "a/B.JPG": a path's extension in lower case (file systems keep the user's case).
std::string lower_extension(const std::string& path);

/// True for the file extensions ImageFolder reads (case-insensitive).
bool is_image_file(const std::string& path);

/// True for the image extensions torchvision's ImageFolder also loads and our decoders do not
/// (.tif, .tiff, .webp; case-insensitive): named when met, not skipped in silence.
bool undecodable_image_file(const std::string& path);

/// Why the symbolic link `path` is no readable file: "a symbolic link to 'T', which does not exist"
/// (its target is gone), or "..., which cannot be followed (REASON)" (a loop, a folder it may not
/// read); "" when `path` is no link or its target is there. The link's own path does not show
/// its target, so the messages that name such a file add this.
std::string broken_link_reason(const std::string& path);

/// timm's class order (its folder reader sorts class names by timm.utils.natural_key): runs of
/// digits by their value, the text between them without case, so "1" < "2" < "10" and "cat" <
/// "Zebra". Lower-cases ASCII letters only (Python's lower() folds other scripts too) and reads
/// ASCII digits only; names of equal keys ("01" and "1") go byte-wise, where timm's order is
/// arbitrary.
bool natural_less(const std::string& a, const std::string& b);

/// The sub-folders of `dir` whose names do not start with '.', in timm's order (natural_less): an
/// ImageFolder split's classes, in label order (none when `dir` cannot be read).
std::vector<std::string> subfolders(const std::string& dir);

/// The folder of the split `split` under `root`, found as timm finds it (dataset_factory's
/// _search_split): root/split when that is a folder; else the first of the split's synonyms that
/// is one (train: train, training; a validation split: val, valid, validation, eval, evaluation);
/// else root/split, for the caller to name as missing. `split` empty: `root`.
std::string split_folder(const std::string& root, const std::string& split);

}  // namespace hg::data
