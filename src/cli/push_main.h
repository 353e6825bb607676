// Entry point of the `push` subcommand, called by main with argv starting at
// the subcommand's name.
#pragma once

namespace goheap2pprof {

int PushMain(int argc, char** argv);

}  // namespace goheap2pprof
