#include "runtime/memstats_layout.h"

#include <elf.h>

#include <functional>

#include "base/error.h"
#include "elf/dwarf_types.h"

namespace goheap2pprof {

namespace {

using Needed = bool (*)(const MemstatsTraits&);
bool Always(const MemstatsTraits&) { return true; }
bool PsbBits(const MemstatsTraits& m) { return m.has_ptr_scalar_bits; }
bool Pacer119(const MemstatsTraits& m) { return !m.heap_in_mstats; }
bool Pacer118(const MemstatsTraits& m) { return m.heap_in_mstats; }
bool Metrics121(const MemstatsTraits& m) { return m.metrics_1_21; }
bool Metrics119(const MemstatsTraits& m) { return m.metrics_1_19; }
bool UsedSlots(const MemstatsTraits& m) { return m.flush_adds_used_slots; }
bool TwoFreeLists(const MemstatsTraits& m) { return m.sched_two_free_lists; }

// One field the read uses: the struct it is in, its path of member names
// there (alternatives separated by '|': the field was renamed), and when a
// version needs it.
struct FieldSpec {
  std::string_view type;
  std::string_view path;
  uint64_t MemstatsLayout::*field;
  Needed needed;
};

constexpr std::string_view kMstats = "runtime.mstats";
constexpr std::string_view kDelta = "runtime.heapStatsDelta";
constexpr std::string_view kConsistent = "runtime.consistentHeapStats";
constexpr std::string_view kPacer = "runtime.gcControllerState";

using L = MemstatsLayout;
const FieldSpec kFields[] = {
    {kMstats, "heapStats", &L::ms_heap_stats, Always},
    {kMstats, "stacks_sys", &L::ms_stacks_sys, Always},
    {kMstats, "mspan_sys", &L::ms_mspan_sys, Always},
    {kMstats, "mcache_sys", &L::ms_mcache_sys, Always},
    {kMstats, "buckhash_sys", &L::ms_buckhash_sys, Always},
    {kMstats, "gcMiscSys", &L::ms_gc_misc_sys, Always},
    {kMstats, "other_sys", &L::ms_other_sys, Always},
    {kMstats, "last_gc_unix", &L::ms_last_gc_unix, Always},
    {kMstats, "pause_total_ns", &L::ms_pause_total_ns, Always},
    {kMstats, "pause_ns", &L::ms_pause_ns, Always},
    {kMstats, "pause_end", &L::ms_pause_end, Always},
    {kMstats, "numgc", &L::ms_numgc, Always},
    {kMstats, "numforcedgc", &L::ms_numforcedgc, Always},
    {kMstats, "gc_cpu_fraction", &L::ms_gc_cpu_fraction, Always},
    {kDelta, "committed", &L::d_committed, Always},
    {kDelta, "released", &L::d_released, Always},
    {kDelta, "inHeap", &L::d_in_heap, Always},
    {kDelta, "inStacks", &L::d_in_stacks, Always},
    {kDelta, "inWorkBufs", &L::d_in_work_bufs, Always},
    {kDelta, "inPtrScalarBits", &L::d_in_ptr_scalar_bits, PsbBits},
    {kDelta, "tinyAllocCount", &L::d_tiny_alloc_count, Always},
    {kDelta, "largeAlloc", &L::d_large_alloc, Always},
    {kDelta, "largeAllocCount", &L::d_large_alloc_count, Always},
    {kDelta, "smallAllocCount", &L::d_small_alloc_count, Always},
    {kDelta, "largeFree", &L::d_large_free, Always},
    {kDelta, "largeFreeCount", &L::d_large_free_count, Always},
    {kDelta, "smallFreeCount", &L::d_small_free_count, Always},
    {kConsistent, "gen", &L::chs_gen, Always},
    {kConsistent, "noPLock", &L::chs_no_p_lock, Always},
    {kPacer, "gcPercent", &L::gc_percent, Always},
    {kPacer, "memoryLimit", &L::gc_memory_limit, Pacer119},
    {kPacer, "heapGoal", &L::gc_heap_goal, Pacer118},
    {kPacer, "gcPercentHeapGoal", &L::gc_percent_heap_goal, Pacer119},
    {kPacer, "sweepDistMinTrigger", &L::gc_sweep_dist_min_trigger, Pacer119},
    {kPacer, "triggered", &L::gc_triggered, Pacer119},
    {kPacer, "heapScan", &L::gc_heap_scan, Metrics121},
    {kPacer, "lastStackScan", &L::gc_last_stack_scan, Metrics121},
    {kPacer, "globalsScan", &L::gc_globals_scan, Metrics121},
    {kPacer, "heapMarked", &L::gc_heap_marked, Metrics121},
    {kPacer, "heapFree", &L::gc_heap_free, Pacer119},
    {kPacer, "totalAlloc", &L::gc_total_alloc, Pacer119},
    {kPacer, "totalFree", &L::gc_total_free, Pacer119},
    {kPacer, "mappedReady", &L::gc_mapped_ready, Pacer119},
    {"runtime.p", "status", &L::p_status, Always},
    {"runtime.p", "mcache", &L::p_mcache, Always},
    {"runtime.p", "statsSeq", &L::p_stats_seq, Always},
    {"runtime.p", "gFree.n|gFree.size", &L::p_gfree_count, Always},
    {"runtime.schedt", "ngsys", &L::sched_ngsys, Always},
    {"runtime.schedt", "gFree.n|gFree.stack.size", &L::sched_gfree_count, Always},
    {"runtime.schedt", "gFree.noStack.size", &L::sched_gfree_count2, TwoFreeLists},
    {"runtime.mheap", "spanalloc.inuse", &L::mheap_spanalloc_inuse, Always},
    {"runtime.mheap", "cachealloc.inuse", &L::mheap_cachealloc_inuse, Always},
    {"runtime.mcache", "tinyAllocs", &L::mcache_tiny_allocs, Always},
    {"runtime.mcache", "alloc", &L::mcache_alloc, Always},
    {"runtime.mspan", "nelems", &L::span_nelems, Always},
    {"runtime.mspan", "allocCount", &L::span_alloc_count, Always},
    {"runtime.mspan", "allocCountBeforeCache", &L::span_alloc_count_before_cache, UsedSlots},
    {"runtime.mspan", "elemsize", &L::span_elemsize, Always},
    {"runtime.m", "alllink", &L::m_alllink, Always},
    {"runtime.gcCPULimiterState", "lastEnabledCycle", &L::limiter_last_enabled_cycle, Metrics119},
};

std::string FieldName(const FieldSpec& f) {
  return std::string(f.type) + "." + std::string(f.path);
}

// Sets the offsets that differ between Go minors (the facts' section 3).
void TableMstats(int minor, MemstatsLayout& l) {
  if (minor == 18) {
    l.ms_stacks_sys = 88;
    l.ms_mspan_sys = 104;
    l.ms_mcache_sys = 120;
    l.ms_buckhash_sys = 128;
    l.ms_gc_misc_sys = 152;
    l.ms_other_sys = 160;
    l.ms_last_gc_unix = 168;
    l.ms_pause_total_ns = 176;
    l.ms_pause_ns = 184;
    l.ms_pause_end = 2232;
    l.ms_numgc = 4280;
    l.ms_numforcedgc = 4284;
    l.ms_gc_cpu_fraction = 4288;
    l.ms_heap_stats = 5960;
    return;
  }
  // 1.25 dropped inPtrScalarBits: everything after heapStats moves by 3x8.
  const uint64_t base = minor >= 25 ? 3520 : 3544;
  l.ms_heap_stats = 0;
  l.ms_stacks_sys = base;
  l.ms_mspan_sys = base + 8;
  l.ms_mcache_sys = base + 16;
  l.ms_buckhash_sys = base + 24;
  l.ms_gc_misc_sys = base + 32;
  l.ms_other_sys = base + 40;
  l.ms_last_gc_unix = base + 48;
  l.ms_pause_total_ns = base + 56;
  l.ms_pause_ns = base + 64;
  l.ms_pause_end = base + 64 + 2048;
  l.ms_numgc = base + 64 + 4096;
  l.ms_numforcedgc = base + 64 + 4100;
  l.ms_gc_cpu_fraction = base + 64 + 4104;
}

void TableDelta(int minor, MemstatsLayout& l) {
  l.d_committed = 0;
  l.d_released = 8;
  l.d_in_heap = 16;
  l.d_in_stacks = 24;
  l.d_in_work_bufs = 32;
  uint64_t next = 40;
  if (minor <= 24) {
    l.d_in_ptr_scalar_bits = 40;
    next = 48;
  }
  l.d_tiny_alloc_count = next;
  l.d_large_alloc = next + 8;
  l.d_large_alloc_count = next + 16;
  l.d_small_alloc_count = next + 24;
  l.d_large_free = next + 24 + 68 * 8;
  l.d_large_free_count = l.d_large_free + 8;
  l.d_small_free_count = l.d_large_free + 16;
  l.delta_size = l.d_small_free_count + 68 * 8;
  l.chs_gen = 3 * l.delta_size;
  l.chs_no_p_lock = 3 * l.delta_size + 8;
}

void TablePacer(int minor, MemstatsLayout& l) {
  l.gc_percent = 0;
  if (minor == 18) {
    l.gc_heap_goal = 104;
    return;
  }
  l.gc_memory_limit = 8;
  // gcPercentHeapGoal, then sweepDistMinTrigger, triggered (+8, +16), the
  // scan fields from heapScan, and the sysMemStat block from heapInUse.
  uint64_t goal = 72, scan = 112, sys = 272;
  if (minor == 19) {
    goal = 104, scan = 144, sys = 304;
  } else if (minor == 20) {
    goal = 48, scan = 88, sys = 248;
  }
  l.gc_percent_heap_goal = goal;
  l.gc_sweep_dist_min_trigger = goal + 8;
  l.gc_triggered = goal + 16;
  l.gc_heap_scan = scan;
  l.gc_last_stack_scan = scan + 16;
  l.gc_globals_scan = scan + 32;
  l.gc_heap_marked = scan + 40;
  l.gc_heap_free = sys + 16;
  l.gc_total_alloc = sys + 24;
  l.gc_total_free = sys + 32;
  l.gc_mapped_ready = sys + 40;
  if (minor < 21) {  // the scan metrics are 1.21's
    l.gc_heap_scan = l.gc_last_stack_scan = l.gc_globals_scan = l.gc_heap_marked = kNoField;
  }
}

void TableScheduler(int minor, MemstatsLayout& l) {
  l.p_status = 4;
  l.p_mcache = minor <= 22 ? 64 : 56;
  switch (minor) {
    case 18:
    case 20:
      l.p_stats_seq = 8820;
      break;
    case 19:
    case 21:
      l.p_stats_seq = 8828;
      break;
    case 22:
      l.p_stats_seq = 8860;
      break;
    case 23:
    case 24:
      l.p_stats_seq = 8836;
      break;
    case 25:
      l.p_stats_seq = 9388;
      break;
    default:
      l.p_stats_seq = 13668;
      break;
  }
  l.p_gfree_count = (minor <= 22 || minor >= 26) ? 2472 : 2464;
  l.sched_ngsys = minor <= 24 ? 72 : minor == 25 ? 80 : 96;
  if (minor <= 19) {
    l.sched_gfree_count = 176;
  } else if (minor <= 24) {
    l.sched_gfree_count = 184;
  } else if (minor == 25) {
    l.sched_gfree_count = 184;
    l.sched_gfree_count2 = 200;
  } else {
    l.sched_gfree_count = 200;
    l.sched_gfree_count2 = 216;
  }
}

void TableMheap(int minor, uint16_t machine, MemstatsLayout& l) {
  // fixalloc.inuse is at +48 of spanalloc and cachealloc.
  uint64_t span = 92224, cache = 92296;
  const bool arm64 = machine == EM_AARCH64;
  if (minor == 20) {
    span = arm64 ? 100888 : 92184, cache = arm64 ? 100960 : 92256;
  } else if (minor == 21) {
    span = arm64 ? 100936 : 92232, cache = arm64 ? 101008 : 92304;
  } else if (minor >= 22 && minor <= 24) {
    span = arm64 ? 101064 : 92296, cache = arm64 ? 101136 : 92368;
  } else if (minor == 25) {
    span = arm64 ? 101088 : 92320, cache = arm64 ? 101160 : 92392;
  } else if (minor >= 26) {
    span = arm64 ? 101088 : 92320, cache = arm64 ? 101232 : 92464;
  }
  l.mheap_spanalloc_inuse = span + 48;
  l.mheap_cachealloc_inuse = cache + 48;
}

void TableAllocator(int minor, MemstatsLayout& l) {
  l.mcache_tiny_allocs = minor <= 23 ? 32 : 40;
  l.mcache_alloc = minor <= 23 ? 40 : 48;
  if (minor <= 21) {
    l.span_nelems = 56;
    l.span_nelems_size = 8;
  } else {
    l.span_nelems = 50;
    l.span_nelems_size = 2;
  }
  const uint64_t shift = minor == 21 ? 8 : 0;
  l.span_alloc_count = 96 + shift;
  if (minor >= 19) l.span_alloc_count_before_cache = 102 + shift;
  l.span_elemsize = 104 + shift;
}

// runtime.m.alllink and gcCPULimiterState.lastEnabledCycle, read from the
// DWARF of each toolchain's build (amd64 and arm64 agree).
void TableOthers(int minor, MemstatsLayout& l) {
  static constexpr uint64_t kAlllink[] = {
      /*1.18*/ 336, /*1.19*/ 336, /*1.20*/ 336, /*1.21*/ 336, /*1.22*/ 328,
      /*1.23*/ 328, /*1.24*/ 328, /*1.25*/ 344, /*1.26*/ 352, /*1.27*/ 352};
  static constexpr uint64_t kLastEnabled[] = {
      /*1.18*/ 0,  /*1.19*/ 72, /*1.20*/ 72, /*1.21*/ 72, /*1.22*/ 72,
      /*1.23*/ 64, /*1.24*/ 64, /*1.25*/ 64, /*1.26*/ 64, /*1.27*/ 64};
  const size_t i = static_cast<size_t>(minor - 18);
  l.m_alllink = kAlllink[i];
  if (minor >= 19) l.limiter_last_enabled_cycle = kLastEnabled[i];
}

// Resolves "a.b.c" from struct `s`: the offset of the innermost member and
// its size; nullopt where a member is missing.
std::optional<std::pair<uint64_t, uint64_t>> ResolvePath(const DwarfTypes& dwarf,
                                                         const DwarfStruct& root,
                                                         std::string_view path) {
  std::optional<DwarfStruct> current = root;
  uint64_t offset = 0;
  while (true) {
    const size_t dot = path.find('.');
    const std::string_view name = path.substr(0, dot);
    const DwarfMember* found = nullptr;
    for (const DwarfMember& m : current->members) {
      if (m.name == name) found = &m;
    }
    if (found == nullptr || !found->offset) return std::nullopt;
    offset += *found->offset;
    if (dot == std::string_view::npos) return std::make_pair(offset, found->size.value_or(0));
    path.remove_prefix(dot + 1);
    current = dwarf.MemberStruct(*found);
    if (!current) return std::nullopt;
  }
}

}  // namespace

MemstatsLayout MemstatsLayoutTable(const RuntimeTraits& traits, uint16_t machine) {
  // A newer Go gets the newest table; the judge below decides whether it
  // may be read with it.
  const int minor = std::min(traits.version.minor, NewestVerifiedVersion().minor);
  MemstatsLayout l;
  TableMstats(minor, l);
  TableDelta(minor, l);
  TablePacer(minor, l);
  TableScheduler(minor, l);
  TableMheap(minor, machine, l);
  TableAllocator(minor, l);
  TableOthers(minor, l);
  return l;
}

MemstatsLayout MemstatsLayoutFromDwarf(const DwarfTypes& dwarf) {
  MemstatsLayout l;
  std::string_view last_type;
  std::optional<DwarfStruct> root;
  for (const FieldSpec& f : kFields) {
    if (f.type != last_type) {
      root = dwarf.FindStruct(f.type);
      last_type = f.type;
    }
    if (!root) continue;
    std::string_view alternatives = f.path;
    while (!alternatives.empty()) {
      const size_t bar = alternatives.find('|');
      auto at = ResolvePath(dwarf, *root, alternatives.substr(0, bar));
      if (at) {
        l.*f.field = at->first;
        if (f.field == &L::span_nelems) l.span_nelems_size = at->second;
        break;
      }
      alternatives = bar == std::string_view::npos ? "" : alternatives.substr(bar + 1);
    }
  }
  if (std::optional<DwarfStruct> delta = dwarf.FindStruct(kDelta)) l.delta_size = delta->size;
  return l;
}

std::vector<std::string> MissingMemstatsFields(const MemstatsLayout& layout,
                                               const RuntimeTraits& traits) {
  std::vector<std::string> out;
  for (const FieldSpec& f : kFields) {
    if (f.needed(traits.memstats) && layout.*f.field == kNoField) out.push_back(FieldName(f));
  }
  if (layout.delta_size == 0) out.push_back("runtime.heapStatsDelta's size");
  if (layout.span_nelems_size != 2 && layout.span_nelems_size != 8) {
    out.push_back("runtime.mspan.nelems's size");
  }
  return out;
}

std::vector<std::string> CompareMemstatsLayouts(const MemstatsLayout& dwarf,
                                                const MemstatsLayout& table,
                                                const RuntimeTraits& traits) {
  std::vector<std::string> out;
  auto text = [](uint64_t v) { return v == kNoField ? std::string("absent") : std::to_string(v); };
  for (const FieldSpec& f : kFields) {
    // Fields this version does not read may be in its DWARF, not the table.
    if (!f.needed(traits.memstats)) continue;
    if (dwarf.*f.field != table.*f.field) {
      out.push_back(FieldName(f) + " is at " + text(dwarf.*f.field) + " in the DWARF, " +
                    text(table.*f.field) + " in the table");
    }
  }
  if (dwarf.delta_size != table.delta_size) {
    out.push_back("runtime.heapStatsDelta is " + std::to_string(dwarf.delta_size) +
                  " bytes in the DWARF, " + std::to_string(table.delta_size) + " in the table");
  }
  return out;
}

MemstatsLayoutVerdict JudgeMemstatsLayout(std::string_view exe_name, const RuntimeTraits& traits,
                                          uint16_t machine, const DwarfTypes* dwarf) {
  MemstatsLayoutVerdict v;
  const MemstatsLayout table = MemstatsLayoutTable(traits, machine);
  const std::string version = FormatGoVersion(traits.version);
  if (dwarf != nullptr) {
    MemstatsLayout proven = MemstatsLayoutFromDwarf(*dwarf);
    const std::vector<std::string> missing = MissingMemstatsFields(proven, traits);
    if (missing.empty()) {
      v.layout = proven;
      v.from_dwarf = true;
      v.table_differences = CompareMemstatsLayouts(proven, table, traits);
      if (traits.newer_than_verified) {
        v.notes.push_back(version +
                          " is newer than the Go versions goheap2pprof is tested with; "
                          "its memory statistics are read with the layout its DWARF proves and "
                          "the newest tested version's formulas");
      }
      v.notes.push_back(
          "memory-statistics layout read from DWARF" +
          std::string(v.table_differences.empty()
                          ? " (equal to the table)"
                          : ", which differs from the table: " + v.table_differences.front()));
      return v;
    }
    throw Error(ErrorKind::kUnsupported, exe_name, ", built with ", version,
                ", lacks in its DWARF the runtime field ", missing.front(),
                " that the memory-statistics read needs")
        .WithHint(
            "goheap2pprof refuses rather than read wrong numbers; please report it with "
            "`go version -m` of the executable");
  }
  if (traits.newer_than_verified) {
    throw Error(ErrorKind::kUnsupported, exe_name, " was built with ", version,
                ", newer than the Go versions goheap2pprof is tested with (",
                VerifiedVersionsText(),
                "), and has no DWARF to prove where its memory statistics are")
        .WithHint("give goheap2pprof the unstripped build with --exe");
  }
  v.layout = table;
  const std::vector<std::string> missing = MissingMemstatsFields(table, traits);
  if (!missing.empty()) {
    throw Error(ErrorKind::kUnsupported, exe_name, " (", version,
                ") has no DWARF, and goheap2pprof's table lacks ", missing.front())
        .WithHint("give goheap2pprof the unstripped build with --exe");
  }
  v.notes.push_back("memory-statistics layout from goheap2pprof's table for " + version +
                    " (no DWARF)");
  return v;
}

MemstatsLayoutVerdict CheckMemstatsLayout(const ElfFile& elf, const RuntimeTraits& traits) {
  const std::optional<DwarfTypes> types = DwarfTypes::Open(elf, {"runtime"});
  return JudgeMemstatsLayout(elf.name(), traits, elf.machine(), types ? &*types : nullptr);
}

}  // namespace goheap2pprof
