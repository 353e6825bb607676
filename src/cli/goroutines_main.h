// `goheap2pprof goroutines <pid>`: the goroutine profile of a running Go
// program, read from outside without stopping it (app/goroutine_capture.h).
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace goheap2pprof {

Command AddGoroutinesCommand(CLI::App& root);

}  // namespace goheap2pprof
