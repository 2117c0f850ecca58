// The dataset interface the DataLoader reads from: a fixed number of labelled 8-bit images, each
// fetched by index from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/image.h"
#include "data/image_region.h"
#include "data/jpeg_decode.h"

namespace hg::data {

/// What to do with an image file that cannot be decoded (Config::corrupt_images).
enum class CorruptPolicy { skip, error };
/// Parses "skip" / "error"; throws hg::Error otherwise.
CorruptPolicy parse_corrupt_policy(const std::string& s);

struct Sample {
  Image image;        ///< channels == Dataset::channels()
  int64_t label = 0;  ///< class index in [0, num_classes)
};

/// A sample decoded for one crop (Dataset::get_region).
struct RegionSample {
  ImageRegion region;  ///< the pixels the chooser's box needs, and the box in them
  int64_t label = 0;
};

/// Which JPEG files a GPU decoder takes, from their parsed header; the rest are decoded on the CPU.
using GpuTakes = std::function<bool(const JpegHeader&)>;

/// A sample for a GPU JPEG decoder (Dataset::get_encoded): either a JPEG file's compressed bytes with
/// the chooser's request (full-size pixels), or, for anything else, the sample decoded on the CPU.
struct EncodedSample {
  std::vector<uint8_t> jpeg;  ///< non-empty: a whole JPEG file (header parsed, end marker present)
  std::string path;           ///< the file (for error messages); empty when not from a file
  int64_t height = 0, width = 0;  ///< full size of the JPEG, pixels
  CropRequest request;        ///< what the chooser asked for, in full-size pixels (jpeg non-empty)
  RegionSample decoded;       ///< jpeg empty: the sample decoded as get_region() does
  int64_t label = 0;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual int64_t num_classes() const = 0;
  /// Channels of every returned image (the model's in_chans: 1 or 3).
  virtual int64_t channels() const = 0;
  /// Sample `index` in [0, size()). Must be thread-safe and deterministic (same index, same sample).
  /// Throws hg::Error for a bad index or an unreadable sample the dataset cannot skip.
  virtual Sample get(int64_t index) const = 0;
  /// Sample `index` decoded for the crop `choose` picks from its full size (see image_region.h); a
  /// file-backed dataset may decode only that region, at reduced scale. The default decodes whole.
  virtual RegionSample get_region(int64_t index, const CropChooser& choose) const;
  /// Sample `index` for a GPU decoder: a JPEG file's bytes left undecoded (after `choose` saw its
  /// size) when `gpu_takes` accepts its header (null: every JPEG), anything else decoded on the CPU
  /// as get_region(). The default decodes everything on the CPU.
  virtual EncodedSample get_encoded(int64_t index, const CropChooser& choose,
                                    const GpuTakes& gpu_takes = {}) const;
  /// One line for logs: kind, root, split, size, classes.
  virtual std::string describe() const = 0;
  /// The classes' names by label, where the dataset has them (an image folder's class folders);
  /// empty where labels are numbers only.
  virtual std::vector<std::string> class_names() const { return {}; }
  /// Where the labels at or above `num_classes` are, for a message ("" when the dataset cannot
  /// say): a class count that a few stray labels set is a damaged file, not a setting.
  virtual std::string labels_at_or_above(int64_t /*num_classes*/) const { return ""; }
  /// Images per label, label 0 first (num_classes() entries), where the dataset knows its labels
  /// without reading its images; empty elsewhere. Data-parallel ranks compare them: a file moved
  /// between class folders on one host changes no total.
  virtual std::vector<int64_t> label_counts() const { return {}; }
  /// Corrupt images skipped so far (at scan time and while loading).
  virtual int64_t corrupt_skipped() const { return 0; }
  /// Of corrupt_skipped(): files that passed the folder scan and failed to decode later, each read
  /// since as its next good neighbour (image_folder.h): an evaluation counts that neighbour twice.
  virtual int64_t replaced_after_scan() const { return 0; }
};

}  // namespace hg::data
