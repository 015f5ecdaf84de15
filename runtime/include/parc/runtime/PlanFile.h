//===- PlanFile.h - reading and describing plan.bin -------------*- C++ -*-===//
//
// The runtime's entry to a plan: read the file, verify it before any field is
// touched, and print what it holds. FlatBuffers only, no LibTorch, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_RUNTIME_PLANFILE_H
#define PARC_RUNTIME_PLANFILE_H

#include "PlanFormat.h"

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace parc::runtime {

/// A verified plan.bin held in memory; the tables point into `bytes`.
class PlanFile {
public:
  /// Reads and verifies `path`; on failure returns null and sets `error` to a
  /// message that names the file.
  static std::unique_ptr<PlanFile> load(const std::string &path,
                                        std::string &error);

  const plan::Plan &plan() const { return *root; }
  const std::string &path() const { return filePath; }
  /// The raw bytes, for checksums that tie a checkpoint to its plan.
  const std::vector<uint8_t> &data() const { return bytes; }

private:
  std::string filePath;
  std::vector<uint8_t> bytes;
  const plan::Plan *root = nullptr;
};

/// Prints the plan as `parc-run --describe` shows it: parameters, units,
/// prediction, and every forward op with its attributes.
void describePlan(const plan::Plan &plan, std::ostream &os);

/// FNV-1a 64 of `data`: stable across runs and machines, used for seeds
/// derived from parameter paths and for checkpoint checksums.
uint64_t fnv1a(const void *data, size_t size, uint64_t seed = 0);
inline uint64_t fnv1a(const std::string &s, uint64_t seed = 0) {
  return fnv1a(s.data(), s.size(), seed);
}

} // namespace parc::runtime

#endif // PARC_RUNTIME_PLANFILE_H
