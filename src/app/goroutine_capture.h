// The engine's goroutine capture: from a CaptureSource and the analysis of
// its executable, every goroutine runtime/pprof's goroutine profile would
// list, read without stopping the target (goroutine/goroutine_reader.h),
// and the profile built from them (pprof/goroutine_profile.h).
//
//   auto src = OpenProcessSource(IdentifyLiveProcess(pid), {});
//   auto analysis = ExecutableAnalysis::Create(src->executable().elf);
//   GoroutineCapture c = CaptureGoroutines(*src, *analysis, {});
//   WriteProfile("goroutine.pb.gz", GoroutineProfile(*src, *analysis, c));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/executable_analysis.h"
#include "app/source.h"
#include "goroutine/goroutine_reader.h"
#include "pprof/goroutine_dump.h"
#include "proto/profile.pb.h"

namespace goheap2pprof {

// What a capture is for: the profile (debug=0/1) or the dump (debug=2),
// which also lists goroutines on a CPU, keeps every frame (the dump's limit
// is its own), and needs the wait reasons' names and the target's clock.
struct GoroutineCaptureOptions {
  bool dump = false;
  // A snapshot's (a core's) CLOCK_REALTIME time, in ns: the dump's minutes
  // are counted to then. Unset for a live target (its clock is now).
  std::optional<int64_t> snapshot_realtime;
};

struct GoroutineCapture {
  GoroutineSnapshot snapshot;
  // For the dump: runtime.waitReasonStrings, and the target's nanotime()
  // when it was read (a core's is estimated from its file's time).
  std::vector<std::string> wait_reasons;
  std::optional<int64_t> now;
  // For the dump: the target's GODEBUG tracebacklabels (labels in headers).
  bool traceback_labels = false;
  uint64_t bias = 0;
  int64_t time_nanos = 0;
  std::vector<std::string> notes;     // for -v
  std::vector<std::string> warnings;  // also in the profile's comments
};

// Throws kUnsupported for an architecture other than amd64, a binary without
// runtime.allglen/allgptr (symbols, or recovered from a stripped binary's
// code and checked against the target), a runtime.g layout
// the DWARF contradicts; and what ReadGoroutines throws.
GoroutineCapture CaptureGoroutines(CaptureSource& source, const ExecutableAnalysis& analysis,
                                   const GoroutineLimits& limits,
                                   const GoroutineCaptureOptions& options = {});

// The profile runtime/pprof's goroutine profile (debug=0) would be, with the
// capture's warnings and counts as comments.
pb::Profile GoroutineProfile(const CaptureSource& source, const ExecutableAnalysis& analysis,
                             const GoroutineCapture& capture);

// The debug=1 text of the same goroutines (runtime/pprof's ?debug=1).
std::string GoroutineText(const ExecutableAnalysis& analysis, const GoroutineCapture& capture);

// What the renderers of a dump capture need: the symbol tables, the
// version, the wait reasons' names and the target's clock.
GoroutineDumpInput GoroutineDumpInputOf(const ExecutableAnalysis& analysis,
                                        const GoroutineCapture& capture);

// Of a capture taken with options.dump: the debug=2 dump, the top table of
// creation sites and states (text), and the JSON for scripts
// (pprof/goroutine_dump.h, pprof/goroutine_report.h).
std::string GoroutineDump(const ExecutableAnalysis& analysis, const GoroutineCapture& capture);
std::string GoroutineTop(const ExecutableAnalysis& analysis, const GoroutineCapture& capture);
std::string GoroutineJsonReport(const ExecutableAnalysis& analysis,
                                const GoroutineCapture& capture);

// "read 1014 goroutines of 1050 in allgs (30 dead, 6 system, 0 running);
// retried 0, dropped 0, truncated 0; 1.2 MB read": for -v and the comments.
std::string DescribeGoroutineRead(const GoroutineReadStats& stats, size_t goroutines);

}  // namespace goheap2pprof
