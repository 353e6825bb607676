// The growth collector's index of sites by stack (growth_sites.h): an
// open-addressing table of 64-bit stack hashes and site numbers, with a full
// comparison of the stacks on a hash match. It replaced an unordered_map
// keyed by the stack's bytes as a std::string, whose find (std::_Hash_bytes,
// the node chase, the key copy into a buffer) was a fifth of the report's
// CPU time over 100 profiles of 100k samples (bench/README.md): every
// sample of every profile is looked up, and a site has one sample per
// object size.
//
//   SiteTable table;
//   const uint32_t site = table.FindOrInsert(stack, sites.size(), stack_of);
//   if (site == sites.size()) sites.push_back(...);  // it was new
//
// The table stores no stack: stack_of(site) gives a stored site's stack, so
// the stacks live once, in the sites. The hash function is a constructor
// argument so that a test can make every stack collide.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace goheap2pprof {

// A 64-bit hash of a stack of location numbers.
inline uint64_t HashStack(std::span<const uint32_t> stack) {
  uint64_t h = 0x243f6a8885a308d3ULL ^ stack.size();
  for (uint32_t id : stack) {
    h = (h ^ id) * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 32;
  }
  // The slot is taken from the low bits: mix the high ones into them.
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 32);
}

class SiteTable {
 public:
  using Hash = uint64_t (*)(std::span<const uint32_t>);

  explicit SiteTable(Hash hash = HashStack) : hash_(hash), slots_(kInitialSlots) {}

  // The site whose stack (stack_of(site)) equals `stack`; if there is none,
  // `next` is entered as its site and returned.
  template <typename StackOf>
  uint32_t FindOrInsert(std::span<const uint32_t> stack, uint32_t next, StackOf stack_of) {
    const uint64_t h = hash_(stack);
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.site == kEmpty) {
        s = {h, next};
        if (++used_ * 2 > slots_.size()) Grow();
        return next;
      }
      if (s.hash == h) {
        const std::span<const uint32_t> stored = stack_of(s.site);
        if (std::equal(stored.begin(), stored.end(), stack.begin(), stack.end())) return s.site;
      }
    }
  }

  size_t size() const { return used_; }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  static constexpr size_t kInitialSlots = 64;  // a power of two

  struct Slot {
    uint64_t hash = 0;
    uint32_t site = kEmpty;
  };

  // Doubles the table, which is at most half full after it: a probe ends
  // at an empty slot.
  void Grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.site == kEmpty) continue;
      size_t i = s.hash & mask;
      while (slots_[i].site != kEmpty) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }

  Hash hash_;
  std::vector<Slot> slots_;
  size_t used_ = 0;
};

}  // namespace goheap2pprof
