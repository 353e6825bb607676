// `goheap2pprof mem <pid>` (or --core FILE): where a Go process's memory is,
// by the runtime's own /memory/classes/, beside its RSS and its cgroup.
// Option parsing and gathering; the rendering is app/mem_report.h.
#include "cli/mem_main.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>

#include "app/core_source.h"
#include "app/executable_analysis.h"
#include "app/mem_report.h"
#include "app/process_source.h"
#include "app/runtime_stats.h"
#include "base/error.h"
#include "cli/command.h"
#include "pprof/output.h"
#include "proc/cgroup.h"
#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

struct MemOptions {
  std::string pid_text;
  std::string core;
  std::string format = "text";
  std::string output = "-";
  ExecutableOptions executable;
};

// The kernel's figures, read after the runtime's: a process gone by then
// has none, and the report says so rather than failing.
void AddProcessFigures(MemReport& r) {
  if (std::optional<ProcStatusMemory> m = ReadProcStatusMemory(r.pid)) r.process = *m;
  // One process the user named, in any container: its own cgroup view too.
  CgroupFs fs("", TargetRoot::kAllow);
  std::optional<MemoryCgroup> cg = fs.FindMemoryCgroup(r.pid);
  if (!cg) return;
  const MemoryReading reading = fs.Read(*cg);
  r.cgroup = CgroupFigures{.version = std::string(CgroupVersionName(cg->version)),
                           .dir = cg->limit_dir.value_or(cg->dir),
                           .usage = reading.usage,
                           .limit = reading.limit};
}

int RunMem(const MemOptions& o) {
  std::unique_ptr<CaptureSource> source;
  MemReport report;
  if (!o.core.empty()) {
    source = OpenCoreSource(o.core, o.executable);
    report.core = o.core;
  } else {
    std::optional<pid_t> pid = ParsePid(o.pid_text);
    if (!pid) throw Error(ErrorKind::kUsage, "\"", o.pid_text, "\" is not a process id");
    source = OpenProcessSource(IdentifyLiveProcess(*pid), o.executable);
  }
  report.pid = source->identity().pid;
  report.comm = source->identity().comm;
  const std::shared_ptr<const ExecutableAnalysis> analysis =
      ExecutableAnalysis::Create(source->executable().elf, o.executable.assume_go_layout);
  report.stats = ReadGoRuntimeStats(*source, *analysis);
  for (const std::string& w : report.stats.warnings) {
    std::cerr << "goheap2pprof: warning: " << w << '\n';
  }
  if (o.core.empty()) {
    source->CheckSameProcess();
    AddProcessFigures(report);
  }
  WriteOutput(o.output, o.format == "json" ? RenderMemJson(report) : RenderMemText(report));
  return 0;
}

}  // namespace

Command AddMemCommand(CLI::App& root) {
  CLI::App& app = *root.add_subcommand(
      "mem",
      "goheap2pprof mem: where a Go process's memory is, from outside it: the runtime's "
      "/memory/classes/ tree (as runtime/metrics reports it) with sizes and shares, the live "
      "heap against the GC goal and GOMEMLIMIT, the process's RSS, its cgroup's usage and "
      "limit, and the resident memory the Go runtime does not manage (cgo, syscall.Mmap).\n"
      "  goheap2pprof mem 1234\n"
      "  goheap2pprof mem --format json 1234 | jq '.metrics'\n"
      "  goheap2pprof mem --core core.1234 [--exe ./server]");
  app.footer("Exit codes: those of goheap2pprof --help.");
  auto shared = std::make_shared<MemOptions>();
  MemOptions& o = *shared;
  CLI::Option* pid = app.add_option("pid", o.pid_text, "process id of the Go program");
  app.add_option("--core", o.core,
                 "read a dead process's statistics from its core file instead of a pid (no "
                 "RSS or cgroup figures then); the executable is --exe or the file the core "
                 "names")
      ->excludes(pid);
  app.add_option("--format", o.format,
                 "text: the breakdown for people; json: runtime/metrics names and values, the "
                 "runtime.MemStats fields, the process and cgroup figures")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("-o,--output", o.output, "output file ('-' for standard output)")
      ->capture_default_str();
  CLI::Option* exe = app.add_option("--exe", o.executable.path, "as for a single capture");
  app.add_flag("--force", o.executable.force, "as for a single capture");
  return {&app, [shared, exe] {
            const MemOptions& mem = *shared;
            if (mem.pid_text.empty() && mem.core.empty()) {
              throw Error(ErrorKind::kUsage, "a pid or --core is required");
            }
            if (mem.executable.force && exe->count() == 0 && mem.core.empty()) {
              throw Error(ErrorKind::kUsage, "--force requires --exe or --core");
            }
            return RunMem(mem);
          }};
}

}  // namespace goheap2pprof
