// `goheap2pprof agent`, as a subcommand of the one app (cli/main.cc).
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace goheap2pprof {

Command AddAgentCommand(CLI::App& root);

}  // namespace goheap2pprof
