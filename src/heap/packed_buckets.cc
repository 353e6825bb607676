#include "heap/packed_buckets.h"

#include <array>

#include "runtime/bucket_layout.h"

namespace goheap2pprof {

namespace {

constexpr uint8_t kHasFutures = 1;

// Writes v at p; returns the end.
uint8_t* PutVarint(uint64_t v, uint8_t* p) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// Only entries this store wrote are decoded: no bound checks past the chunk's end.
uint64_t GetVarint(const uint8_t*& p) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const uint8_t byte = *p++;
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return v;
  }
}

uint8_t* PutCycle(const MemRecordCycle& c, uint8_t* p) {
  p = PutVarint(c.allocs, p);
  p = PutVarint(c.frees, p);
  p = PutVarint(c.alloc_bytes, p);
  return PutVarint(c.free_bytes, p);
}

MemRecordCycle GetCycle(const uint8_t*& p) {
  MemRecordCycle c;
  c.allocs = GetVarint(p);
  c.frees = GetVarint(p);
  c.alloc_bytes = GetVarint(p);
  c.free_bytes = GetVarint(p);
  return c;
}

// Decoding state of ForEachBatch: one batch's buckets and their futures.
struct BatchStorage {
  std::vector<Bucket> buckets;
  std::vector<uint64_t> record_at;
  std::vector<uint32_t> tags;
  std::vector<std::array<uint64_t, 12>> futures;
  uint64_t last_record_at = 0;

  BatchStorage() {
    buckets.reserve(PackedBuckets::kBatch);
    record_at.reserve(PackedBuckets::kBatch);
    tags.reserve(PackedBuckets::kBatch);
    futures.resize(PackedBuckets::kBatch);
  }
  void Clear() {
    buckets.clear();
    record_at.clear();
    tags.clear();
  }
  // The entry at p, appended; returns where the next one starts.
  const uint8_t* Decode(const uint8_t* p) {
    const uint8_t flags = *p++;
    const uint64_t zigzag = GetVarint(p);
    const int64_t delta = static_cast<int64_t>(zigzag >> 1) ^ -static_cast<int64_t>(zigzag & 1);
    last_record_at += static_cast<uint64_t>(delta);
    const uint64_t nstk = GetVarint(p);
    // Decoded in place: a Bucket made on the stack field by field and then
    // pushed was copied in 16-byte loads of its 8-byte stores, which the
    // CPU cannot forward; those copies were most of the decode (100k
    // buckets: 2.8 ms, now 1.7).
    Bucket& b = buckets.emplace_back();
    b.addr = last_record_at - kBucketHeaderSize - 8 * nstk;
    b.size = GetVarint(p);
    tags.push_back(static_cast<uint32_t>(GetVarint(p)));
    b.active = GetCycle(p);
    if ((flags & kHasFutures) != 0) {
      uint64_t* words = futures[buckets.size() - 1].data();
      for (size_t i = 0; i < 12; ++i) words[i] = GetVarint(p);
      b.future_words = words;
    }
    record_at.push_back(last_record_at);
    return p;
  }
};

}  // namespace

void PackedBuckets::Append(const Bucket& b, uint64_t record_at, uint32_t tag) {
  if (chunks_.empty() || chunks_.back().size() + kMaxEntry > kChunkBytes) {
    chunks_.emplace_back().reserve(kChunkBytes);
  }
  std::vector<uint8_t>& out = chunks_.back();
  MemRecordCycle future[3];
  bool has_futures = false;
  for (uint32_t i = 0; i < 3; ++i) {
    future[i] = b.Future(i);
    const bool counts = future[i].allocs != 0 || future[i].frees != 0;
    future_counts_[i] |= counts;
    has_futures |= counts || future[i].alloc_bytes != 0 || future[i].free_bytes != 0;
  }
  // Encoded on the stack and appended at once: a push_back a byte checked
  // the capacity each time, and was most of an append.
  uint8_t entry[kMaxEntry];
  uint8_t* p = entry;
  *p++ = has_futures ? kHasFutures : 0;
  const int64_t delta = static_cast<int64_t>(record_at - last_record_at_);
  p = PutVarint((static_cast<uint64_t>(delta) << 1) ^ static_cast<uint64_t>(delta >> 63), p);
  last_record_at_ = record_at;
  p = PutVarint((record_at - b.addr - kBucketHeaderSize) / 8, p);
  p = PutVarint(b.size, p);
  p = PutVarint(tag, p);
  p = PutCycle(b.active, p);
  if (has_futures) {
    for (const MemRecordCycle& c : future) p = PutCycle(c, p);
  }
  out.insert(out.end(), entry, p);
  ++count_;
}

size_t PackedBuckets::ApproximateBytes() const {
  return chunks_.size() * kChunkBytes + chunks_.capacity() * sizeof(chunks_[0]);
}

void PackedBuckets::ForEachBatch(const std::function<bool(const Batch&)>& fn) const {
  if (count_ == 0) return;
  BatchStorage batch;
  auto flush = [&] {
    const bool more = fn(Batch{batch.buckets, batch.record_at, batch.tags});
    batch.Clear();
    return more;
  };
  for (const std::vector<uint8_t>& chunk : chunks_) {
    const uint8_t* p = chunk.data();
    const uint8_t* const end = p + chunk.size();
    while (p < end) {
      p = batch.Decode(p);
      if (batch.buckets.size() == kBatch && !flush()) return;
    }
  }
  if (!batch.buckets.empty()) flush();
}

void RereadPackedRecords(MemoryReader& mem, PackedBuckets& packed, MemRecordLayout layout) {
  PackedBuckets fresh;
  packed.ForEachBatch([&](const PackedBuckets::Batch& batch) {
    // Futures that became non-zero take storage here, for this batch only.
    StackStore store;
    RereadRecordsAt(mem, batch.buckets, batch.record_at, layout, store);
    for (size_t i = 0; i < batch.buckets.size(); ++i) {
      fresh.Append(batch.buckets[i], batch.record_at[i], batch.tags[i]);
    }
    return true;
  });
  packed = std::move(fresh);
}

}  // namespace goheap2pprof
