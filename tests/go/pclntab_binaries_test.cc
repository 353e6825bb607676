// GoBinary + Pclntab on real Go binaries: testdata/gobin/frames as the
// go_programs fixture built it with every toolchain and build mode (the Go
// tier; tests/unit/pclntab_test.cc has the hand-built tables).
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "elf/elf_file.h"
#include "go_toolchains.h"
#include "gobin/go_binary.h"
#include "gobin/pclntab.h"
#include "runtime/runtime_traits.h"
#include "symbolize/symbolizer.h"

namespace goheap2pprof {
namespace {

using testing_go::RunCommand;
using testing_go::Toolchain;
using testing_go::Toolchains;

struct BuildMode {
  std::string label;
  bool pie;
  bool cgo;
};

struct BuiltBinary {
  std::string skip_reason;  // non-empty: not available
  std::string path;         // empty: skipped or failed (output says why)
  std::string output;       // stdout of running it, or the failure
};

const std::vector<BuildMode>& BuildModes() {
  static const std::vector<BuildMode> kModes = {
      {"exe", false, false},
      {"pie", true, false},
      {"exe-cgo", false, true},
      {"pie-cgo", true, true},
  };
  return kModes;
}

// The fixture's testdata/gobin/frames, run once per test process.
const BuiltBinary& GetBinary(const Toolchain& tc, const BuildMode& mode) {
  static std::map<std::string, BuiltBinary> cache;
  std::string key = tc.label + "-" + mode.label;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  BuiltBinary& b = cache[key];
  testing_go::GoProgram program = testing_go::FindGoProgram(tc, "frames-amd64-" + mode.label);
  b.skip_reason = program.skip_reason;
  b.output = program.error;
  if (!program.skip_reason.empty() || !program.error.empty()) return b;
  int status = 0;
  b.output = RunCommand("'" + program.path + "'", &status);
  if (status != 0) {
    b.output = "running " + program.path + " failed:\n" + b.output;
  } else {
    b.path = program.path;
  }
  return b;
}

class GoBinaryRealTest : public testing_go::ToolchainTest<BuildMode, BuildModes> {
 protected:
  void SetUp() override {
    ToolchainTest::SetUp();
    bin_ = &GetBinary(*tc_, *mode_);
    if (!bin_->skip_reason.empty()) GTEST_SKIP() << bin_->skip_reason;
    ASSERT_FALSE(bin_->path.empty()) << bin_->output;
    testing_go::OpenedGoBinary opened = testing_go::OpenGoBinary(bin_->path);
    elf_ = std::move(opened.elf);
    go_ = std::move(opened.go);
  }

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
    pcs.push_back(
        {tag, std::stoull(hex, nullptr, 16), inlined != 0, function, file, std::stoll(line_text)});
  }
  ASSERT_TRUE(have_anchor) << bin_->output;
  if (!mode_->pie) {
    EXPECT_EQ(bias, 0u);
  }
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
    if (tc_->minor < 20) {
      EXPECT_EQ(fr.start_line, 0);
    }
    if (tc_->minor >= 20 && p.function.rfind("main.", 0) == 0) {
      EXPECT_GT(fr.start_line, 0);
    }
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
  EXPECT_EQ(elf_->GnuBuildId().empty(), !mode_->cgo && tc_->minor < 24) << elf_->GnuBuildId();
  RecordProperty("pclntab_source", loc.source);
  std::cout << "  [" << tc_->label << " " << mode_->label << "] pclntab from " << loc.source
            << " at " << Hex(loc.vaddr) << ", runtime.text " << Hex(loc.text_start) << ", .text "
            << Hex(text->addr) << ", header textStart " << Hex(tab.header_text_start())
            << ", gofunc " << Hex(loc.gofunc_vaddr) << ", magic " << Hex(tab.magic()) << ", nfunc "
            << tab.nfunc() << "\n";
}

TEST_P(GoBinaryRealTest, VersionFallbacksWithoutBuildInfo) {
  // Erase the build-info magic: the version must still be found, from
  // runtime.buildVersion or (external PIE, where its pointer is a
  // relocation) the .rodata scan.
  size_t erased = 0;
  std::vector<uint8_t> bytes = testing_go::WithoutBuildInfo(*elf_, &erased);
  ASSERT_EQ(erased, 1u);
  ElfFile copy = ElfFile::FromBytes(std::move(bytes), "copy");
  GoBinary bin(copy);
  EXPECT_FALSE(bin.build_info());
  ASSERT_TRUE(bin.version()) << "no version found";
  EXPECT_EQ(bin.version()->minor, tc_->minor);
  std::cout << "  [" << tc_->label << " " << mode_->label
            << "] without buildinfo: " << FormatGoVersion(*bin.version()) << " from "
            << bin.version_source() << "\n";
  if (!mode_->pie) {
    EXPECT_EQ(bin.version_source(), "runtime.buildVersion");
  }
}

INSTANTIATE_TEST_SUITE_P(GoBinaryBuilds, GoBinaryRealTest, testing_go::ToolchainCases(BuildModes),
                         testing_go::CaseNamer(BuildModes));

}  // namespace
}  // namespace goheap2pprof
