// goheap2pprof command line: parse, run the capture, and turn the one error
// type into a message, a hint and the kind's exit code.
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "app/capture.h"
#include "base/error.h"
#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

constexpr const char* kExitCodes = R"(Exit codes:
  0   profile written (also when nothing was sampled yet: the profile is empty)
  1   unexpected failure (a bug; please report it)
  2   usage: bad arguments
  3   no such process: the pid does not exist, is a zombie, or exited during the capture
  4   permission denied: not allowed to read the target's memory
  5   not a Go program
  6   unsupported target: Go older than 1.18, not 64-bit little-endian amd64/arm64,
      or a stripped binary
  7   heap sampling is disabled in the target
  8   the target's memory or executable is inconsistent
  9   I/O error on the output or the executable
  10  internal error)";

std::string DefaultHint(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage: return "run goheap2pprof --help";
    case ErrorKind::kNoSuchProcess: return "check the pid with ps; the target may have exited";
    case ErrorKind::kPermission:
      return "run as root or as the target's user with CAP_SYS_PTRACE; check "
             "kernel.yama.ptrace_scope (0 or 1 allows same-user reads, 1 only with "
             "CAP_SYS_PTRACE for non-children); in a container, add --cap-add=SYS_PTRACE and "
             "share the target's pid namespace";
    case ErrorKind::kNotGo: return "point goheap2pprof at the pid of a Go program";
    case ErrorKind::kUnsupported: return "see the supported targets in the README";
    case ErrorKind::kSamplingDisabled: return "enable heap profiling in the target and restart it";
    case ErrorKind::kMalformed:
      return "the target may be changing too fast or is not a standard Go runtime; retry, and "
             "report it if it persists";
    case ErrorKind::kIo: return "check the output path and free space";
    case ErrorKind::kInternal: return "please report this bug";
  }
  return "";
}

int Main(int argc, char** argv) {
  CLI::App app{
      "goheap2pprof: capture the heap profile of a running Go process from outside it, "
      "as a gzipped pprof profile.proto that means what its /debug/pprof/heap would serve.\n"
      "  goheap2pprof <pid> -o heap.pb.gz && go tool pprof -top heap.pb.gz",
      "goheap2pprof"};
  app.footer(kExitCodes);
  std::string pid_text;
  CaptureOptions options;
  app.add_option("pid", pid_text, "process id of the Go program")->required();
  app.add_option("-o,--output", options.output,
                 "output file ('-' for standard output); default: "
                 "<program>-<pid>-<time>.heap.pb.gz in the current directory");
  app.add_flag("-v,--verbose", options.verbose,
               "report the Go version, build mode, addresses, rate, cycle, bucket count and "
               "phase timings");
  app.set_version_flag("--version", std::string("goheap2pprof ") + GOHEAP2PPROF_VERSION);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "goheap2pprof: " << e.what() << "\nhint: run goheap2pprof --help\n";
    return static_cast<int>(ErrorKind::kUsage);
  }

  try {
    std::optional<pid_t> pid = ParsePid(pid_text);
    if (!pid) throw Error(ErrorKind::kUsage, "\"", pid_text, "\" is not a process id");
    options.pid = *pid;
    CaptureReport report = RunCapture(options, std::cerr);
    if (options.output.empty() || options.verbose) {
      std::cerr << "goheap2pprof: wrote " << report.samples << " samples to "
                << report.output_path << "\n";
    }
    return 0;
  } catch (const Error& e) {
    std::cerr << "goheap2pprof: error: " << e.what() << "\n"
              << "hint: " << (e.hint().empty() ? DefaultHint(e.kind()) : e.hint()) << "\n";
    return static_cast<int>(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "goheap2pprof: unexpected failure: " << e.what() << "\nhint: please report "
              << "this bug\n";
    return 1;
  }
}

}  // namespace
}  // namespace goheap2pprof

int main(int argc, char** argv) { return goheap2pprof::Main(argc, argv); }
