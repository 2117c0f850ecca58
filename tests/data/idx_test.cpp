// Tests of the IDX reader on Debian's Fashion-MNIST files and on broken files.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>

#include "captured_log.h"
#include "data/from_config.h"
#include "data/idx_dataset.h"
#include "temp_dir.h"
#include "test_util.h"
#include "train/config.h"

namespace {
const std::string kDir = "/usr/share/datasets/fashion-mnist";

void gzip_write(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(f);
}

std::string be32(uint32_t v) {
  return std::string{char(v >> 24), char((v >> 16) & 0xff), char((v >> 8) & 0xff), char(v & 0xff)};
}

using hg::test::error_of;
}  // namespace

TEST(Idx, FashionMnistSplits) {
  if (!std::filesystem::exists(kDir)) GTEST_SKIP() << kDir << " missing (Debian package fashion-mnist)";
  for (auto [split, count] : {std::pair<const char*, int64_t>{"train", 60000}, {"test", 10000}}) {
    hg::data::IdxDataset ds(kDir, split);
    EXPECT_EQ(ds.size(), count);
    EXPECT_EQ(ds.height(), 28);
    EXPECT_EQ(ds.width(), 28);
    EXPECT_EQ(ds.num_classes(), 10);
    std::vector<int64_t> per_class(10, 0);
    for (int64_t i = 0; i < ds.size(); ++i) {
      int64_t l = ds.label(i);
      ASSERT_GE(l, 0);
      ASSERT_LT(l, 10);
      ++per_class[size_t(l)];
    }
    for (int64_t n : per_class) EXPECT_EQ(n, count / 10);  // Fashion-MNIST is balanced
    hg::data::Sample s = ds.get(count - 1);
    EXPECT_EQ(s.image.channels, 1);
    EXPECT_EQ(s.image.pixels.size(), 784u);
    EXPECT_GT(*std::max_element(s.image.pixels.begin(), s.image.pixels.end()), 100);  // not blank
    EXPECT_EQ(s.label, ds.label(count - 1));
  }
}

// timm reads an MNIST-like set's test part for any split but its train names (create_dataset:
// train=split in _TRAIN_SYNONYM): the default val_split 'validation' was refused ("split must be
// 'train' or 'test'"). The validation names read t10k, training reads train; another name is
// refused naming the config keys.
TEST(Idx, TimmsSplitNamesReadTheTrainAndTestFiles) {
  if (!std::filesystem::exists(kDir)) GTEST_SKIP() << kDir << " missing";
  for (const char* name : {"validation", "val", "eval"})
    EXPECT_EQ(hg::data::IdxDataset(kDir, name).size(), 10000) << name;
  EXPECT_EQ(hg::data::IdxDataset(kDir, "training").size(), 60000);
  const std::string msg = error_of([&] { hg::data::IdxDataset(kDir, "tset"); });
  EXPECT_NE(msg.find("split 'tset' (the config's train_split / val_split)"), std::string::npos)
      << msg;
}

TEST(Idx, ThreeChannelsReplicateGray) {
  if (!std::filesystem::exists(kDir)) GTEST_SKIP() << kDir << " missing";
  hg::test::TempDir tmp;
  // A small file pair keeps this fast: the first 3 test images, written plain (not gzip).
  auto images = hg::data::read_idx(kDir + "/t10k-images-idx3-ubyte.gz", 0x803);
  auto labels = hg::data::read_idx(kDir + "/t10k-labels-idx1-ubyte.gz", 0x801);
  hg::test::write_bytes(tmp / "img", be32(0x803) + be32(3) + be32(28) + be32(28) +
                                         std::string(images.data.begin(), images.data.begin() + 3 * 784));
  hg::test::write_bytes(tmp / "lab", be32(0x801) + be32(3) + std::string(labels.data.begin(), labels.data.begin() + 3));
  auto gray = hg::data::IdxDataset::from_files(tmp / "img", tmp / "lab", 1);
  auto rgb = hg::data::IdxDataset::from_files(tmp / "img", tmp / "lab", 3);
  ASSERT_EQ(rgb.size(), 3);
  for (int64_t i = 0; i < 3; ++i) {
    auto g = gray.get(i), c = rgb.get(i);
    EXPECT_EQ(c.label, labels.data[size_t(i)]);
    ASSERT_EQ(c.image.channels, 3);
    for (int64_t p = 0; p < 784; ++p)
      for (int ch = 0; ch < 3; ++ch) ASSERT_EQ(c.image.pixels[size_t(p * 3 + ch)], g.image.pixels[size_t(p)]);
  }
}

// The class count comes from the labels file's largest value, so the description that a
// num_classes error quotes names that file (it named the images file only): a damaged label 200
// in a 10-class set reads "labels 0..200 in '.../lab'".
TEST(Idx, TheDescriptionNamesTheLabelsFileOfTheClassCount) {
  hg::test::TempDir tmp;
  hg::test::write_bytes(tmp / "img",
                        be32(0x803) + be32(2) + be32(2) + be32(2) + std::string(8, '\x10'));
  hg::test::write_bytes(tmp / "lab", be32(0x801) + be32(2) + std::string("\x01\xc8", 2));
  const auto ds = hg::data::IdxDataset::from_files(tmp / "img", tmp / "lab", 1);
  EXPECT_EQ(ds.num_classes(), 201);
  const std::string d = ds.describe();
  EXPECT_NE(d.find(hg::str("201 classes (labels 0..200 in '", tmp / "lab", "')")),
            std::string::npos)
      << d;
  // the num_classes error also names where the stray labels are (it asked for num_classes 201)
  EXPECT_EQ(ds.labels_at_or_above(201), "");
  EXPECT_EQ(ds.labels_at_or_above(10), hg::str("; 1 of its 2 labels are >= 10, the first that of "
                                               "sample 1 (label 200) in '",
                                               tmp / "lab", "'"));
  // one stray label among 200 reads as damage
  std::string labels(200, '\x03');
  labels[150] = '\xc8';
  hg::test::write_bytes(tmp / "img200",
                        be32(0x803) + be32(200) + be32(1) + be32(1) + std::string(200, '\x10'));
  hg::test::write_bytes(tmp / "lab200", be32(0x801) + be32(200) + labels);
  const auto many = hg::data::IdxDataset::from_files(tmp / "img200", tmp / "lab200", 1);
  EXPECT_NE(many.labels_at_or_above(10).find("1 of its 200 labels are >= 10, the first that of "
                                             "sample 150 (label 200)"),
            std::string::npos);
  EXPECT_NE(many.labels_at_or_above(10).find("(a damaged labels file?)"), std::string::npos);
}

TEST(Idx, BrokenFilesNameTheFile) {
  hg::test::TempDir tmp;
  // A gzip stream with flipped bytes in the middle: zlib reports bad data or a checksum mismatch.
  std::string payload = be32(0x801) + be32(4000);
  for (int i = 0; i < 4000; ++i) payload += char(i * 7 % 10);
  gzip_write(tmp / "good.gz", payload);
  std::string gz = hg::test::read_bytes(tmp / "good.gz");
  EXPECT_EQ(hg::data::read_idx(tmp / "good.gz", 0x801).dims, (std::vector<int64_t>{4000}));
  for (size_t i = gz.size() / 3; i < gz.size() / 3 + 8; ++i) gz[i] = char(~gz[i]);
  hg::test::write_bytes(tmp / "corrupt.gz", gz);
  std::string msg = error_of([&] { hg::data::read_idx(tmp / "corrupt.gz", 0x801); });
  EXPECT_NE(msg.find("corrupt.gz"), std::string::npos) << msg;

  hg::test::write_bytes(tmp / "short", be32(0x801) + be32(10) + "abc");
  msg = error_of([&] { hg::data::read_idx(tmp / "short", 0x801); });
  EXPECT_NE(msg.find("short"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3 data bytes"), std::string::npos) << msg;

  // sizes whose product wraps to 0 in 64 bits (40 x 2^31 x 2^30): it read as 40 images of
  // 2147483648 x 1073741824 and failed later as "out of host memory"
  hg::test::write_bytes(tmp / "huge", be32(0x803) + be32(40) + be32(0x80000000u) + be32(1u << 30));
  msg = error_of([&] { hg::data::read_idx(tmp / "huge", 0x803); });
  EXPECT_NE(msg.find(hg::str("'", tmp / "huge",
                             "': its header [40, 2147483648, 1073741824] says more than 2^64 "
                             "data bytes")),
            std::string::npos)
      << msg;

  msg = error_of([&] { hg::data::read_idx(tmp / "good.gz", 0x803); });
  EXPECT_NE(msg.find("magic"), std::string::npos) << msg;
  EXPECT_NE(msg.find("good.gz"), std::string::npos) << msg;

  msg = error_of([&] { hg::data::read_idx(tmp / "missing.gz", 0x801); });
  EXPECT_NE(msg.find("missing.gz"), std::string::npos) << msg;
  msg = error_of([&] { hg::data::IdxDataset(tmp.path().string(), "tset"); });
  EXPECT_NE(msg.find("'tset'"), std::string::npos) << msg;
  msg = error_of([&] { hg::data::IdxDataset(tmp.path().string(), "train"); });
  EXPECT_NE(msg.find("train-"), std::string::npos) << msg;  // whichever of the pair is looked up first
  EXPECT_NE(msg.find("-ubyte.gz"), std::string::npos) << msg;
}

// A device in an IDX file's place, a folder (named as corrupt gzip data) and a link that loops (a
// bare filesystem error) are named before the open.
TEST(Idx, AFileThatIsNoRegularFileIsNamedBeforeItIsOpened) {
  namespace fs = std::filesystem;
  hg::test::TempDir tmp;
  std::string msg = error_of([&] { hg::data::read_idx("/dev/null", 0x801); });
  EXPECT_NE(msg.find("IDX: '/dev/null' is not a regular file (a device)"), std::string::npos)
      << msg;
  fs::create_directory(tmp / "folder");
  msg = error_of([&] { hg::data::read_idx(tmp / "folder", 0x801); });
  EXPECT_NE(msg.find("is a folder, not an IDX file"), std::string::npos) << msg;
  // as a data set's file: the link that loops is found and named as such
  gzip_write(tmp / "train-labels-idx1-ubyte.gz", be32(0x801) + be32(2) + std::string("\1\2"));
  const std::string loop = tmp / "train-images-idx3-ubyte.gz";
  fs::create_symlink(loop, loop);
  msg = error_of([&] { hg::data::IdxDataset(tmp.path().string(), "train"); });
  EXPECT_NE(msg.find("IDX: cannot read '" + loop + "': Too many levels of symbolic links"),
            std::string::npos)
      << msg;
  // a .gz link that leads nowhere beside the plain file that is there: the plain file is read
  hg::test::TempDir other;
  hg::test::write_bytes(other / "train-labels-idx1-ubyte",
                        be32(0x801) + be32(2) + std::string("\1\2"));
  hg::test::write_bytes(other / "train-images-idx3-ubyte",
                        be32(0x803) + be32(2) + be32(1) + be32(1) + std::string("\x07\x09"));
  fs::create_symlink(other / "gone", other / "train-labels-idx1-ubyte.gz");
  EXPECT_EQ(hg::data::IdxDataset(other.path().string(), "train").size(), 2);
  // both a .gz and a plain file (two copies that may differ): the one read is said
  fs::remove(other / "train-labels-idx1-ubyte.gz");
  gzip_write(other / "train-labels-idx1-ubyte.gz", be32(0x801) + be32(2) + std::string("\1\2"));
  const hg::test::CapturedLog captured;
  EXPECT_EQ(hg::data::IdxDataset(other.path().string(), "train").size(), 2);
  EXPECT_NE(
      captured.text().find("IdxDataset: both '" + other / "train-labels-idx1-ubyte.gz" + "' and '" +
                           other / "train-labels-idx1-ubyte" + "' exist: reading the .gz one"),
      std::string::npos)
      << captured.text();
}

// A split an IDX folder does not have (timm's names read the train or test files:
// TimmsSplitNamesReadTheTrainAndTestFiles): the error says which splits there are and which config
// key picks them. A data_dir that is missing, a file or unset is named as the config's data_dir
// (it read "neither '<file>/train-labels-...' nor ... exists").
TEST(Idx, ASplitOrDataDirItCannotReadIsNamedWithItsKey) {
  hg::test::TempDir tmp;
  std::string msg = error_of([&] { hg::data::IdxDataset(tmp.path().string(), "dev"); });
  EXPECT_NE(msg.find("'dev'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("val_split"), std::string::npos) << msg;
  EXPECT_NE(msg.find("or test (or t10k"), std::string::npos) << msg;

  hg::test::write_bytes(tmp / "config.yaml", "epochs: 1\n");
  for (const std::string& dir : {tmp / "config.yaml", tmp / "missing", std::string()}) {
    SCOPED_TRACE(dir);
    msg = error_of([&] { hg::data::IdxDataset(dir, "train"); });
    EXPECT_NE(msg.find("data_dir"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("train-labels"), std::string::npos) << msg;
  }
  EXPECT_NE(
      error_of([&] { hg::data::IdxDataset(tmp / "config.yaml", "train"); }).find("not a folder"),
      std::string::npos);
  EXPECT_NE(
      error_of([&] { hg::data::IdxDataset(tmp / "missing", "train"); }).find("does not exist"),
      std::string::npos);
  EXPECT_NE(error_of([&] { hg::data::IdxDataset("", "train"); }).find("not set"),
            std::string::npos);
  // the configs' default place, missing (no dataset-fashion-mnist): the package that fills it
  const std::string debian =
      error_of([&] { hg::data::IdxDataset("/usr/share/datasets/no-such-set", "train"); });
  EXPECT_NE(debian.find("dataset-fashion-mnist"), std::string::npos) << debian;
  EXPECT_EQ(error_of([&] {
              hg::data::IdxDataset(tmp / "missing", "train");
            }).find("dataset-fashion-mnist"),
            std::string::npos);
}

// A gzip file cut short (a download that stopped) is named as such, not only by the data bytes
// its header wants.
TEST(Idx, AGzipFileCutShortIsNamedAsSuch) {
  hg::test::TempDir tmp;
  std::string payload = be32(0x801) + be32(4000);
  for (int i = 0; i < 4000; ++i) payload += char(i * 7919 % 251);
  gzip_write(tmp / "labels.gz", payload);
  const std::string gz = hg::test::read_bytes(tmp / "labels.gz");
  hg::test::write_bytes(tmp / "cut.gz", gz.substr(0, gz.size() / 2));
  const std::string msg = error_of([&] { hg::data::read_idx(tmp / "cut.gz", 0x801); });
  EXPECT_NE(msg.find("cut.gz"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cut short"), std::string::npos) << msg;
}

// A file holding more than its header says (a header that lies; a small gzip file that unpacks to
// gigabytes) was unpacked whole, and copied once more, before its size was checked: 5 GiB of
// zeros behind the header of 64 images, a 23 MB file, ended as "out of host memory ... try a
// smaller batch_size", naming no file. It is read to one byte past the header's size.
TEST(Idx, AFileHoldingMoreThanItsHeaderSaysIsNotReadToItsEnd) {
  hg::test::TempDir tmp;
  const std::string path = tmp / "train-images-idx3-ubyte.gz";
  gzFile f = gzopen(path.c_str(), "wb1");
  ASSERT_NE(f, nullptr);
  const std::string header = be32(0x803) + be32(64) + be32(28) + be32(28);
  ASSERT_EQ(gzwrite(f, header.data(), static_cast<unsigned>(header.size())), 16);
  const std::string zeros(size_t{1} << 20, '\0');
  for (int i = 0; i < 64; ++i)  // 64 MiB, about 64 KB packed
    ASSERT_EQ(gzwrite(f, zeros.data(), static_cast<unsigned>(zeros.size())), 1 << 20);
  gzclose(f);
  const std::string msg = error_of([&] { hg::data::read_idx(path, 0x803); });
  std::string want = "IDX: '";
  want += path;
  want += "' holds more than the 50176 data bytes its header [64, 28, 28] says";
  EXPECT_NE(msg.find(want), std::string::npos) << msg;
}

// The Fashion-MNIST config run on a folder of images (--data-dir DIR without --dataset
// image_folder) said only "neither '<DIR>/train-labels-idx1-ubyte.gz' nor ... exists". The error
// names the folders it holds and the dataset key.
TEST(Idx, AFolderOfImageFoldersNamesTheDatasetKey) {
  hg::test::TempDir tmp;
  std::filesystem::create_directories(tmp.path() / "train/cat");
  std::filesystem::create_directories(tmp.path() / "val/cat");
  const std::string msg = error_of([&] { hg::data::IdxDataset(tmp.path().string(), "train"); });
  EXPECT_NE(msg.find("train-labels-idx1-ubyte"), std::string::npos) << msg;
  EXPECT_NE(msg.find("holds no IDX files but the folders 'train', 'val'"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("dataset: image_folder"), std::string::npos) << msg;
}

// val_split '' is timm's "no validation": an IDX folder of train files alone trains, no test
// split is looked for (the trainer refused an empty val_split), and validate's reader says the
// key is empty.
TEST(Idx, AnEmptyValSplitReadsTheTrainFilesAlone) {
  hg::test::TempDir tmp;
  hg::test::write_bytes(tmp / "train-images-idx3-ubyte",
                        be32(0x803) + be32(2) + be32(2) + be32(2) + std::string(8, '\x40'));
  hg::test::write_bytes(tmp / "train-labels-idx1-ubyte",
                        be32(0x801) + be32(2) + std::string("\x00\x01", 2));
  hg::train::Config cfg;
  cfg.dataset = "idx";
  cfg.data_dir = tmp.path().string();
  cfg.in_chans = 1;
  cfg.val_split = "";
  const hg::data::Datasets d = hg::data::make_datasets(cfg);
  EXPECT_EQ(d.train->size(), 2);
  EXPECT_EQ(d.val, nullptr);
  EXPECT_NE(error_of([&] { hg::data::make_val_dataset(cfg); }).find("val_split is empty"),
            std::string::npos);
  cfg.val_split = "test";  // the precondition: a validation split here would fail (no t10k files)
  EXPECT_NE(error_of([&] { hg::data::make_datasets(cfg); }).find("t10k"), std::string::npos);
}
