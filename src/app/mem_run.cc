#include "app/mem_run.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <ostream>

#include "app/core_source.h"
#include "app/executable_analysis.h"
#include "app/goroutine_capture.h"
#include "app/mem_report.h"
#include "app/runtime_stats.h"
#include "base/error.h"
#include "pprof/goroutine_dump.h"
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

// The goroutines' stacks per creation site, named as `goroutines --format
// text` names them.
GoroutineStacks StacksBySite(const ExecutableAnalysis& analysis, const GoroutineCapture& c) {
  const GoroutineDumpInput in{.pclntab = &analysis.pclntab(),
                              .symbolizer = &analysis.symbolizer(),
                              .version = analysis.traits().version,
                              .bias = c.bias,
                              .wait_reasons = {},
                              .now = std::nullopt};
  GoroutineStacks out;
  std::map<std::string, StackSite> by_site;
  for (const Goroutine& g : c.snapshot.goroutines) {
    const std::optional<GoroutineCreator> creator = GoroutineCreatedBy(in, g);
    std::string site =
        creator ? creator->function + " at " + creator->file + ":" + std::to_string(creator->line)
                : "(no creator shown)";
    StackSite& s = by_site[site];
    s.created_by = std::move(site);
    // Bounds the read checked as consistent; a torn pair adds nothing.
    const uint64_t bytes = g.stack_hi > g.stack_lo ? g.stack_hi - g.stack_lo : 0;
    ++s.goroutines;
    s.bytes += bytes;
    ++out.goroutines;
    out.bytes += bytes;
  }
  for (auto& [name, site] : by_site) out.sites.push_back(std::move(site));
  std::stable_sort(out.sites.begin(), out.sites.end(),
                   [](const StackSite& a, const StackSite& b) { return a.bytes > b.bytes; });
  out.system = c.snapshot.stats.system;
  out.running = c.snapshot.stats.running;
  out.dropped = c.snapshot.stats.dropped;
  return out;
}

// The stacks where they can be read: a target whose goroutines cannot be
// (another architecture, a stripped binary without the symbols
// CaptureGoroutines needs) still gets the rest of its report.
void AddStacks(CaptureSource& source, const ExecutableAnalysis& analysis, MemReport& r) {
  try {
    r.stacks = StacksBySite(analysis, CaptureGoroutines(source, analysis, {}));
  } catch (const Error& e) {
    // Boundary: one optional section of the report; the reason is printed in
    // its place. A process gone or forbidden is the whole command's error, as
    // for the optional statistics of a capture (ReadOptionalGoRuntimeStats).
    if (e.kind() == ErrorKind::kNoSuchProcess || e.kind() == ErrorKind::kPermission) throw;
    r.stacks_error = e.what();
  }
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
  AddStacks(*source, *analysis, report);
  if (o.core.empty()) {
    source->CheckSameProcess();
    AddProcessFigures(report);
  }
  WriteOutput(o.output, o.format == "json" ? RenderMemJson(report) : RenderMemText(report));
}

}  // namespace goheap2pprof
