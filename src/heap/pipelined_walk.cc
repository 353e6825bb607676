#include "heap/pipelined_walk.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/side_by_side.h"

namespace goheap2pprof {

namespace {

// Buckets handed over at once: enough that the hand-over's locking is a
// small cost per bucket, few enough that the build starts early and the
// buffers stay small (about 600 KiB a batch at most).
constexpr size_t kBatchBuckets = 1024;
constexpr size_t kBatchWords = 64 * 1024;
constexpr size_t kBatches = 4;
constexpr uint64_t kNoFutures = ~uint64_t{0};

// Copies of walked buckets, their stacks and futures in `words`, and their
// notes.
class Batch {
 public:
  void Add(const Bucket& b, AheadNote note) {
    Bucket copy = b;
    copy.stack = {};
    copy.future_words = nullptr;
    buckets_.push_back(copy);
    notes_.push_back(note);
    places_.push_back({words_.size(), b.future_words == nullptr ? kNoFutures : 0});
    words_.insert(words_.end(), b.stack.begin(), b.stack.end());
    if (b.future_words != nullptr) {
      places_.back().futures_at = words_.size();
      words_.insert(words_.end(), b.future_words, b.future_words + 12);
    }
  }
  bool Full() const { return buckets_.size() >= kBatchBuckets || words_.size() >= kBatchWords; }
  bool empty() const { return buckets_.empty(); }
  // Each bucket, its stack and futures in this batch, then the batch cleared.
  void HandTo(const NotedBucketSink& sink) {
    for (size_t i = 0; i < buckets_.size(); ++i) {
      Bucket& b = buckets_[i];
      const Place& p = places_[i];
      const uint64_t end = i + 1 < places_.size() ? places_[i + 1].stack_at : words_.size();
      const uint64_t stack_end = p.futures_at == kNoFutures ? end : p.futures_at;
      b.stack = std::span<const uint64_t>(words_.data() + p.stack_at, stack_end - p.stack_at);
      b.future_words = p.futures_at == kNoFutures ? nullptr : words_.data() + p.futures_at;
      sink(b, notes_[i]);
    }
    buckets_.clear();
    notes_.clear();
    places_.clear();
    words_.clear();
  }

 private:
  struct Place {
    uint64_t stack_at = 0;
    uint64_t futures_at = kNoFutures;
  };
  std::vector<Bucket> buckets_;
  std::vector<AheadNote> notes_;
  std::vector<Place> places_;
  std::vector<uint64_t> words_;
};

// The batches between the two stages: `free` ones for the walk to fill,
// `full` ones for the sink, kBatches in all.
class Handover {
 public:
  Handover() {
    for (Batch& b : batches_) free_.push_back(&b);
  }
  // The walk's next batch to fill; nullptr once the sink has stopped.
  Batch* TakeFree() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return !free_.empty() || sink_stopped_; });
    if (sink_stopped_) return nullptr;
    Batch* b = free_.front();
    free_.pop_front();
    return b;
  }
  void PutFull(Batch* b) { Put(full_, b); }
  // The sink's next batch; nullptr once the walk is over and all were taken.
  Batch* TakeFull() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return !full_.empty() || walk_over_; });
    if (full_.empty()) return nullptr;
    Batch* b = full_.front();
    full_.pop_front();
    return b;
  }
  void PutFree(Batch* b) { Put(free_, b); }
  void WalkOver() { Set(walk_over_); }
  void SinkStopped() { Set(sink_stopped_); }

 private:
  void Put(std::deque<Batch*>& to, Batch* b) {
    {
      std::lock_guard lock(mu_);
      to.push_back(b);
    }
    changed_.notify_all();
  }
  void Set(bool& flag) {
    {
      std::lock_guard lock(mu_);
      flag = true;
    }
    changed_.notify_all();
  }

  Batch batches_[kBatches];
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Batch*> free_;
  std::deque<Batch*> full_;
  bool walk_over_ = false;
  bool sink_stopped_ = false;
};

// Calls done() when it goes out of scope, an error's unwinding included:
// the other stage must never wait for one that has ended.
template <typename F>
struct OnExit {
  F done;
  ~OnExit() { done(); }
};
template <typename F>
OnExit(F) -> OnExit<F>;

// The walk's stage: batches filled and handed over until the list ends.
WalkEnd WalkInto(MemoryReader& mem, uint64_t head, const WalkLimits& limits,
                 const AheadStage& ahead, Handover& handover) {
  Batch* batch = handover.TakeFree();
  // What was walked goes to the sink, up to the walk's error if any.
  OnExit over{[&] {
    if (batch != nullptr && !batch->empty()) handover.PutFull(batch);
    handover.WalkOver();
  }};
  const auto stopped = [] {
    return Error(ErrorKind::kInternal, "the heap bucket walk stopped: its build failed");
  };
  if (batch == nullptr) throw stopped();
  return StreamBuckets(mem, head, limits, [&](const Bucket& b) {
    batch->Add(b, ahead(b));
    if (!batch->Full()) return;
    handover.PutFull(std::exchange(batch, nullptr));
    batch = handover.TakeFree();
    if (batch == nullptr) throw stopped();
  });
}

// The sink's stage: every batch handed over, in order.
void BuildFrom(Handover& handover, const NotedBucketSink& sink) {
  OnExit stopped{[&] { handover.SinkStopped(); }};
  while (Batch* batch = handover.TakeFull()) {
    batch->HandTo(sink);
    handover.PutFree(batch);
  }
}

}  // namespace

WalkEnd StreamBucketsPipelined(MemoryReader& mem, uint64_t head, const WalkLimits& limits,
                               const AheadStage& ahead, const NotedBucketSink& sink) {
  Handover handover;
  WalkEnd end;
  // The sink's error, if any, is rethrown first: the walk's "stopped" is
  // only its consequence.
  if (TryRunSideBySide([&] { BuildFrom(handover, sink); },
                       [&] { end = WalkInto(mem, head, limits, ahead, handover); })) {
    return end;
  }
  return StreamBuckets(mem, head, limits, [&](const Bucket& b) { sink(b, ahead(b)); });
}

}  // namespace goheap2pprof
