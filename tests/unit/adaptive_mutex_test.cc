// AdaptiveMutex: a Lockable that excludes, as std::mutex does.
#include "base/adaptive_mutex.h"

#include <gtest/gtest.h>

#include <mutex>
#include <thread>

namespace goheap2pprof {
namespace {

// Two threads add to one plain counter under the lock, each a million times:
// any increment done without exclusion loses counts (the read, add and write
// of one thread interleave with the other's).
TEST(AdaptiveMutex, ExcludesTheOtherThread) {
  AdaptiveMutex mu;
  uint64_t count = 0;
  auto add = [&] {
    for (int i = 0; i < 1'000'000; ++i) {
      std::lock_guard<AdaptiveMutex> lock(mu);
      count = count + 1;
    }
  };
  std::thread other(add);
  add();
  other.join();
  EXPECT_EQ(count, 2'000'000u);
}

TEST(AdaptiveMutex, TryLockFailsWhileHeld) {
  AdaptiveMutex mu;
  ASSERT_TRUE(mu.try_lock());
  bool other_got_it = true;
  std::thread([&] { other_got_it = mu.try_lock(); }).join();
  EXPECT_FALSE(other_got_it);
  mu.unlock();
  std::thread([&] {
    other_got_it = mu.try_lock();
    if (other_got_it) mu.unlock();
  }).join();
  EXPECT_TRUE(other_got_it);
}

}  // namespace
}  // namespace goheap2pprof
