#include "cli/command.h"

#include <iostream>

namespace goheap2pprof {

namespace {

std::string DefaultHint(ErrorKind kind, std::string_view command) {
  switch (kind) {
    case ErrorKind::kUsage:
      return "run " + std::string(command) + " --help";
    case ErrorKind::kNoSuchProcess:
      return "check the pid with ps; the target may have exited";
    case ErrorKind::kPermission:
      return "run as root, or as the target's user with CAP_SYS_PTRACE; "
             "kernel.yama.ptrace_scope=1 requires CAP_SYS_PTRACE to read a process that is not "
             "your child, 2 always requires it, 3 forbids it; in a container, add "
             "--cap-add=SYS_PTRACE and share the target's pid namespace (--pid=container:<id>)";
    case ErrorKind::kNotGo:
      return "point goheap2pprof at the pid of a Go program";
    case ErrorKind::kUnsupported:
      return "goheap2pprof reads Go 1.18+ programs built for 64-bit little-endian amd64 or "
             "arm64; see \"Supported targets\" in the README";
    case ErrorKind::kSamplingDisabled:
      return "enable heap profiling in the target and restart it";
    case ErrorKind::kMalformed:
      return "the target may be changing too fast or is not a standard Go runtime; retry, and "
             "report it if it persists";
    case ErrorKind::kIo:
      return "check the output path and free space";
    case ErrorKind::kInternal:
      return "please report this bug";
  }
  return "";
}

}  // namespace

std::string HintFor(const Error& e, std::string_view command) {
  return e.hint().empty() ? DefaultHint(e.kind(), command) : e.hint();
}

int ParseAndRun(CLI::App& app, int argc, char** argv, const std::string& command,
                const std::function<int()>& run) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << command << ": " << e.what() << "\nhint: run " << command << " --help\n";
    return static_cast<int>(ErrorKind::kUsage);
  }
  try {
    return run();
  } catch (const Error& e) {
    std::cerr << command << ": error: " << e.what() << "\nhint: " << HintFor(e, command) << "\n";
    return static_cast<int>(e.kind());
  } catch (const std::exception& e) {
    std::cerr << command << ": unexpected failure: " << e.what()
              << "\nhint: please report this bug\n";
    return 1;
  }
}

}  // namespace goheap2pprof
