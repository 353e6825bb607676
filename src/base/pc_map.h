// A hash map from non-zero 64-bit keys (program counters, addresses) to
// values, with open addressing and linear probing. The profile builder looks
// up every PC of every stack here; std::unordered_map's node allocation and
// prime-modulo hashing made that the single largest cost of a capture.
//
//   PcMap<uint32_t> m;
//   m.Insert(0x401234, 7);
//   if (const uint32_t* v = m.Find(0x401234)) use(*v);
//
// And how many leading or trailing PCs two stacks share (SharedLeadingPcs,
// SharedTrailingPcs), and how many repeat one PC (LeadingRepeats).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

namespace goheap2pprof {

template <typename V>
class PcMap {
 public:
  PcMap() { slots_.resize(16); }

  size_t size() const { return size_; }
  size_t ApproximateBytes() const { return slots_.capacity() * sizeof(Entry); }

  // nullptr if absent. Key 0 is never present.
  const V* Find(uint64_t key) const {
    if (key == 0) return nullptr;
    for (size_t i = Slot(key);; i = (i + 1) & (slots_.size() - 1)) {
      const Entry& e = slots_[i];
      if (e.key == key) return &e.value;
      if (e.key == 0) return nullptr;
    }
  }
  V* Find(uint64_t key) { return const_cast<V*>(std::as_const(*this).Find(key)); }

  // Inserts or overwrites; key must not be 0. Returns the stored value.
  V& Insert(uint64_t key, V value) {
    if (2 * (size_ + 1) > slots_.size()) Grow();
    for (size_t i = Slot(key);; i = (i + 1) & (slots_.size() - 1)) {
      Entry& e = slots_[i];
      if (e.key == key) {
        e.value = std::move(value);
        return e.value;
      }
      if (e.key == 0) {
        e.key = key;
        e.value = std::move(value);
        ++size_;
        return e.value;
      }
    }
  }

 private:
  struct Entry {
    uint64_t key = 0;
    V value{};
  };
  size_t Slot(uint64_t key) const {
    // Fibonacci hashing spreads PCs, which share their high bits.
    return static_cast<size_t>((key * 0x9e3779b97f4a7c15ull) >> 32) & (slots_.size() - 1);
  }
  void Grow() {
    std::vector<Entry> old = std::move(slots_);
    slots_.assign(old.size() * 2, Entry{});
    size_ = 0;
    for (Entry& e : old) {
      if (e.key != 0) Insert(e.key, std::move(e.value));
    }
  }

  std::vector<Entry> slots_;
  size_t size_ = 0;
};

// How many leading PCs a memo of the last stack keeps (the builder's plain
// prefix, the warmer's last stack): stacks that start alike share their
// first few frames (an allocation site and its callers), and a deep stack's
// whole is not copied for them.
inline constexpr size_t kRememberedLeadingPcs = 128;

// The number of leading words a and b have in common.
inline size_t SharedLeadingPcs(std::span<const uint64_t> a, std::span<const uint64_t> b) {
  const size_t most = std::min(a.size(), b.size());
  return static_cast<size_t>(std::mismatch(a.begin(), a.begin() + most, b.begin()).first -
                             a.begin());
}

// How many trailing PCs a memo of the last stack keeps (the builder's plain
// suffix, the warmer's last stack's end): stacks end alike in their callers'
// frames (a server's loop, main.main, runtime.main, runtime.goexit), and
// neighbouring call paths of a recursion in the frames from where they part
// to the root.
inline constexpr size_t kRememberedTrailingPcs = 32;

// The number of trailing words a and b have in common.
inline size_t SharedTrailingPcs(std::span<const uint64_t> a, std::span<const uint64_t> b) {
  const size_t most = std::min(a.size(), b.size());
  const uint64_t* const a_end = a.data() + a.size();
  const uint64_t* const b_end = b.data() + b.size();
  size_t n = 0;
  while (n < most && *(a_end - n - 1) == *(b_end - n - 1)) ++n;
  return n;
}

// The number of leading words of `words` equal to pc. A recursion repeats
// one PC hundreds of times, and every deep stack is scanned for its runs
// twice (the warmer and the build): eight words are compared at once, with
// no branch between them, before the last few one by one.
inline size_t LeadingRepeats(std::span<const uint64_t> words, uint64_t pc) {
  // Most runs are of one word or none (the stacks of no recursion): those
  // are told apart before the registers are set up.
  if (words.empty() || words[0] != pc) return 0;
  if (words.size() == 1 || words[1] != pc) return 1;
  // Two words a register (SSE2 on amd64, NEON on arm64).
  using Pair = uint64_t __attribute__((vector_size(16)));
  const Pair want = {pc, pc};
  const uint64_t* p = words.data() + 2;
  const uint64_t* const end = words.data() + words.size();
  while (end - p >= 8) {
    Pair w[4];
    std::memcpy(w, p, sizeof(w));
    const Pair differ = ((w[0] ^ want) | (w[1] ^ want)) | ((w[2] ^ want) | (w[3] ^ want));
    if ((differ[0] | differ[1]) != 0) break;
    p += 8;
  }
  while (p < end && *p == pc) ++p;
  return static_cast<size_t>(p - words.data());
}

}  // namespace goheap2pprof
