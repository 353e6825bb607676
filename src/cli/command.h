// What every goheap2pprof command does around its own work: parse its
// arguments (a usage error points at its --help), run, and turn an Error into
// "<command>: error: ..." with a hint (the error's own, else one for its
// kind) and the kind's exit code. main() and the serve and push commands
// share it, so a failure reads and exits the same way from each.
//
//   return ParseAndRun(app, argc, argv, "goheap2pprof push", [&] { return RunPush(o, std::cerr);
//   });
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <string_view>

#include "base/error.h"

namespace goheap2pprof {

// The error's hint, or the one for its kind (usage: "run <command> --help").
std::string HintFor(const Error& e, std::string_view command);

// Parses argv into app, then returns run()'s exit code; a parse error,
// an Error or another exception from run() is printed to standard error and
// answered with its exit code (kUsage, the Error's kind, 1).
int ParseAndRun(CLI::App& app, int argc, char** argv, const std::string& command,
                const std::function<int()>& run);

}  // namespace goheap2pprof
