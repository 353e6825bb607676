// `goheap2pprof enable-sampling`, as a subcommand of the one app (cli/main.cc).
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace goheap2pprof {

Command AddEnableSamplingCommand(CLI::App& root);

}  // namespace goheap2pprof
