// Stripped binaries: runtime variables, text start and funcdata recovered
// without .symtab must equal what the symbol table of an unstripped twin
// says. testdata/gobin/heapvars as the go_programs fixture built it with each
// toolchain, build mode and link mode (and cross-built for arm64) twice:
// with -ldflags="-s -w" and with -ldflags="-w -w". The twin's flags have the
// same length on purpose: the build info records the -ldflags string, so
// flags of another length would move every data section (verified by
// LayoutsMatch).
#include <elf.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "elf/elf_file.h"
#include "go_toolchains.h"
#include "gobin/code_scan.h"
#include "gobin/go_binary.h"
#include "gobin/memstats_variables.h"
#include "gobin/moduledata.h"
#include "gobin/runtime_variables.h"
#include "runtime/runtime_traits.h"
#include "stripped_view.h"

namespace goheap2pprof {
namespace {

using testing_go::Toolchain;
using testing_go::Toolchains;

struct Mode {
  std::string label;
  std::string arch;  // GOARCH
  bool pie;
  bool cgo;
};

const std::vector<Mode>& Modes() {
  static const std::vector<Mode> kModes = {
      {"amd64-exe", "amd64", false, false},    {"amd64-pie", "amd64", true, false},
      {"amd64-exe-cgo", "amd64", false, true}, {"amd64-pie-cgo", "amd64", true, true},
      {"arm64-exe", "arm64", false, false},    {"arm64-pie", "arm64", true, false},
  };
  return kModes;
}

struct Twins {
  std::string skip_reason;
  std::string error;  // build failure: a test failure, not a skip
  std::string stripped, unstripped;
};

const Twins& GetTwins(const Toolchain& tc, const Mode& mode) {
  static std::map<std::string, Twins> cache;
  const std::string key = tc.label + "-" + mode.label;
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Twins& t = cache[key];
  for (bool strip : {true, false}) {
    testing_go::GoProgram p =
        testing_go::FindGoProgram(tc, "heapvars-" + mode.label + (strip ? "-stripped" : "-twin"));
    t.skip_reason = p.skip_reason;
    t.error = p.error;
    if (!p.skip_reason.empty() || !p.error.empty()) return t;
    (strip ? t.stripped : t.unstripped) = p.path;
  }
  return t;
}

class StrippedTest : public testing_go::ToolchainTest<Mode, Modes> {
 protected:
  void SetUp() override {
    ToolchainTest::SetUp();
    const Twins& t = GetTwins(*tc_, *mode_);
    if (!t.skip_reason.empty()) GTEST_SKIP() << t.skip_reason;
    ASSERT_TRUE(t.error.empty()) << t.error;
    testing_go::OpenedGoBinary stripped = testing_go::OpenGoBinary(t.stripped);
    testing_go::OpenedGoBinary twin = testing_go::OpenGoBinary(t.unstripped);
    stripped_elf_ = std::move(stripped.elf);
    stripped_ = std::move(stripped.go);
    twin_elf_ = std::move(twin.elf);
    twin_ = std::move(twin.go);
  }

  // What runtime/ says about this version's variables.
  RuntimeVariableLayout Layout() const {
    return TraitsForVersion({1, tc_->minor, tc_->patch}).variables;
  }
  MemstatsVariableLayout MemstatsLayout() const {
    return TraitsForVersion({1, tc_->minor, tc_->patch}).memstats.variables;
  }

  std::unique_ptr<ElfFile> stripped_elf_, twin_elf_;
  std::unique_ptr<GoBinary> stripped_, twin_;
};

// The premise of comparing twins: same code and data layout.
TEST_P(StrippedTest, LayoutsMatch) {
  EXPECT_FALSE(stripped_elf_->HasSymtab());
  EXPECT_TRUE(twin_elf_->HasSymtab());
  EXPECT_EQ(stripped_elf_->machine(), mode_->arch == "arm64" ? EM_AARCH64 : EM_X86_64);
  for (std::string_view name :
       {".text", ".noptrdata", ".data", ".bss", ".noptrbss", ".go.module", ".gopclntab"}) {
    const ElfSection* a = stripped_elf_->FindSection(name);
    const ElfSection* b = twin_elf_->FindSection(name);
    ASSERT_EQ(a == nullptr, b == nullptr) << name;
    if (a == nullptr) continue;
    // Go 1.19's internal linker puts .shstrtab (which names .symtab) in the
    // read-only segment, so .gopclntab moves; only data and text must match.
    if (name == ".gopclntab" && tc_->minor < 26) continue;
    EXPECT_EQ(a->addr, b->addr) << name;
    EXPECT_EQ(a->size, b->size) << name;
  }
}

// The sections the traits give (which the recovery insists on) are where
// this version's linker put each variable, by the twin's symbol table.
TEST_P(StrippedTest, TwinSymbolsAreInTheTraitsSections) {
  const RuntimeVariableLayout layout = Layout();
  const std::pair<std::string_view, DataSection> expected[] = {
      {"runtime.mbuckets", layout.mbuckets},
      {layout.cycle_symbol, layout.cycle},
      {"runtime.MemProfileRate", layout.mem_profile_rate},
      {"runtime.disableMemoryProfiling", layout.disable_memory_profiling},
  };
  for (const auto& [symbol, section] : expected) {
    std::optional<uint64_t> addr = twin_->SymbolAddress(symbol);
    ASSERT_TRUE(addr) << symbol;
    const ElfSection* s = twin_elf_->FindSection(DataSectionName(section));
    ASSERT_NE(s, nullptr) << DataSectionName(section);
    EXPECT_TRUE(*addr >= s->addr && *addr < s->addr + s->size)
        << symbol << " at " << Hex(*addr) << " is not in " << DataSectionName(section);
  }
}

// Fail closed: an address in another section than this version's linker
// uses is refused, even when the code references agree on it.
TEST_P(StrippedTest, VariableInAnotherSectionIsRefused) {
  RuntimeVariableLayout wrong = Layout();
  wrong.mbuckets = wrong.mbuckets == DataSection::kBss ? DataSection::kNoptrbss : DataSection::kBss;
  const std::string want = "is not in " + std::string(DataSectionName(wrong.mbuckets));
  try {
    LocateRuntimeVariables(*stripped_, wrong);
    ADD_FAILURE() << "expected kUnsupported";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
}

TEST_P(StrippedTest, RecoveredVariablesEqualTwinSymbols) {
  RuntimeVariables got = LocateRuntimeVariables(*stripped_, Layout());
  RuntimeVariables want = LocateRuntimeVariables(*twin_, Layout());
  EXPECT_EQ(want.mbuckets.source, "symbol table");
  EXPECT_EQ(got.mbuckets.addr, want.mbuckets.addr) << got.mbuckets.source;
  EXPECT_EQ(got.mem_profile_rate.addr, want.mem_profile_rate.addr) << got.mem_profile_rate.source;
  EXPECT_EQ(got.cycle.addr, want.cycle.addr) << got.cycle.source;
  ASSERT_TRUE(want.disable_memory_profiling);
  ASSERT_TRUE(got.disable_memory_profiling);
  EXPECT_EQ(got.disable_memory_profiling->addr, want.disable_memory_profiling->addr);
  for (const RuntimeVariable* v :
       {&got.mbuckets, &got.mem_profile_rate, &got.cycle, &*got.disable_memory_profiling}) {
    EXPECT_TRUE(v->source.starts_with("recovered from runtime.")) << v->source;
  }
  EXPECT_NE(got.mbuckets.source.find("runtime.mProf_FlushLocked"), std::string::npos);
  std::cout << "  [" << tc_->label << " " << mode_->label << "] mbuckets " << Hex(got.mbuckets.addr)
            << " (" << got.mbuckets.source << "), MemProfileRate " << Hex(got.mem_profile_rate.addr)
            << ", cycle " << Hex(got.cycle.addr) << " (" << got.cycle.source
            << "), disableMemoryProfiling " << Hex(got.disable_memory_profiling->addr) << "\n";
}

// The memory statistics' variables, one pointer per field of
// MemstatsVariables (the optional ones only when present).
std::vector<std::pair<std::string_view, const RuntimeVariable*>> MemstatsFields(
    const MemstatsVariables& v) {
  std::vector<std::pair<std::string_view, const RuntimeVariable*>> out = {
      {"runtime.memstats", &v.memstats},    {"runtime.gcController", &v.gc_controller},
      {"runtime.mheap_", &v.mheap},         {"runtime.allp", &v.allp},
      {"runtime.allglen", &v.allglen},      {"runtime.allm", &v.allm},
      {"runtime.sched", &v.sched},          {"runtime.gomaxprocs", &v.gomaxprocs},
      {"runtime.emptymspan", &v.emptymspan}};
  if (v.starting_stack_size) out.push_back({"runtime.startingStackSize", &*v.starting_stack_size});
  if (v.gc_cpu_limiter) out.push_back({"runtime.gcCPULimiter", &*v.gc_cpu_limiter});
  return out;
}

// Every memory-statistics variable recovered from the stripped binary's code
// is where the twin's symbol table puts it, and the recovery names the
// runtime functions it used.
TEST_P(StrippedTest, MemstatsVariablesEqualTwinSymbols) {
  const MemstatsVariables got = LocateMemstatsVariables(*stripped_, MemstatsLayout());
  EXPECT_EQ(got.starting_stack_size.has_value(), tc_->minor >= 19);
  EXPECT_EQ(got.gc_cpu_limiter.has_value(), tc_->minor >= 19);
  std::cout << "  [" << tc_->label << " " << mode_->label << "]";
  for (const auto& [symbol, var] : MemstatsFields(got)) {
    std::optional<uint64_t> want = twin_->SymbolAddress(symbol);
    ASSERT_TRUE(want) << symbol;
    EXPECT_EQ(var->addr, *want) << symbol << ": " << var->source;
    EXPECT_TRUE(var->source.starts_with("recovered from runtime.")) << var->source;
    std::cout << " " << symbol.substr(8) << "=" << Hex(var->addr);
  }
  std::cout << "\n";
}

// The same recovery on the twin with its symbol table hidden gives the
// twin's symbols, and reading by symbol gives them too.
TEST_P(StrippedTest, MemstatsRecoveryAgreesWithSymbolsOfTheSameFile) {
  size_t retyped = 0;
  ElfFile view_elf = ElfFile::FromBytes(testing_go::WithoutSymtab(*twin_elf_, &retyped), "view");
  ASSERT_EQ(retyped, 1u);
  GoBinary view(view_elf);
  const MemstatsVariables by_code = LocateMemstatsVariables(view, MemstatsLayout());
  const MemstatsVariables by_symbol = LocateMemstatsVariables(*twin_, MemstatsLayout());
  const auto code_fields = MemstatsFields(by_code);
  const auto symbol_fields = MemstatsFields(by_symbol);
  ASSERT_EQ(code_fields.size(), symbol_fields.size());
  for (size_t i = 0; i < code_fields.size(); ++i) {
    EXPECT_EQ(symbol_fields[i].second->source, "symbol table");
    EXPECT_EQ(code_fields[i].second->addr, symbol_fields[i].second->addr)
        << code_fields[i].first << ": " << code_fields[i].second->source;
  }
}

// Fail closed: emptymspan in the other section than this version's linker
// uses is refused, even though the code references agree on it.
TEST_P(StrippedTest, MemstatsVariableInAnotherSectionIsRefused) {
  MemstatsVariableLayout wrong = MemstatsLayout();
  wrong.emptymspan =
      wrong.emptymspan == DataSection::kBss ? DataSection::kNoptrbss : DataSection::kBss;
  try {
    LocateMemstatsVariables(*stripped_, wrong);
    ADD_FAILURE() << "expected kUnsupported";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("runtime.emptymspan"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::string("is not in ") +
                                         std::string(DataSectionName(wrong.emptymspan))),
              std::string::npos)
        << e.what();
  }
}

// Fail closed: the other version family's offset of sched.lock points at no
// address whose goidgen (offset 0) newproc1 and oneNewExtraM use.
TEST_P(StrippedTest, WrongSchedLockOffsetIsRefused) {
  MemstatsVariableLayout wrong = MemstatsLayout();
  wrong.sched_lock = wrong.sched_lock == 24 ? 32 : 24;
  try {
    LocateMemstatsVariables(*stripped_, wrong);
    ADD_FAILURE() << "expected kUnsupported";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("runtime.sched "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("refusing to guess"), std::string::npos) << e.what();
  }
}

TEST_P(StrippedTest, TextStartAndFuncdataFromModuledata) {
  PclntabLocation loc = stripped_->LocatePclntab();
  ASSERT_TRUE(loc.moduledata);
  EXPECT_EQ(loc.text_source, "moduledata.text");
  EXPECT_EQ(loc.text_start, *twin_->SymbolAddress("runtime.text"));
  std::optional<uint64_t> gofunc =
      twin_->SymbolAddress(tc_->minor >= 20 ? "go:func.*" : "go.func.*");
  ASSERT_TRUE(gofunc);
  EXPECT_EQ(loc.gofunc_vaddr, *gofunc);
  EXPECT_EQ(loc.moduledata->vaddr, *twin_->SymbolAddress("runtime.firstmoduledata"));
  EXPECT_EQ(loc.moduledata->layout, ModuleDataLayoutFor(GoVersion{1, tc_->minor, 0}));
  if (tc_->minor >= 26) {
    EXPECT_EQ(loc.moduledata->source, ".go.module section");
  }
  if (tc_->minor < 26 && mode_->pie && mode_->cgo) {
    EXPECT_EQ(loc.source, "pcHeader scan");
    EXPECT_EQ(loc.vaddr, *twin_->SymbolAddress("runtime.pclntab"));
  }
  if (mode_->cgo) {
    EXPECT_NE(stripped_elf_->FindSection(".text")->addr, loc.text_start);
  }
  EXPECT_EQ(stripped_->version_source(), "buildinfo");
}

// The pclntab symbolizer of the stripped binary names every function as the
// twin's symbol table does, at the symbol's address.
TEST_P(StrippedTest, SymbolizerAgreesWithTwinSymtab) {
  Pclntab tab = stripped_->OpenPclntab(0);
  ASSERT_GT(tab.nfunc(), 100u);
  size_t checked = 0;
  std::vector<std::string> problems;
  for (uint32_t i = 0; i < tab.nfunc(); ++i) {
    std::string name(tab.FuncName(tab.FuncAt(i)));
    std::string sym_name = name;
    // cmd/link writes the middle dot of "type:.eq.T·1" as '.' in ELF names.
    for (size_t d = sym_name.find("\u00b7"); d != std::string::npos; d = sym_name.find("\u00b7")) {
      sym_name.replace(d, 2, ".");
    }
    std::optional<ElfSymbol> sym = twin_elf_->FindSymbol(sym_name);
    if (!sym) sym = twin_elf_->FindSymbol(sym_name + ".abi0");
    // Before 1.21 pclntab names shorten bracketed parts to "[...]".
    if (!sym && tc_->minor < 21 && name.find("[...]") != std::string::npos) continue;
    if (!sym) {
      problems.push_back(name + ": no symbol in the twin");
      continue;
    }
    std::optional<FuncRef> f = tab.FindFunc(sym->value);
    if (!f || tab.FuncName(*f) != name) {
      problems.push_back(name + ": FindFunc(" + Hex(sym->value) + ") gives " +
                         (f ? std::string(tab.FuncName(*f)) : "nothing"));
    }
    ++checked;
  }
  EXPECT_TRUE(problems.empty()) << problems.size() << " problems, first: " << problems[0];
  EXPECT_GT(checked, tab.nfunc() * 9 / 10);
}

// Build info removed: the version is still found, and flagged as inferred.
TEST_P(StrippedTest, VersionWithoutBuildInfo) {
  size_t erased = 0;
  std::vector<uint8_t> bytes = testing_go::WithoutBuildInfo(*stripped_elf_, &erased);
  ASSERT_EQ(erased, 1u);
  ElfFile copy = ElfFile::FromBytes(std::move(bytes), "copy");
  GoBinary bin(copy);
  EXPECT_FALSE(bin.build_info());
  ASSERT_TRUE(bin.version()) << "no version found";
  EXPECT_EQ(bin.version()->minor, tc_->minor);
  EXPECT_TRUE(bin.version_inferred());
  EXPECT_EQ(bin.version_source(), "runtime.buildVersion (recovered from runtime.schedinit)");
  // And the variables are still recovered.
  RuntimeVariables got = LocateRuntimeVariables(bin, Layout());
  EXPECT_EQ(got.mbuckets.addr, *twin_->SymbolAddress("runtime.mbuckets"));
}

// Fail closed: a moduledata that does not validate stops the recovery with a
// message instead of a guess.
TEST_P(StrippedTest, CorruptModuledataIsRefused) {
  PclntabLocation loc = stripped_->LocatePclntab();
  ASSERT_TRUE(loc.moduledata);
  std::vector<uint8_t> bytes(stripped_elf_->bytes().begin(), stripped_elf_->bytes().end());
  // Change ftab's length (offset 136; a plain integer, so no PIE
  // relocation supplies it instead of the file).
  std::optional<Bytes> field = stripped_elf_->ReadVaddr(loc.moduledata->vaddr + 136, 8);
  ASSERT_TRUE(field);
  size_t off = static_cast<size_t>(field->data() - stripped_elf_->bytes().data());
  bytes[off] ^= 0x01;
  ElfFile copy = ElfFile::FromBytes(std::move(bytes), "corrupt");
  GoBinary bin(copy);
  try {
    LocateRuntimeVariables(bin, Layout());
    ADD_FAILURE() << "expected kUnsupported";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("moduledata"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("stripped"), std::string::npos) << e.what();
    EXPECT_FALSE(e.hint().empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Builds, StrippedTest, testing_go::ToolchainCases(Modes),
                         testing_go::CaseNamer(Modes));

}  // namespace
}  // namespace goheap2pprof
