#include "app/mem_run.h"

#include <memory>
#include <optional>
#include <ostream>

#include "app/core_source.h"
#include "app/executable_analysis.h"
#include "app/mem_report.h"
#include "app/runtime_stats.h"
#include "pprof/output.h"
#include "proc/cgroup.h"
#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

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

}  // namespace

void RunMem(const MemRunOptions& o, std::ostream& log) {
  std::unique_ptr<CaptureSource> source;
  MemReport report;
  if (!o.core.empty()) {
    source = OpenCoreSource(o.core, o.executable);
    report.core = o.core;
  } else {
    source = OpenProcessSource(IdentifyLiveProcess(o.pid), o.executable);
  }
  report.pid = source->identity().pid;
  report.comm = source->identity().comm;
  const std::shared_ptr<const ExecutableAnalysis> analysis =
      ExecutableAnalysis::Create(source->executable().elf, o.executable.assume_go_layout);
  report.stats = ReadGoRuntimeStats(*source, *analysis);
  for (const std::string& w : report.stats.warnings) {
    log << "goheap2pprof: warning: " << w << '\n';
  }
  if (o.core.empty()) {
    source->CheckSameProcess();
    AddProcessFigures(report);
  }
  WriteOutput(o.output, o.format == "json" ? RenderMemJson(report) : RenderMemText(report));
}

}  // namespace goheap2pprof
