#include "app/output_format.h"

#include <chrono>

#include "app/capture.h"
#include "pprof/output.h"
#include "pprof/text_top.h"

namespace goheap2pprof {

namespace {

// The snapshot fields every JSON document carries, success or failure.
SnapshotInfo BaseInfo(const CaptureOptions& options, const CaptureReport& report) {
  SnapshotInfo info;
  info.runtime_version = report.go_version;
  info.pid = options.pid;
  info.counters = CounterSourceName(options.output_format.counters);
  info.cycle = report.cycle;
  info.warnings = report.warnings;
  info.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - report.started)
                         .count();
  return info;
}

}  // namespace

std::string_view CounterSourceName(CounterSource counters) {
  return counters == CounterSource::kPublished ? "published" : "exact";
}

std::string PublishedCountersComment() {
  return "goheap2pprof: published counters only (memRecord.active): allocations and frees of "
         "profile cycles the runtime has not published yet are left out, unlike "
         "runtime.MemProfile";
}

SnapshotStatus StatusForError(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNotGo:
    case ErrorKind::kUnsupported:
    case ErrorKind::kSamplingDisabled:
      return SnapshotStatus::kUnavailable;
    default:
      return SnapshotStatus::kFailed;
  }
}

std::string RenderOutput(const pb::Profile& profile, const CaptureOptions& options,
                         const CaptureReport& report) {
  const OutputOptions& out = options.output_format;
  switch (out.format) {
    case OutputFormat::kPprof:
      return EncodeProfile(profile);
    case OutputFormat::kText:
      return TextTop(profile, {.sample_index = out.sample_index,
                               .node_count = static_cast<int>(out.top)});
    case OutputFormat::kJson: {
      SnapshotInfo info = BaseInfo(options, report);
      if (!report.consistent) {
        info.status = SnapshotStatus::kPartial;
        info.status_reason =
            "a GC published a profile cycle during every walk of the bucket list; counters may "
            "mix two cycles";
      }
      return JsonSnapshot(profile, info, {.top = out.top});
    }
  }
  throw Error(ErrorKind::kInternal, "unknown output format ", static_cast<int>(out.format));
}

std::string RenderFailureJson(const CaptureOptions& options, const CaptureReport& report,
                              const Error& error) {
  SnapshotInfo info = BaseInfo(options, report);
  info.status = StatusForError(error.kind());
  info.status_reason = std::string(ErrorKindName(error.kind())) + ": " + error.what();
  return FailureJsonSnapshot(info);
}

}  // namespace goheap2pprof
