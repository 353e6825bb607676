// goheap2pprof command line: parse, run the capture, and turn the one error
// type into a message, a hint and the kind's exit code.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "agent/watch.h"
#include "app/output_format.h"
#include "app/run.h"
#include "base/error.h"
#include "base/huge_page_malloc.h"
#include "cli/command.h"
#include "cli/growth_main.h"
#include "cli/identity_flags.h"
#include "cli/mem_main.h"
#include "cli/push_main.h"
#include "cli/serve_main.h"
#include "cli/version.h"
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

// The `watch` subcommand's options, as text until parsed by the agent's
// strict parsers (which name the option in their errors).
struct WatchArgs {
  std::vector<std::string> pids;
  std::string above, rss_above, on_event, psi, every, poll = "1s", cooldown = "30s";
  std::string psi_scope = "cgroup";
  bool no_baseline = false;
};

CLI::App* AddWatchCommand(CLI::App& app, WatchArgs& args, WatchOptions& w) {
  CLI::App* cmd = app.add_subcommand(
      "watch",
      "capture heap profiles of Go processes when their memory runs short, before the OOM "
      "killer strikes; files go to DIR with one line per trigger in DIR/watch.jsonl");
  cmd->footer(
      "Exit codes: 0 when every watched process is gone (e.g. OOM-killed; how each ended is in "
      "watch.jsonl) or on SIGINT/SIGTERM; otherwise those of goheap2pprof --help.");
  cmd->add_option("pids", args.pids, "process ids of the Go programs to watch");
  cmd->add_flag("--all", w.all, "watch every Go process we may read, found again every --poll");
  cmd->add_option("-o,--output", w.dir, "directory for the profiles and watch.jsonl")->required();
  cmd->add_option("--above", args.above,
                  "PCT[,PCT...] of the memory limit of the process's cgroup (nearest ancestor with "
                  "a finite limit); each fires once per upward crossing (default 90% when no "
                  "other trigger is given)");
  cmd->add_option("--hysteresis", w.triggers.hysteresis_pct,
                  "points (or percent of an --rss-above size) to fall below a level before it "
                  "fires again")
      ->check(CLI::Range(0.0, 50.0))
      ->capture_default_str();
  cmd->add_flag("--working-set", w.triggers.working_set,
                "compare usage minus inactive file pages, as the kubelet does");
  cmd->add_option("--rss-above", args.rss_above, "SIZE[,SIZE...] of the process's resident set");
  cmd->add_option("--on-event", args.on_event,
                  "max,oom: the cgroup's memory.events counters (v2; the kernel wakes us)");
  cmd->add_option("--psi", args.psi,
                  "some|full:STALL/WINDOW, e.g. some:150ms/1s: a PSI trigger on the cgroup's "
                  "memory.pressure, or /proc/pressure/memory");
  cmd->add_option("--psi-scope", args.psi_scope,
                  "cgroup (system when the cgroup has none) or system")
      ->check(CLI::IsMember({"cgroup", "system"}))
      ->capture_default_str();
  cmd->add_option("--every", args.every, "also capture periodically, e.g. 5m");
  cmd->add_option("--poll", args.poll, "how often usage and RSS are sampled")
      ->capture_default_str();
  cmd->add_option("--cooldown", args.cooldown,
                  "minimum time between triggered captures; one higher level or memory event "
                  "may fire inside it")
      ->capture_default_str();
  cmd->add_option("--max-files", w.max_files,
                  "keep the newest N profiles this watch wrote (it deletes no other file)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--no-baseline", args.no_baseline,
                "skip the snapshot at start (kept for go tool pprof -base)");
  cmd->add_option("--exe", w.capture.executable.path, "as for a single capture");
  cmd->add_flag("--force", w.capture.executable.force, "as for a single capture");
  cmd->add_option("--capture-timeout", w.capture_timeout_seconds,
                  "seconds a capture may take; its confined worker is then stopped and the "
                  "capture recorded as failed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--report", w.report,
                "when a process (or the watch) ends, write the growth report of its profiles "
                "beside them: <program>-<pid>-growth.txt, .json and .pb.gz (docs/growth.md)");
  cmd->add_flag("-v,--verbose", w.verbose, "report skipped triggers");
  AddIdentityOptions(*cmd, w.host_root, w.node_name);
  return cmd;
}

void FinishWatchOptions(const WatchArgs& args, WatchOptions& w) {
  for (const std::string& text : args.pids) {
    std::optional<pid_t> pid = ParsePid(text);
    if (!pid) throw Error(ErrorKind::kUsage, "\"", text, "\" is not a process id");
    w.pids.push_back(*pid);
  }
  if (w.all && !w.pids.empty()) throw Error(ErrorKind::kUsage, "give pids or --all, not both");
  TriggerConfig& t = w.triggers;
  if (!args.above.empty()) t.above_pct = ParsePercentList(args.above);
  if (!args.rss_above.empty()) t.rss_above = ParseSizeList(args.rss_above);
  if (!args.on_event.empty()) ParseEventList(args.on_event, t);
  if (!args.psi.empty()) {
    w.psi = ParsePsiSpec(args.psi);
    t.psi = true;
  }
  w.psi_system = args.psi_scope == "system";
  if (!args.every.empty()) t.every = ParseWatchDuration("--every", args.every);
  w.poll = ParseWatchDuration("--poll", args.poll);
  t.cooldown = ParseWatchDuration("--cooldown", args.cooldown);
  if (args.above.empty() && t.rss_above.empty() && !t.on_max && !t.on_oom && !t.psi && !t.every) {
    t.above_pct = {90};
  }
  w.baseline = !args.no_baseline;
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
  WatchArgs watch_args;
  WatchOptions watch;
  CLI::App* watch_cmd = AddWatchCommand(app, watch_args, watch);

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
  if (!watch_cmd->parsed() && pid_text.empty() && options.core.empty()) {
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
    if (watch_cmd->parsed()) {
      FinishWatchOptions(watch_args, watch);
#if GOHEAP2PPROF_TEST_SEAMS
      // Tests point the cgroup and PSI files at a fake tree (cgroup v2 where
      // the machine has v1); see tests/e2e/watch_test.sh.
      if (const char* root = std::getenv("GOHEAP2PPROF_TEST_CGROUP_ROOT")) watch.fs_root = root;
#endif
      return RunWatch(watch, std::cerr);
    }
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
      if (!pid) throw Error(ErrorKind::kUsage, "\"", pid_text, "\" is not a process id");
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

int main(int argc, char** argv) {
  goheap2pprof::ReexecWithHugePageMalloc(argv);
  // Subcommands; anything else is the one-shot capture, unchanged.
  if (argc > 1 && std::string(argv[1]) == "serve") {
    return goheap2pprof::ServeMain(argc - 1, argv + 1);
  }
  if (argc > 1 && std::string(argv[1]) == "push") {
    return goheap2pprof::PushMain(argc - 1, argv + 1);
  }
  if (argc > 1 && std::string(argv[1]) == "mem") {
    return goheap2pprof::MemMain(argc - 1, argv + 1);
  }
  if (argc > 1 && std::string(argv[1]) == "growth") {
    return goheap2pprof::GrowthMain(argc - 1, argv + 1);
  }
  if (argc > 1 && std::string(argv[1]) == "__serve-worker") {
    return goheap2pprof::ServeWorkerMain(argc - 1, argv + 1);
  }
  return goheap2pprof::Main(argc, argv);
}
