// `goheap2pprof probe`: one GET of the agent's own listener, for a Kubernetes
// exec probe (the agent's image has no other HTTP client). It passes only when
// the agent answers 2xx with the credentials scrapers use, which a TCP probe
// cannot tell from a listener whose process is stuck.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

#include "cli/command.h"

namespace goheap2pprof {

Command AddProbeCommand(CLI::App& root);

// url with each "$(NAME)" replaced by the environment variable NAME, as
// Kubernetes expands a container's arguments (it does not expand an exec
// probe's command). Throws Error(kUsage) for a variable that is not set.
std::string ExpandEnvironmentReferences(std::string_view url);

}  // namespace goheap2pprof
