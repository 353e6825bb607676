// memstats_dump: a test tool (not installed) that prints the engine's read
// of a Go process's memory statistics as JSON, with the names Go's
// encoding/json gives runtime.MemStats and runtime/metrics, so that
// tests/e2e/memstats_oracle_test.sh can compare it with the target's own
// view field by field. The user-facing command is `goheap2pprof mem`.
//
//   memstats_dump [--exe FILE] PID
//   memstats_dump [--exe FILE] --core CORE
//   memstats_dump --repeat N PID     # N reads; "read_ms" lists each one's time
//
// "analysis_ms" is the executable's analysis (once per executable in
// serve), in which the memory-statistics layout is judged from the DWARF
// the heap-bucket layout is checked against; "variables_ms" the finding of
// the memory-statistics variables after it (from the symbol table, or from
// the runtime's code in a stripped executable), which the first read would
// otherwise do. Both come before the reads.
//
// With --repeat, "decreases" counts the reads in which a cumulative counter
// (heap allocs and frees, objects and bytes, tiny allocs, GC cycles) was
// lower than in the read before: a torn read, since the runtime only adds
// to them. "max_attempts" is the most attempts one read needed.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "app/core_source.h"
#include "app/executable_analysis.h"
#include "app/mem_report.h"
#include "app/process_source.h"
#include "app/runtime_stats.h"
#include "base/error.h"
#include "base/utf8.h"

namespace goheap2pprof {
namespace {

// Whether a counter the runtime only adds to went down between two reads.
bool Decreased(const GoRuntimeStats& before, const GoRuntimeStats& after) {
  for (const char* name :
       {"/gc/heap/allocs:objects", "/gc/heap/allocs:bytes", "/gc/heap/frees:objects",
        "/gc/heap/frees:bytes", "/gc/heap/tiny/allocs:objects", "/gc/cycles/total:gc-cycles"}) {
    if (after.Uint(name).value_or(0) < before.Uint(name).value_or(0)) return true;
  }
  return false;
}

// Milliseconds from `start` to now.
double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

int Run(int argc, char** argv) {
  ExecutableOptions exe;
  std::string core;
  std::string pid_text;
  int repeat = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--exe" && i + 1 < argc) {
      exe.path = argv[++i];
    } else if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--core" && i + 1 < argc) {
      core = argv[++i];
    } else {
      pid_text = arg;
    }
  }
  if (core.empty() == pid_text.empty()) {
    std::cerr << "usage: memstats_dump [--exe FILE] (PID | --core CORE)\n";
    return 2;
  }
  std::unique_ptr<CaptureSource> source;
  if (!core.empty()) {
    source = OpenCoreSource(core, exe);
  } else {
    source = OpenProcessSource(IdentifyLiveProcess(std::atoi(pid_text.c_str())), exe);
  }
  const auto analysis_start = std::chrono::steady_clock::now();
  auto analysis = ExecutableAnalysis::Create(source->executable().elf);
  const double analysis_ms = MsSince(analysis_start);
  const auto variables_start = std::chrono::steady_clock::now();
  analysis->memstats();
  const double variables_ms = MsSince(variables_start);
  GoRuntimeStats s;
  nlohmann::ordered_json read_ms = nlohmann::ordered_json::array();
  int decreases = 0, max_attempts = 0;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    GoRuntimeStats previous = std::move(s);
    s = ReadGoRuntimeStats(*source, *analysis);
    max_attempts = std::max(max_attempts, s.attempts);
    if (i > 0 && Decreased(previous, s)) ++decreases;
    read_ms.push_back(MsSince(start));
  }
  nlohmann::ordered_json out;
  out["go_version"] = s.go_version;
  out["memstats"] = MemStatsJson(s.mem);
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
  for (const GoMetric& m : s.metrics) {
    if (m.kind == GoMetric::Kind::kUint64) metrics[m.name] = m.u;
  }
  out["metrics_uint64"] = metrics;
  out["num_goroutine"] = s.num_goroutine;
  out["gomaxprocs"] = s.gomaxprocs;
  out["threads"] = s.threads;
  out["attempts"] = s.attempts;
  out["layout_from_dwarf"] = analysis->memstats().layout.from_dwarf;
  out["layout_table_differences"] = analysis->memstats().layout.table_differences;
  out["notes"] = s.notes;
  out["analysis_ms"] = analysis_ms;
  out["variables_ms"] = variables_ms;
  out["read_ms"] = read_ms;
  out["decreases"] = decreases;
  out["max_attempts"] = max_attempts;
  std::cout << JsonText(out, 1) << "\n";
  return 0;
}

}  // namespace
}  // namespace goheap2pprof

int main(int argc, char** argv) {
  try {
    return goheap2pprof::Run(argc, argv);
  } catch (const goheap2pprof::Error& e) {
    std::cerr << "memstats_dump: " << e.what() << "\n";
    return static_cast<int>(e.kind());
  }
}
