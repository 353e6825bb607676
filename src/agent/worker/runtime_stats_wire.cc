#include "agent/worker/runtime_stats_wire.h"

#include <bit>

#include "agent/worker/wire_codec.h"
#include "base/error.h"

namespace goheap2pprof {
namespace {

constexpr uint32_t kMagic = 0x6732736d;  // "g2sm"

// The MemStats fields in one order for both directions.
template <typename F>
void EachU64(MemStats& m, F&& f) {
  for (uint64_t* p :
       {&m.alloc,         &m.total_alloc,  &m.sys,         &m.lookups,       &m.mallocs,
        &m.frees,         &m.heap_alloc,   &m.heap_sys,    &m.heap_idle,     &m.heap_inuse,
        &m.heap_released, &m.heap_objects, &m.stack_inuse, &m.stack_sys,     &m.mspan_inuse,
        &m.mspan_sys,     &m.mcache_inuse, &m.mcache_sys,  &m.buck_hash_sys, &m.gc_sys,
        &m.other_sys,     &m.next_gc,      &m.last_gc,     &m.pause_total_ns}) {
    f(*p);
  }
  for (uint64_t& v : m.pause_ns) f(v);
  for (uint64_t& v : m.pause_end) f(v);
}

}  // namespace

std::string EncodeRuntimeStats(const GoRuntimeStats& stats, const OtelProcessIdentity& otel) {
  WireWriter w;
  w.U32(kMagic);
  w.Str(stats.go_version.substr(0, RuntimeStatsWireLimits::kMaxVersionBytes));
  MemStats mem = stats.mem;
  EachU64(mem, [&](uint64_t& v) { w.U64(v); });
  w.U32(mem.num_gc);
  w.U32(mem.num_forced_gc);
  w.F64(mem.gc_cpu_fraction);
  w.U8(mem.enable_gc ? 1 : 0);
  w.U8(mem.debug_gc ? 1 : 0);
  for (const MemStats::SizeClass& c : mem.by_size) {
    w.U32(c.size);
    w.U64(c.mallocs);
    w.U64(c.frees);
  }
  w.U64(stats.num_goroutine);
  w.U32(static_cast<uint32_t>(stats.gomaxprocs));
  w.U64(stats.threads);
  w.U32(static_cast<uint32_t>(stats.attempts));
  const size_t metrics = std::min(stats.metrics.size(), RuntimeStatsWireLimits::kMaxMetrics);
  w.U32(static_cast<uint32_t>(metrics));
  for (size_t i = 0; i < metrics; ++i) {
    const GoMetric& m = stats.metrics[i];
    w.Str(std::string_view(m.name).substr(0, RuntimeStatsWireLimits::kMaxNameBytes));
    w.U8(m.kind == GoMetric::Kind::kFloat64 ? 1 : 0);
    w.U64(m.kind == GoMetric::Kind::kFloat64 ? std::bit_cast<uint64_t>(m.f) : m.u);
  }
  const size_t notes = std::min(stats.notes.size(), RuntimeStatsWireLimits::kMaxNotes);
  w.U32(static_cast<uint32_t>(notes));
  for (size_t i = 0; i < notes; ++i) {
    w.Str(std::string_view(stats.notes[i]).substr(0, RuntimeStatsWireLimits::kMaxNoteBytes));
  }
  w.Str(std::string_view(otel.service_name).substr(0, kMaxOtelIdentityValue));
  w.Str(std::string_view(otel.service_instance_id).substr(0, kMaxOtelIdentityValue));
  return w.Take();
}

GoRuntimeStats DecodeRuntimeStats(std::string_view bytes, OtelProcessIdentity* otel) {
  using L = RuntimeStatsWireLimits;
  WireReader r(bytes, "memory-statistics reply");
  if (r.U32() != kMagic) throw Error(ErrorKind::kMalformed, "memory-statistics reply: bad magic");
  GoRuntimeStats s;
  s.go_version = r.Str(L::kMaxVersionBytes, "Go version");
  EachU64(s.mem, [&](uint64_t& v) { v = r.U64(); });
  s.mem.num_gc = r.U32();
  s.mem.num_forced_gc = r.U32();
  s.mem.gc_cpu_fraction = r.F64();
  s.mem.enable_gc = r.Bool("EnableGC");
  s.mem.debug_gc = r.Bool("DebugGC");
  for (MemStats::SizeClass& c : s.mem.by_size) {
    c.size = r.U32();
    c.mallocs = r.U64();
    c.frees = r.U64();
  }
  s.num_goroutine = r.U64();
  s.gomaxprocs = static_cast<int32_t>(r.U32());
  s.threads = r.U64();
  s.attempts = static_cast<int>(r.U32());
  const uint32_t metrics = r.Count(L::kMaxMetrics, "metrics");
  s.metrics.reserve(metrics);
  for (uint32_t i = 0; i < metrics; ++i) {
    GoMetric m;
    m.name = r.Str(L::kMaxNameBytes, "metric name");
    const uint8_t kind = r.U8();
    if (kind > 1) throw Error(ErrorKind::kMalformed, "memory-statistics reply: metric kind ", kind);
    m.kind = kind == 1 ? GoMetric::Kind::kFloat64 : GoMetric::Kind::kUint64;
    const uint64_t bits = r.U64();
    if (m.kind == GoMetric::Kind::kFloat64) {
      m.f = std::bit_cast<double>(bits);
    } else {
      m.u = bits;
    }
    s.metrics.push_back(std::move(m));
  }
  const uint32_t notes = r.Count(L::kMaxNotes, "notes");
  for (uint32_t i = 0; i < notes; ++i) s.notes.push_back(r.Str(L::kMaxNoteBytes, "note"));
  OtelProcessIdentity own;
  own.service_name = r.Str(kMaxOtelIdentityValue, "OTel service.name");
  own.service_instance_id = r.Str(kMaxOtelIdentityValue, "OTel service.instance.id");
  r.End();
  if (otel != nullptr) *otel = std::move(own);
  return s;
}

Expected<GoRuntimeStats> TryDecodeRuntimeStats(std::string_view bytes, OtelProcessIdentity* otel) {
  return TryDecodeReply([bytes, otel] { return DecodeRuntimeStats(bytes, otel); });
}

}  // namespace goheap2pprof
