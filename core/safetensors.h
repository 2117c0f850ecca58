// safetensors read/write (https://github.com/huggingface/safetensors, format spec in its README):
// 8-byte little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets}, ...,
// "__metadata__": {string: string}}, then the raw row-major little-endian tensor data.
// dtypes: F64 F32 F16 BF16 I64 I32 U8 BOOL.
//
// Errors: every malformed file (header length past the end, JSON that is not an object, unknown
// dtype, offsets out of range, overlapping tensors or gaps between them, byte size != numel x dtype
// size, duplicate names) throws hg::Error naming the file and the problem.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace hg::safetensors {

struct File {
  std::map<std::string, Tensor> tensors;        ///< CPU tensors, by name
  std::map<std::string, std::string> metadata;  ///< "__metadata__" (may be empty)
  std::vector<std::string> order;               ///< names in file (data offset) order
};

/// Reads a whole file into CPU tensors. Throws hg::Error (file name + problem) on any defect.
/// The tensors are contiguous, allocated in the caller's memory::CategoryScope (loading is not
/// recorded on the tape), dtypes as stored (no conversion).
File load(const std::string& path);
/// Parses an in-memory image of a file; `what` names it in errors (e.g. the path).
/// Beyond the checks listed above: every key of the header appears once (in any object), tensor
/// entries have dtype / shape (non-negative integers) / data_offsets [begin, end], and the
/// entries tile the data section exactly (sorted by offset, each begins where the last ended).
File parse(const std::string& bytes, const std::string& what);

/// The "__metadata__" map alone (empty when absent), reading only the header: cheap for large
/// checkpoints. Throws hg::Error naming the file when it cannot be read, the header is malformed,
/// or the file is shorter than its tensors' data offsets (cut short).
std::map<std::string, std::string> read_metadata(const std::string& path);

/// The tensor names of the file, reading only its header (sorted). Throws like read_metadata.
std::vector<std::string> tensor_names(const std::string& path);

/// Writes tensors (any device; copied to the host) in the order given, data 8-byte aligned.
/// Atomic through io::write_file_atomic (core/atomic_file.h): a reader never sees a half-written
/// file and a failed write leaves the previous file intact. Throws hg::Error naming the path and
/// the system error when a write, fsync, close or rename fails (the temporary file is removed),
/// and for an empty, repeated or "__metadata__" tensor name.
void save(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
          const std::map<std::string, std::string>& metadata = {});
/// A loaded file written back as it was read (its tensors in file order, its metadata): the way to
/// save an edited File.
void save(const std::string& path, const File& file);
/// The bytes save() would write: the header is compact JSON ("__metadata__" first when not empty,
/// then the tensors in the order given) padded with spaces to a multiple of 8 bytes.
std::string serialize(const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace hg::safetensors
