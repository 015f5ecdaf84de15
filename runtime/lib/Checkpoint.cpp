//===- Checkpoint.cpp - parc-run's checkpoint format ----------------------===//

#include "parc/runtime/Checkpoint.h"

#include "parc/runtime/PlanFile.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <utility>

using namespace parc::runtime;

std::string parc::runtime::shardName(int rank) {
  return "rank-" + std::to_string(rank) + ".bin";
}

std::string parc::runtime::hex(uint64_t value) {
  std::ostringstream os;
  os << std::hex << std::setw(16) << std::setfill('0') << value;
  return os.str();
}

namespace {

/// The manifest parc-run writes (saveCheckpoint), read strictly: every
/// refusal names the file and the key.
class Manifest {
public:
  Manifest(std::string path, std::string text)
      : path(std::move(path)), text(std::move(text)) {
    size_t first = this->text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos || this->text[first] != '{' ||
        this->text.find("\"shards\": [") == std::string::npos)
      fail("not a parc-run checkpoint manifest (a JSON object with format, "
           "plan, world, step and shards)");
  }

  [[noreturn]] void fail(const std::string &message) const {
    throw std::runtime_error(path + ": " + message);
  }

  /// The string or number after `"key": ` in [from, to): the whole manifest,
  /// or one shard entry (entry()), so that a key an entry lacks is not read
  /// from the entry after it.
  std::string raw(const std::string &key, size_t from = 0,
                  size_t to = std::string::npos, int rank = -1) const {
    size_t at = text.find("\"" + key + "\": ", from);
    if (at == std::string::npos || at >= to)
      fail(rank < 0 ? "missing key '" + key + "'"
                    : "rank " + std::to_string(rank) + "'s entry has no key '" +
                          key + "'");
    at += key.size() + 4;
    if (at < text.size() && text[at] == '"') {
      size_t end = text.find('"', at + 1);
      if (end == std::string::npos)
        fail("unterminated string at key '" + key + "'");
      return text.substr(at + 1, end - at - 1);
    }
    size_t end = text.find_first_of(",}]", at);
    return text.substr(at, end == std::string::npos ? end : end - at);
  }

  /// An integer in [lo, hi] at `key`.
  int64_t integer(const std::string &key, int64_t lo, int64_t hi,
                  size_t from = 0) const {
    std::string value = raw(key, from);
    errno = 0;
    char *end = nullptr;
    long long n = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end || errno == ERANGE)
      fail("key '" + key + "' is not an integer: '" + printable(value) + "'");
    if (n < lo || n > hi)
      fail("key '" + key + "' is " + value + ", outside [" +
           std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return n;
  }

  /// Where the shard entry of `rank` starts and ends (its closing brace).
  std::pair<size_t, size_t> entry(int rank) const {
    size_t at = text.find("{\"rank\": " + std::to_string(rank) + ",");
    if (at == std::string::npos)
      fail("no shard for rank " + std::to_string(rank));
    return {at, text.find('}', at)};
  }

private:
  std::string path, text;
};

} // namespace

ManifestEntry parc::runtime::readManifest(const std::string &path,
                                          const std::string &text,
                                          const ResumeTarget &target) {
  Manifest manifest(path, text);
  int64_t format = manifest.integer("format", 0, INT32_MAX);
  if (format != kCheckpointVersion)
    manifest.fail("checkpoint format " + std::to_string(format) +
                  ", this parc-run reads format " +
                  std::to_string(kCheckpointVersion));
  if (manifest.raw("plan") != target.planSum)
    manifest.fail("checkpoint was written for another plan (checksum " +
                  printable(manifest.raw("plan")) + ", " + target.planPath +
                  " is " + target.planSum + ")");
  int64_t world = manifest.integer("world", 1, INT32_MAX);
  if (world != target.world)
    manifest.fail("checkpoint has " + std::to_string(world) +
                  " ranks, this run has " + std::to_string(target.world));
  ManifestEntry entry;
  entry.step = manifest.integer("step", 1, INT64_MAX);
  if (entry.step >= target.steps)
    manifest.fail("checkpoint is at step " + std::to_string(entry.step) +
                  ", this run ends at --steps " + std::to_string(target.steps) +
                  ": nothing to resume");
  auto [begin, end] = manifest.entry(target.rank);
  entry.file = manifest.raw("file", begin, end, target.rank);
  if (entry.file != shardName(target.rank))
    manifest.fail("rank " + std::to_string(target.rank) + "'s shard is '" +
                  printable(entry.file) + "', expected '" +
                  shardName(target.rank) + "'");
  entry.bytes = manifest.raw("bytes", begin, end, target.rank);
  entry.checksum = manifest.raw("fnv1a", begin, end, target.rank);
  return entry;
}

void ShardReader::take(void *out, size_t size) {
  if (size > bytes.size() - at)
    throw std::runtime_error(file + ": truncated");
  std::memcpy(out, bytes.data() + at, size);
  at += size;
}

std::string ShardReader::takeString() {
  uint32_t length;
  take(&length, sizeof length);
  if (length > bytes.size() - at)
    throw std::runtime_error(file + ": truncated");
  std::string text(bytes.data() + at, length);
  at += length;
  return text;
}

uint32_t parc::runtime::readShardHeader(ShardReader &reader,
                                        const std::vector<char> &bytes,
                                        const ManifestEntry &entry,
                                        const ResumeTarget &target) {
  const std::string &file = reader.getFile();
  if (std::to_string(bytes.size()) != entry.bytes)
    throw std::runtime_error(file + ": " + std::to_string(bytes.size()) +
                             " bytes, the manifest says " +
                             printable(entry.bytes) + " (truncated?)");
  if (hex(fnv1a(bytes.data(), bytes.size())) != entry.checksum)
    throw std::runtime_error(file +
                             ": checksum does not match the manifest "
                             "(the shard was altered or belongs to another "
                             "checkpoint)");
  char magic[sizeof kShardMagic];
  uint32_t version, shardRank, count;
  uint64_t shardStep, shardPlan;
  reader.take(magic, sizeof magic);
  reader.take(&version, sizeof version);
  if (std::memcmp(magic, kShardMagic, sizeof magic) != 0 ||
      version != kCheckpointVersion)
    throw std::runtime_error(file + ": not a parc-run shard of format " +
                             std::to_string(kCheckpointVersion));
  reader.take(&shardStep, sizeof shardStep);
  reader.take(&shardRank, sizeof shardRank);
  reader.take(&shardPlan, sizeof shardPlan);
  if (int64_t(shardRank) != target.rank)
    throw std::runtime_error(file + ": written by rank " +
                             std::to_string(shardRank) + ", read by rank " +
                             std::to_string(target.rank) +
                             " (a shard in another rank's place)");
  if (hex(shardPlan) != target.planSum || int64_t(shardStep) != entry.step)
    throw std::runtime_error(
        file + ": written at step " + std::to_string(shardStep) + " of plan " +
        hex(shardPlan) + ", the manifest says step " +
        std::to_string(entry.step) + " of plan " + target.planSum);
  reader.take(&count, sizeof count);
  return count;
}
