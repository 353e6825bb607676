#include "agent/worker/role_parts.h"

#include <utility>

namespace goheap2pprof {

RoleParts::RoleParts(const SharedParts* shared, const WorkerSettings& workers,
                     std::chrono::milliseconds queue_timeout, const Discovery::Options& discovery,
                     bool reserve_for_priority)
    : own_pool_(shared ? nullptr
                       : std::make_unique<WorkerPool>(
                             PoolOptions{.workers = workers,
                                         .queue_timeout = queue_timeout,
                                         .reserve_for_priority = reserve_for_priority})),
      metrics_(shared ? *shared->metrics : own_metrics_),
      pool_(shared ? *shared->pool : *own_pool_),
      own_discovery_(
          shared
              ? nullptr
              : std::make_unique<Discovery>(
                    discovery, [this](pid_t pid) { return ProbeInWorker(pool_, metrics_, pid); })),
      discovery_(shared ? *shared->discovery : *own_discovery_) {}

}  // namespace goheap2pprof
