//===- CachingAllocator.h - PyTorch's CUDA caching allocator -----*- C++
//-*-===//
//
// What a GPU run measures is not what its tensors hold: PyTorch's CUDA
// caching allocator (c10/cuda/CUDACachingAllocator.cpp) rounds each request,
// carves it out of a segment it reserved earlier or reserves a new one, and
// keeps freed blocks cached for the next request. A block freed between two
// live ones is only reused by a request it can hold, so a step reserves more
// than it ever allocates at once, and that reserved memory is what runs out.
// This is that algorithm, run on sizes alone: the memory replay feeds it the
// program's allocations and frees and reads back the reserved bytes.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_CACHINGALLOCATOR_H
#define PARC_ANALYSIS_CACHINGALLOCATOR_H

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mlir::parc {

/// How the device's memory is handed out.
enum class AllocatorKind {
  /// Every tensor is its own allocation, freed when it dies (LibTorch's CPU
  /// allocator, which parc-run measures through): reserved is allocated.
  Direct,
  /// The CUDA caching allocator's default: fixed segments per request size.
  Caching,
  /// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: one segment per
  /// stream and pool that grows by mapping pages at its end.
  ExpandableSegments,
};

/// torch.optim.AdamW's implementations, by the temporaries a step makes:
/// foreach (PyTorch's default on CUDA) one new list, the square roots of
/// the second moments of every parameter at once; for-loop one such tensor
/// per parameter in turn; fused none.
enum class OptimizerImpl { Foreach, ForLoop, Fused };

/// An allocator chosen over the hardware profile's.
enum class AllocatorChoice { Profile, Direct, Caching, ExpandableSegments };
inline std::optional<AllocatorKind> getAllocatorKind(AllocatorChoice choice) {
  switch (choice) {
  case AllocatorChoice::Profile:
    return std::nullopt;
  case AllocatorChoice::Direct:
    return AllocatorKind::Direct;
  case AllocatorChoice::Caching:
    return AllocatorKind::Caching;
  case AllocatorChoice::ExpandableSegments:
    return AllocatorKind::ExpandableSegments;
  }
  return std::nullopt;
}

/// "direct", "caching", "expandable-segments".
const char *getAllocatorName(AllocatorKind kind);
std::optional<AllocatorKind> parseAllocatorName(const std::string &name);

/// The allocator's state over a run of allocations and frees. Sizes are
/// bytes; a block is named by the address it was given.
class CachingAllocatorModel {
public:
  /// The constants of CUDACachingAllocator.cpp.
  static constexpr int64_t kMinBlockSize = 512;
  static constexpr int64_t kSmallSize = 1 << 20;    // largest small request
  static constexpr int64_t kSmallBuffer = 2 << 20;  // small-pool segment
  static constexpr int64_t kLargeBuffer = 20 << 20; // for requests < 10 MiB
  static constexpr int64_t kMinLargeAlloc = 10 << 20;
  static constexpr int64_t kRoundLarge = 2 << 20;

  /// `kind`: Caching or ExpandableSegments (direct allocation reserves what
  /// it allocates, with nothing to model). `capacity`: the bytes the
  /// allocator may reserve at most (the device's memory less what lives
  /// outside it). Requests beyond it first release every cached segment
  /// that holds nothing, as the allocator does before reporting out of
  /// memory.
  CachingAllocatorModel(AllocatorKind kind, int64_t capacity);

  /// The block's address, or std::nullopt when the request cannot be met
  /// (out of memory). Zero bytes allocate nothing and return -1.
  std::optional<int64_t> allocate(int64_t bytes, unsigned stream = 0);
  /// Frees a block `allocate` returned (-1: nothing).
  void free(int64_t address);

  int64_t allocatedBytes() const { return allocated; }
  int64_t reservedBytes() const { return reserved; }

  /// The size a request of `bytes` is rounded to.
  static int64_t roundSize(int64_t bytes);
  /// The segment a request of rounded `size` reserves when nothing cached
  /// can hold it.
  static int64_t segmentSize(int64_t size);

private:
  struct Block {
    int64_t size = 0;
    int segment = 0;
    bool allocated = false;
    bool mapped = true;
  };
  struct Segment {
    int64_t base = 0, size = 0;
    int pool = 0;
    bool expandable = false;
    bool released = false;
  };
  using BlockMap = std::map<int64_t, Block>;

  static int poolOf(unsigned stream, bool small) {
    return int(stream) * 2 + (small ? 1 : 0);
  }
  std::set<std::pair<int64_t, int64_t>> &freeSet(int pool);
  int64_t pageSize(int pool) const {
    return pool % 2 ? kSmallBuffer : kLargeBuffer;
  }

  BlockMap::iterator bestFit(int pool, int64_t size);
  /// A segment of `size`: reserved at once, or, `expandable`, address
  /// space whose pages are mapped as requests need them.
  BlockMap::iterator newSegment(int pool, int64_t size,
                                bool expandable = false);
  /// Merges `from`, the free block after `into`, into it; the result is
  /// out of the free set.
  void join(BlockMap::iterator into, BlockMap::iterator from);
  BlockMap::iterator growExpandable(int pool, int64_t size);
  /// Maps pages of expandable segment `index` for `size` bytes; sets
  /// `exhausted` when the device has no more to map.
  BlockMap::iterator mapInto(int index, int64_t size, bool &exhausted);
  /// `exact`: keep any remainder of 512 bytes or more (the small pool, and
  /// every pool with expandable segments).
  void split(BlockMap::iterator block, int64_t size, bool exact);
  BlockMap::iterator merge(BlockMap::iterator block);
  void insertFree(BlockMap::iterator block);
  void eraseFree(BlockMap::iterator block);
  void releaseCached();
  bool canReserve(int64_t bytes) const { return reserved + bytes <= capacity; }

  AllocatorKind kind;
  int64_t capacity;
  int64_t allocated = 0, reserved = 0;
  /// Virtual addresses: segments are laid out one after another.
  int64_t nextBase = 0;
  BlockMap blocks;
  std::vector<Segment> segments;
  /// Per pool, the cached blocks ordered as get_free_block searches them:
  /// by size, then address.
  std::vector<std::set<std::pair<int64_t, int64_t>>> free_;
};

} // namespace mlir::parc

#endif // PARC_ANALYSIS_CACHINGALLOCATOR_H
