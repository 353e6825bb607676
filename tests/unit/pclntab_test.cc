// Pclntab decoding on hand-built tables (both layouts, corrupt input), and
// GoBinary + Pclntab on real Go binaries built during the test run with each
// available toolchain and build mode (testdata/gobin/frames).
#include "gobin/pclntab.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "elf/elf_file.h"
#include "gobin/go_binary.h"
#include "runtime/runtime_traits.h"
#include "symbolize/symbolizer.h"
#include "go_toolchains.h"
#include "hand_pclntab.h"

namespace goheap2pprof {
namespace {

using namespace testing_pclntab;  // NOLINT: test fixtures
using testing_go::RunCommand;
using testing_go::Toolchain;
using testing_go::Toolchains;

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

// ---------------------------------------------------------------------------
// Real Go binaries.

struct BuildMode {
  std::string label;
  bool pie;
  bool cgo;
};

struct BuiltBinary {
  std::string skip_reason;  // non-empty: not available
  std::string path;
  std::string output;  // stdout of running it
};

const std::vector<BuildMode>& BuildModes() {
  static const std::vector<BuildMode> kModes = {
      {"exe", false, false},
      {"pie", true, false},
      {"cgo", false, true},
      {"cgo_pie", true, true},
  };
  return kModes;
}

// Builds (once per test run) and runs testdata/gobin/frames.
const BuiltBinary& GetBinary(const Toolchain& tc, const BuildMode& mode) {
  static std::map<std::string, BuiltBinary> cache;
  std::string key = tc.label + "-" + mode.label;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  BuiltBinary& b = cache[key];

  std::filesystem::path dir = std::filesystem::path(GOHEAP2PPROF_BINARY_DIR) / "testdata_gobin";
  b.path = (dir / ("frames-" + key)).string();
  testing_go::BuildResult built =
      testing_go::BuildGoProgram(tc, "gobin/frames", b.path, "amd64", mode.pie, mode.cgo);
  if (!built.skip_reason.empty()) {
    b.skip_reason = built.skip_reason;
    b.path.clear();
    return b;
  }
  if (!built.error.empty()) {
    // A toolchain that fails to build our program is a real failure,
    // reported by the caller.
    b.path.clear();
    b.output = built.error;
    return b;
  }
  int status = 0;
  b.output = RunCommand("'" + b.path + "'", &status);
  if (status != 0) {
    b.path.clear();
    b.output = "running the program failed:\n" + b.output;
  }
  return b;
}

using RealCase = testing_go::ToolchainCase;

class GoBinaryRealTest : public ::testing::TestWithParam<RealCase> {
 protected:
  void SetUp() override {
    tc_ = &Toolchains()[GetParam().toolchain];
    mode_ = &BuildModes()[GetParam().mode];
    bin_ = &GetBinary(*tc_, *mode_);
    if (!bin_->skip_reason.empty()) GTEST_SKIP() << bin_->skip_reason;
    ASSERT_FALSE(bin_->path.empty()) << bin_->output;
    elf_ = std::make_unique<ElfFile>(ElfFile::Open(bin_->path));
    go_ = std::make_unique<GoBinary>(*elf_);
  }

  const Toolchain* tc_ = nullptr;
  const BuildMode* mode_ = nullptr;
  const BuiltBinary* bin_ = nullptr;
  std::unique_ptr<ElfFile> elf_;
  std::unique_ptr<GoBinary> go_;
};

TEST_P(GoBinaryRealTest, EveryFunctabEntryMatchesItsSymbol) {
  Pclntab tab = go_->OpenPclntab(0);
  ASSERT_GT(tab.nfunc(), 100u);
  size_t checked = 0;
  size_t shortened = 0;
  std::vector<std::string> problems;
  for (uint32_t i = 0; i < tab.nfunc(); ++i) {
    FuncRef f = tab.FuncAt(i);
    std::string name(tab.FuncName(f));
    // Assembly (ABI0) functions and ABI wrappers carry an ".abi0" suffix in
    // the ELF symtab but not in the pclntab, so one pclntab name may belong
    // to two functions.
    // cmd/link also writes the middle dot of names like
    // "type:.eq.runtime.untracedG·7" as '.' in ELF symbol names.
    for (size_t dot = name.find("\u00b7"); dot != std::string::npos; dot = name.find("\u00b7")) {
      name.replace(dot, 2, ".");
    }
    std::optional<ElfSymbol> sym = elf_->FindSymbol(name);
    std::optional<ElfSymbol> abi0 = elf_->FindSymbol(name + ".abi0");
    bool matches = (sym && sym->value == f.entry) || (abi0 && abi0->value == f.entry);
    if (!sym && !abi0 && tc_->minor < 21 && name.find("[...]") != std::string::npos) {
      // Before 1.21 the linker shortened every bracketed part of pclntab
      // names to "[...]" (generic shapes, but also "type..eq.[2]T"), so the
      // symbol cannot be found by name.
      ++shortened;
    } else if (!matches) {
      problems.push_back(name + ": no symbol at entry " + Hex(f.entry) + " (symbol " +
                         (sym ? Hex(sym->value) : "none") + ", .abi0 " +
                         (abi0 ? Hex(abi0->value) : "none") + ")");
    }
    std::optional<FuncRef> at = tab.FindFunc(f.entry);
    if (!at || at->index != i) problems.push_back("FindFunc(entry) wrong for " + name);
    uint64_t next = i + 1 < tab.nfunc() ? tab.FuncAt(i + 1).entry : tab.text_end();
    if (next > f.entry + 1) {
      at = tab.FindFunc(f.entry + 1);
      if (!at || at->index != i) problems.push_back("FindFunc(entry+1) wrong for " + name);
    }
    ++checked;
  }
  EXPECT_TRUE(problems.empty()) << problems.size() << " problems, first: " << problems[0];
  EXPECT_EQ(checked, tab.nfunc());
  EXPECT_LT(shortened, tab.nfunc() / 20);
  if (tc_->minor >= 21) {
    EXPECT_EQ(shortened, 0u);
  }
}

TEST_P(GoBinaryRealTest, FramesMatchCallersFrames) {
  std::optional<uint64_t> anchor_sym = go_->SymbolAddress("main.anchor");
  ASSERT_TRUE(anchor_sym);
  std::istringstream in(bin_->output);
  std::string line;
  uint64_t bias = 0;
  bool have_anchor = false;
  struct Pc {
    std::string tag;
    uint64_t pc;
    bool inlined;
    std::string function, file;
    int64_t line;
  };
  std::vector<Pc> pcs;
  while (std::getline(in, line)) {
    if (line.rfind("anchor ", 0) == 0) {
      bias = std::stoull(line.substr(7), nullptr, 16) - *anchor_sym;
      have_anchor = true;
      continue;
    }
    // pc <tag> <hex> <0|1>\t<function>\t<file>\t<line>
    std::istringstream fields(line);
    std::string head, function, file, line_text;
    std::getline(fields, head, '\t');
    std::getline(fields, function, '\t');
    std::getline(fields, file, '\t');
    std::getline(fields, line_text);
    std::istringstream hs(head);
    std::string word, tag, hex;
    int inlined = 0;
    hs >> word >> tag >> hex >> inlined;
    ASSERT_EQ(word, "pc") << line;
    pcs.push_back({tag, std::stoull(hex, nullptr, 16), inlined != 0, function, file,
                   std::stoll(line_text)});
  }
  ASSERT_TRUE(have_anchor) << bin_->output;
  if (!mode_->pie) { EXPECT_EQ(bias, 0u); }
  ASSERT_GT(pcs.size(), 40u);

  Pclntab tab = go_->OpenPclntab(bias);
  // Frame.Function is the name as the runtime prints it (generic shapes as
  // "[...]" since Go 1.21): the symbolizer's printed name, not the pclntab's.
  ASSERT_TRUE(go_->version());
  const RuntimeTraits traits = TraitsForVersion(*go_->version());
  const Symbolizer sym(tab, traits);
  size_t inlined_seen = 0;
  for (size_t i = 0; i < pcs.size(); ++i) {
    const Pc& p = pcs[i];
    SCOPED_TRACE(p.tag + " pc " + Hex(p.pc) + " " + p.function);
    std::optional<FuncRef> f = tab.FindFunc(p.pc - 1);
    ASSERT_TRUE(f);
    PcFrame fr = tab.FrameAt(*f, p.pc - 1);
    EXPECT_EQ(sym.PrintedName(fr.function), p.function);
    EXPECT_EQ(fr.file, p.file);
    EXPECT_EQ(fr.line, p.line);
    EXPECT_EQ(fr.inlined, p.inlined);
    if (tc_->minor < 20) { EXPECT_EQ(fr.start_line, 0); }
    if (tc_->minor >= 20 && p.function.rfind("main.", 0) == 0) { EXPECT_GT(fr.start_line, 0); }
    // Logical stacks: after an inlined frame comes entry+parentPc+1 of the
    // same physical function.
    std::optional<uint64_t> parent = tab.InlineParentPc(*f, p.pc - 1);
    EXPECT_EQ(parent.has_value(), fr.inlined);
    if (parent && i + 1 < pcs.size() && pcs[i + 1].tag == p.tag) {
      ++inlined_seen;
      EXPECT_EQ(pcs[i + 1].pc, *parent + 1);
    }
  }
  EXPECT_GE(inlined_seen, 5u);
}

TEST_P(GoBinaryRealTest, VersionAndLayout) {
  ASSERT_TRUE(go_->version());
  EXPECT_EQ(go_->version()->major, 1);
  EXPECT_EQ(go_->version()->minor, tc_->minor);
  EXPECT_EQ(go_->version_source(), "buildinfo");
  ASSERT_TRUE(go_->build_info());
  EXPECT_EQ(go_->build_info()->main_path, "example.com/frames");

  PclntabLocation loc = go_->LocatePclntab();
  Pclntab tab = go_->OpenPclntab(0);
  EXPECT_EQ(tab.format(), tc_->minor >= 20 ? PclntabFormat::kGo120 : PclntabFormat::kGo118);
  EXPECT_EQ(loc.text_source, "runtime.text");
  ASSERT_TRUE(go_->SymbolAddress("runtime.text"));
  EXPECT_EQ(tab.text_start(), *go_->SymbolAddress("runtime.text"));
  if (tc_->minor >= 26) {
    EXPECT_EQ(tab.header_text_start(), 0u);
    EXPECT_EQ(loc.source, ".gopclntab");
  } else if (!mode_->pie) {
    EXPECT_EQ(tab.header_text_start(), tab.text_start());
  }
  if (tc_->minor < 26 && mode_->pie && mode_->cgo) {
    EXPECT_EQ(loc.source, "runtime.pclntab symbol");
  }
  EXPECT_NE(loc.gofunc_vaddr, 0u);
  const ElfSection* text = elf_->FindSection(".text");
  ASSERT_NE(text, nullptr);
  if (mode_->cgo) {
    EXPECT_NE(text->addr, tab.text_start()) << "expected the external-link .text/runtime.text gap";
  }
  EXPECT_EQ(elf_->type(), mode_->pie ? ET_DYN : ET_EXEC);
  EXPECT_FALSE(elf_->GoBuildId().empty());
  // GNU build IDs: from the system linker with cgo; from cmd/link by default
  // since Go 1.24.
  EXPECT_EQ(elf_->GnuBuildId().empty(), !mode_->cgo && tc_->minor < 24)
      << elf_->GnuBuildId();
  RecordProperty("pclntab_source", loc.source);
  std::cout << "  [" << tc_->label << " " << mode_->label << "] pclntab from " << loc.source
            << " at " << Hex(loc.vaddr) << ", runtime.text " << Hex(loc.text_start)
            << ", .text " << Hex(text->addr) << ", header textStart "
            << Hex(tab.header_text_start()) << ", gofunc " << Hex(loc.gofunc_vaddr)
            << ", magic " << Hex(tab.magic()) << ", nfunc " << tab.nfunc() << "\n";
}

TEST_P(GoBinaryRealTest, VersionFallbacksWithoutBuildInfo) {
  // Erase the build-info magic: the version must still be found, from
  // runtime.buildVersion or (external PIE, where its pointer is a
  // relocation) the .rodata scan.
  std::vector<uint8_t> bytes(elf_->bytes().begin(), elf_->bytes().end());
  std::string_view magic("\xff Go buildinf:", 14);
  size_t erased = 0;
  for (size_t i = 0; i + magic.size() <= bytes.size(); i += 16) {
    if (std::memcmp(&bytes[i], magic.data(), magic.size()) == 0) {
      bytes[i + 1] = 'X';
      ++erased;
    }
  }
  ASSERT_EQ(erased, 1u);
  ElfFile copy = ElfFile::FromBytes(std::move(bytes), "copy");
  GoBinary bin(copy);
  EXPECT_FALSE(bin.build_info());
  ASSERT_TRUE(bin.version()) << "no version found";
  EXPECT_EQ(bin.version()->minor, tc_->minor);
  std::cout << "  [" << tc_->label << " " << mode_->label << "] without buildinfo: "
            << FormatGoVersion(*bin.version()) << " from " << bin.version_source() << "\n";
  if (!mode_->pie) { EXPECT_EQ(bin.version_source(), "runtime.buildVersion"); }
}

INSTANTIATE_TEST_SUITE_P(GoBinaryBuilds, GoBinaryRealTest,
                         ::testing::ValuesIn(testing_go::AllToolchainCases(BuildModes().size())),
                         [](const auto& param_info) {
                           return testing_go::CaseName(param_info.param,
                                                       BuildModes()[param_info.param.mode].label);
                         });

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
