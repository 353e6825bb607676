// The buckets of a streamed walk (StreamHeapSnapshot), packed down to what
// the samples and a counters-only retry need: each bucket's allocation size,
// counters, where its memRecord is, and a number of the caller's (the run the
// build gave its stack). A Bucket, its record's address and its run took 100
// bytes of fresh memory a bucket (issue 42); as varints in chunks that never
// move, a bucket whose counters are small takes about 15, and growing the
// store copies nothing.
//
//   PackedBuckets packed;
//   packed.Append(bucket, record_at, run);
//   packed.ForEachBatch([&](const PackedBuckets::Batch& b) { ...; return true; });
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "heap/buckets.h"

namespace goheap2pprof {

class PackedBuckets {
 public:
  // Keeps b's size, active and future counters (not its stack, hash or
  // links), record_at (its memRecord's address: the bucket's address follows
  // from it and the stack's length) and tag.
  void Append(const Bucket& b, uint64_t record_at, uint32_t tag);
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  void Clear() { *this = PackedBuckets(); }
  size_t ApproximateBytes() const;
  // Whether a bucket's future[i] (i < 3) counted an allocation or a free:
  // known without decoding them (the consistency check asks after a walk).
  bool AnyFutureCounts(uint32_t i) const { return i < 3 && future_counts_[i]; }

  // Buckets decoded in list order: their stacks are empty, their futures
  // in the batch's own storage; valid during the call only.
  struct Batch {
    std::span<Bucket> buckets;
    std::span<const uint64_t> record_at;
    std::span<const uint32_t> tags;
  };
  // Calls fn with every bucket, in batches of at most kBatch, until it
  // returns false.
  static constexpr size_t kBatch = 1024;
  void ForEachBatch(const std::function<bool(const Batch&)>& fn) const;

 private:
  // An entry is at most this many bytes: flags, 19 varints (the record's
  // distance from the last one, the stack's length, the size and 16
  // counters) and a tag. (It said 18 varints, 10 bytes short, which only a
  // chunk's reserve had to absorb; Append now encodes into a buffer of
  // this size.)
  static constexpr size_t kMaxEntry = 1 + 19 * 10 + 5;
  static constexpr size_t kChunkBytes = 256 * 1024;
  std::vector<std::vector<uint8_t>> chunks_;
  size_t count_ = 0;
  bool future_counts_[3] = {false, false, false};
  uint64_t last_record_at_ = 0;  // entries keep the difference to the last one
};

// Reads every packed bucket's memRecord again (RereadRecordsAt, batch by
// batch) and packs the new counters in its place: the retry of a walk the
// profile cycle tore, which needs no stack.
void RereadPackedRecords(MemoryReader& mem, PackedBuckets& packed, MemRecordLayout layout);

}  // namespace goheap2pprof
