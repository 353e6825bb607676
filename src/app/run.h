// What the command line runs: open the live process named by a pid (or the
// dead one of a core file) as a capture source, analyse its executable,
// capture, print the report's notes and warnings, and write the profile (or a
// view of it) to the output file. This is the engine's caller for one-shot
// captures; the agent has its own.
//
//   RunOptions o{.pid = 1234, .output = "heap.pb.gz"};
//   CaptureReport report;
//   RunCapture(o, std::cerr, report);
#pragma once

#include <sys/types.h>

#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>

#include "app/capture.h"
#include "app/output_format.h"
#include "app/process_source.h"

namespace goheap2pprof {

// Hooks that let end-to-end tests put the target in the worst situations
// (exit mid-walk, pid reuse). Set from GOHEAP2PPROF_TEST_SEAM by main, in
// test builds only (CMake option GOHEAP2PPROF_TEST_SEAMS):
//   GOHEAP2PPROF_TEST_SEAM=pause-mid-walk=2000   sleep 2 s after a few reads of the list
//   GOHEAP2PPROF_TEST_SEAM=pause-after-walk=2000 sleep 2 s after the walk, before the
//                                                final identity check
//   GOHEAP2PPROF_TEST_SEAM=pid-reuse             the final check sees another start time
// Each pause is announced on the log ("test seam: pausing ...") so the test
// knows when to act. They act by wrapping the source (app/run.cc); the
// engine knows nothing of them.
struct TestSeams {
  int pause_mid_walk_ms = 0;
  int pause_after_walk_ms = 0;
  bool pid_reuse = false;
};
#if GOHEAP2PPROF_TEST_SEAMS
// Parses the GOHEAP2PPROF_TEST_SEAM value; throws kUsage on unknown seams.
TestSeams ParseTestSeams(std::string_view spec);
#endif
// `source` with the seams applied (itself when there are none); the pauses
// are announced on `log`. Also for serve's capture workers.
std::unique_ptr<CaptureSource> WithTestSeams(std::unique_ptr<CaptureSource> source,
                                             const TestSeams& seams, std::ostream& log);

struct RunOptions {
  pid_t pid = 0;
  std::string core;    // --core: read this core file instead of the process pid
  std::string output;  // "-" for stdout; empty: <program>-<pid>-<time>.heap.pb.gz
  bool verbose = false;
  bool stats = false;  // print FormatStats(report) to the log at the end
  TestSeams seams;
  OutputOptions output_format;   // --format, --counters, --top, --sample-index
  ExecutableOptions executable;  // --exe, --force
};

// Runs the capture and writes the output; returns the path written. Throws
// Error on failure, in which case no output file was created or changed and
// `report` holds what was learned. Only the test seams write to `log`; the
// caller prints the report (PrintReport), after success or failure. For a
// command that exits once it returns: a success leaves the executable's
// analysis to the exit (base/keep_until_exit.h).
std::string RunCapture(const RunOptions& options, std::ostream& log, CaptureReport& report);

// The report's notes and pass timings (when verbose) and its warnings, one
// "goheap2pprof: ..." line each.
void PrintReport(const CaptureReport& report, bool verbose, std::ostream& log);

// The default output file name for a program and pid.
std::string DefaultOutputName(const std::string& program, pid_t pid,
                              std::string_view suffix = ".heap.pb.gz");

}  // namespace goheap2pprof
