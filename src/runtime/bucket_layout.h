// The layout of the runtime's heap-profile structs (runtime.bucket,
// runtime.memRecord, runtime.memRecordCycle and the cycle variable) that
// goheap2pprof reads, per Go version, and the proof that a target has it.
// The walker (heap/buckets.cc) reads with the constants below; the capture
// checks them first against the executable's DWARF when it has one, and
// refuses a layout it cannot prove for a Go newer than every tested one.
//
//   LayoutVerdict v = CheckBucketLayout(elf, TraitsForVersion(version), std::nullopt);
//   for (const std::string& w : v.warnings) warn(w);  // also into the output
//   WalkBuckets(mem, head, {.record_layout = v.traits.record_layout, ...});
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "elf/dwarf_types.h"
#include "elf/elf_file.h"
#include "gobin/buildinfo.h"
#include "runtime/runtime_traits.h"

namespace goheap2pprof {

// runtime.bucket (Go 1.18+): next, allnext, typ, hash, size, nstk, then
// nstk stack words and, for heap buckets, the memRecord.
inline constexpr uint64_t kBucketAllnextOffset = 8;
inline constexpr uint64_t kBucketTypOffset = 16;
inline constexpr uint64_t kBucketHashOffset = 24;
inline constexpr uint64_t kBucketSizeOffset = 32;
inline constexpr uint64_t kBucketNstkOffset = 40;
inline constexpr uint64_t kBucketHeaderSize = 48;

// runtime.memRecordCycle: {allocs, frees, alloc_bytes, free_bytes} (32
// bytes) up to Go 1.26, {allocs, frees} (16 bytes) from 1.27.
constexpr uint64_t MemRecordCycleSize(MemRecordLayout layout) {
  return layout == MemRecordLayout::kCountsOnly ? 16 : 32;
}
// runtime.memRecord: active, then future[3].
constexpr uint64_t MemRecordSize(MemRecordLayout layout) { return 4 * MemRecordCycleSize(layout); }

struct FieldLayout {
  std::string_view name;
  uint64_t offset = 0;
  uint64_t size = 0;
};

// A struct type by name, or (variable = true) the struct type of the global
// variable of that name.
struct StructLayout {
  std::string_view name;
  bool variable = false;
  uint64_t size = 0;
  std::vector<FieldLayout> fields;
};

// What goheap2pprof reads for these traits: the constants above, the record
// layout and the cycle variable's encoding. Inner structs come before the
// structs that contain them, so the first disagreement names the cause.
std::vector<StructLayout> ExpectedBucketLayout(const RuntimeTraits& traits);

// What the DWARF says about one expected struct; nullopt where it does not
// describe it. An empty function stands for an executable without DWARF.
using DwarfLookup = std::function<std::optional<DwarfStruct>(const StructLayout&)>;

struct LayoutComparison {
  // "runtime.memRecordCycle is 16 bytes, not 32", one per difference: a size,
  // a field that is missing, moved or resized, or an extra non-empty field.
  std::vector<std::string> disagreements;
  std::vector<std::string> missing;  // structs the DWARF does not describe
};
LayoutComparison CompareLayout(const std::vector<StructLayout>& expected,
                               const std::vector<std::optional<DwarfStruct>>& observed);

enum class LayoutProof {
  kDwarf,    // the executable's DWARF equals the table
  kTable,    // no DWARF: the table of a version the tool knows
  kAssumed,  // no DWARF, newer Go: --assume-go-layout
};

struct LayoutVerdict {
  RuntimeTraits traits;  // to read the target with
  LayoutProof proof = LayoutProof::kTable;
  // For the log and the output (profile comments, JSON warnings).
  std::vector<std::string> warnings;
  std::vector<std::string> notes;  // for -v
};

// The decision, from what the DWARF says (`dwarf` empty: there is none):
// - a DWARF layout that differs from the table throws Error(kUnsupported)
//   naming the fields and both values;
// - a Go newer than every tested version is read with the newest table (or
//   with `assumed_layout`'s) only when the DWARF proves it, or when
//   `assumed_layout` is given (with a warning); otherwise Error(kUnsupported)
//   with a hint;
// - an untested version gets a warning saying how its layout was chosen.
// `assumed_layout` must be a version from 1.18 to the newest tested one
// (kUsage otherwise); it changes nothing for versions the tool knows.
LayoutVerdict JudgeBucketLayout(std::string_view exe_name, const RuntimeTraits& traits,
                                const DwarfLookup& dwarf, std::optional<GoVersion> assumed_layout);

// The traits a verdict of JudgeBucketLayout reads with, without the DWARF:
// for a Go newer than every tested version, the newest table's (or
// `assumed_layout`'s) bucket layout. Throws kUsage as JudgeBucketLayout does.
RuntimeTraits LayoutTraits(const RuntimeTraits& traits, std::optional<GoVersion> assumed_layout);

// JudgeBucketLayout on the DWARF of `elf` (the running executable or --exe).
LayoutVerdict CheckBucketLayout(const ElfFile& elf, const RuntimeTraits& traits,
                                std::optional<GoVersion> assumed_layout);

// JudgeBucketLayout on `dwarf`, the DWARF of the executable `exe_name`
// already opened (nullptr: it has none), for a caller that judges other
// layouts from the same read of it.
LayoutVerdict CheckBucketLayout(std::string_view exe_name, const DwarfTypes* dwarf,
                                const RuntimeTraits& traits,
                                std::optional<GoVersion> assumed_layout);

// The version of --assume-go-layout: "1.27" or "go1.27" (a patch number is
// allowed and changes nothing). Throws kUsage unless it names a layout
// goheap2pprof knows (Go 1.18 to the newest tested version).
GoVersion ParseAssumedLayout(std::string_view text);

}  // namespace goheap2pprof
