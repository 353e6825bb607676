// Fuzz target: the bucket walk, the MemProfile emulation, scaling, the
// profile builder and the three output formats (gzipped pprof, JSON
// snapshot, text top) over fuzzed target memory.
// Input: u64 head (0: empty list, n: bucket list head at offset n-1), u32
// cycle word, u8 selector (Go version: selector % 5; text sample type:
// selector / 5 % 4; rows and JSON entries: selector / 20 % 3 picks 10, all
// or 1), u64 rate, then the memory image mapped at kBase. Stacks are
// symbolized against a fixed hand-built pclntab (text at 0x1000).
#include <cstdint>
#include <cstring>
#include <vector>

#include "../unit/hand_pclntab.h"
#include "base/error.h"
#include "heap/buckets.h"
#include "heap/snapshot.h"
#include "pprof/heap_profile_builder.h"
#include "pprof/json_snapshot.h"
#include "pprof/output.h"
#include "pprof/text_top.h"
#include "proc/memory_reader.h"
#include "runtime/runtime_traits.h"
#include "symbolize/symbolizer.h"

namespace {
constexpr uint64_t kBase = 0x100000;
constexpr uint64_t kVars = 0x8000;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace goheap2pprof;
  if (size < 21) return 0;
  uint64_t head_off, rate;
  uint32_t cycle_word;
  std::memcpy(&head_off, data, 8);
  std::memcpy(&cycle_word, data + 8, 4);
  const uint8_t selector = data[12];
  std::memcpy(&rate, data + 13, 8);
  data += 21;
  size -= 21;

  static const GoVersion kVersions[] = {{1, 18, 0}, {1, 19, 0}, {1, 21, 0}, {1, 26, 0}, {1, 27, 0}};
  const RuntimeTraits traits = TraitsForVersion(kVersions[selector % 5]);

  TestMemory mem;
  mem.Map(kBase, std::vector<uint8_t>(data, data + size));
  std::vector<uint8_t> vars(24, 0);
  uint64_t head = head_off == 0 ? 0 : kBase + (head_off - 1) % (size + 64);
  std::memcpy(&vars[0], &head, 8);
  std::memcpy(&vars[8], &rate, 8);
  std::memcpy(&vars[16], &cycle_word, 4);
  mem.Map(kVars, vars);

  static const testing_pclntab::HandTable hand = testing_pclntab::BuildHandTable(true);
  static const Pclntab pclntab(hand.table, testing_pclntab::kText, hand.gofunc);
  try {
    HeapSnapshot snap = ReadHeapSnapshot(mem, {kVars, kVars + 8, kVars + 16}, traits,
                                         {.max_walks = 2, .max_buckets = 4096});
    Symbolizer sym(pclntab, traits);
    HeapProfileBuilder builder(sym, traits, {{0x1000, 0x2000, 0, "/fuzz", "", false}}, snap.rate,
                               1);
    for (const MemProfileRecord& r : EmulateMemProfile(snap.buckets, snap.cycle)) {
      builder.AddRecord(r);
    }
    for (const MemProfileRecord& r : PublishedCounts(snap.buckets)) {
      (void)ScaleHeapSample(r.InUseObjects(), r.InUseBytes(), snap.rate);
    }
    const pb::Profile& p = builder.Finish();
    if (p.sample_size() != static_cast<int>(snap.buckets.size())) __builtin_trap();

    // Every view of the profile must render whatever the counters hold.
    static const char* const kSampleTypes[] = {"inuse_space", "inuse_objects", "alloc_space",
                                               "alloc_objects"};
    static const size_t kRows[] = {10, 0, 1};
    const size_t rows = kRows[selector / 20 % 3];
    if (EncodeProfile(p).empty()) __builtin_trap();
    SnapshotInfo info;
    info.runtime_version = "go1.26.8";
    info.cycle = snap.cycle;
    if (JsonSnapshot(p, info, {.top = rows}).empty()) __builtin_trap();
    const std::string text = TextTop(
        p, {.sample_index = kSampleTypes[selector / 5 % 4], .node_count = static_cast<int>(rows)});
    if (text.find("flat%") == std::string::npos) __builtin_trap();
  } catch (const Error&) {
  }
  return 0;
}
