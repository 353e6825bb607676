// Which worker of the pool takes a request (RouteRequest,
// agent/worker/routing.h): the one that served the executable last, so that
// its capture state is reused; a probe (no key) neither takes that worker
// from an idle one that holds nothing nor makes it forget what it holds.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "agent/worker/routing.h"

namespace goheap2pprof {
namespace {

std::vector<WorkerView> Views(const std::vector<WorkerKeys>& keys, const std::vector<bool>& busy) {
  std::vector<WorkerView> views;
  for (size_t i = 0; i < keys.size(); ++i) views.push_back({busy[i], &keys[i]});
  return views;
}

TEST(WorkerKeys, RemembersTheLatestTickOfAKeyAndForgetsTheOldestBeyondTheBound) {
  WorkerKeys keys;
  keys.Remember("a", 1);
  keys.Remember("b", 2);
  keys.Remember("a", 3);
  EXPECT_EQ(keys.When("a"), 3u);
  EXPECT_EQ(keys.When("b"), 2u);
  EXPECT_EQ(keys.last(), 3u);
  for (uint64_t i = 0; i < WorkerKeys::kMax - 1; ++i) keys.Remember("k" + std::to_string(i), 4 + i);
  // "b" was the oldest of kMax + 1 keys.
  EXPECT_FALSE(keys.When("b"));
  EXPECT_EQ(keys.When("a"), 3u);
  keys.Clear();
  EXPECT_FALSE(keys.When("a"));
  EXPECT_EQ(keys.last(), 0u);
}

TEST(WorkerKeys, AnEmptyKeyIsNeitherRememberedNorFound) {
  WorkerKeys keys;
  keys.Remember("", 5);
  EXPECT_FALSE(keys.When(""));
  EXPECT_EQ(keys.last(), 0u);
}

TEST(RouteRequest, TakesTheIdleWorkerThatServedTheExecutableLast) {
  std::vector<WorkerKeys> keys(3);
  keys[0].Remember("exe", 1);
  keys[1].Remember("other", 2);
  keys[2].Remember("exe", 3);
  Route r = RouteRequest(Views(keys, {false, false, false}), "exe");
  ASSERT_TRUE(r.worker);
  EXPECT_EQ(*r.worker, 2u);
  EXPECT_FALSE(r.holder_busy);
  // The latest holder busy: an earlier one, idle, still holds a state.
  r = RouteRequest(Views(keys, {false, false, true}), "exe");
  EXPECT_EQ(r.worker, 0u);
  EXPECT_FALSE(r.holder_busy);
}

TEST(RouteRequest, SaysWhenOnlyABusyWorkerHoldsTheExecutable) {
  std::vector<WorkerKeys> keys(2);
  keys[0].Remember("exe", 1);
  keys[1].Remember("other", 2);
  Route r = RouteRequest(Views(keys, {true, false}), "exe");
  EXPECT_TRUE(r.holder_busy);
  EXPECT_EQ(r.worker, 1u);  // taken if the holder is not free in time
}

TEST(RouteRequest, AProbeOrANewExecutableTakesTheWorkerWithTheOldestKeyedRequest) {
  std::vector<WorkerKeys> keys(3);
  keys[0].Remember("exe", 5);
  keys[1].Remember("other", 2);
  // keys[2] served nothing since it started.
  EXPECT_EQ(RouteRequest(Views(keys, {false, false, false}), "").worker, 2u);
  EXPECT_EQ(RouteRequest(Views(keys, {false, false, false}), "new").worker, 2u);
  EXPECT_EQ(RouteRequest(Views(keys, {false, false, true}), "").worker, 1u);
  EXPECT_FALSE(RouteRequest(Views(keys, {false, false, true}), "").holder_busy);
}

TEST(RouteRequest, NoIdleWorkerNoRoute) {
  std::vector<WorkerKeys> keys(2);
  keys[0].Remember("exe", 1);
  Route r = RouteRequest(Views(keys, {true, true}), "exe");
  EXPECT_FALSE(r.worker);
  EXPECT_TRUE(r.holder_busy);
  EXPECT_FALSE(RouteRequest(Views(keys, {true, true}), "").worker);
}

}  // namespace
}  // namespace goheap2pprof
