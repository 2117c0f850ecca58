// scripts/make-jpeg-folder.py: the folder it makes is an ImageFolder of real JPEGs of every kind
// (baseline, progressive, grayscale, CMYK) at ImageNet-like sizes that libjpeg-turbo decodes, and the
// same seed gives the same bytes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "data/image_folder.h"
#include "data/jpeg_decode.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using namespace hg::data;

namespace {

// Debian's python3 first: python3-numpy and python3-pil (scripts/install-deps.sh) install there.
std::string python() { return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

int make_folder(const std::string& out, const std::string& args) {
  const std::string cmd = python() + " " HAARGRAD_SOURCE_DIR "/scripts/make-jpeg-folder.py --out " + out +
                          " --jobs 1 --seed 3 " + args + " > /dev/null";
  return std::system(cmd.c_str());
}

}  // namespace

TEST(JpegFolderScript, MakesDecodableImageNetLikeFolder) {
  if (std::system((python() + " -c 'import numpy, PIL' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "python3 with numpy and Pillow is missing (scripts/install-deps.sh installs them)";
  hg::test::TempDir t;
  ASSERT_EQ(make_folder(t / "a", "--classes 2 --train-per-class 3 --val-per-class 1"), 0);
  ImageFolderOptions fo;
  fo.corrupt = CorruptPolicy::error;
  ImageFolder train(t / "a", "train", fo), val(t / "a", "validation", fo);
  EXPECT_EQ(train.size(), 6);
  EXPECT_EQ(train.num_classes(), 2);
  EXPECT_EQ(val.size(), 2);
  int progressive = 0, gray = 0, cmyk = 0;
  double bytes = 0;
  for (int64_t i = 0; i < train.size(); ++i) {
    const auto data = read_file_bytes(train.path(i));
    bytes += static_cast<double>(data.size());
    const JpegHeader h = read_jpeg_header(data.data(), data.size(), train.path(i));
    progressive += h.progressive;
    gray += h.components == 1;
    cmyk += h.components == 4;
    const int64_t short_side = std::min(h.width, h.height), long_side = std::max(h.width, h.height);
    EXPECT_GE(short_side, 300);
    EXPECT_LE(short_side, 500);
    EXPECT_LE(long_side, short_side * 3 / 2 + 1);
    EXPECT_EQ(train.get(i).image.height, h.height);
  }
  EXPECT_EQ(progressive, 1);
  EXPECT_EQ(gray, 1);
  EXPECT_EQ(cmyk, 1);
  // Photo-like texture compresses like a photo (tens of KiB), not like a flat or smooth image (a few).
  EXPECT_GT(bytes / 6, 40e3);
  // Same seed, same bytes.
  ASSERT_EQ(make_folder(t / "b", "--classes 2 --train-per-class 3 --val-per-class 0"), 0);
  for (int64_t i = 0; i < train.size(); ++i) {
    const std::string other = (t.path() / "b" / fs::relative(train.path(i), t.path() / "a")).string();
    EXPECT_EQ(hg::test::read_bytes(train.path(i)), hg::test::read_bytes(other)) << other;
  }
}
