// `goheap2pprof push`, as a subcommand of the one app (cli/main.cc).
#pragma once

#include <CLI/CLI.hpp>

#include "agent/push/agent.h"
#include "cli/command.h"

namespace goheap2pprof {

Command AddPushCommand(CLI::App& root);

// push's own /metrics listener: --metrics-listen, --token-file, TLS, limits.
void AddPushMetricsListenOptions(CLI::App& cmd, PushOptions& o);

}  // namespace goheap2pprof
