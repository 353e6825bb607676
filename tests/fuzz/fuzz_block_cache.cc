// Fuzz target: BlockCacheReader against the reader it caches. Whatever the
// mappings claim (ranges that overlap, extend past the memory, sit at the top
// of the address space) and however few blocks it holds (evicting and
// re-reading them), a cached read must
// succeed exactly when the direct read does and return the same bytes, and a
// View must return the target's bytes or nothing.
// Input:
//   u8  block size: 1 << (4 + b % 13) (16 B .. 64 KiB)
//   u8  blocks held: 1 + b % 8
//   u8  region: bit 0 places everything at the top of the address space
//   u8  ranges (n % 8), then n x {u16 offset, u16 length}: the "maps"
//   u8  memory chunks (n % 8), then n x {u16 offset, u16 length}: what is
//       really readable (bytes derived from the address)
//   then reads of 5 bytes each: u8 kind (even: TryRead, odd: View), u16
//   offset, u16 length (offsets are from the region base).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "proc/block_cache_reader.h"
#include "proc/memory_reader.h"

namespace {

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool Has(size_t n) const { return n <= size_ - pos_; }
  uint8_t U8() { return Has(1) ? data_[pos_++] : 0; }
  uint16_t U16() {
    const uint16_t lo = U8();
    return static_cast<uint16_t>(lo | (U8() << 8));
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

uint8_t ByteAt(uint64_t addr) { return static_cast<uint8_t>((addr * 0x9e3779b97f4a7c15ull) >> 56); }

// Memory as a process has it: readable wherever some chunk covers a byte,
// adjacent and overlapping chunks read as one (TestMemory would refuse a
// read across two of its ranges, which real memory does not).
class ChunkMemory : public goheap2pprof::MemoryReader {
 public:
  void Add(uint64_t start, uint64_t end) { chunks_.push_back({start, end}); }
  bool Covered(uint64_t addr, uint64_t len) const {
    if (len > UINT64_MAX - addr) return false;  // wraps past the address space
    const uint64_t end = addr + len;
    for (uint64_t at = addr; at < end;) {
      uint64_t reach = at;
      for (const goheap2pprof::AddressRange& c : chunks_) {
        if (c.start <= at && at < c.end) reach = std::max(reach, c.end);
      }
      if (reach == at) return false;
      at = reach;
    }
    return true;
  }
  bool TryRead(uint64_t addr, std::span<uint8_t> dst) override {
    if (!Covered(addr, dst.size())) return false;
    for (size_t i = 0; i < dst.size(); ++i) dst[i] = ByteAt(addr + i);
    return true;
  }

 private:
  std::vector<goheap2pprof::AddressRange> chunks_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace goheap2pprof;
  Input in(data, size);
  const uint64_t block_size = uint64_t{1} << (4 + in.U8() % 13);
  const size_t max_blocks = 1 + in.U8() % 8;
  // At the top, the last range may end exactly at 2^64 - 1 (exclusive end
  // UINT64_MAX), the highest end a mapping can have.
  const uint64_t base = (in.U8() & 1) ? UINT64_MAX - 0x20000 : 0x10000;

  std::vector<AddressRange> ranges;
  for (int n = in.U8() % 8; n > 0; --n) {
    const uint64_t start = base + in.U16() * 2;
    const uint64_t len = in.U16();
    ranges.push_back({start, len > UINT64_MAX - start ? UINT64_MAX : start + len});
  }
  ChunkMemory mem;
  for (int n = in.U8() % 8; n > 0; --n) {
    const uint64_t start = base + in.U16() * 2;
    const uint64_t len = in.U16();
    mem.Add(start, len > UINT64_MAX - start ? UINT64_MAX : start + len);
  }

  BlockCacheReader cached(mem, ranges, block_size, max_blocks);
  std::vector<uint8_t> want, got;
  while (in.Has(5)) {
    const bool view = in.U8() & 1;
    const uint64_t addr = base + in.U16() * 2 + 1;  // odd: crosses block edges unaligned
    const uint64_t len = in.U16();
    want.assign(len, 0);
    const bool direct_ok = mem.TryRead(addr, want);
    if (view) {
      const uint8_t* p = cached.View(addr, len);
      if (p != nullptr && (!direct_ok || (len != 0 && std::memcmp(p, want.data(), len) != 0))) {
        __builtin_trap();
      }
    } else {
      got.assign(len, 0xaa);
      const bool cached_ok = cached.TryRead(addr, got);
      if (cached_ok != direct_ok) __builtin_trap();
      if (cached_ok && got != want) __builtin_trap();
    }
  }
  return 0;
}
