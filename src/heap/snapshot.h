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
#include <functional>
#include <vector>

#include "heap/buckets.h"
#include "heap/packed_buckets.h"
#include "heap/pipelined_walk.h"
#include "heap/stack_store.h"
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
  // Backs buckets[i].stack: every walk's stacks, identical ones shared.
  StackStore stacks;
  // Reads of the list: 1, plus one per retry. A retry re-reads only the
  // counters (and any buckets created since), so it is short and cheap.
  int walks = 0;
  bool consistent = true;  // false if the cycle changed during every walk
  uint64_t head = 0;       // runtime.mbuckets as last read: buckets[0], or 0
  // Buckets this read added: all of them for ReadHeapSnapshot, those created
  // since for RefreshHeapSnapshot (they are buckets[0, new_buckets)).
  size_t new_buckets = 0;
  // StreamHeapSnapshot's buckets of a one-shot capture, instead of
  // `buckets` (which it leaves empty): their counters, packed, with where
  // each memRecord is (for a retry that re-reads only the counters) and the
  // stream's tag.
  PackedBuckets packed;
  // With SnapshotStream::keep_ends (a capture state's), StreamHeapSnapshot
  // keeps `buckets` (counters only: empty stacks, futures in `stacks`) and,
  // one per bucket, where its memRecord is and what RefreshStreamedSnapshot
  // checks of its stack. The header check needs each bucket's hash and
  // links, which the packed form does not keep.
  std::vector<uint64_t> record_at;
  std::vector<StackEnds> ends;
  std::vector<uint8_t> scratch;  // RefreshHeapSnapshot's read buffer, reused
  RevalidationPlan plan;         // and where its buckets are in it

  size_t bucket_count() const { return buckets.size() + packed.size(); }
};

struct SnapshotLimits {
  int max_walks = 10;  // retries are cheap: they re-read only the counters
  uint64_t max_buckets = 4'000'000;
  // WalkLimits::max_total_stack_words of the walks that keep their stacks
  // (ReadHeapSnapshot); a streamed walk keeps none and has no such bound.
  uint64_t max_total_stack_words = WalkLimits{}.max_total_stack_words;
  // Readable mappings of the target. When set, each walk reads the bucket
  // list through a fresh BlockCacheReader (large block reads); the runtime
  // variables are always read directly, so a changed cycle word is seen.
  std::vector<AddressRange> cache_ranges = {};
  uint64_t cache_block_size = 256 * 1024;
  // Blocks the cache holds at once (least recently used evicted): the
  // buckets of a few interleaved persistentalloc chunks are walked in
  // reverse allocation order, so a few blocks keep about one read per block.
  size_t cache_blocks = 16;
  // WalkLimits::reserve_buckets of ReadHeapSnapshot's walk (the caller's
  // upper bound on the bucket count, 0 if it has none).
  uint64_t reserve_buckets = 0;
};

HeapSnapshot ReadHeapSnapshot(MemoryReader& mem, const HeapAddresses& addrs,
                              const RuntimeTraits& traits, const SnapshotLimits& limits = {});

// Brings snap, an earlier snapshot of the same process, up to date for
// another capture: reads the rate and the buckets created since, re-reads
// every remembered bucket's header (it must be unchanged) and counters, then
// settles the cycle as ReadHeapSnapshot does. Costs the headers and counters
// instead of the whole bucket memory. Returns false when the process no
// longer holds the buckets snap remembers (another program under the pid,
// an exec, a list that does not lead to snap.head): the caller then reads
// afresh.
bool RefreshHeapSnapshot(MemoryReader& mem, const HeapAddresses& addrs, const RuntimeTraits& traits,
                         const SnapshotLimits& limits, HeapSnapshot& snap);

// What a streamed read hands its caller: `start` when a walk begins (again,
// after a walk the cycle tore: drop what the last one made), then each
// bucket as it is read, its stack valid only during the call, with what
// `ahead` said of it (kNoAheadNote without `ahead`); what `bucket` returns
// (the run the build gave its stack) is kept as the bucket's tag
// (PackedBuckets::Batch::tags) unless keep_ends.
struct SnapshotStream {
  std::function<void(int64_t rate)> start;
  std::function<uint32_t(const Bucket& b, AheadNote note)> bucket;
  // Keep each bucket's StackEnds and counters unpacked (HeapSnapshot::ends,
  // buckets, record_at; the tags are not kept), so that the snapshot can be
  // refreshed (RefreshStreamedSnapshot) for a later capture.
  bool keep_ends = false;
  // When set, the walk runs on a thread of its own where there is a second
  // CPU (heap/pipelined_walk.h), and `ahead` on that thread for each bucket
  // before `bucket` gets it: work that makes `bucket`'s cheaper without
  // changing what it does (symbolizing the stack), which must be safe
  // beside `bucket`. Its answer is `bucket`'s note.
  AheadStage ahead = nullptr;
};

// ReadHeapSnapshot without keeping the stacks: each walk streams its buckets
// to `stream`, and the snapshot keeps their counters only, packed
// (snap.packed; snap.buckets stays empty), or with keep_ends unpacked with
// their stacks' ends. A walk the profile cycle
// tore is settled as ReadHeapSnapshot does, by re-reading the counters
// only, while the list's head stays where it was; once buckets were added
// (first in the list, which changes the order the stacks are built in), it
// is discarded and walked again whole, into the same (cleared) storage, so
// a retry takes no more memory than the first walk.
HeapSnapshot StreamHeapSnapshot(MemoryReader& mem, const HeapAddresses& addrs,
                                const RuntimeTraits& traits, const SnapshotLimits& limits,
                                const SnapshotStream& stream);

// RefreshHeapSnapshot of a snapshot StreamHeapSnapshot made with keep_ends
// (a capture state's, which keeps counters but no stacks): the buckets
// created since are streamed to `stream` (start called before each walk of
// them: a later walk's buckets, created meanwhile, go before all those
// streamed so far) and their counters put in front; every remembered
// bucket's header and stack ends must read back unchanged. A null stream
// refuses new buckets (the caller cannot add them to what it keeps: it
// walks afresh instead). Anything but kRefreshed leaves snap to be
// dropped.
enum class StreamedRefresh {
  kRefreshed,
  kNotTheList,    // the process no longer holds the remembered buckets
  kBucketsAdded,  // with a null stream: buckets were added
};
StreamedRefresh RefreshStreamedSnapshot(MemoryReader& mem, const HeapAddresses& addrs,
                                        const RuntimeTraits& traits, const SnapshotLimits& limits,
                                        const SnapshotStream* stream, HeapSnapshot& snap);

// The cycle number from the raw cycle word.
uint32_t DecodeCycle(uint32_t word, CycleEncoding encoding);

}  // namespace goheap2pprof
