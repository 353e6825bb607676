// What a role of the node agent captures with: a pool of confined workers
// (agent/worker/pool.h), a discovery whose probes run in that pool, and the
// capture metrics both count in. In `goheap2pprof agent` every role borrows
// the agent's (SharedParts); serve, push and watch as commands of their own
// build their own. Either way the role holds one RoleParts, and this is the
// one place a pool's options are made.
//
//   RoleParts parts(options.shared, options.workers, options.timeout,
//                   Discovery::Options::From(options.discovery));
//   if (Discovery* own = parts.own_discovery()) own->Start();  // else the agent's
//   RunCounted(parts.pool(), parts.metrics(), request, affinity);
#pragma once

#include <chrono>
#include <memory>

#include "agent/common/discovery.h"
#include "agent/worker/capture_metrics.h"
#include "agent/worker/pool.h"

namespace goheap2pprof {

class RoleParts {
 public:
  // Borrows shared's parts when shared is given (the rest unused). Else
  // builds a pool of `workers` (which starts them now), whose requests wait
  // at most queue_timeout for a free worker unless their PoolCall says, and
  // a discovery; reserve_for_priority as PoolOptions' (the agent's).
  RoleParts(const SharedParts* shared, const WorkerSettings& workers,
            std::chrono::milliseconds queue_timeout, const Discovery::Options& discovery = {},
            bool reserve_for_priority = false);
  RoleParts(const RoleParts&) = delete;
  RoleParts& operator=(const RoleParts&) = delete;

  WorkerPool& pool() const { return pool_; }
  Discovery& discovery() const { return discovery_; }
  CaptureMetrics& metrics() const { return metrics_; }
  // The discovery when it is this role's own (nullptr when borrowed: its
  // owner starts and scans it).
  Discovery* own_discovery() const { return own_discovery_.get(); }

 private:
  CaptureMetrics own_metrics_;
  std::unique_ptr<WorkerPool> own_pool_;
  CaptureMetrics& metrics_;
  WorkerPool& pool_;
  std::unique_ptr<Discovery> own_discovery_;
  Discovery& discovery_;
};

// How long the node's own requests (push's rounds, watch's triggers) wait
// for a worker: their turn, however long a busy pool's captures take.
inline std::chrono::milliseconds WaitTurnTimeout(const WorkerSettings& workers) {
  return workers.capture_timeout + std::chrono::minutes(1);
}

}  // namespace goheap2pprof
