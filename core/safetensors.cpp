// safetensors reader and writer (format: see safetensors.h). The reader trusts nothing in the file:
// every field is validated before a byte of tensor data is touched, and every error names the file.
#include "core/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/autograd.h"
#include "core/utf8.h"

namespace hg::safetensors {

// The format is little-endian; we copy bytes straight into tensors, which is only right on a
// little-endian host (every machine haargrad targets).
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

using json = nlohmann::json;

// The dtype names of the format and ours; the format's list is longer, we accept these only.
struct DTypeName {
  const char* name;
  DType dtype;
};
constexpr DTypeName kDTypes[] = {{"F64", DType::f64},  {"F32", DType::f32}, {"F16", DType::f16},
                                 {"BF16", DType::bf16}, {"I64", DType::i64}, {"I32", DType::i32},
                                 {"U8", DType::u8},     {"BOOL", DType::boolean}};

const char* format_name(DType t) {
  for (const auto& d : kDTypes)
    if (d.dtype == t) return d.name;
  return "?";
}

// Every reader error starts "safetensors '<file>': ".
template <typename... Args>
[[noreturn]] void fail(const std::string& what, const Args&... args) {
  // a header's names and values are the file's bytes: invalid UTF-8 written as \xHH, not raw
  throw Error(utf8_shown(str("safetensors '", what, "': ", args...)));
}

// Parses the header JSON, failing on syntax errors and on a key repeated within one object
// (nlohmann keeps the last value silently; a repeated tensor name would hide a tensor's data).
// A header nests 3 deep ({name: {shape: [...]}}); one nested deeper than kMaxDepth is refused
// before it is built (a 300 KB header of 100,000 brackets would otherwise exhaust the stack when
// printed).
constexpr int kMaxDepth = 16;

// A first pass over the header's events that builds nothing: the keys of each open object and
// the depth. (nlohmann's parser with a callback did this while building, but walks an object's
// members at each member object's end: quadratic in the tensors, 23 s for 40,000.)
class HeaderCheck : public nlohmann::json_sax<json> {
 public:
  std::string duplicate;
  bool too_deep = false;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    if (!keys_.back().insert(k).second && duplicate.empty()) duplicate = k;
    return duplicate.empty();
  }
  // the syntax error is said by the parse that builds the header (with nlohmann's message)
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  // every open object or array has a key set (an array's stays empty); their count is the depth
  bool open() {
    if (keys_.size() >= static_cast<size_t>(kMaxDepth)) {
      too_deep = true;
      return false;
    }
    keys_.emplace_back();
    return true;
  }
  bool close() {
    keys_.pop_back();
    return true;
  }
  std::vector<std::set<std::string>> keys_;  // the keys seen in each open value
};

json parse_header(const std::string& text, const std::string& what) {
  HeaderCheck check;
  const bool well_formed = json::sax_parse(text, &check);
  if (check.too_deep)
    fail(what, "header nests deeper than ", kMaxDepth, " levels (a safetensors header nests 3)");
  if (!check.duplicate.empty()) fail(what, "duplicate key '", check.duplicate, "' in the header");
  json header;
  try {
    header = json::parse(text);
  } catch (const json::exception& e) {
    fail(what, "header is not valid JSON (", e.what(), ")");
  }
  if (!well_formed) fail(what, "header is not valid JSON");  // (the parse above throws first)
  return header;
}

// A JSON value for a message: its text, cut at 80 characters.
std::string brief(const json& v) {
  std::string s = v.dump();
  return s.size() <= 80 ? s : s.substr(0, 77) + "...";
}

// A JSON value that must be a non-negative integer; `field` and `name` go into the message.
int64_t non_negative_int(const json& v, const std::string& what, const std::string& name,
                         const char* field) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(what, "tensor '", name, "': ", field, " value ", u, " is too large");
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) {  // signed: here only when negative
    fail(what, "tensor '", name, "': ", field, " has negative value ", v.get<int64_t>());
  }
  fail(what, "tensor '", name, "': ", field, " must hold integers, got ", brief(v));
}

// One tensor entry of the header, validated except for its place among the others.
struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  int64_t begin, end;  // byte offsets into the data section
};

Entry parse_entry(const std::string& name, const json& v, int64_t data_bytes, const std::string& what) {
  if (!v.is_object())
    fail(what, "tensor '", name, "': entry must be an object {dtype, shape, data_offsets}, got ",
         brief(v));
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) fail(what, "tensor '", name, "': entry has no '", key, "'");
  Entry e;
  e.name = name;

  const json& dt = v["dtype"];
  if (!dt.is_string()) fail(what, "tensor '", name, "': dtype must be a string, got ", brief(dt));
  const std::string& dname = dt.get_ref<const std::string&>();
  auto it = std::find_if(std::begin(kDTypes), std::end(kDTypes),
                         [&](const DTypeName& d) { return dname == d.name; });
  if (it == std::end(kDTypes))
    fail(what, "tensor '", name, "': unsupported dtype '", dname,
         "' (supported: F64 F32 F16 BF16 I64 I32 U8 BOOL)");
  e.dtype = it->dtype;

  const json& sh = v["shape"];
  if (!sh.is_array()) fail(what, "tensor '", name, "': shape must be an array, got ", brief(sh));
  for (const json& d : sh) e.shape.push_back(non_negative_int(d, what, name, "shape"));
  // Byte size with an overflow guard: a hostile shape must not wrap around to a small size.
  int64_t bytes = 0;
  if (std::find(e.shape.begin(), e.shape.end(), 0) == e.shape.end()) {
    bytes = static_cast<int64_t>(dtype_size(e.dtype));
    for (int64_t n : e.shape) {
      if (bytes > std::numeric_limits<int64_t>::max() / n)
        fail(what, "tensor '", name, "': shape ", shape_str(e.shape), " is too large (its byte size overflows)");
      bytes *= n;
    }
  }

  const json& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2)
    fail(what, "tensor '", name, "': data_offsets must be [begin, end], got ", brief(off));
  e.begin = non_negative_int(off[0], what, name, "data_offsets");
  e.end = non_negative_int(off[1], what, name, "data_offsets");
  if (e.begin > e.end)
    fail(what, "tensor '", name, "': data_offsets [", e.begin, ", ", e.end, "] has begin > end");
  if (e.end > data_bytes)
    fail(what, "tensor '", name, "': data_offsets [", e.begin, ", ", e.end,
         "] run past the data section of ", data_bytes,
         " bytes: the file is cut short (a copy or a write that stopped), or its header is "
         "damaged");
  if (e.end - e.begin != bytes)
    fail(what, "tensor '", name, "': data_offsets [", e.begin, ", ", e.end, "] span ", e.end - e.begin,
         " bytes, but ", format_name(e.dtype), shape_str(e.shape), " needs ", bytes, " bytes");
  return e;
}

// The "__metadata__" map: an object of strings.
std::map<std::string, std::string> parse_metadata(const json& v, const std::string& what) {
  if (!v.is_object()) fail(what, "__metadata__ must be an object of strings, got ", brief(v));
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string())
      fail(what, "__metadata__ value of '", key, "' must be a string, got ", brief(value));
    out[key] = value.get<std::string>();
  }
  return out;
}

// What a file that is no safetensors file is, from its first bytes, for the header-length error
// (a timm user's first file is a PyTorch one: model.pth, pytorch_model.bin); "" when unknown.
std::string foreign_format(const char* head, size_t n) {
  const char* how =
      ": haargrad reads safetensors; convert it in Python with "
      "safetensors.torch.save_file(state_dict, 'w.safetensors'), state_dict = torch.load(file) "
      "(a training checkpoint's ['state_dict'])";
  if (n >= 4 && std::memcmp(head, "PK\x03\x04", 4) == 0)
    return str("; it is a ZIP archive, likely a PyTorch file (torch.save)", how);
  if (n >= 2 && static_cast<unsigned char>(head[0]) == 0x80 && head[1] >= 2 && head[1] <= 5)
    return str("; it is a Python pickle, likely a PyTorch file (torch.save)", how);
  if (n >= 8 && std::memcmp(head, "\x89PNG\r\n\x1a\n", 8) == 0) return "; it is a PNG image";
  if (n >= 3 && std::memcmp(head, "\xff\xd8\xff", 3) == 0) return "; it is a JPEG image";
  if (n >= 6 && std::memcmp(head, "\x93NUMPY", 6) == 0)
    return "; it is a NumPy array (numpy.save): convert it in Python with "
           "safetensors.numpy.save_file({'input': array}, 'x.safetensors')";
  // A safetensors file whose length field is damaged: the header after it is still JSON text
  // (that was said to be a text file such as a YAML config).
  // (a length of 4 GiB or more: a header of thousands of tensors cut short has a plausible one)
  uint64_t length = 0;
  if (n >= 8) std::memcpy(&length, head, 8);
  if (n >= 10 && head[8] == '{' && head[9] == '"' && length >= (uint64_t{1} << 32))
    return "; its first 8 bytes (the header length) are damaged: the JSON header after them is "
           "there, so the file was a safetensors file; use an intact copy";
  // A run folder holds args.yaml beside its checkpoints: a config given where weights go read as
  // "header length 8243683405496590371" (a new user's report). Such a file starts with ASCII.
  const size_t m = std::min<size_t>(n, 256);
  const auto printable = [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c >= 0x20 || c == '\n' || c == '\r' || c == '\t';  // printable ASCII or UTF-8
  };
  const bool text = m >= 8 &&
                    std::all_of(head, head + 8,
                                [&](char ch) {
                                  return printable(ch) && static_cast<unsigned char>(ch) < 0x80;
                                }) &&
                    std::all_of(head, head + m, printable);
  if (text)
    return "; it is a text file (a YAML config such as a run's args.yaml?), not weights: give a "
           "run folder's last.safetensors or model_best.safetensors, or the folder itself where "
           "the command takes one; a config goes as the command's CONFIG argument";
  return "";
}

}  // namespace

File parse(const std::string& bytes, const std::string& what) {
  if (bytes.size() < 8) fail(what, "file has ", bytes.size(), " bytes, too short for the 8-byte header length");
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);  // little-endian (see the static_assert)
  const uint64_t available = bytes.size() - 8;
  if (header_len > available)
    fail(what, "header length ", header_len, " runs past the end of the file (", available,
         " bytes after the length field; not a safetensors file, or a truncated one)",
         foreign_format(bytes.data(), bytes.size()));
  const int64_t data_bytes = static_cast<int64_t>(available - header_len);
  const char* data = bytes.data() + 8 + header_len;

  json header = parse_header(bytes.substr(8, header_len), what);
  if (!header.is_object()) fail(what, "header must be a JSON object, got ", header.type_name());

  File file;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      file.metadata = parse_metadata(value, what);
      continue;
    }
    entries.push_back(parse_entry(name, value, data_bytes, what));
  }

  // The entries must tile the data section: sorted by offset, each starts where the last ended.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  int64_t expected = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < expected)
      fail(what, "tensor '", e.name, "' (bytes [", e.begin, ", ", e.end, "]) overlaps tensor '",
           previous->name, "' (bytes [", previous->begin, ", ", previous->end, "])");
    if (e.begin > expected)
      fail(what, "gap of ", e.begin - expected, " bytes in the data section before tensor '", e.name,
           "' (bytes [", e.begin, ", ", e.end, "])");
    expected = e.end;
    previous = &e;
  }
  if (expected != data_bytes)
    fail(what, "the tensors cover ", expected, " bytes but the data section has ", data_bytes,
         " (", data_bytes - expected, " trailing bytes)");

  autograd::NoGradGuard no_grad;  // loaded tensors are plain data, never recorded activations
  for (const Entry& e : entries) {
    file.tensors.emplace(e.name, Tensor::from_bytes(e.shape, e.dtype, data + e.begin, Device::cpu));
    file.order.push_back(e.name);
  }
  return file;
}

File load(const std::string& path) {
  const std::string bytes = io::read_file(path);  // its errors name the file
  try {
    return parse(bytes, path);
  } catch (const std::bad_alloc&) {
    throw Error(str("safetensors '", path, "': out of host memory holding its ", bytes.size(), " bytes as tensors"));
  }
}

namespace {

// The header of `path` as JSON (an object), and the size of the data section after it, reading
// only the header. Throws like read_metadata.
json read_header(const std::string& path, uint64_t* data_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(str("safetensors '", path, "': cannot open: ", std::strerror(errno)));
  in.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  if (size < 8) fail(path, "file has ", size, " bytes, too short for the 8-byte header length");
  uint64_t header_len = 0;
  in.read(reinterpret_cast<char*>(&header_len), 8);  // little-endian (see the static_assert)
  if (header_len > size - 8) {
    // the first bytes say what the file is instead (foreign_format looks at up to 256)
    std::string head(static_cast<size_t>(std::min<uint64_t>(size, 256)), '\0');
    in.seekg(0);
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    if (!in) head.assign(reinterpret_cast<const char*>(&header_len), 8);
    fail(path, "header length ", header_len, " runs past the end of the file (", size - 8,
         " bytes after the length field; not a safetensors file, or a truncated one)",
         foreign_format(head.data(), head.size()));
  }
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  if (!in) throw Error(str("safetensors '", path, "': read failed: ", std::strerror(errno)));
  json j = parse_header(header, path);
  if (!j.is_object()) fail(path, "header must be a JSON object, got ", j.type_name());
  *data_bytes = size - 8 - header_len;
  return j;
}

}  // namespace

std::vector<std::string> tensor_names(const std::string& path) {
  uint64_t data_bytes = 0;
  const json j = read_header(path, &data_bytes);
  std::vector<std::string> out;
  for (const auto& [name, v] : j.items())
    if (name != "__metadata__") out.push_back(name);
  return out;
}

std::map<std::string, std::string> read_metadata(const std::string& path) {
  uint64_t data_bytes = 0;
  const json j = read_header(path, &data_bytes);
  // A file cut short (a copy or a write that stopped) is found here, from the header alone, so
  // that a command reading the metadata first (a resume) refuses it before its long work; the
  // entries are checked in full when the file is loaded.
  uint64_t data_end = 0;
  std::string last;
  for (const auto& [name, v] : j.items()) {
    if (name == "__metadata__" || !v.is_object() || !v.contains("data_offsets")) continue;
    const json& off = v["data_offsets"];
    if (off.is_array() && off.size() == 2 && off[1].is_number_unsigned() &&
        off[1].get<uint64_t>() > data_end) {
      data_end = off[1].get<uint64_t>();
      last = name;
    }
  }
  if (data_end > data_bytes)
    fail(path, "the file is cut short (a copy or a write that stopped), or its header is damaged: ",
         "its tensors end at byte ", data_end, " of the data section ('", last, "'), which holds ",
         data_bytes, " bytes");
  auto it = j.find("__metadata__");
  return it == j.end() ? std::map<std::string, std::string>{} : parse_metadata(*it, path);
}

std::string serialize(const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  autograd::NoGradGuard no_grad;  // the host copies below must not be recorded
  nlohmann::ordered_json header = nlohmann::ordered_json::object();  // keeps the given order
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<Tensor> host;
  std::set<std::string> names;
  int64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    HG_CHECK(!name.empty() && name != "__metadata__", "safetensors save: invalid tensor name '", name, "'");
    HG_CHECK(names.insert(name).second, "safetensors save: duplicate tensor name '", name, "'");
    HG_CHECK(t.defined(), "safetensors save: tensor '", name, "' is undefined");
    Tensor h = t.to(Device::cpu).contiguous();
    const int64_t n = static_cast<int64_t>(h.nbytes());
    header[name] = {{"dtype", format_name(h.dtype())},
                    {"shape", h.shape()},
                    {"data_offsets", {offset, offset + n}}};
    offset += n;
    host.push_back(h);
  }
  std::string text = header.dump();
  // Pad with spaces (valid JSON whitespace) so the data section starts 8-byte aligned.
  text.append((8 - text.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(8 + text.size() + static_cast<size_t>(offset));
  uint64_t len = text.size();
  out.append(reinterpret_cast<const char*>(&len), 8);  // little-endian (see the static_assert)
  out += text;
  for (const Tensor& h : host) out.append(static_cast<const char*>(h.data_ptr()), h.nbytes());
  return out;
}

void save(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
          const std::map<std::string, std::string>& metadata) {
  io::write_file_atomic(path, serialize(tensors, metadata));
}

void save(const std::string& path, const File& file) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const std::string& name : file.order) tensors.emplace_back(name, file.tensors.at(name));
  save(path, tensors, file.metadata);
}

}  // namespace hg::safetensors
