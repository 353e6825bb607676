// The consistent read of memstats.heapStats (memstats/memstats_reader.h)
// against test memory laid out as Go's runtime lays it out: each rejection
// rule of the protocol (go-memstats-facts.md, section 5) is shown to matter,
// by a torn state that would be accepted, with wrong numbers or a wrong
// verdict, without it.
#include "memstats/memstats_reader.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "proc/memory_reader.h"
#include "runtime/memstats_layout.h"
#include "runtime/runtime_traits.h"

namespace goheap2pprof {
namespace {

constexpr uint64_t kMemstats = 0x100000;
constexpr uint64_t kPacer = 0x200000;
constexpr uint64_t kMheap = 0x300000;
constexpr uint64_t kAllp = 0x400000;
constexpr uint64_t kAllpArray = 0x410000;
constexpr uint64_t kP0 = 0x500000;  // P i at kP0 + i * kPStride
constexpr uint64_t kPStride = 0x10000;
constexpr uint64_t kMisc = 0x600000;  // allglen, allm, sched, ...
constexpr int kProcs = 2;

void PutU32(std::vector<uint8_t>& b, uint64_t off, uint32_t v) { std::memcpy(&b[off], &v, 4); }
void PutU64(std::vector<uint8_t>& b, uint64_t off, uint64_t v) { std::memcpy(&b[off], &v, 8); }

// A quiet target: every P's statsSeq even, gen 0, counts in slots 0 and 2
// (the writers' and the destination slot), slot 1 (the merge source) zero.
class FakeRuntime {
 public:
  explicit FakeRuntime(GoVersion version)
      : traits_(TraitsForVersion(version)), layout_(MemstatsLayoutTable(traits_, 62)) {
    std::vector<uint8_t> ms(16384);
    PutU64(ms, Slot(0) + layout_.d_tiny_alloc_count, 5);
    PutU64(ms, Slot(2) + layout_.d_tiny_alloc_count, 7);
    PutU64(ms, Slot(0) + layout_.d_small_alloc_count + 3 * 8, 10);
    mem_.Map(kMemstats, ms);
    mem_.Map(kPacer, std::vector<uint8_t>(512));
    mem_.Map(kMheap, std::vector<uint8_t>(128 * 1024));
    std::vector<uint8_t> allp(24), array(8 * kProcs);
    PutU64(allp, 0, kAllpArray);
    PutU64(allp, 8, kProcs);
    PutU64(allp, 16, kProcs);
    mem_.Map(kAllp, allp);
    for (int i = 0; i < kProcs; ++i) {
      PutU64(array, 8 * i, kP0 + i * kPStride);
      std::vector<uint8_t> p(kPStride);
      PutU32(p, layout_.p_stats_seq, 2);
      mem_.Map(kP0 + i * kPStride, p);
    }
    mem_.Map(kAllpArray, array);
    mem_.Map(kMisc, std::vector<uint8_t>(0x10000));
    at_ = {.memstats = kMemstats,
           .gc_controller = kPacer,
           .mheap = kMheap,
           .allp = kAllp,
           .allglen = kMisc,
           .allm = kMisc + 8,
           .sched = kMisc + 0x1000,
           .gomaxprocs = kMisc + 16,
           .emptymspan = kMisc + 0x2000,
           .starting_stack_size = kMisc + 24,
           .gc_cpu_limiter = kMisc + 0x3000};
  }

  uint64_t Slot(int i) const { return layout_.ms_heap_stats + i * layout_.delta_size; }
  uint64_t SlotAddr(int i) const { return kMemstats + Slot(i); }
  uint64_t GenAddr() const { return kMemstats + layout_.ms_heap_stats + layout_.chs_gen; }
  uint64_t LockAddr() const { return kMemstats + layout_.ms_heap_stats + layout_.chs_no_p_lock; }
  uint64_t TinyAddr(int slot) const { return SlotAddr(slot) + layout_.d_tiny_alloc_count; }
  // statsSeq is a uint32 at an offset that is 4 mod 8 in the versions
  // tested: written through the aligned word that holds it.
  void SetSeq(int p, uint32_t seq) {
    const uint64_t addr = kP0 + p * kPStride + layout_.p_stats_seq;
    const uint64_t word = addr & ~uint64_t{7};
    mem_.PutU64(word, addr == word ? seq : uint64_t{seq} << 32);
  }

  ConsistentHeapStats Read(int max_attempts = 50) {
    return ReadConsistentHeapStats(mem_, at_, layout_, traits_, {.max_attempts = max_attempts});
  }

  TestMemory mem_;
  RuntimeTraits traits_;
  MemstatsLayout layout_;
  MemstatsAddresses at_;
};

std::string ErrorOf(FakeRuntime& rt) {
  try {
    rt.Read(5);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(MemstatsReaderTest, QuietTargetIsReadAtOnceAndSummedOverTheSlots) {
  FakeRuntime rt({1, 26, 8});
  ASSERT_EQ(rt.layout_.p_stats_seq % 8, 4u);  // SetSeq's assumption
  const ConsistentHeapStats s = rt.Read();
  EXPECT_EQ(s.attempts, 1);
  EXPECT_EQ(s.sum.tiny_alloc_count, 12u);
  EXPECT_EQ(s.sum.small_alloc_count[3], 10u);
  EXPECT_EQ(s.procs, 2u);
}

TEST(MemstatsReaderTest, OddStatsSeqIsNeverAccepted) {
  FakeRuntime rt({1, 26, 8});
  rt.SetSeq(1, 3);  // a writer with a P is mid-update, for ever
  const std::string error = ErrorOf(rt);
  EXPECT_NE(error.find("in 5 attempts"), std::string::npos) << error;
  EXPECT_NE(error.find("statsSeq was odd"), std::string::npos) << error;
}

// A core file cannot change: its one copy is kept, with the check it failed
// said, where a live target's would be retried and then refused.
TEST(MemstatsReaderTest, SnapshotMidUpdateIsKeptOnceWithTheReason) {
  FakeRuntime rt({1, 26, 8});
  rt.SetSeq(1, 3);
  const ConsistentHeapStats s = ReadConsistentHeapStats(rt.mem_, rt.at_, rt.layout_, rt.traits_,
                                                        {.max_attempts = 5, .snapshot = true});
  EXPECT_EQ(s.attempts, 1);
  EXPECT_NE(s.torn.find("statsSeq was odd"), std::string::npos) << s.torn;
  EXPECT_EQ(s.sum.tiny_alloc_count, 12u);
}

TEST(MemstatsReaderTest, QuietSnapshotIsNotTorn) {
  FakeRuntime rt({1, 26, 8});
  const ConsistentHeapStats s =
      ReadConsistentHeapStats(rt.mem_, rt.at_, rt.layout_, rt.traits_, {.snapshot = true});
  EXPECT_EQ(s.attempts, 1);
  EXPECT_EQ(s.torn, "");
}

TEST(MemstatsReaderTest, StatsSeqThatMovedDuringTheCopyIsRetried) {
  FakeRuntime rt({1, 26, 8});
  bool done = false;
  rt.mem_.SetReadHook([&](uint64_t addr, uint64_t) {
    if (!done && addr == rt.SlotAddr(0)) {
      // A writer with a P updated slot 0 completely during the copy.
      done = true;
      rt.SetSeq(0, 4);
      rt.mem_.PutU64(rt.TinyAddr(0), 6);
    }
  });
  const ConsistentHeapStats s = rt.Read();
  EXPECT_EQ(s.attempts, 2);
  EXPECT_EQ(s.sum.tiny_alloc_count, 13u);
}

TEST(MemstatsReaderTest, GenChangedBetweenTheSlotsIsRetried) {
  FakeRuntime rt({1, 26, 8});
  bool done = false;
  rt.mem_.SetReadHook([&](uint64_t addr, uint64_t) {
    if (!done && addr == rt.SlotAddr(0)) {
      // The runtime's reader rotated: gen 1 now, its merge of slot 2 into
      // slot 0 (the new destination) done before our copy of slot 2.
      done = true;
      rt.mem_.PutU64(rt.GenAddr(), 1);
      rt.mem_.PutU64(rt.TinyAddr(0), 12);
      rt.mem_.PutU64(rt.TinyAddr(2), 0);
    }
  });
  const ConsistentHeapStats s = rt.Read();
  EXPECT_EQ(s.attempts, 2);
  EXPECT_EQ(s.gen, 1u);
  EXPECT_EQ(s.sum.tiny_alloc_count, 12u);
}

TEST(MemstatsReaderTest, CopiesThatDifferAreRetried) {
  FakeRuntime rt({1, 26, 8});
  int reads_of_slot0 = 0;
  rt.mem_.SetReadHook([&](uint64_t addr, uint64_t) {
    // A writer without a P (noPLock taken and released between our two
    // copies, statsSeq untouched) adds one tiny allocation.
    if (addr == rt.SlotAddr(0) && ++reads_of_slot0 == 2) rt.mem_.PutU64(rt.TinyAddr(0), 6);
  });
  const ConsistentHeapStats s = rt.Read();
  EXPECT_EQ(s.attempts, 2);
  EXPECT_EQ(s.sum.tiny_alloc_count, 13u);
}

TEST(MemstatsReaderTest, NonZeroMergeSourceIsNeverAccepted) {
  FakeRuntime rt({1, 26, 8});
  // gen 0: slot 1 is the merge source; a pending merge left it non-zero
  // (its history also counted in the destination, or about to be).
  rt.mem_.PutU64(rt.TinyAddr(1), 7);
  const std::string error = ErrorOf(rt);
  EXPECT_NE(error.find("merge-source slot was not zero"), std::string::npos) << error;
}

TEST(MemstatsReaderTest, LockedNoPLockIsNeverAccepted) {
  FakeRuntime spinbit({1, 26, 8});
  spinbit.mem_.PutU64(spinbit.LockAddr(), 1);
  EXPECT_NE(ErrorOf(spinbit).find("noPLock was held"), std::string::npos);
  // The spinbit mutex keeps other state in the key's upper bits: unlocked.
  FakeRuntime waiters({1, 26, 8});
  waiters.mem_.PutU64(waiters.LockAddr(), 0x1000);
  EXPECT_EQ(waiters.Read().attempts, 1);
  // The futex mutex (up to 1.23) is held whenever its key is not zero.
  FakeRuntime futex({1, 23, 4});
  futex.mem_.PutU64(futex.LockAddr(), 2);
  EXPECT_NE(ErrorOf(futex).find("noPLock was held"), std::string::npos);
}

TEST(MemstatsReaderTest, ImpossibleTargetValuesAreRefused) {
  FakeRuntime rt({1, 26, 8});
  rt.mem_.PutU64(rt.GenAddr(), 3);
  EXPECT_NE(ErrorOf(rt).find("heapStats.gen is 3"), std::string::npos);
  FakeRuntime many({1, 26, 8});
  many.mem_.PutU64(kAllp + 8, uint64_t{1} << 40);
  EXPECT_NE(ErrorOf(many).find("runtime.allp has 1099511627776 Ps"), std::string::npos);
}

TEST(MemstatsLayoutTableTest, EveryKnownVersionHasEveryFieldItReads) {
  for (int minor = 18; minor <= NewestVerifiedVersion().minor; ++minor) {
    for (uint16_t machine : {uint16_t{EM_X86_64}, uint16_t{EM_AARCH64}}) {
      const RuntimeTraits traits = TraitsForVersion({1, minor, 0});
      const MemstatsLayoutVerdict v = JudgeMemstatsLayout("x", traits, machine, nullptr);
      EXPECT_FALSE(v.from_dwarf);
      EXPECT_TRUE(MissingMemstatsFields(v.layout, traits).empty()) << "1." << minor;
    }
  }
}

TEST(MemstatsLayoutTableTest, NewerGoWithoutDwarfIsRefused) {
  const RuntimeTraits traits = TraitsForVersion({1, NewestVerifiedVersion().minor + 1, 0});
  try {
    JudgeMemstatsLayout("app", traits, EM_X86_64, nullptr);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("no DWARF"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace goheap2pprof
