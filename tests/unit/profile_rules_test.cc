// HeapProfileBuilder and Symbolizer against runtime/pprof's rules, on a
// hand-built pclntab (no Go program). Each rule is quoted from the runtime
// sources it comes from: Go 1.26 runtime/pprof/protomem.go and proto.go
// (writeHeapProto, appendLocsForStack, pcDeck.tryAdd, emitLocation,
// scaleHeapSample), runtime/symtab.go (Frames.Next, FuncForPC,
// expandFinalInlineFrame); Go 1.19's protomem.go and proto.go; Go 1.27.3's
// protomem.go for the bytes label.
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "gobin/pclntab.h"
#include "hand_go_elf.h"
#include "hand_pclntab.h"
#include "heap/buckets.h"
#include "pprof/heap_profile_builder.h"
#include "runtime/runtime_traits.h"
#include "symbolize/symbolizer.h"

namespace goheap2pprof {
namespace {

using testing_pclntab::BuildGo120Table;
using testing_pclntab::HandFunc;
using testing_pclntab::HandTable;

constexpr uint64_t kRulesText = 0x400000;

// Function indexes in Table(); each function is 0x100 bytes long.
enum Fn : uint64_t {
  kMallocgc,     // runtime.mallocgc
  kMapsAlloc,    // internal/runtime/maps.newarray
  kAlloc,        // main.alloc, with main.helper inlined at [0x40, 0x50) from 0x30
  kMain,         // main.main
  kGoexit,       // runtime.goexit, with main.shim inlined at [0x10, 0x20) from 0x08
  kGenericInt,   // main.G[go.shape.int]
  kGenericStr,   // main.G[go.shape.string]
  kRuntimeMain,  // runtime.main
};

std::vector<HandFunc> Table() {
  return {
      testing_go_elf::HandMallocgc(),
      {.name = "internal/runtime/maps.newarray",
       .file = "internal/runtime/maps/map.go",
       .start_line = 40,
       .lines = {{41, 0x100}}},
      testing_go_elf::HandAllocWithInlinedHelper(),
      testing_go_elf::HandMain(),
      {.name = "runtime.goexit",
       .file = "runtime/asm_amd64.s",
       .start_line = 1,
       .lines = {{2, 0x100}},
       .inlines = {{.name = "main.shim",
                    .begin = 0x10,
                    .end = 0x20,
                    .parent_pc = 0x08,
                    .line = 5,
                    .start_line = 4}}},
      {.name = "main.G[go.shape.int]", .file = "g.go", .start_line = 50, .lines = {{51, 0x100}}},
      {.name = "main.G[go.shape.string]", .file = "g.go", .start_line = 50, .lines = {{52, 0x100}}},
      {.name = "runtime.main",
       .file = "runtime/proc.go",
       .start_line = 140,
       .lines = {{283, 0x100}}},
  };
}

// A return PC at offset `off` of function `fn`.
uint64_t Pc(Fn fn, uint64_t off) { return kRulesText + 0x100 * fn + off; }

// Builds profiles for one Go version from records of given stacks.
class Rules {
 public:
  // bias: a PIE's load bias (stacks are then given in runtime addresses).
  explicit Rules(GoVersion version, int64_t rate = 512 * 1024, uint64_t bias = 0)
      : table_(BuildGo120Table(Table())),
        pclntab_(table_.table, kRulesText, table_.gofunc),
        traits_(TraitsForVersion(version)),
        symbolizer_(pclntab_, traits_),
        builder_(symbolizer_, traits_,
                 {{kRulesText + bias, kRulesText + bias + 0x1000, 0, "/app", "b1d", false}}, rate,
                 1, bias) {
    scratch_.reserve(64);
  }

  // Adds a record: alloc/free objects and bytes over a bucket of `size`.
  void Add(std::vector<uint64_t> stack, int64_t alloc_n, int64_t alloc_b, int64_t free_n = 0,
           int64_t free_b = 0, uint64_t size = 0) {
    stacks_.push_back(std::move(stack));
    Bucket& b = buckets_.emplace_back();
    b.size = size;
    b.stack = stacks_.back();
    builder_.AddRecord({alloc_b, free_b, alloc_n, free_n, &b});
  }
  // Adds a record whose bucket shares the stack storage of the k-th Add's
  // bucket (its first `words` PCs; all if 0), as buckets of one stack do in
  // a snapshot.
  void AddSharing(size_t k, int64_t alloc_n, int64_t alloc_b, size_t words = 0) {
    Bucket& b = buckets_.emplace_back();
    b.stack = std::span<const uint64_t>(stacks_[k]).first(words ? words : stacks_[k].size());
    builder_.AddRecord({alloc_b, 0, alloc_n, 0, &b});
  }
  const pb::Profile& Finish() { return builder_.Finish(); }
  // A streamed walk's way: the run made from the stack in one buffer that
  // the next bucket overwrites, the sample added once every run is made
  // (FinishStreamed).
  void AddStreamed(const std::vector<uint64_t>& stack, int64_t alloc_n, int64_t alloc_b) {
    scratch_.assign(stack.begin(), stack.end());
    Bucket& b = buckets_.emplace_back();
    pending_.emplace_back(builder_.RunOfTransient(scratch_),
                          MemProfileRecord{alloc_b, 0, alloc_n, 0, &b});
    std::fill(scratch_.begin(), scratch_.end(), 0);
  }
  const pb::Profile& FinishStreamed() {
    for (const auto& [run, r] : pending_) builder_.AddSample(run, r);
    return builder_.Finish();
  }
  HeapProfileBuilder& builder() { return builder_; }
  Symbolizer& symbolizer() { return symbolizer_; }

 private:
  HandTable table_;
  Pclntab pclntab_;
  RuntimeTraits traits_;
  Symbolizer symbolizer_;
  HeapProfileBuilder builder_;
  std::deque<std::vector<uint64_t>> stacks_;  // stable addresses for Bucket::stack
  std::deque<Bucket> buckets_;
  std::vector<uint64_t> scratch_;  // AddStreamed's reused stack buffer
  std::vector<std::pair<uint32_t, MemProfileRecord>> pending_;
};

std::string FunctionName(const pb::Profile& p, uint64_t function_id) {
  for (const pb::Function& f : p.function()) {
    if (f.id() == function_id) return p.string_table(f.name());
  }
  return "<no function " + std::to_string(function_id) + ">";
}

// "fn:line" per line of each location of sample i, innermost first; locations
// separated by " | ".
std::string Stack(const pb::Profile& p, int i) {
  std::string out;
  for (uint64_t id : p.sample(i).location_id()) {
    if (!out.empty()) out += " | ";
    for (const pb::Location& loc : p.location()) {
      if (loc.id() != id) continue;
      for (int k = 0; k < loc.line_size(); ++k) {
        if (k > 0) out += ", ";
        out +=
            FunctionName(p, loc.line(k).function_id()) + ":" + std::to_string(loc.line(k).line());
      }
    }
  }
  return out;
}

// --- writeHeapProto's hideRuntime: leading frames whose FuncForPC name
// starts with "runtime." (and, since 1.24, "internal/runtime/") are dropped.

TEST(HideRuntime, LeadingRuntimeFramesAreDropped) {
  Rules r({1, 26, 0});
  r.Add({Pc(kMallocgc, 0x10), Pc(kMapsAlloc, 0x10), Pc(kMain, 0x10), Pc(kRuntimeMain, 0x10)}, 1,
        64);
  // "Found non-runtime. Show any runtime uses above it": runtime.main stays.
  EXPECT_EQ(Stack(r.Finish(), 0), "main.main:31 | runtime.main:283");
}

TEST(HideRuntime, Go119HidesOnlyRuntimeDot) {
  // Go 1.19 protomem.go: strings.HasPrefix(f.Name(), "runtime.") only.
  Rules r({1, 19, 0});
  r.Add({Pc(kMallocgc, 0x10), Pc(kMapsAlloc, 0x10), Pc(kMain, 0x10)}, 1, 64);
  EXPECT_EQ(Stack(r.Finish(), 0), "internal/runtime/maps.newarray:41 | main.main:31");
}

TEST(HideRuntime, AnAllRuntimeStackKeepsEveryFrame) {
  // The loop finds no non-runtime frame, so stk is never cut.
  Rules r({1, 26, 0});
  r.Add({Pc(kMallocgc, 0x10), Pc(kRuntimeMain, 0x10)}, 1, 64);
  EXPECT_EQ(Stack(r.Finish(), 0), "runtime.mallocgc:950 | runtime.main:283");
}

TEST(HideRuntime, RetriesWithAllFramesWhenTheCutStackHasNoLocation) {
  // FuncForPC(pc) looks at pc itself, where main.shim is inlined into
  // runtime.goexit: not a runtime name, so hiding stops there. CallersFrames
  // looks at pc-1, which is goexit proper, and allFrames returns nothing for
  // goexit: no locations, so writeHeapProto tries again showing all frames.
  Rules r({1, 26, 0});
  ASSERT_EQ(r.symbolizer().FuncNameForPc(Pc(kGoexit, 0x10)), "main.shim");
  r.Add({Pc(kMallocgc, 0x10), Pc(kGoexit, 0x10)}, 1, 64);
  EXPECT_EQ(Stack(r.Finish(), 0), "runtime.mallocgc:950");
}

// Stacks that differ only in frames hideRuntime drops (Go 1.27 allocates
// each size class in its own mallocgc function) get the same locations, and
// once those are fixed, one run of them in the tables.
TEST(HideRuntime, StacksDifferingOnlyInHiddenFramesShareARun) {
  Rules r({1, 26, 0});
  const std::vector<uint64_t> shown = {Pc(kAlloc, 0x48), Pc(kAlloc, 0x31), Pc(kMain, 0x10)};
  for (uint64_t hidden : {Pc(kMallocgc, 0x10), Pc(kMapsAlloc, 0x10), Pc(kMallocgc, 0x20)}) {
    std::vector<uint64_t> stack = {hidden};
    stack.insert(stack.end(), shown.begin(), shown.end());
    r.Add(stack, 1, 64);
  }
  const FinishedProfile p = std::move(r.builder()).TakeProfile();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Stack(p.get(), i), "main.helper:21, main.alloc:11 | main.main:31") << i;
  }
  // The first turn emitted the locations; the second found them all cached
  // (fixed), and the third is the second's run.
  const ProfileTables& tables = *p.tables();
  EXPECT_EQ(tables.locations->runs.size(), 2u);
  EXPECT_EQ(tables.sample_runs[2], tables.sample_runs[1]);
}

// --- Inline expansion: allFrames expands one PC into one frame
// (CallersFrames of a single PC); the runtime records a virtual PC (parent
// PC + 1) for each outer frame, and pcDeck.tryAdd merges them into one
// location while the last frame is inlined into the same function.

TEST(InlineExpansion, TheVirtualCallerPcJoinsTheInlinedFrame) {
  Rules r({1, 26, 0});
  r.Add({Pc(kAlloc, 0x48), Pc(kAlloc, 0x31), Pc(kMain, 0x10)}, 1, 64);
  const pb::Profile& p = r.Finish();
  EXPECT_EQ(Stack(p, 0), "main.helper:21, main.alloc:11 | main.main:31");
  // Location.address is the first PC's frame PC: the return PC - 1.
  EXPECT_EQ(p.location(0).address(), Pc(kAlloc, 0x48) - 1);
}

TEST(InlineExpansion, ATruncatedStackGetsItsLostInlineFramesBack) {
  // expandFinalInlineFrame: the last PC is inside inlined code, so the
  // outer frames it implies are appended (uf.pc + 1 for each).
  Rules r({1, 26, 0});
  r.Add({Pc(kMain, 0x10), Pc(kAlloc, 0x48)}, 1, 64);
  EXPECT_EQ(Stack(r.Finish(), 0), "main.main:31 | main.helper:21, main.alloc:11");
}

TEST(InlineExpansion, WithoutTheVirtualPcTheInlinedFrameStandsAlone) {
  // tryAdd fails for main.main (another function's entry): the deck holding
  // only main.helper is emitted as its own location.
  Rules r({1, 26, 0});
  r.Add({Pc(kAlloc, 0x48), Pc(kMain, 0x10)}, 1, 64);
  EXPECT_EQ(Stack(r.Finish(), 0), "main.helper:21 | main.main:31");
}

// --- Location reuse: b.locs caches a location by its first PC and skips as
// many PCs as it covers.

TEST(LocationReuse, SamplesShareLocationsAndInlineGroups) {
  Rules r({1, 26, 0});
  r.Add({Pc(kAlloc, 0x48), Pc(kAlloc, 0x31), Pc(kMain, 0x10)}, 1, 64);
  r.Add({Pc(kAlloc, 0x48), Pc(kAlloc, 0x31), Pc(kRuntimeMain, 0x10)}, 1, 64);
  const pb::Profile& p = r.Finish();
  ASSERT_EQ(p.sample(0).location_id_size(), 2);
  ASSERT_EQ(p.sample(1).location_id_size(), 2);
  EXPECT_EQ(p.sample(0).location_id(0), p.sample(1).location_id(0));
  EXPECT_EQ(p.location_size(), 3);  // helper+alloc, main.main, runtime.main
  EXPECT_EQ(Stack(p, 1), "main.helper:21, main.alloc:11 | runtime.main:283");
  EXPECT_EQ(p.function_size(), 4);  // each function written once
}

// A recursion's return PC, repeated, is one location each time it appears:
// when the first turn meets it before it has a location, and when every
// turn after finds it cached from its first PC on.
TEST(LocationReuse, ARecursionRepeatsOneLocation) {
  Rules r({1, 26, 0});
  const uint64_t leaf = Pc(kAlloc, 0x48), call = Pc(kAlloc, 0x31);
  const uint64_t rec = Pc(kMain, 0x10), root = Pc(kRuntimeMain, 0x10);
  r.Add({leaf, call, rec, rec, rec, rec, root}, 1, 64);
  r.Add({leaf, call, rec, rec, root}, 1, 64);
  r.Add({rec, rec, rec}, 1, 64);
  r.Add({rec, root, rec, rec}, 1, 64);
  const pb::Profile& p = r.Finish();
  EXPECT_EQ(p.location_size(), 3);  // helper+alloc, main.main, runtime.main
  EXPECT_EQ(Stack(p, 0),
            "main.helper:21, main.alloc:11 | main.main:31 | main.main:31 | main.main:31 | "
            "main.main:31 | runtime.main:283");
  EXPECT_EQ(Stack(p, 1),
            "main.helper:21, main.alloc:11 | main.main:31 | main.main:31 | "
            "runtime.main:283");
  EXPECT_EQ(Stack(p, 2), "main.main:31 | main.main:31 | main.main:31");
  EXPECT_EQ(Stack(p, 3), "main.main:31 | runtime.main:283 | main.main:31 | main.main:31");
  const uint64_t main_id = p.sample(0).location_id(1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(p.sample(2).location_id(i), main_id);
}

// Buckets that share their stack's storage get the locations a copy of the
// stack would: also when the stack's first turn emitted locations (and a
// later turn may differ, as in runtime/pprof) and when a stack shares only a
// prefix of another's storage.
TEST(LocationReuse, SharedStackStorageGivesWhatCopiesGive) {
  auto add_all = [](Rules& r, bool share) {
    const std::vector<uint64_t> a = {Pc(kMain, 0x10), Pc(kAlloc, 0x48)};  // expanded: emits
    const std::vector<uint64_t> b = {Pc(kAlloc, 0x48), Pc(kAlloc, 0x31), Pc(kMain, 0x10)};
    r.Add(a, 1, 64);
    r.Add(b, 2, 128);
    for (int i = 0; i < 3; ++i) {
      if (share) {
        r.AddSharing(0, 3 + i, 64 * (3 + i));
        r.AddSharing(1, 4 + i, 64 * (4 + i));
        r.AddSharing(1, 5 + i, 64 * (5 + i), 1);  // b's leaf alone
      } else {
        r.Add(a, 3 + i, 64 * (3 + i));
        r.Add(b, 4 + i, 64 * (4 + i));
        r.Add({b[0]}, 5 + i, 64 * (5 + i));
      }
    }
  };
  Rules copies({1, 26, 0}), shared({1, 26, 0});
  add_all(copies, false);
  add_all(shared, true);
  const pb::Profile& want = copies.Finish();
  const pb::Profile& got = shared.Finish();
  ASSERT_EQ(got.sample_size(), want.sample_size());
  for (int i = 0; i < want.sample_size(); ++i) {
    EXPECT_EQ(Stack(got, i), Stack(want, i)) << "sample " << i;
    EXPECT_EQ(got.sample(i).location_id().size(), want.sample(i).location_id().size());
    for (int k = 0; k < want.sample(i).location_id_size(); ++k) {
      EXPECT_EQ(got.sample(i).location_id(k), want.sample(i).location_id(k)) << "sample " << i;
    }
  }
  EXPECT_EQ(got.location_size(), want.location_size());
}

// Each stack's locations, with the stacks added one after the other, are
// those it gets with an empty stack (which makes no location) before it;
// with a PIE's load bias, the stacks are given in runtime addresses.
void ExpectWhatTheyGetAlone(const std::vector<std::vector<uint64_t>>& stacks, uint64_t bias = 0) {
  for (GoVersion v : {GoVersion{1, 18, 0}, GoVersion{1, 21, 0}, GoVersion{1, 26, 0}}) {
    Rules together(v, 512 * 1024, bias), apart(v, 512 * 1024, bias);
    for (std::vector<uint64_t> stack : stacks) {
      for (uint64_t& pc : stack) pc += pc != 0 ? bias : 0;
      together.Add(stack, 1, 64);
      apart.Add(stack, 1, 64);
      apart.Add({}, 1, 64);
    }
    const pb::Profile& want = apart.Finish();
    const pb::Profile& got = together.Finish();
    ASSERT_EQ(got.location_size(), want.location_size()) << "go1." << v.minor;
    for (int i = 0; i < got.location_size(); ++i) {
      EXPECT_EQ(got.location(i).SerializeAsString(), want.location(i).SerializeAsString())
          << "go1." << v.minor << " location " << i;
    }
    for (int i = 0; i < got.sample_size(); ++i) {
      const auto& ids = got.sample(i).location_id();
      const auto& alone = want.sample(2 * i).location_id();
      EXPECT_TRUE(std::equal(ids.begin(), ids.end(), alone.begin(), alone.end()))
          << "go1." << v.minor << " sample " << i << ": " << Stack(got, i) << " alone "
          << Stack(want, 2 * i);
    }
  }
}

// PCs of every kind a turn can take: in inline groups, recursions, hidden
// frames, runtime.goexit, unknown, and 0.
std::vector<uint64_t> AnyPcs() {
  return {Pc(kMain, 0x10),      Pc(kMain, 0x20),
          Pc(kAlloc, 0x48),     Pc(kAlloc, 0x31),
          Pc(kAlloc, 0x80),     Pc(kRuntimeMain, 0x10),
          Pc(kGoexit, 0x10),    Pc(kGoexit, 0x09),
          Pc(kGoexit, 0x30),    Pc(kMallocgc, 0x10),
          Pc(kMapsAlloc, 0x10), Pc(kGenericInt, 0x10),
          kRulesText + 0x5000,  0};
}

// PCs whose turns are plain: one-PC locations that no PC joins.
std::vector<uint64_t> PlainPcs() {
  return {Pc(kMain, 0x10), Pc(kMain, 0x20), Pc(kAlloc, 0x80), Pc(kRuntimeMain, 0x10)};
}

// Stacks that start as the one before did take the ids of its leading
// one-PC locations that no PC can join without looking each PC up. The
// profile must be the one built with nothing carried from one stack to the
// next (an empty stack, which makes no location, between any two), for
// stacks that start alike up to, into and past inline groups, recursions,
// hidden frames, runtime.goexit, unknown PCs and PC 0, on each deck rule.
TEST(LocationReuse, StacksStartingAlikeGetWhatTheyGetAlone) {
  const std::vector<uint64_t> pool = AnyPcs();
  std::mt19937 rng(42);
  std::vector<std::vector<uint64_t>> stacks = {{}};
  for (int i = 0; i < 400; ++i) {
    const std::vector<uint64_t>& last = stacks.back();
    std::vector<uint64_t> s(last.begin(), last.begin() + rng() % (last.size() + 1));
    const size_t more = rng() % 6;
    for (size_t k = 0; k < more; ++k) s.push_back(pool[rng() % pool.size()]);
    if (rng() % 4 == 0 && !s.empty()) s.insert(s.end(), rng() % 5, s.back());  // a recursion
    stacks.push_back(std::move(s));
  }
  ExpectWhatTheyGetAlone(stacks);
}

// The same for deep stacks that share from 100 to 400 leading PCs with the
// one before, past the prefix the builder keeps (kRememberedLeadingPcs).
TEST(LocationReuse, DeepStacksStartingAlikeGetWhatTheyGetAlone) {
  static_assert(kRememberedLeadingPcs > 100 && kRememberedLeadingPcs < 400,
                "the shared parts must reach past the kept prefix, and fall short of it");
  // Plain PCs (one-PC locations that no PC joins) for the first 400, so
  // that the shared part is all plain turns; then any.
  const std::vector<uint64_t> plain = PlainPcs();
  const std::vector<uint64_t> any = {Pc(kAlloc, 0x48), Pc(kAlloc, 0x31), Pc(kGoexit, 0x10),
                                     Pc(kGoexit, 0x09), Pc(kMain, 0x10)};
  std::mt19937 rng(7);
  std::vector<std::vector<uint64_t>> stacks = {{}};
  for (int i = 0; i < 60; ++i) {
    const std::vector<uint64_t>& last = stacks.back();
    const size_t shared = std::min<size_t>(last.size(), 100 + rng() % 301);
    std::vector<uint64_t> s(last.begin(), last.begin() + shared);
    while (s.size() < 400) s.push_back(plain[rng() % plain.size()]);
    while (s.size() < 450) s.push_back(any[rng() % any.size()]);
    stacks.push_back(std::move(s));
  }
  ExpectWhatTheyGetAlone(stacks);
}

// Stacks that end as the one before did take the ids of the last plain PCs
// of the last stack that had only plain turns but for a final
// runtime.goexit, without looking each PC up. The profile must be the one
// built with nothing carried from one stack to the next, for stacks that end
// alike from inside or past inline groups, recursions (whose run may cross
// where the two part), hidden frames, runtime.goexit, unknown PCs and PC 0,
// on each deck rule, with and without a PIE's bias.
TEST(LocationReuse, StacksEndingAlikeGetWhatTheyGetAlone) {
  const std::vector<uint64_t> pool = AnyPcs();
  // Mostly plain, so that many stacks leave a suffix to take.
  std::vector<uint64_t> plain = PlainPcs();
  plain.push_back(Pc(kGenericInt, 0x10));
  std::mt19937 rng(43);
  std::vector<std::vector<uint64_t>> stacks = {{}};
  for (int i = 0; i < 600; ++i) {
    const std::vector<uint64_t>& last = stacks.back();
    const size_t keep = rng() % (last.size() + 1);
    std::vector<uint64_t> s;
    const size_t more = rng() % 6;
    for (size_t k = 0; k < more; ++k) {
      const std::vector<uint64_t>& from = rng() % 3 == 0 ? pool : plain;
      s.push_back(from[rng() % from.size()]);
    }
    // A recursion whose run goes on into the shared end.
    if (rng() % 4 == 0 && keep > 0) s.insert(s.end(), rng() % 5, last[last.size() - keep]);
    s.insert(s.end(), last.end() - static_cast<std::ptrdiff_t>(keep), last.end());
    if (rng() % 3 == 0) s.push_back(Pc(kGoexit, 0x30));
    stacks.push_back(std::move(s));
  }
  ExpectWhatTheyGetAlone(stacks);
  ExpectWhatTheyGetAlone(stacks, 0x10000);
}

// The same for deep stacks of plain PCs ending in runtime.goexit that share
// from 10 to 70 trailing PCs with the one before: fewer than, as many as and
// more than the suffix the builder keeps (kRememberedTrailingPcs).
TEST(LocationReuse, DeepStacksEndingAlikeGetWhatTheyGetAlone) {
  static_assert(kRememberedTrailingPcs > 10 && kRememberedTrailingPcs < 70,
                "the shared ends must reach past the kept suffix, and fall short of it");
  const std::vector<uint64_t> plain = PlainPcs();
  const std::vector<uint64_t> any = {Pc(kAlloc, 0x48), Pc(kAlloc, 0x31), Pc(kGoexit, 0x10),
                                     Pc(kMain, 0x10)};
  std::mt19937 rng(8);
  std::vector<std::vector<uint64_t>> stacks = {{}};
  for (int i = 0; i < 80; ++i) {
    const std::vector<uint64_t>& last = stacks.back();
    const size_t keep = std::min<size_t>(last.size(), 10 + rng() % 61);
    std::vector<uint64_t> s;
    while (s.size() < 5) s.push_back(any[rng() % any.size()]);
    while (s.size() + keep < 100) s.push_back(plain[rng() % plain.size()]);
    if (keep == 0) s.push_back(Pc(kGoexit, 0x30));
    s.insert(s.end(), last.end() - static_cast<std::ptrdiff_t>(keep), last.end());
    stacks.push_back(std::move(s));
  }
  ExpectWhatTheyGetAlone(stacks);
  ExpectWhatTheyGetAlone(stacks, 0x10000);
}

// A streamed walk's runs, made from stacks in a buffer that is overwritten
// after each, with the samples added after every run: the profile of the
// stacks kept, byte for byte, with and without the deck retry, for stacks
// that emit locations, repeat, recurse or differ only in their hidden
// frames. (The "bytes" label's key is the period unit's string, so the
// samples coming after every stack do not move it.)
TEST(StreamedStacks, AReusedBufferGivesTheProfileOfKeptStacks) {
  const std::vector<uint64_t> a = {Pc(kMain, 0x10), Pc(kAlloc, 0x48)};
  const std::vector<uint64_t> b = {Pc(kAlloc, 0x48), Pc(kAlloc, 0x31), Pc(kMain, 0x10)};
  const std::vector<uint64_t> rec = {Pc(kMain, 0x10), Pc(kMain, 0x10), Pc(kRuntimeMain, 0x10)};
  const std::vector<uint64_t> hidden = {Pc(kMallocgc, 0x10), Pc(kAlloc, 0x48), Pc(kMain, 0x10)};
  const std::vector<std::vector<uint64_t>> stacks = {a, b, b, rec, a, hidden, {b[0]}, b, rec};
  // A PIE's too: the last stack is kept in link-time addresses.
  for (const uint64_t bias : {uint64_t{0}, uint64_t{0x5555'0000'0000}}) {
    for (GoVersion v : {GoVersion{1, 18, 0}, GoVersion{1, 26, 0}, GoVersion{1, 27, 0}}) {
      Rules kept(v, 1, bias), streamed(v, 1, bias);
      for (size_t i = 0; i < stacks.size(); ++i) {
        const int64_t n = i == 0 ? 0 : static_cast<int64_t>(i);
        std::vector<uint64_t> runtime = stacks[i];
        for (uint64_t& pc : runtime) pc += bias;
        kept.Add(runtime, n, 64 * n);
        streamed.AddStreamed(runtime, n, 64 * n);
      }
      EXPECT_EQ(streamed.FinishStreamed().SerializeAsString(), kept.Finish().SerializeAsString())
          << "go1." << v.minor << " bias " << bias;
    }
  }
}

// Samples streamed while they are built, then the rest: the same profile as
// one written whole.
TEST(StreamedSamples, TheStreamAndTheRemainderAreTheWholeProfile) {
  auto add_all = [](Rules& r) {
    r.Add({Pc(kMain, 0x10), Pc(kAlloc, 0x48)}, 1, 64);
    r.Add({Pc(kAlloc, 0x48), Pc(kAlloc, 0x31), Pc(kMain, 0x10)}, 2, 128);
    r.AddSharing(1, 3, 0);  // no label before 1.27: AllocBytes is 0
    r.Add({Pc(kRuntimeMain, 0x10)}, 4, 4096);
  };
  Rules whole({1, 26, 0}), streamed({1, 26, 0});
  std::string bytes;
  google::protobuf::io::StringOutputStream out(&bytes);
  streamed.builder().StreamSamplesTo(&out);
  add_all(whole);
  add_all(streamed);
  whole.builder().AddComment("a comment");
  streamed.builder().AddComment("a comment");
  const std::string want = std::move(whole.builder()).TakeProfile().Serialize();
  const FinishedProfile rest = std::move(streamed.builder()).TakeProfile();
  ASSERT_TRUE(rest.SerializeRemainderTo(&out));
  pb::Profile got_p, want_p;
  ASSERT_TRUE(got_p.ParseFromString(bytes));
  ASSERT_TRUE(want_p.ParseFromString(want));
  EXPECT_EQ(got_p.sample_size(), 4);
  std::string diff;
  google::protobuf::util::MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(want_p, got_p)) << diff;
  // The remainder alone has no samples: they were streamed.
  std::string remainder;
  google::protobuf::io::StringOutputStream rest_out(&remainder);
  ASSERT_TRUE(rest.SerializeRemainderTo(&rest_out));
  pb::Profile r;
  ASSERT_TRUE(r.ParseFromString(remainder));
  EXPECT_EQ(r.sample_size(), 0);
  EXPECT_EQ(rest.get().sample_size(), 4);  // the message view has them all
}

// A one-shot capture streams its samples and does not keep them: the stream
// and the remainder are still the whole profile, and nothing can write the
// samples a second time.
TEST(StreamedSamples, DroppedSamplesLeaveTheSameProfileAndCannotBeWrittenAgain) {
  auto add_all = [](Rules& r) {
    r.Add({Pc(kMain, 0x10), Pc(kAlloc, 0x48)}, 1, 64);
    r.AddSharing(0, 3, 0);
    r.Add({Pc(kRuntimeMain, 0x10)}, 4, 4096);
  };
  Rules whole({1, 27, 0}), streamed({1, 27, 0});
  std::string bytes;
  google::protobuf::io::StringOutputStream out(&bytes);
  streamed.builder().StreamSamplesTo(&out, /*keep=*/false);
  add_all(whole);
  add_all(streamed);
  const std::string want = std::move(whole.builder()).TakeProfile().Serialize();
  const FinishedProfile rest = std::move(streamed.builder()).TakeProfile();
  EXPECT_EQ(rest.sample_size(), 3u);
  ASSERT_TRUE(rest.SerializeRemainderTo(&out));
  pb::Profile got_p, want_p;
  ASSERT_TRUE(got_p.ParseFromString(bytes));
  ASSERT_TRUE(want_p.ParseFromString(want));
  EXPECT_EQ(got_p.sample_size(), 3);
  std::string diff;
  google::protobuf::util::MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(want_p, got_p)) << diff;
  std::string again;
  google::protobuf::io::StringOutputStream again_out(&again);
  try {
    (void)rest.SerializeTo(&again_out);
    ADD_FAILURE() << "the dropped samples were written";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
  }
}

// --- Function identity and names.

TEST(GenericNames, Go121KeysFunctionsByThePrintedName) {
  // Go 1.21 keyed b.funcs by frame.Function ("main.G[...]") but wrote the
  // symbol name: the first instantiation names both.
  Rules r({1, 21, 0});
  r.Add({Pc(kGenericInt, 0x10), Pc(kMain, 0x10)}, 1, 64);
  r.Add({Pc(kGenericStr, 0x10), Pc(kMain, 0x10)}, 1, 64);
  const pb::Profile& p = r.Finish();
  EXPECT_EQ(Stack(p, 0), "main.G[go.shape.int]:51 | main.main:31");
  EXPECT_EQ(Stack(p, 1), "main.G[go.shape.int]:52 | main.main:31");
}

TEST(GenericNames, Go122KeysFunctionsByTheSymbolName) {
  // Go 1.22+ (1.26 proto.go): funcName := runtime_FrameSymbolName(&frame).
  Rules r({1, 26, 0});
  r.Add({Pc(kGenericInt, 0x10), Pc(kMain, 0x10)}, 1, 64);
  r.Add({Pc(kGenericStr, 0x10), Pc(kMain, 0x10)}, 1, 64);
  const pb::Profile& p = r.Finish();
  EXPECT_EQ(Stack(p, 0), "main.G[go.shape.int]:51 | main.main:31");
  EXPECT_EQ(Stack(p, 1), "main.G[go.shape.string]:52 | main.main:31");
}

TEST(GenericNames, PrintedNamesElideShapesFrom121) {
  // funcNameForPrint (1.21+): everything between the first '[' and the last
  // ']' becomes "...".
  Rules go121({1, 21, 0});
  EXPECT_EQ(go121.symbolizer().PrintedName("main.G[go.shape.int]"), "main.G[...]");
  EXPECT_EQ(go121.symbolizer().PrintedName("main.(*T[go.shape.int]).M"), "main.(*T[...]).M");
  Rules go120({1, 20, 0});
  EXPECT_EQ(go120.symbolizer().PrintedName("main.G[go.shape.int]"), "main.G[go.shape.int]");
}

TEST(StartLine, WrittenFrom120On) {
  // Go 1.19 proto.go writes no Function.start_line; 1.20+ does.
  for (int minor : {19, 26}) {
    Rules r({1, minor, 0});
    r.Add({Pc(kAlloc, 0x48), Pc(kAlloc, 0x31)}, 1, 64);
    const pb::Profile& p = r.Finish();
    ASSERT_EQ(p.function_size(), 2);
    for (const pb::Function& f : p.function()) {
      const std::string name = p.string_table(f.name());
      const int64_t want = minor < 20 ? 0 : name == "main.helper" ? 20 : 10;
      EXPECT_EQ(f.start_line(), want) << "go1." << minor << " " << name;
    }
  }
}

// --- Sample values and labels.

TEST(Scaling, UnbiasesByTheAverageSize) {
  // scaleHeapSample: scale = 1 / (1 - exp(-avgSize/rate)), truncated.
  Rules r({1, 26, 0}, /*rate=*/4096);
  r.Add({Pc(kMain, 0x10)}, 3, 3 * 1000, 1, 1000, 1000);
  const pb::Profile& p = r.Finish();
  const double scale = 1 / (1 - std::exp(-1000.0 / 4096.0));
  EXPECT_EQ(p.sample(0).value(0), static_cast<int64_t>(3 * scale));
  EXPECT_EQ(p.sample(0).value(1), static_cast<int64_t>(3000 * scale));
  EXPECT_EQ(p.sample(0).value(2), static_cast<int64_t>(2 * scale));
  EXPECT_EQ(p.sample(0).value(3), static_cast<int64_t>(2000 * scale));
  EXPECT_EQ(p.period(), 4096);
}

TEST(Scaling, RateOneOrLessAndEmptyCountsAreNotScaled) {
  Rules all({1, 26, 0}, /*rate=*/1);
  all.Add({Pc(kMain, 0x10)}, 3, 300, 3, 300);
  const pb::Profile& p = all.Finish();
  EXPECT_EQ(p.sample(0).value(0), 3);
  EXPECT_EQ(p.sample(0).value(1), 300);
  // count == 0 || size == 0 gives 0, 0.
  EXPECT_EQ(p.sample(0).value(2), 0);
  EXPECT_EQ(p.sample(0).value(3), 0);
}

int64_t BytesLabel(const pb::Profile& p, int i, bool* present) {
  *present = false;
  for (const pb::Label& l : p.sample(i).label()) {
    if (p.string_table(l.key()) == "bytes") {
      *present = true;
      return l.num();
    }
  }
  return 0;
}

TEST(BytesLabel, UpTo126ItIsAllocBytesPerObjectWhenNonZero) {
  Rules r({1, 26, 0});
  r.Add({Pc(kMain, 0x10)}, 4, 4 * 48, 0, 0, 48);
  r.Add({Pc(kAlloc, 0x10)}, 0, 0, 0, 0, 48);  // AllocObjects 0: no label
  const pb::Profile& p = r.Finish();
  bool present = false;
  EXPECT_EQ(BytesLabel(p, 0, &present), 48);
  EXPECT_TRUE(present);
  BytesLabel(p, 1, &present);
  EXPECT_FALSE(present);
}

TEST(BytesLabel, From127ItIsTheObjectSizeOnEverySample) {
  // Go 1.27.3 protomem.go: b.pbLabel(tagSample_Label, "bytes", "", r.ObjectSize).
  Rules r({1, 27, 0});
  r.Add({Pc(kMain, 0x10)}, 0, 0, 0, 0, 48);
  const pb::Profile& p = r.Finish();
  bool present = false;
  EXPECT_EQ(BytesLabel(p, 0, &present), 48);
  EXPECT_TRUE(present);
}

// --- Mappings: has_functions only when every lookup in them worked.

TEST(Mappings, AFailedLookupClearsHasFunctions) {
  Rules r({1, 26, 0});
  // A PC in no function: allFrames makes up PC - 1 and marks the lookup failed.
  r.Add({kRulesText + 0x900, Pc(kMain, 0x10)}, 1, 64);
  const pb::Profile& p = r.Finish();
  ASSERT_EQ(p.mapping_size(), 1);
  EXPECT_FALSE(p.mapping(0).has_functions());
  EXPECT_EQ(p.location(0).address(), kRulesText + 0x900 - 1);
  EXPECT_EQ(p.location(0).line_size(), 1);
}

TEST(Mappings, AllLookupsWorkingSetsHasFunctions) {
  Rules r({1, 26, 0});
  r.Add({Pc(kAlloc, 0x48), Pc(kAlloc, 0x31), Pc(kMain, 0x10)}, 1, 64);
  EXPECT_TRUE(r.Finish().mapping(0).has_functions());
}

// --- The builder with a load bias: the symbolizer sees link-time PCs, the
// profile runtime addresses.

TEST(LoadBias, AddressesAreRuntimeAndLookupsLinkTime) {
  const HandTable table = BuildGo120Table(Table());
  const Pclntab pclntab(table.table, kRulesText, table.gofunc);
  const RuntimeTraits traits = TraitsForVersion({1, 26, 0});
  Symbolizer symbolizer(pclntab, traits);
  constexpr uint64_t kBias = 0x7f0000000000;
  HeapProfileBuilder b(symbolizer, traits,
                       {{kRulesText + kBias, kRulesText + kBias + 0x1000, 0, "/app", "", false}},
                       512 * 1024, 1, kBias);
  const std::vector<uint64_t> stack = {Pc(kAlloc, 0x48) + kBias, Pc(kAlloc, 0x31) + kBias};
  Bucket bucket;
  bucket.stack = stack;
  b.AddRecord({64, 0, 1, 0, &bucket});
  const pb::Profile& p = b.Finish();
  EXPECT_EQ(Stack(p, 0), "main.helper:21, main.alloc:11");
  EXPECT_EQ(p.location(0).address(), Pc(kAlloc, 0x48) + kBias - 1);
  EXPECT_EQ(p.location(0).mapping_id(), 1u);
  EXPECT_TRUE(p.mapping(0).has_functions());
}

}  // namespace
}  // namespace goheap2pprof
