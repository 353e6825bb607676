// A MemoryReader that fetches the target's memory in large aligned blocks and
// serves small reads from them, so that walking a linked list of small
// objects costs system calls in proportion to the bytes the list occupies,
// not to the number of objects. Blocks are clamped to the target's mappings
// (from /proc/<pid>/maps), so a block read never straddles unmapped memory.
//
// Only a few blocks are held, in buffers allocated once and reused, the least
// recently used one evicted: the memory the reader touches is bounded by
// max_blocks x block_size whatever the size of the target. The heap-profile
// bucket list is walked in reverse allocation order through a handful of
// interleaved persistentalloc chunks (one per P), so a small cache still
// reads each block about once. A block evicted and needed again is read
// again: between the two reads the target may have written to it (counters
// move; headers and stacks never change once published).
//
//   BlockCacheReader cached(process_reader, maps_ranges);
//   WalkBuckets(cached, head, limits, stacks);   // ~1 syscall per block touched
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "proc/memory_reader.h"

namespace goheap2pprof {

struct AddressRange {
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
};

class BlockCacheReader : public MemoryReader {
 public:
  // ranges: readable mappings of the target (others are read through
  // `inner` uncached). block_size must be a power of two >= 8; max_blocks
  // (at least 1) blocks are held at a time.
  BlockCacheReader(MemoryReader& inner, std::vector<AddressRange> ranges,
                   uint64_t block_size = 256 * 1024, size_t max_blocks = 16);
  ~BlockCacheReader() override;
  BlockCacheReader(const BlockCacheReader&) = delete;
  BlockCacheReader& operator=(const BlockCacheReader&) = delete;

  bool TryRead(uint64_t addr, std::span<uint8_t> dst) override;
  // The bytes when [addr, addr+len) lies within one cached block, valid
  // until the next call on this reader (which may evict the block).
  const uint8_t* View(uint64_t addr, uint64_t len) override;
  ReadStats stats() const override { return inner_.stats(); }

  // Whether a reader's buffer outlives it, kept for the next reader of the
  // same size (one buffer in the process at most): for a process that walks
  // again and again (a serve worker). Off by default; turning it off gives
  // back the kept buffer.
  static void KeepBuffersForReuse(bool keep);
  // Gives the kept buffer back to the system: for a process that goes idle.
  static void ReleaseKeptBuffer();
  // The kept buffer's mapped bytes; 0 when none is kept.
  static size_t KeptBufferBytes();

  // Blocks read from the target (including re-reads after eviction), and
  // those that could not be read.
  uint64_t block_reads() const { return block_reads_; }
  uint64_t failed_blocks() const { return failed_blocks_; }

 private:
  static constexpr uint64_t kNoBlock = 1;  // never a block address (those are aligned)
  struct Slot {
    uint64_t aligned = kNoBlock;  // the block's aligned address
    uint64_t start = 0;           // first byte held (the block clamped to its mapping)
    uint64_t len = 0;             // bytes held; 0 if the block could not be read
    uint64_t last_use = 0;        // 0: never used
  };
  // The slot holding the block of addr, reading it on first use (evicting
  // the least recently used block); nullptr if addr is in no known mapping
  // or the block could not be read.
  const Slot* BlockFor(uint64_t addr);
  const AddressRange* RangeFor(uint64_t addr) const;
  // The slot's bytes, mapping and populating the buffer as slots come into use.
  uint8_t* SlotBytes(const Slot& s);

  MemoryReader& inner_;
  std::vector<AddressRange> ranges_;
  uint64_t block_size_;
  std::vector<Slot> slots_;
  // max_blocks x block_size bytes, mapped on first use (buffer_size_ bytes
  // from buffer_; heap memory if mapping failed, heap_buffer_).
  uint8_t* buffer_ = nullptr;
  size_t buffer_size_ = 0;
  size_t mapped_ = 0;     // bytes mmapped at buffer_ (0 if from the heap)
  size_t populated_ = 0;  // bytes from buffer_ whose pages were populated
  std::vector<uint8_t> heap_buffer_;
  size_t last_ = 0;  // the slot used last: most lookups hit it
  uint64_t tick_ = 0;
  uint64_t block_reads_ = 0;
  uint64_t failed_blocks_ = 0;
};

}  // namespace goheap2pprof
