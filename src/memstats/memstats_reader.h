// Reading the Go runtime's memory statistics from outside the process,
// read-only (go-memstats-facts.md, sections 4-7):
// - memstats.heapStats, the three rotating delta slots, taken consistently
//   with the runtime's own sequence lock (every P's statsSeq even and
//   unchanged around the copy, gen unchanged between the slots, two equal
//   copies, the merge-source slot zero, noPLock unlocked), retried a bounded
//   number of times;
// - the values around it as sysStatsAggregate reads them (mheap_'s fixalloc
//   in-use before the *_sys figures; the GC group with numgc unchanged);
// - gcController, the goroutine counts, GOMAXPROCS and the list of Ms;
// - every P's mcache, to emulate the flush ReadMemStats performs with the
//   world stopped.
// ComputeGoRuntimeStats then computes MemStats and the runtime/metrics
// values as the target's Go version does.
//
//   MemstatsAddresses at = ...;  // link-time addresses + load bias
//   GoRuntimeStats s = ReadGoRuntimeStatsFrom(mem, at, layout, traits);
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memstats/go_runtime_stats.h"
#include "proc/memory_reader.h"
#include "runtime/memstats_layout.h"
#include "runtime/runtime_traits.h"

namespace goheap2pprof {

inline constexpr size_t kNumSizeClasses = 68;

// runtime.class_to_size: the same in Go 1.18-1.27 (facts, section 1).
extern const std::array<uint32_t, kNumSizeClasses> kClassToSize;

// Where the variables are in the target (load bias added).
struct MemstatsAddresses {
  uint64_t memstats = 0;
  uint64_t gc_controller = 0;
  uint64_t mheap = 0;
  uint64_t allp = 0;
  uint64_t allglen = 0;
  uint64_t allm = 0;
  uint64_t sched = 0;
  uint64_t gomaxprocs = 0;
  uint64_t emptymspan = 0;
  std::optional<uint64_t> starting_stack_size;  // 1.19+
  std::optional<uint64_t> gc_cpu_limiter;       // 1.19+
};

// Bounds on what the target's memory may claim, and on the retries.
struct MemstatsReadLimits {
  int max_attempts = 2000;  // of the consistent heapStats read
  // The memory cannot change (a core file): one attempt, and a copy that
  // fails the checks is kept, with the reason in ConsistentHeapStats::torn.
  bool snapshot = false;
  uint64_t max_procs = 1 << 14;
  uint64_t max_threads = 1 << 20;
};

// heapStatsDelta summed over the three slots (uint64 wrap-around; the
// first six fields are int64 in the runtime).
struct HeapStatsSum {
  int64_t committed = 0;
  int64_t released = 0;
  int64_t in_heap = 0;
  int64_t in_stacks = 0;
  int64_t in_work_bufs = 0;
  int64_t in_ptr_scalar_bits = 0;  // 0 from 1.25
  uint64_t tiny_alloc_count = 0;
  uint64_t large_alloc = 0;
  uint64_t large_alloc_count = 0;
  uint64_t large_free = 0;
  uint64_t large_free_count = 0;
  std::array<uint64_t, kNumSizeClasses> small_alloc_count{};
  std::array<uint64_t, kNumSizeClasses> small_free_count{};
};

struct ConsistentHeapStats {
  HeapStatsSum sum;
  int attempts = 0;
  uint32_t gen = 0;
  uint64_t procs = 0;  // len(allp) at the read
  // Why a snapshot's only copy failed the protocol's checks (a writer was
  // mid-update when the core was taken); empty when it passed.
  std::string torn;
};

// The verified protocol of the facts' section 5. Throws Error(kMalformed)
// when the target's memory cannot be read or is impossible (len(allp) over
// the bound, gen > 2), and when no attempt of limits.max_attempts passed
// every check (the message names the check that failed last). A snapshot
// (limits.snapshot) gets one attempt and is never refused for a check.
ConsistentHeapStats ReadConsistentHeapStats(MemoryReader& mem, const MemstatsAddresses& at,
                                            const MemstatsLayout& layout,
                                            const RuntimeTraits& traits,
                                            const MemstatsReadLimits& limits = {});

// What ReadMemStats's mcache flush would add (the facts' section 7).
struct FlushEmulation {
  uint64_t tiny_allocs = 0;
  std::array<int64_t, kNumSizeClasses> small_alloc_delta{};
  uint64_t total_alloc_bytes = 0;  // gcController.totalAlloc's increase (1.19+)
  uint64_t cached_spans = 0;
};

// Everything read, before any formula.
struct RawMemstats {
  HeapStatsSum heap;
  int attempts = 0;
  std::string torn;  // ConsistentHeapStats::torn
  // mstats
  uint64_t stacks_sys = 0, mspan_sys = 0, mcache_sys = 0, buckhash_sys = 0, gc_misc_sys = 0,
           other_sys = 0;
  uint64_t last_gc_unix = 0, pause_total_ns = 0;
  std::array<uint64_t, 256> pause_ns{}, pause_end{};
  uint32_t numgc = 0, numforcedgc = 0;
  double gc_cpu_fraction = 0;
  // mheap_
  uint64_t spanalloc_inuse = 0, cachealloc_inuse = 0;
  // gcController
  int32_t gc_percent = 0;
  int64_t memory_limit = 0;
  uint64_t heap_goal = 0;  // 1.18's field
  uint64_t percent_heap_goal = 0, sweep_dist_min_trigger = 0, triggered = 0;
  uint64_t heap_scan = 0, last_stack_scan = 0, globals_scan = 0, heap_marked = 0;
  uint64_t pacer_heap_free = 0, pacer_total_alloc = 0, pacer_total_free = 0, mapped_ready = 0;
  // scheduler
  uint64_t allglen = 0;
  int64_t free_gs = 0;  // sched's free lists plus every P's
  uint32_t ngsys = 0;
  int32_t gomaxprocs = 0;
  uint64_t threads = 0;
  uint32_t starting_stack_size = 0;
  uint64_t limiter_last_enabled = 0;
  FlushEmulation flush;
};

// Reads everything (the consistent heapStats first). Throws Error as
// ReadConsistentHeapStats, and kMalformed for unreadable or impossible
// values elsewhere.
RawMemstats ReadRawMemstats(MemoryReader& mem, const MemstatsAddresses& at,
                            const MemstatsLayout& layout, const RuntimeTraits& traits,
                            const MemstatsReadLimits& limits = {});

// MemStats (with the flush emulated) and the metrics of this Go version, as
// readmemstats_m and runtime/metrics compute them. Pure.
GoRuntimeStats ComputeGoRuntimeStats(const RawMemstats& raw, const RuntimeTraits& traits);

// heapGoal() of 1.19+ (facts, section 6.1), with `total_alloc` as
// gcController.totalAlloc.
uint64_t HeapGoal(const RawMemstats& raw, uint64_t total_alloc, bool headroom_percent);

}  // namespace goheap2pprof
