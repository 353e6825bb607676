#include "goroutine/labels.h"

#include <array>

#include "base/bytes.h"

namespace goheap2pprof {

namespace {

// hmap (1.18-1.23): count +0, B +9, buckets +16, oldbuckets +24. A bucket of
// map[string]string: tophash[8] +0, keys +8, values +136, overflow +264.
constexpr uint64_t kHmapSize = 48;
constexpr uint64_t kBucketSize = 272;
constexpr uint8_t kMinTopHash = 5;  // below: empty or evacuated slots
constexpr uint64_t kMaxBuckets = 1024;

std::optional<std::string> ReadString(MemoryReader& mem, const uint8_t* header) {
  const uint64_t ptr = LoadU64(header);
  const uint64_t len = LoadU64(header + 8);
  if (len > kMaxLabelBytes) return std::nullopt;
  std::string s(len, '\0');
  if (len != 0 && !mem.TryRead(ptr, {reinterpret_cast<uint8_t*>(s.data()), len})) {
    return std::nullopt;
  }
  return s;
}

std::optional<Labels> ReadSlice(MemoryReader& mem, uint64_t pointer) {
  std::array<uint8_t, 16> header;
  if (!mem.TryRead(pointer, header)) return std::nullopt;
  const uint64_t n = LoadU64(header.data() + 8);
  if (n > kMaxLabels) return std::nullopt;
  std::vector<uint8_t> entries(n * 32);
  if (n != 0 && !mem.TryRead(LoadU64(header.data()), entries)) return std::nullopt;
  Labels out;
  for (uint64_t i = 0; i < n; ++i) {
    std::optional<std::string> k = ReadString(mem, entries.data() + i * 32);
    std::optional<std::string> v = ReadString(mem, entries.data() + i * 32 + 16);
    if (!k || !v) return std::nullopt;
    out.emplace_back(std::move(*k), std::move(*v));
  }
  return out;
}

// One bucket chain's live slots into out; false when a read fails or the
// walk passes its bound.
bool ReadBucketChain(MemoryReader& mem, uint64_t bucket, uint64_t& budget, Labels& out) {
  std::array<uint8_t, kBucketSize> b;
  while (bucket != 0) {
    if (budget-- == 0 || !mem.TryRead(bucket, b)) return false;
    for (int i = 0; i < 8; ++i) {
      if (b[i] < kMinTopHash) continue;
      std::optional<std::string> k = ReadString(mem, b.data() + 8 + 16 * i);
      std::optional<std::string> v = ReadString(mem, b.data() + 136 + 16 * i);
      if (!k || !v) return false;
      out.emplace_back(std::move(*k), std::move(*v));
    }
    bucket = LoadU64(b.data() + 264);
  }
  return true;
}

std::optional<Labels> ReadMap(MemoryReader& mem, uint64_t pointer) {
  std::array<uint8_t, 8> word;
  if (!mem.TryRead(pointer, word)) return std::nullopt;
  const uint64_t hmap = LoadU64(word.data());
  if (hmap == 0) return Labels{};
  std::array<uint8_t, kHmapSize> h;
  if (!mem.TryRead(hmap, h)) return std::nullopt;
  const uint64_t count = LoadU64(h.data());
  const uint8_t b = h[9];
  // A map of labels is built whole and never grows after: a growth in
  // progress (oldbuckets) is not one we read.
  if (count > kMaxLabels || b > 10 || LoadU64(h.data() + 24) != 0) return std::nullopt;
  const uint64_t buckets = LoadU64(h.data() + 16);
  Labels out;
  uint64_t budget = kMaxBuckets;
  for (uint64_t i = 0; i < (uint64_t{1} << b); ++i) {
    if (!ReadBucketChain(mem, buckets + i * kBucketSize, budget, out)) return std::nullopt;
  }
  if (out.size() != count) return std::nullopt;
  return out;
}

}  // namespace

std::optional<Labels> ReadLabels(MemoryReader& mem, uint64_t pointer, LabelsEncoding encoding) {
  return encoding == LabelsEncoding::kSlice ? ReadSlice(mem, pointer) : ReadMap(mem, pointer);
}

}  // namespace goheap2pprof
