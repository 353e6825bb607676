// `goheap2pprof goroutines <pid>|--core FILE [-o FILE] [--format ...]`:
// option parsing and output; the work is app/goroutine_capture.h.
#include "cli/goroutines_main.h"

#include <sys/stat.h>

#include <iostream>
#include <memory>
#include <string>

#include "app/core_source.h"
#include "app/executable_analysis.h"
#include "app/goroutine_capture.h"
#include "app/process_source.h"
#include "app/run.h"
#include "base/error.h"
#include "cli/target_flags.h"
#include "pprof/output.h"

namespace goheap2pprof {
namespace {

struct GoroutinesFlags {
  TargetFlags target;
  std::string output;
  std::string format = "pprof";
  bool verbose = false;
  GoroutineLimits limits;
};

// The core's modification time: when the kernel or gcore wrote it, the
// clock the dump's "minutes" are counted to.
int64_t CoreTime(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw Error(ErrorKind::kIo, path, ": cannot stat the core");
  return int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
}

std::unique_ptr<CaptureSource> OpenTarget(const TargetFlags& t, GoroutineCaptureOptions& options) {
  if (!t.core.empty()) {
    options.snapshot_realtime = CoreTime(t.core);
    return OpenCoreSource(t.core, t.executable);
  }
  return OpenProcessSource(IdentifyLiveProcess(TargetPid(t)), t.executable);
}

void Report(const GoroutinesFlags& f, const GoroutineCapture& capture) {
  for (const std::string& w : capture.warnings) {
    std::cerr << "goheap2pprof goroutines: warning: " << w << "\n";
  }
  const GoroutineReadStats& s = capture.snapshot.stats;
  if (f.verbose || s.dropped != 0) {
    for (const std::string& n : capture.notes)
      std::cerr << "goheap2pprof goroutines: " << n << "\n";
    std::cerr << "goheap2pprof goroutines: "
              << DescribeGoroutineRead(s, capture.snapshot.goroutines.size()) << "\n";
  }
}

int RunGoroutines(GoroutinesFlags& f) {
  GoroutineCaptureOptions options;
  options.dump = f.format != "pprof" && f.format != "debug1";
  std::unique_ptr<CaptureSource> source = OpenTarget(f.target, options);
  const ProcessIdentity& id = source->identity();
  const std::string path = f.output.empty()
                               ? DefaultOutputName(id.comm, id.pid,
                                                   f.format == "pprof"  ? ".goroutine.pb.gz"
                                                   : f.format == "json" ? ".goroutine.json"
                                                                        : ".goroutine.txt")
                               : f.output;
  CheckOutputWritable(path);
  const std::shared_ptr<const ExecutableAnalysis> analysis =
      ExecutableAnalysis::Create(source->executable().elf, f.target.executable.assume_go_layout);
  const GoroutineCapture capture = CaptureGoroutines(*source, *analysis, f.limits, options);
  Report(f, capture);
  if (f.format == "debug1") {
    WriteOutput(path, GoroutineText(*analysis, capture));
  } else if (f.format == "debug2") {
    WriteOutput(path, GoroutineDump(*analysis, capture));
  } else if (f.format == "text") {
    WriteOutput(path, GoroutineTop(*analysis, capture));
  } else if (f.format == "json") {
    WriteOutput(path, GoroutineJsonReport(*analysis, capture));
  } else {
    WriteProfile(path, GoroutineProfile(*source, *analysis, capture));
  }
  if (path != "-") std::cerr << "goheap2pprof goroutines: wrote " << path << "\n";
  return 0;
}

}  // namespace

Command AddGoroutinesCommand(CLI::App& root) {
  CLI::App& app = *root.add_subcommand(
      "goroutines",
      "goheap2pprof goroutines: the goroutine profile of a running Go program (what its "
      "/debug/pprof/goroutine serves), read from outside without stopping it: every goroutine "
      "that runtime/pprof would list except those running on a CPU at that moment, whose "
      "registers cannot be read without stopping the target. See docs/goroutines.md.\n"
      "  goheap2pprof goroutines 1234 -o goroutine.pb.gz\n"
      "  goheap2pprof goroutines 1234 --format debug2 -o -\n"
      "  goheap2pprof goroutines --core core.1234 [--exe ./server] --format debug2");
  auto shared = std::make_shared<GoroutinesFlags>();
  GoroutinesFlags& f = *shared;
  const TargetFlagHelp help{
      .pid = "process id of the Go program",
      .core =
          "read the goroutines of a core file (gcore, or a GOTRACEBACK=crash abort) "
          "instead of a pid; the executable is --exe or the file the core names"};
  AddTargetFlags(app, f.target, help);
  app.add_option("-o,--output", f.output,
                 "where to write the profile (\"-\": standard output); default "
                 "<program>-<pid>-<time>.goroutine.pb.gz (.goroutine.txt for debug1, debug2 and "
                 "text, .goroutine.json for json)");
  app.add_option("--format", f.format,
                 "pprof (the gzipped profile.proto, ?debug=0), debug1 (the ?debug=1 text: "
                 "counts per stack, with their labels) or debug2 (the ?debug=2 dump: every "
                 "goroutine with its wait reason, frames and creator; arguments print as (...)), "
                 "text (a top table of creation sites and wait reasons) or json (for scripts)")
      ->check(CLI::IsMember({"pprof", "debug1", "debug2", "text", "json"}))
      ->capture_default_str();
  app.add_flag("-v,--verbose", f.verbose,
               "print how the runtime.g layout was proven and what was read, retried and dropped");
  AddExecutableFlags(app, f.target, help);
  app.add_option("--max-goroutines", f.limits.max_goroutines,
                 "refuse a target whose runtime.allglen is larger")
      ->capture_default_str();
  app.add_option("--max-stack-bytes", f.limits.max_stack_bytes,
                 "bytes of each goroutine's stack copied (a deeper stack is cut and counted)")
      ->capture_default_str();
  app.add_option("--max-bytes", f.limits.max_total_bytes,
                 "bytes read from the target in all before the capture stops")
      ->capture_default_str();
  return {&app, [shared] {
            TargetFlags& t = shared->target;
            if (t.pid_text.empty() && t.core.empty()) {
              throw Error(ErrorKind::kUsage, "a pid or --core is required");
            }
            CheckTargetFlags(t);
            return RunGoroutines(*shared);
          }};
}

}  // namespace goheap2pprof
