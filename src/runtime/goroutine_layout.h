// The layout of runtime.g and runtime.gobuf that the goroutine reader
// (goroutine/) reads, per Go version, and the proof that a target has it:
// chosen once from a table (go-goroutine-facts.md §3, five families from
// 1.18 to 1.27), then checked field by field against the executable's DWARF
// when it has one. Code below never branches on the version.
//
//   GoroutineLayoutVerdict v = CheckGoroutineLayout(exe_name, dwarf_or_null, traits);
//   uint64_t goid = LoadU64(g_bytes, v.layout.goid);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "elf/dwarf_types.h"
#include "runtime/bucket_layout.h"
#include "runtime/runtime_traits.h"

namespace goheap2pprof {

// What g.labels points to: a map[string]string (1.18-1.23) or a
// struct{[]label} (1.24+; 1.26's label.Set has the same bytes).
enum class LabelsEncoding { kMap, kSlice };

// Offsets in runtime.g (sched_* are inside g, not inside gobuf).
struct GoroutineLayout {
  uint64_t stack_lo = 0;
  uint64_t stack_hi = 8;
  uint64_t sched = 56;  // the gobuf
  uint64_t sched_sp = 56;
  uint64_t sched_pc = 64;
  uint64_t sched_lr = 0;
  uint64_t sched_bp = 0;
  uint64_t gobuf_size = 0;
  uint64_t syscallsp = 0;
  uint64_t syscallpc = 0;
  std::optional<uint64_t> syscallbp;  // 1.23+
  uint64_t atomicstatus = 0;          // uint32
  uint64_t goid = 0;
  uint64_t waitsince = 0;
  uint64_t waitreason = 0;  // uint8
  // uint8, bumped by casgstatus on each move out of _Grunning (1.18-1.25;
  // from 1.26 out of _Grunning or _Gsyscall into neither): differs between
  // two reads of a g that parked, ran and parked again (runtime/proc.go,
  // the sampling of scheduling latencies).
  uint64_t tracking_seq = 0;
  uint64_t lockedm = 0;                 // muintptr: non-zero while locked to a thread
  std::optional<uint64_t> parent_goid;  // 1.21+
  uint64_t gopc = 0;
  uint64_t startpc = 0;
  uint64_t labels = 0;
  std::optional<uint64_t> running_cleanups;  // 1.25+, atomic bool
  LabelsEncoding labels_encoding = LabelsEncoding::kMap;
  // _Gleaked (10) and _Gdeadextra (11) exist (1.26+).
  bool has_leaked_status = false;
  // runtime.runfinq was renamed runtime.runFinalizers in 1.25.
  std::string_view finalizer_function = "runtime.runfinq";
  // Bytes of g read per goroutine: up to the last field used.
  uint64_t read_size = 0;
};

// The table's layout for a version (a version newer than every known one
// gets the newest family's).
GoroutineLayout GoroutineLayoutForVersion(const GoVersion& version);

// runtime.g and runtime.gobuf as the table has them, for the DWARF check.
// Only the fields read are listed: runtime.g has dozens more.
std::vector<StructLayout> ExpectedGoroutineStructs(const GoroutineLayout& layout);

struct GoroutineLayoutVerdict {
  GoroutineLayout layout;
  LayoutProof proof = LayoutProof::kTable;
  std::vector<std::string> notes;     // for -v
  std::vector<std::string> warnings;  // for the output too
};

// The decision, from what the DWARF says (nullptr: there is none): a field
// that the DWARF puts elsewhere throws Error(kUnsupported) naming it; a Go
// newer than every tested version is read only when its DWARF proves the
// newest table (kUnsupported otherwise).
GoroutineLayoutVerdict CheckGoroutineLayout(std::string_view exe_name, const DwarfTypes* dwarf,
                                            const RuntimeTraits& traits);

}  // namespace goheap2pprof
