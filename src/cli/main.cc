// goheap2pprof command line: parse, run the capture, and turn the one error
// type into a message, a hint and the kind's exit code.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "app/output_format.h"
#include "app/run.h"
#include "base/error.h"
#include "cli/command.h"
#include "cli/version.h"
#if !GOHEAP2PPROF_CAPTURE_ONLY
#include "cli/agent_main.h"
#include "cli/enable_sampling_main.h"
#include "cli/goroutines_main.h"
#include "cli/growth_main.h"
#include "cli/mem_main.h"
#include "cli/probe_main.h"
#include "cli/push_main.h"
#include "cli/serve_main.h"
#include "cli/watch_main.h"
#endif
#include "pprof/output.h"
#include "proc/procfs.h"
#include "runtime/bucket_layout.h"

namespace goheap2pprof {
namespace {

// The same table as "Exit codes" in the README.
constexpr const char* kExitCodes = R"(Exit codes:
  0   profile written (also when nothing was sampled yet: the profile is then empty, as the
      runtime would serve it, and a warning says so)
  1   unexpected failure (a bug; please report it)
  2   usage: bad arguments, a --core file that is not a core, or an --exe file that does not
      match the process or core (without --force)
  3   no such process: the pid does not exist, is a zombie, or exited or was reused during the
      capture
  4   permission denied: not allowed to inspect or read the target
  5   not a Go program (including kernel threads, and a qemu-user process with no Go guest it
      can read)
  6   unsupported target: Go older than 1.18, not a 64-bit little-endian amd64/arm64 ELF, a
      heap-bucket layout that differs from the table for its Go version (checked against
      DWARF), a Go newer than every tested one without DWARF to prove its layout (see
      --assume-go-layout), or a binary goheap2pprof cannot read without guessing (e.g. a
      stripped binary whose runtime variables cannot be recovered unambiguously, or
      qemu-user mapping several Go programs)
  7   heap sampling is disabled in the target (the linker compiled it out, or the program set
      runtime.MemProfileRate = 0)
  8   the target's memory, executable or core file is inconsistent (e.g. a truncated core)
  9   I/O error: writing the output, or reading the executable, /proc or the target's memory
  10  internal error (a bug; please report it))";

// --format json promises pipelines a document even when the capture fails:
// the status and reason, with what was learned before the failure.
void WriteFailureJson(const RunOptions& options, const CaptureReport& report, const Error& error) {
  try {
    WriteOutput(options.output, RenderFailureJson(options.output_format,
                                                  {.pid = options.pid, .report = &report}, error));
  } catch (const std::exception& e) {
    std::cerr << "goheap2pprof: could not write the failure snapshot: " << e.what() << "\n";
  }
}

// The root's list of subcommands: one line each (a command's own --help
// has its whole description).
class RootFormatter : public CLI::Formatter {
 public:
  std::string make_subcommand(const CLI::App* sub) const override {
    static const std::map<std::string, std::string> kSummaries = {
        {"serve", "every Go process on this machine as a pprof endpoint (HTTP)"},
        {"push", "push every Go process's heap profile to Pyroscope and/or Parca"},
        {"watch", "capture heap profiles when memory runs short, before the OOM killer"},
        {"agent", "serve, push and watch at once: one discovery, one worker pool, one /metrics"},
        {"mem", "where a Go process's memory is, by the runtime's own classes"},
        {"growth", "which allocation sites grow, over N heap snapshots"},
        {"probe", "one GET of the agent's listener, for a Kubernetes exec probe"},
        {"enable-sampling",
         "turn heap sampling on in a Go program that does not sample (writes one word to it)"},
    };
    auto it = kSummaries.find(sub->get_name());
    std::ostringstream out;
    CLI::detail::format_help(out, sub->get_name(),
                             it != kSummaries.end() ? it->second : sub->get_description(),
                             column_width_);
    return out.str();
  }
};

// `goheap2pprof help [command]`: the --help of the root or of one command.
Command AddHelpCommand(CLI::App& root) {
  CLI::App* cmd = root.add_subcommand("help", "show the --help of goheap2pprof or of a command");
  auto name = std::make_shared<std::string>();
  cmd->add_option("command", *name, "the command");
  return {cmd, [&root, name] {
            if (name->empty()) {
              std::cout << root.help("", CLI::AppFormatMode::Normal);
              return 0;
            }
            CLI::App* sub = nullptr;
            try {
              sub = root.get_subcommand(*name);
            } catch (const CLI::OptionNotFound&) {
            }
            if (sub == nullptr || sub->get_group().empty()) {
              throw Error(ErrorKind::kUsage, "no command \"", *name, "\"");
            }
            std::cout << sub->help(root.get_name());
            return 0;
          }};
}

int Main(int argc, char** argv) {
  CLI::App app{
      "goheap2pprof: capture the heap profile of a running Go process from outside it, "
      "as a gzipped pprof profile.proto that means what its /debug/pprof/heap would serve.\n"
      "  goheap2pprof <pid> -o heap.pb.gz && go tool pprof -top heap.pb.gz\n"
      "  goheap2pprof --core core.1234 [--exe ./server] -o heap.pb.gz",
      "goheap2pprof"};
  app.footer(kExitCodes);
  std::string pid_text;
  RunOptions options;
  // Required unless the watch subcommand is given (checked after parsing).
  CLI::Option* pid_option = app.add_option("pid", pid_text, "process id of the Go program");
  CLI::Option* core_option =
      app.add_option("--core", options.core,
                     "read the heap profile of a dead process from its core file instead of a "
                     "pid (the kernel's, with GOTRACEBACK=crash, or gdb's gcore); the executable "
                     "is --exe or the file the core names")
          ->excludes(pid_option);
  app.add_option("-o,--output", options.output,
                 "output file ('-' for standard output); default: "
                 "<program>-<pid>-<time>.heap.pb.gz in the current directory for pprof, "
                 "standard output for json and text, <program>-<pid>-<time>.heap.html for "
                 "flamegraph");
  std::string format = "pprof", counters = "exact";
  OutputOptions& out = options.output_format;
  app.add_option("--format", format,
                 "pprof: gzipped profile.proto; json: the seed collector's in-use snapshot "
                 "(entries by stack, largest first); text: a go tool pprof -top table; debug1: "
                 "the runtime's own /debug/pprof/heap?debug=1 text, its runtime.MemStats block "
                 "included; flamegraph: a self-contained HTML flame graph (docs/flamegraph.md)")
      ->check(CLI::IsMember({"pprof", "json", "text", "debug1", "flamegraph"}))
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
      app.add_option("--sample-index", out.sample_index,
                     "text: the value to rank by; flamegraph: the value frames are sized by")
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
  CLI::Option* force_option =
      app.add_flag("--force", options.executable.force,
                   "use the --exe file (or the file a --core names) even if it does not match "
                   "the running executable or core (warns)");
  std::string assume_layout;
  CLI::Option* assume_layout_option = app.add_option(
      "--assume-go-layout", assume_layout,
      "for a Go newer than every tested version whose executable has no DWARF to prove its "
      "heap-bucket layout: read it with this version's layout (e.g. 1.27); warns, also in the "
      "output");
  app.set_version_flag("--version", &VersionText,
                       "print the version, the git commit and the versions of the libraries "
                       "linked in");
  app.formatter(std::make_shared<RootFormatter>());
  // One command per command line: after `help`, "serve" is its argument,
  // not a second command to run.
  app.require_subcommand(0, 1);
  // Every command, in the order --help lists them (the worker is hidden).
#if GOHEAP2PPROF_CAPTURE_ONLY
  // A build of the capture alone (GOHEAP2PPROF_AGENT=OFF: scripts/demo.sh).
  const std::vector<Command> commands = {AddHelpCommand(app)};
#else
  const std::vector<Command> commands = {AddServeCommand(app),      AddPushCommand(app),
                                         AddWatchCommand(app),      AddAgentCommand(app),
                                         AddMemCommand(app),        AddGrowthCommand(app),
                                         AddProbeCommand(app),      AddEnableSamplingCommand(app),
                                         AddGoroutinesCommand(app), AddHelpCommand(app),
                                         AddServeWorkerCommand(app)};
#endif

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return ReportParseError(app, e);
  }
  for (const Command& c : commands) {
    if (c.app->parsed()) return RunCommand("goheap2pprof " + c.app->get_name(), c.run);
  }
  if (pid_text.empty() && options.core.empty()) {
    std::cerr << "goheap2pprof: pid is required\nhint: run goheap2pprof --help\n";
    return static_cast<int>(ErrorKind::kUsage);
  }

  out.format = format == "json"         ? OutputFormat::kJson
               : format == "text"       ? OutputFormat::kText
               : format == "debug1"     ? OutputFormat::kDebugText
               : format == "flamegraph" ? OutputFormat::kFlamegraph
                                        : OutputFormat::kPprof;
  out.counters = counters == "published" ? CounterSource::kPublished : CounterSource::kExact;
  // Text, JSON and the debug=1 text are for terminals and pipes; a binary
  // profile and a page for the browser are not.
  if ((out.format == OutputFormat::kJson || out.format == OutputFormat::kText ||
       out.format == OutputFormat::kDebugText) &&
      options.output.empty()) {
    options.output = "-";
  }
  CaptureReport report;
  try {
    if (top->count() > 0 && out.format != OutputFormat::kJson &&
        out.format != OutputFormat::kText) {
      throw Error(ErrorKind::kUsage, "--top applies to --format json and text");
    }
    if (sample_index->count() > 0 && out.format != OutputFormat::kText &&
        out.format != OutputFormat::kFlamegraph) {
      throw Error(ErrorKind::kUsage, "--sample-index applies to --format text and flamegraph");
    }
    if (assume_layout_option->count() > 0) {
      options.executable.assume_go_layout = ParseAssumedLayout(assume_layout);
    }
    if (force_option->count() > 0 && exe_option->count() == 0 && core_option->count() == 0) {
      throw Error(ErrorKind::kUsage, "--force requires --exe or --core");
    }
    if (core_option->count() == 0) {
      std::optional<pid_t> pid = ParsePid(pid_text);
      if (!pid) {
        Error e(ErrorKind::kUsage, "\"", pid_text, "\" is not a process id");
#if GOHEAP2PPROF_CAPTURE_ONLY
        // serve, push, watch, agent, mem and growth are not in this build.
        e.WithHint(
            "this goheap2pprof has the capture alone (GOHEAP2PPROF_AGENT=OFF, as "
            "scripts/demo.sh builds it): for the other commands, build the whole tool as "
            "the README's Install says");
#endif
        throw e;
      }
      options.pid = *pid;
    }
#if GOHEAP2PPROF_TEST_SEAMS
    if (const char* seam = std::getenv("GOHEAP2PPROF_TEST_SEAM"))
      options.seams = ParseTestSeams(seam);
#endif
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
              << "hint: " << HintFor(e, "goheap2pprof") << "\n";
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

int main(int argc, char** argv) { return goheap2pprof::Main(argc, argv); }
