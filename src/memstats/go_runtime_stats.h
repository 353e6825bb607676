// The Go runtime's memory statistics of a target, read from outside: what
// runtime.ReadMemStats and runtime/metrics.Read would return inside it at
// that instant (go-memstats-facts.md in the reference material). The read
// itself (layouts, the statsSeq protocol, the mcache-flush emulation) is
// memstats/*_reader; this header is the result every output uses: the
// `# runtime.MemStats` block of ?debug=1, `goheap2pprof mem`, serve's
// per-process /metrics, watch.jsonl.
//
//   GoRuntimeStats s = ...;  // app/runtime_stats.h reads one from a source
//   if (auto live = s.Uint("/gc/heap/live:bytes")) use(*live);
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace goheap2pprof {

// runtime.MemStats, field for field, as ReadMemStats returns it: the mcache
// flush that ReadMemStats performs with the world stopped is emulated, so
// Alloc, Mallocs, BySize and the rest equal it (GCSys/OtherSys excepted,
// whose sum is exact; see the facts, section 7).
struct MemStats {
  uint64_t alloc = 0;
  uint64_t total_alloc = 0;
  uint64_t sys = 0;
  uint64_t lookups = 0;
  uint64_t mallocs = 0;
  uint64_t frees = 0;
  uint64_t heap_alloc = 0;
  uint64_t heap_sys = 0;
  uint64_t heap_idle = 0;
  uint64_t heap_inuse = 0;
  uint64_t heap_released = 0;
  uint64_t heap_objects = 0;
  uint64_t stack_inuse = 0;
  uint64_t stack_sys = 0;
  uint64_t mspan_inuse = 0;
  uint64_t mspan_sys = 0;
  uint64_t mcache_inuse = 0;
  uint64_t mcache_sys = 0;
  uint64_t buck_hash_sys = 0;
  uint64_t gc_sys = 0;
  uint64_t other_sys = 0;
  uint64_t next_gc = 0;
  uint64_t last_gc = 0;  // unix nanoseconds
  uint64_t pause_total_ns = 0;
  std::array<uint64_t, 256> pause_ns{};   // ring: GC n (from 1) at (n-1) % 256
  std::array<uint64_t, 256> pause_end{};  // unix nanoseconds, same ring
  uint32_t num_gc = 0;
  uint32_t num_forced_gc = 0;
  double gc_cpu_fraction = 0;
  bool enable_gc = true;
  bool debug_gc = false;
  struct SizeClass {
    uint32_t size = 0;
    uint64_t mallocs = 0;
    uint64_t frees = 0;
  };
  std::array<SizeClass, 61> by_size{};
};

// One runtime/metrics sample, named as runtime/metrics names it
// ("/memory/classes/heap/objects:bytes"). Only scalar metrics.
struct GoMetric {
  enum class Kind { kUint64, kFloat64 };
  std::string name;
  Kind kind = Kind::kUint64;
  uint64_t u = 0;  // kUint64
  double f = 0;    // kFloat64
};

struct GoRuntimeStats {
  std::string go_version;  // "go1.26.8"
  MemStats mem;
  // What metrics.Read returns for the names this Go version has (among
  // those the reader computes), in metrics.All() order (sorted by name).
  std::vector<GoMetric> metrics;
  uint64_t num_goroutine = 0;  // runtime.NumGoroutine()
  int32_t gomaxprocs = 0;
  // Threads the runtime created (the length of runtime.allm, as
  // runtime.ThreadCreateProfile counts them; client_golang's go_threads).
  uint64_t threads = 0;
  // How the consistent read went: attempts until the statsSeq protocol
  // accepted a snapshot (1 on a quiet target).
  int attempts = 0;
  std::vector<std::string> notes;  // for -v: addresses, layouts' source
  // For everyone: e.g. a core taken while the runtime was mid-update.
  std::vector<std::string> warnings;

  // The value of a metric, or nullopt when this version has no such metric.
  std::optional<uint64_t> Uint(std::string_view name) const;
  std::optional<double> Float(std::string_view name) const;
};

}  // namespace goheap2pprof
