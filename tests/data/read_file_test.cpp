// read_file_bytes: every byte of files of assorted sizes (empty, one byte, around the old 64 KiB
// read block, larger than a JPEG usually is), and a clear error for a missing file.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/random.h"
#include "data/image.h"
#include "temp_dir.h"

using namespace hg::data;

TEST(ReadFileBytes, EveryByteOfAnySize) {
  hg::test::TempDir dir;
  hg::Generator g(3);
  for (size_t size :
       {size_t(0), size_t(1), size_t(65535), size_t(65536), size_t(65537), size_t(300001)}) {
    std::string data(size, '\0');
    for (char& c : data) c = static_cast<char>(g.randint(256));
    const std::string path = dir / hg::str("f", size, ".bin");
    hg::test::write_bytes(path, data);
    const std::vector<uint8_t> got = read_file_bytes(path);
    ASSERT_EQ(got.size(), size);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin(),
                           [](uint8_t a, char b) { return a == static_cast<uint8_t>(b); }))
        << size << " bytes";
  }
}

TEST(ReadFileBytes, MissingFileNamesIt) {
  hg::test::TempDir dir;
  const std::string path = dir / "nope.jpg";
  try {
    read_file_bytes(path);
    FAIL() << "no error";
  } catch (const CorruptImage& e) {
    EXPECT_NE(std::string(e.what()).find("nope.jpg"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.what();
  }
}

// A folder given as an image (bench-augment --image DIR) opens as a file and fails at its first
// read, which said only "cannot decode image 'DIR': read error". The system's reason is said.
TEST(ReadFileBytes, AFolderIsNamedAsOne) {
  hg::test::TempDir dir;
  const std::string path = dir / "photos.jpg";
  std::filesystem::create_directory(path);
  try {
    read_file_bytes(path);
    FAIL() << "no error";
  } catch (const CorruptImage& e) {
    EXPECT_NE(std::string(e.what()).find("photos.jpg"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is a folder, not an image file"), std::string::npos)
        << e.what();
  }
}

// A device read as a file reads without end: /dev/zero as infer's --input took every byte of
// memory, as bench-augment's --image did. Both readers refuse it by what it is, naming it.
TEST(ReadFileBytes, ADeviceIsNamedAsOne) {
  try {
    read_file_bytes("/dev/zero");
    FAIL() << "no error";
  } catch (const CorruptImage& e) {
    EXPECT_NE(std::string(e.what()).find("'/dev/zero': it is a device"), std::string::npos)
        << e.what();
  }
  try {
    hg::io::read_file("/dev/zero");
    FAIL() << "no error";
  } catch (const hg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'/dev/zero': it is a device, not a file"),
              std::string::npos)
        << e.what();
  }
}
