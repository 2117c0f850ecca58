// safetensors: round trips for every dtype, the exact byte layout, one test per kind of malformed
// file (bytes built by hand), and the atomic-write guarantee of save().
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>

#include "core/safetensors.h"
#include "test_util.h"

using namespace hg;
namespace fs = std::filesystem;

namespace {

// A file image: 8-byte little-endian header length, the header text, then the data bytes.
std::string image(const std::string& header, const std::string& data = "") {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

// The raw bytes of a CPU tensor (row-major), for bit-exact comparisons of any dtype.
std::string raw(const Tensor& t) {
  Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.nbytes());
}

// Parses `bytes` (named "bad.safetensors") and expects an hg::Error whose message contains the
// file name and every one of `needles`.
void expect_rejected(const std::string& bytes, std::initializer_list<const char*> needles) {
  try {
    safetensors::parse(bytes, "bad.safetensors");
    ADD_FAILURE() << "no error for a malformed file";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("bad.safetensors"), std::string::npos) << m;
    for (const char* n : needles) EXPECT_NE(m.find(n), std::string::npos) << "missing '" << n << "' in: " << m;
  }
}

// A fresh empty directory under the system temp dir, removed when the test ends.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    path = fs::temp_directory_path() / ("haargrad_st_" + tag + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

// ---- round trips ----------------------------------------------------------------------------------

TEST(Safetensors, RoundTripEveryDType) {
  // Floating values that survive their dtype exactly: make them in that dtype (the conversion rounds).
  Tensor f64 = test::random({3, 5}, 1, DType::f64, -1e3, 1e3);
  Tensor f32 = test::random({2, 3, 4}, 2, DType::f32);
  Tensor f16 = test::random({7}, 3, DType::f64, -6e4, 6e4).to(DType::f16);
  Tensor bf16 = test::random({2, 9}, 4, DType::f64, -1e30, 1e30).to(DType::bf16);
  std::vector<int64_t> i64v{-(int64_t(1) << 62) - 5, -1, 0, 1, (int64_t(1) << 60) + 3, 42};
  Tensor i64 = Tensor::from_bytes({2, 3}, DType::i64, i64v.data(), Device::cpu);
  Tensor i32 = Tensor::from_vector<int32_t>({4}, {-2147483647 - 1, -7, 123456, 2147483647});
  Tensor u8 = Tensor::from_vector<uint8_t>({2, 2}, {0, 1, 200, 255});
  std::vector<uint8_t> bits{1, 0, 0, 1, 1};
  Tensor boolean = Tensor::from_bytes({5}, DType::boolean, bits.data(), Device::cpu);
  std::vector<std::pair<std::string, Tensor>> in{{"f64", f64}, {"f32", f32}, {"f16", f16},
                                                 {"bf16", bf16}, {"i64", i64}, {"i32", i32},
                                                 {"u8", u8},    {"bool", boolean}};

  safetensors::File f = safetensors::parse(safetensors::serialize(in), "mem");
  ASSERT_EQ(f.tensors.size(), in.size());
  std::vector<std::string> expected_order;
  for (const auto& [name, t] : in) {
    expected_order.push_back(name);
    ASSERT_TRUE(f.tensors.count(name)) << name;
    const Tensor& back = f.tensors.at(name);
    EXPECT_EQ(back.dtype(), t.dtype()) << name;
    EXPECT_EQ(back.shape(), t.shape()) << name;
    EXPECT_EQ(back.device(), Device::cpu) << name;
    EXPECT_EQ(raw(back), raw(t)) << name;
  }
  EXPECT_EQ(f.order, expected_order);  // data is written in the order given
  EXPECT_TRUE(f.metadata.empty());
}

TEST(Safetensors, ByteLayoutIsAlignedRowMajorAndInGivenOrder) {
  // Names out of alphabetical order, a permuted (non-contiguous) view, a scalar and an empty tensor.
  Tensor a = test::random({3, 4}, 5, DType::f32);
  Tensor at = a.permute({1, 0});  // written as its own row-major (4, 3) contents
  Tensor scalar = Tensor::full({}, 2.5, DType::f64);
  Tensor empty = Tensor::empty({0, 3}, DType::f32);
  Tensor b = Tensor::from_vector<int32_t>({3}, {7, -8, 9});
  std::string bytes = safetensors::serialize({{"zeta", at}, {"alpha", scalar}, {"empty", empty}, {"mid", b}});

  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  EXPECT_EQ((8 + header_len) % 8, 0u) << "data section must start 8-byte aligned";
  std::string data = bytes.substr(8 + header_len);
  EXPECT_EQ(data, raw(at) + raw(scalar) + raw(b)) << "data = the tensors' row-major bytes, in order";
  std::string header = bytes.substr(8, header_len);
  size_t last = header.find_last_not_of(' ');
  EXPECT_EQ(header[last], '}') << "padding is spaces after the JSON object";
  EXPECT_LT(header.size() - last - 1, 8u) << "no more padding than alignment needs";

  safetensors::File f = safetensors::parse(bytes, "mem");
  EXPECT_EQ(f.order, (std::vector<std::string>{"zeta", "alpha", "empty", "mid"}));
  EXPECT_EQ(f.tensors.at("zeta").to_vector<float>(), at.to_vector<float>());
  EXPECT_EQ(f.tensors.at("alpha").shape(), Shape{});
  EXPECT_EQ(f.tensors.at("alpha").item(), 2.5);
  EXPECT_EQ(f.tensors.at("empty").shape(), (Shape{0, 3}));
  EXPECT_EQ(f.tensors.at("mid").to_vector<int32_t>(), (std::vector<int32_t>{7, -8, 9}));
}

TEST(Safetensors, MetadataRoundTrip) {
  std::map<std::string, std::string> md{{"config", R"({"model": "convnext", "dims": [8, 16]})"},
                                        {"quotes \"and\" \\slashes", "line1\nline2\ttab"},
                                        {"empty", ""},
                                        {"unicode", "\xc3\xa9t\xc3\xa9 \xe2\x9c\x93"}};
  Tensor t = test::random({2, 2}, 6, DType::f64);
  safetensors::File f = safetensors::parse(safetensors::serialize({{"t", t}}, md), "mem");
  EXPECT_EQ(f.metadata, md);
  EXPECT_EQ(raw(f.tensors.at("t")), raw(t));
  // Metadata alone (no tensors) is a valid file too.
  safetensors::File g = safetensors::parse(safetensors::serialize({}, md), "mem");
  EXPECT_EQ(g.metadata, md);
  EXPECT_TRUE(g.tensors.empty());
}

// A loaded File saved back is the same file byte for byte: tensors in file order (not the map's
// name order), the metadata kept.
TEST(Safetensors, ALoadedFileSavesBackAsItWas) {
  TempDir dir("file_back");
  const std::string a = (dir.path / "a.safetensors").string(),
                    b = (dir.path / "b.safetensors").string();
  safetensors::save(a, {{"z", test::random({3}, 1, DType::f32)}, {"a", test::random({2, 2}, 2)}},
                    {{"config", "x: 1"}});
  safetensors::save(b, safetensors::load(a));
  EXPECT_EQ(read_file(b), read_file(a));
}

TEST(Safetensors, ReadsAHandWrittenFile) {
  // Independent of our writer: an unpadded header with keys in a different order than ours.
  std::string data(reinterpret_cast<const char*>(std::array<float, 3>{1.5f, -2.0f, 3.25f}.data()), 12);
  data += std::string("\x05\x00\x00\x00\x00\x00\x00\x00", 8);  // I64 5
  std::string h = R"({"b":{"data_offsets":[12,20],"shape":[],"dtype":"I64"},)"
                  R"("__metadata__":{"k":"v"},"a":{"shape":[3],"dtype":"F32","data_offsets":[0,12]}})";
  safetensors::File f = safetensors::parse(image(h, data), "mem");
  EXPECT_EQ(f.order, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(f.tensors.at("a").to_vector<float>(), (std::vector<float>{1.5f, -2.0f, 3.25f}));
  EXPECT_EQ(f.tensors.at("b").item(), 5.0);
  EXPECT_EQ(f.metadata.at("k"), "v");
}

TEST(Safetensors, WriterRejectsBadNames) {
  Tensor t = test::random({2}, 7, DType::f32);
  EXPECT_THROW(safetensors::serialize({{"x", t}, {"x", t}}), Error);
  EXPECT_THROW(safetensors::serialize({{"__metadata__", t}}), Error);
  EXPECT_THROW(safetensors::serialize({{"x", Tensor()}}), Error);
}

// ---- malformed files: one test per kind ------------------------------------------------------------

TEST(SafetensorsMalformed, ShorterThanTheLengthField) {
  expect_rejected(std::string("\x02\x00\x00", 3), {"too short"});
}

TEST(SafetensorsMalformed, HeaderLengthPastTheEnd) {
  std::string bytes = image("{}");
  bytes[0] = 3;  // claims 3 header bytes, 2 present
  expect_rejected(bytes, {"header length 3", "past the end", "not a safetensors file"});
  std::string huge = image("{}");
  std::memset(huge.data(), 0xff, 8);  // 2^64 - 1: must not wrap around
  expect_rejected(huge, {"past the end"});
  // a damaged length before an intact header: said so, by load and by read_metadata (it was
  // called a text file such as a YAML config: the header after the length is text)
  std::string damaged =
      image(R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})", "x");
  std::memset(damaged.data(), 0xff, 7);
  damaged[7] = 0x7f;
  expect_rejected(damaged, {"past the end", "its first 8 bytes (the header length) are damaged"});
  // a file cut short in its header has a plausible length: not called damaged
  const std::string cut_in_header = damaged.substr(0, 20).replace(
      0, 8,
      image(R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})", "x").substr(0, 8));
  try {
    safetensors::parse(cut_in_header, "cut.safetensors");
    ADD_FAILURE() << "no error for a file cut short";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("past the end"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("damaged"), std::string::npos) << e.what();
  }
  TempDir dir("damaged");
  const std::string path = (dir.path / "w.safetensors").string();
  std::ofstream(path, std::ios::binary) << damaged;
  try {
    safetensors::read_metadata(path);
    ADD_FAILURE() << "no error for a damaged length";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the header length) are damaged"), std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find("text file"), std::string::npos) << e.what();
  }
}

// A timm user's first file is a PyTorch one (model.pth, pytorch_model.bin): its first 8 bytes read
// as a huge header length, which alone said "not a safetensors file, or a truncated one". The
// message names the format and the conversion. torch.save writes a ZIP archive (PyTorch >= 1.6) or,
// before that or with _use_new_zipfile_serialization=False, a pickle (protocol 2: 0x80 0x02).
// A config where weights go (validate --checkpoint RUN/args.yaml): named as a text file.
TEST(SafetensorsMalformed, ATextFileIsNamedAsSuch) {
  expect_rejected("model: wtconvnext_fmnist\nnum_classes: 10\nimg_size: 28\n",
                  {"past the end", "it is a text file", "args.yaml", "CONFIG argument"});
  expect_rejected(std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16) + std::string(64, 'x'),
                  {"it is a PNG image"});  // binary: not a text file
}

TEST(SafetensorsMalformed, PyTorchFilesAreNamedAsSuch) {
  const std::string zip = std::string("PK\x03\x04\x00\x00\x08\x00", 8) + std::string(64, 'z');
  const std::string pickle =
      std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20", 10) + std::string(64, 'p');
  for (const std::string& bytes : {zip, pickle})
    expect_rejected(bytes,
                    {"past the end", "a PyTorch file (torch.save)", "safetensors.torch.save_file"});
  expect_rejected(zip, {"ZIP"});
  expect_rejected(pickle, {"pickle"});
  TempDir dir("pytorch");
  const std::string path = (dir.path / "model.pth").string();
  std::ofstream(path, std::ios::binary) << zip;
  for (auto read : {+[](const std::string& p) { safetensors::load(p); },
                    +[](const std::string& p) { safetensors::read_metadata(p); }}) {
    try {
      read(path);
      ADD_FAILURE() << "no error for a PyTorch file";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("a PyTorch file (torch.save)"), std::string::npos)
          << e.what();
    }
  }
  // a safetensors file cut short keeps the message it had
  std::string cut = image("{}");
  cut[0] = 3;
  try {
    safetensors::parse(cut, "bad.safetensors");
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("PyTorch"), std::string::npos) << e.what();
  }
}

// A header's bytes that are no UTF-8 (a damaged name) are shown as \xHH in the message, never
// raw (the JSON parser refuses the name; its message quotes what it read).
TEST(SafetensorsMalformed, BytesThatAreNoUtf8AreShownEscaped) {
  try {
    safetensors::parse(
        image("{\"w\xff\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}", "x"),
        "bad.safetensors");
    ADD_FAILURE() << "no error for a name that is no UTF-8";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\xff'), std::string::npos) << m;
    EXPECT_NE(m.find("w\\xff"), std::string::npos) << m;
  }
}

TEST(SafetensorsMalformed, HeaderIsNotJson) {
  expect_rejected(image(R"({"a": {"dtype": "F32", )"), {"not valid JSON"});
}

// A header of many tensors is read in time that grows with its size: the parse that checked its
// keys walked every earlier tensor at each tensor's end (40,000 tensors took 23 s, this test's
// 100,000 some minutes). Every tensor is there, in the file's order.
TEST(SafetensorsMalformed, AHeaderOfManyTensorsIsReadWhole) {
  const int n = 100000;
  std::string h = "{", data;
  for (int i = 0; i < n; ++i) {
    h += str(i ? ", " : "", "\"t", i, "\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [",
             i, ", ", i + 1, "]}");
    data += static_cast<char>(i % 251);
  }
  h += "}";
  const safetensors::File f = safetensors::parse(image(h, data), "many.safetensors");
  ASSERT_EQ(f.order.size(), static_cast<size_t>(n));
  EXPECT_EQ(f.order[12345], "t12345");
  EXPECT_EQ(f.tensors.at("t99999").data<uint8_t>()[0], 99999 % 251);
}

// Brackets nested 100,000 deep (a 200 KB header) are refused with a short message, not kept and
// printed (which recursed until the stack ran out); a long value is cut in messages.
TEST(SafetensorsMalformed, DeeplyNestedOrHugeValues) {
  const int deep = 100000;
  expect_rejected(image(R"({"zz": )" + std::string(deep, '[') + std::string(deep, ']') + "}"),
                  {"nests deeper than 16 levels"});
  std::string long_list = "[0";
  for (int i = 0; i < 20000; ++i) long_list += ", 0";
  long_list += "]";
  try {
    safetensors::parse(image(R"({"w": )" + long_list + "}"), "long.safetensors");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must be an object"), std::string::npos) << e.what();
    EXPECT_LT(std::string(e.what()).size(), 300u);
  }
}

TEST(SafetensorsMalformed, HeaderIsNotAnObject) {
  expect_rejected(image(R"([1, 2, 3])"), {"must be a JSON object", "array"});
}

TEST(SafetensorsMalformed, MetadataNotAnObjectOfStrings) {
  expect_rejected(image(R"({"__metadata__": ["a"]})"), {"__metadata__", "object of strings"});
  expect_rejected(image(R"({"__metadata__": {"epoch": 3}})"), {"__metadata__", "epoch", "string"});
}

TEST(SafetensorsMalformed, EntryNotAnObjectOrMissingField) {
  expect_rejected(image(R"({"w": [0, 4]})"), {"tensor 'w'", "must be an object"});
  expect_rejected(image(R"({"w": {"dtype": "F32", "shape": [1]}})", "abcd"), {"tensor 'w'", "data_offsets"});
}

TEST(SafetensorsMalformed, UnknownDType) {
  expect_rejected(image(R"({"w": {"dtype": "F8_E4M3", "shape": [4], "data_offsets": [0, 4]}})", "abcd"),
                  {"tensor 'w'", "unsupported dtype 'F8_E4M3'"});
  expect_rejected(image(R"({"w": {"dtype": 4, "shape": [4], "data_offsets": [0, 4]}})", "abcd"),
                  {"tensor 'w'", "dtype must be a string"});
}

TEST(SafetensorsMalformed, ShapeNotNonNegativeIntegers) {
  expect_rejected(image(R"({"w": {"dtype": "U8", "shape": [-4], "data_offsets": [0, 4]}})", "abcd"),
                  {"tensor 'w'", "negative"});
  expect_rejected(image(R"({"w": {"dtype": "U8", "shape": [2.0, 2], "data_offsets": [0, 4]}})", "abcd"),
                  {"tensor 'w'", "integers"});
  expect_rejected(image(R"({"w": {"dtype": "U8", "shape": 4, "data_offsets": [0, 4]}})", "abcd"),
                  {"tensor 'w'", "shape must be an array"});
  // A shape whose byte size overflows 64 bits must not wrap around to the 4 bytes present.
  expect_rejected(image(R"({"w": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 4]}})",
                        "abcd"),
                  {"tensor 'w'", "too large"});
}

TEST(SafetensorsMalformed, OffsetsNotAPairOrReversed) {
  expect_rejected(image(R"({"w": {"dtype": "U8", "shape": [4], "data_offsets": [0]}})", "abcd"),
                  {"tensor 'w'", "[begin, end]"});
  expect_rejected(image(R"({"w": {"dtype": "U8", "shape": [0], "data_offsets": [4, 0]}})", "abcd"),
                  {"tensor 'w'", "begin > end"});
  expect_rejected(image(R"({"w": {"dtype": "U8", "shape": [4], "data_offsets": [-1, 3]}})", "abcd"),
                  {"tensor 'w'", "negative"});
}

TEST(SafetensorsMalformed, OffsetsPastTheDataSection) {
  expect_rejected(image(R"({"w": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}})", "abcd"),
                  {"tensor 'w'", "[2, 6]", "past the data section of 4 bytes"});
}

TEST(SafetensorsMalformed, ByteSizeDiffersFromShapeTimesDType) {
  expect_rejected(image(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", "abcdefgh"),
                  {"tensor 'w'", "span 8 bytes", "needs 12"});
}

TEST(SafetensorsMalformed, OverlappingTensors) {
  expect_rejected(image(R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},)"
                        R"( "b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}})",
                        "abcdef"),
                  {"'b'", "overlaps", "'a'"});
}

TEST(SafetensorsMalformed, GapsAndTrailingBytes) {
  // A gap between two tensors, a gap before the first, and bytes after the last.
  expect_rejected(image(R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},)"
                        R"( "b": {"dtype": "U8", "shape": [2], "data_offsets": [4, 6]}})",
                        "abcdef"),
                  {"gap of 2 bytes", "'b'"});
  expect_rejected(image(R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}})", "abc"),
                  {"gap of 1 bytes", "'a'"});
  expect_rejected(image(R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}})", "abcd"),
                  {"2 trailing bytes"});
}

TEST(SafetensorsMalformed, DuplicateTensorName) {
  // Valid offsets for each copy, so only the repeated name is wrong.
  expect_rejected(image(R"({"w": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},)"
                        R"( "w": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]}})",
                        "abcd"),
                  {"duplicate key 'w'"});
}

// ---- files: save / load / atomicity ------------------------------------------------------------------

TEST(SafetensorsFile, SaveLoadRoundTripLeavesNoTempFile) {
  TempDir dir("save");
  std::string path = (dir.path / "ckpt.safetensors").string();
  Tensor w = test::random({4, 3}, 8, DType::f32), b = test::random({3}, 9, DType::f64);
  safetensors::save(path, {{"w", w}, {"b", b}}, {{"step", "12"}});
  safetensors::File f = safetensors::load(path);
  EXPECT_EQ(raw(f.tensors.at("w")), raw(w));
  EXPECT_EQ(raw(f.tensors.at("b")), raw(b));
  EXPECT_EQ(f.metadata.at("step"), "12");
  EXPECT_EQ(read_file(path), safetensors::serialize({{"w", w}, {"b", b}}, {{"step", "12"}}));
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.path)) files += e.is_regular_file();
  EXPECT_EQ(files, 1) << "only the destination file remains";
}

TEST(SafetensorsFile, LoadErrorsNameTheFile) {
  TempDir dir("errors");
  std::string missing = (dir.path / "missing.safetensors").string();
  try {
    safetensors::load(missing);
    ADD_FAILURE() << "no error for a missing file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  std::string truncated = (dir.path / "truncated.safetensors").string();
  std::string good = safetensors::serialize({{"w", test::random({16}, 10, DType::f32)}});
  std::ofstream(truncated, std::ios::binary) << good.substr(0, good.size() - 4);
  try {
    safetensors::load(truncated);
    ADD_FAILURE() << "no error for a truncated file";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(truncated), std::string::npos) << m;
    EXPECT_NE(m.find("tensor 'w'"), std::string::npos) << m;
    // said as what it most likely is: a file cut short, not only offsets that run past
    EXPECT_NE(m.find("the file is cut short"), std::string::npos) << m;
  }
  // the header alone says so too: a resume reads it before listing its data
  try {
    safetensors::read_metadata(truncated);
    ADD_FAILURE() << "read_metadata: no error for a truncated file";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(truncated), std::string::npos) << m;
    EXPECT_NE(m.find("the file is cut short"), std::string::npos) << m;
    EXPECT_NE(m.find("end at byte 64 of the data section ('w'), which holds 60 bytes"),
              std::string::npos)
        << m;
  }
}

TEST(SafetensorsFile, StaleTempFileDoesNotAffectLoadOrSave) {
  // What a crash mid-save leaves behind: a half-written <path>.tmp.<pid> beside the good file.
  TempDir dir("stale");
  std::string path = (dir.path / "ckpt.safetensors").string();
  Tensor v1 = test::random({5}, 11, DType::f64);
  safetensors::save(path, {{"v", v1}});
  std::string stale = path + ".tmp.999999";
  std::string half = safetensors::serialize({{"v", test::random({5}, 12, DType::f64)}});
  std::ofstream(stale, std::ios::binary) << half.substr(0, half.size() / 2);
  EXPECT_EQ(raw(safetensors::load(path).tensors.at("v")), raw(v1));
  Tensor v2 = test::random({6}, 13, DType::f64);
  safetensors::save(path, {{"v", v2}});
  EXPECT_EQ(raw(safetensors::load(path).tensors.at("v")), raw(v2));
}

TEST(SafetensorsFile, InterruptedWriteKeepsThePreviousFile) {
  // Interrupt a real save: a file-size limit makes write() fail (EFBIG) part way through the
  // temporary file, as a full disk would. Works as root too, unlike a read-only directory.
  TempDir dir("interrupt");
  std::string path = (dir.path / "ckpt.safetensors").string();
  Tensor v1 = test::random({8}, 14, DType::f32);
  safetensors::save(path, {{"v", v1}});
  const std::string before = read_file(path);

  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);  // get EFBIG instead of being killed
  rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  std::string message;
  try {
    safetensors::save(path, {{"v", test::random({64, 64}, 15, DType::f32)}});  // 16 KiB > 4 KiB
  } catch (const Error& e) {
    threw = true;
    message = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, old_handler);

  EXPECT_TRUE(threw) << "the limited write should have failed";
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_EQ(read_file(path), before) << "the previous file must be untouched";
  EXPECT_EQ(raw(safetensors::load(path).tensors.at("v")), raw(v1));
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.path)) files += e.is_regular_file();
  EXPECT_EQ(files, 1) << "the failed save must remove its temporary file";
}
