//===- Checkpoint.h - parc-run's checkpoint format ---------------*- C++
//-*-===//
//
// A checkpoint is a directory: one shard per rank (rank-N.bin: a header with
// the format, step, rank and plan checksum, then each parameter the rank
// holds with its AdamW moments) and manifest.json, which names every shard
// with its size and checksum. This part reads and checks the format without
// LibTorch (Trainer.cpp fills the tensors), so the fuzz build runs the same
// code parc-run does on a hostile manifest or shard. Every refusal throws
// std::runtime_error naming the file and, for the manifest, the key.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_RUNTIME_CHECKPOINT_H
#define PARC_RUNTIME_CHECKPOINT_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace parc::runtime {

constexpr char kShardMagic[8] = {'P', 'A', 'R', 'C', 'C', 'K', 'P', 'T'};
/// 2: a shard records the rank that wrote it and the plan's checksum.
constexpr uint32_t kCheckpointVersion = 2;

/// "rank-N.bin".
std::string shardName(int rank);
/// 16 lower-case hex digits, as manifests write checksums.
std::string hex(uint64_t value);

/// The run a checkpoint is resumed into.
struct ResumeTarget {
  /// The plan's checksum (fnv1a of plan.bin, hex) and its file, for messages.
  std::string planSum, planPath;
  int64_t world = 1;
  int rank = 0;
  /// The run's --steps: a checkpoint at or after it has nothing to resume.
  int64_t steps = 1;
};

/// This rank's entry of a manifest, after every check.
struct ManifestEntry {
  int64_t step = 0;
  /// The shard's name (shardName(rank)), size and checksum as written.
  std::string file, bytes, checksum;
};

/// Reads manifest `text` (the file at `path`) for `target`: format, plan
/// checksum, world size, a step inside the run and this rank's shard entry.
ManifestEntry readManifest(const std::string &path, const std::string &text,
                           const ResumeTarget &target);

/// Reads a shard's bytes in order, refusing to read past their end.
class ShardReader {
public:
  ShardReader(std::string file, const std::vector<char> &bytes)
      : file(std::move(file)), bytes(bytes) {}
  void take(void *out, size_t size);
  /// A uint32 length, then that many bytes; the length is checked against
  /// what is left before anything is allocated.
  std::string takeString();
  const std::string &getFile() const { return file; }

private:
  std::string file;
  const std::vector<char> &bytes;
  size_t at = 0;
};

/// Checks shard `bytes` (the file `file`) against its manifest entry (size,
/// checksum) and its header against `target` (format, rank, step, plan);
/// returns the number of parameters it holds, the reader positioned at the
/// first.
uint32_t readShardHeader(ShardReader &reader, const std::vector<char> &bytes,
                         const ManifestEntry &entry,
                         const ResumeTarget &target);

} // namespace parc::runtime

#endif // PARC_RUNTIME_CHECKPOINT_H
