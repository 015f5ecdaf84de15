//===- CachingAllocatorTest.cpp - the CUDA caching allocator's rules
//-------===//
//
// Each case is a sequence whose outcome CUDACachingAllocator.cpp's rules
// decide: rounding, segment sizes, reuse and splitting of cached blocks,
// the release of whole free segments before out of memory, streams, and
// expandable segments growing at their end.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/CachingAllocator.h"

#include <gtest/gtest.h>

using namespace mlir::parc;

namespace {

constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kPlenty = int64_t(1) << 40;

int64_t allocate(CachingAllocatorModel &model, int64_t bytes,
                 unsigned stream = 0) {
  std::optional<int64_t> address = model.allocate(bytes, stream);
  EXPECT_TRUE(address.has_value()) << bytes << " bytes";
  return address.value_or(-1);
}

TEST(CachingAllocatorTest, RoundsRequestsAndSizesSegments) {
  EXPECT_EQ(CachingAllocatorModel::roundSize(1), 512);
  EXPECT_EQ(CachingAllocatorModel::roundSize(512), 512);
  EXPECT_EQ(CachingAllocatorModel::roundSize(513), 1024);
  // Up to 1 MiB: a 2 MiB small-pool segment; below 10 MiB: 20 MiB; larger
  // requests reserve their own size rounded up to 2 MiB.
  EXPECT_EQ(CachingAllocatorModel::segmentSize(kMiB), 2 * kMiB);
  EXPECT_EQ(CachingAllocatorModel::segmentSize(5 * kMiB), 20 * kMiB);
  EXPECT_EQ(CachingAllocatorModel::segmentSize(11 * kMiB), 12 * kMiB);

  CachingAllocatorModel model(AllocatorKind::Caching, kPlenty);
  allocate(model, 5 * kMiB);
  EXPECT_EQ(model.allocatedBytes(), 5 * kMiB);
  EXPECT_EQ(model.reservedBytes(), 20 * kMiB);
  // The rest of that segment serves the next request of its pool.
  allocate(model, 5 * kMiB);
  EXPECT_EQ(model.reservedBytes(), 20 * kMiB);
}

TEST(CachingAllocatorTest, SmallRequestsShareTwoMiBSegments) {
  CachingAllocatorModel model(AllocatorKind::Caching, kPlenty);
  for (int i = 0; i < 1000; ++i)
    allocate(model, 1000);
  EXPECT_EQ(model.allocatedBytes(), 1000 * 1024);
  EXPECT_EQ(model.reservedBytes(), 2 * kMiB);
}

TEST(CachingAllocatorTest, AFreedBlockServesSmallerRequestsOnly) {
  CachingAllocatorModel model(AllocatorKind::Caching, kPlenty);
  int64_t a = allocate(model, 100 * kMiB);
  allocate(model, 100 * kMiB);
  model.free(a);
  // 60 and 40 MiB fit in A's cached block, split.
  int64_t c = allocate(model, 60 * kMiB);
  allocate(model, 40 * kMiB);
  EXPECT_EQ(model.reservedBytes(), 200 * kMiB);
  // 150 MiB fits in no cached block: a new segment, though 60 MiB are free.
  model.free(c);
  allocate(model, 150 * kMiB);
  EXPECT_EQ(model.allocatedBytes(), 290 * kMiB);
  EXPECT_EQ(model.reservedBytes(), 350 * kMiB);
}

TEST(CachingAllocatorTest, FreedNeighboursMergeWithinASegment) {
  CachingAllocatorModel model(AllocatorKind::Caching, kPlenty);
  int64_t whole = allocate(model, 100 * kMiB);
  model.free(whole);
  int64_t a = allocate(model, 50 * kMiB);
  int64_t b = allocate(model, 50 * kMiB);
  model.free(a);
  model.free(b);
  // The two halves are one free block again.
  allocate(model, 100 * kMiB);
  EXPECT_EQ(model.reservedBytes(), 100 * kMiB);
}

TEST(CachingAllocatorTest, ReleasesWholeFreeSegmentsBeforeOutOfMemory) {
  CachingAllocatorModel model(AllocatorKind::Caching, 300 * kMiB);
  int64_t a = allocate(model, 200 * kMiB);
  model.free(a);
  // 200 cached + 250 new is over the capacity: A's segment is released.
  allocate(model, 250 * kMiB);
  EXPECT_EQ(model.reservedBytes(), 250 * kMiB);
  // What is in use is never released: 250 + 100 does not fit.
  EXPECT_FALSE(model.allocate(100 * kMiB).has_value());
}

TEST(CachingAllocatorTest, ASplitSegmentIsNotReleased) {
  CachingAllocatorModel model(AllocatorKind::Caching, 300 * kMiB);
  int64_t a = allocate(model, 200 * kMiB);
  model.free(a);
  // 10 MiB carved out of A's 200 pins the whole segment.
  allocate(model, 10 * kMiB);
  EXPECT_FALSE(model.allocate(200 * kMiB).has_value());
  EXPECT_EQ(model.allocatedBytes(), 10 * kMiB);
}

TEST(CachingAllocatorTest, StreamsHaveTheirOwnPools) {
  CachingAllocatorModel model(AllocatorKind::Caching, kPlenty);
  int64_t gathered = allocate(model, 100 * kMiB, /*stream=*/1);
  model.free(gathered);
  allocate(model, 100 * kMiB, /*stream=*/0);
  EXPECT_EQ(model.reservedBytes(), 200 * kMiB);
  allocate(model, 100 * kMiB, /*stream=*/1);
  EXPECT_EQ(model.reservedBytes(), 200 * kMiB);
}

TEST(CachingAllocatorTest, ExpandableSegmentsGrowFromAFreeTail) {
  // A request larger than the free block at the end of the segment maps
  // only what is missing, in 20 MiB pages.
  CachingAllocatorModel expandable(AllocatorKind::ExpandableSegments, kPlenty);
  allocate(expandable, 100 * kMiB);
  int64_t b = allocate(expandable, 100 * kMiB);
  expandable.free(b);
  allocate(expandable, 150 * kMiB);
  EXPECT_EQ(expandable.allocatedBytes(), 250 * kMiB);
  EXPECT_EQ(expandable.reservedBytes(), 260 * kMiB);

  // The same sequence with fixed segments reserves all three.
  CachingAllocatorModel caching(AllocatorKind::Caching, kPlenty);
  allocate(caching, 100 * kMiB);
  b = allocate(caching, 100 * kMiB);
  caching.free(b);
  allocate(caching, 150 * kMiB);
  EXPECT_EQ(caching.reservedBytes(), 350 * kMiB);
}

TEST(CachingAllocatorTest, ExpandableSegmentsUnmapFreePagesBeforeOutOfMemory) {
  CachingAllocatorModel model(AllocatorKind::ExpandableSegments, 300 * kMiB);
  int64_t a = allocate(model, 200 * kMiB);
  int64_t b = allocate(model, 40 * kMiB);
  model.free(a);
  // A hole of 200 MiB before B: 250 fits in no mapped block, and mapping
  // 260 more is over the capacity, so the hole's pages are unmapped and
  // the request maps them again, followed by what it still needs.
  allocate(model, 250 * kMiB);
  EXPECT_EQ(model.allocatedBytes(), 290 * kMiB);
  EXPECT_EQ(model.reservedBytes(), 300 * kMiB);
  model.free(b);
}

TEST(CachingAllocatorTest, NamesRoundTrip) {
  for (AllocatorKind kind : {AllocatorKind::Direct, AllocatorKind::Caching,
                             AllocatorKind::ExpandableSegments})
    EXPECT_EQ(parseAllocatorName(getAllocatorName(kind)), kind);
  EXPECT_FALSE(parseAllocatorName("cuda").has_value());
}

} // namespace
