// goheap2pprof command line: parse, run the capture, and turn the one error
// type into a message, a hint and the kind's exit code.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

#include "app/output_format.h"
#include "app/run.h"
#include "base/error.h"
#include "cli/serve_main.h"
#include "pprof/output.h"
#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

constexpr const char* kExitCodes = R"(Exit codes:
  0   profile written (also when nothing was sampled yet: the profile is empty)
  1   unexpected failure (a bug; please report it)
  2   usage: bad arguments
  3   no such process: the pid does not exist, is a zombie, or exited during the capture
  4   permission denied: not allowed to read the target's memory
  5   not a Go program
  6   unsupported target: Go older than 1.18, not 64-bit little-endian amd64/arm64,
      or a stripped binary
  7   heap sampling is disabled in the target
  8   the target's memory or executable is inconsistent
  9   I/O error on the output or the executable
  10  internal error)";

std::string DefaultHint(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage: return "run goheap2pprof --help";
    case ErrorKind::kNoSuchProcess: return "check the pid with ps; the target may have exited";
    case ErrorKind::kPermission:
      return "run as root, or as the target's user with CAP_SYS_PTRACE; "
             "kernel.yama.ptrace_scope=1 requires CAP_SYS_PTRACE to read a process that is not "
             "your child, 2 always requires it, 3 forbids it; in a container, add "
             "--cap-add=SYS_PTRACE and share the target's pid namespace (--pid=container:<id>)";
    case ErrorKind::kNotGo: return "point goheap2pprof at the pid of a Go program";
    case ErrorKind::kUnsupported:
      return "goheap2pprof reads Go 1.18+ programs built for 64-bit little-endian amd64 or "
             "arm64; see \"Supported targets\" in the README";
    case ErrorKind::kSamplingDisabled: return "enable heap profiling in the target and restart it";
    case ErrorKind::kMalformed:
      return "the target may be changing too fast or is not a standard Go runtime; retry, and "
             "report it if it persists";
    case ErrorKind::kIo: return "check the output path and free space";
    case ErrorKind::kInternal: return "please report this bug";
  }
  return "";
}

// --format json promises pipelines a document even when the capture fails:
// the status and reason, with what was learned before the failure.
void WriteFailureJson(const RunOptions& options, const CaptureReport& report,
                      const Error& error) {
  try {
    WriteOutput(options.output, RenderFailureJson(options.output_format,
                                                  {.pid = options.pid, .report = &report}, error));
  } catch (const std::exception& e) {
    std::cerr << "goheap2pprof: could not write the failure snapshot: " << e.what() << "\n";
  }
}

int Main(int argc, char** argv) {
  CLI::App app{
      "goheap2pprof: capture the heap profile of a running Go process from outside it, "
      "as a gzipped pprof profile.proto that means what its /debug/pprof/heap would serve.\n"
      "  goheap2pprof <pid> -o heap.pb.gz && go tool pprof -top heap.pb.gz",
      "goheap2pprof"};
  app.footer(kExitCodes);
  std::string pid_text;
  RunOptions options;
  app.add_option("pid", pid_text, "process id of the Go program")->required();
  app.add_option("-o,--output", options.output,
                 "output file ('-' for standard output); default: "
                 "<program>-<pid>-<time>.heap.pb.gz in the current directory for pprof, "
                 "standard output for json and text");
  std::string format = "pprof", counters = "exact";
  OutputOptions& out = options.output_format;
  app.add_option("--format", format,
                 "pprof: gzipped profile.proto; json: the seed collector's in-use snapshot "
                 "(entries by stack, largest first); text: a go tool pprof -top table")
      ->check(CLI::IsMember({"pprof", "json", "text"}))
      ->capture_default_str();
  app.add_option("--counters", counters,
                 "exact: what runtime.MemProfile (and /debug/pprof/heap) returns; published: "
                 "the runtime's published counters only (memRecord.active), as the seed "
                 "collector reads them")
      ->check(CLI::IsMember({"exact", "published"}))
      ->capture_default_str();
  CLI::Option* top = app.add_option("--top", out.top,
                                    "json: entries kept (output_truncated tells if more "
                                    "exist); text: rows shown; 0 keeps all")
                         ->check(CLI::NonNegativeNumber)
                         ->capture_default_str();
  CLI::Option* sample_index =
      app.add_option("--sample-index", out.sample_index, "text: the value to rank by")
          ->check(CLI::IsMember({"inuse_space", "inuse_objects", "alloc_space", "alloc_objects"}))
          ->capture_default_str();
  app.add_flag("-v,--verbose", options.verbose,
               "report the Go version, build mode, addresses, rate, cycle, bucket count and "
               "phase timings");
  app.add_flag("--stats", options.stats,
               "print what the capture cost: buckets, bytes read, read system calls, walks and "
               "the time of each phase");
  CLI::Option* exe_option =
      app.add_option("--exe", options.executable.path,
                     "read symbols and tables from this file instead of the running executable "
                     "(e.g. the unstripped build a stripped binary was made from with strip); "
                     "it must match the running one by build ID and layout");
  app.add_flag("--force", options.executable.force,
               "use the --exe file even if it does not match the running executable (warns)")
      ->needs(exe_option);
  app.set_version_flag("--version", std::string("goheap2pprof ") + GOHEAP2PPROF_VERSION);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "goheap2pprof: " << e.what() << "\nhint: run goheap2pprof --help\n";
    return static_cast<int>(ErrorKind::kUsage);
  }

  out.format = format == "json"   ? OutputFormat::kJson
               : format == "text" ? OutputFormat::kText
                                  : OutputFormat::kPprof;
  out.counters = counters == "published" ? CounterSource::kPublished : CounterSource::kExact;
  // Text and JSON are for terminals and pipes; a binary profile is not.
  if (out.format != OutputFormat::kPprof && options.output.empty()) options.output = "-";
  CaptureReport report;
  try {
    if (top->count() > 0 && out.format == OutputFormat::kPprof) {
      throw Error(ErrorKind::kUsage, "--top applies to --format json and text");
    }
    if (sample_index->count() > 0 && out.format != OutputFormat::kText) {
      throw Error(ErrorKind::kUsage, "--sample-index applies to --format text");
    }
    std::optional<pid_t> pid = ParsePid(pid_text);
    if (!pid) throw Error(ErrorKind::kUsage, "\"", pid_text, "\" is not a process id");
    options.pid = *pid;
    if (const char* seam = std::getenv("GOHEAP2PPROF_TEST_SEAM")) options.seams = ParseTestSeams(seam);
    const std::string written = RunCapture(options, std::cerr, report);
    PrintReport(report, options.verbose, std::cerr);
    if (options.stats) std::cerr << FormatStats(report);
    if (options.output.empty() || options.verbose) {
      std::cerr << "goheap2pprof: wrote " << report.samples << " samples to " << written << "\n";
    }
    return 0;
  } catch (const Error& e) {
    PrintReport(report, options.verbose, std::cerr);
    if (out.format == OutputFormat::kJson) WriteFailureJson(options, report, e);
    std::cerr << "goheap2pprof: error: " << e.what() << "\n"
              << "hint: " << (e.hint().empty() ? DefaultHint(e.kind()) : e.hint()) << "\n";
    return static_cast<int>(e.kind());
  } catch (const std::exception& e) {
    if (out.format == OutputFormat::kJson) {
      WriteFailureJson(options, report, Error(ErrorKind::kInternal, e.what()));
    }
    std::cerr << "goheap2pprof: unexpected failure: " << e.what() << "\nhint: please report "
              << "this bug\n";
    return 1;
  }
}

}  // namespace
}  // namespace goheap2pprof

int main(int argc, char** argv) {
  // Subcommands; anything else is the one-shot capture, unchanged.
  if (argc > 1 && std::string(argv[1]) == "serve") {
    return goheap2pprof::ServeMain(argc - 1, argv + 1);
  }
  if (argc > 1 && std::string(argv[1]) == "__serve-worker") {
    return goheap2pprof::ServeWorkerMain(argc - 1, argv + 1);
  }
  return goheap2pprof::Main(argc, argv);
}
