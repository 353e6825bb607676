#include "proc/block_cache_reader.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <utility>

#include "base/huge_pages.h"

namespace goheap2pprof {

BlockCacheReader::BlockCacheReader(MemoryReader& inner, std::vector<AddressRange> ranges,
                                   uint64_t block_size, size_t max_blocks)
    : inner_(inner),
      ranges_(std::move(ranges)),
      block_size_(block_size),
      slots_(std::max<size_t>(1, max_blocks)) {
  std::sort(ranges_.begin(), ranges_.end(),
            [](const AddressRange& a, const AddressRange& b) { return a.start < b.start; });
}

namespace {

// The buffer of the last reader that ended, kept for the next one where the
// process asked for it (KeepBuffersForReuse): a serve worker walks a target
// through a new reader at every repeated capture, and each fresh buffer was
// populated again, its huge pages cleared by the kernel (MADV_POPULATE_WRITE:
// 8-10% of a worker's CPU in a Go 1.19.8 binary 100k target's repeated
// captures, `perf record`, 2026-12-06). One is kept at most: readers rarely
// overlap, and one that finds none maps its own. A one-shot capture keeps
// none: its peak RSS would hold the buffer to the end.
struct KeptBuffer {
  uint8_t* data = nullptr;
  size_t mapped = 0;
  size_t populated = 0;
};
std::mutex kept_mu;
bool keep_buffers = false;
KeptBuffer kept;

// The kept buffer if it is `mapped` bytes, taken; an empty one otherwise.
KeptBuffer TakeKept(size_t mapped) {
  std::lock_guard<std::mutex> lock(kept_mu);
  if (kept.data == nullptr || kept.mapped != mapped) return {};
  return std::exchange(kept, {});
}

// Maps `mapped` bytes (whole 2 MiB huge pages) aligned to 2 MiB; nullptr if
// the mapping failed.
uint8_t* MapHugeAligned(size_t mapped) {
  void* p = mmap(nullptr, mapped + kHugePageBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const uintptr_t raw = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (raw + kHugePageBytes - 1) & ~uintptr_t{kHugePageBytes - 1};
  if (aligned > raw) munmap(p, aligned - raw);
  munmap(reinterpret_cast<void*>(aligned + mapped), raw + kHugePageBytes - aligned);
  uint8_t* buffer = reinterpret_cast<uint8_t*>(aligned);
  (void)madvise(buffer, mapped, MADV_HUGEPAGE);  // a hint: without THP, small pages
  return buffer;
}

}  // namespace

BlockCacheReader::~BlockCacheReader() {
  if (mapped_ == 0) return;
  KeptBuffer mine{buffer_, mapped_, populated_};
  {
    std::lock_guard<std::mutex> lock(kept_mu);
    if (keep_buffers && kept.data == nullptr) std::swap(kept, mine);
  }
  if (mine.data != nullptr) munmap(mine.data, mine.mapped);
}

void BlockCacheReader::KeepBuffersForReuse(bool keep) {
  {
    std::lock_guard<std::mutex> lock(kept_mu);
    keep_buffers = keep;
  }
  if (!keep) ReleaseKeptBuffer();
}

size_t BlockCacheReader::KeptBufferBytes() {
  std::lock_guard<std::mutex> lock(kept_mu);
  return kept.mapped;
}

void BlockCacheReader::ReleaseKeptBuffer() {
  KeptBuffer released;
  {
    std::lock_guard<std::mutex> lock(kept_mu);
    std::swap(kept, released);
  }
  if (released.data != nullptr) munmap(released.data, released.mapped);
}

const AddressRange* BlockCacheReader::RangeFor(uint64_t addr) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                             [](uint64_t a, const AddressRange& r) { return a < r.start; });
  if (it == ranges_.begin()) return nullptr;
  --it;
  return addr < it->end ? &*it : nullptr;
}

uint8_t* BlockCacheReader::SlotBytes(const Slot& s) {
  const size_t index = static_cast<size_t>(&s - slots_.data());
  if (buffer_ == nullptr) {
    buffer_size_ = slots_.size() * block_size_;
    // Whole 2 MiB huge pages, aligned to 2 MiB, so that the kernel can back
    // the buffer with transparent huge pages: one fault and one clear per
    // 2 MiB instead of 512 of each (THP is usually "madvise" only). Fresh
    // memory is what a capture pays most for, so it is taken only as slots
    // come into use (populated below). The last reader's buffer, when it is
    // the same size, comes with the pages it populated.
    const size_t mapped = (buffer_size_ + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
    const KeptBuffer reused = TakeKept(mapped);
    buffer_ = reused.data != nullptr ? reused.data : MapHugeAligned(mapped);
    if (buffer_ != nullptr) {
      mapped_ = mapped;
      populated_ = reused.populated;
    } else {
      heap_buffer_.resize(buffer_size_);
      buffer_ = heap_buffer_.data();
      populated_ = buffer_size_;
    }
  }
  const size_t end = (index + 1) * block_size_;
  if (end > populated_) {
    // MADV_POPULATE_WRITE faults a whole huge page in with one system call
    // instead of one page fault per 4 KiB as the block is filled. Slots come
    // into use in order (never-used ones first), so the populated part grows
    // from the start. Before Linux 5.14 it fails, and the pages fault in one
    // by one.
    const size_t to = std::min(mapped_, (end + kHugePageBytes - 1) & ~(kHugePageBytes - 1));
    (void)madvise(buffer_ + populated_, to - populated_, MADV_POPULATE_WRITE);
    populated_ = to;
  }
  return buffer_ + index * block_size_;
}

const BlockCacheReader::Slot* BlockCacheReader::BlockFor(uint64_t addr) {
  const uint64_t aligned = addr & ~(block_size_ - 1);
  Slot* slot = nullptr;
  if (slots_[last_].aligned == aligned) {
    slot = &slots_[last_];
  } else {
    for (Slot& s : slots_) {
      if (s.aligned == aligned) {
        slot = &s;
        break;
      }
    }
  }
  if (slot == nullptr) {
    const AddressRange* r = RangeFor(addr);
    if (r == nullptr) return nullptr;  // not cached: the caller reads directly
    // Evict the least recently used block (never-used slots first, in order).
    slot = &*std::min_element(slots_.begin(), slots_.end(),
                              [](const Slot& a, const Slot& b) { return a.last_use < b.last_use; });
    // Clamp to the mapping so the read cannot fault on a neighbour.
    slot->aligned = aligned;
    slot->start = std::max(aligned, r->start);
    // The last block of the address space ends at 2^64, which wraps to 0.
    const uint64_t block_end = aligned + block_size_ == 0 ? UINT64_MAX : aligned + block_size_;
    slot->len = std::min(block_end, r->end) - slot->start;
    ++block_reads_;
    if (!inner_.TryRead(slot->start, std::span<uint8_t>(SlotBytes(*slot), slot->len))) {
      slot->len = 0;  // the mapping changed: its reads go directly
      ++failed_blocks_;
    }
  }
  slot->last_use = ++tick_;
  last_ = static_cast<size_t>(slot - slots_.data());
  return slot->len == 0 ? nullptr : slot;
}

const uint8_t* BlockCacheReader::View(uint64_t addr, uint64_t len) {
  const Slot* s = BlockFor(addr);
  if (s == nullptr || addr < s->start) return nullptr;
  const uint64_t off = addr - s->start;
  if (off > s->len || len > s->len - off) return nullptr;
  return SlotBytes(*s) + off;
}

bool BlockCacheReader::TryRead(uint64_t addr, std::span<uint8_t> dst) {
  size_t done = 0;
  while (done < dst.size()) {
    const uint64_t at = addr + done;
    if (at < addr) return false;  // wrapped around the address space
    const Slot* s = BlockFor(at);
    if (s == nullptr || at < s->start) {
      // Outside the cached mappings: read the rest directly.
      return inner_.TryRead(at, dst.subspan(done));
    }
    const uint64_t off = at - s->start;
    if (off >= s->len) return inner_.TryRead(at, dst.subspan(done));
    const size_t n = std::min<uint64_t>(s->len - off, dst.size() - done);
    std::memcpy(dst.data() + done, SlotBytes(*s) + off, n);
    done += n;
  }
  return true;
}

}  // namespace goheap2pprof
