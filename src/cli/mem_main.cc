// `goheap2pprof mem <pid>` (or --core FILE): its flags; the run is
// app/mem_run.h, the rendering app/mem_report.h.
#include "cli/mem_main.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>

#include "app/mem_run.h"
#include "base/error.h"
#include "cli/command.h"
#include "cli/target_flags.h"

namespace goheap2pprof {

Command AddMemCommand(CLI::App& root) {
  CLI::App& app = *root.add_subcommand(
      "mem",
      "goheap2pprof mem: where a Go process's memory is, from outside it: the runtime's "
      "/memory/classes/ tree (as runtime/metrics reports it) with sizes and shares, the live "
      "heap against the GC goal and GOMEMLIMIT, the process's RSS, its cgroup's usage and "
      "limit, the goroutine stacks by creation site against StackInuse, and the resident memory "
      "the "
      "Go runtime does not manage (cgo, syscall.Mmap).\n"
      "  goheap2pprof mem 1234\n"
      "  goheap2pprof mem --format json 1234 | jq '.metrics'\n"
      "  goheap2pprof mem --core core.1234 [--exe ./server]");
  app.footer("Exit codes: those of goheap2pprof --help.");
  struct Args {
    TargetFlags target;
    MemRunOptions run;
  };
  auto a = std::make_shared<Args>();
  const TargetFlagHelp help{
      .pid = "process id of the Go program",
      .core =
          "read a dead process's statistics from its core file instead of a pid (no RSS or "
          "cgroup figures then); the executable is --exe or the file the core names"};
  AddTargetFlags(app, a->target, help);
  app.add_option("--format", a->run.format,
                 "text: the breakdown for people; json: runtime/metrics names and values, the "
                 "runtime.MemStats fields, the process and cgroup figures")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("-o,--output", a->run.output, "output file ('-' for standard output)")
      ->capture_default_str();
  AddExecutableFlags(app, a->target, help);
  return {&app, [a] {
            TargetFlags& t = a->target;
            if (t.pid_text.empty() && t.core.empty()) {
              throw Error(ErrorKind::kUsage, "a pid or --core is required");
            }
            CheckTargetFlags(t);
            MemRunOptions& o = a->run;
            o.core = t.core;
            o.executable = t.executable;
            if (o.core.empty()) o.pid = TargetPid(t);
            RunMem(o, std::cerr);
            return 0;
          }};
}

}  // namespace goheap2pprof
