// The capture engine: from a source (a live process, a qemu guest, a core
// file, test memory) and the analysis of its executable to a finished heap
// profile and a report, as a short list of passes (see capture.cc). Writing,
// serving and pushing the profile, and printing the report, are the
// caller's.
//
//   std::unique_ptr<CaptureSource> src = OpenProcessSource(pid, {});
//   auto analysis = ExecutableAnalysis::Create(src->executable().elf);
//   CaptureResult r = Capture(*src, *analysis, {});
//   WriteProfile("heap.pb.gz", r.profile.get());
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "app/capture_state.h"
#include "app/executable_analysis.h"
#include "app/source.h"
#include "pprof/heap_profile_builder.h"

namespace goheap2pprof {

// Which memRecord counters become the profile.
enum class CounterSource {
  kExact,      // what runtime.MemProfile returns: active + the cycle being flushed
  kPublished,  // active only, as the seed collector reads them
};

struct CaptureOptions {
  CounterSource counters = CounterSource::kExact;
  // Called with runtime.MemProfile's records, the rate read and the load
  // bias, before the profile is built (the records' stacks live until
  // Capture returns): for views that need the unscaled records, such as
  // serve's ?debug=1 text.
  std::function<void(std::span<const MemProfileRecord> records, int64_t rate, uint64_t load_bias)>
      on_records = nullptr;
  // Profile.time_nanos; nullopt: the wall clock when the profile is built.
  std::optional<int64_t> time_nanos = std::nullopt;
  // Where a fresh build writes the samples as it makes them (see
  // HeapProfileBuilder::StreamSamplesTo); the result's profile then holds
  // what is left to write (FinishedProfile::SerializeRemainderTo).
  google::protobuf::io::ZeroCopyOutputStream* sample_stream = nullptr;
  // With sample_stream: whether the result's profile keeps the samples'
  // values too (false: only its remainder can be written, and a large
  // capture touches 48 bytes a sample less of fresh memory).
  bool keep_streamed_samples = true;
};

// What a capture learned and cost, besides the profile. Filled pass by pass,
// so after a failure the caller still has what was learned before it (the
// JSON snapshot of a failed capture reports the version and warnings).
// How a capture came by its profile's tables.
enum class ProfileTablesOrigin : uint32_t {
  kBuilt = 0,      // symbolized and built (the per-PC cache may have served)
  kReused = 1,     // a repeated capture's, no bucket added since the last one
  kContinued = 2,  // the same, continued for the buckets added since
};
// "built", "reused", "continued".
const char* ProfileTablesOriginName(ProfileTablesOrigin origin);

struct CaptureReport {
  std::string go_version;  // "go1.26.8"
  // Lines for -v (how the executable and variables were found, addresses,
  // rate, cycle, bucket count) and warnings for everyone, in pass order.
  std::vector<std::string> notes;
  std::vector<std::string> warnings;
  uint64_t samples = 0;
  int64_t rate = 0;  // runtime.MemProfileRate as read
  // The profile cycle read, and whether the walk saw one cycle throughout.
  std::optional<uint32_t> cycle;
  bool consistent = true;
  // runtime.disableMemoryProfiling is set but the rate is not 0: the program
  // (or enable-sampling) turned sampling on after start-up, so allocations
  // made before that are not in the profile.
  bool sampling_started_late = false;
  // Warnings that the profile scales buckets with a rate they were not
  // sampled at (start-up buckets of a program that turned sampling on later,
  // or a rate changed since an earlier capture of the same process); also in
  // `warnings` and in the profile's comments.
  std::vector<std::string> mixed_rates;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  // For --stats: what reading the target cost, and each pass's wall time.
  uint64_t buckets = 0;
  int walks = 0;
  uint64_t read_syscalls = 0;
  uint64_t bytes_read = 0;
  uint64_t torn_walks = 0;  // walks discarded because the cycle changed
  // A repeated capture: the state's buckets were reused (refreshed).
  bool repeated = false;
  // Where the profile's tables (locations, functions, strings) came from.
  ProfileTablesOrigin tables = ProfileTablesOrigin::kBuilt;
  std::vector<std::pair<std::string, double>> phase_ms;
};

struct CaptureResult {
  FinishedProfile profile;
  CaptureReport report;
};

// Runs the passes on source with the analysis of source.executable().elf.
// Throws Error on failure (sampling disabled, the process gone, an
// inconsistent bucket list, ...); `report` then holds what was learned.
CaptureResult Capture(CaptureSource& source, const ExecutableAnalysis& analysis,
                      const CaptureOptions& options, CaptureReport& report);
CaptureResult Capture(CaptureSource& source, const ExecutableAnalysis& analysis,
                      const CaptureOptions& options);
// A capture that keeps what it may reuse in state (see app/capture_state.h)
// and reuses what an earlier capture of the same process kept there. The
// profile means exactly what Capture's would.
CaptureResult Capture(CaptureSource& source,
                      const std::shared_ptr<const ExecutableAnalysis>& analysis,
                      const CaptureOptions& options, CaptureReport& report,
                      ProcessCaptureState& state);

// The comment a profile built from published counters carries (pprof -top
// shows it in its header).
std::string PublishedCountersComment();
// The profile comment of a capture whose sampling began after start-up
// (CaptureReport::sampling_started_late).
std::string SamplingStartedLateComment();

// The --stats table for a finished capture.
std::string FormatStats(const CaptureReport& report);

}  // namespace goheap2pprof
