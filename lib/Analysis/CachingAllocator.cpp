//===- CachingAllocator.cpp - PyTorch's CUDA caching allocator ------------===//
//
// The rules are those of c10/cuda/CUDACachingAllocator.cpp with its default
// configuration (no max_split_size, no garbage-collection threshold, no
// rounding to powers of two): requests round up to 512 bytes; those up to
// 1 MiB come from 2 MiB segments of the small pool, the rest from the large
// pool, where a request under 10 MiB reserves a 20 MiB segment and a larger
// one a segment of its own size rounded up to 2 MiB. A request takes the
// smallest cached block of its stream and pool that holds it, split when
// what is left is worth keeping (512 bytes in the small pool, more than
// 1 MiB in the large), and a freed block merges with free neighbours of its
// segment. When a segment cannot be reserved, every segment that holds
// nothing is released and the request tried once more. With expandable
// segments each stream and pool has one segment that maps pages (2 MiB
// small, 20 MiB large) at its end as requests need them, and a release
// unmaps the whole pages of free blocks.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/CachingAllocator.h"

#include <cassert>

using namespace mlir::parc;

const char *mlir::parc::getAllocatorName(AllocatorKind kind) {
  switch (kind) {
  case AllocatorKind::Direct:
    return "direct";
  case AllocatorKind::Caching:
    return "caching";
  case AllocatorKind::ExpandableSegments:
    return "expandable-segments";
  }
  return "direct";
}

std::optional<AllocatorKind>
mlir::parc::parseAllocatorName(const std::string &name) {
  for (AllocatorKind kind : {AllocatorKind::Direct, AllocatorKind::Caching,
                             AllocatorKind::ExpandableSegments})
    if (name == getAllocatorName(kind))
      return kind;
  return std::nullopt;
}

static int64_t roundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

CachingAllocatorModel::CachingAllocatorModel(AllocatorKind kind,
                                             int64_t capacity)
    : kind(kind), capacity(capacity) {
  assert(kind != AllocatorKind::Direct &&
         "direct allocation reserves what it allocates: nothing to model");
}

int64_t CachingAllocatorModel::roundSize(int64_t bytes) {
  return bytes < kMinBlockSize ? kMinBlockSize : roundUp(bytes, kMinBlockSize);
}

int64_t CachingAllocatorModel::segmentSize(int64_t size) {
  if (size <= kSmallSize)
    return kSmallBuffer;
  if (size < kMinLargeAlloc)
    return kLargeBuffer;
  return roundUp(size, kRoundLarge);
}

std::set<std::pair<int64_t, int64_t>> &
CachingAllocatorModel::freeSet(int pool) {
  if (size_t(pool) >= free_.size())
    free_.resize(pool + 1);
  return free_[pool];
}

void CachingAllocatorModel::insertFree(BlockMap::iterator block) {
  freeSet(segments[block->second.segment].pool)
      .insert({block->second.size, block->first});
}

void CachingAllocatorModel::eraseFree(BlockMap::iterator block) {
  freeSet(segments[block->second.segment].pool)
      .erase({block->second.size, block->first});
}

CachingAllocatorModel::BlockMap::iterator
CachingAllocatorModel::bestFit(int pool, int64_t size) {
  auto &set = freeSet(pool);
  auto it = set.lower_bound({size, INT64_MIN});
  if (it == set.end())
    return blocks.end();
  auto block = blocks.find(it->second);
  set.erase(it);
  return block;
}

CachingAllocatorModel::BlockMap::iterator
CachingAllocatorModel::newSegment(int pool, int64_t size, bool expandable) {
  Segment &segment = segments.emplace_back();
  segment.base = nextBase;
  segment.size = size;
  segment.pool = pool;
  segment.expandable = expandable;
  nextBase += roundUp(size, kLargeBuffer) + kLargeBuffer;
  // An expandable segment is address space until its pages are mapped.
  if (!expandable)
    reserved += size;
  Block block;
  block.size = size;
  block.segment = int(segments.size() - 1);
  block.mapped = !expandable;
  return blocks.emplace(segment.base, block).first;
}

void CachingAllocatorModel::join(BlockMap::iterator into,
                                 BlockMap::iterator from) {
  // Out of the free set before the key changes (erasing one that is not in
  // it, being taken or remapped just now, is nothing).
  for (BlockMap::iterator block : {into, from})
    if (block->second.mapped)
      eraseFree(block);
  into->second.size += from->second.size;
  blocks.erase(from);
}

CachingAllocatorModel::BlockMap::iterator
CachingAllocatorModel::merge(BlockMap::iterator block) {
  // Neighbours merge when both are free and mapped alike (an unmapped range
  // is address space, not memory).
  auto joinable = [&](BlockMap::iterator other) {
    return other != blocks.end() &&
           other->second.segment == block->second.segment &&
           !other->second.allocated &&
           other->second.mapped == block->second.mapped;
  };
  if (block != blocks.begin()) {
    auto prev = std::prev(block);
    if (joinable(prev)) {
      join(prev, block);
      block = prev;
    }
  }
  if (auto next = std::next(block); joinable(next))
    join(block, next);
  return block;
}

void CachingAllocatorModel::split(BlockMap::iterator block, int64_t size,
                                  bool exact) {
  int64_t remaining = block->second.size - size;
  if (exact ? remaining < kMinBlockSize : remaining <= kSmallSize)
    return;
  Block rest;
  rest.size = remaining;
  rest.segment = block->second.segment;
  block->second.size = size;
  insertFree(blocks.emplace(block->first + size, rest).first);
}

CachingAllocatorModel::BlockMap::iterator
CachingAllocatorModel::growExpandable(int pool, int64_t size) {
  // The pool's segments in the order they were made; when none has the
  // address space, a new one (CUDACachingAllocator reserves address space
  // for 9/8 of the device per segment).
  for (size_t index = 0; index <= segments.size(); ++index) {
    if (index == segments.size())
      newSegment(pool, roundUp(capacity + capacity / 8 + size, pageSize(pool)),
                 /*expandable=*/true);
    if (!segments[index].expandable || segments[index].pool != pool)
      continue;
    bool exhausted = false;
    auto block = mapInto(int(index), size, exhausted);
    if (block != blocks.end() || exhausted)
      return block;
  }
  return blocks.end();
}

CachingAllocatorModel::BlockMap::iterator
CachingAllocatorModel::mapInto(int index, int64_t size, bool &exhausted) {
  const Segment &segment = segments[index];
  int64_t page = pageSize(segment.pool);
  auto in = [&](BlockMap::iterator it) {
    return it != blocks.end() && it->second.segment == index;
  };
  // The lowest unmapped range (with a free block just before it) that
  // begins a run of unallocated address space long enough.
  for (auto it = blocks.lower_bound(segment.base); in(it); ++it) {
    if (it->second.mapped)
      continue;
    auto start = it;
    if (it != blocks.begin()) {
      auto prev = std::prev(it);
      if (in(prev) && !prev->second.allocated)
        start = prev;
    }
    int64_t room = 0;
    for (auto run = start; in(run) && !run->second.allocated && room < size;
         ++run)
      room += run->second.size;
    if (room < size)
      continue;
    // Map pages of each unmapped range in turn, merging as they appear.
    auto candidate = start;
    if (candidate->second.mapped)
      eraseFree(candidate);
    while (!candidate->second.mapped || candidate->second.size < size) {
      auto target = candidate->second.mapped ? std::next(candidate) : candidate;
      int64_t have = candidate->second.mapped ? candidate->second.size : 0;
      if (target->second.mapped) {
        // A free mapped block after an unmapped range: join it.
        join(candidate, target);
        continue;
      }
      int64_t bytes = std::min(roundUp(size - have, page), target->second.size);
      if (!canReserve(bytes)) {
        if (candidate->second.mapped)
          insertFree(candidate);
        exhausted = true;
        return blocks.end();
      }
      reserved += bytes;
      if (bytes < target->second.size) {
        Block rest = target->second;
        rest.size -= bytes;
        blocks.emplace(target->first + bytes, rest);
        target->second.size = bytes;
      }
      target->second.mapped = true;
      if (target != candidate)
        join(candidate, target);
    }
    return candidate;
  }
  return blocks.end();
}

void CachingAllocatorModel::releaseCached() {
  for (size_t index = 0; index < segments.size(); ++index) {
    Segment &segment = segments[index];
    if (segment.released)
      continue;
    auto first = blocks.find(segment.base);
    if (!segment.expandable) {
      if (first == blocks.end() || first->second.allocated ||
          first->second.size != segment.size)
        continue;
      eraseFree(first);
      blocks.erase(first);
      reserved -= segment.size;
      segment.released = true;
      continue;
    }
    int64_t page = pageSize(segment.pool);
    for (auto it = first;
         it != blocks.end() && it->second.segment == int(index); ++it) {
      if (it->second.allocated || !it->second.mapped)
        continue;
      int64_t begin = it->first, end = it->first + it->second.size;
      int64_t lo = segment.base + roundUp(begin - segment.base, page);
      int64_t hi = segment.base + (end - segment.base) / page * page;
      if (hi <= lo)
        continue;
      eraseFree(it);
      reserved -= hi - lo;
      Block unmapped = it->second;
      unmapped.mapped = false;
      unmapped.size = hi - lo;
      if (end > hi) {
        Block right = it->second;
        right.size = end - hi;
        insertFree(blocks.emplace(hi, right).first);
      }
      auto middle = it;
      if (lo > begin) {
        it->second.size = lo - begin;
        insertFree(it);
        middle = blocks.emplace(lo, unmapped).first;
      } else {
        it->second = unmapped;
      }
      it = merge(middle);
    }
  }
}

std::optional<int64_t> CachingAllocatorModel::allocate(int64_t bytes,
                                                       unsigned stream) {
  if (bytes <= 0)
    return -1;
  int64_t size = roundSize(bytes);
  bool small = size <= kSmallSize;
  int pool = poolOf(stream, small);
  auto block = bestFit(pool, size);
  if (block == blocks.end()) {
    auto reserve = [&]() {
      if (kind == AllocatorKind::ExpandableSegments)
        return growExpandable(pool, size);
      int64_t segment = segmentSize(size);
      return canReserve(segment) ? newSegment(pool, segment) : blocks.end();
    };
    block = reserve();
    if (block == blocks.end()) {
      releaseCached();
      block = reserve();
    }
    if (block == blocks.end())
      return std::nullopt;
  }
  split(block, size, small || kind == AllocatorKind::ExpandableSegments);
  block->second.allocated = true;
  allocated += block->second.size;
  return block->first;
}

void CachingAllocatorModel::free(int64_t address) {
  if (address < 0)
    return;
  auto block = blocks.find(address);
  assert(block != blocks.end() && block->second.allocated &&
         "freeing a block that is not allocated");
  block->second.allocated = false;
  allocated -= block->second.size;
  insertFree(merge(block));
}
