// Reading the runtime's heap-profile buckets (runtime.mbuckets) out of a
// MemoryReader, emulating runtime.MemProfile on them, and runtime/pprof's
// sampling-rate scaling.
//
//   StackStore stacks;
//   WalkResult w = WalkBuckets(mem, head, {.max_stack_words = 1026}, stacks);
//   std::vector<MemProfileRecord> recs = EmulateMemProfile(w.buckets, cycle);
//   HeapValues v = ScaleHeapSample(recs[0].alloc_objects, recs[0].alloc_bytes, rate);
#pragma once

#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "heap/stack_store.h"
#include "proc/memory_reader.h"
#include "runtime/bucket_layout.h"
#include "runtime/runtime_traits.h"

namespace goheap2pprof {

// runtime.memRecordCycle: four uintptr counters, in this order.
struct MemRecordCycle {
  uint64_t allocs = 0;
  uint64_t frees = 0;
  uint64_t alloc_bytes = 0;
  uint64_t free_bytes = 0;
  void Add(const MemRecordCycle& o) {
    allocs += o.allocs;  // uintptr arithmetic wraps, as in the runtime
    frees += o.frees;
    alloc_bytes += o.alloc_bytes;
    free_bytes += o.free_bytes;
  }
};

// runtime.bucket.typ of heap buckets (the layout is in runtime/bucket_layout.h).
inline constexpr uint64_t kMemProfileBucketType = 1;

struct Bucket {
  uint64_t addr = 0;
  uint64_t allnext = 0;             // the next (older) bucket, as read
  uint64_t hash = 0;                // the runtime's hash of stack and size, as read
  uint64_t size = 0;                // allocation size, part of the bucket key
  std::span<const uint64_t> stack;  // return PCs, leaf first (in the walk's StackStore)
  MemRecordCycle active;            // published
  // The three per-cycle records not yet published (runtime.memRecord.future),
  // as 12 words in the walk's StackStore, or nullptr while all are zero. A
  // quiet process's buckets have nothing unpublished after a GC, and fresh
  // memory is what a cold capture pays for most: inline, the futures were
  // 96 of the 176 bytes a bucket took. Written in place by later reads of the
  // counters (SetFutures), so copies of a bucket share them.
  uint64_t* future_words = nullptr;
  MemRecordCycle Future(uint32_t i) const {
    if (future_words == nullptr) return {};
    const uint64_t* w = future_words + 4 * i;
    return {w[0], w[1], w[2], w[3]};
  }
};

// Sets b's futures; storage for them is taken from store the first time one
// is not zero (and reused after).
void SetFutures(Bucket& b, const MemRecordCycle (&future)[3], StackStore& store);

// A copy of a streamed bucket to keep after the walk moves on: its stack is
// `stack` (a kept copy, or empty), its futures copied into store (the
// streamed bucket's are in the walk's scratch).
Bucket KeepStreamed(const Bucket& streamed, std::span<const uint64_t> stack, StackStore& store);

// What a target whose heap profile is too large for goheap2pprof's bounds
// can change: the end of every such refusal's hint (here and in the
// profile's location tables).
inline constexpr const char* kSmallerProfileAdvice =
    "make the target sample less (a larger runtime.MemProfileRate) or keep shorter stacks "
    "(GODEBUG=profstackdepth)";

struct WalkLimits {
  uint64_t max_stack_words = 32;
  uint64_t max_buckets = 4'000'000;
  // Bounds the memory a walk that keeps its stacks can take (8 bytes per
  // word): 64M words is 512 MiB of stacks. A streamed walk keeps none and
  // sets no such bound (snapshot.cc, StreamedLimitsFor).
  uint64_t max_total_stack_words = 64'000'000;
  MemRecordLayout record_layout = MemRecordLayout::kCountsAndBytes;
  // Stop before this bucket (the head seen by an earlier walk): new buckets
  // are only ever prepended, so that walk already has the rest.
  uint64_t stop_at = 0;
  // Room for this many buckets is reserved before the walk (capped at
  // max_buckets): an upper bound on their number saves growing the vector
  // by doubling, which touches about twice the fresh memory of the buckets
  // and copies them along. Pages reserved and never used are never touched.
  uint64_t reserve_buckets = 0;
};

struct WalkResult {
  std::vector<Bucket> buckets;  // runtime order: newest first
  // Where Bucket::stack points when WalkBuckets was not given a store (it
  // stays in place when the result is moved).
  StackStore stacks;
  // With WalkLimits::stop_at: whether the walk ended there (and not at the
  // list's end).
  bool reached_stop = false;
};

// An upper bound on the number of heap buckets of a process whose runtime
// counts buckhash_sys bytes of profiling-bucket memory (MemStats.BuckHashSys):
// every heap bucket takes at least its header and memRecord there, and the
// rest is the fixed hash table and the block and mutex profiles' buckets.
// Capped at max (a reservation is all it sizes; the value is the target's).
uint64_t HeapBucketBound(uint64_t buckhash_sys, MemRecordLayout layout, uint64_t max);

// Follows allnext from head. With MemRecordLayout::kCountsOnly the byte
// counters are filled in as objects x size, which is what the runtime reports. Throws
// Error(kMalformed) naming the bucket address when the list is inconsistent: an unmapped bucket,
// typ != 1, nstk out of range, a cycle, or more than max_buckets buckets or max_total_stack_words
// stack words. Every stack is interned into `stacks` (shared with identical
// ones already there), so the buckets stay valid as long as it.
WalkResult WalkBuckets(MemoryReader& mem, uint64_t head, const WalkLimits& limits,
                       StackStore& stacks);
// The same, interning into the result's own store.
WalkResult WalkBuckets(MemoryReader& mem, uint64_t head, const WalkLimits& limits);

// The walk of WalkBuckets without keeping anything: each bucket is handed
// to the sink as it is read, its stack and futures in scratch of the walk's
// that the next bucket reuses, or where a caching reader lent the bytes
// (MemoryReader::View): copy what must outlive the call, and do not read
// through mem during it. Reads go through mem in the walk's order, so a
// BlockCacheReader bounds the bytes held to its blocks. Throws as
// WalkBuckets does.
struct WalkEnd {
  size_t buckets = 0;         // handed to the sink
  bool reached_stop = false;  // see WalkResult
};
using BucketSink = std::function<void(const Bucket& b)>;
WalkEnd StreamBuckets(MemoryReader& mem, uint64_t head, const WalkLimits& limits,
                      const BucketSink& sink);

// Reads every bucket's memRecord again, in batched vectored reads. Headers
// and stacks never change once a bucket exists; only the counters move, so
// this is all a retry after a concurrent GC publication needs. store is the
// one the buckets were walked into (it takes futures that became non-zero).
void RereadRecords(MemoryReader& mem, std::span<Bucket> buckets, MemRecordLayout layout,
                   StackStore& store);

// The same for buckets whose stacks were not kept (StreamHeapSnapshot's):
// bucket i's memRecord is at record_at[i].
void RereadRecordsAt(MemoryReader& mem, std::span<Bucket> buckets,
                     std::span<const uint64_t> record_at, MemRecordLayout layout,
                     StackStore& store);

// Where RevalidateBuckets finds each bucket's header and record in the
// target and in its read buffer. Made from the buckets' addresses (a sort),
// it stays right for as long as the same buckets are revalidated: kept
// between captures of one process, it is remade only after buckets were
// added. Offsets are in the concatenation of the ranges, which is read a
// batch at a time: the buffer is about a batch, not the bucket memory.
struct RevalidationPlan {
  size_t buckets = 0;  // the plan is for this many buckets...
  uint64_t first = 0;  // ...the first at this address (lists only grow at the front)
  uint64_t last = 0;   // ...and the last at this one
  uint64_t gap = 0;    // unneeded bytes read along between two needed ones, at most
  struct Range {
    uint64_t addr = 0;  // in the target
    uint64_t at = 0;    // in the buffer
    uint64_t len = 0;
  };
  std::vector<Range> ranges;
  std::vector<uint64_t> header_at;  // per bucket: its header's offset in the buffer
  std::vector<uint64_t> record_at;  // per bucket: its memRecord's offset in the buffer
  std::vector<bool> stack_read;     // per bucket: its stack is read too (it lies in between)
  uint64_t size = 0;                // the ranges' bytes
  size_t planned_ranges = 0;        // ranges when last planned whole (not extended)
  // The buckets by where their headers are (header_at), for the batches.
  std::vector<uint32_t> order;
  // Bytes [at, end) of the ranges, read into the buffer at once and then
  // checked: every header and record of buckets order[first, last) lies in
  // them. A batch ends only where no bucket before it reaches past it.
  struct Batch {
    uint64_t at = 0;
    uint64_t end = 0;
    size_t first_range = 0;  // the range holding `at`
    size_t first = 0;
    size_t last = 0;
  };
  std::vector<Batch> batches;
  uint64_t largest_batch = 0;  // bytes
  bool Fits(std::span<const Bucket> b) const {
    return !b.empty() && b.size() == buckets && b.front().addr == first && b.back().addr == last;
  }
  // Whether b is the planned list with buckets added at its front (the
  // runtime adds them only there): the plan extends to them.
  bool FitsTail(std::span<const Bucket> b) const {
    return buckets > 0 && b.size() > buckets && b[b.size() - buckets].addr == first &&
           b.back().addr == last;
  }
};

// RereadRecords that also re-reads each bucket's header and checks that it
// is still the bucket remembered (allnext, type, hash, size, nstk, and the
// stack where it is read along): the check a cache of buckets makes before
// trusting them for another capture. A long stack (more than about 4 KiB) is
// not read again: the hash is the runtime's hash of the stack and size, and
// a bucket is never freed or moved. Returns false, with the counters
// unspecified, if any bucket is unmapped or differs. scratch and plan are
// reused between calls. The plan's batches (kRevalidationBatchBytes each,
// about) are read into scratch and checked one after the other, or for a
// large list and a reader that allows it (MemoryReader::ConcurrentReadMany)
// each half of them on its own thread: scratch stays at one or two batches
// whatever the list's size, and each batch is checked while the caches
// still hold it.
inline constexpr uint64_t kRevalidationBatchBytes = 512 * 1024;
bool RevalidateBuckets(MemoryReader& mem, std::span<Bucket> buckets, MemRecordLayout layout,
                       std::vector<uint8_t>& scratch, RevalidationPlan& plan, StackStore& store);

// What the revalidation checks of a bucket whose stack was not kept (a
// streamed walk's, for a capture state): its depth and its first and last
// PCs, 24 bytes where the stack took 8 a frame.
struct StackEnds {
  uint64_t words = 0;
  uint64_t first = 0;
  uint64_t last = 0;
};
// RevalidateBuckets of such buckets: bucket i's stack is ends[i] (one per
// bucket), its record right after it.
bool RevalidateBuckets(MemoryReader& mem, std::span<Bucket> buckets,
                       std::span<const StackEnds> ends, MemRecordLayout layout,
                       std::vector<uint8_t>& scratch, RevalidationPlan& plan, StackStore& store);

// One runtime.MemProfileRecord (memProfileInternal with inuseZero = true).
struct MemProfileRecord {
  int64_t alloc_bytes = 0;
  int64_t free_bytes = 0;
  int64_t alloc_objects = 0;
  int64_t free_objects = 0;
  const Bucket* bucket = nullptr;
  // Go's int64 arithmetic wraps; so does ours, for corrupt or torn counters.
  int64_t InUseBytes() const { return WrapSub(alloc_bytes, free_bytes); }
  int64_t InUseObjects() const { return WrapSub(alloc_objects, free_objects); }
  static int64_t WrapSub(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  }
};

// What runtime.MemProfile would return right now, without writing to the
// target: active + future[cycle % 3]; if nothing was ever published (every
// bucket's allocs and frees are 0), active + all three futures. Every bucket
// yields a record, in bucket order.
std::vector<MemProfileRecord> EmulateMemProfile(std::span<const Bucket> buckets, uint32_t cycle);

// The runtime's published counters only (active), as the seed collector
// reports them.
std::vector<MemProfileRecord> PublishedCounts(std::span<const Bucket> buckets);

// The same one bucket at a time, for callers that do not keep every record
// (fresh memory is what a capture pays for most). NothingPublished: whether
// runtime.MemProfile folds in all three future cycles (no bucket has
// published counts after the flush of cycle % 3); EmulatedRecord: the
// bucket's record in EmulateMemProfile(buckets, cycle), given that answer.
bool NothingPublished(std::span<const Bucket> buckets, uint32_t cycle);
MemProfileRecord EmulatedRecord(const Bucket& b, uint32_t cycle, bool nothing_published);
MemProfileRecord PublishedRecord(const Bucket& b);

// Go's float64 -> int64 conversion as compiled for amd64 (CVTTSD2SI): truncates
// toward zero, and yields INT64_MIN for NaN and out-of-range values, where a
// C++ cast would be undefined. Corrupt counters can produce such values.
inline int64_t GoFloatToInt64(double v) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
  return static_cast<int64_t>(v);
}

struct ScaledPair {
  int64_t count = 0;
  int64_t bytes = 0;
};
// runtime/pprof's scaleHeapSample: unbias Poisson-sampled counts. Inline:
// called, it returned its pair in two registers, which the caller stored
// and loaded back as one 16-byte word, a load the CPU cannot forward from
// two stores; that stall was most of each sample's values (HeapSampleValues).
inline ScaledPair ScaleHeapSample(int64_t count, int64_t size, int64_t rate) {
  if (count == 0 || size == 0) return {0, 0};
  if (rate <= 1) return {count, size};
  double avg_size = static_cast<double>(size) / static_cast<double>(count);
  double scale = 1.0 / (1.0 - std::exp(-avg_size / static_cast<double>(rate)));
  // Go converts float64 to int64 by truncation toward zero.
  return {GoFloatToInt64(static_cast<double>(count) * scale),
          GoFloatToInt64(static_cast<double>(size) * scale)};
}

}  // namespace goheap2pprof
