// The capture pipeline: from a pid to a finished heap profile, as a list of
// commented steps. Everything the user asked for arrives in CaptureOptions;
// everything worth reporting leaves in CaptureReport.
//
//   CaptureOptions opt{.pid = 1234, .output = "heap.pb.gz"};
//   CaptureReport rep = RunCapture(opt, std::cerr);
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace goheap2pprof {

struct CaptureOptions {
  pid_t pid = 0;
  std::string output;  // "-" for stdout; empty: <program>-<pid>-<time>.heap.pb.gz
  bool verbose = false;
  // Test seam: called between the bucket walk and the final pid check, so a
  // test can kill or replace the target at the worst moment.
  std::function<void()> after_walk_hook;
};

struct CaptureReport {
  std::string output_path;
  std::string go_version;
  uint64_t samples = 0;
  std::vector<std::string> warnings;
};

// Runs the whole capture and writes the output. Throws Error on failure, in
// which case no output file was created or changed. Progress (with -v) and
// warnings go to `log`.
CaptureReport RunCapture(const CaptureOptions& options, std::ostream& log);

// The default output file name for a program and pid.
std::string DefaultOutputName(const std::string& program, pid_t pid);

}  // namespace goheap2pprof
