#include "runtime/runtime_traits.h"

#include <iterator>

#include "base/error.h"

namespace goheap2pprof {

namespace {

// The releases exercised end to end by the Go tier of the tests (every
// toolchain of tests/go_toolchains.txt): the oracle matrix, the stripped
// oracle, the pclntab and stripped-recovery tests.
constexpr GoVersion kVerified[] = {
    {1, 18, 10}, {1, 19, 8}, {1, 20, 14}, {1, 21, 5}, {1, 21, 13}, {1, 22, 10},
    {1, 23, 4},  {1, 24, 3}, {1, 25, 3},  {1, 26, 8}, {1, 27, 3},
};

// True from release 1.<minor>.<patch> on: per-version rules say "from patch
// release N" with this, not with their own comparisons.
bool From(const GoVersion& v, int minor, int patch = 0) {
  if (v.minor != minor) return v.minor > minor;
  return v.patch >= patch;
}

// The facts' sections 1 and 4-7, read in each toolchain's runtime sources.
MemstatsTraits MemstatsTraitsFor(const GoVersion& v) {
  MemstatsTraits m;
  m.variables.has_limiter_and_stack_size = From(v, 19);
  // emptymspan became a variable with pointers (mspan gained one) in 1.22.
  m.variables.emptymspan = From(v, 22) ? DataSection::kBss : DataSection::kNoptrbss;
  // For the recovery from stripped binaries' code: 1.19 moved
  // mstats.heapStats to offset 0; schedt gained pollingNet before its lock
  // in 1.25.
  m.variables.memstats_heap_stats = From(v, 19) ? 0 : 5960;
  m.variables.sched_lock = From(v, 25) ? 32 : 24;
  m.heap_in_mstats = !From(v, 19);
  m.has_ptr_scalar_bits = !From(v, 25);
  m.goal_headroom_percent = From(v, 21);
  m.flush_adds_used_slots = From(v, 19);
  m.spinbit_mutex = From(v, 24);
  m.sched_two_free_lists = From(v, 25);
  m.goroutines_metric_counts_system = From(v, 26);
  m.metrics_1_19 = From(v, 19);
  m.metrics_1_21 = From(v, 21);
  return m;
}

// Where the heap profiler's variables are and how the cycle is encoded.
void SetProfilerVariables(const GoVersion& v, RuntimeTraits& t) {
  // runtime/mprof.go declares mProf (1.18) or mProfCycle (1.19+). In 1.18
  // mbuckets is a *bucket and bucket is //go:notinheap, so the linker puts
  // it with the pointer-free zeroed data; 1.19 made it an
  // atomic.UnsafePointer (.bss). MemProfileRate is set by an initializer up
  // to 1.19 and statically 512 KiB from 1.20.
  if (!From(v, 19)) {
    t.variables.cycle_symbol = "runtime.mProf";
    t.variables.cycle_flush_function = "runtime.mProf_FlushLocked";
    t.variables.mem_profile_reads_cycle = false;
    t.cycle_encoding = CycleEncoding::kMProfStruct;
    t.variables.mbuckets = DataSection::kNoptrbss;
  } else {
    t.variables.cycle_symbol = "runtime.mProfCycle";
    t.variables.cycle_flush_function = "runtime.mProf_Flush";
    t.cycle_encoding = CycleEncoding::kMProfCycle;
    t.variables.mbuckets = DataSection::kBss;
  }
  t.variables.cycle = DataSection::kNoptrbss;
  t.variables.mem_profile_rate = From(v, 20) ? DataSection::kNoptrdata : DataSection::kNoptrbss;
  t.variables.disable_memory_profiling = DataSection::kNoptrbss;
}

uint64_t MaxStackWords(const GoVersion& v) {
  // maxStack = 32 up to 1.22; debug.profstackdepth (at most
  // maxProfStackDepth = 1024) from 1.23; mProf_Malloc records 2 more words
  // from 1.26.
  if (!From(v, 23)) return 32;
  if (!From(v, 26)) return 1024;
  return 1024 + 2;
}

FuncIds FuncIdsFor(const GoVersion& v) {
  // FuncID numbering: runtime/symtab.go up to 1.20, internal/abi from 1.21.
  if (!From(v, 22)) return {.gopanic = 9, .panicwrap = 14, .sigpanic = 18, .wrapper = 21};
  if (!From(v, 25)) return {.gopanic = 10, .panicwrap = 15, .sigpanic = 19, .wrapper = 22};
  return {.gopanic = 10, .panicwrap = 15, .sigpanic = 20, .wrapper = 23};
}

}  // namespace

RuntimeTraits TraitsForVersion(const GoVersion& v) {
  if (v.major != 1 || v.minor < 18) {
    throw Error(ErrorKind::kUnsupported, "target was built with ", FormatGoVersion(v),
                "; goheap2pprof reads Go 1.18 and newer (older runtimes use other bucket "
                "and pclntab layouts)");
  }
  RuntimeTraits t;
  t.version = v;
  for (const GoVersion& verified : kVerified) t.verified |= (v.minor == verified.minor);
  t.newer_than_verified = v.minor > kVerified[std::size(kVerified) - 1].minor;

  SetProfilerVariables(v, t);

  t.max_stack_words = MaxStackWords(v);

  if (From(v, 27)) {
    t.record_layout = MemRecordLayout::kCountsOnly;
    t.bytes_label_is_object_size = true;
  }

  t.hidden_prefixes = {"runtime."};
  if (From(v, 24)) t.hidden_prefixes.push_back("internal/runtime/");
  t.writes_start_line = From(v, 20);
  t.debug_text_sorts_ascending = From(v, 23);
  t.frame_function_elides_shapes = From(v, 21);
  t.dedup_by_printed_name = From(v, 21) && !From(v, 21, 6);
  t.deck_compares_printed_name = !From(v, 22);
  t.cached_location_deck_retry = From(v, 19);

  t.func_ids = FuncIdsFor(v);
  t.memstats = MemstatsTraitsFor(v);
  return t;
}

std::string VerifiedVersionsText() {
  std::string out = "Go ";
  for (size_t i = 0; i < std::size(kVerified); ++i) {
    if (i > 0) out += i + 1 == std::size(kVerified) ? " and " : ", ";
    out += FormatGoVersion(kVerified[i]).substr(2);  // without "go"
  }
  return out;
}

std::optional<std::string> UnverifiedVersionWarning(const RuntimeTraits& traits) {
  if (traits.verified) return std::nullopt;
  return FormatGoVersion(traits.version) +
         (traits.newer_than_verified ? " is newer than" : " is not one of") +
         " the Go versions goheap2pprof is tested with (" + VerifiedVersionsText() +
         "); proceeding because its runtime tables validate";
}

GoVersion NewestVerifiedVersion() { return {1, kVerified[std::size(kVerified) - 1].minor, 0}; }

}  // namespace goheap2pprof
