// `goheap2pprof serve`, a subcommand of the one app (cli/main.cc).
#pragma once

#include <CLI/CLI.hpp>

#include "agent/serve/server.h"
#include "cli/command.h"

namespace goheap2pprof {

Command AddServeCommand(CLI::App& root);

// serve's listener and request options (--listen, --token-file, TLS, the
// connection limits, --timeout, the delta limits), for serve and agent.
void AddServeListenOptions(CLI::App& cmd, ServeOptions& o);

}  // namespace goheap2pprof
