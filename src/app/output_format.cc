#include "app/output_format.h"

#include <chrono>

#include "app/runtime_stats.h"
#include "pprof/flame_graph/flame_graph.h"
#include "pprof/heap_debug_text.h"
#include "pprof/memstats_text.h"
#include "pprof/output.h"
#include "pprof/text_top.h"
#include "proc/procfs.h"

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
    info.sampling_started_late = report->sampling_started_late;
    info.warnings = report->warnings;
    info.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - report->started)
                           .count();
  }
  return info;
}

// "<executable> pid N inuse_space" (the executable as the profile's main
// mapping names it).
std::string FlameGraphTitle(const pb::Profile& profile, const OutputOptions& out,
                            const RenderContext& context) {
  std::string exe = "heap";
  if (profile.mapping_size() > 0) {
    const int64_t i = profile.mapping(0).filename();
    if (i > 0 && i < profile.string_table_size()) {
      const std::string& path = profile.string_table(static_cast<int>(i));
      exe = path.substr(path.find_last_of('/') + 1);
    }
  }
  std::string pid = context.pid > 0 ? " pid " + std::to_string(context.pid) : "";
  return exe + pid + " " + out.sample_index;
}

// MaxRSS as the runtime prints it, ru_maxrss × 1024; from outside, the
// peak resident set the kernel keeps in /proc/<pid>/status (VmHWM), which
// differs from ru_maxrss by a few hundred KiB at most.
std::optional<uint64_t> MaxRss(pid_t pid) {
  std::optional<ProcStatusMemory> m = ReadProcStatusMemory(pid);
  return m ? m->vm_hwm : std::nullopt;
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
      break;  // needs the records, not the profile: FormattedCapture makes it
    case OutputFormat::kFlamegraph:
      return FlameGraphHtml(profile, {.sample_index = out.sample_index,
                                      .title = FlameGraphTitle(profile, out, context),
                                      .sample_type_links = out.sample_type_links});
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

void FormattedCapture::Prepare(CaptureSource& source, const ExecutableAnalysis& analysis,
                               CaptureOptions& options, CaptureReport& report) {
  options.counters = out_.counters;
  if (out_.format != OutputFormat::kDebugText) return;
  snapshot_ = source.is_snapshot();
  // writeHeapInternal reads MemStats first, then the records.
  OptionalRuntimeStats stats = ReadOptionalGoRuntimeStats(source, analysis);
  if (stats.stats) {
    report.warnings.insert(report.warnings.end(), stats.stats->warnings.begin(),
                           stats.stats->warnings.end());
    mem_ = stats.stats->mem;
  } else {
    report.warnings.push_back("no runtime.MemStats block: " + stats.absent_reason);
  }
  options.on_records = [this, &analysis](std::span<const MemProfileRecord> records, int64_t rate,
                                         uint64_t load_bias) {
    debug_text_ = HeapDebugText(records, rate, analysis.traits(), analysis.symbolizer(), load_bias);
  };
}

std::string FormattedCapture::Render(const pb::Profile& profile, const RenderContext& context) {
  if (out_.format != OutputFormat::kDebugText) return RenderOutput(profile, out_, context);
  std::string text = std::move(debug_text_);
  // Without the block (statistics absent), the text ends where the records end.
  if (mem_) text += MemStatsBlock(*mem_, snapshot_ ? std::nullopt : MaxRss(context.pid));
  return text;
}

std::string RenderFailureJson(const OutputOptions& out, const RenderContext& context,
                              const Error& error) {
  SnapshotInfo info = BaseInfo(out, context);
  info.status = StatusForError(error.kind());
  info.status_reason = std::string(ErrorKindName(error.kind())) + ": " + error.what();
  return FailureJsonSnapshot(info);
}

}  // namespace goheap2pprof
