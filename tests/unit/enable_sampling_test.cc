// enable-sampling's pieces that need no process: --rate parsing, the
// per-version table, and the read-write-re-read loop against test memory
// and a fake writer (a program that assigns the rate itself between our
// write and the re-read).
#include "app/enable_sampling.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "proc/memory_reader.h"
#include "proc/memory_writer.h"
#include "runtime/sampling_switch.h"

namespace goheap2pprof {
namespace {

constexpr uint64_t kAddr = 0x598668;

ErrorKind KindOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::kInternal;  // no error: not a kind the callers expect
}

TEST(ParseSamplingRate, BytesAndUnits) {
  EXPECT_EQ(ParseSamplingRate("1"), 1);
  EXPECT_EQ(ParseSamplingRate("524288"), 524288);
  EXPECT_EQ(ParseSamplingRate("4096B"), 4096);
  EXPECT_EQ(ParseSamplingRate("512KiB"), 524288);
  EXPECT_EQ(ParseSamplingRate("4MiB"), 4194304);
}

TEST(ParseSamplingRate, RefusesZeroNegativesAndOtherUnits) {
  for (const char* bad : {"0", "0KiB", "-1", "-512KiB", "", "KiB", "512kb", "512 KiB", "1.5MiB",
                          "512KiBx", "9223372036854775807MiB", "99999999999999999999"}) {
    EXPECT_EQ(KindOf([&] { ParseSamplingRate(bad); }), ErrorKind::kUsage) << bad;
  }
}

TEST(SamplingSwitch, ProvenFor118To127AndNothingElse) {
  for (int minor = 18; minor <= 27; ++minor) {
    ASSERT_TRUE(SamplingSwitchFor({1, minor, 3}).has_value()) << minor;
    EXPECT_EQ(SamplingSwitchFor({1, minor, 0})->writes, SamplingWrites::kRateOnly);
  }
  EXPECT_FALSE(SamplingSwitchFor({1, 17, 13}).has_value());
  EXPECT_FALSE(SamplingSwitchFor({1, 28, 0}).has_value());
  EXPECT_FALSE(SamplingSwitchFor({2, 0, 0}).has_value());
}

// Writes into a TestMemory; `owner` then plays the program, which may assign
// the rate itself before our re-read.
class FakeWriter : public WordWriter {
 public:
  explicit FakeWriter(TestMemory& mem) : mem_(mem) {}
  void WriteU64(uint64_t addr, uint64_t value) override {
    writes.push_back(value);
    mem_.PutU64(addr, value);
    if (owner) owner(writes.size());
  }
  std::vector<uint64_t> writes;
  std::function<void(size_t)> owner;

 private:
  TestMemory& mem_;
};

struct Fixture {
  Fixture(int64_t initial) {
    mem.Map(kAddr & ~uint64_t{0xfff}, std::vector<uint8_t>(0x1000));
    mem.PutU64(kAddr, static_cast<uint64_t>(initial));
  }
  TestMemory mem;
  FakeWriter writer{mem};
  std::vector<std::string> log;
  RateWrite Write(int64_t rate) {
    return WriteRate(mem, writer, kAddr, rate, [&](const std::string& l) { log.push_back(l); });
  }
};

TEST(WriteRate, WritesOnceAndVerifies) {
  Fixture f(0);
  const RateWrite w = f.Write(524288);
  EXPECT_EQ(w.old_rate, 0);
  EXPECT_EQ(w.new_rate, 524288);
  EXPECT_EQ(w.writes, 1);
  EXPECT_EQ(f.writer.writes, std::vector<uint64_t>{524288});
  ASSERT_EQ(f.log.size(), 1u);
  EXPECT_EQ(f.log[0], "write runtime.MemProfileRate at 0x598668: 0 -> 524288 (read back 524288)");
}

TEST(WriteRate, AlreadyTheRequestWritesNothing) {
  Fixture f(1);
  const RateWrite w = f.Write(1);
  EXPECT_EQ(w.writes, 0);
  EXPECT_EQ(w.old_rate, 1);
  EXPECT_TRUE(f.writer.writes.empty());
  EXPECT_TRUE(f.log.empty());
}

TEST(WriteRate, AWriteLostToTheProgramIsRetried) {
  Fixture f(0);
  // The program assigns 4096 right after our first write, then leaves it.
  f.writer.owner = [&](size_t n) {
    if (n == 1) f.mem.PutU64(kAddr, 4096);
  };
  const RateWrite w = f.Write(1);
  EXPECT_EQ(w.writes, 2);
  EXPECT_EQ(w.old_rate, 0);
  EXPECT_EQ(w.new_rate, 1);
  ASSERT_EQ(f.log.size(), 2u);
  EXPECT_NE(f.log[0].find("read back 4096: lost to the program's own write"), std::string::npos)
      << f.log[0];
  EXPECT_NE(f.log[1].find("4096 -> 1 (read back 1)"), std::string::npos) << f.log[1];
}

TEST(WriteRate, GivesUpAfterTheBound) {
  Fixture f(0);
  f.writer.owner = [&](size_t) { f.mem.PutU64(kAddr, 4096); };
  try {
    f.Write(1);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kMalformed);
    EXPECT_NE(std::string(e.what()).find("after 5 writes it read back as 4096"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(f.writer.writes.size(), static_cast<size_t>(kMaxRateWrites));
}

TEST(WriteRate, UnmappedAddressIsAnError) {
  TestMemory mem;
  FakeWriter writer(mem);
  EXPECT_EQ(KindOf([&] { WriteRate(mem, writer, kAddr, 1, [](const std::string&) {}); }),
            ErrorKind::kMalformed);
  EXPECT_TRUE(writer.writes.empty());
}

TEST(DescribeChange, SaysWhatChangedAndWhatCannotBeRecovered) {
  SamplingChange c{.pid = 42, .go_version = "go1.26.8", .address = kAddr, .write = {0, 524288, 1}};
  EXPECT_EQ(DescribeChange(c),
            "runtime.MemProfileRate 0 -> 524288 in process 42: allocations from now on are "
            "sampled; allocations made before are not recoverable");
  c.write = {524288, 0, 1};
  EXPECT_EQ(DescribeChange(c),
            "runtime.MemProfileRate 524288 -> 0 in process 42: allocations from now on are not "
            "sampled, and a capture refuses while the rate is 0; what was sampled stays in the "
            "process: turn sampling back on with --rate 524288 to capture it");
  c.write = {1, 1, 0};
  EXPECT_EQ(DescribeChange(c),
            "runtime.MemProfileRate is already 1 in process 42: nothing written");
}

}  // namespace
}  // namespace goheap2pprof
