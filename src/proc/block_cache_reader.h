// A MemoryReader that fetches the target's memory in large aligned blocks and
// serves small reads from them, so that walking a linked list of small
// objects costs system calls in proportion to the bytes the list occupies,
// not to the number of objects. Blocks are clamped to the target's mappings
// (from /proc/<pid>/maps), so a block read never straddles unmapped memory.
// Cached bytes are a snapshot: the walker re-reads nothing.
//
//   BlockCacheReader cached(process_reader, maps_ranges);
//   WalkBuckets(cached, head, limits);   // ~1 syscall per block touched
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "proc/memory_reader.h"

namespace goheap2pprof {

struct AddressRange {
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
};

class BlockCacheReader : public MemoryReader {
 public:
  // ranges: readable mappings of the target, sorted by start (others are
  // read through `inner` uncached). block_size must be a power of two.
  // first_arena_size: the first arena's bytes (tests make it small to
  // exercise full arenas); later arenas double up to 256 MiB.
  BlockCacheReader(MemoryReader& inner, std::vector<AddressRange> ranges,
                   uint64_t block_size = 256 * 1024, size_t first_arena_size = 4 << 20);

  bool TryRead(uint64_t addr, std::span<uint8_t> dst) override;
  // The bytes when [addr, addr+len) lies within one cached block.
  const uint8_t* View(uint64_t addr, uint64_t len) override;
  ReadStats stats() const override { return inner_.stats(); }

  // Ends the reader, keeping the bytes it lent (View) alive as long as the
  // returned handle: a walk can then use them in place after the reader is
  // gone.
  std::shared_ptr<const void> KeepBytes() &&;

  // Large anonymous mappings that blocks are carved from, populated a few
  // MiB at a time as they fill instead of page by page. Public for its unit test.
  class Arena {
   public:
    explicit Arena(size_t size);
    ~Arena();
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;
    // n bytes at a 64-byte aligned offset; nullptr when they do not fit (or
    // the mapping failed).
    uint8_t* Take(size_t n);
    size_t size() const { return size_; }

   private:
    uint8_t* base_ = nullptr;
    size_t mapped_ = 0;  // bytes mapped from base_: size_ rounded up to 2 MiB
    size_t size_ = 0;
    size_t used_ = 0;
    size_t populated_ = 0;  // bytes from base_ whose pages were populated
  };

 private:
  struct Block {
    uint64_t start = 0;
    std::span<uint8_t> bytes;  // in an arena; empty if the block could not be read
  };
  std::span<uint8_t> Allocate(size_t n);
  // The block holding addr, reading it on first use; nullptr if addr is in no
  // known mapping or the block could not be read.
  const Block* BlockFor(uint64_t addr);
  const AddressRange* RangeFor(uint64_t addr) const;

  MemoryReader& inner_;
  std::vector<AddressRange> ranges_;
  uint64_t block_size_;
  size_t first_arena_size_;
  std::unordered_map<uint64_t, Block> blocks_;  // by aligned block address
  std::vector<std::unique_ptr<Arena>> arenas_;
};

}  // namespace goheap2pprof
