// Entry point of the `growth` subcommand, called by main with argv starting
// at the subcommand's name.
#pragma once

namespace goheap2pprof {

// The exit code when a site grows faster than --fail-above.
inline constexpr int kExitGrowthAbove = 20;

int GrowthMain(int argc, char** argv);

}  // namespace goheap2pprof
