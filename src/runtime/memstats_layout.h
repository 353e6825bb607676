// Where the Go runtime keeps its memory statistics, field by field: the
// offsets the outside read (memstats/memstats_reader.h) uses in mstats,
// heapStatsDelta, consistentHeapStats, gcControllerState, p, schedt, mheap,
// mcache, mspan, m and gcCPULimiterState (go-memstats-facts.md, section 3).
// Proven from the executable's DWARF when it has some (every offset is then
// the DWARF's, so GOEXPERIMENTs that move fields are read right); from the
// per-version table otherwise, and refused for a Go newer than every tested
// one without DWARF.
//
//   MemstatsLayoutVerdict v = CheckMemstatsLayout(elf, traits);
//   uint64_t gen = v.layout.chs_gen;  // offset of consistentHeapStats.gen
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "elf/elf_file.h"
#include "runtime/runtime_traits.h"

namespace goheap2pprof {

class DwarfTypes;

// A field the layout does not have (in this version or this build).
inline constexpr uint64_t kNoField = ~uint64_t{0};

struct MemstatsLayout {
  // runtime.mstats
  uint64_t ms_heap_stats = kNoField;
  uint64_t ms_stacks_sys = kNoField;
  uint64_t ms_mspan_sys = kNoField;
  uint64_t ms_mcache_sys = kNoField;
  uint64_t ms_buckhash_sys = kNoField;
  uint64_t ms_gc_misc_sys = kNoField;
  uint64_t ms_other_sys = kNoField;
  uint64_t ms_last_gc_unix = kNoField;
  uint64_t ms_pause_total_ns = kNoField;
  uint64_t ms_pause_ns = kNoField;
  uint64_t ms_pause_end = kNoField;
  uint64_t ms_numgc = kNoField;
  uint64_t ms_numforcedgc = kNoField;
  uint64_t ms_gc_cpu_fraction = kNoField;
  // runtime.heapStatsDelta
  uint64_t delta_size = 0;
  uint64_t d_committed = kNoField;
  uint64_t d_released = kNoField;
  uint64_t d_in_heap = kNoField;
  uint64_t d_in_stacks = kNoField;
  uint64_t d_in_work_bufs = kNoField;
  uint64_t d_in_ptr_scalar_bits = kNoField;  // 1.18-1.24
  uint64_t d_tiny_alloc_count = kNoField;
  uint64_t d_large_alloc = kNoField;
  uint64_t d_large_alloc_count = kNoField;
  uint64_t d_small_alloc_count = kNoField;  // [68]uint64
  uint64_t d_large_free = kNoField;
  uint64_t d_large_free_count = kNoField;
  uint64_t d_small_free_count = kNoField;  // [68]uint64
  // runtime.consistentHeapStats (stats [3]heapStatsDelta at 0)
  uint64_t chs_gen = kNoField;        // uint32
  uint64_t chs_no_p_lock = kNoField;  // runtime.mutex, key uintptr first
  // runtime.gcControllerState
  uint64_t gc_percent = kNoField;
  uint64_t gc_memory_limit = kNoField;  // 1.19+
  uint64_t gc_heap_goal = kNoField;     // 1.18: a field
  uint64_t gc_percent_heap_goal = kNoField;
  uint64_t gc_sweep_dist_min_trigger = kNoField;
  uint64_t gc_triggered = kNoField;
  uint64_t gc_heap_scan = kNoField;
  uint64_t gc_last_stack_scan = kNoField;
  uint64_t gc_globals_scan = kNoField;
  uint64_t gc_heap_marked = kNoField;
  uint64_t gc_heap_free = kNoField;
  uint64_t gc_total_alloc = kNoField;
  uint64_t gc_total_free = kNoField;
  uint64_t gc_mapped_ready = kNoField;
  // runtime.p
  uint64_t p_status = kNoField;
  uint64_t p_mcache = kNoField;
  uint64_t p_stats_seq = kNoField;    // uint32
  uint64_t p_gfree_count = kNoField;  // int32: gFree.n or gFree.size
  // runtime.schedt
  uint64_t sched_ngsys = kNoField;         // uint32
  uint64_t sched_gfree_count = kNoField;   // int32: gFree.n or gFree.stack.size
  uint64_t sched_gfree_count2 = kNoField;  // int32: gFree.noStack.size (1.25+)
  // runtime.mheap: spanalloc.inuse, cachealloc.inuse (uintptr)
  uint64_t mheap_spanalloc_inuse = kNoField;
  uint64_t mheap_cachealloc_inuse = kNoField;
  // runtime.mcache
  uint64_t mcache_tiny_allocs = kNoField;
  uint64_t mcache_alloc = kNoField;  // [136]*mspan
  // runtime.mspan
  uint64_t span_nelems = kNoField;
  uint64_t span_nelems_size = 0;         // 8 (uintptr) up to 1.21, 2 (uint16) from 1.22
  uint64_t span_alloc_count = kNoField;  // uint16
  uint64_t span_alloc_count_before_cache = kNoField;  // uint16, 1.19+
  uint64_t span_elemsize = kNoField;
  // runtime.m
  uint64_t m_alllink = kNoField;
  // runtime.gcCPULimiterState
  uint64_t limiter_last_enabled_cycle = kNoField;  // 1.19+
};

// The per-version table for `traits`' Go version and `machine` (EM_X86_64
// or EM_AARCH64; they differ only inside mheap). Fields a version lacks are
// kNoField.
MemstatsLayout MemstatsLayoutTable(const RuntimeTraits& traits, uint16_t machine);

// The layout as a DWARF describes it: every field the table knows of, found
// by name (kNoField where the DWARF has none).
MemstatsLayout MemstatsLayoutFromDwarf(const DwarfTypes& dwarf);

// The fields `traits` needs that `layout` lacks, by name ("runtime.p.statsSeq").
std::vector<std::string> MissingMemstatsFields(const MemstatsLayout& layout,
                                               const RuntimeTraits& traits);

// "runtime.p.statsSeq is at 13668 in the DWARF, 13660 in the table", one
// per field `traits` needs whose offset differs.
std::vector<std::string> CompareMemstatsLayouts(const MemstatsLayout& dwarf,
                                                const MemstatsLayout& table,
                                                const RuntimeTraits& traits);

struct MemstatsLayoutVerdict {
  MemstatsLayout layout;
  bool from_dwarf = false;
  // Where the DWARF and the table disagree (a GOEXPERIMENT, or a wrong
  // table): the DWARF is read. For -v and for the tests.
  std::vector<std::string> table_differences;
  std::vector<std::string> notes;
};

// The layout to read `traits`' Go with: the DWARF's when `dwarf` has one
// (Error kUnsupported when it lacks a needed field), else the table (Error
// kUnsupported for a Go newer than every tested one). `exe_name` is for
// messages.
MemstatsLayoutVerdict JudgeMemstatsLayout(std::string_view exe_name, const RuntimeTraits& traits,
                                          uint16_t machine, const DwarfTypes* dwarf);

// JudgeMemstatsLayout on the DWARF of `elf`.
MemstatsLayoutVerdict CheckMemstatsLayout(const ElfFile& elf, const RuntimeTraits& traits);

}  // namespace goheap2pprof
