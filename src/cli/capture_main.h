// The one-shot capture, `goheap2pprof <pid>` or `goheap2pprof --core FILE`:
// the root app's own command, as the subcommands are (cli/command.h).
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace goheap2pprof {

// Registers the capture's flags on the root app itself; its run is what the
// command line does when it names no subcommand.
Command AddCaptureCommand(CLI::App& root);

}  // namespace goheap2pprof
