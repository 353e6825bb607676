// `goheap2pprof enable-sampling <pid> [--rate 512KiB | --off]`: option
// parsing and output; the work is app/enable_sampling.h.
#include "cli/enable_sampling_main.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "app/enable_sampling.h"
#include "base/error.h"
#include "cli/command.h"
#include "cli/target_flags.h"
#include "proc/memory_reader.h"
#include "proc/memory_writer.h"
#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

struct EnableSamplingFlags {
  TargetFlags target;
  std::string rate = "512KiB";
  bool off = false;
  bool verbose = false;
  EnableSamplingOptions options;
};

#if GOHEAP2PPROF_TEST_SEAMS
// GOHEAP2PPROF_TEST_ENABLE_CYCLES=N: after the change, N more cycles of
// --off and back, each the same read, write and re-read of the word as one
// invocation's, without opening and analysing the executable again: lets
// tests/e2e/enable_sampling_test.sh run 1,000 cycles on every toolchain in
// seconds (it runs real invocations on two).
void RunTestCycles(const SamplingChange& c, int64_t rate, const WriteLog& log) {
  const char* cycles = std::getenv("GOHEAP2PPROF_TEST_ENABLE_CYCLES");
  if (cycles == nullptr) return;
  ProcessMemoryReader mem(c.pid);
  ProcessWordWriter writer(c.pid);
  for (long i = std::strtol(cycles, nullptr, 10); i > 0; --i) {
    WriteRate(mem, writer, c.address, rate == 0 ? kDefaultSamplingRate : 0, log);
    WriteRate(mem, writer, c.address, rate, log);
  }
}
#endif

int RunEnableSampling(EnableSamplingFlags& f) {
  const pid_t pid = TargetPid(f.target);
  f.options.executable = f.target.executable;
  f.options.rate = f.off ? 0 : ParseSamplingRate(f.rate);
  const WriteLog log = [&f](const std::string& line) {
    if (f.verbose) std::cerr << "goheap2pprof enable-sampling: " << line << "\n";
  };
  const SamplingChange change = SetSamplingRate(pid, f.options, log);
#if GOHEAP2PPROF_TEST_SEAMS
  RunTestCycles(change, f.options.rate, log);
#endif
  std::cout << DescribeChange(change) << "\n";
  return 0;
}

}  // namespace

Command AddEnableSamplingCommand(CLI::App& root) {
  CLI::App& app = *root.add_subcommand(
      "enable-sampling",
      "goheap2pprof enable-sampling: turn heap sampling on in a running Go program that does "
      "not sample (one built without runtime/pprof starts with runtime.MemProfileRate = 0), so "
      "that a later capture has a profile. It assigns runtime.MemProfileRate from outside, as "
      "the program itself could: the one command of goheap2pprof that writes to a target (one "
      "aligned 8-byte word, with process_vm_writev; the target is never stopped). Allocations "
      "made before it ran are not recoverable. See docs/enable-sampling.md.\n"
      "  goheap2pprof enable-sampling 1234            # sample every 512 KiB on average\n"
      "  goheap2pprof enable-sampling 1234 --rate 1   # every allocation (costly)\n"
      "  goheap2pprof enable-sampling 1234 --off      # back to 0");
  app.footer(
      "Exit codes: those of goheap2pprof --help; 6 also for a Go version, an address or a "
      "stripped binary whose variable cannot be proven (nothing is written then).");
  auto shared = std::make_shared<EnableSamplingFlags>();
  EnableSamplingFlags& f = *shared;
  const TargetFlagHelp help{.pid = "process id of the Go program",
                            .pid_required = true,
                            .exe =
                                "as for a single capture: read the executable's tables from "
                                "this file (e.g. the unstripped build of a stripped binary)"};
  AddTargetFlags(app, f.target, help);
  CLI::Option* rate =
      app.add_option("--rate", f.rate,
                     "average bytes between samples: bytes, or with a unit (512KiB, 4MiB); 1 "
                     "samples every allocation")
          ->capture_default_str();
  app.add_flag("--off", f.off, "set the rate back to 0: no allocation is sampled from now on")
      ->excludes(rate);
  app.add_flag("-v,--verbose", f.verbose,
               "print the Go version, the address of runtime.MemProfileRate and how it was "
               "found, and every write: old -> new, and what was read back");
  AddExecutableFlags(app, f.target, help);
  return {&app, [shared] {
            CheckTargetFlags(shared->target);
            return RunEnableSampling(*shared);
          }};
}

}  // namespace goheap2pprof
