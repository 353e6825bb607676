// Deduplicated storage of bucket stacks. Many heap buckets share a stack:
// the runtime keys buckets by stack and allocation size, so one allocation
// site that allocates several sizes has one bucket per size, each holding the
// same PCs. A walk interns every bucket's stack here instead of keeping a
// copy per bucket (or the target's whole bucket memory): identical stacks
// share one copy, which the store owns for as long as it lives.
//
//   StackStore stacks;
//   std::span<const uint64_t> s = stacks.Intern(bucket_bytes + 48, nstk);
//   // s stays valid (and in place) while `stacks` lives, also when moved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace goheap2pprof {

class StackStore {
 public:
  // Hash of n stack words at p (any alignment). Replaceable so that tests
  // can force collisions.
  using HashFn = uint64_t (*)(const uint8_t* p, size_t n);
  static uint64_t DefaultHash(const uint8_t* p, size_t n);

  explicit StackStore(HashFn hash = &DefaultHash) : hash_(hash) {}
  StackStore(StackStore&&) noexcept = default;
  StackStore& operator=(StackStore&&) noexcept = default;
  StackStore(const StackStore&) = delete;
  StackStore& operator=(const StackStore&) = delete;

  // The stored stack equal to the n words at p (the target's bytes, any
  // alignment), stored first if new. The work per call is bounded whatever
  // the words: past a few candidates of the same hash, or a long probe, the
  // stack is stored without being shared.
  std::span<const uint64_t> Intern(const uint8_t* p, size_t n);

  // n words of storage of the caller's, not interned, uninitialized, in
  // place while the store lives (a bucket's unpublished counters).
  uint64_t* Allocate(size_t n);

  size_t stacks() const { return stacks_; }  // copies stored
  size_t words() const { return words_; }    // words in them
  size_t ApproximateBytes() const;

 private:
  struct Entry {
    uint64_t hash = 0;
    const uint64_t* words = nullptr;  // nullptr: empty slot
    size_t n = 0;
  };
  uint64_t* Store(const uint8_t* p, size_t n);
  void Grow();

  HashFn hash_;
  std::vector<Entry> table_;  // open addressing, linear probing, at most half full
  size_t used_ = 0;           // entries in table_
  // Storage for the stacks: chunks that never move once allocated.
  std::vector<std::unique_ptr<uint64_t[]>> chunks_;
  size_t chunk_words_ = 0;  // capacity of the last chunk
  size_t chunk_used_ = 0;   // words used in the last chunk
  size_t chunk_total_ = 0;  // words allocated in all chunks
  size_t stacks_ = 0;
  size_t words_ = 0;
};

}  // namespace goheap2pprof
