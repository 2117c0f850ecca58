// IdxDataset: MNIST-format (IDX) image and label files, plain or gzip-compressed, e.g. Fashion-MNIST
// from Debian's fashion-mnist package in /usr/share/datasets/fashion-mnist.
//
// IDX format (yann.lecun.com/exdb/mnist): big-endian u32 magic 0x00000803 (u8 data, 3 dims) for
// images, 0x00000801 (u8 data, 1 dim) for labels, then one big-endian u32 per dimension, then the
// bytes in row-major order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace hg::data {

/// One decoded IDX file of unsigned bytes.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  ///< product(dims) bytes
};

/// Reads `path` (gzip or plain, through zlib's gzread) and checks its magic is `expected_magic`
/// (0x803 or 0x801) and that its size matches the header. Throws hg::Error naming the file for a
/// missing file, a corrupt gzip stream, a wrong magic, or a truncated / over-long file.
IdxArray read_idx(const std::string& path, uint32_t expected_magic);

class IdxDataset : public Dataset {
 public:
  /// Split "train" (or "training") reads <dir>/train-{images-idx3,labels-idx1}-ubyte[.gz]; split
  /// "test" (or "t10k", or a validation name of timm's: val, valid, validation, eval, evaluation)
  /// reads the t10k-* files. `channels` 1 keeps the gray bytes, 3 replicates them to RGB.
  /// Throws hg::Error for another split name, a missing file, or images/labels that disagree.
  IdxDataset(const std::string& dir, const std::string& split, int64_t channels = 1);
  /// The same from two explicit files.
  static IdxDataset from_files(const std::string& images_path, const std::string& labels_path,
                               int64_t channels = 1);

  int64_t size() const override { return count_; }
  int64_t num_classes() const override { return num_classes_; }  ///< max label + 1
  int64_t channels() const override { return channels_; }
  Sample get(int64_t index) const override;
  std::string describe() const override;
  /// The images file read.
  const std::string& source() const { return source_; }
  /// "; N samples have labels >= num_classes, the first sample I (label L) in 'LABELS FILE'".
  std::string labels_at_or_above(int64_t num_classes) const override;
  std::vector<int64_t> label_counts() const override;

  int64_t height() const { return height_; }
  int64_t width() const { return width_; }
  int64_t label(int64_t index) const;

 private:
  IdxDataset() = default;
  void load(const std::string& images_path, const std::string& labels_path, int64_t channels);

  std::string source_;
  std::string labels_source_;  // the labels file: a class count's source, for messages
  int64_t count_ = 0, height_ = 0, width_ = 0, channels_ = 1, num_classes_ = 0;
  std::vector<uint8_t> images_;  // (count, height, width)
  std::vector<uint8_t> labels_;  // (count)
};

/// Fashion-MNIST's ten class names in label order (Xiao et al. 2017), as folder-safe names.
const std::vector<std::string>& fashion_mnist_classes();

}  // namespace hg::data
