//===- fuzz-safetensors.cpp - parc-run's weights-file index ---------------===//
//
// What parc-run --load-weights reads before any tensor is copied
// (runtime/lib/Parameters.cpp): readSafetensorsIndex over the whole file,
// then, for each entry, its byte range checked against the file as the
// loader uses it. Refusals are std::runtime_error; anything else escaping
// is a finding.

#include "parc/runtime/Safetensors.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

using namespace parc::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  try {
    for (const auto &[name, entry] :
         readSafetensorsIndex("weights.safetensors", bytes)) {
      // The loader copies [begin, end) of the file: it must lie inside it
      // and be the shape's size.
      int64_t numel = 1;
      for (int64_t d : entry.shape)
        numel *= d;
      if (entry.end > size || entry.begin > entry.end ||
          entry.end - entry.begin !=
              uint64_t(numel) * safetensorsDtypeBytes(entry.dtype))
        std::abort();
    }
  } catch (const std::runtime_error &) {
  }
  return 0;
}
