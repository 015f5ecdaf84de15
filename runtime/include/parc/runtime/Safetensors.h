//===- Safetensors.h - the safetensors index, read strictly -----*- C++ -*-===//
//
// The format Hugging Face checkpoints ship in: an 8-byte little-endian
// header length, a JSON object naming each tensor's dtype, shape and byte
// range in the data that follows, then the data. parc-run loads a plan's
// initial weights from one (--load-weights) and writes one (--dump). The
// reader needs no LibTorch: the plan library holds it, and its refusals
// name the file and the tensor.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_RUNTIME_SAFETENSORS_H
#define PARC_RUNTIME_SAFETENSORS_H

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace parc::runtime {

struct SafetensorsEntry {
  /// "F32", "BF16", "F16", "I64", ...
  std::string dtype;
  std::vector<int64_t> shape;
  /// The tensor's bytes, [begin, end) of the file.
  uint64_t begin = 0, end = 0;
};

/// Bytes per element of a safetensors dtype; 0 for one parc-run does not
/// read.
int safetensorsDtypeBytes(const std::string &dtype);

/// The index of the safetensors file `path` whose bytes are `bytes` (the
/// whole file, mapped or read; only the header is copied). Throws
/// std::runtime_error naming `path` for a header that is not the format's: a
/// length past the file, JSON that is not an object of tensor entries, a
/// shape with an overflowing size, a byte range outside the data or not the
/// shape's size.
std::map<std::string, SafetensorsEntry>
readSafetensorsIndex(const std::string &path, std::string_view bytes);

} // namespace parc::runtime

#endif // PARC_RUNTIME_SAFETENSORS_H
