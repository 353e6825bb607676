// The capture pipeline: from a pid to a finished heap profile, as a list of
// commented steps. Everything the user asked for arrives in CaptureOptions;
// everything worth reporting leaves in CaptureReport.
//
//   CaptureOptions opt{.pid = 1234, .output = "heap.pb.gz"};
//   CaptureReport rep = RunCapture(opt, std::cerr);
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string_view>
#include <string>
#include <utility>
#include <vector>

#include "app/executable.h"
#include "app/output_format.h"

namespace goheap2pprof {

// Hooks that let end-to-end tests put the target in the worst situations
// (exit mid-walk, pid reuse). Set from GOHEAP2PPROF_TEST_SEAM by main:
//   GOHEAP2PPROF_TEST_SEAM=pause-mid-walk=2000   sleep 2 s after a few reads of the list
//   GOHEAP2PPROF_TEST_SEAM=pause-after-walk=2000 sleep 2 s after the walk
//   GOHEAP2PPROF_TEST_SEAM=pid-reuse             the final check sees another start time
// Each pause is announced on the log ("test seam: pausing ...") so the test
// knows when to act.
struct TestSeams {
  int pause_mid_walk_ms = 0;
  int pause_after_walk_ms = 0;
  bool pid_reuse = false;
};
// Parses the GOHEAP2PPROF_TEST_SEAM value; throws kUsage on unknown seams.
TestSeams ParseTestSeams(std::string_view spec);

struct CaptureOptions {
  pid_t pid = 0;
  std::string output;  // "-" for stdout; empty: <program>-<pid>-<time>.heap.pb.gz
  bool verbose = false;
  bool stats = false;  // print FormatStats(report) to the log at the end
  TestSeams seams;
  OutputOptions output_format;  // --format, --counters, --top, --sample-index
  ExecutableOptions executable;  // --exe, --force
};

struct CaptureReport {
  std::string output_path;
  std::string go_version;
  uint64_t samples = 0;
  std::vector<std::string> warnings;
  // For the JSON snapshot: the profile cycle read, whether the walk saw one
  // cycle throughout, and when the capture started (for duration_ms).
  std::optional<uint32_t> cycle;
  bool consistent = true;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  // For --stats: what reading the target cost, and each phase's wall time.
  uint64_t buckets = 0;
  int walks = 0;
  uint64_t read_syscalls = 0;
  uint64_t bytes_read = 0;
  uint64_t torn_walks = 0;  // walks discarded because the cycle changed
  std::vector<std::pair<std::string, double>> phase_ms;
};

// The --stats table for a finished capture.
std::string FormatStats(const CaptureReport& report);

// Runs the whole capture and writes the output. Throws Error on failure, in
// which case no output file was created or changed. Progress (with -v) and
// warnings go to `log`.
CaptureReport RunCapture(const CaptureOptions& options, std::ostream& log);
// The same, filling `report` as it goes, so that after a failure the caller
// still knows what was learned (Go version, warnings) for the JSON snapshot.
void RunCapture(const CaptureOptions& options, std::ostream& log, CaptureReport& report);

// The default output file name for a program and pid.
std::string DefaultOutputName(const std::string& program, pid_t pid);

}  // namespace goheap2pprof
