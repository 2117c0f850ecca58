// The loader over a folder of JPEGs of every kind (and a PNG named .jpg): identical batches for any
// worker count, the same crops and flips whatever the JPEG decoder (up to decoder rounding), and the
// per-decoder counters that bench-data reports.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "data/image_folder.h"
#include "data/jpeg_encode.h"
#include "data/loader.h"
#include "jpeg_folder.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using namespace hg::data;

namespace {

// Two classes; file n is (150 + 7n) x (190 - 5n) px, grayscale ones 140 x 170 (jpeg_folder.h).
void make_folder(const hg::test::TempDir& t) {
  hg::test::write_mixed_folder(t.path(), {"a", "b"}, {150, 7, 190, -5, 140, 170});
}

std::vector<Batch> epoch(DataLoader& dl, int64_t e) {
  std::vector<Batch> out;
  dl.start_epoch(e);
  Batch b;
  while (dl.next(b)) out.push_back(std::move(b));
  return out;
}

TransformOptions train_options() {
  TransformOptions t;
  t.train = true;
  t.img_size = 24;  // small output: many crops are decoded at 1/2 or 1/4 scale
  return t;
}

std::vector<Batch> run(const std::string& root, JpegDecoder dec, int64_t workers, uint64_t seed,
                       LoaderStats* stats = nullptr, double hflip = 0.5) {
  ImageFolderOptions fo;
  fo.jpeg = dec;
  fo.corrupt = CorruptPolicy::error;
  auto ds = std::make_shared<ImageFolder>(root, "train", fo);
  LoaderOptions o;
  o.batch_size = 4;
  o.workers = workers;
  o.seed = seed;
  TransformOptions t = train_options();
  t.hflip = hflip;
  DataLoader dl(ds, Transform(t), o);
  auto bs = epoch(dl, 1);
  if (stats) *stats = dl.stats();
  return bs;
}

// Per image: mean |a - b| over its pixels, normalised units.
std::vector<double> image_diffs(const std::vector<Batch>& a, const std::vector<Batch>& b) {
  std::vector<double> out;
  EXPECT_EQ(a.size(), b.size());
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    EXPECT_EQ(a[i].labels.to_vector<int64_t>(), b[i].labels.to_vector<int64_t>());
    const auto x = a[i].images.to_vector<float>(), y = b[i].images.to_vector<float>();
    const size_t per = x.size() / static_cast<size_t>(a[i].labels.numel());
    for (size_t k = 0; k + per <= x.size(); k += per) {
      double s = 0;
      for (size_t j = k; j < k + per; ++j) s += std::abs(x[j] - y[j]);
      out.push_back(s / static_cast<double>(per));
    }
  }
  return out;
}

}  // namespace

TEST(JpegLoader, SameBatchesForAnyWorkerCount) {
  hg::test::TempDir t;
  make_folder(t);
  const std::string root = t.path().string();
  for (JpegDecoder dec : {JpegDecoder::turbo, JpegDecoder::stb}) {
    const auto ref = run(root, dec, 0, 7);
    for (int64_t workers : {1, 3}) {
      const auto bs = run(root, dec, workers, 7);
      ASSERT_EQ(bs.size(), ref.size());
      for (size_t i = 0; i < bs.size(); ++i) {
        EXPECT_EQ(bs[i].labels.to_vector<int64_t>(), ref[i].labels.to_vector<int64_t>());
        EXPECT_EQ(bs[i].images.to_vector<float>(), ref[i].images.to_vector<float>())
            << decoder_name(dec) << " workers " << workers << " batch " << i;
      }
    }
  }
}

TEST(JpegLoader, SameCropsAndFlipsWhateverTheDecoder) {
  hg::test::TempDir t;
  make_folder(t);
  const std::string root = t.path().string();
  LoaderStats st;
  const auto turbo = run(root, JpegDecoder::turbo, 2, 7, &st);
  const auto full = run(root, JpegDecoder::turbo_full, 2, 7);
  const auto stb = run(root, JpegDecoder::stb, 2, 7);
  // Tolerances (normalised units; 0.01 is about 0.6 of an 8-bit level): turbo_full vs stb differ in
  // IDCT and chroma upsampling rounding only; turbo vs turbo_full also by DCT-domain downscaling.
  // A flip of the same crops differs by far more (checked below: flips on / off keep the boxes, as
  // the flip is drawn after the box).
  for (double d : image_diffs(full, stb)) EXPECT_LT(d, 0.03);
  for (double d : image_diffs(turbo, full)) EXPECT_LT(d, 0.06);
  const auto flipped = run(root, JpegDecoder::turbo_full, 2, 7, nullptr, 1.0);
  const auto unflipped = run(root, JpegDecoder::turbo_full, 2, 7, nullptr, 0.0);
  for (double d : image_diffs(flipped, unflipped)) EXPECT_GT(d, 0.1);

  // Counters: 12 images, the JPEGs by libjpeg-turbo at several scales, the PNG by stb.
  EXPECT_EQ(st.images, 12);
  EXPECT_GT(st.file_bytes, 12 * 1000);
  EXPECT_EQ(st.decoded.at("png stb"), 2);
  int64_t turbo_n = 0, reduced = 0;
  for (const auto& [key, n] : st.decoded) {
    if (key.rfind("jpeg turbo", 0) == 0) turbo_n += n;
    if (key.rfind("jpeg turbo 1/", 0) == 0 && key != "jpeg turbo 1/1") reduced += n;
  }
  EXPECT_EQ(turbo_n, 10);
  EXPECT_GT(reduced, 0);
  EXPECT_GT(st.busy_fraction(), 0);
  EXPECT_LE(st.busy_fraction(), 1);
}
