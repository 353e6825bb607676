// The goroutine reader (goroutine/) and runtime.g's per-version layout
// (runtime/goroutine_layout.h) on test memory and a hand-built pclntab: the
// unwinding into logical frames, the filters, labels, and what a goroutine
// that moves while it is read costs (a retry, then a drop).
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "base/error.h"
#include "goroutine/goroutine_reader.h"
#include "goroutine/labels.h"
#include "hand_pclntab.h"
#include "pprof/goroutine_dump.h"
#include "pprof/goroutine_profile.h"
#include "pprof/goroutine_report.h"
#include "proc/memory_reader.h"
#include "runtime/goroutine_layout.h"
#include "runtime/runtime_traits.h"
#include "symbolize/symbolizer.h"

namespace goheap2pprof {
namespace {

using testing_pclntab::BuildGo120Table;
using testing_pclntab::HandFunc;
using testing_pclntab::HandInline;
using testing_pclntab::HandTable;

constexpr uint64_t kText = 0x400000;
constexpr uint64_t kGopark = kText, kWorker = kText + 0x100, kGoexit = kText + 0x200,
                   kBgsweep = kText + 0x300, kAsyncPreempt = kText + 0x400;
constexpr uint64_t kAllglen = 0x10000, kAllgptr = 0x10008, kArray = 0x20000;
constexpr uint64_t kStackLo = 0x40000, kStackHi = 0x41000, kSp = 0x40f00;
constexpr uint64_t kLabels = 0x50000;
constexpr uint32_t kWaiting = 4, kRunning = 2, kDead = 6, kCopystack = 8;

HandTable Table() {
  return BuildGo120Table({
      {.name = "runtime.gopark", .frame_size = 0x18},
      {.name = "main.worker",
       .inlines = {{.name = "main.helper", .begin = 0x40, .end = 0x50, .parent_pc = 0x30}},
       .frame_size = 0x28,
       .prologue = 0x10},
      {.name = "runtime.goexit", .frame_size = 0, .flag = 1},  // FuncFlagTopFrame
      {.name = "runtime.bgsweep", .frame_size = 0x8},
      {.name = "runtime.asyncPreempt", .frame_size = 0x10},
  });
}

uint64_t G(int i) { return 0x30000 + static_cast<uint64_t>(i) * 0x200; }

class GoroutineReaderTest : public ::testing::Test {
 protected:
  GoroutineReaderTest()
      : table_(Table()),
        tab_(table_.table, kText, table_.gofunc),
        traits_(TraitsForVersion({1, 26, 8})) {
    layout_ = GoroutineLayoutForVersion(traits_.version);
    // A parked worker's stack: gopark's frame, then main.worker's (inside
    // its inlined call of main.helper), then goexit.
    std::vector<uint8_t> stack(kStackHi - kStackLo, 0);
    Put(stack, kSp + 0x18 - kStackLo, kWorker + 0x45);
    Put(stack, kSp + 0x48 - kStackLo, kGoexit + 1);
    mem_.Map(kStackLo, stack);
    // Labels (1.24+): {ptr, len} -> [{key, value}].
    std::vector<uint8_t> labels(0x300, 0);
    Put(labels, 0, kLabels + 0x100);
    Put(labels, 8, 1);
    Put(labels, 0x100, kLabels + 0x200);
    Put(labels, 0x108, 3);
    Put(labels, 0x110, kLabels + 0x210);
    Put(labels, 0x118, 1);
    std::memcpy(&labels[0x200], "job", 3);
    labels[0x210] = '7';
    mem_.Map(kLabels, labels);
  }

  static void Put(std::vector<uint8_t>& b, uint64_t off, uint64_t v) {
    std::memcpy(&b[off], &v, 8);
  }

  void AddG(uint32_t status, uint64_t goid, uint64_t startpc, uint64_t labels = 0) {
    std::vector<uint8_t> g(0x200, 0);
    Put(g, layout_.stack_lo, kStackLo);
    Put(g, layout_.stack_hi, kStackHi);
    Put(g, layout_.sched_sp, kSp);
    Put(g, layout_.sched_pc, kGopark + 0x20);
    std::memcpy(&g[layout_.atomicstatus], &status, 4);
    Put(g, layout_.goid, goid);
    Put(g, layout_.startpc, startpc);
    Put(g, layout_.labels, labels);
    mem_.Map(G(static_cast<int>(gs_.size())), g);
    gs_.push_back(G(static_cast<int>(gs_.size())));
  }

  GoroutineSnapshot Read(GoroutineLimits limits = {}) {
    std::vector<uint8_t> vars(16, 0);
    Put(vars, 0, gs_.size());
    Put(vars, 8, kArray);
    mem_.Map(kAllglen, vars);
    std::vector<uint8_t> array(gs_.size() * 8);
    std::memcpy(array.data(), gs_.data(), array.size());
    mem_.Map(kArray, array);
    GoroutineContext ctx;
    ctx.allglen = kAllglen;
    ctx.allgptr = kAllgptr;
    ctx.pclntab = &tab_;
    ctx.layout = layout_;
    ctx.func_ids = traits_.func_ids;
    ctx.profile_depth = 128;
    ctx.async_preempt_traps = async_preempt_traps_;
    ctx.keep_running = keep_running_;
    ctx.call_arch = call_arch_;
    return ReadGoroutines(mem_, ctx, limits);
  }

  HandTable table_;
  Pclntab tab_;
  RuntimeTraits traits_;
  GoroutineLayout layout_;
  TestMemory mem_;
  std::vector<uint64_t> gs_;
  bool async_preempt_traps_ = true;
  bool keep_running_ = false;
  CallArch call_arch_ = CallArch::kPushesReturn;
};

TEST_F(GoroutineReaderTest, UnwindsParkedGoroutineIntoLogicalFrames) {
  AddG(kWaiting, 17, kWorker, kLabels);
  const GoroutineSnapshot s = Read();
  ASSERT_EQ(s.goroutines.size(), 1u);
  const Goroutine& g = s.goroutines[0];
  EXPECT_EQ(g.goid, 17u);
  // gopark's return address; main.helper (inlined) then main.worker at its
  // call site (entry + parentPc + 1); goexit.
  EXPECT_EQ(g.pcs,
            (std::vector<uint64_t>{kGopark + 0x20, kWorker + 0x45, kWorker + 0x31, kGoexit + 1}));
  EXPECT_EQ(g.labels, (Labels{{"job", "7"}}));
  EXPECT_EQ(s.stats.retried, 0u);
  EXPECT_EQ(s.stats.dropped, 0u);
}

TEST_F(GoroutineReaderTest, FrameInterruptedByAsyncPreemptionIsATrapFrame) {
  // Preempted inside main.worker at +0x45 (in its inlined main.helper):
  // asyncPreempt's frame holds the interrupted PC, not a return address.
  AddG(kWaiting, 12, kWorker);
  const uint64_t sp = kSp - 0x100;
  mem_.PutU64(G(0) + layout_.sched_sp, sp);
  mem_.PutU64(G(0) + layout_.sched_pc, kAsyncPreempt + 0x8);
  mem_.PutU64(sp + 0x10, kWorker + 0x45);
  mem_.PutU64(sp + 0x18 + 0x28, kGoexit + 1);
  // Go 1.21+: symbolized at the PC itself, listed as PC+1.
  GoroutineSnapshot s = Read();
  ASSERT_EQ(s.goroutines.size(), 1u);
  EXPECT_EQ(s.goroutines[0].pcs, (std::vector<uint64_t>{kAsyncPreempt + 0x8, kWorker + 0x46,
                                                        kWorker + 0x31, kGoexit + 1}));
  // Go 1.18-1.20: only sigpanic makes a trap; the PC is taken as a return address.
  async_preempt_traps_ = false;
  s = Read();
  ASSERT_EQ(s.goroutines.size(), 1u);
  EXPECT_EQ(s.goroutines[0].pcs, (std::vector<uint64_t>{kAsyncPreempt + 0x8, kWorker + 0x45,
                                                        kWorker + 0x31, kGoexit + 1}));
}

// arm64 (a link register): the saved registers of goroutine 0 and the
// words of its stack, from sp up.
class ArmUnwindTest : public GoroutineReaderTest {
 protected:
  static constexpr uint64_t kArmSp = kSp - 0x100;
  ArmUnwindTest() { call_arch_ = CallArch::kLinkRegister; }
  void Park(uint64_t pc, uint64_t lr, std::initializer_list<std::pair<uint64_t, uint64_t>> words) {
    AddG(kWaiting, 21, kWorker);
    mem_.PutU64(G(0) + layout_.sched_sp, kArmSp);
    mem_.PutU64(G(0) + layout_.sched_pc, pc);
    mem_.PutU64(G(0) + layout_.sched_lr, lr);
    for (auto [off, v] : words) mem_.PutU64(kArmSp + off, v);
  }
};

TEST_F(ArmUnwindTest, EachFrameSavedItsReturnAddressAtItsOwnSp) {
  // gopark's frame (0x18) holds main.worker's return address at 0(SP),
  // main.worker's (0x28) goexit's: no return address above a frame as on
  // amd64. gopark has opened its frame, so a stale gobuf.lr is ignored.
  Park(kGopark + 0x20, kBgsweep + 0x4, {{0, kWorker + 0x45}, {0x18, kGoexit + 4}});
  const GoroutineSnapshot s = Read();
  ASSERT_EQ(s.goroutines.size(), 1u);
  EXPECT_EQ(s.goroutines[0].pcs,
            (std::vector<uint64_t>{kGopark + 0x20, kWorker + 0x45, kWorker + 0x31, kGoexit + 4}));
  EXPECT_EQ(s.stats.truncated, 0u);
}

TEST_F(ArmUnwindTest, FrameNotOpenedYetReturnsToTheSavedLinkRegister) {
  // A goroutine that has not run yet (gostartcall): PC at its function's
  // entry, where SP delta is 0, and goexit in gobuf.lr.
  Park(kWorker, kGoexit + 4, {});
  const GoroutineSnapshot s = Read();
  ASSERT_EQ(s.goroutines.size(), 1u);
  EXPECT_EQ(s.goroutines[0].pcs, (std::vector<uint64_t>{kWorker + 1, kGoexit + 4}));
}

TEST_F(ArmUnwindTest, SystemCallStartsFromSyscallPcWithoutTheSavedLinkRegister) {
  // In a system call the walk starts at syscallpc/syscallsp, with no LR
  // (the runtime's lr0 = 0): the return address is the word at SP even
  // where the SP delta is 0, whatever gobuf.lr holds.
  Park(kGopark + 0x20, kBgsweep + 4, {{0, kGoexit + 4}});
  mem_.PutU64(G(0) + layout_.syscallsp, kArmSp);
  mem_.PutU64(G(0) + layout_.syscallpc, kWorker + 0x8);
  const GoroutineSnapshot s = Read();
  ASSERT_EQ(s.goroutines.size(), 1u);
  EXPECT_EQ(s.goroutines[0].pcs, (std::vector<uint64_t>{kWorker + 0x8, kGoexit + 4}));
}

TEST_F(ArmUnwindTest, RereadsGoroutineWhoseLinkRegisterChanged) {
  // Unwound from gobuf.lr, then found with another one: read again.
  Park(kWorker, kGoexit + 4, {});
  int reads = 0;
  mem_.SetReadHook([&](uint64_t addr, uint64_t) {
    if (addr == G(0) && ++reads == 2) mem_.PutU64(G(0) + layout_.sched_lr, kGoexit + 8);
  });
  const GoroutineSnapshot s = Read();
  ASSERT_EQ(s.goroutines.size(), 1u);
  EXPECT_EQ(s.goroutines[0].pcs, (std::vector<uint64_t>{kWorker + 1, kGoexit + 8}));
  EXPECT_EQ(s.stats.retried, 1u);
}

TEST_F(ArmUnwindTest, AsyncPreemptionSkipsTheLinkRegisterThatTheSignalPushed) {
  // asyncPreempt's frame (0x10), then the 16 bytes where the signal handler
  // pushed the interrupted function's LR, then main.worker's frame.
  Park(kAsyncPreempt + 0x8, 0, {{0, kWorker + 0x45}, {0x10, kBgsweep + 4}, {0x20, kGoexit + 4}});
  GoroutineSnapshot s = Read();
  ASSERT_EQ(s.goroutines.size(), 1u);
  EXPECT_EQ(s.goroutines[0].pcs, (std::vector<uint64_t>{kAsyncPreempt + 0x8, kWorker + 0x46,
                                                        kWorker + 0x31, kGoexit + 4}));
  // Interrupted in main.worker's prologue: the pushed word is its LR.
  mem_.PutU64(kArmSp, kWorker + 0x8);
  mem_.PutU64(kArmSp + 0x10, kGoexit + 4);
  mem_.PutU64(kArmSp + 0x20, kBgsweep + 4);
  s = Read();
  ASSERT_EQ(s.goroutines.size(), 1u);
  EXPECT_EQ(s.goroutines[0].pcs,
            (std::vector<uint64_t>{kAsyncPreempt + 0x8, kWorker + 0x9, kGoexit + 4}));
}

TEST_F(ArmUnwindTest, FramelessFrameThatReturnsToItselfIsDropped) {
  // main.worker interrupted in its prologue whose pushed LR is its own PC:
  // the runtime's "traceback stuck", not 128 copies of one frame.
  Park(kAsyncPreempt + 0x8, 0, {{0, kWorker + 0x8}, {0x10, kWorker + 0x8}, {0x20, kWorker + 0x8}});
  const GoroutineSnapshot s = Read({.max_attempts = 1});
  EXPECT_TRUE(s.goroutines.empty());
  EXPECT_EQ(s.stats.dropped, 1u);
}

TEST_F(GoroutineReaderTest, LeavesOutDeadSystemAndRunningGoroutines) {
  AddG(kDead, 1, kWorker);
  AddG(kWaiting, 2, kBgsweep);  // started in runtime.*: a system goroutine
  AddG(kRunning, 3, kWorker);   // on a CPU: its saved registers are stale
  AddG(kWaiting, 4, kWorker);
  const GoroutineSnapshot s = Read();
  ASSERT_EQ(s.goroutines.size(), 1u);
  EXPECT_EQ(s.goroutines[0].goid, 4u);
  EXPECT_EQ(s.stats.allglen, 4u);
  EXPECT_EQ(s.stats.dead, 1u);
  EXPECT_EQ(s.stats.system, 1u);
  EXPECT_EQ(s.stats.running, 1u);
}

TEST_F(GoroutineReaderTest, KeepsRunningGoroutinesForTheDumpInAllgsOrder) {
  keep_running_ = true;
  AddG(kWaiting, 4, kWorker);
  AddG(kRunning, 3, kWorker);
  AddG(kWaiting, 5, kWorker);
  const GoroutineSnapshot s = Read();
  ASSERT_EQ(s.goroutines.size(), 3u);
  EXPECT_EQ(s.goroutines[1].goid, 3u);
  EXPECT_TRUE(s.goroutines[1].on_cpu);
  EXPECT_TRUE(s.goroutines[1].pcs.empty());
  EXPECT_FALSE(s.goroutines[0].on_cpu);
  EXPECT_EQ(s.goroutines[2].allgs_index, 2u);
}

// The debug=2 dump over the hand-built pclntab (pprof/goroutine_dump.h).
class GoroutineDumpTest : public GoroutineReaderTest {
 protected:
  std::string Dump(const Goroutine& g, GoVersion v = {1, 26, 8}, bool traceback_labels = false) {
    const RuntimeTraits traits = TraitsForVersion(v);
    Symbolizer sym(tab_, traits);
    const GoroutineDumpInput in{.pclntab = &tab_,
                                .symbolizer = &sym,
                                .version = v,
                                .bias = 0,
                                .wait_reasons = {"", "GC assist marking", "IO wait"},
                                .now = int64_t{10} * 60'000'000'000,
                                .traceback_labels = traceback_labels};
    return GoroutineDumpText(in, std::span<const Goroutine>(&g, 1));
  }

  // Goroutine 17, in "IO wait" for 9 minutes at Dump's clock.
  static Goroutine InIoWait() {
    Goroutine g;
    g.goid = 17;
    g.status = kWaiting;
    g.wait_reason = 2;
    g.wait_since = 60'000'000'000;
    return g;
  }
};

TEST_F(GoroutineDumpTest, HeaderFramesAndCreator) {
  Goroutine g = InIoWait();
  g.gopc = kWorker + 0x10;
  g.parent_goid = 3;
  g.pcs = {kGopark + 0x20, kWorker + 0x45, kWorker + 0x31, kGoexit + 1};
  g.locked_to_thread = true;
  const std::string d = Dump(g);
  EXPECT_TRUE(
      d.starts_with("goroutine 17 [IO wait, 9 minutes, locked to thread]:\nmain.helper(...)\n\t"))
      << d;
  // runtime.gopark and runtime.goexit are hidden; the inlined level has no
  // offset; the physical one counts from its return address (+0x45), not
  // from the inline parent's PC the list holds for it.
  EXPECT_EQ(d.find("runtime."), std::string::npos) << d;
  EXPECT_NE(d.find("\nmain.worker(...)\n\t"), std::string::npos) << d;
  EXPECT_NE(d.find(" +0x45\ncreated by main.worker in goroutine 3\n\t"), std::string::npos) << d;
  EXPECT_TRUE(d.ends_with(" +0x10\n")) << d;
  // Before Go 1.21: no "in goroutine".
  EXPECT_NE(Dump(g, {1, 20, 14}).find("created by main.worker\n"), std::string::npos);
}

// GODEBUG tracebacklabels=1 (Go 1.26+): the pprof labels in the header,
// inside the brackets and always quoted in 1.26, after them and quoted only
// where needed from 1.27 (runtime.goroutineheader, printquoted).
TEST_F(GoroutineDumpTest, HeaderLabelsAsTheVersionPrintsThem) {
  Goroutine g = InIoWait();
  g.labels = {{"job", "7"}, {"k y", "a\"b\n"}, {"t", "\xc3\xa9\x01\xff"}};
  EXPECT_TRUE(Dump(g, {1, 26, 8}, true)
                  .starts_with("goroutine 17 [IO wait, 9 minutes labels:{\"job\": \"7\", "
                               "\"k y\": \"a\\\"b\\n\", \"t\": \"\\u00e9\\x01\\ufffd\"}]:\n"))
      << Dump(g, {1, 26, 8}, true);
  EXPECT_TRUE(Dump(g, {1, 27, 3}, true)
                  .starts_with("goroutine 17 [IO wait, 9 minutes] {job: 7, \"k y\": \"a\\\"b\\n\", "
                               "t: \"\\u00e9\\x01\\xff\"}:\n"))
      << Dump(g, {1, 27, 3}, true);
  // tracebacklabels=0, and no labels at all: the plain header.
  EXPECT_TRUE(Dump(g, {1, 27, 3}).starts_with("goroutine 17 [IO wait, 9 minutes]:\n"));
  g.labels.clear();
  EXPECT_TRUE(Dump(g, {1, 27, 3}, true).starts_with("goroutine 17 [IO wait, 9 minutes]:\n"));
}

TEST_F(GoroutineDumpTest, StatusWithoutWaitReasonOrClock) {
  Goroutine g;
  g.goid = 9;
  g.status = kWaiting;
  g.wait_reason = 40;
  EXPECT_TRUE(Dump(g).starts_with("goroutine 9 [unknown wait reason]:\n"));
  g.status = 10;  // _Gleaked, 1.26+
  EXPECT_TRUE(Dump(g).starts_with("goroutine 9 [unknown wait reason (leaked)]:\n"));
  g.status = 1;
  EXPECT_TRUE(Dump(g).starts_with("goroutine 9 [runnable]:\n"));
}

TEST_F(GoroutineDumpTest, RunningGoroutineHasOnlyItsCreator) {
  Goroutine g;
  g.goid = 5;
  g.status = kRunning;
  g.gopc = kWorker + 0x10;
  g.parent_goid = 1;
  g.on_cpu = true;
  const std::string d = Dump(g);
  EXPECT_TRUE(
      d.starts_with("goroutine 5 [running]:\n\tgoroutine running on other thread; "
                    "stack unavailable"))
      << d;
  EXPECT_NE(d.find("\ncreated by main.worker in goroutine 1\n"), std::string::npos) << d;
}

TEST_F(GoroutineDumpTest, FrameLimitsOfEachVersion) {
  Goroutine g;
  g.goid = 2;
  g.status = kWaiting;
  g.pcs.assign(130, kWorker + 0x20);
  // 1.21+: 50 innermost, the count, 50 outermost.
  std::string d = Dump(g);
  EXPECT_NE(d.find("\n...30 frames elided...\nmain.worker(...)"), std::string::npos) << d;
  size_t frames = 0;
  for (size_t at = d.find("main.worker("); at != std::string::npos;
       at = d.find("main.worker(", at + 1)) {
    ++frames;
  }
  EXPECT_EQ(frames, 100u);
  // Up to 1.20: 100 physical frames, and the note when all were printed.
  d = Dump(g, {1, 20, 14});
  EXPECT_TRUE(d.ends_with("...additional frames elided...\n")) << d;
  g.pcs.insert(g.pcs.begin(), kGopark + 0x20);  // a hidden frame counts too
  EXPECT_EQ(Dump(g, {1, 20, 14}).find("elided"), std::string::npos);
}

TEST_F(GoroutineDumpTest, TopTableAndJsonCountSitesAndStates) {
  const RuntimeTraits traits = TraitsForVersion({1, 26, 8});
  Symbolizer sym(tab_, traits);
  const GoroutineDumpInput in{.pclntab = &tab_,
                              .symbolizer = &sym,
                              .version = {1, 26, 8},
                              .bias = 0,
                              .wait_reasons = {"", "GC assist marking", "IO wait"},
                              .now = int64_t{10} * 60'000'000'000};
  GoroutineSnapshot s;
  for (uint64_t id : {4, 5, 6}) {
    Goroutine g;
    g.goid = id;
    g.status = kWaiting;
    g.wait_reason = 2;
    g.gopc = kWorker + 0x10;
    g.wait_since = id == 5 ? 60'000'000'000 : 0;  // 9 minutes
    s.goroutines.push_back(g);
  }
  s.goroutines[2].wait_reason = 1;
  const std::string top = GoroutineTopText(in, s);
  // Two rows: 2 in IO wait (the oldest 9 minutes), then 1 GC assist marking.
  const size_t io = top.find("         2  66.67%    9 min  IO wait ");
  const size_t gc = top.find("         1  33.33%    0 min  GC assist marking ");
  EXPECT_NE(io, std::string::npos) << top;
  EXPECT_NE(gc, std::string::npos) << top;
  EXPECT_LT(io, gc) << top;
  const std::string json = GoroutineJson(in, s);
  EXPECT_NE(json.find("\"goroutines\": 3"), std::string::npos) << json;
  EXPECT_NE(json.find("\"oldest_wait_minutes\": 9"), std::string::npos) << json;
  EXPECT_NE(json.find("\"function\": \"main.worker\""), std::string::npos) << json;
}

// The goroutine profile's string table holds only strings that a field
// refers to: no heap sample types (alloc_objects, inuse_space, bytes) left
// over from the builder it shares with the heap profile.
TEST_F(GoroutineReaderTest, GoroutineProfileStringsAreAllReferenced) {
  Goroutine labeled;
  labeled.pcs = {kGopark + 0x20, kWorker + 0x45, kGoexit + 1};
  labeled.labels = {{"job", "7"}};
  Goroutine plain = labeled;
  plain.labels.clear();
  const std::vector<Goroutine> gs = {labeled, plain, plain};
  for (GoVersion v : {GoVersion{1, 26, 8}, GoVersion{1, 27, 3}}) {
    const RuntimeTraits traits = TraitsForVersion(v);
    Symbolizer sym(tab_, traits);
    const std::vector<GoroutineStack> stacks = CountGoroutineStacks(gs);
    const std::string comments[] = {"retried 0, dropped 0"};
    std::vector<ProfileMapping> mappings(1);
    mappings[0] = {.start = kText, .limit = kText + 0x1000, .file = "/bin/t", .build_id = "b1"};
    std::string wire;
    ASSERT_TRUE(BuildGoroutineProfile(sym, traits, mappings, 0, 1, stacks, comments)
                    .SerializeToString(&wire));
    pb::Profile p;
    ASSERT_TRUE(p.ParseFromString(wire));
    std::set<int64_t> used = {p.period_type().type(), p.period_type().unit(),
                              p.default_sample_type(), p.drop_frames(), p.keep_frames()};
    for (const pb::ValueType& t : p.sample_type()) used.insert({t.type(), t.unit()});
    for (const pb::Sample& s : p.sample()) {
      for (const pb::Label& l : s.label()) used.insert({l.key(), l.str(), l.num_unit()});
    }
    for (const pb::Mapping& m : p.mapping()) used.insert({m.filename(), m.build_id()});
    for (const pb::Function& f : p.function()) {
      used.insert({f.name(), f.system_name(), f.filename()});
    }
    used.insert(p.comment().begin(), p.comment().end());
    for (int i = 1; i < p.string_table_size(); ++i) {
      EXPECT_TRUE(used.contains(i)) << "Go " << v.minor << ": string " << i << " \""
                                    << p.string_table(i) << "\" is not referenced";
    }
    ASSERT_EQ(p.sample_type_size(), 1);
    EXPECT_EQ(p.string_table(p.sample_type(0).type()), "goroutine");
    EXPECT_EQ(p.period(), 1);
  }
}

TEST_F(GoroutineReaderTest, RereadsGoroutineThatMovedWhileUnwound) {
  AddG(kWaiting, 5, kWorker);
  int reads = 0;
  mem_.SetReadHook([&](uint64_t addr, uint64_t) {
    // The second read of the g (after unwinding) finds its saved BP changed.
    if (addr == G(0) && ++reads == 2) mem_.PutU64(G(0) + layout_.sched_bp, 0x40f80);
  });
  const GoroutineSnapshot s = Read();
  ASSERT_EQ(s.goroutines.size(), 1u);
  EXPECT_EQ(s.stats.retried, 1u);
  EXPECT_EQ(s.stats.dropped, 0u);
}

TEST_F(GoroutineReaderTest, RereadsGoroutineThatRanAndParkedAgainTheSameWay) {
  AddG(kWaiting, 5, kWorker);
  int stack_reads = 0, g_reads = 0;
  mem_.SetReadHook([&](uint64_t addr, uint64_t) {
    // The stack is copied while the goroutine runs: a return address is
    // another one, which ends the walk early. By the g's second read it has
    // parked again at the same SP with the same reason; only trackingSeq,
    // bumped as it parked, tells.
    if (addr == kSp && ++stack_reads == 1) mem_.PutU64(kSp + 0x18, kGoexit + 1);
    if (addr == G(0) && ++g_reads == 2) {
      mem_.PutU64(kSp + 0x18, kWorker + 0x45);
      const uint64_t seq = layout_.tracking_seq;  // a byte of an otherwise zero word
      mem_.PutU64(G(0) + (seq & ~uint64_t{7}), uint64_t{7} << (8 * (seq & 7)));
    }
  });
  const GoroutineSnapshot s = Read();
  ASSERT_EQ(s.goroutines.size(), 1u);
  EXPECT_EQ(s.goroutines[0].pcs,
            (std::vector<uint64_t>{kGopark + 0x20, kWorker + 0x45, kWorker + 0x31, kGoexit + 1}));
  EXPECT_EQ(s.stats.retried, 1u);
}

TEST_F(GoroutineReaderTest, DropsGoroutineThatKeepsMoving) {
  AddG(kWaiting, 6, kWorker);
  AddG(kWaiting, 7, kWorker);
  uint64_t goid = 6;
  mem_.SetReadHook([&](uint64_t addr, uint64_t) {
    if (addr == G(0)) mem_.PutU64(G(0) + layout_.goid, ++goid);  // a new goroutine each time
  });
  const GoroutineSnapshot s = Read();
  ASSERT_EQ(s.goroutines.size(), 1u);
  EXPECT_EQ(s.goroutines[0].goid, 7u);
  EXPECT_EQ(s.stats.retried, 1u);
  EXPECT_EQ(s.stats.dropped, 1u);
}

TEST_F(GoroutineReaderTest, RetriesStackBeingCopied) {
  AddG(kCopystack, 8, kWorker);
  const GoroutineSnapshot s = Read({.max_attempts = 2});
  EXPECT_TRUE(s.goroutines.empty());
  EXPECT_EQ(s.stats.dropped, 1u);
}

TEST_F(GoroutineReaderTest, CountsStackCutByCopyBound) {
  AddG(kWaiting, 9, kWorker);
  // 0x40 bytes reach gopark's return address but not main.worker's.
  const GoroutineSnapshot s = Read({.max_stack_bytes = 0x40});
  ASSERT_EQ(s.goroutines.size(), 1u);
  EXPECT_EQ(s.goroutines[0].pcs,
            (std::vector<uint64_t>{kGopark + 0x20, kWorker + 0x45, kWorker + 0x31}));
  EXPECT_EQ(s.stats.truncated, 1u);
}

TEST_F(GoroutineReaderTest, RefusesAllglenOverTheLimit) {
  AddG(kWaiting, 10, kWorker);
  AddG(kWaiting, 11, kWorker);
  try {
    Read({.max_goroutines = 1});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("over the limit of 1 goroutines"), std::string::npos);
  }
}

TEST(GoroutineLabelsTest, ReadsMapOfGo123) {
  // *labelMap -> hmap{count 2, B 0, buckets} -> one bucket with two slots.
  TestMemory mem;
  std::vector<uint8_t> b(0x1000, 0);
  auto put = [&b](uint64_t off, uint64_t v) { std::memcpy(&b[off], &v, 8); };
  const uint64_t base = 0x60000;
  put(0, base + 0x100);  // the labelMap variable: the hmap pointer
  put(0x100, 2);         // hmap.count
  put(0x110, base + 0x200);
  b[0x200] = 5;  // tophash of slot 0 and 1: live
  b[0x201] = 9;
  put(0x208, base + 0x400);  // keys[0]
  put(0x210, 1);
  put(0x218, base + 0x401);  // keys[1]
  put(0x220, 1);
  put(0x288, base + 0x402);  // values[0]
  put(0x290, 1);
  put(0x298, base + 0x403);  // values[1]
  put(0x2a0, 1);
  std::memcpy(&b[0x400], "abxy", 4);
  mem.Map(base, b);
  EXPECT_EQ(ReadLabels(mem, base, LabelsEncoding::kMap), (Labels{{"a", "x"}, {"b", "y"}}));
  // A count that the buckets do not hold: a map being freed, not labels.
  mem.PutU64(base + 0x100, 3);
  EXPECT_EQ(ReadLabels(mem, base, LabelsEncoding::kMap), std::nullopt);
}

// go-goroutine-facts.md §3, one version of each family.
TEST(GoroutineLayoutTest, TableHasTheFamiliesOfTheFacts) {
  struct Row {
    int minor;
    uint64_t status, goid, gopc, startpc, labels, bp;
  };
  for (const Row& r : {Row{18, 144, 152, 296, 312, 360, 104}, Row{22, 144, 152, 280, 296, 344, 104},
                       Row{23, 152, 160, 288, 304, 352, 104}, Row{25, 144, 152, 280, 296, 344, 96},
                       Row{27, 144, 152, 288, 304, 352, 96}}) {
    const GoroutineLayout l = GoroutineLayoutForVersion({1, r.minor, 0});
    EXPECT_EQ(l.atomicstatus, r.status) << r.minor;
    EXPECT_EQ(l.goid, r.goid) << r.minor;
    EXPECT_EQ(l.gopc, r.gopc) << r.minor;
    EXPECT_EQ(l.startpc, r.startpc) << r.minor;
    EXPECT_EQ(l.labels, r.labels) << r.minor;
    EXPECT_EQ(l.sched_bp, r.bp) << r.minor;
  }
  EXPECT_EQ(GoroutineLayoutForVersion({1, 20, 0}).parent_goid, std::nullopt);
  EXPECT_EQ(GoroutineLayoutForVersion({1, 26, 0}).parent_goid, 280u);
  EXPECT_EQ(GoroutineLayoutForVersion({1, 23, 0}).labels_encoding, LabelsEncoding::kMap);
  EXPECT_EQ(GoroutineLayoutForVersion({1, 24, 0}).labels_encoding, LabelsEncoding::kSlice);
}

TEST(GoroutineLayoutTest, NewerGoWithoutDwarfIsRefused) {
  RuntimeTraits traits = TraitsForVersion({1, 99, 0});
  EXPECT_THROW(CheckGoroutineLayout("app", nullptr, traits), Error);
  const GoroutineLayoutVerdict v =
      CheckGoroutineLayout("app", nullptr, TraitsForVersion({1, 26, 8}));
  EXPECT_EQ(v.proof, LayoutProof::kTable);
}

}  // namespace
}  // namespace goheap2pprof
