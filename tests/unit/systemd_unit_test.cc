// The systemd unit's limits (packaging/goheap2pprof-serve.service) follow
// serve's defaults: the cgroup must hold the server and every worker at its
// limit, or the kernel kills the server before a worker reaches its own.
// Its system-call filter and its IP allow-list are there, and fit the
// listener it starts. (tests/e2e/serve_syscalls_test.sh checks the filter
// against the calls the server and its workers really make.)
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "agent/serve/server.h"
#include "agent/worker/worker.h"

namespace goheap2pprof {
namespace {

constexpr uint64_t kUnitMiB = uint64_t{1} << 20;
// What the unit allows the server itself besides its workers.
constexpr uint64_t kServerMemory = 512 * kUnitMiB;
constexpr int kThreadsPerWorker = 2;  // a capture and its gzip thread
constexpr int kServerThreads = 124;

// The [Service] settings of the unit, by name.
std::map<std::string, std::string> UnitSettings() {
  std::ifstream in(GOHEAP2PPROF_SOURCE_DIR "/packaging/goheap2pprof-serve.service");
  EXPECT_TRUE(in) << "cannot read the unit";
  std::map<std::string, std::string> settings;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line[0] == '[') continue;
    const size_t eq = line.find('=');
    if (eq != std::string::npos) settings[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return settings;
}

// "4608M" in bytes (systemd's K, M, G suffixes are powers of 1024).
uint64_t Bytes(const std::string& value) {
  std::istringstream in(value);
  uint64_t n = 0;
  char unit = 0;
  in >> n >> unit;
  switch (unit) {
    case 'K':
      return n << 10;
    case 'M':
      return n << 20;
    case 'G':
      return n << 30;
    default:
      return n;
  }
}

TEST(SystemdUnit, MemoryMaxHoldsEveryWorkerAtItsLimitAndTheServer) {
  const ServeOptions defaults;
  const uint64_t want = static_cast<uint64_t>(defaults.workers.max_concurrent) *
                            defaults.workers.limits.address_space_bytes +
                        kServerMemory;
  std::map<std::string, std::string> unit = UnitSettings();
  ASSERT_TRUE(unit.count("MemoryMax"));
  EXPECT_EQ(Bytes(unit["MemoryMax"]), want)
      << "MemoryMax=" << unit["MemoryMax"] << ": want " << want / kUnitMiB << "M ("
      << defaults.workers.max_concurrent << " workers x "
      << defaults.workers.limits.address_space_bytes / kUnitMiB << " MiB + "
      << kServerMemory / kUnitMiB << " MiB)";
}

TEST(SystemdUnit, TasksMaxFollowsTheWorkers) {
  const ServeOptions defaults;
  std::map<std::string, std::string> unit = UnitSettings();
  ASSERT_TRUE(unit.count("TasksMax"));
  EXPECT_EQ(std::stoi(unit["TasksMax"]),
            defaults.workers.max_concurrent * kThreadsPerWorker + kServerThreads);
}

TEST(SystemdUnit, DescriptorsAndOomAreSet) {
  std::map<std::string, std::string> unit = UnitSettings();
  ASSERT_TRUE(unit.count("LimitNOFILE")) << "fd exhaustion must not be the node's default";
  // More than the 1,024 connections a select()-era default would allow,
  // with room for 2 per worker.
  EXPECT_GT(std::stoi(unit["LimitNOFILE"]), 1024 + 2 * ServeOptions{}.workers.max_concurrent);
  ASSERT_TRUE(unit.count("OOMScoreAdjust"));
  EXPECT_LT(std::stoi(unit["OOMScoreAdjust"]), 0) << "the server must not be the OOM victim";
}

TEST(SystemdUnit, FiltersSystemCallsAsAServiceWithTheWorkersSeccomp) {
  std::map<std::string, std::string> unit = UnitSettings();
  ASSERT_TRUE(unit.count("SystemCallFilter")) << "the server must have a system-call filter";
  std::istringstream in(unit["SystemCallFilter"]);
  std::map<std::string, bool> named;
  for (std::string word; in >> word;) named[word] = true;
  EXPECT_TRUE(named["@system-service"]) << unit["SystemCallFilter"];
  // Each worker loads its own filter (agent/worker/sandbox.h): seccomp(2)
  // is in no set of systemd's but @known.
  EXPECT_TRUE(named["seccomp"]) << unit["SystemCallFilter"];
  EXPECT_FALSE(unit["SystemCallFilter"].starts_with("~")) << "an allow-list, not a deny-list";
}

TEST(SystemdUnit, OnlyLoopbackPeersReachTheLoopbackListener) {
  std::map<std::string, std::string> unit = UnitSettings();
  EXPECT_EQ(unit["IPAddressDeny"], "any");
  EXPECT_EQ(unit["IPAddressAllow"], "localhost");
  EXPECT_NE(unit["ExecStart"].find("--listen 127.0.0.1:"), std::string::npos)
      << "IPAddressAllow=localhost fits a loopback listener only: " << unit["ExecStart"];
}

}  // namespace
}  // namespace goheap2pprof
