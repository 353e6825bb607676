#include "heap/buckets.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <string>

#include "base/bytes.h"
#include "base/error.h"
#include "base/huge_pages.h"
#include "base/side_by_side.h"

namespace goheap2pprof {

namespace {

MemRecordCycle LoadCycle(const uint8_t* p, MemRecordLayout layout, uint64_t size) {
  if (layout == MemRecordLayout::kCountsOnly) {
    uint64_t allocs = LoadU64(p), frees = LoadU64(p + 8);
    return {allocs, frees, allocs * size, frees * size};
  }
  return {LoadU64(p), LoadU64(p + 8), LoadU64(p + 16), LoadU64(p + 24)};
}

bool AllZero(const MemRecordCycle (&future)[3]) {
  for (const MemRecordCycle& c : future) {
    if (c.allocs != 0 || c.frees != 0 || c.alloc_bytes != 0 || c.free_bytes != 0) return false;
  }
  return true;
}

// Into the bucket's storage for its futures (which it has).
void StoreFutures(Bucket& b, const MemRecordCycle (&future)[3]) {
  for (int i = 0; i < 3; ++i) {
    uint64_t* w = b.future_words + 4 * i;
    w[0] = future[i].allocs;
    w[1] = future[i].frees;
    w[2] = future[i].alloc_bytes;
    w[3] = future[i].free_bytes;
  }
}

// A bucket's counters from its memRecord at rec.
void LoadRecord(const uint8_t* rec, MemRecordLayout layout, Bucket& b, StackStore& store) {
  const uint64_t cycle_size = MemRecordCycleSize(layout);
  b.active = LoadCycle(rec, layout, b.size);
  MemRecordCycle future[3];
  for (uint64_t i = 0; i < 3; ++i)
    future[i] = LoadCycle(rec + cycle_size * (i + 1), layout, b.size);
  SetFutures(b, future, store);
}

// LoadRecord without storage of its own: false, with b unchanged, when b's
// futures need storage it does not have yet (the caller's LoadRecord then
// allocates it). Safe on two threads for different buckets.
bool LoadRecordInPlace(const uint8_t* rec, MemRecordLayout layout, Bucket& b) {
  const uint64_t cycle_size = MemRecordCycleSize(layout);
  MemRecordCycle future[3];
  for (uint64_t i = 0; i < 3; ++i)
    future[i] = LoadCycle(rec + cycle_size * (i + 1), layout, b.size);
  if (b.future_words == nullptr && !AllZero(future)) return false;
  b.active = LoadCycle(rec, layout, b.size);
  if (b.future_words != nullptr) StoreFutures(b, future);
  return true;
}

// What one bucket costs us (fresh memory, 250k buckets a large target).
static_assert(sizeof(Bucket) <= 88);

// Most buckets hold short stacks; reading this much after the header in the
// same call usually fetches the whole bucket at once.
constexpr uint64_t kSpeculativeStackWords = 32;

}  // namespace

namespace {

// Brent's cycle detection: O(1) memory, and a loop is found within a few
// times its length.
class LoopCheck {
 public:
  // Throws if addr, the next of `buckets` buckets walked, closes a loop.
  void Visit(uint64_t addr, size_t buckets) {
    if (addr == tortoise_) {
      throw Error(ErrorKind::kMalformed, "heap bucket list loops back to bucket ", Hex(addr),
                  " after ", buckets, " buckets");
    }
    if (++steps_ == power_) {
      tortoise_ = addr;
      power_ *= 2;
      steps_ = 0;
    }
  }

 private:
  uint64_t tortoise_ = 0, power_ = 1, steps_ = 0;
};

// The first `guess` bytes of the bucket at addr, or, at the end of a
// mapping, only its header; *have says how many. A caching reader lends its
// bytes (View, valid until the next read) and nothing is copied; else they
// are read into buf.
const uint8_t* ReadBucketStart(MemoryReader& mem, uint64_t addr, uint64_t guess,
                               std::vector<uint8_t>& buf, uint64_t* have, size_t buckets) {
  *have = guess;
  if (const uint8_t* data = mem.View(addr, guess)) return data;
  buf.resize(guess);
  if (!mem.TryRead(addr, buf)) {
    buf.resize(kBucketHeaderSize);
    if (!mem.TryRead(addr, buf)) {
      throw Error(ErrorKind::kMalformed, "heap bucket at ", Hex(addr),
                  " is not mapped in the target (after ", buckets, " buckets)");
    }
  }
  *have = buf.size();
  return buf.data();
}

struct BucketHeader {
  uint64_t allnext;
  uint64_t size;
  uint64_t nstk;
  uint64_t hash;
};

// The header's fields, once its type says it is a heap bucket and its
// stack is within the limit.
BucketHeader ReadBucketHeader(const uint8_t* h, uint64_t addr, const WalkLimits& limits) {
  BucketHeader header;
  header.allnext = LoadU64(h + kBucketAllnextOffset);
  const uint64_t typ = LoadU64(h + kBucketTypOffset);
  header.size = LoadU64(h + kBucketSizeOffset);
  header.nstk = LoadU64(h + kBucketNstkOffset);
  header.hash = LoadU64(h + kBucketHashOffset);
  if (typ != kMemProfileBucketType) {
    throw Error(ErrorKind::kMalformed, "bucket at ", Hex(addr), ": type ", typ,
                " is not a heap bucket (1)");
  }
  if (header.nstk > limits.max_stack_words) {
    throw Error(ErrorKind::kMalformed, "bucket at ", Hex(addr), ": nstk ", header.nstk, " exceeds ",
                limits.max_stack_words);
  }
  return header;
}

// The whole bucket (header, stack and record, `total` bytes): `data` if the
// first read got it all, else a second read. The header bytes read before
// may not survive it.
const uint8_t* ReadWholeBucket(MemoryReader& mem, uint64_t addr, uint64_t total, uint64_t nstk,
                               const uint8_t* data, uint64_t have, std::vector<uint8_t>& buf) {
  if (total <= have) return data;
  if (const uint8_t* whole = mem.View(addr, total)) return whole;
  buf.resize(total);
  if (!mem.TryRead(addr, buf)) {
    throw Error(ErrorKind::kMalformed, "bucket at ", Hex(addr), ": its ", nstk,
                " stack words and record are not mapped");
  }
  return buf.data();
}

// The scratch a streamed bucket's stack and futures are copied to: reused
// from one bucket to the next, so a walk takes no memory per bucket.
struct BucketScratch {
  std::vector<uint64_t> stack;
  uint64_t futures[12] = {};
};

// The bucket's stack: the words where they lie in `data` when a caching
// reader lent them (a view, valid as long as `data`) and they are aligned,
// as a bucket's are in a block read from its aligned address; else copied
// to scratch. A deep stack is 8 KiB, and its copy was most of the walk's
// own time after the read.
std::span<const uint64_t> StackOf(const uint8_t* data, uint64_t nstk, bool lent,
                                  BucketScratch& scratch) {
  const uint8_t* words = data + kBucketHeaderSize;
  if (lent && reinterpret_cast<uintptr_t>(words) % alignof(uint64_t) == 0) {
    return {reinterpret_cast<const uint64_t*>(words), nstk};
  }
  scratch.stack.resize(nstk);
  for (uint64_t i = 0; i < nstk; ++i) scratch.stack[i] = LoadU64(words + 8 * i);
  return scratch.stack;
}

// The bucket at addr (header, stack and record read whole at `data`, lent
// by the reader or not) into b, its stack and futures in scratch or `data`.
void DecodeBucket(const uint8_t* data, bool lent, uint64_t addr, const BucketHeader& header,
                  MemRecordLayout layout, BucketScratch& scratch, Bucket& b) {
  b.addr = addr;
  b.size = header.size;
  b.allnext = header.allnext;
  b.hash = header.hash;
  b.stack = StackOf(data, header.nstk, lent, scratch);
  const uint8_t* rec = data + kBucketHeaderSize + 8 * header.nstk;
  const uint64_t cycle_size = MemRecordCycleSize(layout);
  b.active = LoadCycle(rec, layout, b.size);
  MemRecordCycle future[3];
  for (uint64_t i = 0; i < 3; ++i)
    future[i] = LoadCycle(rec + cycle_size * (i + 1), layout, b.size);
  b.future_words = nullptr;
  if (!AllZero(future)) {
    b.future_words = scratch.futures;
    StoreFutures(b, future);
  }
}

}  // namespace

namespace {

// Why a walk refuses a list past its bounds (a list that long is more often
// corrupt or hostile than real, and its profile would be too large to use).
const std::string kLimitHint =
    std::string(
        "goheap2pprof reads at most 4M heap buckets and, where it keeps their stacks whole (the "
        "debug=1 text format), 64M stack words (512 MiB), so that its own memory stays bounded; ") +
    kSmallerProfileAdvice;

}  // namespace

WalkEnd StreamBuckets(MemoryReader& mem, uint64_t head, const WalkLimits& limits,
                      const BucketSink& sink) {
  LoopCheck loop;
  std::vector<uint8_t> buf;
  BucketScratch scratch;
  const uint64_t record_size = MemRecordSize(limits.record_layout);
  uint64_t addr = head;
  uint64_t total_words = 0;
  WalkEnd end;
  while (addr != 0 && addr != limits.stop_at) {
    if (end.buckets >= limits.max_buckets) {
      throw Error(ErrorKind::kUnsupported, "heap bucket list has more than ", limits.max_buckets,
                  " buckets (stopped at ", Hex(addr), ")")
          .WithHint(kLimitHint);
    }
    loop.Visit(addr, end.buckets);
    if ((addr & 7) != 0) {
      throw Error(ErrorKind::kMalformed, "heap bucket pointer ", Hex(addr), " is misaligned");
    }
    // One read for header + a typical stack + memRecord; a second only for
    // deep stacks or at the end of a mapping.
    const uint64_t guess = kBucketHeaderSize + 8 * kSpeculativeStackWords + record_size;
    uint64_t have = 0;
    const uint8_t* data = ReadBucketStart(mem, addr, guess, buf, &have, end.buckets);
    const BucketHeader header = ReadBucketHeader(data, addr, limits);
    total_words += header.nstk;
    if (total_words > limits.max_total_stack_words) {
      throw Error(ErrorKind::kUnsupported, "heap bucket stacks exceed ",
                  limits.max_total_stack_words, " words in total (at bucket ", Hex(addr),
                  ", bucket ", end.buckets, ")")
          .WithHint(kLimitHint);
    }
    const uint64_t total = kBucketHeaderSize + 8 * header.nstk + record_size;
    data = ReadWholeBucket(mem, addr, total, header.nstk, data, have, buf);
    Bucket b;
    const bool lent = data != buf.data();
    DecodeBucket(data, lent, addr, header, limits.record_layout, scratch, b);
    sink(b);
    ++end.buckets;
    addr = header.allnext;
  }
  end.reached_stop = addr != 0 && addr == limits.stop_at;
  return end;
}

namespace {

void Walk(MemoryReader& mem, uint64_t head, const WalkLimits& limits, StackStore& stacks,
          WalkResult& result) {
  // 88 bytes a bucket: 250k buckets are 22 MiB of fresh memory.
  GrowWithHugePages(result.buckets, std::min(limits.reserve_buckets, limits.max_buckets));
  const WalkEnd end = StreamBuckets(mem, head, limits, [&](const Bucket& streamed) {
    // Buckets of one allocation site differ only in size: their stacks
    // are stored once.
    const std::span<const uint64_t> stack = stacks.Intern(
        reinterpret_cast<const uint8_t*>(streamed.stack.data()), streamed.stack.size());
    GrowWithHugePages(result.buckets, 1);
    result.buckets.push_back(KeepStreamed(streamed, stack, stacks));
  });
  result.reached_stop = end.reached_stop;
}

}  // namespace

uint64_t HeapBucketBound(uint64_t buckhash_sys, MemRecordLayout layout, uint64_t max) {
  constexpr uint64_t kHashTableBytes = 179999 * 8;  // runtime.buckhash: buckHashSize pointers
  const uint64_t bytes = buckhash_sys > kHashTableBytes ? buckhash_sys - kHashTableBytes : 0;
  return std::min(max, bytes / (kBucketHeaderSize + MemRecordSize(layout)));
}

WalkResult WalkBuckets(MemoryReader& mem, uint64_t head, const WalkLimits& limits,
                       StackStore& stacks) {
  WalkResult result;
  Walk(mem, head, limits, stacks, result);
  return result;
}

WalkResult WalkBuckets(MemoryReader& mem, uint64_t head, const WalkLimits& limits) {
  WalkResult result;
  Walk(mem, head, limits, result.stacks, result);
  return result;
}

void SetFutures(Bucket& b, const MemRecordCycle (&future)[3], StackStore& store) {
  if (b.future_words == nullptr) {
    if (AllZero(future)) return;
    b.future_words = store.Allocate(12);
  }
  StoreFutures(b, future);
}

Bucket KeepStreamed(const Bucket& streamed, std::span<const uint64_t> stack, StackStore& store) {
  Bucket b = streamed;
  b.stack = stack;
  b.future_words = nullptr;
  MemRecordCycle future[3];
  for (uint32_t i = 0; i < 3; ++i) future[i] = streamed.Future(i);
  SetFutures(b, future, store);
  return b;
}

namespace {

// Reads the memRecord of each bucket again (bucket i's at record_at(i)), in
// batched vectored reads through buffers of a bounded size, reused.
template <typename RecordAt>
void Reread(MemoryReader& mem, std::span<Bucket> buckets, RecordAt record_at,
            MemRecordLayout layout, StackStore& store) {
  constexpr size_t kBatch = 4096;  // 512 KiB of records at most
  const uint64_t record_size = MemRecordSize(layout);
  std::vector<uint8_t> bytes(std::min(buckets.size(), kBatch) * record_size);
  std::vector<ReadRequest> requests;
  for (size_t begin = 0; begin < buckets.size(); begin += kBatch) {
    const size_t n = std::min(kBatch, buckets.size() - begin);
    requests.resize(n);
    for (size_t i = 0; i < n; ++i) {
      requests[i] = {record_at(begin + i),
                     std::span<uint8_t>(bytes.data() + i * record_size, record_size), false};
    }
    mem.ReadMany(requests);
    for (size_t i = 0; i < n; ++i) {
      if (!requests[i].ok) {
        throw Error(ErrorKind::kMalformed, "bucket at ", Hex(buckets[begin + i].addr),
                    ": its record is no longer mapped");
      }
      LoadRecord(bytes.data() + i * record_size, layout, buckets[begin + i], store);
    }
  }
}

}  // namespace

void RereadRecords(MemoryReader& mem, std::span<Bucket> buckets, MemRecordLayout layout,
                   StackStore& store) {
  Reread(
      mem, buckets,
      [&](size_t i) { return buckets[i].addr + kBucketHeaderSize + 8 * buckets[i].stack.size(); },
      layout, store);
}

void RereadRecordsAt(MemoryReader& mem, std::span<Bucket> buckets,
                     std::span<const uint64_t> record_at, MemRecordLayout layout,
                     StackStore& store) {
  Reread(
      mem, buckets, [&](size_t i) { return record_at[i]; }, layout, store);
}

namespace {

// Plans the reads of every bucket's header and record. Buckets lie close
// together in the runtime's persistentalloc chunks: reading them as a few
// large ranges costs the kernel one page pin per page, where one small range
// per header and per record cost a lookup and a pin each (and dominated the
// time). So a range takes in the next header or record when the gap to it
// is at most `gap`; the stacks in between are read along when they are short
// and skipped when they are long (1000-frame stacks are 8 KB each).
// The depth of bucket i's stack: the kept stack's, or the remembered one's
// (ends, for buckets whose stacks were not kept; empty otherwise).
uint64_t StackWords(std::span<const Bucket> buckets, std::span<const StackEnds> ends, size_t i) {
  return ends.empty() ? buckets[i].stack.size() : ends[i].words;
}

RevalidationPlan PlanRevalidation(std::span<const Bucket> buckets, std::span<const StackEnds> ends,
                                  uint64_t record_size, uint64_t gap) {
  RevalidationPlan plan;
  plan.buckets = buckets.size();
  plan.first = buckets.front().addr;
  plan.last = buckets.back().addr;
  plan.gap = gap;
  plan.header_at.resize(buckets.size());
  plan.record_at.resize(buckets.size());
  struct Segment {
    uint64_t addr;
    uint32_t bucket;
    bool record;
    bool operator<(const Segment& o) const { return addr < o.addr; }
  };
  if (buckets.size() > std::numeric_limits<uint32_t>::max()) {
    throw Error(ErrorKind::kInternal, "revalidating ", buckets.size(), " buckets");
  }
  std::vector<Segment> segs;
  segs.reserve(2 * buckets.size());
  plan.order.reserve(buckets.size());
  for (size_t i = 0; i < buckets.size(); ++i) {
    const Bucket& b = buckets[i];
    segs.push_back({b.addr, static_cast<uint32_t>(i), false});
    segs.push_back({b.addr + kBucketHeaderSize + 8 * StackWords(buckets, ends, i),
                    static_cast<uint32_t>(i), true});
  }
  std::sort(segs.begin(), segs.end());
  RevalidationPlan::Range range;
  for (size_t k = 0; k < segs.size(); ++k) {
    const Segment& s = segs[k];
    const uint64_t end = s.addr + (s.record ? record_size : kBucketHeaderSize);
    if (k == 0 || s.addr > range.addr + range.len + gap) {
      if (k > 0) {
        plan.ranges.push_back(range);
        plan.size += range.len;
      }
      range = {.addr = s.addr, .at = plan.size, .len = 0};
    }
    range.len = std::max(range.len, end - range.addr);
    (s.record ? plan.record_at : plan.header_at)[s.bucket] = range.at + (s.addr - range.addr);
    if (!s.record) plan.order.push_back(s.bucket);  // by address, so by header_at
  }
  plan.ranges.push_back(range);
  plan.size += range.len;
  plan.planned_ranges = plan.ranges.size();
  // A stack between its header and record in one range was read along.
  plan.stack_read.resize(buckets.size());
  for (size_t i = 0; i < buckets.size(); ++i) {
    const uint64_t words = StackWords(buckets, ends, i);
    plan.stack_read[i] =
        words == 0 || plan.record_at[i] - plan.header_at[i] == kBucketHeaderSize + 8 * words;
  }
  return plan;
}

// Whether the stack read along at p begins and ends as the stored one. The
// header's fields (the list link, hash, size and depth) already say that the
// bucket is the one first read: a published bucket's stack never changes, and
// the runtime never frees a bucket. The two words catch another object at the
// same address; comparing every word cost an eighth of a repeated capture
// (250k buckets).
bool SameStackEnds(const uint8_t* p, const StackEnds& stack) {
  if (stack.words == 0) return true;
  return LoadU64(p) == stack.first && LoadU64(p + 8 * (stack.words - 1)) == stack.last;
}

// Extends plan to the `added` buckets before the planned ones: their ranges
// go after the plan's in the buffer. Planning a list sorts every header and
// record by address (a tenth of a repeated capture of 250k buckets), and a
// list gains a few buckets between most captures (the target's own
// allocations), so only the new ones are planned.
void ExtendPlan(RevalidationPlan& plan, std::span<const Bucket> added,
                std::span<const StackEnds> added_ends, uint64_t record_size) {
  const RevalidationPlan front = PlanRevalidation(added, added_ends, record_size, plan.gap);
  for (RevalidationPlan::Range r : front.ranges) {
    r.at += plan.size;
    plan.ranges.push_back(r);
  }
  auto prepend = [&](std::vector<uint64_t>& offsets, const std::vector<uint64_t>& added_offsets) {
    std::vector<uint64_t> joined;
    joined.reserve(added_offsets.size() + offsets.size());
    for (uint64_t at : added_offsets) joined.push_back(at + plan.size);
    joined.insert(joined.end(), offsets.begin(), offsets.end());
    offsets = std::move(joined);
  };
  prepend(plan.header_at, front.header_at);
  prepend(plan.record_at, front.record_at);
  plan.stack_read.insert(plan.stack_read.begin(), front.stack_read.begin(), front.stack_read.end());
  // The planned buckets' indices move up by the added ones, whose ranges
  // (and so headers) come after theirs.
  const auto shift = static_cast<uint32_t>(added.size());
  for (uint32_t& i : plan.order) i += shift;
  plan.order.insert(plan.order.end(), front.order.begin(), front.order.end());
  plan.size += front.size;
  plan.buckets += added.size();
  plan.first = added.front().addr;
}

// Cuts the plan's bytes into batches of about kRevalidationBatchBytes, each
// ending only at a header that no earlier bucket's record reaches past, so
// that every bucket is checked whole in one batch. (Buckets of a hostile
// target that overlap one another may make a batch larger: at most the
// bucket memory, what the whole buffer was.)
void MakeBatches(RevalidationPlan& plan, uint64_t record_size) {
  plan.batches.clear();
  plan.largest_batch = 0;
  RevalidationPlan::Batch batch;
  uint64_t reach = 0;  // the furthest any record seen so far ends
  auto close = [&](uint64_t end, size_t last) {
    batch.end = end;
    batch.last = last;
    while (plan.ranges[batch.first_range].at + plan.ranges[batch.first_range].len <= batch.at) {
      ++batch.first_range;
    }
    plan.largest_batch = std::max(plan.largest_batch, end - batch.at);
    plan.batches.push_back(batch);
  };
  for (size_t k = 0; k < plan.order.size(); ++k) {
    const uint64_t header = plan.header_at[plan.order[k]];
    if (header >= reach && header - batch.at >= kRevalidationBatchBytes) {
      close(header, k);
      batch = {.at = header, .end = 0, .first_range = batch.first_range, .first = k, .last = 0};
    }
    reach = std::max(reach, plan.record_at[plan.order[k]] + record_size);
  }
  close(plan.size, plan.order.size());
}

// The plan for buckets: plan itself, extended, or made anew, and its
// batches. A plan extended many times reads in many small ranges; at twice
// the ranges of a whole plan (plus 64) it is made anew.
void UpdatePlan(RevalidationPlan& plan, std::span<const Bucket> buckets,
                std::span<const StackEnds> ends, uint64_t record_size, uint64_t gap) {
  if (plan.Fits(buckets)) return;
  if (plan.FitsTail(buckets) && plan.ranges.size() < 2 * plan.planned_ranges + 64) {
    const size_t added = buckets.size() - plan.buckets;
    ExtendPlan(plan, buckets.first(added), ends.empty() ? ends : ends.first(added), record_size);
  } else {
    plan = PlanRevalidation(buckets, ends, record_size, gap);
  }
  MakeBatches(plan, record_size);
}

// Reads batch's bytes of the plan's ranges into buffer; false if any failed.
bool ReadBatch(MemoryReader& mem, const RevalidationPlan& plan,
               const RevalidationPlan::Batch& batch, uint8_t* buffer,
               std::vector<ReadRequest>& requests) {
  requests.clear();
  for (size_t r = batch.first_range; r < plan.ranges.size() && plan.ranges[r].at < batch.end; ++r) {
    const RevalidationPlan::Range& range = plan.ranges[r];
    const uint64_t from = std::max(range.at, batch.at);
    const uint64_t to = std::min(range.at + range.len, batch.end);
    requests.push_back({range.addr + (from - range.at),
                        std::span<uint8_t>(buffer + (from - batch.at), to - from), false});
  }
  mem.ReadMany(requests);
  for (const ReadRequest& r : requests) {
    if (!r.ok) return false;
  }
  return true;
}

}  // namespace

namespace {

// Whether bucket i's header in the batch's buffer (which holds the plan's
// bytes from `at`) is still the one remembered. ends: what is remembered of
// its stack.
bool SameHeader(const uint8_t* buffer, uint64_t at, const RevalidationPlan& plan, size_t i,
                const Bucket& b, const StackEnds& ends) {
  const uint8_t* h = buffer + (plan.header_at[i] - at);
  return LoadU64(h + kBucketAllnextOffset) == b.allnext &&
         LoadU64(h + kBucketTypOffset) == kMemProfileBucketType &&
         LoadU64(h + kBucketHashOffset) == b.hash && LoadU64(h + kBucketSizeOffset) == b.size &&
         LoadU64(h + kBucketNstkOffset) == ends.words &&
         (!plan.stack_read[i] || SameStackEnds(h + kBucketHeaderSize, ends));
}

StackEnds EndsOf(std::span<const uint64_t> stack) {
  if (stack.empty()) return {};
  return {stack.size(), stack.front(), stack.back()};
}

// What one thread of the revalidation has: its buffer and read requests,
// and the buckets whose futures need storage (LoadRecordInPlace could not
// load them), with a copy of their records, loaded once every batch passed.
struct BatchSide {
  std::span<uint8_t> buffer;
  std::vector<ReadRequest> requests;
  std::vector<size_t> later;
  std::vector<uint8_t> later_records;
};

enum class BatchesResult { kSame, kDiffers, kUnreadable };

// SameHeader and LoadRecordInPlace for the buckets of one batch read into
// side.buffer. False at the first that differs.
bool CheckBatch(const RevalidationPlan& plan, const RevalidationPlan::Batch& batch,
                std::span<Bucket> buckets, std::span<const StackEnds> ends, MemRecordLayout layout,
                uint64_t record_size, BatchSide& side) {
  const uint8_t* buffer = side.buffer.data();
  for (size_t k = batch.first; k < batch.last; ++k) {
    const size_t i = plan.order[k];
    const StackEnds stack = ends.empty() ? EndsOf(buckets[i].stack) : ends[i];
    if (!SameHeader(buffer, batch.at, plan, i, buckets[i], stack)) return false;
    const uint8_t* record = buffer + (plan.record_at[i] - batch.at);
    if (!LoadRecordInPlace(record, layout, buckets[i])) {
      side.later.push_back(i);
      side.later_records.insert(side.later_records.end(), record, record + record_size);
    }
  }
  return true;
}

// Reads and checks batches [begin, end) one after the other; stops early
// once `stop` is set (the other side's list differs), and sets it when this
// one finds a batch unreadable or different.
BatchesResult RunBatches(MemoryReader& mem, const RevalidationPlan& plan, size_t begin, size_t end,
                         std::span<Bucket> buckets, std::span<const StackEnds> ends,
                         MemRecordLayout layout, BatchSide& side, std::atomic<bool>& stop) {
  const uint64_t record_size = MemRecordSize(layout);
  for (size_t b = begin; b < end && !stop.load(std::memory_order_relaxed); ++b) {
    const RevalidationPlan::Batch& batch = plan.batches[b];
    BatchesResult failed = BatchesResult::kSame;
    if (!ReadBatch(mem, plan, batch, side.buffer.data(), side.requests)) {
      failed = BatchesResult::kUnreadable;
    } else if (!CheckBatch(plan, batch, buckets, ends, layout, record_size, side)) {
      failed = BatchesResult::kDiffers;
    }
    if (failed != BatchesResult::kSame) {
      stop = true;
      return failed;
    }
  }
  return BatchesResult::kSame;
}

// Below this many buckets the batches are read and checked on the calling
// thread alone.
constexpr size_t kParallelCheckBuckets = 32768;

// Every batch of the plan read and checked, a large list's in two halves on
// two threads (the read was a third of a repeated capture, the check, from
// a buffer the size of the bucket memory, a sixth: perf record, 100k
// buckets); then the records that need storage loaded.
BatchesResult ReadAndCheck(MemoryReader& mem, const RevalidationPlan& plan,
                           std::span<Bucket> buckets, std::span<const StackEnds> ends,
                           MemRecordLayout layout, std::vector<uint8_t>& scratch,
                           StackStore& store) {
  const size_t n = plan.batches.size();
  const bool two = n >= 2 && buckets.size() >= kParallelCheckBuckets && mem.ConcurrentReadMany();
  scratch.resize((two ? 2 : 1) * plan.largest_batch);
  BatchSide first, second;
  first.buffer = std::span<uint8_t>(scratch).first(plan.largest_batch);
  second.buffer = std::span<uint8_t>(scratch).last(plan.largest_batch);
  std::atomic<bool> stop = false;
  BatchesResult first_result = BatchesResult::kSame, second_result = BatchesResult::kSame;
  auto run = [&](size_t begin, size_t end, BatchSide& side, BatchesResult& result) {
    result = RunBatches(mem, plan, begin, end, buckets, ends, layout, side, stop);
  };
  if (two) {
    RunSideBySide([&] { run(0, n / 2, first, first_result); },
                  [&] { run(n / 2, n, second, second_result); });
  } else {
    run(0, n, first, first_result);
  }
  for (BatchesResult r : {first_result, second_result}) {
    if (r == BatchesResult::kDiffers) return r;
  }
  if (first_result != BatchesResult::kSame || second_result != BatchesResult::kSame) {
    return BatchesResult::kUnreadable;
  }
  const uint64_t record_size = MemRecordSize(layout);
  for (const BatchSide* side : {&first, &second}) {
    for (size_t j = 0; j < side->later.size(); ++j) {
      LoadRecord(side->later_records.data() + j * record_size, layout, buckets[side->later[j]],
                 store);
    }
  }
  return BatchesResult::kSame;
}

}  // namespace

bool RevalidateBuckets(MemoryReader& mem, std::span<Bucket> buckets, MemRecordLayout layout,
                       std::vector<uint8_t>& scratch, RevalidationPlan& plan, StackStore& store) {
  return RevalidateBuckets(mem, buckets, {}, layout, scratch, plan, store);
}

bool RevalidateBuckets(MemoryReader& mem, std::span<Bucket> buckets,
                       std::span<const StackEnds> ends, MemRecordLayout layout,
                       std::vector<uint8_t>& scratch, RevalidationPlan& plan, StackStore& store) {
  if (buckets.empty()) return true;
  if (!ends.empty() && ends.size() != buckets.size()) {
    throw Error(ErrorKind::kInternal, "revalidating ", buckets.size(), " buckets with ",
                ends.size(), " remembered stacks");
  }
  constexpr uint64_t kGap = 4096;
  const uint64_t record_size = MemRecordSize(layout);
  UpdatePlan(plan, buckets, ends, record_size, plan.buckets > 0 ? plan.gap : kGap);
  BatchesResult result = ReadAndCheck(mem, plan, buckets, ends, layout, scratch, store);
  if (result == BatchesResult::kUnreadable && plan.gap != 0) {
    // A gap read along may be unmapped: read only the buckets' own bytes
    // (and keep doing so for this list).
    plan = PlanRevalidation(buckets, ends, record_size, 0);
    MakeBatches(plan, record_size);
    result = ReadAndCheck(mem, plan, buckets, ends, layout, scratch, store);
  }
  return result == BatchesResult::kSame;
}

namespace {
MemProfileRecord ToRecord(const Bucket& b, const MemRecordCycle& c) {
  MemProfileRecord r;
  r.alloc_bytes = static_cast<int64_t>(c.alloc_bytes);
  r.free_bytes = static_cast<int64_t>(c.free_bytes);
  r.alloc_objects = static_cast<int64_t>(c.allocs);
  r.free_objects = static_cast<int64_t>(c.frees);
  r.bucket = &b;
  return r;
}

// What mProf_FlushLocked(cycle % 3) leaves in the bucket's active cycle.
MemRecordCycle Flushed(const Bucket& b, uint32_t cycle) {
  MemRecordCycle c = b.active;
  c.Add(b.Future(cycle % 3));
  return c;
}
}  // namespace

bool NothingPublished(std::span<const Bucket> buckets, uint32_t cycle) {
  for (const Bucket& b : buckets) {
    const MemRecordCycle c = Flushed(b, cycle);
    if (c.allocs != 0 || c.frees != 0) return false;
  }
  return true;
}

MemProfileRecord EmulatedRecord(const Bucket& b, uint32_t cycle, bool nothing_published) {
  MemRecordCycle c = Flushed(b, cycle);
  if (nothing_published) {
    // The runtime folds in all three future cycles (future[cycle % 3] is
    // already in c after the flush, so adding it again from the raw bucket
    // would double count).
    for (uint32_t k = 0; k < 3; ++k) {
      if (k != cycle % 3) c.Add(b.Future(k));
    }
  }
  return ToRecord(b, c);
}

MemProfileRecord PublishedRecord(const Bucket& b) { return ToRecord(b, b.active); }

std::vector<MemProfileRecord> EmulateMemProfile(std::span<const Bucket> buckets, uint32_t cycle) {
  const bool nothing_published = NothingPublished(buckets, cycle);
  std::vector<MemProfileRecord> out;
  out.reserve(buckets.size());
  for (const Bucket& b : buckets) out.push_back(EmulatedRecord(b, cycle, nothing_published));
  return out;
}

std::vector<MemProfileRecord> PublishedCounts(std::span<const Bucket> buckets) {
  std::vector<MemProfileRecord> out;
  out.reserve(buckets.size());
  for (const Bucket& b : buckets) out.push_back(PublishedRecord(b));
  return out;
}

}  // namespace goheap2pprof
