// `goheap2pprof goroutines <pid> [-o FILE]`: option parsing and output; the
// work is app/goroutine_capture.h.
#include "cli/goroutines_main.h"

#include <iostream>
#include <memory>
#include <string>

#include "app/executable_analysis.h"
#include "app/goroutine_capture.h"
#include "app/process_source.h"
#include "app/run.h"
#include "base/error.h"
#include "pprof/output.h"
#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

struct GoroutinesFlags {
  std::string pid_text;
  std::string output;
  std::string format = "pprof";
  bool verbose = false;
  ExecutableOptions executable;
  GoroutineLimits limits;
};

int RunGoroutines(GoroutinesFlags& f) {
  const std::optional<pid_t> pid = ParsePid(f.pid_text);
  if (!pid) throw Error(ErrorKind::kUsage, "\"", f.pid_text, "\" is not a process id");
  if (f.format != "pprof" && f.format != "debug1") {
    // The other formats (debug2, text, json) are not built yet:
    // refuse rather than print something that is not them.
    throw Error(ErrorKind::kUsage, "--format ", f.format,
                " is not available yet: goroutines writes pprof (the default) and debug1");
  }
  const ProcessIdentity id = IdentifyLiveProcess(*pid);
  const std::string path =
      f.output.empty()
          ? DefaultOutputName(id.comm, id.pid,
                              f.format == "pprof" ? ".goroutine.pb.gz" : ".goroutine.txt")
          : f.output;
  CheckOutputWritable(path);
  std::unique_ptr<CaptureSource> source = OpenProcessSource(id, f.executable);
  const std::shared_ptr<const ExecutableAnalysis> analysis =
      ExecutableAnalysis::Create(source->executable().elf);
  const GoroutineCapture capture = CaptureGoroutines(*source, *analysis, f.limits);
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
  if (f.format == "debug1") {
    WriteOutput(path, GoroutineText(*analysis, capture));
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
      "  goheap2pprof goroutines 1234 -o goroutine.pb.gz");
  auto shared = std::make_shared<GoroutinesFlags>();
  GoroutinesFlags& f = *shared;
  app.add_option("pid", f.pid_text, "process id of the Go program")->required();
  app.add_option("-o,--output", f.output,
                 "where to write the profile (\"-\": standard output); default "
                 "<program>-<pid>-<time>.goroutine.pb.gz (.goroutine.txt for debug1)");
  app.add_option("--format", f.format,
                 "pprof (the gzipped profile.proto, ?debug=0) or debug1 (the ?debug=1 text: "
                 "counts per stack, with their labels); debug2, text and json are not built yet")
      ->capture_default_str();
  app.add_flag("-v,--verbose", f.verbose,
               "print how the runtime.g layout was proven and what was read, retried and dropped");
  CLI::Option* exe = app.add_option("--exe", f.executable.path,
                                    "as for a single capture: read the executable's tables from "
                                    "this file (e.g. the unstripped build of a stripped binary)");
  app.add_flag("--force", f.executable.force, "as for a single capture");
  app.add_option("--max-goroutines", f.limits.max_goroutines,
                 "refuse a target whose runtime.allglen is larger")
      ->capture_default_str();
  app.add_option("--max-stack-bytes", f.limits.max_stack_bytes,
                 "bytes of each goroutine's stack copied (a deeper stack is cut and counted)")
      ->capture_default_str();
  app.add_option("--max-bytes", f.limits.max_total_bytes,
                 "bytes read from the target in all before the capture stops")
      ->capture_default_str();
  return {&app, [shared, exe] {
            if (shared->executable.force && exe->count() == 0) {
              throw Error(ErrorKind::kUsage, "--force requires --exe");
            }
            return RunGoroutines(*shared);
          }};
}

}  // namespace goheap2pprof
