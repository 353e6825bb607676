#include "base/keep_until_exit.h"

#include <mutex>
#include <vector>

namespace goheap2pprof {

void KeepUntilExit(std::shared_ptr<const void> what) {
  static std::mutex mu;
  // Never destroyed, and reachable from here until the exit, so a leak
  // checker does not count what it holds.
  static auto* kept = new std::vector<std::shared_ptr<const void>>;
  std::lock_guard lock(mu);
  kept->push_back(std::move(what));
}

}  // namespace goheap2pprof
