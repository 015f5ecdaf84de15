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

/// Where one rank sits on the plan's axes (Plan.parallelism): torchtitan's
/// mesh ["pp", "dp", "fsdp", "tp"], tp fastest, so
/// rank = ((pp_i * dp + dp_i) * fsdp + fsdp_i) * tp + tp_i. A plan without a
/// Parallelism table (FSDP only) is its fsdp grid.
struct RankLayout {
  int world = 1;
  int pp = 1, dp = 1, fsdp = 1, tp = 1;
  int ppIndex = 0, dpIndex = 0, fsdpIndex = 0, tpIndex = 0;
  bool sequenceParallel = false, lossParallel = false;
  /// "" without a pipeline, else "gpipe" / "1f1b".
  std::string schedule;
  int64_t microbatches = 1;
  /// Model chunks per stage (interleaved 1F1B): virtual stage c * pp + s.
  int64_t chunks = 1;
  /// Per stage, its steps in order ("F3", "B0", "F1.c1").
  std::vector<std::vector<std::string>> stageSteps;

  /// The world rank at these coordinates.
  int rankAt(int ppI, int dpI, int fsdpI, int tpI) const {
    return ((ppI * dp + dpI) * fsdp + fsdpI) * tp + tpI;
  }
  /// Sets the *Index fields from a world rank.
  void place(int rank);
  bool isFirstStage() const { return ppIndex == 0; }
  bool isLastStage() const { return ppIndex == pp - 1; }
  /// Ranks that train on different data: their losses and gradients are
  /// averaged.
  int dataParallel() const { return dp * fsdp; }
  int dataIndex() const { return dpIndex * fsdp + fsdpIndex; }
};

/// Reads the plan's rank layout. Returns false and sets `error` for what
/// this runtime does not execute (dp replication, an unknown schedule) or a
/// layout that does not add up.
bool readRankLayout(const plan::Plan &plan, RankLayout &layout,
                    std::string &error);

/// Prints the plan as `parc-run --describe` shows it: parameters, units,
/// prediction, and every forward op with its attributes.
void describePlan(const plan::Plan &plan, std::ostream &os);

/// A FlatBuffers string field, "" when absent.
inline const char *str(const flatbuffers::String *s) {
  return s ? s->c_str() : "";
}

/// FNV-1a 64 of `data`: stable across runs and machines, used for seeds
/// derived from parameter paths and for checkpoint checksums.
uint64_t fnv1a(const void *data, size_t size, uint64_t seed = 0);
inline uint64_t fnv1a(const std::string &s, uint64_t seed = 0) {
  return fnv1a(s.data(), s.size(), seed);
}

/// Multiplies `world` by `size` when both stay within the 2^17 ranks a plan
/// may have; otherwise false, with `error` naming `what`. Every product of
/// sizes read from plan.bin goes through it, so none can wrap.
bool growWorld(int64_t &world, int64_t size, const std::string &what,
               std::string &error);

/// `text` with control characters (escape sequences among them) written as
/// \xNN, so that names and values read from a file (plan.bin, a manifest)
/// cannot drive the user's terminal when an error message quotes them.
/// `keepLineBreaks` leaves newlines and tabs, for multi-line messages.
std::string printable(const std::string &text, bool keepLineBreaks = false);

} // namespace parc::runtime

#endif // PARC_RUNTIME_PLANFILE_H
