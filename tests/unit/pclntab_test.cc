// Pclntab decoding on hand-built tables (both layouts, corrupt input), and
// GoBinary on a binary that is not Go. Real Go binaries: the Go tier's
// tests/go/pclntab_binaries_test.cc.
#include "gobin/pclntab.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "elf/elf_file.h"
#include "gobin/go_binary.h"
#include "hand_go_elf.h"
#include "hand_pclntab.h"
#include "pprof/stack_warmer.h"
#include "runtime/runtime_traits.h"
#include "symbolize/symbolizer.h"

namespace goheap2pprof {
namespace {

using namespace testing_pclntab;  // NOLINT: test fixtures

class PclntabHandTest : public ::testing::TestWithParam<bool> {};

TEST_P(PclntabHandTest, HeaderAndFindFunc) {
  bool go120 = GetParam();
  HandTable h = BuildHandTable(go120);
  Pclntab tab(h.table, kText, h.gofunc);
  EXPECT_EQ(tab.format(), go120 ? PclntabFormat::kGo120 : PclntabFormat::kGo118);
  EXPECT_EQ(tab.nfunc(), 2u);
  EXPECT_EQ(tab.min_lc(), 1);
  EXPECT_EQ(tab.header_text_start(), kText);
  EXPECT_EQ(tab.text_end(), kText + 0x200);
  EXPECT_FALSE(tab.FindFunc(kText - 1));
  EXPECT_FALSE(tab.FindFunc(kText + 0x200));
  EXPECT_FALSE(tab.FindFunc(0));
  for (uint64_t pc : {kText, kText + 1, kText + 0xff}) {
    ASSERT_TRUE(tab.FindFunc(pc)) << pc;
    EXPECT_EQ(tab.FindFunc(pc)->index, 0u);
    EXPECT_EQ(tab.FindFunc(pc)->entry, kText);
  }
  for (uint64_t pc : {kText + 0x100, kText + 0x1ff}) {
    ASSERT_TRUE(tab.FindFunc(pc));
    EXPECT_EQ(tab.FindFunc(pc)->index, 1u);
  }
  EXPECT_EQ(tab.FuncName(tab.FuncAt(0)), "main.f");
  EXPECT_EQ(tab.FuncName(tab.FuncAt(1)), "main.g");
  EXPECT_THROW(tab.FuncAt(2), Error);
}

TEST_P(PclntabHandTest, PcValueDecoding) {
  HandTable h = BuildHandTable(GetParam());
  Pclntab tab(h.table, kText, h.gofunc);
  FuncRef f = tab.FuncAt(0);
  EXPECT_EQ(tab.PcValue(f, 0, kText), -1);  // no table
  EXPECT_EQ(tab.FrameAt(f, kText).line, 10);
  EXPECT_EQ(tab.FrameAt(f, kText + 0xf).line, 10);
  EXPECT_EQ(tab.FrameAt(f, kText + 0x10).line, 12);
  EXPECT_EQ(tab.FrameAt(f, kText + 0xff).line, 12);
}

TEST_P(PclntabHandTest, FramesAndInlining) {
  bool go120 = GetParam();
  HandTable h = BuildHandTable(go120);
  Pclntab tab(h.table, kText, h.gofunc);
  FuncRef f = tab.FuncAt(0);

  PcFrame outer = tab.FrameAt(f, kText + 0x1f);
  EXPECT_EQ(outer.function, "main.f");
  EXPECT_EQ(outer.file, "a.go");
  EXPECT_EQ(outer.line, 12);
  EXPECT_EQ(outer.start_line, go120 ? 7 : 0);
  EXPECT_FALSE(outer.inlined);
  EXPECT_EQ(outer.entry, kText);
  EXPECT_FALSE(tab.InlineParentPc(f, kText + 0x1f));

  PcFrame inner = tab.FrameAt(f, kText + 0x25);
  EXPECT_EQ(inner.function, "main.inl");
  EXPECT_EQ(inner.file, "a.go");
  EXPECT_EQ(inner.line, 12);  // from the physical function's table
  EXPECT_EQ(inner.start_line, go120 ? 30 : 0);
  EXPECT_TRUE(inner.inlined);
  EXPECT_EQ(inner.entry, kText);
  EXPECT_EQ(tab.InlineParentPc(f, kText + 0x25), kText + 0x18);
  EXPECT_FALSE(tab.FrameAt(f, kText + 0x30).inlined);

  FuncRef g = tab.FuncAt(1);
  PcFrame gf = tab.FrameAt(g, kText + 0x150);
  EXPECT_EQ(gf.function, "main.g");
  EXPECT_EQ(gf.file, "?");  // cutab entry 0xffffffff
  EXPECT_EQ(gf.line, 5);
  EXPECT_EQ(gf.start_line, go120 ? 50 : 0);
}

// The name-only lookup of FuncNameForPc names what FrameAt names at every PC,
// inlined or not, and on every corrupted table where FrameAt still decodes.
TEST_P(PclntabHandTest, FunctionAtIsFrameAtsFunction) {
  HandTable h = BuildHandTable(GetParam());
  auto compare = [&](Bytes table, int* compared) {
    Expected<Pclntab> tab = Pclntab::TryParse(table, kText, h.gofunc);
    if (!tab) return;
    for (uint64_t pc = kText; pc < kText + 0x200; ++pc) {
      std::optional<FuncRef> f = tab->FindFunc(pc);
      if (!f) continue;
      Expected<PcFrame> frame = tab->TryFrameAt(*f, pc);
      if (!frame) continue;
      Expected<std::string_view> name = tab->TryFunctionAt(*f, pc);
      ASSERT_TRUE(name.has_value()) << Hex(pc);
      EXPECT_EQ(*name, frame->function) << Hex(pc);
      ++*compared;
    }
  };
  int compared = 0;
  compare(h.table, &compared);
  EXPECT_EQ(compared, 0x200);
  Pclntab tab(h.table, kText, h.gofunc);
  EXPECT_EQ(*tab.TryFunctionAt(tab.FuncAt(0), kText + 0x25), "main.inl");
  for (size_t i = 0; i < h.table.size(); ++i) {
    std::vector<uint8_t> bad = h.table;
    bad[i] ^= 0x5a;
    compare(bad, &compared);
  }
}

// Every prefix and every single-byte corruption of the table either decodes
// or throws Error; nothing reads out of bounds (run under ASan in CI).
TEST_P(PclntabHandTest, CorruptTablesThrowErrorOnly) {
  HandTable h = BuildHandTable(GetParam());
  auto exercise = [&](Bytes table, Bytes gofunc) {
    try {
      Pclntab tab(table, kText, gofunc);
      for (uint64_t pc = kText - 1; pc <= kText + 0x201; pc += 7) {
        try {
          std::optional<FuncRef> f = tab.FindFunc(pc);
          if (!f) continue;
          tab.FuncName(*f);
          tab.FuncId(*f);
          tab.FrameAt(*f, pc);
          tab.InlineParentPc(*f, pc);
        } catch (const Error&) {
        }
      }
    } catch (const Error&) {
    }
  };
  for (size_t n = 0; n <= h.table.size(); ++n) {
    exercise(Bytes(h.table.data(), n), h.gofunc);
  }
  for (size_t n = 0; n <= h.gofunc.size(); ++n) {
    exercise(h.table, Bytes(h.gofunc.data(), n));
  }
  for (size_t i = 0; i < h.table.size(); ++i) {
    for (uint8_t v : {uint8_t{0x00}, uint8_t{0x7f}, uint8_t{0x80}, uint8_t{0xff}}) {
      std::vector<uint8_t> bad = h.table;
      bad[i] = v;
      exercise(bad, h.gofunc);
    }
  }
}

// The go:func.* region is read as asked, an inlinedCall record at a time:
// opening the table reads none of it, and frames come out as from the
// bytes at hand. Bytes that cannot be had are an Error, as bytes past the
// region's end are.
TEST_P(PclntabHandTest, ReadsTheGoFuncRegionOnlyWhereAnInlineTreeIs) {
  const bool go120 = GetParam();
  HandTable h = BuildHandTable(go120);
  std::vector<std::pair<uint64_t, uint64_t>> asked;
  bool readable = true;
  GoFuncBytes lazy{.size = h.gofunc.size(),
                   .read = [&](uint64_t off, uint64_t len) -> std::optional<Bytes> {
                     asked.emplace_back(off, len);
                     if (!readable) return std::nullopt;
                     return Bytes(h.gofunc).subspan(off, len);
                   }};
  Expected<Pclntab> tab = Pclntab::TryParse(h.table, kText, lazy);
  ASSERT_TRUE(tab);
  EXPECT_TRUE(asked.empty());
  const Pclntab eager(h.table, kText, h.gofunc);
  const FuncRef f = tab->FuncAt(0);
  for (uint64_t pc : {kText + 0x1f, kText + 0x25, kText + 0x30}) {
    const PcFrame got = tab->FrameAt(f, pc);
    const PcFrame want = eager.FrameAt(f, pc);
    EXPECT_EQ(got.function, want.function) << Hex(pc);
    EXPECT_EQ(got.inlined, want.inlined) << Hex(pc);
    EXPECT_EQ(got.start_line, want.start_line) << Hex(pc);
  }
  ASSERT_FALSE(asked.empty());  // the inlined PC's record
  for (const auto& [off, len] : asked) {
    EXPECT_EQ(len, go120 ? 16u : 20u);
    EXPECT_LE(off + len, h.gofunc.size());
  }
  readable = false;
  EXPECT_FALSE(tab->TryFrameAt(f, kText + 0x25));
  EXPECT_TRUE(tab->TryFrameAt(f, kText + 0x1f));  // not inlined: no record asked
}

INSTANTIATE_TEST_SUITE_P(PclntabLayouts, PclntabHandTest, ::testing::Values(false, true),
                         [](const auto& param_info) {
                           return param_info.param ? "Go120" : "Go118";
                         });

TEST(PclntabTest, RejectsBadHeaders) {
  HandTable h = BuildHandTable(true);
  auto kind_of = [&](std::vector<uint8_t> t) {
    try {
      Pclntab tab(t, kText, h.gofunc);
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::kInternal;  // did not throw
  };
  std::vector<uint8_t> t = h.table;
  PutU32(t, 0, 0x12345678);
  EXPECT_EQ(kind_of(t), ErrorKind::kMalformed);
  PutU32(t, 0, 0xfffffffa);  // Go 1.16/1.17
  EXPECT_EQ(kind_of(t), ErrorKind::kUnsupported);
  PutU32(t, 0, 0xf1ffffff);  // byte-swapped 1.20 magic
  EXPECT_EQ(kind_of(t), ErrorKind::kUnsupported);
  t = h.table;
  t[7] = 4;  // 32-bit pointers
  EXPECT_EQ(kind_of(t), ErrorKind::kUnsupported);
  t = h.table;
  t[6] = 3;  // no such PC quantum
  EXPECT_EQ(kind_of(t), ErrorKind::kMalformed);
  t = h.table;
  PutU64(t, 8, uint64_t{1} << 61);  // nfunc * 8 overflows
  EXPECT_EQ(kind_of(t), ErrorKind::kMalformed);
  PutU64(t, 8, (uint64_t{1} << 61) - 1);  // (nfunc + 1) * 8 overflows
  EXPECT_EQ(kind_of(t), ErrorKind::kMalformed);
  t = h.table;
  PutU64(t, 8, 1000);  // functab too small
  EXPECT_EQ(kind_of(t), ErrorKind::kMalformed);
  t = h.table;
  PutU64(t, 56, t.size() + 1);  // pctab offset beyond the table
  EXPECT_EQ(kind_of(t), ErrorKind::kMalformed);
  EXPECT_EQ(kind_of(std::vector<uint8_t>(h.table.begin(), h.table.begin() + 71)),
            ErrorKind::kMalformed);
}

TEST(PclntabTest, PcValueVarintsAndQuantum) {
  // A table with a 3-byte value varint and a PC quantum of 4 (arm64).
  HandTable h = BuildHandTable(true);
  std::vector<uint8_t> t = h.table;
  t[6] = 4;
  Pclntab tab(t, kText, h.gofunc);
  FuncRef f = tab.FuncAt(0);
  // pcln of f encodes runs of 0x10 and 0xf0 "quanta": with minLC 4 they
  // cover 0x40 and 0x3c0 bytes.
  EXPECT_EQ(tab.FrameAt(f, kText + 0x3f).line, 10);
  EXPECT_EQ(tab.FrameAt(f, kText + 0x40).line, 12);
  EXPECT_EQ(tab.FrameAt(f, kText + 0x3ff).line, 12);

  std::vector<uint8_t> v;
  AppendUvarint(v, 300000);
  uint64_t off = 0;
  EXPECT_EQ(ByteView(v, "varint").Uvarint(&off), 300000u);
  EXPECT_EQ(off, 3u);
  std::vector<uint8_t> endless(11, 0x80);
  off = 0;
  EXPECT_THROW(ByteView(endless, "varint").Uvarint(&off), Error);
}

TEST(PclntabTest, PcValueTableWithoutTerminatorThrows) {
  HandTable h = BuildHandTable(true);
  // A table starting at the last byte of the pclntab has no room for its
  // PC delta: the decoder must throw instead of reading past the bytes.
  uint64_t pctab_off;
  std::memcpy(&pctab_off, &h.table[56], 8);
  Pclntab tab(h.table, kText, h.gofunc);
  FuncRef g = tab.FuncAt(1);
  uint32_t last = static_cast<uint32_t>(h.table.size() - pctab_off - 1);
  EXPECT_THROW(tab.PcValue(g, last, kText + 0x100), Error);
  EXPECT_THROW(tab.PcValue(g, last + 1, kText + 0x100), Error);
}

// A pc table cut inside a varint, or with a varint of more than ten bytes,
// fails with the Error ByteView gives for the same bytes: the decoder's raw
// loop must stop at the same byte and say the same thing.
TEST(PclntabTest, PcValueErrorsAreByteViewErrors) {
  HandTable h = BuildHandTable(true);
  uint64_t pctab_off;
  std::memcpy(&pctab_off, &h.table[56], 8);
  auto error_of = [&](const std::vector<uint8_t>& tail, uint32_t* table_off) {
    std::vector<uint8_t> t = h.table;
    *table_off = static_cast<uint32_t>(t.size() - pctab_off);
    t.insert(t.end(), tail.begin(), tail.end());
    Pclntab tab(t, kText, h.gofunc);
    try {
      tab.PcValue(tab.FuncAt(1), *table_off, kText + 0x10000);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  struct Case {
    std::vector<uint8_t> tail;
    uint64_t varint_at;  // offset of the failing varint after the table's start
  };
  const std::vector<uint8_t> overlong(10, 0x80);
  std::vector<uint8_t> second_overlong{0x02};
  second_overlong.insert(second_overlong.end(), overlong.begin(), overlong.end());
  std::vector<uint8_t> eleven_bytes = overlong;  // ends in an 11th byte: still too long
  eleven_bytes.insert(eleven_bytes.end(), {0x01, 0x02, 0x10});
  for (const Case& c : {Case{{0x82}, 0}, Case{{0x02, 0x80, 0x80}, 1}, Case{overlong, 0},
                        Case{second_overlong, 1}, Case{eleven_bytes, 0}, Case{{0x02, 0x10}, 2}}) {
    uint32_t table_off = 0;
    const std::string got = error_of(c.tail, &table_off);
    std::vector<uint8_t> pctab(h.table.begin() + static_cast<ptrdiff_t>(pctab_off), h.table.end());
    pctab.insert(pctab.end(), c.tail.begin(), c.tail.end());
    ByteView view(pctab, "pclntab pctab");
    uint64_t off = table_off + c.varint_at;
    Expected<uint64_t> want =
        c.varint_at == 2 ? Expected<uint64_t>(view.OutOfRange(off, 1)) : view.TryUvarint(&off);
    ASSERT_FALSE(want.has_value());
    EXPECT_EQ(got, want.error().what()) << c.tail.size();
  }
}

// The symbolizer hands out references into its cache while it grows: a
// frame looked up first is still there, unchanged, after many thousands more
// PCs (PC 0 among them) were added, and every PC is counted once.
TEST(SymbolizerTest, FramesStayValidWhileTheCacheGrows) {
  HandTable h = BuildHandTable(true);
  Pclntab tab(h.table, kText, h.gofunc);
  Symbolizer sym(tab, TraitsForVersion({1, 26, 0}));
  const PcFrames& inl = sym.FramesFor(kText + 0x26);
  const SymFrame* frame = inl.frames.data();
  ASSERT_EQ(inl.frames.size(), 1u);
  EXPECT_EQ(inl.frames[0].function, "main.inl");
  EXPECT_EQ(sym.FuncNameForPc(kText + 0x26), "main.inl");
  EXPECT_EQ(sym.FramesFor(0).frames.size(), 1u);
  for (uint64_t pc = kText - 0x800; pc < kText + 0x10000; ++pc) {
    (void)sym.FramesFor(pc);
    if (pc % 3 == 0) (void)sym.FuncNameForPc(pc);
  }
  EXPECT_EQ(&sym.FramesFor(kText + 0x26), &inl);
  EXPECT_EQ(inl.frames.data(), frame);
  EXPECT_EQ(frame->function, "main.inl");
  EXPECT_EQ(frame->printed_name, "main.inl");
  EXPECT_EQ(frame->pc, kText + 0x25);
  EXPECT_TRUE(frame->inlined);
  EXPECT_FALSE(inl.lookup_failed);
  EXPECT_EQ(sym.FuncNameForPc(kText + 0x26), "main.inl");
  EXPECT_TRUE(sym.FramesFor(kText + 0x20000).lookup_failed);  // in no function
  EXPECT_EQ(sym.distinct_pcs(), 0x10800u + 2);                // and PC 0, and the last one
}

// The lookup that symbolizing ahead makes of a stack's first shown PC
// answers as FuncNameForPc and FramesFor each would, whichever of the two
// was asked before, and decodes each PC once.
TEST(SymbolizerTest, NameAndFramesAtOnceAnswerAsEachAlone) {
  HandTable h = BuildHandTable(true);
  Pclntab tab(h.table, kText, h.gofunc);
  const RuntimeTraits traits = TraitsForVersion({1, 26, 0});
  Symbolizer alone(tab, traits);
  Symbolizer together(tab, traits);
  for (uint64_t pc = kText - 0x10; pc < kText + 0x210; ++pc) {
    if (pc % 3 == 0) (void)together.FuncNameForPc(pc);
    if (pc % 3 == 1) (void)together.FramesFor(pc);
    const Symbolizer::NameAndFrames at_once = together.FuncNameForPcAndFrames(pc);
    EXPECT_EQ(at_once.name, alone.FuncNameForPc(pc)) << Hex(pc);
    const PcFrames& want = alone.FramesFor(pc);
    const PcFrames& got = together.FramesFor(pc);
    EXPECT_EQ(at_once.frames, &got) << Hex(pc);
    EXPECT_EQ(got.lookup_failed, want.lookup_failed) << Hex(pc);
    ASSERT_EQ(got.frames.size(), want.frames.size()) << Hex(pc);
    for (size_t i = 0; i < got.frames.size(); ++i) {
      EXPECT_EQ(got.frames[i].function, want.frames[i].function) << Hex(pc);
      EXPECT_EQ(got.frames[i].file, want.frames[i].file) << Hex(pc);
      EXPECT_EQ(got.frames[i].line, want.frames[i].line) << Hex(pc);
      EXPECT_EQ(got.frames[i].pc, want.frames[i].pc) << Hex(pc);
    }
  }
  EXPECT_EQ(together.FuncNameForPcAndFrames(kText + 0x26).name, "main.inl");
  EXPECT_EQ(together.distinct_pcs(), alone.distinct_pcs());
  EXPECT_EQ(together.failed_lookups(), alone.failed_lookups());
}

// ExpandFinalInlineFrame says when its answer holds for every stack that ends
// at the same PC: not inside inlined code, or in no function; a PC inside
// inlined code is expanded each time.
TEST(SymbolizerTest, FinalFrameExpansionSaysWhenItHoldsForEveryStack) {
  HandTable h = BuildHandTable(true);
  Pclntab tab(h.table, kText, h.gofunc);
  Symbolizer sym(tab, TraitsForVersion({1, 26, 0}));
  for (int turn = 0; turn < 2; ++turn) {
    bool plain = true;
    const std::vector<uint64_t> inlined = {kText + 0x111, kText + 0x26};
    const std::optional<std::vector<uint64_t>> expanded =
        sym.ExpandFinalInlineFrame(inlined, &plain);
    ASSERT_TRUE(expanded.has_value()) << turn;
    EXPECT_GT(expanded->size(), inlined.size()) << turn;
    EXPECT_FALSE(plain) << turn;
    for (uint64_t last : {kText + 0x31, kText + 0x20000}) {
      plain = false;
      const std::vector<uint64_t> stack = {kText + 0x111, last};
      EXPECT_FALSE(sym.ExpandFinalInlineFrame(stack, &plain).has_value()) << Hex(last);
      EXPECT_TRUE(plain) << Hex(last) << " turn " << turn;
    }
  }
  bool plain = true;
  EXPECT_FALSE(sym.ExpandFinalInlineFrame({}, &plain).has_value());
  EXPECT_FALSE(plain);
}

TEST(GoBinaryTest, NotGoAndStripped) {
  // The test binary itself is ELF but not Go.
  ElfFile self = ElfFile::Open("/proc/self/exe");
  GoBinary bin(self);
  EXPECT_FALSE(bin.build_info());
  EXPECT_EQ(bin.version_source(), bin.version() ? "rodata scan" : "");
  try {
    bin.OpenPclntab(0);
    ADD_FAILURE() << "expected kNotGo";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotGo) << e.what();
  }
}

TEST(GoBinaryTest, ScanForGoVersion) {
  auto scan = [](std::string_view s) {
    return ScanForGoVersion(Bytes(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
  };
  EXPECT_EQ(scan(std::string_view("abc\0go1.21.5xyz", 15)), (GoVersion{1, 21, 5}));
  EXPECT_EQ(scan("go1.21.5 and go1.21.5 again"), (GoVersion{1, 21, 5}));
  EXPECT_FALSE(scan("go1.21.5 and go1.22.0"));
  EXPECT_FALSE(scan("cargo1.21 only"));
  EXPECT_FALSE(scan("nothing here"));
}

}  // namespace
}  // namespace goheap2pprof

namespace goheap2pprof {
namespace {

// A hidden runtime function (at 0), main.main (0x100) and main.alloc with
// an inlined helper (0x200), loaded at `bias`, and their symbolizer.
struct WarmerTable {
  const HandTable h = BuildGo120Table({testing_go_elf::HandMallocgc(), testing_go_elf::HandMain(),
                                       testing_go_elf::HandAllocWithInlinedHelper()});
  Pclntab tab{h.table, kText, h.gofunc};
  const RuntimeTraits traits = TraitsForVersion({1, 26, 0});
  Symbolizer sym{tab, traits};
  const uint64_t bias = 0x400000;
  uint64_t Pc(uint64_t func, uint64_t off) const { return bias + kText + func + off; }
};

// hideRuntime's count of a stack's hidden leading frames, as
// HeapProfileBuilder::HiddenFrames counts them: those before the first PC
// that is 0 or in a function without a hidden prefix; 0 if all are hidden.
size_t HiddenLeadingFrames(Symbolizer& sym, const RuntimeTraits& traits, uint64_t bias,
                           std::span<const uint64_t> stack) {
  for (size_t i = 0; i < stack.size(); ++i) {
    if (stack[i] == 0 || !HasHiddenByRuntimePrefix(sym.FuncNameForPc(stack[i] - bias), traits)) {
      return i;
    }
  }
  return 0;
}

// Each stack warmed, in turn; then every PC of it must be in the
// symbolizer's cache already, and Warm must have said how many of its
// frames are hidden.
void ExpectEveryPcAsked(Symbolizer& sym, const RuntimeTraits& traits, uint64_t bias,
                        const std::vector<std::vector<uint64_t>>& stacks) {
  StackWarmer warmer(sym, traits, bias);
  for (size_t i = 0; i < stacks.size(); ++i) {
    const size_t hidden = warmer.Warm(stacks[i]);
    const uint64_t cached = sym.distinct_pcs();
    for (uint64_t pc : stacks[i]) {
      if (pc != 0) sym.FramesFor(pc - bias);
    }
    EXPECT_EQ(sym.distinct_pcs(), cached) << "stack " << i;
    EXPECT_EQ(hidden, HiddenLeadingFrames(sym, traits, bias, stacks[i])) << "stack " << i;
  }
}

// The warmer asks the symbolizer once for each PC of a stack, passing over
// a recursion's repeats four at a time: a PC between repeats, or among the
// last three, is asked for all the same; PC 0 never is.
TEST(StackWarmerTest, AsksForEveryDistinctPcOfARecursion) {
  HandTable h = BuildHandTable(true);
  Pclntab tab(h.table, kText, h.gofunc);
  // The warmer keeps a reference to the traits: they must outlive it.
  const RuntimeTraits traits = TraitsForVersion({1, 26, 0});
  Symbolizer sym(tab, traits);
  const uint64_t bias = 0x400000;
  const uint64_t a = bias + kText + 0x10, b = bias + kText + 0x110, c = bias + kText + 0x26;
  const uint64_t d = bias + kText + 0x40, e = bias + kText + 0x120;
  std::vector<uint64_t> stack(8, a);
  stack.push_back(b);  // where a second skip of four would end
  stack.insert(stack.end(), 6, a);
  stack.push_back(0);
  stack.insert(stack.end(), {a, a, c, a});
  stack.insert(stack.end(), 5, d);
  stack.push_back(e);  // among the last words
  StackWarmer warmer(sym, traits, bias);
  warmer.Warm(stack);
  EXPECT_EQ(sym.distinct_pcs(), 5u);
  for (uint64_t pc : {a, b, c, d, e}) {
    EXPECT_FALSE(sym.FramesFor(pc - bias).lookup_failed) << std::hex << pc;
  }
  EXPECT_EQ(sym.distinct_pcs(), 5u);  // each was cached by Warm
}

// A stack that starts as the last one did is warmed from where the two part
// (the last one's PCs were all asked for). Still, after its turn every PC of
// every stack is in the symbolizer's cache, whether they part among the
// hidden leading frames, at the first shown one, after it, or not at all,
// with PC 0, a recursion and all-hidden stacks among them.
TEST(StackWarmerTest, StacksStartingAlikeHaveEveryPcAsked) {
  WarmerTable t;
  const auto hidden = [&](uint64_t off) { return t.Pc(0, off); };
  const auto main_pc = [&](uint64_t off) { return t.Pc(0x100, off); };
  const auto alloc = [&](uint64_t off) { return t.Pc(0x200, off); };
  const std::vector<std::vector<uint64_t>> stacks = {
      {hidden(0x10), hidden(0x20), alloc(0x48), main_pc(0x10)},
      {hidden(0x10), hidden(0x20), alloc(0x48), main_pc(0x20)},  // part after the first shown
      {hidden(0x10), hidden(0x20), alloc(0x31), main_pc(0x20)},  // at it
      {hidden(0x10), hidden(0x30), alloc(0x50), main_pc(0x30)},  // among the hidden
      {hidden(0x10), hidden(0x30)},                              // all hidden
      {hidden(0x10), hidden(0x30), hidden(0x40)},                // and more
      {hidden(0x10), hidden(0x30), hidden(0x40), 0, alloc(0x60)},
      {0, alloc(0x70)},
      {alloc(0x70), main_pc(0x40), main_pc(0x40), main_pc(0x40), main_pc(0x40), main_pc(0x50)},
      {alloc(0x70), main_pc(0x40), main_pc(0x40), main_pc(0x60)},
      {alloc(0x70), main_pc(0x40), main_pc(0x40), main_pc(0x60)},  // all alike
  };
  ExpectEveryPcAsked(t.sym, t.traits, t.bias, stacks);
}

// A stack that ends as the last one did is warmed up to where the two part
// (the last one's PCs were all asked for, its hidden leading ones too).
// Still, every PC of every stack is in the cache after its turn, whether
// they part among the hidden frames, at the first shown one, after it, in a
// recursion's run, past the end the warmer keeps (kRememberedTrailingPcs),
// or not at all, with PC 0 among them.
TEST(StackWarmerTest, StacksEndingAlikeHaveEveryPcAsked) {
  WarmerTable t;
  const auto hidden = [&](uint64_t off) { return t.Pc(0, off); };
  const auto main_pc = [&](uint64_t off) { return t.Pc(0x100, off); };
  const auto alloc = [&](uint64_t off) { return t.Pc(0x200, off); };
  std::vector<uint64_t> long_end;
  for (uint64_t k = 0; k < kRememberedTrailingPcs + 8; ++k) long_end.push_back(main_pc(k % 0x80));
  const auto ending = [&](std::vector<uint64_t> head) {
    head.insert(head.end(), long_end.begin(), long_end.end());
    return head;
  };
  const std::vector<std::vector<uint64_t>> stacks = {
      {hidden(0x10), alloc(0x48), main_pc(0x10), main_pc(0x20)},
      {hidden(0x20), alloc(0x50), main_pc(0x10), main_pc(0x20)},  // part at the first shown
      {hidden(0x30), hidden(0x40), alloc(0x50), main_pc(0x10), main_pc(0x20)},  // among hidden
      {alloc(0x60), main_pc(0x10), main_pc(0x20)},                              // all shown
      {alloc(0x60), alloc(0x60), alloc(0x60), alloc(0x70), main_pc(0x20)},      // in a run
      {alloc(0x78), alloc(0x70), alloc(0x70), alloc(0x70), main_pc(0x20)},      // the run shared
      {0, alloc(0x70), main_pc(0x20)},
      {hidden(0x50), 0, main_pc(0x20)},
      {hidden(0x50), 0, main_pc(0x20)},  // all alike
      ending({alloc(0x48)}),
      ending({alloc(0x31), main_pc(0x7f)}),  // past the end the warmer keeps
      ending({hidden(0x60), main_pc(0x7e)}),
  };
  ExpectEveryPcAsked(t.sym, t.traits, t.bias, stacks);
}

}  // namespace
}  // namespace goheap2pprof
