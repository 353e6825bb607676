// What every goheap2pprof command does around its own work: each is a
// subcommand of the one CLI11 app (cli/main.cc), which parses the whole
// command line once; the command that was named then runs, and an Error it
// throws becomes "<command>: error: ..." with a hint (the error's own, else
// one for its kind) and the kind's exit code, the same from every command.
//
//   Command serve = AddServeCommand(app);     // options bound to its own state
//   app.parse(argc, argv);
//   if (serve.app->parsed()) return RunCommand("goheap2pprof serve", serve.run);
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "base/error.h"

namespace goheap2pprof {

// A subcommand: its CLI11 app (owned by the root app) and its work, which
// owns the state the options are bound to.
// What a command says about a failure of its run(), before RunCommand
// prints the error (the one-shot capture: what it learned, and for
// --format json, the document). Must not throw.
using FailureReport = std::function<void(const std::exception&)>;

struct Command {
  Command(CLI::App* command_app, std::function<int()> command_run,
          FailureReport command_on_failure = {})
      : app(command_app), run(std::move(command_run)), on_failure(std::move(command_on_failure)) {}

  CLI::App* app = nullptr;
  std::function<int()> run;
  FailureReport on_failure;  // may be empty
};

// The error's hint, or the one for its kind (usage: "run <command> --help").
std::string HintFor(const Error& e, std::string_view command);

// Returns run()'s exit code; an Error or another exception from run() is
// reported by on_failure (if any), printed to standard error and answered
// with its exit code (the Error's kind, 1).
int RunCommand(const std::string& command, const std::function<int()>& run,
               const FailureReport& on_failure = {});

#if !GOHEAP2PPROF_CAPTURE_ONLY
// Duration options take one syntax everywhere: "10s", "5m", "250ms", "1h" or
// a bare number of seconds (what the options took before).
// Into a whole number of seconds ("1m", "90", not "1.5s"):
// an option the kernel takes in seconds (RLIMIT_CPU).
CLI::Option* AddWholeSecondsOption(CLI::App& app, const std::string& name, uint64_t& seconds,
                                   const std::string& description);
// The same syntax into a std::chrono duration (rounded to the nearest
// millisecond); --help shows the default in seconds, as before.
CLI::Option* AddDurationOption(CLI::App& app, const std::string& name,
                               std::chrono::milliseconds& duration, const std::string& description);
#endif

// A size option that takes one syntax everywhere: "64MiB", "512K", "1.5G" or
// a bare number of bytes (what the options took before; base/byte_size.h).
CLI::Option* AddSizeOption(CLI::App& app, const std::string& name, uint64_t& bytes,
                           const std::string& description);

// A parse error of the command line, as every command prints it.
int ReportParseError(const CLI::App& root, const CLI::ParseError& e);

}  // namespace goheap2pprof
