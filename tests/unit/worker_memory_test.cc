// The capture workers' address-space limit in the memory cgroup the server
// runs in (WorkerMemoryInCgroup, agent/worker/pool.h): a share of the room
// the cgroup has left, so that a large capture is refused by the worker's own
// limit before the kernel's OOM killer ends it.
#include <gtest/gtest.h>

#include <optional>

#include "agent/worker/pool.h"

namespace goheap2pprof {
namespace {

MemoryReading Cgroup(std::optional<uint64_t> limit, std::optional<uint64_t> usage) {
  MemoryReading r;
  r.limit = limit;
  r.usage = usage;
  return r;
}

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(WorkerMemoryInCgroup, SharesTheCgroupsRoomAmongTheWorkers) {
  // A 256 MiB cgroup holding a 16 MiB server: two workers get 120 MiB each,
  // not the 2 GiB default that the OOM killer would end first.
  EXPECT_EQ(WorkerMemoryInCgroup(2 * kGiB, 2, Cgroup(256 * kMiB, 16 * kMiB)), 120 * kMiB);
  EXPECT_EQ(WorkerMemoryInCgroup(2 * kGiB, 1, Cgroup(256 * kMiB, 16 * kMiB)), 240 * kMiB);
}

TEST(WorkerMemoryInCgroup, LeavesTheFlagAsGivenWhenTheCgroupHasRoom) {
  EXPECT_EQ(WorkerMemoryInCgroup(2 * kGiB, 2, Cgroup(64 * kGiB, kGiB)), 2 * kGiB);
  EXPECT_EQ(WorkerMemoryInCgroup(100 * kMiB, 2, Cgroup(kGiB, 0)), 100 * kMiB);
  EXPECT_EQ(WorkerMemoryInCgroup(2 * kGiB, 2, Cgroup(std::nullopt, 16 * kMiB)), 2 * kGiB);
  EXPECT_EQ(WorkerMemoryInCgroup(2 * kGiB, 2, MemoryReading{}), 2 * kGiB);
}

TEST(WorkerMemoryInCgroup, AFullCgroupStillLetsAWorkerStart) {
  EXPECT_EQ(WorkerMemoryInCgroup(2 * kGiB, 4, Cgroup(128 * kMiB, 200 * kMiB)),
            kMinWorkerAddressSpace);
}

}  // namespace
}  // namespace goheap2pprof
