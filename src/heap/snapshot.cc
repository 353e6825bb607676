#include "heap/snapshot.h"

#include <algorithm>
#include <limits>

#include "base/error.h"
#include "base/huge_pages.h"
#include "heap/pipelined_walk.h"

namespace goheap2pprof {

uint32_t DecodeCycle(uint32_t word, CycleEncoding encoding) {
  // 1.19+: value = cycle << 1 | flushed. Bit 0 flips when mProf_Flush runs,
  // which also changes what a reader sees, so retries compare the raw word.
  return encoding == CycleEncoding::kMProfCycle ? word >> 1 : word;
}

namespace {

// mProf_Flush sets the "flushed" bit first and then, for every bucket, adds
// future[C%3] into active and zeroes it; nothing writes future[C%3] again
// until the next cycle. So with the bit set, a non-zero future[C%3] means the
// flush was still running while we read: a bucket caught between its add and
// its zeroing would be counted twice.
bool FlushInProgress(uint32_t cycle_word, const RuntimeTraits& traits, const HeapSnapshot& snap) {
  if (traits.cycle_encoding != CycleEncoding::kMProfCycle || (cycle_word & 1) == 0) return false;
  const uint32_t index = DecodeCycle(cycle_word, traits.cycle_encoding) % 3;
  auto pending = [index](std::span<const Bucket> buckets) {
    for (const Bucket& b : buckets) {
      const MemRecordCycle f = b.Future(index);
      if (f.allocs != 0 || f.frees != 0) return true;
    }
    return false;
  };
  // The packed buckets' answer was kept as they were packed: decoding them
  // all again took 5-6 ms of a 100k-bucket cold capture's walk, alone on
  // one thread (bench/README.md).
  return snap.packed.AnyFutureCounts(index) || pending(snap.buckets);
}

}  // namespace

namespace {

WalkLimits LimitsFor(const RuntimeTraits& traits, const SnapshotLimits& limits) {
  return WalkLimits{.max_stack_words = traits.max_stack_words,
                    .max_buckets = limits.max_buckets,
                    .max_total_stack_words = limits.max_total_stack_words,
                    .record_layout = traits.record_layout};
}

// A streamed walk keeps no stack, so its stack words in total are not
// limited: what is kept of them, the profile's location ids, is bounded
// where it is kept (LocationTables::max_bytes). Each bucket's words are.
WalkLimits StreamedLimitsFor(const RuntimeTraits& traits, const SnapshotLimits& limits) {
  WalkLimits walk = LimitsFor(traits, limits);
  walk.max_total_stack_words = std::numeric_limits<uint64_t>::max();
  return walk;
}

// Walks the buckets created since snap.head (new ones are only ever
// prepended) and puts them in front. False if the list from the new head
// does not lead to snap.head: then it is not the list snap holds.
bool TakeNewBuckets(MemoryReader& mem, const RuntimeTraits& traits, const SnapshotLimits& limits,
                    uint64_t new_head, HeapSnapshot& snap) {
  if (new_head == snap.head) return true;
  WalkLimits prefix_limits = LimitsFor(traits, limits);
  prefix_limits.stop_at = snap.head;
  prefix_limits.max_buckets =
      limits.max_buckets - std::min<uint64_t>(limits.max_buckets, snap.buckets.size());
  // (A refused list leaves its stacks in snap.stacks: the caller then
  // starts afresh, or fails, and drops snap.)
  WalkResult fresh = WalkBuckets(mem, new_head, prefix_limits, snap.stacks);
  if (!fresh.reached_stop && snap.head != 0) return false;
  snap.buckets.insert(snap.buckets.begin(), fresh.buckets.begin(), fresh.buckets.end());
  snap.head = new_head;
  snap.new_buckets += fresh.buckets.size();
  return true;
}

// After a read of the list: whether it must be read again because the
// profile cycle changed since `before` (or a flush was under way), within
// the bound on walks; if so, counts the walk and reads `before` and the
// head anew. Past the bound the snapshot is marked inconsistent.
bool ReadAgain(MemoryReader& mem, const HeapAddresses& addrs, const RuntimeTraits& traits,
               const SnapshotLimits& limits, uint32_t& before, uint64_t& head, HeapSnapshot& snap) {
  const uint32_t after = mem.ReadU32(addrs.cycle, traits.variables.cycle_symbol);
  if (after == before && !FlushInProgress(before, traits, snap)) return false;
  if (snap.walks >= limits.max_walks) {
    snap.consistent = false;
    return false;
  }
  ++snap.walks;
  before = mem.ReadU32(addrs.cycle, traits.variables.cycle_symbol);
  head = mem.ReadU64(addrs.mbuckets, "runtime.mbuckets");
  return true;
}

// Repeats reading the counters until the profile cycle stayed the same over
// a whole read (before: the cycle word read before the last read).
void Settle(MemoryReader& mem, const HeapAddresses& addrs, const RuntimeTraits& traits,
            const SnapshotLimits& limits, uint32_t before, HeapSnapshot& snap) {
  uint64_t new_head = 0;
  // A GC published (or was publishing) a cycle meanwhile. Buckets never
  // change but their counters, and new ones are only prepended: take the
  // new ones, then re-read every counter between two reads of the cycle.
  while (ReadAgain(mem, addrs, traits, limits, before, new_head, snap)) {
    if (!TakeNewBuckets(mem, traits, limits, new_head, snap)) {
      throw Error(ErrorKind::kMalformed, "heap bucket list from ", Hex(new_head),
                  " does not lead to the earlier head ", Hex(snap.head));
    }
    RereadRecords(mem, snap.buckets, traits.record_layout, snap.stacks);
  }
  snap.cycle = DecodeCycle(before, traits.cycle_encoding);
}

}  // namespace

HeapSnapshot ReadHeapSnapshot(MemoryReader& mem, const HeapAddresses& addrs,
                              const RuntimeTraits& traits, const SnapshotLimits& limits) {
  HeapSnapshot snap;
  snap.rate = static_cast<int64_t>(mem.ReadU64(addrs.mem_profile_rate, "runtime.MemProfileRate"));
  WalkLimits walk_limits = LimitsFor(traits, limits);
  walk_limits.reserve_buckets = limits.reserve_buckets;
  // The first walk reads everything, in large blocks.
  ++snap.walks;
  uint32_t before = mem.ReadU32(addrs.cycle, traits.variables.cycle_symbol);
  snap.head = mem.ReadU64(addrs.mbuckets, "runtime.mbuckets");
  WalkResult walk;
  if (limits.cache_ranges.empty()) {
    walk = WalkBuckets(mem, snap.head, walk_limits, snap.stacks);
  } else {
    BlockCacheReader cached(mem, limits.cache_ranges, limits.cache_block_size, limits.cache_blocks);
    walk = WalkBuckets(cached, snap.head, walk_limits, snap.stacks);
  }
  snap.buckets = std::move(walk.buckets);
  snap.new_buckets = snap.buckets.size();
  Settle(mem, addrs, traits, limits, before, snap);
  return snap;
}

namespace {

// A state's bucket (SnapshotStream::keep_ends): its counters (futures in
// store), record address and stack ends, each in its own vector.
void KeepUnpacked(const Bucket& b, uint64_t record_at, StackStore& store, HeapSnapshot& into) {
  GrowWithHugePages(into.buckets, 1);
  into.buckets.push_back(KeepStreamed(b, {}, store));
  GrowWithHugePages(into.record_at, 1);
  into.record_at.push_back(record_at);
  GrowWithHugePages(into.ends, 1);
  into.ends.push_back(b.stack.empty() ? StackEnds{}
                                      : StackEnds{b.stack.size(), b.stack.front(), b.stack.back()});
}

// One walk of StreamHeapSnapshot (or of the buckets a streamed refresh
// takes: walk_limits.stop_at), from head: each bucket streamed on, its
// counters packed into `into` with the stream's tag, or when
// stream.keep_ends, kept unpacked (KeepUnpacked, futures in `store`).
WalkEnd StreamOneWalk(MemoryReader& mem, const SnapshotLimits& limits,
                      const WalkLimits& walk_limits, uint64_t head, const SnapshotStream& stream,
                      StackStore& store, HeapSnapshot& into) {
  auto keep = [&](const Bucket& b, AheadNote note) {
    const uint32_t tag = stream.bucket(b, note);
    const uint64_t record_at = b.addr + kBucketHeaderSize + 8 * b.stack.size();
    if (stream.keep_ends) {
      KeepUnpacked(b, record_at, store, into);
    } else {
      into.packed.Append(b, record_at, tag);
    }
  };
  auto walk = [&](MemoryReader& from) {
    if (!stream.ahead) {
      return StreamBuckets(from, head, walk_limits,
                           [&](const Bucket& b) { keep(b, kNoAheadNote); });
    }
    return StreamBucketsPipelined(from, head, walk_limits, stream.ahead, keep);
  };
  if (limits.cache_ranges.empty()) return walk(mem);
  BlockCacheReader cached(mem, limits.cache_ranges, limits.cache_block_size, limits.cache_blocks);
  return walk(cached);
}

}  // namespace

HeapSnapshot StreamHeapSnapshot(MemoryReader& mem, const HeapAddresses& addrs,
                                const RuntimeTraits& traits, const SnapshotLimits& limits,
                                const SnapshotStream& stream) {
  HeapSnapshot snap;
  snap.rate = static_cast<int64_t>(mem.ReadU64(addrs.mem_profile_rate, "runtime.MemProfileRate"));
  snap.walks = 1;
  uint32_t before = mem.ReadU32(addrs.cycle, traits.variables.cycle_symbol);
  uint64_t head = mem.ReadU64(addrs.mbuckets, "runtime.mbuckets");
  for (;;) {
    if (head != snap.head || snap.walks == 1) {
      snap.packed.Clear();
      snap.buckets.clear();
      snap.record_at.clear();
      snap.ends.clear();
      snap.stacks = StackStore();
      snap.head = head;
      stream.start(snap.rate);
      StreamOneWalk(mem, limits, StreamedLimitsFor(traits, limits), head, stream, snap.stacks,
                    snap);
    } else if (stream.keep_ends) {
      RereadRecordsAt(mem, snap.buckets, snap.record_at, traits.record_layout, snap.stacks);
    } else {
      RereadPackedRecords(mem, snap.packed, traits.record_layout);
    }
    if (!ReadAgain(mem, addrs, traits, limits, before, head, snap)) break;
  }
  snap.new_buckets = snap.bucket_count();
  snap.cycle = DecodeCycle(before, traits.cycle_encoding);
  return snap;
}

bool RefreshHeapSnapshot(MemoryReader& mem, const HeapAddresses& addrs, const RuntimeTraits& traits,
                         const SnapshotLimits& limits, HeapSnapshot& snap) {
  snap.rate = static_cast<int64_t>(mem.ReadU64(addrs.mem_profile_rate, "runtime.MemProfileRate"));
  snap.walks = 1;
  snap.consistent = true;
  snap.new_buckets = 0;
  uint32_t before = mem.ReadU32(addrs.cycle, traits.variables.cycle_symbol);
  const uint64_t new_head = mem.ReadU64(addrs.mbuckets, "runtime.mbuckets");
  const size_t known = snap.buckets.size();
  if (!TakeNewBuckets(mem, traits, limits, new_head, snap)) return false;
  // The remembered buckets are trusted only if each still has the header it
  // had; their counters come with the same read.
  std::span<Bucket> old(snap.buckets.data() + (snap.buckets.size() - known), known);
  if (!RevalidateBuckets(mem, old, traits.record_layout, snap.scratch, snap.plan, snap.stacks)) {
    return false;
  }
  if (snap.new_buckets > 0) {
    // The new ones were read by the walk, but before the old ones' counters.
    RereadRecords(mem, std::span<Bucket>(snap.buckets.data(), snap.new_buckets),
                  traits.record_layout, snap.stacks);
  }
  Settle(mem, addrs, traits, limits, before, snap);
  return true;
}

namespace {

// TakeNewBuckets for a streamed snapshot: the buckets created since
// snap.head streamed (stream.start first) and their counters put in front.
bool TakeNewStreamed(MemoryReader& mem, const RuntimeTraits& traits, const SnapshotLimits& limits,
                     uint64_t new_head, const SnapshotStream& stream, HeapSnapshot& snap) {
  if (new_head == snap.head) return true;
  WalkLimits prefix_limits = StreamedLimitsFor(traits, limits);
  prefix_limits.stop_at = snap.head;
  prefix_limits.max_buckets =
      limits.max_buckets - std::min<uint64_t>(limits.max_buckets, snap.buckets.size());
  HeapSnapshot fresh;
  stream.start(snap.rate);
  const WalkEnd end =
      StreamOneWalk(mem, limits, prefix_limits, new_head, stream, snap.stacks, fresh);
  if (!end.reached_stop && snap.head != 0) return false;
  snap.buckets.insert(snap.buckets.begin(), fresh.buckets.begin(), fresh.buckets.end());
  snap.record_at.insert(snap.record_at.begin(), fresh.record_at.begin(), fresh.record_at.end());
  snap.ends.insert(snap.ends.begin(), fresh.ends.begin(), fresh.ends.end());
  snap.head = new_head;
  snap.new_buckets += fresh.buckets.size();
  return true;
}

// Settle for a streamed snapshot: new buckets streamed, counters re-read
// from where each record is.
StreamedRefresh SettleStreamed(MemoryReader& mem, const HeapAddresses& addrs,
                               const RuntimeTraits& traits, const SnapshotLimits& limits,
                               const SnapshotStream* stream, uint32_t before, HeapSnapshot& snap) {
  uint64_t new_head = 0;
  while (ReadAgain(mem, addrs, traits, limits, before, new_head, snap)) {
    if (new_head != snap.head && stream == nullptr) return StreamedRefresh::kBucketsAdded;
    if (!TakeNewStreamed(mem, traits, limits, new_head, *stream, snap)) {
      throw Error(ErrorKind::kMalformed, "heap bucket list from ", Hex(new_head),
                  " does not lead to the earlier head ", Hex(snap.head));
    }
    RereadRecordsAt(mem, snap.buckets, snap.record_at, traits.record_layout, snap.stacks);
  }
  snap.cycle = DecodeCycle(before, traits.cycle_encoding);
  return StreamedRefresh::kRefreshed;
}

}  // namespace

StreamedRefresh RefreshStreamedSnapshot(MemoryReader& mem, const HeapAddresses& addrs,
                                        const RuntimeTraits& traits, const SnapshotLimits& limits,
                                        const SnapshotStream* stream, HeapSnapshot& snap) {
  if (snap.ends.size() != snap.buckets.size() || snap.record_at.size() != snap.buckets.size() ||
      !snap.packed.empty() || (stream != nullptr && !stream->keep_ends)) {
    throw Error(ErrorKind::kInternal, "refreshing a snapshot that kept no stack ends");
  }
  snap.rate = static_cast<int64_t>(mem.ReadU64(addrs.mem_profile_rate, "runtime.MemProfileRate"));
  snap.walks = 1;
  snap.consistent = true;
  snap.new_buckets = 0;
  const uint32_t before = mem.ReadU32(addrs.cycle, traits.variables.cycle_symbol);
  const uint64_t new_head = mem.ReadU64(addrs.mbuckets, "runtime.mbuckets");
  if (new_head != snap.head && stream == nullptr) return StreamedRefresh::kBucketsAdded;
  const size_t known = snap.buckets.size();
  if (stream != nullptr && !TakeNewStreamed(mem, traits, limits, new_head, *stream, snap)) {
    return StreamedRefresh::kNotTheList;
  }
  // The remembered buckets are trusted only if each still has the header it
  // had; their counters come with the same read.
  const size_t added = snap.buckets.size() - known;
  if (!RevalidateBuckets(mem, std::span<Bucket>(snap.buckets).subspan(added),
                         std::span<const StackEnds>(snap.ends).subspan(added), traits.record_layout,
                         snap.scratch, snap.plan, snap.stacks)) {
    return StreamedRefresh::kNotTheList;
  }
  if (added > 0) {
    // The new ones were read by the walk, but before the old ones' counters.
    RereadRecordsAt(mem, std::span<Bucket>(snap.buckets).first(added),
                    std::span<const uint64_t>(snap.record_at).first(added), traits.record_layout,
                    snap.stacks);
  }
  return SettleStreamed(mem, addrs, traits, limits, stream, before, snap);
}

}  // namespace goheap2pprof
