#include "heap/snapshot.h"

#include <algorithm>

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
bool FlushInProgress(uint32_t cycle_word, const RuntimeTraits& traits,
                     const std::vector<Bucket>& buckets) {
  if (traits.cycle_encoding != CycleEncoding::kMProfCycle || (cycle_word & 1) == 0) return false;
  const uint32_t index = DecodeCycle(cycle_word, traits.cycle_encoding) % 3;
  for (const Bucket& b : buckets) {
    const MemRecordCycle& f = b.future[index];
    if (f.allocs != 0 || f.frees != 0) return true;
  }
  return false;
}

}  // namespace

HeapSnapshot ReadHeapSnapshot(MemoryReader& mem, const HeapAddresses& addrs,
                              const RuntimeTraits& traits, const SnapshotLimits& limits) {
  HeapSnapshot snap;
  snap.rate = static_cast<int64_t>(mem.ReadU64(addrs.mem_profile_rate, "runtime.MemProfileRate"));
  const WalkLimits walk_limits{.max_stack_words = traits.max_stack_words,
                               .max_buckets = limits.max_buckets,
                               .record_layout = traits.record_layout};
  // The first walk reads everything, in large blocks.
  ++snap.walks;
  uint32_t before = mem.ReadU32(addrs.cycle, traits.variables.cycle_symbol);
  uint64_t head = mem.ReadU64(addrs.mbuckets, "runtime.mbuckets");
  WalkResult walk;
  if (limits.cache_ranges.empty()) {
    walk = WalkBuckets(mem, head, walk_limits);
  } else {
    BlockCacheReader cached(mem, limits.cache_ranges, limits.cache_block_size);
    WalkLimits in_place = walk_limits;
    in_place.stacks_in_place = true;
    walk = WalkBuckets(cached, head, in_place);
    snap.stack_blocks = std::move(cached).KeepBytes();
  }
  snap.buckets = std::move(walk.buckets);
  snap.stack_arenas.push_back(std::move(walk.stack_words));
  for (;;) {
    uint32_t after = mem.ReadU32(addrs.cycle, traits.variables.cycle_symbol);
    if (after == before && !FlushInProgress(before, traits, snap.buckets)) break;
    if (snap.walks >= limits.max_walks) {
      snap.consistent = false;
      break;
    }
    // A GC published (or was publishing) a cycle meanwhile. Buckets never
    // change but their counters, and new ones are only prepended: take the
    // new ones, then re-read every counter between two reads of the cycle.
    ++snap.walks;
    before = mem.ReadU32(addrs.cycle, traits.variables.cycle_symbol);
    uint64_t new_head = mem.ReadU64(addrs.mbuckets, "runtime.mbuckets");
    if (new_head != head) {
      WalkLimits prefix_limits = walk_limits;
      prefix_limits.stop_at = head;
      prefix_limits.max_buckets =
          limits.max_buckets - std::min(limits.max_buckets, snap.buckets.size());
      WalkResult fresh = WalkBuckets(mem, new_head, prefix_limits);
      snap.buckets.insert(snap.buckets.begin(), fresh.buckets.begin(), fresh.buckets.end());
      snap.stack_arenas.push_back(std::move(fresh.stack_words));
      head = new_head;
    }
    RereadRecords(mem, snap.buckets, traits.record_layout);
  }
  snap.cycle = DecodeCycle(before, traits.cycle_encoding);
  return snap;
}

}  // namespace goheap2pprof
