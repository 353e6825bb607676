// What `goheap2pprof mem <pid>` (or --core FILE) runs: the runtime's memory
// statistics of one target, beside its RSS and its memory cgroup when it is
// alive, rendered (app/mem_report.h) and written. The command line only
// parses its flags (cli/mem_main.cc).
//
//   MemRunOptions o{.pid = 1234, .format = "json"};
//   RunMem(o, std::cerr);
#pragma once

#include <sys/types.h>

#include <iosfwd>
#include <string>

#include "app/process_source.h"

namespace goheap2pprof {

struct MemRunOptions {
  pid_t pid = 0;
  std::string core;              // read this core file instead of the process pid
  std::string format = "text";   // "text" or "json"
  std::string output = "-";      // "-" for standard output
  ExecutableOptions executable;  // --exe, --force
};

// Reads, renders and writes; the statistics' warnings go to `log`. Throws
// Error as a capture does.
void RunMem(const MemRunOptions& options, std::ostream& log);

}  // namespace goheap2pprof
