#include "app/output_format.h"

#include <chrono>

#include "pprof/output.h"
#include "pprof/text_top.h"

namespace goheap2pprof {

namespace {

// The snapshot fields every JSON document carries, success or failure.
SnapshotInfo BaseInfo(const OutputOptions& out, const RenderContext& context) {
  SnapshotInfo info;
  info.pid = context.pid;
  info.counters = CounterSourceName(out.counters);
  if (const CaptureReport* report = context.report) {
    info.runtime_version = report->go_version;
    info.cycle = report->cycle;
    info.warnings = report->warnings;
    info.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - report->started)
                           .count();
  }
  return info;
}

}  // namespace

std::string_view CounterSourceName(CounterSource counters) {
  return counters == CounterSource::kPublished ? "published" : "exact";
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

std::string RenderOutput(const pb::Profile& profile, const OutputOptions& out,
                         const RenderContext& context) {
  switch (out.format) {
    case OutputFormat::kPprof:
      return EncodeProfile(profile);
    case OutputFormat::kText:
      return TextTop(profile,
                     {.sample_index = out.sample_index, .node_count = static_cast<int>(out.top)});
    case OutputFormat::kDebugText:
      break;  // needs the records, not the profile: RunCapture writes it
    case OutputFormat::kJson: {
      SnapshotInfo info = BaseInfo(out, context);
      if (context.report && !context.report->consistent) {
        info.status = SnapshotStatus::kPartial;
        info.status_reason =
            "a GC published a profile cycle during every walk of the bucket list; counters may "
            "mix two cycles";
      }
      return JsonSnapshot(profile, info,
                          {.top = out.top, .runtime_prefixes = context.runtime_prefixes});
    }
  }
  throw Error(ErrorKind::kInternal, "unknown output format ", static_cast<int>(out.format));
}

std::string RenderFailureJson(const OutputOptions& out, const RenderContext& context,
                              const Error& error) {
  SnapshotInfo info = BaseInfo(out, context);
  info.status = StatusForError(error.kind());
  info.status_reason = std::string(ErrorKindName(error.kind())) + ": " + error.what();
  return FailureJsonSnapshot(info);
}

}  // namespace goheap2pprof
