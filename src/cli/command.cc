#include "cli/command.h"

#include <iostream>
#include <optional>
#include <sstream>

#include "base/byte_size.h"

#if !GOHEAP2PPROF_CAPTURE_ONLY
#include "base/duration.h"
#endif

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

#if !GOHEAP2PPROF_CAPTURE_ONLY
std::string DurationError(const std::string& text) {
  return "expected a duration such as 10s, 5m, 250ms or a number of seconds, not \"" + text + "\"";
}
#endif

}  // namespace

std::string HintFor(const Error& e, std::string_view command) {
  return e.hint().empty() ? DefaultHint(e.kind(), command) : e.hint();
}

int RunCommand(const std::string& command, const std::function<int()>& run,
               const FailureReport& on_failure) {
  try {
    return run();
  } catch (const std::exception& e) {
    // Boundary: main's, for every command. An Error says what went wrong
    // and exits with its kind; anything else is a bug.
    if (on_failure) on_failure(e);
    if (const Error* error = dynamic_cast<const Error*>(&e)) {
      std::cerr << command << ": error: " << error->what() << "\nhint: " << HintFor(*error, command)
                << "\n";
      return static_cast<int>(error->kind());
    }
    std::cerr << command << ": unexpected failure: " << e.what()
              << "\nhint: please report this bug\n";
    return 1;
  }
}

#if !GOHEAP2PPROF_CAPTURE_ONLY
CLI::Option* AddWholeSecondsOption(CLI::App& app, const std::string& name, uint64_t& seconds,
                                   const std::string& description) {
  // A transform runs before CLI11 converts the text, so the option keeps its
  // type and default while accepting the duration syntax.
  CLI::Validator to_seconds(
      [](std::string& text) -> std::string {
        // Bare seconds as before, past kMaxDuration too.
        if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) return "";
        std::optional<std::chrono::milliseconds> d = MillisOrSeconds(text);
        if (!d) return DurationError(text);
        const auto whole = std::chrono::duration_cast<std::chrono::seconds>(*d);
        if (whole != *d)
          return "expected whole seconds such as 60, 60s or 2m, not \"" + text + "\"";
        text = std::to_string(whole.count());
        return "";
      },
      "");
  return app.add_option(name, seconds, description)
      ->transform(to_seconds)
      ->type_name("DURATION")
      ->capture_default_str();
}

CLI::Option* AddDurationOption(CLI::App& app, const std::string& name,
                               std::chrono::milliseconds& duration,
                               const std::string& description) {
  CLI::Validator duration_text(
      [](const std::string& text) { return MillisOrSeconds(text) ? "" : DurationError(text); }, "");
  std::ostringstream default_seconds;
  default_seconds << Seconds(duration);
  return app
      .add_option_function<std::string>(
          name, [&duration](const std::string& text) { duration = *MillisOrSeconds(text); },
          description)
      ->check(duration_text)
      ->type_name("DURATION")
      ->default_str(default_seconds.str());
}
#endif

CLI::Option* AddSizeOption(CLI::App& app, const std::string& name, uint64_t& bytes,
                           const std::string& description) {
  // As AddWholeSecondsOption: the text becomes the bare count CLI11 converts, so
  // a check added after (a range) sees bytes.
  CLI::Validator to_bytes(
      [](std::string& text) -> std::string {
        std::optional<uint64_t> n = ParseByteSize(text);
        if (!n) {
          return "expected a size such as 64MiB, 512KiB, 1.5G or a number of bytes, not \"" + text +
                 "\"";
        }
        text = std::to_string(*n);
        return "";
      },
      "");
  return app.add_option(name, bytes, description)
      ->transform(to_bytes)
      ->type_name("SIZE")
      ->capture_default_str();
}

int ReportParseError(const CLI::App& root, const CLI::ParseError& e) {
  // The message names the command whose options were being read.
  std::string command = root.get_name();
  for (const CLI::App* sub : root.get_subcommands()) command += " " + sub->get_name();
  std::cerr << command << ": " << e.what() << "\nhint: run " << command << " --help\n";
  return static_cast<int>(ErrorKind::kUsage);
}

}  // namespace goheap2pprof
