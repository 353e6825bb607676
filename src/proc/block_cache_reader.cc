#include "proc/block_cache_reader.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

namespace goheap2pprof {

BlockCacheReader::BlockCacheReader(MemoryReader& inner, std::vector<AddressRange> ranges,
                                   uint64_t block_size, size_t first_arena_size)
    : inner_(inner),
      ranges_(std::move(ranges)),
      block_size_(block_size),
      first_arena_size_(first_arena_size) {
  std::sort(ranges_.begin(), ranges_.end(),
            [](const AddressRange& a, const AddressRange& b) { return a.start < b.start; });
}

const AddressRange* BlockCacheReader::RangeFor(uint64_t addr) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                             [](uint64_t a, const AddressRange& r) { return a < r.start; });
  if (it == ranges_.begin()) return nullptr;
  --it;
  return addr < it->end ? &*it : nullptr;
}

namespace {
// Arenas grow geometrically, so a small target maps little and a large one
// needs few mappings (they take memory only as they fill).
constexpr size_t kMaxArenaSize = 256 << 20;
// Transparent huge page size on x86-64 and arm64 with 4 KiB pages.
constexpr size_t kHugePage = 2 << 20;
}  // namespace

BlockCacheReader::Arena::Arena(size_t size) {
  // Address space only: the pages are populated as blocks are carved out
  // (Take), so a large arena costs memory only for the bytes really read.
  // Whole 2 MiB huge pages, aligned to 2 MiB, so that the kernel can back
  // the arena with transparent huge pages: one fault and one clear per
  // 2 MiB instead of 512 of each (THP is usually "madvise" only).
  const size_t mapped = (size + kHugePage - 1) & ~(kHugePage - 1);
  void* p = mmap(nullptr, mapped + kHugePage, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return;  // Take() then fails and blocks are read directly
  // Trim the mapping to a 2 MiB aligned start and whole huge pages.
  const uintptr_t raw = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (raw + kHugePage - 1) & ~uintptr_t{kHugePage - 1};
  if (aligned > raw) munmap(p, aligned - raw);
  munmap(reinterpret_cast<void*>(aligned + mapped), raw + kHugePage - aligned);
  base_ = reinterpret_cast<uint8_t*>(aligned);
  mapped_ = mapped;
  size_ = size;                                  // blocks are carved only from the size asked for
  (void)madvise(base_, mapped_, MADV_HUGEPAGE);  // a hint: without THP, small pages
}

BlockCacheReader::Arena::~Arena() {
  if (base_ != nullptr) munmap(base_, mapped_);
}

namespace {
// Pages are populated in steps of this many bytes ahead of the fill mark.
constexpr size_t kPopulateStep = 2 << 20;
}  // namespace

uint8_t* BlockCacheReader::Arena::Take(size_t n) {
  const size_t room = size_ - used_;
  if (base_ == nullptr || n > room) return nullptr;
  uint8_t* p = base_ + used_;
  // Blocks start 64-byte aligned; the padding after the last one may not fit,
  // and used_ must never pass size_ (room would wrap and hand out memory
  // beyond the arena).
  used_ += std::min(room, (n + 63) & ~size_t{63});
  if (used_ > populated_) {
    // MADV_POPULATE_WRITE faults a whole step in with one system call
    // instead of one page fault per 4 KiB as the block is filled, in huge
    // pages where the kernel has them. Before Linux 5.14 it fails, and the
    // pages fault in one by one.
    const size_t end = std::min(size_, (used_ + kPopulateStep - 1) & ~(kPopulateStep - 1));
    const size_t from = populated_ & ~size_t{4095};
    (void)madvise(base_ + from, end - from, MADV_POPULATE_WRITE);
    populated_ = end;
  }
  return p;
}

std::span<uint8_t> BlockCacheReader::Allocate(size_t n) {
  uint8_t* p = arenas_.empty() ? nullptr : arenas_.back()->Take(n);
  if (p == nullptr) {
    size_t size =
        arenas_.empty() ? first_arena_size_ : std::min(kMaxArenaSize, 2 * arenas_.back()->size());
    arenas_.push_back(std::make_unique<Arena>(std::max(size, n)));
    p = arenas_.back()->Take(n);
  }
  return p == nullptr ? std::span<uint8_t>() : std::span<uint8_t>(p, n);
}

std::shared_ptr<const void> BlockCacheReader::KeepBytes() && {
  blocks_.clear();
  return std::make_shared<std::vector<std::unique_ptr<Arena>>>(std::move(arenas_));
}

const BlockCacheReader::Block* BlockCacheReader::BlockFor(uint64_t addr) {
  const uint64_t aligned = addr & ~(block_size_ - 1);
  auto it = blocks_.find(aligned);
  if (it != blocks_.end()) return it->second.bytes.empty() ? nullptr : &it->second;
  Block block;
  if (const AddressRange* r = RangeFor(addr)) {
    // Clamp to the mapping so the read cannot fault on a neighbour.
    block.start = std::max(aligned, r->start);
    // The last block of the address space ends at 2^64, which wraps to 0.
    const uint64_t block_end = aligned + block_size_ == 0 ? UINT64_MAX : aligned + block_size_;
    const uint64_t end = std::min(block_end, r->end);
    block.bytes = Allocate(end - block.start);
    if (block.bytes.empty() || !inner_.TryRead(block.start, block.bytes)) {
      block.bytes = {};  // the mapping changed (or no memory): read directly
    }
  }
  auto [pos, inserted] = blocks_.emplace(aligned, std::move(block));
  return pos->second.bytes.empty() ? nullptr : &pos->second;
}

const uint8_t* BlockCacheReader::View(uint64_t addr, uint64_t len) {
  const Block* b = BlockFor(addr);
  if (b == nullptr || addr < b->start) return nullptr;
  const uint64_t off = addr - b->start;
  if (off > b->bytes.size() || len > b->bytes.size() - off) return nullptr;
  return b->bytes.data() + off;
}

bool BlockCacheReader::TryRead(uint64_t addr, std::span<uint8_t> dst) {
  size_t done = 0;
  while (done < dst.size()) {
    const uint64_t at = addr + done;
    if (at < addr) return false;  // wrapped around the address space
    const Block* b = BlockFor(at);
    if (b == nullptr || at < b->start) {
      // Outside the cached mappings: read the rest directly.
      return inner_.TryRead(at, dst.subspan(done));
    }
    const uint64_t off = at - b->start;
    if (off >= b->bytes.size()) return inner_.TryRead(at, dst.subspan(done));
    const size_t n = std::min<uint64_t>(b->bytes.size() - off, dst.size() - done);
    std::memcpy(dst.data() + done, b->bytes.data() + off, n);
    done += n;
  }
  return true;
}

}  // namespace goheap2pprof
