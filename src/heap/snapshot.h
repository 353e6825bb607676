// A consistent read of the heap profile state: the live MemProfileRate, the
// profile cycle and the bucket list. A GC that publishes a cycle while the
// list is being read (the cycle word changes, or the flushed bit is set while
// some bucket still holds the cycle being flushed) would mix or double-count
// a cycle, so the walk is repeated, a bounded number of times.
//
//   HeapSnapshot s = ReadHeapSnapshot(mem, {mbuckets, rate, cycle}, traits);
//   auto records = EmulateMemProfile(s.buckets, s.cycle);
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "heap/buckets.h"
#include "proc/block_cache_reader.h"
#include "proc/memory_reader.h"
#include "runtime/runtime_traits.h"

namespace goheap2pprof {

// Runtime addresses (load bias applied).
struct HeapAddresses {
  uint64_t mbuckets = 0;
  uint64_t mem_profile_rate = 0;
  uint64_t cycle = 0;
};

struct HeapSnapshot {
  int64_t rate = 0;
  uint32_t cycle = 0;  // the cycle number memProfileInternal uses
  std::vector<Bucket> buckets;
  // Back buckets[i].stack: the first walk's stacks, then those of buckets
  // created before a retry.
  std::vector<std::vector<uint64_t>> stack_arenas;
  // The first walk's block cache, where its buckets' stacks lie (in place).
  std::shared_ptr<const void> stack_blocks;
  // Reads of the list: 1, plus one per retry. A retry re-reads only the
  // counters (and any buckets created since), so it is short and cheap.
  int walks = 0;
  bool consistent = true;  // false if the cycle changed during every walk
};

struct SnapshotLimits {
  int max_walks = 10;  // retries are cheap: they re-read only the counters
  uint64_t max_buckets = 4'000'000;
  // Readable mappings of the target. When set, each walk reads the bucket
  // list through a fresh BlockCacheReader (large block reads); the runtime
  // variables are always read directly, so a changed cycle word is seen.
  std::vector<AddressRange> cache_ranges = {};
  uint64_t cache_block_size = 256 * 1024;
};

HeapSnapshot ReadHeapSnapshot(MemoryReader& mem, const HeapAddresses& addrs,
                              const RuntimeTraits& traits, const SnapshotLimits& limits = {});

// The cycle number from the raw cycle word.
uint32_t DecodeCycle(uint32_t word, CycleEncoding encoding);

}  // namespace goheap2pprof
