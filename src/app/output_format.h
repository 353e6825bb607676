// What the capture writes besides (or instead of) the pprof file: the
// output format, which runtime counters the profile is built from, and the
// rendering of the finished profile (or of a failure) in that format. The
// JSON and text views are computed from the same pb::Profile the pprof file
// holds, so all formats mean the same thing.
//
//   CaptureOptions o{.pid = 1234, .output = "-"};
//   o.output_format = {.format = OutputFormat::kJson, .top = 20};
//   RunCapture(o, std::cerr);  // writes RenderOutput(profile, o, report)
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/error.h"
#include "pprof/json_snapshot.h"
#include "proto/profile.pb.h"

namespace goheap2pprof {

struct CaptureOptions;
struct CaptureReport;

enum class OutputFormat { kPprof, kJson, kText };

// Which memRecord counters become the profile.
enum class CounterSource {
  kExact,      // what runtime.MemProfile returns: active + the cycle being flushed
  kPublished,  // active only, as the seed collector reads them
};

struct OutputOptions {
  OutputFormat format = OutputFormat::kPprof;
  CounterSource counters = CounterSource::kExact;
  size_t top = 10;                           // json entries / text rows; 0: all
  std::string sample_index = "inuse_space";  // text only
};

std::string_view CounterSourceName(CounterSource counters);

// The comment a profile built from published counters carries (pprof -top
// shows it in its header).
std::string PublishedCountersComment();

// How a failed capture is reported in the JSON snapshot: "unavailable" when
// the target cannot give a heap profile at all (sampling off, not Go,
// unsupported runtime), "failed" otherwise.
SnapshotStatus StatusForError(ErrorKind kind);

// The bytes to write for a finished capture, in options.output_format.
std::string RenderOutput(const pb::Profile& profile, const CaptureOptions& options,
                         const CaptureReport& report);

// The JSON snapshot of a failed capture (what was learned before the
// failure, the status and the error message as status_reason).
std::string RenderFailureJson(const CaptureOptions& options, const CaptureReport& report,
                              const Error& error);

}  // namespace goheap2pprof
