// `goheap2pprof <pid>` (or --core FILE): the capture's flags, and what it
// prints around app/run.h: the report, the statistics, and for --format json
// a document even when the capture fails.
#include "cli/capture_main.h"

#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "app/output_format.h"
#include "app/run.h"
#include "base/error.h"
#include "cli/target_flags.h"
#include "pprof/output.h"

namespace goheap2pprof {
namespace {

struct CaptureArgs {
  TargetFlags target;
  RunOptions options;
  std::string format = "pprof", counters = "exact";
  CLI::Option* top = nullptr;
  CLI::Option* sample_index = nullptr;
  // What the capture learned; set once it begins.
  std::optional<CaptureReport> report;
};

#if GOHEAP2PPROF_CAPTURE_ONLY
// serve, push, watch, agent, mem and growth are not in this build.
constexpr const char* kNotAPidHint =
    "this goheap2pprof has the capture alone (GOHEAP2PPROF_AGENT=OFF, as scripts/demo.sh "
    "builds it): for the other commands, build the whole tool as the README's Install says";
#else
constexpr const char* kNotAPidHint = "";
#endif

void AddOutputFlags(CLI::App& app, CaptureArgs& a) {
  OutputOptions& out = a.options.output_format;
  app.add_option("-o,--output", a.options.output,
                 "output file ('-' for standard output); default: "
                 "<program>-<pid>-<time>.heap.pb.gz in the current directory for pprof, "
                 "standard output for json and text, <program>-<pid>-<time>.heap.html for "
                 "flamegraph");
  app.add_option("--format", a.format,
                 "pprof: gzipped profile.proto; json: the seed collector's in-use snapshot "
                 "(entries by stack, largest first); text: a go tool pprof -top table; debug1: "
                 "the runtime's own /debug/pprof/heap?debug=1 text, its runtime.MemStats block "
                 "included; flamegraph: a self-contained HTML flame graph (docs/flamegraph.md)")
      ->check(CLI::IsMember({"pprof", "json", "text", "debug1", "flamegraph"}))
      ->capture_default_str();
  app.add_option("--counters", a.counters,
                 "exact: what runtime.MemProfile (and /debug/pprof/heap) returns; published: "
                 "the runtime's published counters only (memRecord.active), as the seed "
                 "collector reads them")
      ->check(CLI::IsMember({"exact", "published"}))
      ->capture_default_str();
  a.top = app.add_option("--top", out.top,
                         "json: entries kept (output_truncated tells if more exist); text: rows "
                         "shown; 0 keeps all")
              ->check(CLI::NonNegativeNumber)
              ->capture_default_str();
  a.sample_index =
      app.add_option("--sample-index", out.sample_index,
                     "text: the value to rank by; flamegraph: the value frames are sized by")
          ->check(CLI::IsMember({"inuse_space", "inuse_objects", "alloc_space", "alloc_objects"}))
          ->capture_default_str();
}

// The output options from their flags. Text, JSON and the debug=1 text are
// for terminals and pipes; a binary profile and a page for the browser are
// not.
void SetOutputFormat(CaptureArgs& a) {
  OutputOptions& out = a.options.output_format;
  out.format = a.format == "json"         ? OutputFormat::kJson
               : a.format == "text"       ? OutputFormat::kText
               : a.format == "debug1"     ? OutputFormat::kDebugText
               : a.format == "flamegraph" ? OutputFormat::kFlamegraph
                                          : OutputFormat::kPprof;
  out.counters = a.counters == "published" ? CounterSource::kPublished : CounterSource::kExact;
  if ((out.format == OutputFormat::kJson || out.format == OutputFormat::kText ||
       out.format == OutputFormat::kDebugText) &&
      a.options.output.empty()) {
    a.options.output = "-";
  }
}

// The flags' combinations, the target and the test seams. Throws
// Error(kUsage).
void CheckFlags(CaptureArgs& a) {
  const OutputFormat format = a.options.output_format.format;
  if (a.top->count() > 0 && format != OutputFormat::kJson && format != OutputFormat::kText) {
    throw Error(ErrorKind::kUsage, "--top applies to --format json and text");
  }
  if (a.sample_index->count() > 0 && format != OutputFormat::kText &&
      format != OutputFormat::kFlamegraph) {
    throw Error(ErrorKind::kUsage, "--sample-index applies to --format text and flamegraph");
  }
  CheckTargetFlags(a.target);
  a.options.core = a.target.core;
  a.options.executable = a.target.executable;
  if (a.target.core.empty()) a.options.pid = TargetPid(a.target, kNotAPidHint);
#if GOHEAP2PPROF_TEST_SEAMS
  if (const char* seam = std::getenv("GOHEAP2PPROF_TEST_SEAM")) {
    a.options.seams = ParseTestSeams(seam);
  }
#endif
}

// --format json promises pipelines a document even when the capture fails:
// the status and reason, with what was learned before the failure.
void WriteFailureJson(const RunOptions& options, const CaptureReport& report, const Error& error) {
  try {
    WriteOutput(options.output, RenderFailureJson(options.output_format,
                                                  {.pid = options.pid, .report = &report}, error));
  } catch (const std::exception& e) {
    // Boundary: a failure to report the failure is said, and the capture's
    // error stays the one the exit code and message give.
    std::cerr << "goheap2pprof: could not write the failure snapshot: " << e.what() << "\n";
  }
}

int RunOneShot(CaptureArgs& a) {
  if (a.target.pid_text.empty() && a.target.core.empty()) {
    std::cerr << "goheap2pprof: pid is required\nhint: run goheap2pprof --help\n";
    return static_cast<int>(ErrorKind::kUsage);
  }
  SetOutputFormat(a);
  const RunOptions& options = a.options;
  CaptureReport& report = a.report.emplace();
  CheckFlags(a);
  const std::string written = RunCapture(options, std::cerr, report);
  PrintReport(report, options.verbose, std::cerr);
  if (options.stats) std::cerr << FormatStats(report);
  if (options.output.empty() || options.verbose) {
    std::cerr << "goheap2pprof: wrote " << report.samples << " samples to " << written << "\n";
  }
  return 0;
}

// What a failed capture prints before RunCommand prints the error: what
// was learned (for an Error) and, for --format json, the document.
void ReportFailedCapture(const CaptureArgs& a, const std::exception& e) {
  if (!a.report) return;  // it failed before the capture began
  const RunOptions& options = a.options;
  const Error* error = dynamic_cast<const Error*>(&e);
  if (error != nullptr) PrintReport(*a.report, options.verbose, std::cerr);
  if (options.output_format.format == OutputFormat::kJson) {
    WriteFailureJson(options, *a.report,
                     error != nullptr ? *error : Error(ErrorKind::kInternal, e.what()));
  }
}

}  // namespace

Command AddCaptureCommand(CLI::App& root) {
  auto a = std::make_shared<CaptureArgs>();
  const TargetFlagHelp help{
      .pid = "process id of the Go program",
      .core =
          "read the heap profile of a dead process from its core file instead of a pid (the "
          "kernel's, with GOTRACEBACK=crash, or gdb's gcore); the executable is --exe or the "
          "file the core names",
      .exe =
          "read symbols and tables from this file instead of the running executable (e.g. the "
          "unstripped build a stripped binary was made from with strip); it must match the "
          "running one by build ID and layout",
      .force =
          "use the --exe file (or the file a --core names) even if it does not match the "
          "running executable or core (warns)",
      .assume_layout =
          "for a Go newer than every tested version whose executable has no DWARF "
          "to prove its heap-bucket layout: read it with this version's layout "
          "(e.g. 1.27); warns, also in the output"};
  AddTargetFlags(root, a->target, help);
  AddOutputFlags(root, *a);
  root.add_flag("-v,--verbose", a->options.verbose,
                "report the Go version, build mode, addresses, rate, cycle, bucket count and "
                "phase timings");
  root.add_flag("--stats", a->options.stats,
                "print what the capture cost: buckets, bytes read, read system calls, walks and "
                "the time of each phase");
  AddExecutableFlags(root, a->target, help);
  return {&root, [a] { return RunOneShot(*a); },
          [a](const std::exception& e) { ReportFailedCapture(*a, e); }};
}

}  // namespace goheap2pprof
