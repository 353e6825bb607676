// An open-addressing index from byte-string keys to entry numbers: a slot
// holds a 64-bit hash and an entry number, the keys stay with the caller's
// entries (key_of(entry)), and a hash match is confirmed by comparing the
// keys. Nothing is allocated per key.
// - The growth collector's lookups, once per sample of every profile
//   (pprof/growth/sites.h, pprof/growth/decode.cc): it replaced an
//   unordered_map keyed by each stack as a std::string, whose find
//   (std::_Hash_bytes, the node chase, the key copy into a buffer) was a
//   fifth of the report's CPU time over 100 profiles of 100k samples
//   (bench/README.md).
// - An executable's symbols by name (elf/elf_file.cc), indexed at every
//   capture's start: 15k symbols of a small Go program took 1.9 ms in an
//   unordered_map's nodes.
//
//   HashIndex index;
//   const uint32_t at = index.FindOrInsert(key, entries.size(), key_of);
//   if (at == entries.size()) entries.push_back(...);  // key was new
//   const uint32_t found = index.Find(key, key_of);     // HashIndex::kNone if absent
//
// Each index's hash has a seed of its own, made from a secret read once per
// process from std::random_device, so that a file made to collide with a
// known hash cannot make the lookups quadratic; the entry numbers do not
// depend on it. (A std::random_device took 44 us here, 1,000 timed: per
// index, it was 1.3% of a repeated capture's CPU, which opens three ELF
// files.) The hash function is a constructor argument so that a test can
// make every key collide.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

namespace goheap2pprof {

// A 64-bit hash of bytes, eight at a time (not cryptographic).
inline uint64_t HashBytes(std::string_view bytes, uint64_t seed) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ULL;
  uint64_t h = seed ^ (bytes.size() * kMul);
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 32;
  }
  if (i < bytes.size()) {
    uint64_t w = 0;
    std::memcpy(&w, bytes.data() + i, bytes.size() - i);
    h = (h ^ w) * kMul;
    h ^= h >> 32;
  }
  // The slot is taken from the low bits: mix the high ones into them.
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 32);
}

class HashIndex {
 public:
  using Hash = uint64_t (*)(std::string_view bytes, uint64_t seed);

  explicit HashIndex(Hash hash = HashBytes)
      : hash_(hash), seed_(RandomSeed()), slots_(kInitialSlots) {}

  // The entry whose key (key_of(entry), a string_view) equals `key`; if
  // there is none, `next` is entered as its entry and returned.
  template <typename KeyOf>
  uint32_t FindOrInsert(std::string_view key, uint32_t next, KeyOf key_of) {
    const uint64_t h = hash_(key, seed_);
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.entry == kEmpty) {
        s = {h, next};
        if (++used_ * 2 > slots_.size()) Grow();
        return next;
      }
      if (s.hash == h && key_of(s.entry) == key) return s.entry;
    }
  }

  // The entry whose key equals `key`, or kNone.
  static constexpr uint32_t kNone = UINT32_MAX;
  template <typename KeyOf>
  uint32_t Find(std::string_view key, KeyOf key_of) const {
    const uint64_t h = hash_(key, seed_);
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.entry == kEmpty) return kNone;
      if (s.hash == h && key_of(s.entry) == key) return s.entry;
    }
  }

  // Room for `keys` keys in all without growing (growing rehashes them all).
  void Reserve(size_t keys) {
    while (keys * 2 > slots_.size()) Grow();
  }

  size_t size() const { return used_; }

 private:
  static constexpr uint32_t kEmpty = kNone;
  static constexpr size_t kInitialSlots = 64;  // a power of two

  struct Slot {
    uint64_t hash = 0;
    uint32_t entry = kEmpty;
  };

  // The process's secret plus a count, mixed (SplitMix64's finalizer, a
  // bijection): distinct, and unpredictable without the secret.
  static uint64_t RandomSeed() {
    static const uint64_t secret = [] {
      std::random_device device;
      return (static_cast<uint64_t>(device()) << 32) | device();
    }();
    static std::atomic<uint64_t> count{0};
    uint64_t z =
        secret + (count.fetch_add(1, std::memory_order_relaxed) + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  // Doubles the table, which is at most half full after it, so that a probe
  // ends at an empty slot.
  void Grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.entry == kEmpty) continue;
      size_t i = s.hash & mask;
      while (slots_[i].entry != kEmpty) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }

  Hash hash_;
  uint64_t seed_;
  std::vector<Slot> slots_;
  size_t used_ = 0;
};

}  // namespace goheap2pprof
