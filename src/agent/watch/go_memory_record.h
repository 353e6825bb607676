// Where a Go process's memory is, as one JSON object for watch.jsonl's
// trigger lines (and anything else that records it): the runtime's
// /memory/classes/ tree, the live heap against its goal and limit, and the
// memory the Go runtime does not manage (cgo, syscall.Mmap, ...), which a
// heap profile can never explain.
//
//   json record = ...;
//   record["go_memory"] = GoMemoryRecord(stats, RssAnonBytes(pid));
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "memstats/go_runtime_stats.h"

namespace goheap2pprof {

// {"go_version", "classes": {"/memory/classes/heap/objects:bytes": N, ...
// every leaf the target's Go has}, "total": /memory/classes/total:bytes,
// "live_heap": /gc/heap/live:bytes (null before Go 1.21), "heap_goal",
// "gomemlimit" (null when unset or before 1.19), "rss_anon", "not_go":
// rss_anon - (Sys - HeapReleased), signed (null without rss_anon)}.
// Sys - HeapReleased is what the runtime has mapped and not given back:
// the resident anonymous memory beyond it is someone else's.
nlohmann::json GoMemoryRecord(const GoRuntimeStats& stats, std::optional<uint64_t> rss_anon);

// RssAnon of /proc/<pid>/status in bytes; nullopt once the process is gone
// or when the kernel does not report it (before 4.5).
std::optional<uint64_t> RssAnonBytes(pid_t pid);

}  // namespace goheap2pprof
