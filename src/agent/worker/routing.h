// Which worker of the pool (agent/worker/pool.h) takes a request. A worker
// keeps what it learnt of up to kWorkerCachedEntries executables and as
// many processes between requests (agent/worker/worker.h): the analysis of a binary, and a
// process's capture state, whose tables a repeated capture reuses or
// continues (app/capture_state.h). A capture of a process is therefore
// worth sending to the worker that captured its executable last; elsewhere
// it is still right, only built afresh (about 100 ms more for a
// 250k-bucket process). Keys are opaque: the executable's FileStamp as a
// string, or empty for a request that needs no cache (discovery's probe).
//
//   WorkerKeys keys;                     // one per worker, in the pool
//   keys.Remember("exe", ++tick);        // after it served "exe"
//   Route r = RouteRequest(views, "exe");
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/worker/worker.h"

namespace goheap2pprof {

// The keys a worker served most recently, with when (a pool-wide tick):
// at most kMax, as many as the worker keeps analyses and states.
class WorkerKeys {
 public:
  static constexpr size_t kMax = kWorkerCachedEntries;

  // Records that the worker served `key` at `tick` (a later tick than any
  // before); an empty key is not recorded. The oldest key beyond kMax goes.
  void Remember(const std::string& key, uint64_t tick);
  // When the worker last served `key`, if it is still among its keys.
  std::optional<uint64_t> When(const std::string& key) const;
  // The worker's latest tick, 0 if it served nothing since it started.
  uint64_t last() const { return last_; }
  // A worker started afresh knows nothing.
  void Clear();

 private:
  std::vector<std::pair<std::string, uint64_t>> keys_;  // oldest first
  uint64_t last_ = 0;
};

// What the router sees of a worker.
struct WorkerView {
  bool busy = false;
  const WorkerKeys* keys = nullptr;
};

struct Route {
  // The idle worker to take, if any is idle:
  //  - the idle worker that served the key most recently;
  //  - else the idle worker whose last keyed request is the oldest (its
  //    caches the least recent), so that the others keep theirs; also for
  //    an empty key, which is never remembered.
  std::optional<size_t> worker;
  // No idle worker holds the key but a busy one does: the request may wait
  // a little for it rather than build afresh (WorkerPool::Run).
  bool holder_busy = false;
};

Route RouteRequest(const std::vector<WorkerView>& workers, const std::string& key);

}  // namespace goheap2pprof
