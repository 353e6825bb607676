// Go-binary tier: the heap-bucket layout in the DWARF of real programs built
// by every toolchain of the test matrix equals goheap2pprof's table for
// their version, so the capture's check accepts them; -ldflags=-w leaves no
// DWARF to check; and the lookups, which inflate .debug_info only as far as
// they reach, answer as they do with all of it there.
#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "elf/dwarf_types.h"
#include "elf/elf_file.h"
#include "go_toolchains.h"
#include "gobin/go_binary.h"
#include "runtime/bucket_layout.h"
#include "runtime/memstats_layout.h"
#include "runtime/runtime_traits.h"

namespace goheap2pprof {
namespace {

using testing_go::Toolchain;
using testing_go::Toolchains;

struct BuildMode {
  std::string label;
  std::string program;  // the go_programs fixture's name for it
  bool dwarf;           // whether the binary keeps its DWARF
};

const std::vector<BuildMode>& BuildModes() {
  // Programs of the go_programs fixture: the oracle target as built (DWARF,
  // compressed), and a twin linked with -w (no DWARF).
  static const std::vector<BuildMode> kModes = {
      {"exe", "oracle-amd64-exe", true},
      {"pie", "oracle-amd64-pie", true},
      {"nodwarf", "heapvars-amd64-exe-twin", false},
  };
  return kModes;
}

class DwarfLayoutTest : public ::testing::TestWithParam<testing_go::ToolchainCase> {};

TEST_P(DwarfLayoutTest, DwarfEqualsTheTable) {
  const Toolchain& tc = Toolchains()[GetParam().toolchain];
  const BuildMode& mode = BuildModes()[GetParam().mode];
  const testing_go::GoProgram b = testing_go::FindGoProgram(tc, mode.program);
  if (!b.skip_reason.empty()) GTEST_SKIP() << b.skip_reason;
  ASSERT_TRUE(b.error.empty()) << b.error;

  ElfFile elf = ElfFile::Open(b.path);
  GoBinary bin(elf);
  ASSERT_TRUE(bin.version());
  ASSERT_EQ(bin.version()->minor, tc.minor);
  const RuntimeTraits traits = TraitsForVersion(*bin.version());
  std::optional<DwarfTypes> dwarf = DwarfTypes::Open(elf);
  if (!mode.dwarf) {
    EXPECT_FALSE(dwarf) << "-ldflags=-w left DWARF in " << b.path;
    EXPECT_EQ(CheckBucketLayout(elf, traits, std::nullopt).proof, LayoutProof::kTable);
    return;
  }
  ASSERT_TRUE(dwarf) << b.path << " has no DWARF";
  // Every struct is described, and exactly as the table says.
  const std::vector<StructLayout> expected = ExpectedBucketLayout(traits);
  std::vector<std::optional<DwarfStruct>> observed;
  for (const StructLayout& s : expected) {
    observed.push_back(s.variable ? dwarf->FindVariableStruct(s.name) : dwarf->FindStruct(s.name));
    ASSERT_TRUE(observed.back()) << s.name << " is not in the DWARF of " << b.path;
    std::cout << "  [" << tc.label << " " << mode.label << "] " << s.name << ": "
              << observed.back()->size << " bytes, " << observed.back()->members.size()
              << " members\n";
  }
  const LayoutComparison cmp = CompareLayout(expected, observed);
  EXPECT_TRUE(cmp.missing.empty());
  for (const std::string& d : cmp.disagreements) ADD_FAILURE() << d;
  // And so the capture's check proves it, without a warning for these
  // tested versions.
  LayoutVerdict v = CheckBucketLayout(elf, traits, std::nullopt);
  EXPECT_EQ(v.proof, LayoutProof::kDwarf);
  EXPECT_TRUE(v.warnings.empty());
}

void ExpectSameStruct(const std::optional<DwarfStruct>& lazy,
                      const std::optional<DwarfStruct>& whole, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(lazy.has_value(), whole.has_value());
  if (!whole) return;
  EXPECT_EQ(lazy->name, whole->name);
  EXPECT_EQ(lazy->size, whole->size);
  ASSERT_EQ(lazy->members.size(), whole->members.size());
  for (size_t i = 0; i < whole->members.size(); ++i) {
    const DwarfMember& l = lazy->members[i];
    const DwarfMember& w = whole->members[i];
    EXPECT_EQ(l.name, w.name);
    EXPECT_EQ(l.offset, w.offset) << w.name;
    EXPECT_EQ(l.size, w.size) << w.name;
    EXPECT_EQ(l.struct_die, w.struct_die) << w.name;
  }
}

// What the capture's layout checks look up (the bucket structs, the memory
// statistics' fields), in `lazy` and in `whole`, found alike.
void ExpectSameAnswers(const DwarfTypes& lazy, const DwarfTypes& whole,
                       const RuntimeTraits& traits) {
  for (const StructLayout& s : ExpectedBucketLayout(traits)) {
    const std::optional<DwarfStruct> l =
        s.variable ? lazy.FindVariableStruct(s.name) : lazy.FindStruct(s.name);
    const std::optional<DwarfStruct> w =
        s.variable ? whole.FindVariableStruct(s.name) : whole.FindStruct(s.name);
    ExpectSameStruct(l, w, std::string(s.name));
    for (const DwarfMember& m : w ? w->members : std::vector<DwarfMember>{}) {
      ExpectSameStruct(lazy.MemberStruct(m), whole.MemberStruct(m),
                       std::string(s.name) + "." + m.name);
    }
  }
  const MemstatsLayout l = MemstatsLayoutFromDwarf(lazy);
  const MemstatsLayout w = MemstatsLayoutFromDwarf(whole);
  EXPECT_TRUE(MissingMemstatsFields(w, traits).empty());
  for (const std::string& d : CompareMemstatsLayouts(l, w, traits)) ADD_FAILURE() << d;
}

// The Go program of this case, with its debug sections as objcopy inflates
// them (libdw reads them plain); empty when objcopy cannot.
std::string PlainCopy(const std::string& path, const std::string& label) {
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("goheap2pprof-plain-dwarf-" + std::to_string(getpid()) + "-" + label))
                              .string();
  const std::string cmd =
      "objcopy --decompress-debug-sections '" + path + "' '" + out + "' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0 ? out : "";
}

TEST_P(DwarfLayoutTest, PartlyInflatedDwarfAnswersAsAllOfIt) {
  const Toolchain& tc = Toolchains()[GetParam().toolchain];
  const BuildMode& mode = BuildModes()[GetParam().mode];
  if (!mode.dwarf) GTEST_SKIP() << "this build mode keeps no DWARF";
  const testing_go::GoProgram b = testing_go::FindGoProgram(tc, mode.program);
  if (!b.skip_reason.empty()) GTEST_SKIP() << b.skip_reason;
  ASSERT_TRUE(b.error.empty()) << b.error;
  const std::string plain_path = PlainCopy(b.path, tc.label + "-" + mode.label);
  if (plain_path.empty())
    GTEST_SKIP() << "objcopy cannot decompress the debug sections of " << b.path;

  ElfFile elf = ElfFile::Open(b.path);
  ElfFile plain = ElfFile::Open(plain_path);
  std::filesystem::remove(plain_path);
  const RuntimeTraits traits = TraitsForVersion(*GoBinary(elf).version());
  std::optional<DwarfTypes> lazy = DwarfTypes::Open(elf, {"runtime"});
  std::optional<DwarfTypes> whole = DwarfTypes::Open(plain, {"runtime"});
  ASSERT_TRUE(lazy && whole);
  EXPECT_EQ(whole->InflatedInfo().second, 0u) << "objcopy left .debug_info compressed";
  const uint64_t total = lazy->InflatedInfo().second;
  // Go 1.18 writes GNU-style .zdebug_ sections, which libdw inflates whole.
  if (tc.minor == 18) {
    EXPECT_EQ(total, 0u);
  } else {
    ASSERT_GT(total, 0u) << "Go compresses .debug_info with zlib by default";
  }

  // Opening inflates a first step (256 KiB, or an eighth of a big section).
  if (total > 0) {
    EXPECT_LT(lazy->InflatedInfo().first, total);
  }
  ExpectSameAnswers(*lazy, *whole, traits);
  // How far the lookups reached depends on where the runtime's units are:
  // 78-100% of the way in for these small programs, 22-29% for helm and
  // crictl (bench/README.md).
  std::cout << "  [" << tc.label << " " << mode.label << "] the layout lookups inflated "
            << lazy->InflatedInfo().first << " of " << total << " bytes of .debug_info\n";
  // A name no unit has: every unit is indexed, all of it inflated, and the
  // answers stay the same.
  EXPECT_FALSE(lazy->FindStruct("no.such.Struct"));
  EXPECT_EQ(lazy->InflatedInfo().first, total);
  ExpectSameAnswers(*lazy, *whole, traits);
}

TEST_P(DwarfLayoutTest, DamageAtTheEndIsReportedByTheLookupThatReachesIt) {
  const Toolchain& tc = Toolchains()[GetParam().toolchain];
  const BuildMode& mode = BuildModes()[GetParam().mode];
  if (!mode.dwarf) GTEST_SKIP() << "this build mode keeps no DWARF";
  if (tc.minor == 18) GTEST_SKIP() << "Go 1.18's .zdebug_ sections are inflated whole by libdw";
  const testing_go::GoProgram b = testing_go::FindGoProgram(tc, mode.program);
  if (!b.skip_reason.empty()) GTEST_SKIP() << b.skip_reason;
  ASSERT_TRUE(b.error.empty()) << b.error;

  ElfFile elf = ElfFile::Open(b.path);
  const ElfSection* info = elf.FindSection(".debug_info");
  ASSERT_TRUE(info != nullptr && (info->flags & SHF_COMPRESSED) != 0);
  // The size its header states, one more than the stream inflates to: only
  // the end of the stream shows it.
  std::vector<uint8_t> bytes(elf.bytes().begin(), elf.bytes().end());
  Elf64_Chdr chdr;
  std::memcpy(&chdr, &bytes[info->offset], sizeof(chdr));
  ++chdr.ch_size;
  std::memcpy(&bytes[info->offset], &chdr, sizeof(chdr));
  ElfFile damaged = ElfFile::FromBytes(std::move(bytes), "damaged");
  const RuntimeTraits traits = TraitsForVersion(*GoBinary(elf).version());

  std::optional<DwarfTypes> dwarf = DwarfTypes::Open(damaged, {"runtime"});
  ASSERT_TRUE(dwarf);
  ASSERT_LT(dwarf->InflatedInfo().first, dwarf->InflatedInfo().second);
  try {
    for (const StructLayout& s : ExpectedBucketLayout(traits)) {
      (void)(s.variable ? dwarf->FindVariableStruct(s.name) : dwarf->FindStruct(s.name));
    }
    (void)dwarf->FindStruct("no.such.Struct");
    ADD_FAILURE() << "lookups read to the end of a stream shorter than its header says";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kMalformed) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not inflate to the size its header states"),
              std::string::npos)
        << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(GoBuilds, DwarfLayoutTest, testing_go::ToolchainCases(BuildModes),
                         testing_go::CaseNamer(BuildModes));

}  // namespace
}  // namespace goheap2pprof
