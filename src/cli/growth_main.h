// `goheap2pprof growth`, as a subcommand of the one app (cli/main.cc).
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace goheap2pprof {

// The exit code when a site grows faster than --fail-above.
inline constexpr int kExitGrowthAbove = 20;

Command AddGrowthCommand(CLI::App& root);

}  // namespace goheap2pprof
