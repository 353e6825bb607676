// `goheap2pprof growth`: option parsing, the choice between a live process
// and profile files, and the outputs; the analysis is pprof/growth/report.h,
// the live loop app/growth_live.h, the files app/growth_input.h.
#include "cli/growth_main.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "agent/watch/watch.h"
#include "app/goroutine_leak_live.h"
#include "app/growth_input.h"
#include "app/growth_live.h"
#include "base/duration.h"
#include "base/error.h"
#include "cli/command.h"
#include "cli/target_flags.h"
#include "pprof/growth/goroutine_leak.h"
#include "pprof/growth/report.h"
#include "pprof/output.h"
#include "proc/procfs.h"

namespace goheap2pprof {

namespace {

constexpr const char* kFooter =
    R"(Exit codes: 0 report written; 20 a site of class STEADY GROWTH grows
faster than --fail-above (its slope's lower bound, slope - 2 sigma, is above it; with --goroutines,
a group of parked goroutines in goroutines an hour); otherwise those
of goheap2pprof --help (2 usage, 3 the process is gone before two snapshots, ...).
The report is explained in docs/growth.md, the --goroutines report in docs/goroutines.md.)";

struct GrowthArgs {
  std::vector<std::string> inputs;
  std::string every = "30s", duration = "10m", warm_up, fail_above, format = "text";
  std::string profile_output, keep_dir;
  int top = 10;
  bool goroutines = false;
  TargetFlags target;  // --exe and --force; the pid is one of the inputs
  GrowthLiveOptions live;
};

// "10MiB", "10MiB/h", "1048576": bytes per hour.
double ParseBytesPerHour(std::string text) {
  if (text.size() > 2 && text.compare(text.size() - 2, 2, "/h") == 0) text.resize(text.size() - 2);
  const std::vector<uint64_t> sizes = ParseSizeList(text);
  if (sizes.size() != 1) throw Error(ErrorKind::kUsage, "--fail-above takes one size per hour");
  return static_cast<double>(sizes[0]);
}

// A single argument that is a pid and no file of that name: the live mode.
std::optional<pid_t> LivePid(const std::vector<std::string>& inputs) {
  if (inputs.size() != 1 || std::filesystem::exists(inputs[0])) return std::nullopt;
  return ParsePid(inputs[0]);
}

// A duration option of live growth: the one syntax, at least 1 ms.
std::chrono::milliseconds Millis(std::string_view option, std::string_view text) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      DurationOption(option, text, std::chrono::milliseconds(1)));
}

// The live window's options from the flags.
void SetLive(GrowthArgs& a, pid_t pid) {
  a.live.pid = pid;
  a.live.executable = a.target.executable;
  a.live.every = Millis("--every", a.every);
  a.live.duration = Millis("--for", a.duration);
  if (!a.warm_up.empty()) a.live.warm_up = Millis("--warm-up", a.warm_up);
  a.live.keep_dir = a.keep_dir;
}

GrowthReport Collect(GrowthArgs& a) {
  if (std::optional<pid_t> pid = LivePid(a.inputs)) {
    SetLive(a, *pid);
    return RunLiveGrowth(a.live, std::cerr);
  }
  if (!a.keep_dir.empty()) throw Error(ErrorKind::kUsage, "--keep applies to a live process");
  GrowthCollector collector;
  for (const std::string& note : AddProfileFiles(collector, a.inputs)) {
    std::cerr << "goheap2pprof growth: " << note << "\n";
  }
  const size_t n = collector.snapshots();
  const std::string source = a.inputs.size() == 1 && std::filesystem::is_directory(a.inputs[0])
                                 ? std::to_string(n) + " profiles in " + a.inputs[0]
                                 : std::to_string(n) + " profiles";
  GrowthInfo info;
  info.source = source;
  return AnalyzeGrowth(std::move(collector).Finish(), std::move(info));
}

// --goroutines: the leak report of a live process's parked goroutines.
int RunGoroutineGrowth(GrowthArgs& a, const GrowthRenderOptions& render) {
  const std::optional<pid_t> pid = LivePid(a.inputs);
  if (!pid) throw Error(ErrorKind::kUsage, "--goroutines reads a live process: give one pid");
  if (!a.profile_output.empty()) {
    throw Error(ErrorKind::kUsage, "-o applies to heap growth")
        .WithHint("--keep DIR keeps each goroutine snapshot's debug=2 dump");
  }
  SetLive(a, *pid);
  const GoroutineLeakReport report = RunGoroutineLeakLive(a.live, std::cerr);
  std::cout << (a.format == "json" ? GoroutineLeakJson(report, render)
                                   : GoroutineLeakText(report, render));
  std::cout.flush();
  if (render.fail_above && !GroupsGrowingFaster(report, *render.fail_above).empty()) {
    std::cerr << "goheap2pprof growth: a group of goroutines grows faster than --fail-above "
              << *render.fail_above << "/h\n";
    return kExitGrowthAbove;
  }
  return 0;
}

int Run(GrowthArgs& a) {
  GrowthRenderOptions render{.top = a.top, .fail_above = std::nullopt};
  if (!a.fail_above.empty()) render.fail_above = ParseBytesPerHour(a.fail_above);
  if (a.goroutines) return RunGoroutineGrowth(a, render);
  if (!a.profile_output.empty()) CheckOutputWritable(a.profile_output);
  const GrowthReport report = Collect(a);
  if (!a.profile_output.empty()) WriteProfile(a.profile_output, GrowthProfile(report));
  std::cout << (a.format == "json" ? GrowthJson(report, render) : GrowthText(report, render));
  std::cout.flush();
  if (render.fail_above && !SitesGrowingFaster(report, *render.fail_above).empty()) {
    std::cerr << "goheap2pprof growth: a site grows faster than --fail-above "
              << FormatBytes(*render.fail_above) << "/h\n";
    return kExitGrowthAbove;
  }
  return 0;
}

}  // namespace

Command AddGrowthCommand(CLI::App& root) {
  CLI::App& app = *root.add_subcommand(
      "growth",
      "goheap2pprof growth: which allocation sites grow, ranked by the growth they can stand "
      "behind, over N heap snapshots of one Go program: taken live from a process, or read "
      "from profile files (goheap2pprof's, watch's, serve's, or the runtime's own "
      "/debug/pprof/heap), ordered by their time_nanos.\n"
      "  goheap2pprof growth 1234 --every 30s --for 10m -o growth.pb.gz\n"
      "  goheap2pprof growth profiles/ --format json --fail-above 10MiB/h\n"
      "  goheap2pprof growth --goroutines 1234 --every 10s --for 5m");
  app.footer(kFooter);
  auto shared = std::make_shared<GrowthArgs>();
  GrowthArgs& a = *shared;
  app.add_option("inputs", a.inputs,
                 "a process id, or heap profile files and directories (a directory's *.pb.gz, "
                 "*.pb, *.pprof, *.prof and heap* files)")
      ->required();
  app.add_flag("--goroutines", a.goroutines,
               "live: which goroutines leak: parked goroutines per creation site and wait "
               "reason over the snapshots, with how long the oldest waited and those the "
               "runtime marked leaked (docs/goroutines.md)");
  app.add_option("--every", a.every, "live: time between snapshots")->capture_default_str();
  app.add_option("--for", a.duration, "live: length of the window")->capture_default_str();
  app.add_option("--warm-up", a.warm_up,
                 "live: wait this long before the first snapshot (default: none)");
  app.add_option(
      "--keep", a.keep_dir,
      "live: also write each snapshot kept to DIR/heap-<n>.pb.gz (with --goroutines, its "
      "debug=2 dump to DIR/goroutine-<n>.txt; DIR is made if missing)");
  app.add_option("--format", a.format, "text or json, on standard output")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--top", a.top, "sites shown; 0 shows all")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("-o,--output", a.profile_output,
                 "also write the growth as a pprof profile (go tool pprof growth.pb.gz)");
  app.add_option("--fail-above", a.fail_above,
                 "BYTES_PER_HOUR (e.g. 10MiB/h): exit 20 when a STEADY GROWTH site's slope - "
                 "2 sigma is above it");
  AddExecutableFlags(app, a.target,
                     {.exe = "live: as for a single capture",
                      .force = "live: as for a single capture",
                      .force_needs_exe = false});
  app.add_flag("-v,--verbose", a.live.verbose, "live: report each snapshot kept or skipped");
  return {&app, [shared] { return Run(*shared); }};
}

}  // namespace goheap2pprof
