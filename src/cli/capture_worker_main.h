// The hidden `goheap2pprof __capture-worker`: the confined process that
// serve, push, watch and the agent start for each capture (agent/worker/pool.h).
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace goheap2pprof {

Command AddCaptureWorkerCommand(CLI::App& root);

}  // namespace goheap2pprof
