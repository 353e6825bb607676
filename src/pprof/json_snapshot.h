// The JSON heap snapshot of the seed collector (Huatuo's Go heap provider),
// computed from a finished heap profile so that it means exactly what the
// pprof file means: each profile sample is one runtime bucket, already
// scaled by runtime/pprof's rules, so summing samples with the same stack
// is the seed's "scale first, then merge".
//
//   SnapshotInfo info{.runtime_version = "go1.26.8", .pid = 1234};
//   std::string json = JsonSnapshot(profile, info, {.top = 10});
//
// Schema (seed fields first, then goheap2pprof's extras):
//   runtime_version, status (complete|partial|unavailable|failed),
//   status_reason, duration_ms, output_truncated,
//   pid, counters (exact|published), memprofile_rate,
//   sampling_started_late (true: the program turned sampling on after
//   start-up, so allocations made before it are not in the snapshot),
//   profile_cycle,
//   time_nanos, samples, entries_total, inuse_bytes_total,
//   inuse_objects_total, warnings[],
//   entries[]: kind ("inuse_space_objects"), name (first non-runtime
//   function), bytes, objects, average_bytes, stack ("function file:line",
//   allocation site first).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/profile.pb.h"

namespace goheap2pprof {

enum class SnapshotStatus {
  kComplete,     // the bucket list was read to its end
  kPartial,      // read, but the counters may mix two profile cycles
  kUnavailable,  // the target cannot give a heap profile (sampling off, not Go, unsupported)
  kFailed,       // the capture failed (permissions, process gone, I/O, ...)
};
std::string_view SnapshotStatusName(SnapshotStatus status);

// What the snapshot says about the capture besides the profile itself.
struct SnapshotInfo {
  SnapshotStatus status = SnapshotStatus::kComplete;
  std::string status_reason;    // empty when complete
  std::string runtime_version;  // "go1.26.8"; empty when not (yet) known
  int64_t duration_ms = 0;
  int64_t pid = 0;
  std::string counters = "exact";  // "exact" or "published"
  std::optional<uint32_t> cycle;   // the runtime's heap profile cycle
  // Sampling began after start-up (CaptureReport::sampling_started_late).
  bool sampling_started_late = false;
  std::vector<std::string> warnings;
};

struct JsonSnapshotOptions {
  size_t top = 10;  // entries kept, largest bytes first; 0 keeps all
  // An entry is named after its first frame whose function has none of these
  // prefixes: the target runtime's own frames (RuntimeTraits::hidden_prefixes,
  // the version's knowledge, comes from the runtime layer).
  std::vector<std::string_view> runtime_prefixes = {};
};

// One entry: the in-use bytes and objects of all samples with this stack.
struct SnapshotEntry {
  std::string name;
  int64_t bytes = 0;
  int64_t objects = 0;
  std::vector<std::string> stack;
};

// In-use bytes and objects per distinct stack (the sequence of location
// ids, which is the sequence of PCs after runtime/pprof's runtime-frame
// hiding), sorted by bytes, then objects, descending; stacks whose in-use
// bytes and objects are both zero are left out. Entries are named as
// JsonSnapshotOptions::runtime_prefixes says.
std::vector<SnapshotEntry> InUseByStack(const pb::Profile& profile,
                                        const std::vector<std::string_view>& runtime_prefixes);

// The snapshot of a finished heap profile (throws Error(kUsage) if the
// profile lacks inuse_objects/inuse_space).
std::string JsonSnapshot(const pb::Profile& profile, const SnapshotInfo& info,
                         const JsonSnapshotOptions& options);

// The snapshot of a capture that produced no profile: no entries, and the
// status and reason from `info`.
std::string FailureJsonSnapshot(const SnapshotInfo& info);

}  // namespace goheap2pprof
