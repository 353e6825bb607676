// Entry points of the `serve` and `__serve-worker` subcommands, called by
// main with argv starting at the subcommand's name.
#pragma once

namespace goheap2pprof {

int ServeMain(int argc, char** argv);
int ServeWorkerMain(int argc, char** argv);

}  // namespace goheap2pprof
