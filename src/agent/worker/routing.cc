#include "agent/worker/routing.h"

#include <algorithm>

namespace goheap2pprof {

void WorkerKeys::Remember(const std::string& key, uint64_t tick) {
  if (key.empty()) return;
  std::erase_if(keys_, [&](const auto& k) { return k.first == key; });
  if (keys_.size() >= kMax) keys_.erase(keys_.begin());
  keys_.emplace_back(key, tick);
  last_ = std::max(last_, tick);
}

std::optional<uint64_t> WorkerKeys::When(const std::string& key) const {
  if (key.empty()) return std::nullopt;
  for (const auto& [k, tick] : keys_) {
    if (k == key) return tick;
  }
  return std::nullopt;
}

void WorkerKeys::Clear() {
  keys_.clear();
  last_ = 0;
}

Route RouteRequest(const std::vector<WorkerView>& workers, const std::string& key) {
  Route route;
  std::optional<uint64_t> holder_tick;  // of the chosen idle holder
  std::optional<size_t> oldest;         // the idle worker whose last keyed request is the oldest
  for (size_t i = 0; i < workers.size(); ++i) {
    const WorkerView& w = workers[i];
    const std::optional<uint64_t> when = w.keys->When(key);
    if (w.busy) {
      if (when) route.holder_busy = true;
      continue;
    }
    if (when && (!holder_tick || *when > *holder_tick)) {
      holder_tick = when;
      route.worker = i;
    }
    if (!oldest || w.keys->last() < workers[*oldest].keys->last()) oldest = i;
  }
  if (holder_tick) {
    route.holder_busy = false;
    return route;
  }
  route.worker = oldest;
  return route;
}

}  // namespace goheap2pprof
