// ComputeGoRuntimeStats: readmemstats_m's and runtime/metrics' formulas
// (go-memstats-facts.md, sections 4 and 6) on what memstats_reader.cc read.
#include <algorithm>
#include <limits>

#include "memstats/memstats_reader.h"

namespace goheap2pprof {

namespace {

// heapStatsAggregate's sums of one set of small-object counts.
struct Totals {
  uint64_t total_alloc = 0;  // bytes, large included
  uint64_t total_free = 0;
  uint64_t n_alloc = 0;  // objects, tiny excluded
  uint64_t n_free = 0;
};

Totals Sum(const HeapStatsSum& s, const std::array<uint64_t, kNumSizeClasses>& small_alloc) {
  Totals t;
  t.total_alloc = s.large_alloc;
  t.total_free = s.large_free;
  t.n_alloc = s.large_alloc_count;
  t.n_free = s.large_free_count;
  for (size_t i = 0; i < kNumSizeClasses; ++i) {
    t.total_alloc += small_alloc[i] * kClassToSize[i];
    t.n_alloc += small_alloc[i];
    t.total_free += s.small_free_count[i] * kClassToSize[i];
    t.n_free += s.small_free_count[i];
  }
  return t;
}

uint64_t SysRest(const RawMemstats& r) {
  return r.stacks_sys + r.mspan_sys + r.mcache_sys + r.buckhash_sys + r.gc_misc_sys + r.other_sys;
}

// gcount(include_system): allglen less the free Gs (and the system ones).
uint64_t Goroutines(const RawMemstats& r, bool include_system) {
  int64_t n = static_cast<int64_t>(static_cast<int32_t>(r.allglen)) - r.free_gs;
  if (!include_system) n -= static_cast<int32_t>(r.ngsys);
  return static_cast<uint64_t>(std::max<int64_t>(n, 1));
}

void FillMemStats(const RawMemstats& r, const RuntimeTraits& traits, MemStats& m) {
  const HeapStatsSum& s = r.heap;
  std::array<uint64_t, kNumSizeClasses> small = s.small_alloc_count;
  for (size_t i = 0; i < kNumSizeClasses; ++i) {
    small[i] += static_cast<uint64_t>(r.flush.small_alloc_delta[i]);
  }
  const Totals t = Sum(s, small);
  const uint64_t tiny = s.tiny_alloc_count + r.flush.tiny_allocs;
  const uint64_t psb = static_cast<uint64_t>(s.in_ptr_scalar_bits);
  // The identities the runtime asserts with the world stopped give the heap
  // figures from the one consistent snapshot.
  const uint64_t in_heap = static_cast<uint64_t>(s.in_heap);
  const uint64_t released = static_cast<uint64_t>(s.released);
  const uint64_t inuse_plus_free = static_cast<uint64_t>(s.committed) -
                                   static_cast<uint64_t>(s.in_stacks) -
                                   static_cast<uint64_t>(s.in_work_bufs) - psb;
  m.alloc = m.heap_alloc = t.total_alloc - t.total_free;
  m.total_alloc = t.total_alloc;
  m.heap_sys = inuse_plus_free + released;
  m.sys = m.heap_sys + SysRest(r) + static_cast<uint64_t>(s.in_stacks) +
          static_cast<uint64_t>(s.in_work_bufs) + psb;
  m.mallocs = t.n_alloc + tiny;
  m.frees = t.n_free + tiny;
  m.heap_idle = inuse_plus_free - in_heap + released;
  m.heap_inuse = in_heap;
  m.heap_released = released;
  m.heap_objects = t.n_alloc - t.n_free;
  m.stack_inuse = static_cast<uint64_t>(s.in_stacks);
  m.stack_sys = m.stack_inuse + r.stacks_sys;
  m.mspan_inuse = r.spanalloc_inuse;
  m.mspan_sys = r.mspan_sys;
  m.mcache_inuse = r.cachealloc_inuse;
  m.mcache_sys = r.mcache_sys;
  m.buck_hash_sys = r.buckhash_sys;
  m.gc_sys = r.gc_misc_sys + static_cast<uint64_t>(s.in_work_bufs) + psb;
  m.other_sys = r.other_sys;
  m.next_gc = traits.memstats.heap_in_mstats
                  ? r.heap_goal
                  : HeapGoal(r, r.pacer_total_alloc + r.flush.total_alloc_bytes,
                             traits.memstats.goal_headroom_percent);
  m.last_gc = r.last_gc_unix;
  m.pause_total_ns = r.pause_total_ns;
  m.pause_ns = r.pause_ns;
  m.pause_end = r.pause_end;
  m.num_gc = r.numgc;
  m.num_forced_gc = r.numforcedgc;
  m.gc_cpu_fraction = r.gc_cpu_fraction;
  for (size_t i = 0; i < m.by_size.size(); ++i) {
    m.by_size[i] = {kClassToSize[i], small[i], s.small_free_count[i]};
  }
}

void AddMetrics(const RawMemstats& r, const RuntimeTraits& traits, GoRuntimeStats& out) {
  const HeapStatsSum& s = r.heap;
  const Totals t = Sum(s, s.small_alloc_count);
  const uint64_t psb = static_cast<uint64_t>(s.in_ptr_scalar_bits);
  const uint64_t in_objects = t.total_alloc - t.total_free;
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  std::vector<GoMetric>& m = out.metrics;
  auto add = [&m](std::string name, uint64_t v) {
    m.push_back({std::move(name), GoMetric::Kind::kUint64, v, 0});
  };
  add("/gc/cycles/automatic:gc-cycles", r.numgc - r.numforcedgc);
  add("/gc/cycles/forced:gc-cycles", r.numforcedgc);
  add("/gc/cycles/total:gc-cycles", r.numgc);
  add("/gc/heap/allocs:bytes", t.total_alloc);
  add("/gc/heap/allocs:objects", t.n_alloc);
  add("/gc/heap/frees:bytes", t.total_free);
  add("/gc/heap/frees:objects", t.n_free);
  add("/gc/heap/goal:bytes",
      traits.memstats.heap_in_mstats
          ? r.heap_goal
          : HeapGoal(r, r.pacer_total_alloc, traits.memstats.goal_headroom_percent));
  add("/gc/heap/objects:objects", t.n_alloc - t.n_free);
  add("/gc/heap/tiny/allocs:objects", s.tiny_alloc_count);
  add("/memory/classes/heap/free:bytes",
      u(s.committed) - u(s.in_heap) - u(s.in_stacks) - u(s.in_work_bufs) - psb);
  add("/memory/classes/heap/objects:bytes", in_objects);
  add("/memory/classes/heap/released:bytes", u(s.released));
  add("/memory/classes/heap/stacks:bytes", u(s.in_stacks));
  add("/memory/classes/heap/unused:bytes", u(s.in_heap) - in_objects);
  add("/memory/classes/metadata/mcache/free:bytes", r.mcache_sys - r.cachealloc_inuse);
  add("/memory/classes/metadata/mcache/inuse:bytes", r.cachealloc_inuse);
  add("/memory/classes/metadata/mspan/free:bytes", r.mspan_sys - r.spanalloc_inuse);
  add("/memory/classes/metadata/mspan/inuse:bytes", r.spanalloc_inuse);
  add("/memory/classes/metadata/other:bytes", u(s.in_work_bufs) + psb + r.gc_misc_sys);
  add("/memory/classes/os-stacks:bytes", r.stacks_sys);
  add("/memory/classes/other:bytes", r.other_sys);
  add("/memory/classes/profiling/buckets:bytes", r.buckhash_sys);
  add("/memory/classes/total:bytes", u(s.committed) + u(s.released) + SysRest(r));
  add("/sched/goroutines:goroutines",
      Goroutines(r, traits.memstats.goroutines_metric_counts_system));
  if (traits.memstats.metrics_1_19) {
    add("/gc/limiter/last-enabled:gc-cycle", r.limiter_last_enabled);
    add("/gc/stack/starting-size:bytes", r.starting_stack_size);
    add("/sched/gomaxprocs:threads", static_cast<uint64_t>(static_cast<int64_t>(r.gomaxprocs)));
  }
  if (traits.memstats.metrics_1_21) {
    add("/gc/gogc:percent", static_cast<uint64_t>(static_cast<int64_t>(r.gc_percent)));
    add("/gc/gomemlimit:bytes", u(r.memory_limit));
    add("/gc/heap/live:bytes", r.heap_marked);
    add("/gc/scan/globals:bytes", r.globals_scan);
    add("/gc/scan/heap:bytes", r.heap_scan);
    add("/gc/scan/stack:bytes", r.last_stack_scan);
    add("/gc/scan/total:bytes", r.globals_scan + r.heap_scan + r.last_stack_scan);
  }
  std::sort(m.begin(), m.end(),
            [](const GoMetric& a, const GoMetric& b) { return a.name < b.name; });
}

}  // namespace

uint64_t HeapGoal(const RawMemstats& r, uint64_t total_alloc, bool headroom_percent) {
  constexpr uint64_t kMiB = 1 << 20;
  // memoryLimitHeapGoal
  const uint64_t heap_alloc = total_alloc - r.pacer_total_free;
  const uint64_t limit = static_cast<uint64_t>(r.memory_limit);
  const uint64_t non_heap = r.mapped_ready - r.pacer_heap_free - heap_alloc;
  const uint64_t over = r.mapped_ready > limit ? r.mapped_ready - limit : 0;
  uint64_t limit_goal = r.heap_marked;
  if (non_heap + over < limit) {
    uint64_t g = limit - (non_heap + over);
    const uint64_t h = headroom_percent ? std::max(g / 100 * 3, kMiB) : kMiB;
    g = (g < h || g - h < h) ? h : g - h;
    limit_goal = std::max(g, r.heap_marked);
  }
  // heapGoalInternal
  uint64_t goal = r.percent_heap_goal;
  if (limit_goal < goal) return limit_goal;
  goal = std::max(goal, r.sweep_dist_min_trigger);
  constexpr uint64_t kMinRunway = 64 << 10;
  if (r.triggered != std::numeric_limits<uint64_t>::max() && goal < r.triggered + kMinRunway) {
    goal = r.triggered + kMinRunway;
  }
  return goal;
}

GoRuntimeStats ComputeGoRuntimeStats(const RawMemstats& raw, const RuntimeTraits& traits) {
  GoRuntimeStats out;
  out.go_version = FormatGoVersion(traits.version);
  FillMemStats(raw, traits, out.mem);
  AddMetrics(raw, traits, out);
  out.num_goroutine = Goroutines(raw, false);
  out.gomaxprocs = raw.gomaxprocs;
  out.threads = raw.threads;
  out.attempts = raw.attempts;
  return out;
}

}  // namespace goheap2pprof
