#include "proc/block_cache_reader.h"

#include <algorithm>
#include <cstring>

namespace goheap2pprof {

BlockCacheReader::BlockCacheReader(MemoryReader& inner, std::vector<AddressRange> ranges,
                                   uint64_t block_size)
    : inner_(inner), ranges_(std::move(ranges)), block_size_(block_size) {
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

const BlockCacheReader::Block* BlockCacheReader::BlockFor(uint64_t addr) {
  const uint64_t aligned = addr & ~(block_size_ - 1);
  auto it = blocks_.find(aligned);
  if (it != blocks_.end()) return it->second.bytes.empty() ? nullptr : &it->second;
  Block block;
  if (const AddressRange* r = RangeFor(addr)) {
    // Clamp to the mapping so the read cannot fault on a neighbour.
    block.start = std::max(aligned, r->start);
    uint64_t end = std::min(aligned + block_size_, r->end);
    block.bytes.resize(end - block.start);
    if (inner_.TryRead(block.start, block.bytes)) {
      cached_bytes_ += block.bytes.size();
    } else {
      block.bytes.clear();  // the mapping changed; fall back to direct reads
    }
  }
  auto [pos, inserted] = blocks_.emplace(aligned, std::move(block));
  return pos->second.bytes.empty() ? nullptr : &pos->second;
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
