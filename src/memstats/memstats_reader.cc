#include "memstats/memstats_reader.h"

#include <time.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <string>

#include "base/error.h"

namespace goheap2pprof {

const std::array<uint32_t, kNumSizeClasses> kClassToSize = {
    0,     8,     16,    24,    32,    48,    64,    80,    96,    112,   128,   144,  160,   176,
    192,   208,   224,   240,   256,   288,   320,   352,   384,   416,   448,   480,  512,   576,
    640,   704,   768,   896,   1024,  1152,  1280,  1408,  1536,  1792,  2048,  2304, 2688,  3072,
    3200,  3456,  4096,  4864,  5376,  6144,  6528,  6784,  6912,  8192,  9472,  9728, 10240, 10880,
    12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768};

namespace {

// mcache.alloc has numSpanClasses = 68 << 1 entries.
constexpr uint64_t kSpanClasses = kNumSizeClasses * 2;

uint64_t U64(std::span<const uint8_t> b, uint64_t off) {
  uint64_t v = 0;
  if (off + 8 <= b.size()) std::memcpy(&v, b.data() + off, 8);
  return v;
}
uint32_t U32(std::span<const uint8_t> b, uint64_t off) {
  uint32_t v = 0;
  if (off + 4 <= b.size()) std::memcpy(&v, b.data() + off, 4);
  return v;
}
uint16_t U16(std::span<const uint8_t> b, uint64_t off) {
  uint16_t v = 0;
  if (off + 2 <= b.size()) std::memcpy(&v, b.data() + off, 2);
  return v;
}

// Reads the requests in order (one process_vm_readv for a live process);
// throws kMalformed naming `what` if one is not mapped.
void ReadAll(MemoryReader& mem, std::vector<ReadRequest>& requests, std::string_view what) {
  mem.ReadMany(requests);
  for (const ReadRequest& r : requests) {
    if (!r.ok) {
      throw Error(ErrorKind::kMalformed, "cannot read ", what, " at ", Hex(r.addr), " (",
                  r.dst.size(), " bytes)");
    }
  }
}

struct Procs {
  uint64_t array = 0;
  std::vector<uint64_t> ps;
  bool operator==(const Procs&) const = default;
};

Procs ReadAllp(MemoryReader& mem, const MemstatsAddresses& at, const MemstatsReadLimits& limits) {
  std::array<uint8_t, 16> header{};
  mem.Read(at.allp, header, "runtime.allp");
  Procs p;
  p.array = U64(header, 0);
  const uint64_t len = U64(header, 8);
  if (len == 0 || len > limits.max_procs) {
    throw Error(ErrorKind::kMalformed, "runtime.allp has ", len, " Ps (at most ", limits.max_procs,
                " accepted)");
  }
  std::vector<uint8_t> bytes(len * 8);
  mem.Read(p.array, bytes, "the array of runtime.allp");
  p.ps.resize(len);
  for (uint64_t i = 0; i < len; ++i) {
    p.ps[i] = U64(bytes, i * 8);
    if (p.ps[i] == 0) throw Error(ErrorKind::kMalformed, "runtime.allp[", i, "] is nil");
  }
  return p;
}

// Every P's statsSeq, in one batched read.
std::vector<uint32_t> ReadSeqs(MemoryReader& mem, const Procs& procs, const MemstatsLayout& l) {
  std::vector<uint32_t> seqs(procs.ps.size());
  std::vector<ReadRequest> req(procs.ps.size());
  for (size_t i = 0; i < procs.ps.size(); ++i) {
    req[i].addr = procs.ps[i] + l.p_stats_seq;
    req[i].dst = std::span<uint8_t>(reinterpret_cast<uint8_t*>(&seqs[i]), 4);
  }
  ReadAll(mem, req, "p.statsSeq");
  return seqs;
}

// One copy of the delta slots, in the order the protocol needs: gen,
// source slot, gen, writers' slot, gen, destination slot, gen, noPLock.
struct SlotsCopy {
  std::array<uint32_t, 4> gens{};
  std::vector<uint8_t> slots;  // 3 x delta_size, in slot order (0, 1, 2)
  uint64_t lock_key = 0;
};

void AddCopyRequests(const MemstatsAddresses& at, const MemstatsLayout& l, uint32_t g, SlotsCopy& c,
                     std::vector<ReadRequest>& req) {
  const uint64_t base = at.memstats + l.ms_heap_stats;
  c.slots.assign(3 * l.delta_size, 0);
  const uint32_t order[3] = {(g + 1) % 3, g, (g + 2) % 3};
  for (int i = 0; i < 3; ++i) {
    req.push_back(
        {base + l.chs_gen, std::span<uint8_t>(reinterpret_cast<uint8_t*>(&c.gens[i]), 4)});
    req.push_back({base + order[i] * l.delta_size,
                   std::span<uint8_t>(c.slots.data() + order[i] * l.delta_size, l.delta_size)});
  }
  req.push_back({base + l.chs_gen, std::span<uint8_t>(reinterpret_cast<uint8_t*>(&c.gens[3]), 4)});
  req.push_back(
      {base + l.chs_no_p_lock, std::span<uint8_t>(reinterpret_cast<uint8_t*>(&c.lock_key), 8)});
}

HeapStatsSum SumSlots(const std::vector<uint8_t>& slots, const MemstatsLayout& l,
                      const RuntimeTraits& traits) {
  // Every field is 8 bytes (the runtime asserts the size is a multiple of
  // 8), so summing word by word is summing field by field.
  std::vector<uint8_t> sum(l.delta_size, 0);
  for (uint64_t w = 0; w + 8 <= l.delta_size; w += 8) {
    uint64_t v = U64(slots, w) + U64(slots, l.delta_size + w) + U64(slots, 2 * l.delta_size + w);
    std::memcpy(sum.data() + w, &v, 8);
  }
  HeapStatsSum s;
  s.committed = static_cast<int64_t>(U64(sum, l.d_committed));
  s.released = static_cast<int64_t>(U64(sum, l.d_released));
  s.in_heap = static_cast<int64_t>(U64(sum, l.d_in_heap));
  s.in_stacks = static_cast<int64_t>(U64(sum, l.d_in_stacks));
  s.in_work_bufs = static_cast<int64_t>(U64(sum, l.d_in_work_bufs));
  if (traits.memstats.has_ptr_scalar_bits) {
    s.in_ptr_scalar_bits = static_cast<int64_t>(U64(sum, l.d_in_ptr_scalar_bits));
  }
  s.tiny_alloc_count = U64(sum, l.d_tiny_alloc_count);
  s.large_alloc = U64(sum, l.d_large_alloc);
  s.large_alloc_count = U64(sum, l.d_large_alloc_count);
  s.large_free = U64(sum, l.d_large_free);
  s.large_free_count = U64(sum, l.d_large_free_count);
  for (size_t i = 0; i < kNumSizeClasses; ++i) {
    s.small_alloc_count[i] = U64(sum, l.d_small_alloc_count + 8 * i);
    s.small_free_count[i] = U64(sum, l.d_small_free_count + 8 * i);
  }
  return s;
}

// Why one attempt was rejected; empty when it passed.
std::string Judge(const std::vector<uint32_t>& q1, const std::vector<uint32_t>& q2, const Procs& p1,
                  const Procs& p2, uint32_t g, const SlotsCopy& a, const SlotsCopy& b,
                  const MemstatsLayout& l, const RuntimeTraits& traits) {
  if (!(p1 == p2)) return "runtime.allp changed";
  for (size_t i = 0; i < q1.size(); ++i) {
    if (q1[i] % 2 != 0) return "a P's statsSeq was odd (a writer was updating)";
    if (q1[i] != q2[i]) return "a P's statsSeq changed";
  }
  for (const SlotsCopy* c : {&a, &b}) {
    for (uint32_t gen : c->gens) {
      if (gen != g) return "heapStats.gen changed during the copy";
    }
  }
  if (a.slots != b.slots || a.lock_key != b.lock_key) return "the two copies differ";
  const uint64_t source = ((g + 1) % 3) * l.delta_size;
  for (uint64_t i = 0; i < l.delta_size; ++i) {
    if (a.slots[source + i] != 0) return "the merge-source slot was not zero";
  }
  const bool locked = traits.memstats.spinbit_mutex ? (a.lock_key & 1) != 0 : a.lock_key != 0;
  if (locked) return "heapStats.noPLock was held";
  return "";
}

void Pause(int attempt) {
  // Writers finish within microseconds; past the first tries, let them run.
  if (attempt < 8) return;
  timespec ts{0, 20000};
  nanosleep(&ts, nullptr);
}

}  // namespace

ConsistentHeapStats ReadConsistentHeapStats(MemoryReader& mem, const MemstatsAddresses& at,
                                            const MemstatsLayout& l, const RuntimeTraits& traits,
                                            const MemstatsReadLimits& limits) {
  const uint64_t base = at.memstats + l.ms_heap_stats;
  std::string why = "no attempt made";
  const int attempts = limits.snapshot ? 1 : limits.max_attempts;
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    Pause(attempt);
    const Procs p1 = ReadAllp(mem, at, limits);
    const std::vector<uint32_t> q1 = ReadSeqs(mem, p1, l);
    const uint32_t g = mem.ReadU32(base + l.chs_gen, "heapStats.gen");
    if (g > 2) throw Error(ErrorKind::kMalformed, "heapStats.gen is ", g, ", not 0, 1 or 2");
    SlotsCopy a, b;
    std::vector<ReadRequest> req;
    AddCopyRequests(at, l, g, a, req);
    AddCopyRequests(at, l, g, b, req);
    ReadAll(mem, req, "memstats.heapStats");
    const Procs p2 = ReadAllp(mem, at, limits);
    const std::vector<uint32_t> q2 = p1 == p2 ? ReadSeqs(mem, p2, l) : q1;
    why = Judge(q1, q2, p1, p2, g, a, b, l, traits);
    if (why.empty() || limits.snapshot) {
      return ConsistentHeapStats{SumSlots(a.slots, l, traits), attempt, g, p1.ps.size(), why};
    }
  }
  throw Error(ErrorKind::kMalformed, "no consistent read of the runtime's heap statistics in ",
              limits.max_attempts, " attempts; the last failed because ", why)
      .WithHint("the target is updating them without pause; try again");
}

namespace {

// The *_sys figures and the GC group of mstats, after mheap_'s fixalloc
// in-use (read first: the *_sys never shrink, so sys - inuse cannot wrap),
// with numgc read before and after: mark termination writes the group and
// increments numgc last.
void ReadSysAndGc(MemoryReader& mem, const MemstatsAddresses& at, const MemstatsLayout& l,
                  RawMemstats& raw) {
  const uint64_t fields[] = {
      l.ms_stacks_sys, l.ms_mspan_sys,    l.ms_mcache_sys,     l.ms_buckhash_sys, l.ms_gc_misc_sys,
      l.ms_other_sys,  l.ms_last_gc_unix, l.ms_pause_total_ns, l.ms_pause_ns,     l.ms_pause_end,
      l.ms_numgc,      l.ms_numforcedgc,  l.ms_gc_cpu_fraction};
  uint64_t lo = ~uint64_t{0}, hi = 0;
  for (uint64_t f : fields) {
    lo = std::min(lo, f);
    hi = std::max(hi, f + (f == l.ms_pause_ns || f == l.ms_pause_end ? 2048 : 8));
  }
  std::vector<uint8_t> block(hi - lo);
  for (int attempt = 0; attempt < 100; ++attempt) {
    uint64_t span_inuse = 0, cache_inuse = 0;
    uint32_t numgc_before = 0;
    std::vector<ReadRequest> req = {
        {at.mheap + l.mheap_spanalloc_inuse,
         std::span<uint8_t>(reinterpret_cast<uint8_t*>(&span_inuse), 8)},
        {at.mheap + l.mheap_cachealloc_inuse,
         std::span<uint8_t>(reinterpret_cast<uint8_t*>(&cache_inuse), 8)},
        {at.memstats + l.ms_numgc,
         std::span<uint8_t>(reinterpret_cast<uint8_t*>(&numgc_before), 4)},
        {at.memstats + lo, block},
    };
    ReadAll(mem, req, "runtime.memstats");
    const uint32_t numgc_after = mem.ReadU32(at.memstats + l.ms_numgc, "memstats.numgc");
    auto at_ = [&](uint64_t f) { return f - lo; };
    if (numgc_before != numgc_after || U32(block, at_(l.ms_numgc)) != numgc_after) continue;
    raw.spanalloc_inuse = span_inuse;
    raw.cachealloc_inuse = cache_inuse;
    raw.stacks_sys = U64(block, at_(l.ms_stacks_sys));
    raw.mspan_sys = U64(block, at_(l.ms_mspan_sys));
    raw.mcache_sys = U64(block, at_(l.ms_mcache_sys));
    raw.buckhash_sys = U64(block, at_(l.ms_buckhash_sys));
    raw.gc_misc_sys = U64(block, at_(l.ms_gc_misc_sys));
    raw.other_sys = U64(block, at_(l.ms_other_sys));
    raw.last_gc_unix = U64(block, at_(l.ms_last_gc_unix));
    raw.pause_total_ns = U64(block, at_(l.ms_pause_total_ns));
    for (size_t i = 0; i < 256; ++i) {
      raw.pause_ns[i] = U64(block, at_(l.ms_pause_ns) + 8 * i);
      raw.pause_end[i] = U64(block, at_(l.ms_pause_end) + 8 * i);
    }
    raw.numgc = numgc_after;
    raw.numforcedgc = U32(block, at_(l.ms_numforcedgc));
    const uint64_t bits = U64(block, at_(l.ms_gc_cpu_fraction));
    std::memcpy(&raw.gc_cpu_fraction, &bits, 8);
    return;
  }
  throw Error(ErrorKind::kMalformed, "memstats.numgc kept changing during the read")
      .WithHint("the target is collecting garbage without pause; try again");
}

// gcController's fields, re-read (bounded) until heapFree + heapAlloc <=
// mappedReady as memoryLimitHeapGoal requires.
void ReadPacer(MemoryReader& mem, const MemstatsAddresses& at, const MemstatsLayout& l,
               const RuntimeTraits& traits, RawMemstats& raw) {
  const uint64_t fields[] = {l.gc_percent,
                             l.gc_memory_limit,
                             l.gc_heap_goal,
                             l.gc_percent_heap_goal,
                             l.gc_sweep_dist_min_trigger,
                             l.gc_triggered,
                             l.gc_heap_scan,
                             l.gc_last_stack_scan,
                             l.gc_globals_scan,
                             l.gc_heap_marked,
                             l.gc_heap_free,
                             l.gc_total_alloc,
                             l.gc_total_free,
                             l.gc_mapped_ready};
  uint64_t hi = 0;
  for (uint64_t f : fields) {
    if (f != kNoField) hi = std::max(hi, f + 8);
  }
  std::vector<uint8_t> b(hi);
  auto get = [&](uint64_t f) { return f == kNoField ? 0 : U64(b, f); };
  for (int attempt = 0; attempt < 100; ++attempt) {
    mem.Read(at.gc_controller, b, "runtime.gcController");
    raw.gc_percent = static_cast<int32_t>(U32(b, l.gc_percent));
    raw.memory_limit = static_cast<int64_t>(get(l.gc_memory_limit));
    raw.heap_goal = get(l.gc_heap_goal);
    raw.percent_heap_goal = get(l.gc_percent_heap_goal);
    raw.sweep_dist_min_trigger = get(l.gc_sweep_dist_min_trigger);
    raw.triggered = get(l.gc_triggered);
    raw.heap_scan = get(l.gc_heap_scan);
    raw.last_stack_scan = get(l.gc_last_stack_scan);
    raw.globals_scan = get(l.gc_globals_scan);
    raw.heap_marked = get(l.gc_heap_marked);
    raw.pacer_heap_free = get(l.gc_heap_free);
    raw.pacer_total_alloc = get(l.gc_total_alloc);
    raw.pacer_total_free = get(l.gc_total_free);
    raw.mapped_ready = get(l.gc_mapped_ready);
    if (traits.memstats.heap_in_mstats ||
        raw.pacer_heap_free + (raw.pacer_total_alloc - raw.pacer_total_free) <= raw.mapped_ready) {
      return;
    }
  }
  // Left as read: the goal is then computed from the last copy, as the
  // runtime would from its next.
}

void ReadScheduler(MemoryReader& mem, const MemstatsAddresses& at, const MemstatsLayout& l,
                   const RuntimeTraits& traits, const std::vector<uint64_t>& ps, RawMemstats& raw) {
  raw.allglen = mem.ReadU64(at.allglen, "runtime.allglen");
  raw.gomaxprocs = static_cast<int32_t>(mem.ReadU32(at.gomaxprocs, "runtime.gomaxprocs"));
  raw.ngsys = mem.ReadU32(at.sched + l.sched_ngsys, "sched.ngsys");
  int64_t free_gs =
      static_cast<int32_t>(mem.ReadU32(at.sched + l.sched_gfree_count, "sched.gFree"));
  if (traits.memstats.sched_two_free_lists) {
    free_gs +=
        static_cast<int32_t>(mem.ReadU32(at.sched + l.sched_gfree_count2, "sched.gFree.noStack"));
  }
  std::vector<int32_t> per_p(ps.size());
  std::vector<ReadRequest> req(ps.size());
  for (size_t i = 0; i < ps.size(); ++i) {
    req[i] = {ps[i] + l.p_gfree_count,
              std::span<uint8_t>(reinterpret_cast<uint8_t*>(&per_p[i]), 4)};
  }
  ReadAll(mem, req, "p.gFree");
  for (int32_t n : per_p) free_gs += n;
  raw.free_gs = free_gs;
  if (at.starting_stack_size) {
    raw.starting_stack_size = mem.ReadU32(*at.starting_stack_size, "runtime.startingStackSize");
  }
  if (at.gc_cpu_limiter && l.limiter_last_enabled_cycle != kNoField) {
    // atomic.Uint32 (mgclimit.go)
    raw.limiter_last_enabled =
        mem.ReadU32(*at.gc_cpu_limiter + l.limiter_last_enabled_cycle, "gcCPULimiter");
  }
}

// The length of runtime.allm (runtime.ThreadCreateProfile's count).
uint64_t CountThreads(MemoryReader& mem, const MemstatsAddresses& at, const MemstatsLayout& l,
                      const MemstatsReadLimits& limits) {
  uint64_t n = 0;
  for (uint64_t m = mem.ReadU64(at.allm, "runtime.allm"); m != 0;
       m = mem.ReadU64(m + l.m_alllink, "m.alllink")) {
    if (++n > limits.max_threads) {
      throw Error(ErrorKind::kMalformed, "runtime.allm lists more than ", limits.max_threads,
                  " threads (a cycle?)");
    }
  }
  return n;
}

// What releaseAll would do to each P's cached spans (facts, section 7).
void EmulateFlush(MemoryReader& mem, const MemstatsAddresses& at, const MemstatsLayout& l,
                  const RuntimeTraits& traits, const std::vector<uint64_t>& ps,
                  FlushEmulation& flush) {
  const uint64_t mcache_len = l.mcache_alloc + kSpanClasses * 8;
  const uint64_t span_lo = std::min(
      {l.span_nelems, l.span_alloc_count, l.span_elemsize,
       traits.memstats.flush_adds_used_slots ? l.span_alloc_count_before_cache : kNoField});
  const uint64_t span_hi =
      std::max({l.span_nelems + l.span_nelems_size, l.span_alloc_count + 2, l.span_elemsize + 8,
                traits.memstats.flush_adds_used_slots ? l.span_alloc_count_before_cache + 2 : 0});
  for (uint64_t p : ps) {
    const uint64_t mcache = mem.ReadU64(p + l.p_mcache, "p.mcache");
    if (mcache == 0) continue;
    std::vector<uint8_t> c(mcache_len);
    mem.Read(mcache, c, "runtime.mcache");
    flush.tiny_allocs += U64(c, l.mcache_tiny_allocs);
    std::vector<uint64_t> classes;
    std::vector<std::vector<uint8_t>> spans;
    std::vector<ReadRequest> req;
    spans.reserve(kSpanClasses);
    for (uint64_t spc = 0; spc < kSpanClasses; ++spc) {
      const uint64_t s = U64(c, l.mcache_alloc + 8 * spc);
      if (s == 0 || s == at.emptymspan) continue;
      classes.push_back(spc);
      spans.emplace_back(span_hi - span_lo);
      req.push_back({s + span_lo, spans.back()});
    }
    ReadAll(mem, req, "a cached runtime.mspan");
    for (size_t i = 0; i < spans.size(); ++i) {
      const std::vector<uint8_t>& s = spans[i];
      const uint64_t alloc_count = U16(s, l.span_alloc_count - span_lo);
      const size_t size_class = classes[i] >> 1;
      ++flush.cached_spans;
      if (traits.memstats.flush_adds_used_slots) {
        const uint64_t before = U16(s, l.span_alloc_count_before_cache - span_lo);
        const uint64_t used = alloc_count - before;  // may wrap: as the runtime's uintptr
        flush.small_alloc_delta[size_class] += static_cast<int64_t>(used);
        flush.total_alloc_bytes += used * U64(s, l.span_elemsize - span_lo);
      } else {
        const uint64_t nelems = l.span_nelems_size == 2 ? U16(s, l.span_nelems - span_lo)
                                                        : U64(s, l.span_nelems - span_lo);
        flush.small_alloc_delta[size_class] -= static_cast<int64_t>(nelems - alloc_count);
      }
    }
  }
}

}  // namespace

RawMemstats ReadRawMemstats(MemoryReader& mem, const MemstatsAddresses& at, const MemstatsLayout& l,
                            const RuntimeTraits& traits, const MemstatsReadLimits& limits) {
  RawMemstats raw;
  const ConsistentHeapStats heap = ReadConsistentHeapStats(mem, at, l, traits, limits);
  raw.heap = heap.sum;
  raw.attempts = heap.attempts;
  raw.torn = heap.torn;
  ReadSysAndGc(mem, at, l, raw);
  ReadPacer(mem, at, l, traits, raw);
  const Procs procs = ReadAllp(mem, at, limits);
  ReadScheduler(mem, at, l, traits, procs.ps, raw);
  raw.threads = CountThreads(mem, at, l, limits);
  EmulateFlush(mem, at, l, traits, procs.ps, raw.flush);
  return raw;
}

}  // namespace goheap2pprof
