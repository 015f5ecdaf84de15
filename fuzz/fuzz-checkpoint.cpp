//===- fuzz-checkpoint.cpp - parc-run's checkpoint manifest and shards ----===//
//
// What parc-run --resume does with a checkpoint directory before any tensor
// is written (runtime/lib/Trainer.cpp loadCheckpoint): readManifest on
// manifest.json for each rank of a two-rank run, then, for an accepted
// entry, readShardHeader and the per-parameter records (path, element
// count) of the shard. The input is the manifest, a NUL byte, then the
// shard. The plan checksum the run expects is fixed
// (kFuzzPlanSum); fuzz/make-corpus.py writes seeds that pass every check.
// Refusals are std::runtime_error; anything else escaping is a finding.

#include "parc/runtime/Checkpoint.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

using namespace parc::runtime;

namespace {
constexpr const char *kFuzzPlanSum = "00000000c0ffee00";
constexpr uint32_t kMaxParams = 64;
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *begin = reinterpret_cast<const char *>(data);
  const char *split = static_cast<const char *>(std::memchr(begin, 0, size));
  std::string manifest(begin, split ? split : begin + size);
  std::vector<char> shard;
  if (split)
    shard.assign(split + 1, begin + size);
  for (int rank = 0; rank < 2; ++rank) {
    ResumeTarget target;
    target.planSum = kFuzzPlanSum;
    target.planPath = "plan.bin";
    target.world = 2;
    target.rank = rank;
    target.steps = 10;
    try {
      ManifestEntry entry = readManifest("manifest.json", manifest, target);
      ShardReader reader(entry.file, shard);
      uint32_t count = readShardHeader(reader, shard, entry, target);
      for (uint32_t i = 0; i < count && i < kMaxParams; ++i) {
        std::string path = reader.takeString();
        uint64_t numel = 0;
        reader.take(&numel, sizeof numel);
        // parc-run reads the values only for a path and size the plan has.
        if (numel <= 16) {
          float values[3 * 16];
          reader.take(values, 3 * numel * sizeof(float));
        }
      }
    } catch (const std::runtime_error &) {
    }
  }
  return 0;
}
