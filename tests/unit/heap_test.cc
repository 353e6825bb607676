// Bucket walk and runtime.MemProfile emulation on test memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <thread>

#include "base/error.h"
#include "base/side_by_side.h"
#include "heap/buckets.h"
#include "heap/packed_buckets.h"
#include "heap/pipelined_walk.h"
#include "heap/snapshot.h"
#include "proc/block_cache_reader.h"
#include "proc/memory_reader.h"

namespace goheap2pprof {
namespace {

// Lays out runtime.bucket structs in TestMemory.
class BucketArena {
 public:
  explicit BucketArena(uint64_t base) : base_(base), next_(base) {}

  // Returns the address of a new heap bucket; links are set with Link().
  uint64_t Add(uint64_t size, std::vector<uint64_t> stack, MemRecordCycle active,
               std::array<MemRecordCycle, 3> future = {}, uint64_t typ = 1) {
    uint64_t addr = next_;
    std::vector<uint64_t> words = {0, 0, typ, 0x1234, size, stack.size()};
    words.insert(words.end(), stack.begin(), stack.end());
    auto put = [&](const MemRecordCycle& c) {
      words.insert(words.end(), {c.allocs, c.frees, c.alloc_bytes, c.free_bytes});
    };
    put(active);
    for (const auto& f : future) put(f);
    for (uint64_t w : words) {
      uint8_t b[8];
      std::memcpy(b, &w, 8);
      bytes_.insert(bytes_.end(), b, b + 8);
    }
    next_ += words.size() * 8;
    return addr;
  }
  void SetAllnext(uint64_t bucket, uint64_t next) {
    std::memcpy(&bytes_[bucket - base_ + 8], &next, 8);
  }
  void MapInto(TestMemory& mem) { mem.Map(base_, bytes_); }
  // One past the last bucket added so far.
  uint64_t End() const { return next_; }

 private:
  uint64_t base_;
  uint64_t next_;
  std::vector<uint8_t> bytes_;
};

TEST(WalkBuckets, FollowsAllnextNewestFirst) {
  BucketArena arena(0x10000);
  uint64_t b1 = arena.Add(16, {0x401000, 0x402000}, {1, 0, 16, 0});
  uint64_t b2 = arena.Add(32, {0x403000}, {2, 1, 64, 32});
  arena.SetAllnext(b2, b1);
  TestMemory mem;
  arena.MapInto(mem);
  WalkResult w = WalkBuckets(mem, b2, {.max_stack_words = 32});
  ASSERT_EQ(w.buckets.size(), 2u);
  EXPECT_EQ(w.buckets[0].addr, b2);
  EXPECT_EQ(w.buckets[0].size, 32u);
  EXPECT_EQ(std::vector<uint64_t>(w.buckets[0].stack.begin(), w.buckets[0].stack.end()),
            std::vector<uint64_t>({0x403000}));
  EXPECT_EQ(w.buckets[0].active.alloc_bytes, 64u);
  EXPECT_EQ(std::vector<uint64_t>(w.buckets[1].stack.begin(), w.buckets[1].stack.end()),
            std::vector<uint64_t>({0x401000, 0x402000}));
}

TEST(WalkBuckets, EmptyListIsEmpty) {
  TestMemory mem;
  EXPECT_TRUE(WalkBuckets(mem, 0, {}).buckets.empty());
}

TEST(WalkBuckets, DetectsCycle) {
  BucketArena arena(0x10000);
  uint64_t b1 = arena.Add(16, {1}, {});
  uint64_t b2 = arena.Add(16, {2}, {});
  arena.SetAllnext(b1, b2);
  arena.SetAllnext(b2, b1);
  TestMemory mem;
  arena.MapInto(mem);
  try {
    WalkBuckets(mem, b1, {});
    FAIL() << "cycle not detected";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kMalformed);
    EXPECT_NE(std::string(e.what()).find("loops back"), std::string::npos) << e.what();
  }
}

TEST(WalkBuckets, RejectsWrongTypeHugeNstkUnmappedAndTooMany) {
  BucketArena arena(0x10000);
  uint64_t bad_type = arena.Add(16, {1}, {}, {}, /*typ=*/2);
  uint64_t deep = arena.Add(16, std::vector<uint64_t>(40, 7), {});
  uint64_t ok1 = arena.Add(16, {1}, {});
  uint64_t ok2 = arena.Add(16, {1}, {});
  arena.SetAllnext(ok2, ok1);
  TestMemory mem;
  arena.MapInto(mem);
  EXPECT_THROW(WalkBuckets(mem, bad_type, {}), Error);
  EXPECT_THROW(WalkBuckets(mem, deep, {.max_stack_words = 32}), Error);
  EXPECT_EQ(WalkBuckets(mem, deep, {.max_stack_words = 64}).buckets.size(), 1u);
  EXPECT_THROW(WalkBuckets(mem, 0xdead000, {}), Error);
  EXPECT_THROW(WalkBuckets(mem, ok2, {.max_stack_words = 32, .max_buckets = 1}), Error);
  EXPECT_EQ(WalkBuckets(mem, ok2, {.max_stack_words = 32, .max_buckets = 2}).buckets.size(), 2u);
}

TEST(WalkBuckets, BucketAtEndOfMappingIsReadExactly) {
  // A bucket whose speculative over-read would cross the end of the mapping.
  BucketArena arena(0x20000);
  uint64_t b = arena.Add(8, {0x401234}, {3, 1, 24, 8});
  TestMemory mem;
  arena.MapInto(mem);
  WalkResult w = WalkBuckets(mem, b, {});
  ASSERT_EQ(w.buckets.size(), 1u);
  EXPECT_EQ(w.buckets[0].active.allocs, 3u);
}

// Where MakeBucket's futures live (as long as the test program).
StackStore& FutureStore() {
  static StackStore store;
  return store;
}

// Unpublished counters take storage only once one is not zero; a later
// read that sees them move writes them in place, zeros included.
TEST(WalkBuckets, FuturesAreStoredOnlyWhenNotZero) {
  BucketArena arena(0x10000);
  const uint64_t quiet = arena.Add(16, {0x401000}, {1, 0, 16, 0});
  const uint64_t busy = arena.Add(32, {0x402000}, {2, 1, 64, 32}, {{{}, {}, {3, 1, 96, 32}}});
  arena.SetAllnext(busy, quiet);
  TestMemory mem;
  arena.MapInto(mem);
  StackStore store;
  WalkResult w = WalkBuckets(mem, busy, {.max_stack_words = 32}, store);
  ASSERT_EQ(w.buckets.size(), 2u);
  EXPECT_EQ(w.buckets[1].future_words, nullptr);
  ASSERT_NE(w.buckets[0].future_words, nullptr);
  EXPECT_EQ(w.buckets[0].Future(2).alloc_bytes, 96u);
  EXPECT_EQ(w.buckets[0].Future(2).frees, 1u);
  EXPECT_EQ(w.buckets[0].Future(0).allocs, 0u);

  // The quiet bucket allocates in cycle 1; the busy one's cycle 2 is flushed.
  const uint64_t quiet_future1 = quiet + 48 + 8 + 32 + 32;
  const uint64_t busy_future2 = busy + 48 + 8 + 32 + 64;
  mem.PutU64(quiet_future1, 7);
  mem.PutU64(quiet_future1 + 16, 7 * 16);
  for (uint64_t i = 0; i < 4; ++i) mem.PutU64(busy_future2 + 8 * i, 0);
  const uint64_t* busy_words = w.buckets[0].future_words;
  RereadRecords(mem, w.buckets, MemRecordLayout::kCountsAndBytes, store);
  ASSERT_NE(w.buckets[1].future_words, nullptr);
  EXPECT_EQ(w.buckets[1].Future(1).allocs, 7u);
  EXPECT_EQ(w.buckets[1].Future(1).alloc_bytes, 112u);
  EXPECT_EQ(w.buckets[0].future_words, busy_words);
  EXPECT_EQ(w.buckets[0].Future(2).alloc_bytes, 0u);
  EXPECT_EQ(w.buckets[0].Future(2).frees, 0u);
  EXPECT_EQ(w.buckets[0].active.allocs, 2u);
}

Bucket MakeBucket(MemRecordCycle active, std::array<MemRecordCycle, 3> future) {
  Bucket b;
  b.active = active;
  const MemRecordCycle f[3] = {future[0], future[1], future[2]};
  SetFutures(b, f, FutureStore());
  return b;
}

TEST(WalkBuckets, ReservesRoomForTheBoundGivenCappedAtMaxBuckets) {
  BucketArena arena(0x10000);
  uint64_t b1 = arena.Add(16, {0x401000}, {1, 0, 16, 0});
  uint64_t b2 = arena.Add(32, {0x403000}, {2, 1, 64, 32});
  arena.SetAllnext(b2, b1);
  TestMemory mem;
  arena.MapInto(mem);
  WalkResult w = WalkBuckets(mem, b2, {.max_stack_words = 32, .reserve_buckets = 1000});
  ASSERT_EQ(w.buckets.size(), 2u);
  EXPECT_GE(w.buckets.capacity(), 1000u);
  EXPECT_EQ(w.buckets[0].addr, b2);
  EXPECT_EQ(w.buckets[1].addr, b1);
  // A hostile bound reserves no more than max_buckets (no bad_alloc).
  WalkResult capped = WalkBuckets(
      mem, b2, {.max_stack_words = 32, .max_buckets = 64, .reserve_buckets = uint64_t{1} << 60});
  EXPECT_EQ(capped.buckets.size(), 2u);
  EXPECT_LT(capped.buckets.capacity(), 128u);
}

TEST(HeapBucketBound, BucketMemoryOverTheSmallestBucketCapped) {
  constexpr uint64_t kTable = 179999 * 8;
  // 48-byte header + 4 cycles of 4 counters; Go 1.27's counts-only record
  // is half as long.
  EXPECT_EQ(HeapBucketBound(kTable + 176 * 10, MemRecordLayout::kCountsAndBytes, 1000), 10u);
  EXPECT_EQ(HeapBucketBound(kTable + 176 * 10 + 175, MemRecordLayout::kCountsAndBytes, 1000), 10u);
  EXPECT_EQ(HeapBucketBound(kTable + 112 * 10, MemRecordLayout::kCountsOnly, 1000), 10u);
  EXPECT_EQ(HeapBucketBound(kTable + 176 * 10, MemRecordLayout::kCountsAndBytes, 7), 7u);
  EXPECT_EQ(HeapBucketBound(kTable - 1, MemRecordLayout::kCountsAndBytes, 1000), 0u);
  EXPECT_EQ(HeapBucketBound(0, MemRecordLayout::kCountsAndBytes, 1000), 0u);
  EXPECT_EQ(HeapBucketBound(UINT64_MAX, MemRecordLayout::kCountsAndBytes, 1000), 1000u);
}

TEST(EmulateMemProfile, AddsOnlyTheCycleBeingFlushed) {
  // cycle 7: index 7 % 3 = 1 is flushed into active; 2 and 0 are not yet published.
  std::vector<Bucket> bs = {
      MakeBucket({10, 4, 1000, 400}, {{{1, 0, 100, 0}, {2, 1, 200, 100}, {4, 0, 400, 0}}})};
  auto recs = EmulateMemProfile(bs, 7);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].alloc_objects, 12);
  EXPECT_EQ(recs[0].free_objects, 5);
  EXPECT_EQ(recs[0].alloc_bytes, 1200);
  EXPECT_EQ(recs[0].free_bytes, 500);
  // Published-only counting sees just active.
  auto pub = PublishedCounts(bs);
  EXPECT_EQ(pub[0].alloc_objects, 10);
}

TEST(EmulateMemProfile, NoGcYetFoldsAllThreeCycles) {
  // Cycle 0 flushes future[0], which is empty: nothing is published, so the
  // runtime folds in future[1] and future[2] as well.
  std::vector<Bucket> bs = {
      MakeBucket({}, {{{}, {2, 0, 16, 0}, {4, 1, 32, 8}}}),
      MakeBucket({}, {{{}, {}, {}}}),
  };
  auto recs = EmulateMemProfile(bs, 0);
  EXPECT_EQ(recs[0].alloc_objects, 6);
  EXPECT_EQ(recs[0].free_objects, 1);
  EXPECT_EQ(recs[0].alloc_bytes, 48);
  EXPECT_EQ(recs[0].free_bytes, 8);
  // All-zero buckets still become records.
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[1].alloc_objects, 0);
}

TEST(EmulateMemProfile, OnePublishedBucketDisablesTheFallback) {
  std::vector<Bucket> bs = {
      MakeBucket({}, {{{1, 0, 8, 0}, {2, 0, 16, 0}, {4, 0, 32, 0}}}),
      MakeBucket({1, 0, 8, 0}, {{{}, {}, {}}}),
  };
  auto recs = EmulateMemProfile(bs, 0);  // index 0
  EXPECT_EQ(recs[0].alloc_objects, 1);
  EXPECT_EQ(recs[1].alloc_objects, 1);
}

TEST(EmulateMemProfile, FlushedCycleAloneCountsAsPublished) {
  // active is zero but future[C%3] is not: after the runtime's flush that is
  // published data, so the no-GC fallback must not apply.
  std::vector<Bucket> bs = {MakeBucket({}, {{{0, 0, 0, 0}, {0, 0, 0, 0}, {3, 0, 24, 0}}}),
                            MakeBucket({}, {{{5, 0, 40, 0}, {}, {}}})};
  auto recs = EmulateMemProfile(bs, 2);
  EXPECT_EQ(recs[0].alloc_objects, 3);
  EXPECT_EQ(recs[1].alloc_objects, 0);
}

TEST(EmulateMemProfile, TornCountersWithFreesAboveAllocsGiveNegativeInUse) {
  // The runtime reports what it has; in-use can go negative transiently.
  std::vector<Bucket> bs = {MakeBucket({1, 2, 16, 32}, {})};
  auto recs = EmulateMemProfile(bs, 3);
  EXPECT_EQ(recs[0].InUseObjects(), -1);
  EXPECT_EQ(recs[0].InUseBytes(), -16);
}

TEST(ScaleHeapSample, MatchesRuntimePprof) {
  EXPECT_EQ(ScaleHeapSample(0, 100, 512 * 1024).count, 0);
  EXPECT_EQ(ScaleHeapSample(5, 0, 512 * 1024).bytes, 0);
  EXPECT_EQ(ScaleHeapSample(5, 80, 1).bytes, 80);
  EXPECT_EQ(ScaleHeapSample(5, 80, 0).bytes, 80);
  // Expected values printed by runtime/pprof's scaleHeapSample compiled with
  // Go 1.26.8 (float64 math, truncation toward zero).
  struct Case {
    int64_t count, size, want_count, want_bytes;
  };
  for (const Case& c :
       {Case{1, 1 << 20, 1, 1212696}, Case{1, 16, 32768, 524296}, Case{3, 48, 98305, 1572888},
        Case{1000, 4096000, 128500, 526338666}, Case{7, 123456, 211, 3732090}}) {
    ScaledPair p = ScaleHeapSample(c.count, c.size, 512 * 1024);
    EXPECT_EQ(p.count, c.want_count) << c.count << " x " << c.size;
    EXPECT_EQ(p.bytes, c.want_bytes) << c.count << " x " << c.size;
  }
}

}  // namespace
}  // namespace goheap2pprof

namespace goheap2pprof {
namespace {

// True if the read [addr, addr+len) touches a byte of [lo, hi). Read hooks
// use it to change memory when the reader reaches an object, so a test does
// not depend on how many reads come before.
bool Touches(uint64_t addr, uint64_t len, uint64_t lo, uint64_t hi) {
  return addr < hi && lo < addr + len;
}

// Test memory holding runtime.mbuckets, MemProfileRate and mProfCycle words
// plus one bucket, for ReadHeapSnapshot.
struct RuntimeImage {
  static constexpr uint64_t kVars = 0x5000;  // mbuckets, rate, cycle
  TestMemory mem;
  HeapAddresses addrs{kVars, kVars + 8, kVars + 16};
  uint64_t bucket = 0, bucket_end = 0;
  RuntimeImage(uint32_t cycle_word) {
    BucketArena arena(0x10000);
    uint64_t b = arena.Add(64, {0x401000}, {4, 1, 256, 64}, {{{1, 0, 64, 0}, {}, {}}});
    bucket = b;
    bucket_end = arena.End();
    arena.MapInto(mem);
    std::vector<uint8_t> vars(24, 0);
    std::memcpy(&vars[0], &b, 8);
    int64_t rate = 512 * 1024;
    std::memcpy(&vars[8], &rate, 8);
    std::memcpy(&vars[16], &cycle_word, 4);
    mem.Map(kVars, vars);
  }
};

// Makes the "GC" publish cycle 7 with the first read after the bucket was
// read (once); published says it did.
void PublishCycle7AfterTheBucket(RuntimeImage& img, bool& published) {
  img.mem.SetReadHook([&img, &published, bucket_read = false](uint64_t addr, uint64_t len) mutable {
    if (bucket_read && !published) {
      published = true;
      img.mem.PutU64(RuntimeImage::kVars + 16, 7 << 1);
    }
    bucket_read |= Touches(addr, len, img.bucket, img.bucket_end);
  });
}

TEST(ReadHeapSnapshot, StableCycleNeedsOneWalk) {
  // Between mProf_NextCycle and mProf_Flush (flushed bit clear): future[C%3]
  // is pending and the emulation adds it, as MemProfile would.
  RuntimeImage img(/*cycle_word=*/6 << 1);
  HeapSnapshot s = ReadHeapSnapshot(img.mem, img.addrs, TraitsForVersion({1, 26, 0}));
  EXPECT_EQ(s.walks, 1);
  EXPECT_TRUE(s.consistent);
  EXPECT_EQ(s.cycle, 6u);
  EXPECT_EQ(s.rate, 512 * 1024);
  ASSERT_EQ(s.buckets.size(), 1u);
}

TEST(ReadHeapSnapshot, CycleChangingMidWalkIsRetried) {
  RuntimeImage img(/*cycle_word=*/6 << 1);
  // The GC publishes (the next cycle) right after the first walk has read
  // the bucket; the second walk sees a stable cycle.
  bool published = false;
  PublishCycle7AfterTheBucket(img, published);
  HeapSnapshot s = ReadHeapSnapshot(img.mem, img.addrs, TraitsForVersion({1, 26, 0}));
  ASSERT_TRUE(published);
  EXPECT_EQ(s.walks, 2);
  EXPECT_TRUE(s.consistent);
  EXPECT_EQ(s.cycle, 7u);
}

TEST(ReadHeapSnapshot, GivesUpAfterBoundedRetries) {
  RuntimeImage img(/*cycle_word=*/0);
  uint32_t word = 0;
  img.mem.SetReadHook(
      [&](uint64_t, uint64_t) { img.mem.PutU64(RuntimeImage::kVars + 16, word += 2); });
  HeapSnapshot s =
      ReadHeapSnapshot(img.mem, img.addrs, TraitsForVersion({1, 26, 0}), {.max_walks = 3});
  EXPECT_EQ(s.walks, 3);
  EXPECT_FALSE(s.consistent);
}

TEST(ReadHeapSnapshot, Go118CycleIsAPlainCounter) {
  RuntimeImage img(/*cycle_word=*/5);
  HeapSnapshot s = ReadHeapSnapshot(img.mem, img.addrs, TraitsForVersion({1, 18, 0}));
  EXPECT_EQ(s.cycle, 5u);
}

TEST(ReadHeapSnapshot, Go127CountsOnlyRecordDerivesBytesFromSize) {
  // Go 1.27 memRecordCycle is {allocs, frees}: lay out a 64-byte record.
  TestMemory mem;
  std::vector<uint64_t> words = {0,
                                 0,
                                 1,
                                 0,
                                 /*size=*/48,
                                 /*nstk=*/1,
                                 0x401000,
                                 /*active*/ 5,
                                 2,
                                 /*future*/ 1,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0};
  std::vector<uint8_t> bytes(words.size() * 8);
  std::memcpy(bytes.data(), words.data(), bytes.size());
  mem.Map(0x10000, bytes);
  WalkResult w = WalkBuckets(
      mem, 0x10000, {.max_stack_words = 1026, .record_layout = MemRecordLayout::kCountsOnly});
  ASSERT_EQ(w.buckets.size(), 1u);
  EXPECT_EQ(w.buckets[0].active.allocs, 5u);
  EXPECT_EQ(w.buckets[0].active.alloc_bytes, 240u);
  EXPECT_EQ(w.buckets[0].active.free_bytes, 96u);
  EXPECT_EQ(w.buckets[0].Future(0).alloc_bytes, 48u);
}

}  // namespace
}  // namespace goheap2pprof

namespace goheap2pprof {
namespace {

// Two buckets of 20-word stacks mapped into mem; returns the list's head.
uint64_t TwoBucketsOf20Words(TestMemory& mem) {
  BucketArena arena(0x10000);
  uint64_t b1 = arena.Add(16, std::vector<uint64_t>(20, 1), {});
  uint64_t b2 = arena.Add(16, std::vector<uint64_t>(20, 2), {});
  arena.SetAllnext(b2, b1);
  arena.MapInto(mem);
  return b2;
}

TEST(WalkBuckets, TotalStackWordsAreBounded) {
  TestMemory mem;
  const uint64_t b2 = TwoBucketsOf20Words(mem);
  EXPECT_EQ(WalkBuckets(mem, b2, {.max_total_stack_words = 40}).buckets.size(), 2u);
  EXPECT_THROW(WalkBuckets(mem, b2, {.max_total_stack_words = 39}), Error);
}

// A list past either bound is refused with what the bound protects and what
// to change in the target, as a limit (not as a malformed list).
TEST(WalkBuckets, ARefusalPastTheBoundsSaysWhatToChange) {
  TestMemory mem;
  const uint64_t b2 = TwoBucketsOf20Words(mem);
  for (const WalkLimits& limits : {WalkLimits{.max_total_stack_words = 39},
                                   WalkLimits{.max_stack_words = 32, .max_buckets = 1}}) {
    try {
      WalkBuckets(mem, b2, limits);
      ADD_FAILURE() << "not refused";
    } catch (const Error& e) {
      // A limit of ours, not a damaged target: exit 6, as the goroutine
      // reader's --max-bytes refusal.
      EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
      EXPECT_NE(e.hint().find("its own memory stays bounded"), std::string::npos) << e.hint();
      EXPECT_NE(e.hint().find("MemProfileRate"), std::string::npos) << e.hint();
    }
  }
}

TEST(WalkBuckets, MisalignedAndWildPointersAreErrorsNotCrashes) {
  BucketArena arena(0x10000);
  uint64_t b1 = arena.Add(16, {1}, {});
  arena.SetAllnext(b1, 0x10003);  // misaligned
  TestMemory mem;
  arena.MapInto(mem);
  EXPECT_THROW(WalkBuckets(mem, b1, {}), Error);
  arena.SetAllnext(b1, 0xfffffffffffffff8ull);  // wild
  TestMemory mem2;
  arena.MapInto(mem2);
  EXPECT_THROW(WalkBuckets(mem2, b1, {}), Error);
}

TEST(ScaleHeapSample, HostileCountersDoNotOverflow) {
  // Torn or corrupt counters: huge and negative values must give Go's
  // answer (INT64_MIN for out-of-range conversions), never undefined behaviour.
  // Expected values printed by runtime/pprof's scaleHeapSample built with Go
  // 1.26.8 on amd64.
  ScaledPair p = ScaleHeapSample(1, INT64_MAX, 512 * 1024);
  EXPECT_EQ(p.count, 1);
  EXPECT_EQ(p.bytes, INT64_MIN);  // 2^63 after rounding to float64: out of range
  // A negative count makes the average size positive and huge: scale 1, and
  // INT64_MIN bytes convert back exactly.
  ScaledPair q = ScaleHeapSample(-5, INT64_MIN, 512 * 1024);
  EXPECT_EQ(q.count, -5);
  EXPECT_EQ(q.bytes, INT64_MIN);
  ScaledPair r = ScaleHeapSample(INT64_MIN, 1, 512 * 1024);
  EXPECT_EQ(r.count, INT64_MIN);
  EXPECT_EQ(r.bytes, INT64_MIN);  // exp(~1e-25) is 1: scale 1/0 = +Inf, out of range
}

}  // namespace
}  // namespace goheap2pprof

namespace goheap2pprof {
namespace {

TEST(ReadHeapSnapshot, FlushInProgressIsRetried) {
  // The flushed bit is set for cycle 6 (index 0) but the bucket still holds
  // future[0]: mProf_Flush has not reached it yet. Once the "runtime" has
  // finished (future[0] folded into active and zeroed), the walk is kept.
  RuntimeImage img(/*cycle_word=*/(6 << 1) | 1);
  const uint64_t future0 = 0x10000 + 48 + 8 + 32;  // header, 1 stack word, active
  // The flush finishes after the first walk has read the bucket, before the
  // reader looks at the cycle word again.
  bool bucket_read = false, flushed = false;
  img.mem.SetReadHook([&](uint64_t addr, uint64_t len) {
    if (bucket_read && !flushed && Touches(addr, len, img.addrs.cycle, img.addrs.cycle + 4)) {
      flushed = true;
      img.mem.PutU64(0x10000 + 48 + 8, 5);  // active.allocs = 4 + 1
      img.mem.PutU64(future0, 0);           // future[0].allocs = 0
      img.mem.PutU64(future0 + 16, 0);      // future[0].alloc_bytes = 0
    }
    bucket_read |= Touches(addr, len, img.bucket, img.bucket_end);
  });
  HeapSnapshot s = ReadHeapSnapshot(img.mem, img.addrs, TraitsForVersion({1, 26, 0}));
  ASSERT_TRUE(flushed);
  EXPECT_EQ(s.walks, 2);
  EXPECT_TRUE(s.consistent);
  auto recs = EmulateMemProfile(s.buckets, s.cycle);
  EXPECT_EQ(recs[0].alloc_objects, 5);  // counted once
}

// The same, streamed: the packed buckets say whether one held future[0]
// counts without being decoded again, and the walk is read again as above.
TEST(StreamHeapSnapshot, FlushInProgressIsRetried) {
  RuntimeImage img(/*cycle_word=*/(6 << 1) | 1);
  const uint64_t future0 = 0x10000 + 48 + 8 + 32;
  bool bucket_read = false, flushed = false;
  img.mem.SetReadHook([&](uint64_t addr, uint64_t len) {
    if (bucket_read && !flushed && Touches(addr, len, img.addrs.cycle, img.addrs.cycle + 4)) {
      flushed = true;
      img.mem.PutU64(0x10000 + 48 + 8, 5);
      img.mem.PutU64(future0, 0);
      img.mem.PutU64(future0 + 16, 0);
    }
    bucket_read |= Touches(addr, len, img.bucket, img.bucket_end);
  });
  HeapSnapshot s = StreamHeapSnapshot(
      img.mem, img.addrs, TraitsForVersion({1, 26, 0}), {},
      {.start = [](int64_t) {}, .bucket = [](const Bucket&, AheadNote) { return uint32_t{0}; }});
  ASSERT_TRUE(flushed);
  EXPECT_EQ(s.walks, 2);
  EXPECT_TRUE(s.consistent);
  ASSERT_EQ(s.packed.size(), 1u);
  EXPECT_FALSE(s.packed.AnyFutureCounts(0));
  s.packed.ForEachBatch([](const PackedBuckets::Batch& batch) {
    EXPECT_EQ(EmulatedRecord(batch.buckets[0], 6, false).alloc_objects, 5);  // counted once
    return true;
  });
}

// A flushed cycle whose buckets hold no future counts is read once: the
// packed buckets' answer, not a pass over them.
TEST(StreamHeapSnapshot, FlushedCycleWithoutFutureCountsIsReadOnce) {
  RuntimeImage img(/*cycle_word=*/(6 << 1) | 1);
  const uint64_t future0 = 0x10000 + 48 + 8 + 32;
  img.mem.PutU64(future0, 0);
  img.mem.PutU64(future0 + 16, 0);
  HeapSnapshot s = StreamHeapSnapshot(
      img.mem, img.addrs, TraitsForVersion({1, 26, 0}), {},
      {.start = [](int64_t) {}, .bucket = [](const Bucket&, AheadNote) { return uint32_t{0}; }});
  EXPECT_EQ(s.walks, 1);
  EXPECT_TRUE(s.consistent);
  EXPECT_EQ(s.packed.size(), 1u);
}

}  // namespace
}  // namespace goheap2pprof

namespace goheap2pprof {
namespace {

// The streamed walk keeps nothing per bucket: every bucket is handed over in
// the same scratch, and holds what WalkBuckets keeps.
TEST(StreamBuckets, HandsEachBucketOverInOneReusedScratch) {
  BucketArena arena(0x10000);
  uint64_t b1 = arena.Add(16, {0x401000, 0x402000}, {1, 0, 16, 0}, {{{1, 0, 16, 0}, {}, {}}});
  uint64_t b2 = arena.Add(32, {0x403000, 0x404000}, {2, 1, 64, 32});
  arena.SetAllnext(b2, b1);
  TestMemory mem;
  arena.MapInto(mem);
  std::vector<std::vector<uint64_t>> stacks;
  std::vector<const uint64_t*> where;
  std::vector<uint64_t> future_allocs;
  const WalkEnd end = StreamBuckets(mem, b2, {.max_stack_words = 32}, [&](const Bucket& b) {
    stacks.emplace_back(b.stack.begin(), b.stack.end());
    where.push_back(b.stack.data());
    future_allocs.push_back(b.Future(0).allocs);
  });
  EXPECT_EQ(end.buckets, 2u);
  const WalkResult kept = WalkBuckets(mem, b2, {.max_stack_words = 32});
  ASSERT_EQ(stacks.size(), kept.buckets.size());
  for (size_t i = 0; i < stacks.size(); ++i) {
    EXPECT_TRUE(std::equal(stacks[i].begin(), stacks[i].end(), kept.buckets[i].stack.begin(),
                           kept.buckets[i].stack.end()));
    EXPECT_EQ(future_allocs[i], kept.buckets[i].Future(0).allocs);
  }
  EXPECT_EQ(where[0], where[1]);
}

// Through a caching reader, each stack is handed over where the reader
// holds it (no copy), and holds what WalkBuckets keeps.
TEST(StreamBuckets, HandsOverTheCachedBytesOfEachStackInPlace) {
  BucketArena arena(0x10000);
  uint64_t b1 = arena.Add(16, {0x401000, 0x402000, 0x402000}, {1, 0, 16, 0});
  uint64_t b2 = arena.Add(32, {0x403000, 0x404000}, {2, 1, 64, 32});
  arena.SetAllnext(b2, b1);
  TestMemory mem;
  arena.MapInto(mem);
  BlockCacheReader cached(mem, {{0x10000, arena.End()}}, 4096, 4);
  std::vector<std::vector<uint64_t>> stacks;
  std::vector<const uint64_t*> where;
  StreamBuckets(cached, b2, {.max_stack_words = 32}, [&](const Bucket& b) {
    stacks.emplace_back(b.stack.begin(), b.stack.end());
    where.push_back(b.stack.data());
  });
  const WalkResult kept = WalkBuckets(mem, b2, {.max_stack_words = 32});
  ASSERT_EQ(stacks.size(), 2u);
  ASSERT_EQ(kept.buckets.size(), 2u);
  const uint64_t addrs[] = {b2, b1};
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(std::equal(stacks[i].begin(), stacks[i].end(), kept.buckets[i].stack.begin(),
                           kept.buckets[i].stack.end()));
    // The block is still cached: its bytes are where the stack was.
    const uint8_t* held = cached.View(addrs[i] + kBucketHeaderSize, 8 * stacks[i].size());
    EXPECT_EQ(reinterpret_cast<const uint8_t*>(where[i]), held);
  }
}

// A walk the cycle tore, with no bucket added, is settled by reading the
// counters again: the stacks streamed stay, and the snapshot keeps the
// counters of the last read, without stacks.
TEST(StreamHeapSnapshot, ATornWalkRereadsOnlyTheCounters) {
  RuntimeImage img(/*cycle_word=*/6 << 1);
  bool published = false;
  PublishCycle7AfterTheBucket(img, published);
  std::vector<int64_t> starts;
  int streamed = 0;
  HeapSnapshot s = StreamHeapSnapshot(img.mem, img.addrs, TraitsForVersion({1, 26, 0}), {},
                                      {.start = [&](int64_t rate) { starts.push_back(rate); },
                                       .bucket =
                                           [&](const Bucket& b, AheadNote note) {
                                             // No `ahead`: nothing to note.
                                             EXPECT_EQ(note, kNoAheadNote);
                                             streamed += b.stack.size() == 1 ? 1 : 100;
                                             return 7u;
                                           }});
  ASSERT_TRUE(published);
  EXPECT_EQ(s.walks, 2);
  EXPECT_TRUE(s.consistent);
  EXPECT_EQ(s.cycle, 7u);
  EXPECT_EQ(starts, std::vector<int64_t>(1, 512 * 1024));
  EXPECT_EQ(streamed, 1);
  EXPECT_TRUE(s.buckets.empty());
  ASSERT_EQ(s.packed.size(), 1u);
  s.packed.ForEachBatch([](const PackedBuckets::Batch& batch) {
    EXPECT_TRUE(batch.buckets[0].stack.empty());
    EXPECT_EQ(batch.buckets[0].active.allocs, 4u);
    EXPECT_EQ(batch.buckets[0].Future(0).allocs, 1u);
    EXPECT_EQ(batch.tags[0], 7u);
    return true;
  });
}

// A walk that keeps its stacks is bounded by their words in total; a
// streamed one keeps none and is not (issue 42: deep stacks at 100k buckets
// were refused though nothing kept them).
TEST(StreamHeapSnapshot, StackWordsInTotalBoundOnlyWalksThatKeepThem) {
  RuntimeImage img(/*cycle_word=*/6 << 1);
  const RuntimeTraits traits = TraitsForVersion({1, 26, 0});
  EXPECT_THROW(ReadHeapSnapshot(img.mem, img.addrs, traits, {.max_total_stack_words = 0}), Error);
  int streamed = 0;
  const HeapSnapshot s =
      StreamHeapSnapshot(img.mem, img.addrs, traits, {.max_total_stack_words = 0},
                         {.start = [](int64_t) {},
                          .bucket =
                              [&](const Bucket&, AheadNote) {
                                ++streamed;
                                return 0u;
                              }});
  EXPECT_EQ(streamed, 1);
  EXPECT_EQ(s.packed.size(), 1u);
}

// Two buckets in memory; the list starts at `old_b`. During the first walk
// a GC publishes (new cycle, new counters) and a bucket is prepended.
struct PrependingImage {
  static constexpr uint64_t kVars = 0x5000;
  TestMemory mem;
  HeapAddresses addrs{kVars, kVars + 8, kVars + 16};
  uint64_t old_b = 0, new_b = 0;
  bool published = false;
  PrependingImage() {
    BucketArena arena(0x10000);
    old_b = arena.Add(64, {0x401000}, {1, 0, 64, 0});
    const uint64_t old_end = arena.End();
    // Its pending allocation sits in future[(C+2)%3] = future[1], where mallocs go.
    new_b = arena.Add(32, {0x402000, 0x403000}, {0, 0, 0, 0}, {{{}, {2, 0, 64, 0}, {}}});
    arena.SetAllnext(new_b, old_b);
    arena.MapInto(mem);
    std::vector<uint8_t> vars(24, 0);
    std::memcpy(&vars[0], &old_b, 8);
    int64_t rate = 1;
    std::memcpy(&vars[8], &rate, 8);
    uint32_t cycle_word = 4 << 1;
    std::memcpy(&vars[16], &cycle_word, 4);
    mem.Map(kVars, vars);
    // The GC publishes right after the first walk has read old_b.
    mem.SetReadHook([this, old_end, old_read = false](uint64_t addr, uint64_t len) mutable {
      if (old_read && !published) {
        published = true;
        mem.PutU64(kVars, new_b);
        mem.PutU64(kVars + 16, (5 << 1) | 1);
        mem.PutU64(old_b + 48 + 8, 3);  // old bucket's active.allocs: 1 -> 3
      }
      old_read |= Touches(addr, len, old_b, old_end);
    });
  }
};

TEST(ReadHeapSnapshot, RetryTakesNewBucketsAndRereadsOnlyCounters) {
  PrependingImage img;
  HeapSnapshot s = ReadHeapSnapshot(img.mem, img.addrs, TraitsForVersion({1, 26, 0}));
  ASSERT_TRUE(img.published);
  EXPECT_EQ(s.walks, 2);
  EXPECT_TRUE(s.consistent);
  EXPECT_EQ(s.cycle, 5u);
  ASSERT_EQ(s.buckets.size(), 2u);
  EXPECT_EQ(s.buckets[0].addr, img.new_b);
  EXPECT_EQ(std::vector<uint64_t>(s.buckets[0].stack.begin(), s.buckets[0].stack.end()),
            std::vector<uint64_t>({0x402000, 0x403000}));
  EXPECT_EQ(s.buckets[1].addr, img.old_b);
  EXPECT_EQ(s.buckets[1].active.allocs, 3u);
}

// Streamed, a retry after buckets were added walks the list again whole (the
// new ones come first, and the build must see the stacks in list order).
TEST(StreamHeapSnapshot, ARetryAfterBucketsWereAddedWalksAgainWhole) {
  PrependingImage img;
  std::vector<size_t> stacks;
  int starts = 0;
  HeapSnapshot s = StreamHeapSnapshot(img.mem, img.addrs, TraitsForVersion({1, 26, 0}), {},
                                      {.start = [&](int64_t) { ++starts; },
                                       .bucket =
                                           [&](const Bucket& b, AheadNote) {
                                             stacks.push_back(b.stack.size());
                                             return static_cast<uint32_t>(stacks.size());
                                           }});
  ASSERT_TRUE(img.published);
  EXPECT_EQ(s.walks, 2);
  EXPECT_TRUE(s.consistent);
  EXPECT_EQ(s.cycle, 5u);
  EXPECT_EQ(starts, 2);
  EXPECT_EQ(stacks, (std::vector<size_t>{1, 2, 1}));
  ASSERT_EQ(s.packed.size(), 2u);
  s.packed.ForEachBatch([&](const PackedBuckets::Batch& batch) {
    EXPECT_EQ(batch.buckets[0].addr, img.new_b);
    EXPECT_EQ(batch.buckets[1].addr, img.old_b);
    EXPECT_EQ(batch.buckets[1].active.allocs, 3u);
    EXPECT_EQ(batch.tags[0], 2u);  // the second walk's
    EXPECT_EQ(batch.tags[1], 3u);
    return true;
  });
}

// Packed buckets decode to the counters, size, address and tag they were
// packed with, across batches and chunks, with futures only where some were
// not zero; a bucket takes a few bytes, not the 100 of a Bucket, its
// record's address and its run.
TEST(PackedBuckets, KeepWhatTheSamplesNeedInAFewBytesABucket) {
  constexpr size_t kN = 50000;
  StackStore store;
  PackedBuckets packed;
  for (size_t i = 0; i < kN; ++i) {
    Bucket b;
    b.addr = 0xc000000000 + 400 * (kN - i);  // newest first: addresses fall
    b.size = 16 + i % 7;
    b.active = {i, i / 2, 16 * i, 8 * i};
    if (i % 1000 == 0) SetFutures(b, {{}, {1, 0, 64, 0}, {~uint64_t{0}, 2, 3, 4}}, store);
    packed.Append(b, b.addr + kBucketHeaderSize + 8 * (i % 40), static_cast<uint32_t>(i));
  }
  ASSERT_EQ(packed.size(), kN);
  EXPECT_LT(packed.ApproximateBytes(), kN * 32);
  size_t i = 0;
  packed.ForEachBatch([&](const PackedBuckets::Batch& batch) {
    EXPECT_LE(batch.buckets.size(), PackedBuckets::kBatch);
    for (size_t k = 0; k < batch.buckets.size(); ++k, ++i) {
      const Bucket& b = batch.buckets[k];
      EXPECT_EQ(b.addr, 0xc000000000 + 400 * (kN - i));
      EXPECT_EQ(batch.record_at[k], b.addr + kBucketHeaderSize + 8 * (i % 40));
      EXPECT_EQ(b.size, 16 + i % 7);
      EXPECT_EQ(b.active.free_bytes, 8 * i);
      EXPECT_EQ(batch.tags[k], i);
      EXPECT_EQ(b.future_words != nullptr, i % 1000 == 0);
      EXPECT_EQ(b.Future(2).allocs, i % 1000 == 0 ? ~uint64_t{0} : 0);
    }
    return true;
  });
  EXPECT_EQ(i, kN);
  EXPECT_FALSE(packed.AnyFutureCounts(0));  // {}: no counts
  EXPECT_TRUE(packed.AnyFutureCounts(1));   // one allocation
  EXPECT_TRUE(packed.AnyFutureCounts(2));
  EXPECT_FALSE(packed.AnyFutureCounts(3));
}

// Entries at their widest (every varint at its longest, the tag at 2^32-1)
// come back whole, across chunks: an entry is encoded in a buffer of the
// largest entry's size, which ASan checks here.
TEST(PackedBuckets, WidestEntriesComeBackWhole) {
  constexpr size_t kN = 3000;  // about 580 KB: three chunks
  constexpr uint64_t kMax = ~uint64_t{0};
  StackStore store;
  PackedBuckets packed;
  const auto record_at = [](size_t i) { return i % 2 == 0 ? uint64_t{0x10} : (uint64_t{1} << 63); };
  for (size_t i = 0; i < kN; ++i) {
    Bucket b;
    b.addr = record_at(i) - kBucketHeaderSize - 8 * (kMax / 8 - i);  // a 9-byte stack length
    b.size = kMax - i;
    b.active = {kMax, kMax - 1, kMax - 2, kMax - i};
    SetFutures(b,
               {{kMax, kMax, kMax, kMax}, {kMax, kMax, kMax, kMax}, {kMax, kMax, kMax, kMax - i}},
               store);
    packed.Append(b, record_at(i), UINT32_MAX - static_cast<uint32_t>(i));
  }
  size_t i = 0;
  packed.ForEachBatch([&](const PackedBuckets::Batch& batch) {
    for (size_t k = 0; k < batch.buckets.size(); ++k, ++i) {
      const Bucket& b = batch.buckets[k];
      EXPECT_EQ(batch.record_at[k], record_at(i));
      EXPECT_EQ(b.addr, record_at(i) - kBucketHeaderSize - 8 * (kMax / 8 - i));
      EXPECT_EQ(b.size, kMax - i);
      EXPECT_EQ(b.active.free_bytes, kMax - i);
      EXPECT_EQ(b.active.frees, kMax - 1);
      EXPECT_EQ(batch.tags[k], UINT32_MAX - i);
      EXPECT_NE(b.future_words, nullptr);
      EXPECT_EQ(b.Future(0).allocs, kMax);
      EXPECT_EQ(b.Future(2).free_bytes, kMax - i);
    }
    return !::testing::Test::HasFailure();  // one bad batch says enough
  });
  EXPECT_EQ(i, kN);
}

// Whether a future slot counted allocations or frees: bytes alone do not
// count (the consistency check asks of the counts), and a cleared store
// forgets.
TEST(PackedBuckets, SayWhichFutureSlotsHoldCounts) {
  StackStore store;
  PackedBuckets packed;
  Bucket quiet;
  packed.Append(quiet, kBucketHeaderSize, 1);
  Bucket bytes_only;
  SetFutures(bytes_only, {{0, 0, 64, 0}, {}, {}}, store);
  packed.Append(bytes_only, kBucketHeaderSize, 2);
  EXPECT_FALSE(packed.AnyFutureCounts(0));
  Bucket freed;
  SetFutures(freed, {{}, {}, {0, 1, 0, 0}}, store);
  packed.Append(freed, kBucketHeaderSize, 3);
  EXPECT_FALSE(packed.AnyFutureCounts(0));
  EXPECT_FALSE(packed.AnyFutureCounts(1));
  EXPECT_TRUE(packed.AnyFutureCounts(2));
  packed.Clear();
  EXPECT_FALSE(packed.AnyFutureCounts(2));
}

}  // namespace
}  // namespace goheap2pprof

namespace goheap2pprof {
namespace {

TEST(WalkBuckets, ThroughTheBlockCacheGivesTheSameBuckets) {
  // Buckets of every stack depth, so some straddle the 4 KiB cache blocks
  // and the walker mixes lent views with stitched copies.
  BucketArena arena(0x100000);
  uint64_t prev = 0;
  for (uint64_t i = 0; i < 200; ++i) {
    std::vector<uint64_t> stack(i % 40, 0x401000 + i);
    uint64_t b = arena.Add(16 + i, stack, {i, i / 2, 16 * i, 8 * i});
    if (prev != 0) arena.SetAllnext(b, prev);
    prev = b;
  }
  TestMemory mem;
  arena.MapInto(mem);
  WalkResult direct = WalkBuckets(mem, prev, {.max_stack_words = 64});
  ASSERT_EQ(direct.buckets.size(), 200u);
  // With blocks enough for all, and with so few that blocks are evicted and
  // read again (a bucket straddling two blocks evicts the first with one).
  for (size_t max_blocks : {64, 2, 1}) {
    BlockCacheReader cached(mem, {{0x100000, 0x200000}}, 4096, max_blocks);
    WalkResult via_cache = WalkBuckets(cached, prev, {.max_stack_words = 64});
    ASSERT_EQ(via_cache.buckets.size(), 200u);
    for (size_t i = 0; i < 200; ++i) {
      const Bucket& a = direct.buckets[i];
      const Bucket& b = via_cache.buckets[i];
      EXPECT_EQ(a.addr, b.addr);
      EXPECT_EQ(a.size, b.size);
      EXPECT_TRUE(std::equal(a.stack.begin(), a.stack.end(), b.stack.begin(), b.stack.end()));
      EXPECT_EQ(a.active.alloc_bytes, b.active.alloc_bytes);
      EXPECT_EQ(a.active.frees, b.active.frees);
    }
  }
}

TEST(ReadHeapSnapshot, ThroughAOneBlockCacheGivesTheSameSnapshot) {
  // Buckets spread over 6 blocks, walked newest (highest) first.
  static constexpr uint64_t kVars = 0x5000;
  BucketArena arena(0x100000);
  uint64_t prev = 0;
  for (uint64_t i = 0; i < 300; ++i) {
    uint64_t b =
        arena.Add(16 + i, std::vector<uint64_t>(1 + i % 9, 0x401000 + i % 5), {i, 0, i, 0});
    if (prev != 0) arena.SetAllnext(b, prev);
    prev = b;
  }
  TestMemory mem;
  arena.MapInto(mem);
  std::vector<uint8_t> vars(24, 0);
  std::memcpy(&vars[0], &prev, 8);
  vars[8] = 1;        // MemProfileRate 1
  vars[16] = 6 << 1;  // cycle 6
  mem.Map(kVars, vars);
  const RuntimeTraits traits = TraitsForVersion({1, 26, 0});
  HeapSnapshot direct = ReadHeapSnapshot(mem, {kVars, kVars + 8, kVars + 16}, traits);
  HeapSnapshot cached = ReadHeapSnapshot(
      mem, {kVars, kVars + 8, kVars + 16}, traits,
      {.cache_ranges = {{0x100000, arena.End()}}, .cache_block_size = 4096, .cache_blocks = 1});
  ASSERT_EQ(direct.buckets.size(), 300u);
  ASSERT_EQ(cached.buckets.size(), 300u);
  for (size_t i = 0; i < 300; ++i) {
    EXPECT_EQ(direct.buckets[i].addr, cached.buckets[i].addr);
    EXPECT_TRUE(std::equal(direct.buckets[i].stack.begin(), direct.buckets[i].stack.end(),
                           cached.buckets[i].stack.begin(), cached.buckets[i].stack.end()));
    EXPECT_EQ(direct.buckets[i].active.allocs, cached.buckets[i].active.allocs);
  }
  // 9 depths x 5 PCs give 45 distinct stacks among the 300 buckets.
  EXPECT_EQ(cached.stacks.stacks(), 45u);
}

TEST(WalkBuckets, BucketsOfOneStackShareItsStorage) {
  // One allocation site, several sizes (one bucket each), and another site.
  BucketArena arena(0x10000);
  const std::vector<uint64_t> site = {0x401000, 0x402000, 0x403000};
  const uint64_t b3 = arena.Add(16, site, {1, 0, 16, 0});
  const uint64_t b2 = arena.Add(32, {0x401000, 0x402000, 0x404000}, {1, 0, 32, 0});
  const uint64_t b1 = arena.Add(48, site, {1, 0, 48, 0});
  const uint64_t b0 = arena.Add(64, site, {1, 0, 64, 0});
  arena.SetAllnext(b0, b1);
  arena.SetAllnext(b1, b2);
  arena.SetAllnext(b2, b3);
  TestMemory mem;
  arena.MapInto(mem);
  WalkResult w = WalkBuckets(mem, b0, {});
  ASSERT_EQ(w.buckets.size(), 4u);
  EXPECT_EQ(w.buckets[0].stack.data(), w.buckets[1].stack.data());
  EXPECT_EQ(w.buckets[0].stack.data(), w.buckets[3].stack.data());
  EXPECT_NE(w.buckets[0].stack.data(), w.buckets[2].stack.data());
  EXPECT_EQ(w.buckets[2].stack[2], 0x404000u);
  EXPECT_EQ(w.stacks.stacks(), 2u);
  EXPECT_EQ(w.stacks.words(), 6u);
  // The stacks are the walk's own: the target changing them later does not
  // change the buckets.
  mem.PutU64(b0 + kBucketHeaderSize, 0x999000);
  EXPECT_EQ(w.buckets[0].stack[0], 0x401000u);
}

}  // namespace
}  // namespace goheap2pprof

namespace goheap2pprof {
namespace {

// runtime.mbuckets (head), MemProfileRate (512 KiB) and the cycle word,
// back to back at vars.
void MapVars(TestMemory& mem, uint64_t vars_addr, uint64_t head, uint32_t cycle_word) {
  std::vector<uint8_t> vars(24, 0);
  std::memcpy(&vars[0], &head, 8);
  const int64_t rate = 512 * 1024;
  std::memcpy(&vars[8], &rate, 8);
  std::memcpy(&vars[16], &cycle_word, 4);
  mem.Map(vars_addr, vars);
}

// Two buckets linked from runtime.mbuckets, and room for a third to be
// prepended, for RefreshHeapSnapshot.
struct GrowingImage {
  static constexpr uint64_t kVars = 0x5000;
  TestMemory mem;
  HeapAddresses addrs{kVars, kVars + 8, kVars + 16};
  BucketArena arena{0x10000};
  uint64_t b1 = 0, b2 = 0;
  GrowingImage() {
    b2 = arena.Add(64, {0x401000, 0x402000}, {4, 1, 256, 64});
    b1 = arena.Add(128, {0x403000}, {2, 0, 256, 0});
    arena.SetAllnext(b1, b2);
    arena.MapInto(mem);
    SetVars(b1, 6 << 1);
  }
  void SetVars(uint64_t head, uint32_t cycle_word) { MapVars(mem, kVars, head, cycle_word); }
  // Sets the active allocs of the bucket at addr (the first record word).
  void SetAllocs(uint64_t addr, uint64_t nstk, uint64_t allocs) {
    mem.PutU64(addr + kBucketHeaderSize + 8 * nstk, allocs);
  }
};

const RuntimeTraits& Go126() {
  static const RuntimeTraits traits = TraitsForVersion({1, 26, 0});
  return traits;
}

TEST(RefreshHeapSnapshot, CountersChangedAreReadAgain) {
  GrowingImage img;
  HeapSnapshot s = ReadHeapSnapshot(img.mem, img.addrs, Go126());
  img.SetAllocs(img.b2, 2, 40);
  ASSERT_TRUE(RefreshHeapSnapshot(img.mem, img.addrs, Go126(), {}, s));
  ASSERT_EQ(s.buckets.size(), 2u);
  EXPECT_EQ(s.new_buckets, 0u);
  EXPECT_EQ(s.buckets[1].active.allocs, 40u);
  EXPECT_EQ(s.walks, 1);
}

TEST(RefreshHeapSnapshot, ANewBucketPrependedIsWalkedAndPutFirst) {
  GrowingImage img;
  HeapSnapshot s = ReadHeapSnapshot(img.mem, img.addrs, Go126());
  BucketArena more(0x20000);
  const uint64_t b0 = more.Add(256, {0x404000, 0x405000, 0x406000}, {1, 0, 256, 0});
  more.SetAllnext(b0, img.b1);
  more.MapInto(img.mem);
  img.SetVars(b0, 6 << 1);
  ASSERT_TRUE(RefreshHeapSnapshot(img.mem, img.addrs, Go126(), {}, s));
  ASSERT_EQ(s.buckets.size(), 3u);
  EXPECT_EQ(s.new_buckets, 1u);
  EXPECT_EQ(s.head, b0);
  EXPECT_EQ(s.buckets[0].addr, b0);
  EXPECT_EQ(s.buckets[0].stack.size(), 3u);
  EXPECT_EQ(s.buckets[1].addr, img.b1);
  EXPECT_EQ(s.buckets[2].stack[1], 0x402000u);
}

TEST(RefreshHeapSnapshot, ANewBucketOfAKnownStackSharesIt) {
  GrowingImage img;
  HeapSnapshot s = ReadHeapSnapshot(img.mem, img.addrs, Go126());
  ASSERT_EQ(s.stacks.stacks(), 2u);
  BucketArena more(0x20000);
  const uint64_t b0 = more.Add(512, {0x401000, 0x402000}, {1, 0, 512, 0});  // b2's stack
  more.SetAllnext(b0, img.b1);
  more.MapInto(img.mem);
  img.SetVars(b0, 6 << 1);
  ASSERT_TRUE(RefreshHeapSnapshot(img.mem, img.addrs, Go126(), {}, s));
  ASSERT_EQ(s.buckets.size(), 3u);
  EXPECT_EQ(s.buckets[0].stack.data(), s.buckets[2].stack.data());
  EXPECT_EQ(s.stacks.stacks(), 2u);
  EXPECT_EQ(s.buckets[0].active.allocs, 1u);
}

// Buckets added between captures extend the plan of the reads: the old
// ranges are kept, the new buckets' are added, and every bucket's counters
// are read from where the extended plan put them.
TEST(RefreshHeapSnapshot, BucketsAddedExtendThePlanOfTheReads) {
  GrowingImage img;
  HeapSnapshot s = ReadHeapSnapshot(img.mem, img.addrs, Go126());
  BucketArena more(0x20000);
  const uint64_t b0 = more.Add(256, {0x404000, 0x405000}, {1, 0, 256, 0});
  more.SetAllnext(b0, img.b1);
  more.MapInto(img.mem);
  img.SetVars(b0, 6 << 1);
  ASSERT_TRUE(RefreshHeapSnapshot(img.mem, img.addrs, Go126(), {}, s));  // plans b1, b2
  ASSERT_EQ(s.plan.buckets, 2u);
  const size_t planned = s.plan.ranges.size();
  img.SetAllocs(b0, 2, 7);
  img.SetAllocs(img.b2, 2, 9);
  ASSERT_TRUE(RefreshHeapSnapshot(img.mem, img.addrs, Go126(), {}, s));  // b0 too
  EXPECT_EQ(s.plan.buckets, 3u);
  EXPECT_EQ(s.plan.planned_ranges, planned);
  EXPECT_EQ(s.plan.ranges.size(), planned + 1);  // b0 lies apart from the others
  EXPECT_EQ(s.plan.first, b0);
  EXPECT_EQ(s.buckets[0].active.allocs, 7u);
  EXPECT_EQ(s.buckets[1].active.allocs, 2u);
  EXPECT_EQ(s.buckets[2].active.allocs, 9u);
  // The added bucket is checked as the others are.
  img.mem.PutU64(b0 + kBucketHeaderSize + 8, 0x409000);
  EXPECT_FALSE(RefreshHeapSnapshot(img.mem, img.addrs, Go126(), {}, s));
}

// A plan extended bucket by bucket is made anew once its ranges reach twice
// a whole plan's (plus 64): 100 adjacent buckets added one capture at a time
// are a range each until the plan is made anew and takes them in one, with
// every counter right.
TEST(RefreshHeapSnapshot, APlanExtendedManyTimesIsMadeAnew) {
  GrowingImage img;
  HeapSnapshot s = ReadHeapSnapshot(img.mem, img.addrs, Go126());
  BucketArena more(0x20000);
  std::vector<uint64_t> added;
  for (uint64_t i = 0; i < 100; ++i) {
    added.push_back(more.Add(64, {0x410000 + i}, {i + 1, 0, 64 * (i + 1), 0}));
    more.SetAllnext(added[i], i == 0 ? img.b1 : added[i - 1]);
  }
  more.MapInto(img.mem);
  size_t most_ranges = 0;
  bool made_anew = false;
  for (uint64_t i = 0; i < 100; ++i) {
    img.SetVars(added[i], 6 << 1);
    ASSERT_TRUE(RefreshHeapSnapshot(img.mem, img.addrs, Go126(), {}, s)) << i;
    ASSERT_LE(s.plan.ranges.size(), 2 * s.plan.planned_ranges + 64) << i;
    made_anew |= s.plan.ranges.size() < most_ranges;
    most_ranges = std::max(most_ranges, s.plan.ranges.size());
  }
  EXPECT_TRUE(made_anew);
  EXPECT_GE(most_ranges, 60u);
  ASSERT_TRUE(RefreshHeapSnapshot(img.mem, img.addrs, Go126(), {}, s));
  ASSERT_EQ(s.buckets.size(), 102u);
  for (uint64_t i = 0; i < 100; ++i) EXPECT_EQ(s.buckets[99 - i].active.allocs, i + 1) << i;
  EXPECT_EQ(s.buckets[100].active.allocs, 2u);
  EXPECT_EQ(s.buckets[101].active.allocs, 4u);
}

// A list of 40,000 buckets of 64 bytes with two-frame stacks (bucket i's
// active allocs i + 1 counted from the oldest), 7.7 MB of bucket memory,
// and the runtime variables that lead to it.
constexpr uint64_t kLargeListBuckets = 40000;
struct LargeList {
  TestMemory mem;
  HeapAddresses addrs{0x5000, 0x5008, 0x5010};
  std::vector<uint64_t> b = std::vector<uint64_t>(kLargeListBuckets);  // b[0] is the head
};
void MakeLargeList(LargeList& list) {
  const uint64_t n = kLargeListBuckets;
  BucketArena arena(0x100000);
  for (uint64_t i = 0; i < n; ++i) {
    list.b[n - 1 - i] = arena.Add(64, {0x400000 + i % 100, 0x500000}, {i + 1, 0, 64 * (i + 1), 0});
    if (i > 0) arena.SetAllnext(list.b[n - 1 - i], list.b[n - i]);
  }
  arena.MapInto(list.mem);
  MapVars(list.mem, list.addrs.mbuckets, list.b[0], 6 << 1);
}

// A list of 40,000 buckets is checked and loaded on two threads: counters
// and futures change in both halves (futures that need storage of their own
// too), and a header changed in the second half refuses the list.
TEST(RefreshHeapSnapshot, ALargeListIsCheckedOnTwoThreadsAsOnOne) {
  constexpr uint64_t kBuckets = kLargeListBuckets, kCycle = 32;
  LargeList list;
  MakeLargeList(list);
  TestMemory& mem = list.mem;
  const HeapAddresses& addrs = list.addrs;
  const std::vector<uint64_t>& b = list.b;
  HeapSnapshot s = ReadHeapSnapshot(mem, addrs, Go126());
  ASSERT_TRUE(RefreshHeapSnapshot(mem, addrs, Go126(), {}, s));
  auto record = [&](size_t i) { return b[i] + kBucketHeaderSize + 16; };
  for (size_t i : {5ul, 39000ul}) mem.PutU64(record(i), 1000 + i);             // active allocs
  for (size_t i : {10ul, 30000ul}) mem.PutU64(record(i) + 2 * kCycle, 7 + i);  // future[1] allocs
  ASSERT_TRUE(RefreshHeapSnapshot(mem, addrs, Go126(), {}, s));
  ASSERT_EQ(s.buckets.size(), kBuckets);
  for (size_t i : {5ul, 39000ul}) EXPECT_EQ(s.buckets[i].active.allocs, 1000 + i) << i;
  for (size_t i : {10ul, 30000ul}) {
    EXPECT_EQ(s.buckets[i].Future(1).allocs, 7 + i) << i;
    EXPECT_EQ(s.buckets[i].active.allocs, kBuckets - i) << i;
  }
  EXPECT_EQ(s.buckets[20000].active.allocs, kBuckets - 20000);
  EXPECT_EQ(s.buckets[20000].Future(1).allocs, 0u);
  mem.PutU64(b[35000] + kBucketHashOffset, 0x4321);
  EXPECT_FALSE(RefreshHeapSnapshot(mem, addrs, Go126(), {}, s));
}

// The revalidation reads a batch at a time (issue 42): refreshing 40,000
// buckets (7.7 MB of bucket memory) takes a buffer of two batches, not the
// bucket memory, and counters changed anywhere, in buckets planned first
// or added since (their ranges after the others'), are read.
TEST(RefreshHeapSnapshot, TheReadBufferIsABatchOrTwoWhateverTheList) {
  constexpr uint64_t kBuckets = kLargeListBuckets;
  LargeList list;
  MakeLargeList(list);
  TestMemory& mem = list.mem;
  const HeapAddresses& addrs = list.addrs;
  const std::vector<uint64_t>& b = list.b;
  HeapSnapshot s = ReadHeapSnapshot(mem, addrs, Go126());
  ASSERT_TRUE(RefreshHeapSnapshot(mem, addrs, Go126(), {}, s));
  EXPECT_GT(s.plan.size, uint64_t{7} << 20);
  EXPECT_LE(s.scratch.capacity(), size_t{3} << 19);  // 1.5 MiB
  // Buckets added at the head, in memory of their own.
  BucketArena more(0x4000000);
  const uint64_t added = more.Add(64, {0x600000}, {3, 0, 192, 0});
  more.SetAllnext(added, b[0]);
  more.MapInto(mem);
  MapVars(mem, addrs.mbuckets, added, 6 << 1);
  mem.PutU64(added + kBucketHeaderSize + 8, 4);  // active allocs (a one-frame stack)
  for (size_t i : {0ul, 20000ul, 39999ul}) mem.PutU64(b[i] + kBucketHeaderSize + 16, 500 + i);
  ASSERT_TRUE(RefreshHeapSnapshot(mem, addrs, Go126(), {}, s));
  ASSERT_EQ(s.buckets.size(), kBuckets + 1);
  EXPECT_EQ(s.buckets[0].addr, added);
  EXPECT_EQ(s.buckets[0].active.allocs, 4u);
  for (size_t i : {0ul, 20000ul, 39999ul}) EXPECT_EQ(s.buckets[i + 1].active.allocs, 500 + i) << i;
  EXPECT_EQ(s.buckets[10001].active.allocs, kBuckets - 10000);
  EXPECT_LE(s.scratch.capacity(), size_t{3} << 19);
  // A header changed in a middle batch refuses the list.
  mem.PutU64(b[12345] + kBucketHashOffset, 0x4321);
  EXPECT_FALSE(RefreshHeapSnapshot(mem, addrs, Go126(), {}, s));
}

TEST(RefreshHeapSnapshot, AnotherListUnderTheSameAddressesIsRefused) {
  GrowingImage img;
  HeapSnapshot s = ReadHeapSnapshot(img.mem, img.addrs, Go126());
  // Another process image: the same addresses hold another stack.
  img.mem.PutU64(img.b2 + kBucketHeaderSize + 8, 0x409000);
  EXPECT_FALSE(RefreshHeapSnapshot(img.mem, img.addrs, Go126(), {}, s));
}

TEST(RefreshHeapSnapshot, AHeadThatDoesNotLeadToTheOldOneIsRefused) {
  GrowingImage img;
  HeapSnapshot s = ReadHeapSnapshot(img.mem, img.addrs, Go126());
  BucketArena other(0x20000);
  const uint64_t lone = other.Add(64, {0x401000}, {1, 0, 64, 0});
  other.MapInto(img.mem);
  img.SetVars(lone, 6 << 1);
  EXPECT_FALSE(RefreshHeapSnapshot(img.mem, img.addrs, Go126(), {}, s));
}

TEST(RefreshHeapSnapshot, AGcPublishingMidReadIsSettled) {
  GrowingImage img;
  HeapSnapshot s = ReadHeapSnapshot(img.mem, img.addrs, Go126());
  // The GC publishes the next cycle (and new counts) once the refresh has
  // read the buckets; the refresh must read the counters again.
  bool read = false, published = false;
  img.mem.SetReadHook([&](uint64_t addr, uint64_t len) {
    if (read && !published) {
      published = true;
      img.SetAllocs(img.b1, 1, 9);
      img.mem.PutU64(GrowingImage::kVars + 16, 7 << 1);
    }
    read |= Touches(addr, len, img.b1, img.arena.End());
  });
  ASSERT_TRUE(RefreshHeapSnapshot(img.mem, img.addrs, Go126(), {}, s));
  ASSERT_TRUE(published);
  EXPECT_EQ(s.walks, 2);
  EXPECT_TRUE(s.consistent);
  EXPECT_EQ(s.cycle, 7u);
  EXPECT_EQ(s.buckets[0].active.allocs, 9u);
}

// What a streamed refresh handed its caller: the depth of each stack, and
// -1 where a walk of new buckets began.
struct Handed {
  std::vector<int64_t> calls;
  SnapshotStream Stream() {
    return {.start = [this](int64_t) { calls.push_back(-1); },
            .bucket =
                [this](const Bucket& b, AheadNote) {
                  calls.push_back(static_cast<int64_t>(b.stack.size()));
                  return 0u;
                },
            .keep_ends = true};
  }
};

// GrowingImage's list as a capture state keeps it: streamed, no stacks.
HeapSnapshot StreamedState(GrowingImage& img) {
  Handed first;
  const SnapshotStream stream = first.Stream();
  return StreamHeapSnapshot(img.mem, img.addrs, Go126(), {}, stream);
}

// Prepends a bucket of `stack` to the list at `next` in a mapping of its own.
uint64_t Prepend(GrowingImage& img, uint64_t base, uint64_t next,
                 const std::vector<uint64_t>& stack) {
  BucketArena more(base);
  const uint64_t b = more.Add(256, stack, {1, 0, 256, 0});
  more.SetAllnext(b, next);
  more.MapInto(img.mem);
  return b;
}

TEST(RefreshStreamedSnapshot, KeepsNoStacksAndStreamsOnlyTheNewBuckets) {
  GrowingImage img;
  HeapSnapshot s = StreamedState(img);
  ASSERT_EQ(s.ends.size(), 2u);
  EXPECT_EQ(s.ends[1].words, 2u);
  EXPECT_EQ(s.ends[1].last, 0x402000u);
  const uint64_t b0 = Prepend(img, 0x20000, img.b1, {0x404000, 0x405000, 0x406000});
  img.SetVars(b0, 6 << 1);
  img.SetAllocs(img.b2, 2, 40);
  Handed handed;
  const SnapshotStream stream = handed.Stream();
  ASSERT_EQ(RefreshStreamedSnapshot(img.mem, img.addrs, Go126(), {}, &stream, s),
            StreamedRefresh::kRefreshed);
  EXPECT_EQ(handed.calls, (std::vector<int64_t>{-1, 3}));
  ASSERT_EQ(s.buckets.size(), 3u);
  EXPECT_EQ(s.new_buckets, 1u);
  EXPECT_EQ(s.buckets[0].addr, b0);
  EXPECT_EQ(s.ends[0].words, 3u);
  EXPECT_EQ(s.buckets[2].active.allocs, 40u);
  for (const Bucket& b : s.buckets) EXPECT_TRUE(b.stack.empty());
  // Nothing new: nothing streamed, the counters read again.
  img.SetAllocs(img.b1, 1, 8);
  handed.calls.clear();
  ASSERT_EQ(RefreshStreamedSnapshot(img.mem, img.addrs, Go126(), {}, &stream, s),
            StreamedRefresh::kRefreshed);
  EXPECT_TRUE(handed.calls.empty());
  EXPECT_EQ(s.new_buckets, 0u);
  EXPECT_EQ(s.buckets[1].active.allocs, 8u);
}

TEST(RefreshStreamedSnapshot, AStackThatNoLongerEndsAsRememberedIsNotTheList) {
  GrowingImage img;
  HeapSnapshot s = StreamedState(img);
  // Same header, another last PC in b2's stack (read along with the header).
  img.mem.PutU64(img.b2 + kBucketHeaderSize + 8, 0x409000);
  EXPECT_EQ(RefreshStreamedSnapshot(img.mem, img.addrs, Go126(), {}, nullptr, s),
            StreamedRefresh::kNotTheList);
}

TEST(RefreshStreamedSnapshot, WithoutAStreamAddedBucketsAreRefused) {
  GrowingImage img;
  HeapSnapshot s = StreamedState(img);
  ASSERT_EQ(RefreshStreamedSnapshot(img.mem, img.addrs, Go126(), {}, nullptr, s),
            StreamedRefresh::kRefreshed);
  img.SetVars(Prepend(img, 0x20000, img.b1, {0x404000}), 6 << 1);
  EXPECT_EQ(RefreshStreamedSnapshot(img.mem, img.addrs, Go126(), {}, nullptr, s),
            StreamedRefresh::kBucketsAdded);
}

TEST(RefreshStreamedSnapshot, BucketsAddedWhileAGcPublishesGoFirst) {
  GrowingImage img;
  HeapSnapshot s = StreamedState(img);
  const uint64_t b0 = Prepend(img, 0x20000, img.b1, {0x404000, 0x405000, 0x406000});
  img.SetVars(b0, 6 << 1);
  // Once the refresh reads the remembered buckets, a GC publishes and one
  // more bucket is prepended: it is streamed by a second walk, and goes first.
  uint64_t bm = 0;
  img.mem.SetReadHook([&](uint64_t addr, uint64_t len) {
    if (bm == 0 && Touches(addr, len, img.b1, img.arena.End())) {
      bm = Prepend(img, 0x30000, b0, {0x407000});
      img.SetVars(bm, 7 << 1);
    }
  });
  Handed handed;
  const SnapshotStream stream = handed.Stream();
  ASSERT_EQ(RefreshStreamedSnapshot(img.mem, img.addrs, Go126(), {}, &stream, s),
            StreamedRefresh::kRefreshed);
  ASSERT_NE(bm, 0u);
  EXPECT_EQ(handed.calls, (std::vector<int64_t>{-1, 3, -1, 1}));
  EXPECT_EQ(s.walks, 2);
  EXPECT_EQ(s.cycle, 7u);
  ASSERT_EQ(s.buckets.size(), 4u);
  EXPECT_EQ(s.new_buckets, 2u);
  EXPECT_EQ(s.buckets[0].addr, bm);
  EXPECT_EQ(s.buckets[1].addr, b0);
  EXPECT_EQ(s.ends[0].first, 0x407000u);
  EXPECT_EQ(s.record_at[1], b0 + kBucketHeaderSize + 24);
}

}  // namespace
}  // namespace goheap2pprof

namespace goheap2pprof {
namespace {

// Two buckets of 600-frame stacks (4.8 KB each, more than the refresh reads
// along) in one arena, or each in its own mapping with 2 KiB unmapped
// between them.
struct LongStackImage {
  static constexpr uint64_t kVars = 0x5000;
  TestMemory mem;
  HeapAddresses addrs{kVars, kVars + 8, kVars + 16};
  uint64_t b1 = 0, b2 = 0;
  static constexpr uint64_t kWords = 600;
  explicit LongStackImage(bool apart) {
    std::vector<uint64_t> s1(kWords), s2(kWords);
    for (uint64_t i = 0; i < kWords; ++i) {
      s1[i] = 0x401000 + 16 * i;
      s2[i] = 0x501000 + 16 * i;
    }
    BucketArena first(0x10000);
    b2 = first.Add(64, s2, {4, 1, 256, 64});
    if (apart) {
      BucketArena second(first.End() + 0x800);  // 2 KiB unmapped: within the read-along gap
      b1 = second.Add(128, s1, {2, 0, 256, 0});
      second.SetAllnext(b1, b2);
      second.MapInto(mem);
    } else {
      b1 = first.Add(128, s1, {2, 0, 256, 0});
      first.SetAllnext(b1, b2);
    }
    first.MapInto(mem);
    MapVars(mem, kVars, b1, 6 << 1);
  }
  void SetAllocs(uint64_t addr, uint64_t allocs) {
    mem.PutU64(addr + kBucketHeaderSize + 8 * kWords, allocs);
  }
};

TEST(RefreshHeapSnapshot, LongStacksAreNotReadAgain) {
  LongStackImage img(/*apart=*/false);
  HeapSnapshot s = ReadHeapSnapshot(img.mem, img.addrs, Go126());
  ASSERT_EQ(s.buckets.size(), 2u);
  img.SetAllocs(img.b2, 40);
  const uint64_t before = img.mem.stats().bytes_read;
  ASSERT_TRUE(RefreshHeapSnapshot(img.mem, img.addrs, Go126(), {}, s));
  EXPECT_EQ(s.buckets[1].active.allocs, 40u);
  EXPECT_EQ(s.buckets[0].active.allocs, 2u);
  // Headers and records, not the 9600 bytes of stacks.
  EXPECT_LT(img.mem.stats().bytes_read - before, 2000u);
  // The same plan serves the next refresh.
  img.SetAllocs(img.b1, 7);
  ASSERT_TRUE(RefreshHeapSnapshot(img.mem, img.addrs, Go126(), {}, s));
  EXPECT_EQ(s.buckets[0].active.allocs, 7u);
  // A header that changed (here the runtime's hash of stack and size) is
  // not the remembered bucket.
  img.mem.PutU64(img.b2 + kBucketHashOffset, 0x9999);
  EXPECT_FALSE(RefreshHeapSnapshot(img.mem, img.addrs, Go126(), {}, s));
}

TEST(RefreshHeapSnapshot, AnUnmappedGapBetweenBucketsIsNotReadAlong) {
  LongStackImage img(/*apart=*/true);
  HeapSnapshot s = ReadHeapSnapshot(img.mem, img.addrs, Go126());
  ASSERT_EQ(s.buckets.size(), 2u);
  img.SetAllocs(img.b2, 41);
  img.SetAllocs(img.b1, 9);
  ASSERT_TRUE(RefreshHeapSnapshot(img.mem, img.addrs, Go126(), {}, s));
  EXPECT_EQ(s.buckets[1].active.allocs, 41u);
  EXPECT_EQ(s.buckets[0].active.allocs, 9u);
  ASSERT_TRUE(RefreshHeapSnapshot(img.mem, img.addrs, Go126(), {}, s));  // the gapless plan kept
}

}  // namespace
}  // namespace goheap2pprof

#include "heap/stack_store.h"

namespace goheap2pprof {
namespace {

std::vector<uint8_t> StackBytes(const std::vector<uint64_t>& words) {
  std::vector<uint8_t> out(8 * words.size() + 1);
  std::memcpy(out.data() + 1, words.data(), 8 * words.size());  // unaligned on purpose
  return out;
}

bool Holds(std::span<const uint64_t> s, const std::vector<uint64_t>& want) {
  return std::equal(s.begin(), s.end(), want.begin(), want.end());
}

uint64_t SameHashForAll(const uint8_t*, size_t) { return 42; }

TEST(StackStore, IdenticalStacksShareOneCopy) {
  StackStore store;
  const std::vector<uint64_t> a = {1, 2, 3}, b = {1, 2, 4}, c = {1, 2};
  const std::vector<uint8_t> ab = StackBytes(a), bb = StackBytes(b), cb = StackBytes(c);
  std::span<const uint64_t> a1 = store.Intern(ab.data() + 1, 3);
  std::span<const uint64_t> b1 = store.Intern(bb.data() + 1, 3);
  std::span<const uint64_t> c1 = store.Intern(cb.data() + 1, 2);  // a prefix of a is its own
  std::span<const uint64_t> a2 = store.Intern(ab.data() + 1, 3);
  EXPECT_EQ(a1.data(), a2.data());
  EXPECT_NE(a1.data(), b1.data());
  EXPECT_NE(a1.data(), c1.data());
  EXPECT_TRUE(Holds(a2, a));
  EXPECT_TRUE(Holds(b1, b));
  EXPECT_TRUE(Holds(c1, c));
  EXPECT_EQ(store.stacks(), 3u);
  EXPECT_EQ(store.words(), 8u);
  EXPECT_TRUE(store.Intern(ab.data(), 0).empty());
}

TEST(StackStore, DifferentStacksOfTheSameHashAreNotShared) {
  StackStore store(&SameHashForAll);
  std::vector<std::vector<uint64_t>> stacks;
  std::vector<std::span<const uint64_t>> first;
  for (uint64_t i = 0; i < 5; ++i) {
    stacks.push_back({0x400000 + i, 0x500000});
    first.push_back(store.Intern(StackBytes(stacks.back()).data() + 1, 2));
  }
  for (uint64_t i = 0; i < 5; ++i) {
    std::span<const uint64_t> again = store.Intern(StackBytes(stacks[i]).data() + 1, 2);
    EXPECT_TRUE(Holds(first[i], stacks[i]));
    EXPECT_EQ(again.data(), first[i].data()) << i;  // found among the colliding ones
  }
  EXPECT_EQ(store.stacks(), 5u);
}

TEST(StackStore, WorkIsBoundedWhenEveryHashCollides) {
  // 2000 distinct stacks of one hash: each Intern compares only a few
  // candidates, so later ones are stored without being shared, but every
  // returned stack holds exactly its words.
  StackStore store(&SameHashForAll);
  std::vector<std::span<const uint64_t>> got;
  for (int round = 0; round < 2; ++round) {
    for (uint64_t i = 0; i < 2000; ++i) {
      const std::vector<uint64_t> s = {i, i * 3, 7};
      std::span<const uint64_t> r = store.Intern(StackBytes(s).data() + 1, 3);
      ASSERT_TRUE(Holds(r, s)) << i;
      got.push_back(r);
    }
  }
  EXPECT_GE(store.stacks(), 2000u);
  EXPECT_LT(store.stacks(), 4000u);  // the first ones were found again
  EXPECT_EQ(got[0].data(), got[2000].data());
}

TEST(StackStore, StacksStayInPlaceAsTheStoreGrowsAndMoves) {
  StackStore store;
  std::vector<std::span<const uint64_t>> got;
  std::vector<std::vector<uint64_t>> want;
  for (uint64_t i = 0; i < 3000; ++i) {
    want.push_back(std::vector<uint64_t>(1 + i % 1100, i));  // some longer than a first chunk
    got.push_back(store.Intern(StackBytes(want.back()).data() + 1, want.back().size()));
  }
  StackStore moved = std::move(store);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(Holds(got[i], want[i])) << i;
  EXPECT_EQ(moved.stacks(), 3000u);
  EXPECT_GE(moved.ApproximateBytes(), 8 * moved.words());
}

}  // namespace
}  // namespace goheap2pprof

namespace goheap2pprof {
namespace {

// A list of n buckets with stacks of 1 to 40 words (bucket i's words
// i * 1000 + j), futures on every seventh, and one bucket of `deep_words`
// at index n / 2: the newest first from the returned head.
uint64_t ListOf(size_t n, size_t deep_words, BucketArena& arena) {
  uint64_t next = 0;
  for (size_t i = 0; i < n; ++i) {
    std::vector<uint64_t> stack(i == n / 2 ? deep_words : i % 40 + 1);
    for (size_t j = 0; j < stack.size(); ++j) stack[j] = i * 1000 + j + 1;
    std::array<MemRecordCycle, 3> future = {};
    if (i % 7 == 0) future[1] = {i, 1, 16 * i, 16};
    const uint64_t b = arena.Add(16, stack, {i + 1, 0, 16 * (i + 1), 0}, future);
    arena.SetAllnext(b, next);
    next = b;
  }
  return next;
}

// What a sink saw of each bucket.
struct Seen {
  uint64_t addr = 0;
  std::vector<uint64_t> stack;
  uint64_t active_allocs = 0;
  uint64_t future_allocs = 0;
  bool operator==(const Seen&) const = default;
};
Seen SeenOf(const Bucket& b) {
  return {b.addr, std::vector<uint64_t>(b.stack.begin(), b.stack.end()), b.active.allocs,
          b.Future(1).allocs};
}

// Over several batches (by count and, with the deep bucket, by words), the
// build's thread gets what StreamBuckets gives, in its order, each bucket
// after the walk's thread had it and with the note it gave.
TEST(StreamBucketsPipelined, HandsOverWhatStreamBucketsGivesInItsOrder) {
  BucketArena arena(0x100000);
  const uint64_t head = ListOf(3000, 70000, arena);
  TestMemory mem;
  arena.MapInto(mem);
  const WalkLimits limits{.max_stack_words = 70000};
  std::vector<Seen> plain;
  StreamBuckets(mem, head, limits, [&](const Bucket& b) { plain.push_back(SeenOf(b)); });
  std::vector<Seen> ahead, built;
  std::atomic<size_t> ahead_count = 0;
  std::thread::id ahead_thread, build_thread;
  size_t built_before_ahead = 0, notes_astray = 0;
  // Each bucket's note: its place in the walk, from the end.
  const auto note_of = [](size_t i) { return static_cast<AheadNote>(5000 - i); };
  const WalkEnd end = StreamBucketsPipelined(
      mem, head, limits,
      [&](const Bucket& b) {
        ahead_thread = std::this_thread::get_id();
        ahead.push_back(SeenOf(b));
        return note_of(ahead_count++);
      },
      [&](const Bucket& b, AheadNote note) {
        build_thread = std::this_thread::get_id();
        built_before_ahead += ahead_count <= built.size() ? 1 : 0;
        notes_astray += note != note_of(built.size()) ? 1 : 0;
        built.push_back(SeenOf(b));
      });
  EXPECT_EQ(end.buckets, 3000u);
  EXPECT_EQ(plain.size(), 3000u);
  EXPECT_EQ(ahead, plain);
  EXPECT_EQ(built, plain);
  EXPECT_EQ(built_before_ahead, 0u);
  EXPECT_EQ(notes_astray, 0u);
  EXPECT_EQ(build_thread, std::this_thread::get_id());
  if (CpusAvailable() >= 2) {
    EXPECT_NE(ahead_thread, build_thread);
  }
}

// A malformed bucket ends the walk with its own error, after the build got
// every bucket before it.
TEST(StreamBucketsPipelined, TheWalksErrorComesAfterEveryBucketBeforeIt) {
  BucketArena arena(0x100000);
  uint64_t next = ListOf(1500, 1, arena);
  const uint64_t bad = arena.Add(16, {1}, {}, {}, /*typ=*/2);
  arena.SetAllnext(bad, next);
  next = bad;
  for (int i = 0; i < 100; ++i) {
    const uint64_t b = arena.Add(16, {2}, {});
    arena.SetAllnext(b, next);
    next = b;
  }
  TestMemory mem;
  arena.MapInto(mem);
  size_t built = 0;
  try {
    StreamBucketsPipelined(
        mem, next, {.max_stack_words = 64}, [](const Bucket&) { return AheadNote{0}; },
        [&](const Bucket&, AheadNote) { ++built; });
    ADD_FAILURE() << "a malformed list was walked";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kMalformed) << e.what();
  }
  EXPECT_EQ(built, 100u);
}

// The build's error is the one thrown, and it stops the walk within the
// batches already handed over.
TEST(StreamBucketsPipelined, TheBuildsErrorStopsTheWalk) {
  BucketArena arena(0x100000);
  const uint64_t head = ListOf(40000, 1, arena);
  TestMemory mem;
  arena.MapInto(mem);
  std::atomic<size_t> walked = 0;
  size_t built = 0;
  try {
    StreamBucketsPipelined(
        mem, head, {.max_stack_words = 64},
        [&](const Bucket&) {
          ++walked;
          return AheadNote{0};
        },
        [&](const Bucket&, AheadNote) {
          if (++built == 10) throw Error(ErrorKind::kUnsupported, "the build's own limit");
        });
    ADD_FAILURE() << "the build's error was lost";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported) << e.what();
    EXPECT_STREQ(e.what(), "the build's own limit");
  }
  EXPECT_EQ(built, 10u);
  EXPECT_LT(walked.load(), 8000u);
}

}  // namespace
}  // namespace goheap2pprof
