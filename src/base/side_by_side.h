// Two pieces of work at once on two cores: `here` on the calling thread,
// `there` on a thread of its own. Used where one capture step is large enough
// to be split in two halves (a large batch of reads of the target, the check
// of a long bucket list) or into two stages that hand work from one to the
// other (the walk of the bucket list and the build of the profile), while the
// second core would otherwise idle.
//
//   RunSideBySide([&] { first_ok = Check(0, mid); }, [&] { second_ok = Check(mid, n); });
//
// Returns once both are done. If no thread can be had (a limit on threads),
// `there` runs here after `here`. An exception from either is rethrown after
// both are done (`here`'s first).
//
// Stages that wait for each other cannot run one after the other:
// TryRunSideBySide runs neither and returns false when no thread can be had,
// or when the process may use only one CPU (CpusAvailable), where two stages
// would only take turns.
#pragma once

#include <functional>

namespace goheap2pprof {

void RunSideBySide(const std::function<void()>& here, const std::function<void()>& there);
bool TryRunSideBySide(const std::function<void()>& here, const std::function<void()>& there);

// The CPUs this process may run on (its affinity mask), at least 1.
int CpusAvailable();

}  // namespace goheap2pprof
