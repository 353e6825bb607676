// What `goheap2pprof --version` prints: the version, the git commit it was built from, how it
// was linked, and the version of every library linked in, each asked of the library itself
// (its version function where it has one, else the version macro of its headers).
#ifndef GOHEAP2PPROF_CLI_VERSION_H_
#define GOHEAP2PPROF_CLI_VERSION_H_

#include <string>

namespace goheap2pprof {

// Several lines (no newline after the last); the first is "goheap2pprof <version>".
std::string VersionText();

}  // namespace goheap2pprof

#endif  // GOHEAP2PPROF_CLI_VERSION_H_
