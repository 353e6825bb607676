#include "heap/stack_store.h"

#include <algorithm>
#include <cstring>

#include "base/huge_pages.h"

namespace goheap2pprof {

namespace {
// Chunks start small (a small target takes little) and grow to this many
// words (8 MiB); a longer stack gets a chunk of its own.
constexpr size_t kFirstChunkWords = 4096;
constexpr size_t kMaxChunkWords = size_t{1} << 20;
constexpr size_t kFirstTableSize = 1024;  // a power of two
// Bounds on the work of one Intern: slots probed, and stacks of the same
// hash compared word by word. With a good hash neither is ever reached; they
// keep crafted or degenerate input from making the walk quadratic.
constexpr size_t kMaxProbe = 64;
constexpr int kMaxCompares = 8;
}  // namespace

uint64_t StackStore::DefaultHash(const uint8_t* p, size_t n) {
  // Four independent lanes (deep stacks hash at several words per cycle),
  // each word mixed in with a multiply; combined and finished with
  // MurmurHash3's 64-bit finalizer so that the low bits (the table index)
  // depend on every word.
  constexpr uint64_t kMul = 0xff51afd7ed558ccdull;
  uint64_t lane[4] = {0x9e3779b97f4a7c15ull ^ n, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull,
                      0x27d4eb2f165667c5ull};
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, p + 8 * (i + k), 8);
      lane[k] = (lane[k] ^ w) * kMul;
      lane[k] ^= lane[k] >> 29;
    }
  }
  for (; i < n; ++i) {
    uint64_t w;
    std::memcpy(&w, p + 8 * i, 8);
    lane[0] = (lane[0] ^ w) * kMul;
    lane[0] ^= lane[0] >> 29;
  }
  uint64_t h = lane[0];
  for (int k = 1; k < 4; ++k) h = (h ^ lane[k]) * kMul + (h >> 31);
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

size_t StackStore::ApproximateBytes() const {
  return 8 * chunk_total_ + table_.capacity() * sizeof(Entry);
}

uint64_t* StackStore::Allocate(size_t n) {
  if (chunks_.empty() || n > chunk_words_ - chunk_used_) {
    const size_t next =
        chunks_.empty() ? kFirstChunkWords : std::min(kMaxChunkWords, 2 * chunk_words_);
    const size_t size = std::max(next, n);
    // Default-initialized: pages are touched only as stacks are copied in.
    chunks_.push_back(std::unique_ptr<uint64_t[]>(new uint64_t[size]));
    AdviseHugePages(chunks_.back().get(), 8 * size);
    chunk_words_ = size;
    chunk_used_ = 0;
    chunk_total_ += size;
  }
  uint64_t* at = chunks_.back().get() + chunk_used_;
  chunk_used_ += n;
  return at;
}

uint64_t* StackStore::Store(const uint8_t* p, size_t n) {
  uint64_t* at = Allocate(n);
  std::memcpy(at, p, 8 * n);
  words_ += n;
  ++stacks_;
  return at;
}

void StackStore::Grow() {
  std::vector<Entry> old = std::move(table_);
  const size_t slots = old.empty() ? kFirstTableSize : 2 * old.size();
  table_ = std::vector<Entry>();
  GrowWithHugePages(table_, slots);
  table_.assign(slots, Entry{});
  used_ = 0;
  const size_t mask = table_.size() - 1;
  for (const Entry& e : old) {
    if (e.words == nullptr) continue;
    size_t i = e.hash & mask;
    while (table_[i].words != nullptr) i = (i + 1) & mask;
    table_[i] = e;
    ++used_;
  }
}

std::span<const uint64_t> StackStore::Intern(const uint8_t* p, size_t n) {
  if (n == 0) return {};
  if (2 * (used_ + 1) > table_.size()) Grow();
  const uint64_t h = hash_(p, n);
  const size_t mask = table_.size() - 1;
  size_t i = h & mask;
  int compares = 0;
  for (size_t probe = 0; probe < kMaxProbe; ++probe, i = (i + 1) & mask) {
    Entry& e = table_[i];
    if (e.words == nullptr) {
      e = Entry{h, Store(p, n), n};
      ++used_;
      return {e.words, n};
    }
    if (e.hash != h || e.n != n) continue;
    if (std::memcmp(e.words, p, 8 * n) == 0) return {e.words, n};
    if (++compares >= kMaxCompares) break;
  }
  // Bounded work spent: keep a copy of its own, not shared.
  return {Store(p, n), n};
}

}  // namespace goheap2pprof
