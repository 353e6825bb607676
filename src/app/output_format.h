// What the command line writes besides (or instead of) the pprof file: the
// output format and the rendering of a finished profile (or of a failure) in
// that format. The JSON and text views are computed from the same
// pb::Profile the pprof file holds, so all formats mean the same thing.
//
//   OutputOptions out{.format = OutputFormat::kJson, .top = 20};
//   std::string bytes = RenderOutput(result.profile.get(), out,
//                                    {.pid = 1234, .report = &result.report});
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "app/capture.h"
#include "base/error.h"
#include "memstats/go_runtime_stats.h"
#include "pprof/json_snapshot.h"
#include "proto/profile.pb.h"

namespace goheap2pprof {

// kDebugText: the runtime's own heap?debug=1 text, records and the
// `# runtime.MemStats` block (made by FormattedCapture, not by RenderOutput).
enum class OutputFormat { kPprof, kJson, kText, kDebugText, kFlamegraph };

struct OutputOptions {
  OutputFormat format = OutputFormat::kPprof;
  CounterSource counters = CounterSource::kExact;
  size_t top = 10;                           // json entries / text rows; 0: all
  std::string sample_index = "inuse_space";  // text and flamegraph
  // flamegraph: links to the other sample types (?sample_index=), for serve
  bool sample_type_links = false;
};

// About the capture, for the JSON snapshot.
struct RenderContext {
  pid_t pid = 0;
  const CaptureReport* report = nullptr;
  // The target runtime's frame prefixes (RuntimeTraits::hidden_prefixes): a
  // JSON entry is named after its first frame outside the runtime.
  std::vector<std::string_view> runtime_prefixes = {};
};

std::string_view CounterSourceName(CounterSource counters);

// How a failed capture is reported in the JSON snapshot: "unavailable" when
// the target cannot give a heap profile at all (sampling off, not Go,
// unsupported runtime), "failed" otherwise.
SnapshotStatus StatusForError(ErrorKind kind);

// The bytes to write for a finished capture, in out.format.
std::string RenderOutput(const pb::Profile& profile, const OutputOptions& out,
                         const RenderContext& context);

// One capture as one output format: what the command line writes and what
// a worker serves are made here. The debug=1 text needs more than the
// finished profile: the MemStats read before the records (the runtime's
// writeHeapInternal order) and the unscaled records; Prepare hooks those
// into the capture's options, so the object outlives the capture.
//
//   FormattedCapture as(out);
//   as.Prepare(source, analysis, options, report);
//   CaptureResult r = Capture(source, analysis, options, report);
//   std::string bytes = as.Render(r.profile.get(), {.pid = pid});
class FormattedCapture {
 public:
  explicit FormattedCapture(OutputOptions out) : out_(std::move(out)) {}

  // Before the capture: sets the counters and, for the debug=1 text, reads
  // the memory statistics (absent with a warning in `report` when this Go's
  // cannot be read: app/runtime_stats.h) and takes the records.
  void Prepare(CaptureSource& source, const ExecutableAnalysis& analysis, CaptureOptions& options,
               CaptureReport& report);

  // The bytes to write for the finished capture. The debug=1 text ends with
  // MaxRSS read now, last as the runtime does, for a live process only.
  // Called once: the debug=1 text (184 MB at 131k buckets) is moved out,
  // not copied.
  std::string Render(const pb::Profile& profile, const RenderContext& context);

  const OutputOptions& options() const { return out_; }

 private:
  OutputOptions out_;
  std::string debug_text_;
  std::optional<MemStats> mem_;
  bool snapshot_ = false;  // a core: no MaxRSS
};

// The JSON snapshot of a failed capture (what was learned before the
// failure, the status and the error message as status_reason).
std::string RenderFailureJson(const OutputOptions& out, const RenderContext& context,
                              const Error& error);

}  // namespace goheap2pprof
