// Entry point of `goheap2pprof mem`, called by main with argv starting at
// the subcommand's name.
#pragma once

namespace goheap2pprof {

int MemMain(int argc, char** argv);

}  // namespace goheap2pprof
