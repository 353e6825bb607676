// The heap-bucket layout check: the table the walker reads with, the verdict
// for every combination of version and DWARF evidence (fed as fake layouts),
// and the libdw wrapper on this test binary's own DWARF, plain and
// compressed. The check against real Go binaries is dwarf_layout_test.cc.
#include "runtime/bucket_layout.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "elf/dwarf_types.h"
#include "elf/elf_file.h"
#include "heap/buckets.h"

// A struct and a variable at the top level of this binary's DWARF, for the
// wrapper test (C++ types in a namespace are nested in DW_TAG_namespace).
struct DwarfProbe {
  uint32_t small;
  uint64_t big;
  char text[3];
};
[[gnu::used]] DwarfProbe dwarf_probe_variable{1, 2, {'a', 'b', 'c'}};
[[gnu::used]] int dwarf_probe_int = 3;

namespace goheap2pprof {
namespace {

// A DWARF description equal to the table.
DwarfStruct AsDwarf(const StructLayout& s) {
  DwarfStruct d;
  d.name = std::string(s.name);
  d.size = s.size;
  for (const FieldLayout& f : s.fields)
    d.members.push_back({std::string(f.name), f.offset, f.size});
  return d;
}

// A fake DWARF: the table of `truth` (the binary's real version), with
// `edit` applied to the struct it names.
struct FakeDwarf {
  std::map<std::string, DwarfStruct, std::less<>> structs;
  explicit FakeDwarf(const RuntimeTraits& truth) {
    for (const StructLayout& s : ExpectedBucketLayout(truth)) {
      structs[std::string(s.name)] = AsDwarf(s);
    }
  }
  DwarfLookup Lookup() const {
    return [this](const StructLayout& s) -> std::optional<DwarfStruct> {
      auto it = structs.find(s.name);
      if (it == structs.end()) return std::nullopt;
      return it->second;
    };
  }
};

// Runs the judge and returns the error it throws (kind and message).
Error JudgeError(const RuntimeTraits& traits, const DwarfLookup& dwarf,
                 std::optional<GoVersion> assumed = std::nullopt) {
  try {
    JudgeBucketLayout("app", traits, dwarf, assumed);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error";
  return Error(ErrorKind::kInternal, "no error");
}

bool Contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

TEST(BucketLayout, TableIsWhatTheWalkerReads) {
  for (int minor : {18, 19, 26, 27}) {
    const RuntimeTraits t = TraitsForVersion({1, minor, 0});
    const std::vector<StructLayout> table = ExpectedBucketLayout(t);
    ASSERT_EQ(table.size(), 4u);
    EXPECT_EQ(table[0].name, "runtime.bucket");
    EXPECT_EQ(table[0].size, kBucketHeaderSize);
    EXPECT_EQ(table[1].name, "runtime.memRecordCycle");
    EXPECT_EQ(table[1].size, MemRecordCycleSize(t.record_layout));
    EXPECT_EQ(table[2].name, "runtime.memRecord");
    EXPECT_EQ(table[2].size, MemRecordSize(t.record_layout));
    EXPECT_EQ(table[3].name, t.variables.cycle_symbol);
    EXPECT_TRUE(table[3].variable);
    // Fields tile their struct in order, without gaps the walker would skip.
    for (const StructLayout& s : table) {
      uint64_t end = 0;
      for (const FieldLayout& f : s.fields) {
        EXPECT_EQ(f.offset, end) << s.name << "." << f.name;
        end = f.offset + f.size;
      }
      if (s.name != "runtime.mProf") {
        EXPECT_EQ(end, s.size) << s.name;
      }
    }
  }
  EXPECT_EQ(MemRecordSize(MemRecordLayout::kCountsAndBytes), 128u);
  EXPECT_EQ(MemRecordSize(MemRecordLayout::kCountsOnly), 64u);
  EXPECT_EQ(ExpectedBucketLayout(TraitsForVersion({1, 18, 0}))[3].size, 8u);
}

TEST(BucketLayout, KnownVersionProvenByDwarfHasNoWarning) {
  for (int minor : {19, 26, 27}) {
    const RuntimeTraits t = TraitsForVersion({1, minor, 3});
    FakeDwarf dwarf(t);
    LayoutVerdict v = JudgeBucketLayout("app", t, dwarf.Lookup(), std::nullopt);
    EXPECT_EQ(v.proof, LayoutProof::kDwarf);
    EXPECT_TRUE(v.warnings.empty());
    EXPECT_EQ(v.traits.record_layout, t.record_layout);
  }
}

TEST(BucketLayout, KnownVersionWithoutDwarfUsesTheTable) {
  const RuntimeTraits t = TraitsForVersion({1, 26, 8});
  LayoutVerdict v = JudgeBucketLayout("app", t, DwarfLookup(), std::nullopt);
  EXPECT_EQ(v.proof, LayoutProof::kTable);
  EXPECT_TRUE(v.warnings.empty());
  // Every minor version up to the newest tested one is in the table (all are
  // tested), so none needs DWARF or gets a warning.
  for (int minor = 18; minor <= 27; ++minor) {
    v = JudgeBucketLayout("app", TraitsForVersion({1, minor, 0}), DwarfLookup(), std::nullopt);
    EXPECT_EQ(v.proof, LayoutProof::kTable) << minor;
    EXPECT_TRUE(v.warnings.empty()) << minor;
  }
}

TEST(BucketLayout, NewerVersionProvenByDwarfIsReadWithAWarning) {
  const RuntimeTraits t = TraitsForVersion({1, 29, 8});
  ASSERT_TRUE(t.newer_than_verified);
  // A newer runtime whose structs are still Go 1.27's.
  FakeDwarf dwarf(TraitsForVersion({1, 27, 3}));
  LayoutVerdict v = JudgeBucketLayout("app", t, dwarf.Lookup(), std::nullopt);
  EXPECT_EQ(v.proof, LayoutProof::kDwarf);
  EXPECT_EQ(v.traits.record_layout, MemRecordLayout::kCountsOnly);
  EXPECT_EQ(v.traits.version, t.version);
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_TRUE(Contains(v.warnings[0], "go1.29.8 is newer than the Go versions")) << v.warnings[0];
  EXPECT_TRUE(Contains(v.warnings[0], "proven from the executable's DWARF to be Go 1.27's"))
      << v.warnings[0];
}

TEST(BucketLayout, NewerVersionWithOtherLayoutIsRefusedNamingTheField) {
  const RuntimeTraits t = TraitsForVersion({1, 29, 8});
  // The runtime went back to counting bytes: memRecordCycle has four words.
  FakeDwarf dwarf(TraitsForVersion({1, 26, 8}));
  Error e = JudgeError(t, dwarf.Lookup());
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  const std::string msg = e.what();
  EXPECT_TRUE(Contains(msg, "runtime.memRecordCycle is 32 bytes in the DWARF, 16 in the table"))
      << msg;
  EXPECT_TRUE(Contains(msg, "table for Go 1.27")) << msg;
  // Even --assume-go-layout does not override what the DWARF shows.
  EXPECT_EQ(JudgeError(t, dwarf.Lookup(), GoVersion{1, 27, 0}).kind(), ErrorKind::kUnsupported);
}

TEST(BucketLayout, KnownVersionWhoseDwarfDisagreesIsRefused) {
  // A Go 1.27 runtime whose version string claims 1.26.
  FakeDwarf dwarf(TraitsForVersion({1, 27, 3}));
  Error e = JudgeError(TraitsForVersion({1, 26, 3}), dwarf.Lookup());
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  const std::string msg = e.what();
  EXPECT_TRUE(Contains(msg, "runtime.memRecordCycle is 16 bytes in the DWARF, 32 in the table"))
      << msg;
  EXPECT_TRUE(Contains(msg, "runtime.memRecordCycle.alloc_bytes is not in the DWARF")) << msg;
  EXPECT_FALSE(e.hint().empty());
}

TEST(BucketLayout, EveryKindOfDifferenceIsNamed) {
  const RuntimeTraits t = TraitsForVersion({1, 26, 8});
  struct Case {
    const char* what;
    std::function<void(FakeDwarf&)> edit;
    const char* message;
  };
  const Case cases[] = {
      {"moved field", [](FakeDwarf& d) { d.structs["runtime.bucket"].members[1].offset = 16; },
       "runtime.bucket.allnext is at offset 16 in the DWARF, 8 in the table"},
      {"resized field", [](FakeDwarf& d) { d.structs["runtime.bucket"].members[5].size = 4; },
       "runtime.bucket.nstk is 4 bytes in the DWARF, 8 in the table"},
      {"offset not a constant",
       [](FakeDwarf& d) { d.structs["runtime.memRecord"].members[1].offset.reset(); },
       "runtime.memRecord.future is at offset (unknown) in the DWARF, 32 in the table"},
      {"renamed field",
       [](FakeDwarf& d) { d.structs["runtime.memRecordCycle"].members[2].name = "bytes"; },
       "runtime.memRecordCycle has a field bytes in the DWARF (at offset 16)"},
      {"bigger struct",
       [](FakeDwarf& d) {
         d.structs["runtime.bucket"].size = 56;
         d.structs["runtime.bucket"].members.push_back({"extra", 48, 8});
       },
       "runtime.bucket is 56 bytes in the DWARF, 48 in the table"},
      {"cycle variable", [](FakeDwarf& d) { d.structs["runtime.mProfCycle"].size = 8; },
       "the type of runtime.mProfCycle is 8 bytes in the DWARF, 4 in the table"},
  };
  for (const Case& c : cases) {
    FakeDwarf dwarf(t);
    c.edit(dwarf);
    Error e = JudgeError(t, dwarf.Lookup());
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported) << c.what;
    EXPECT_TRUE(Contains(e.what(), c.message)) << c.what << ": " << e.what();
  }
  // An empty marker field (Go 1.20's `_ sys.NotInHeap` at offset 0) is fine.
  FakeDwarf dwarf(t);
  auto& members = dwarf.structs["runtime.bucket"].members;
  members.insert(members.begin(), DwarfMember{"_", 0, 0});
  EXPECT_EQ(JudgeBucketLayout("app", t, dwarf.Lookup(), std::nullopt).proof, LayoutProof::kDwarf);
}

TEST(BucketLayout, Go118CycleVariableIsChecked) {
  const RuntimeTraits t = TraitsForVersion({1, 18, 10});
  FakeDwarf dwarf(t);
  EXPECT_EQ(JudgeBucketLayout("app", t, dwarf.Lookup(), std::nullopt).proof, LayoutProof::kDwarf);
  dwarf.structs["runtime.mProf"].members[1].offset = 8;
  EXPECT_TRUE(Contains(JudgeError(t, dwarf.Lookup()).what(),
                       "the type of runtime.mProf.flushed is at offset 8 in the DWARF, 4"));
}

TEST(BucketLayout, NewerVersionWithoutDwarfIsRefusedUnlessAssumed) {
  const RuntimeTraits t = TraitsForVersion({1, 29, 8});
  Error e = JudgeError(t, DwarfLookup());
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  EXPECT_TRUE(Contains(e.what(), "app was built with go1.29.8, newer than")) << e.what();
  EXPECT_TRUE(Contains(e.what(), "has no DWARF")) << e.what();
  EXPECT_TRUE(Contains(e.hint(), "--assume-go-layout 1.27")) << e.hint();
  EXPECT_TRUE(Contains(e.hint(), "--exe")) << e.hint();

  LayoutVerdict v = JudgeBucketLayout("app", t, DwarfLookup(), GoVersion{1, 27, 0});
  EXPECT_EQ(v.proof, LayoutProof::kAssumed);
  EXPECT_EQ(v.traits.record_layout, MemRecordLayout::kCountsOnly);
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_TRUE(Contains(v.warnings[0], "assumed to be Go 1.27's (--assume-go-layout)"))
      << v.warnings[0];

  // Another known layout can be assumed too; it decides what is read.
  v = JudgeBucketLayout("app", t, DwarfLookup(), GoVersion{1, 26, 0});
  EXPECT_EQ(v.traits.record_layout, MemRecordLayout::kCountsAndBytes);
  EXPECT_EQ(v.traits.variables.cycle_symbol, "runtime.mProfCycle");
  EXPECT_TRUE(Contains(v.warnings.at(0), "Go 1.26's")) << v.warnings[0];
}

TEST(BucketLayout, IncompleteDwarfProvesNothing) {
  const RuntimeTraits t = TraitsForVersion({1, 29, 8});
  FakeDwarf dwarf(TraitsForVersion({1, 27, 3}));
  dwarf.structs.erase("runtime.memRecord");
  Error e = JudgeError(t, dwarf.Lookup());
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  EXPECT_TRUE(Contains(e.what(), "its DWARF does not describe runtime.memRecord")) << e.what();
  // A known version is still read with its table.
  const RuntimeTraits t127 = TraitsForVersion({1, 27, 3});
  EXPECT_EQ(JudgeBucketLayout("app", t127, dwarf.Lookup(), std::nullopt).proof,
            LayoutProof::kTable);
}

TEST(BucketLayout, AssumedLayoutMustBeKnown) {
  const RuntimeTraits t = TraitsForVersion({1, 29, 8});
  for (GoVersion bad : {GoVersion{1, 17, 0}, GoVersion{1, 28, 0}, GoVersion{2, 0, 0}}) {
    EXPECT_EQ(JudgeError(t, DwarfLookup(), bad).kind(), ErrorKind::kUsage);
  }
  // For a known version it changes nothing.
  const RuntimeTraits t126 = TraitsForVersion({1, 26, 8});
  LayoutVerdict v = JudgeBucketLayout("app", t126, DwarfLookup(), GoVersion{1, 27, 0});
  EXPECT_EQ(v.proof, LayoutProof::kTable);
  EXPECT_EQ(v.traits.record_layout, MemRecordLayout::kCountsAndBytes);
}

TEST(BucketLayout, ParseAssumedLayout) {
  EXPECT_EQ(ParseAssumedLayout("1.27"), (GoVersion{1, 27, 0}));
  EXPECT_EQ(ParseAssumedLayout("go1.26"), (GoVersion{1, 26, 0}));
  EXPECT_EQ(ParseAssumedLayout("1.27.3"), (GoVersion{1, 27, 3}));
  EXPECT_EQ(ParseAssumedLayout("1.18"), (GoVersion{1, 18, 0}));
  for (const char* bad :
       {"", "go", "27", "1.27rc1", "1.27 x", "gogo1.27", "v1.27", "1.17", "1.28", "2.0"}) {
    try {
      ParseAssumedLayout(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage) << bad;
      EXPECT_TRUE(Contains(e.what(), std::string("\"") + bad + "\"")) << e.what();
    }
  }
}

// The libdw wrapper on the test binary itself, whose DWARF gcc writes.
class DwarfTypesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    self_ = std::filesystem::read_symlink("/proc/self/exe").string();
    ElfFile elf = ElfFile::Open(self_);
    if (elf.FindSection(".debug_info") == nullptr) {
      GTEST_SKIP() << self_ << " was built without -g, so there is no DWARF to read";
    }
  }
  static void ExpectProbe(const DwarfTypes& dwarf) {
    std::optional<DwarfStruct> s = dwarf.FindStruct("DwarfProbe");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->size, sizeof(DwarfProbe));
    ASSERT_EQ(s->members.size(), 3u);
    EXPECT_EQ(s->members[0].name, "small");
    EXPECT_EQ(s->members[0].offset, offsetof(DwarfProbe, small));
    EXPECT_EQ(s->members[0].size, 4u);
    EXPECT_EQ(s->members[1].name, "big");
    EXPECT_EQ(s->members[1].offset, offsetof(DwarfProbe, big));
    EXPECT_EQ(s->members[1].size, 8u);
    EXPECT_EQ(s->members[2].name, "text");
    EXPECT_EQ(s->members[2].offset, offsetof(DwarfProbe, text));
    EXPECT_EQ(s->members[2].size, 3u);  // an array
    std::optional<DwarfStruct> v = dwarf.FindVariableStruct("dwarf_probe_variable");
    ASSERT_TRUE(v);
    EXPECT_EQ(v->name, "DwarfProbe");
    EXPECT_EQ(v->size, sizeof(DwarfProbe));
    EXPECT_FALSE(dwarf.FindStruct("NoSuchStruct"));
    EXPECT_FALSE(dwarf.FindVariableStruct("no_such_variable"));
    // A variable whose type is not a struct.
    EXPECT_FALSE(dwarf.FindVariableStruct("dwarf_probe_int"));
  }
  // Runs objcopy with `flags` on the test binary into a temporary file.
  std::string Objcopy(const std::string& flags, const std::string& suffix) {
    std::string out =
        (std::filesystem::path(GOHEAP2PPROF_BINARY_DIR) / "dwarf_types_test").string();
    std::filesystem::create_directories(out);
    out += "/self" + suffix;
    std::string cmd = "objcopy " + flags + " '" + self_ + "' '" + out + "' 2>&1";
    if (std::system(cmd.c_str()) != 0) return "";
    return out;
  }
  std::string self_;
};

TEST_F(DwarfTypesTest, ReadsStructsAndVariables) {
  ElfFile elf = ElfFile::Open(self_);
  std::optional<DwarfTypes> dwarf = DwarfTypes::Open(elf);
  ASSERT_TRUE(dwarf);
  ExpectProbe(*dwarf);
  // Moving keeps it usable.
  DwarfTypes moved = std::move(*dwarf);
  ExpectProbe(moved);
}

TEST_F(DwarfTypesTest, PreferredUnitsFirstThenTheOthers) {
  ElfFile elf = ElfFile::Open(self_);
  // This file's own unit (gcc names it as the compiler was given the path,
  // which is __FILE__), and a name no unit has: both find everything.
  for (const std::vector<std::string>& preferred :
       {std::vector<std::string>{__FILE__}, std::vector<std::string>{"no such unit"}}) {
    std::optional<DwarfTypes> dwarf = DwarfTypes::Open(elf, preferred);
    ASSERT_TRUE(dwarf);
    ExpectProbe(*dwarf);
  }
}

TEST_F(DwarfTypesTest, CompressedSectionsAndNone) {
  // Go compresses its DWARF by default (SHF_COMPRESSED).
  std::string compressed = Objcopy("--compress-debug-sections=zlib", ".z");
  if (compressed.empty()) GTEST_SKIP() << "objcopy cannot compress debug sections here";
  ElfFile z = ElfFile::Open(compressed);
  const ElfSection* info = z.FindSection(".debug_info");
  ASSERT_NE(info, nullptr);
  ASSERT_NE(info->flags & SHF_COMPRESSED, 0u) << "objcopy did not compress .debug_info";
  const std::vector<uint8_t> before(z.bytes().begin(), z.bytes().end());
  std::optional<DwarfTypes> dwarf = DwarfTypes::Open(z);
  ASSERT_TRUE(dwarf);
  ExpectProbe(*dwarf);
  // Decompressing leaves the ElfFile's image as it was, so it can be opened
  // again (libelf rewrites the section headers of the image it is given).
  EXPECT_TRUE(std::equal(before.begin(), before.end(), z.bytes().begin(), z.bytes().end()));
  std::optional<DwarfTypes> again = DwarfTypes::Open(z);
  ASSERT_TRUE(again);
  ExpectProbe(*again);

  // Looking up a name no unit has indexes every unit; what was found before
  // is still found.
  std::optional<DwarfTypes> lazy = DwarfTypes::Open(z);
  ASSERT_TRUE(lazy);
  EXPECT_FALSE(lazy->FindStruct("NoSuchStructAnywhere"));
  ExpectProbe(*lazy);

  std::string stripped = Objcopy("--strip-debug", ".nodebug");
  ASSERT_FALSE(stripped.empty());
  ElfFile none = ElfFile::Open(stripped);
  EXPECT_FALSE(DwarfTypes::Open(none));
}

// .debug_info of a zlib-compressed copy of the test binary, damaged by
// `damage` (given the file's bytes and the section's offset and size).
template <typename Damage>
ElfFile DamagedCompressedInfo(const std::string& path, Damage damage) {
  ElfFile z = ElfFile::Open(path);
  const ElfSection* info = z.FindSection(".debug_info");
  std::vector<uint8_t> bytes(z.bytes().begin(), z.bytes().end());
  damage(bytes, info->offset, info->size);
  return ElfFile::FromBytes(std::move(bytes), "damaged");
}

// Opening it, or the lookup that reaches the damage (a name no unit has
// reaches all of .debug_info), throws kMalformed with `words`.
void ExpectMalformed(const ElfFile& elf, const std::string& words) {
  try {
    std::optional<DwarfTypes> dwarf = DwarfTypes::Open(elf);
    if (dwarf) (void)dwarf->FindStruct("NoSuchStruct");
    ADD_FAILURE() << "read damaged DWARF";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kMalformed) << e.what();
    EXPECT_TRUE(Contains(e.what(), words)) << e.what();
  }
}

TEST_F(DwarfTypesTest, DamagedCompressedSectionIsMalformed) {
  std::string compressed = Objcopy("--compress-debug-sections=zlib", ".damaged.z");
  if (compressed.empty()) GTEST_SKIP() << "objcopy cannot compress debug sections here";
  // The stream itself: its header and first block overwritten.
  ExpectMalformed(DamagedCompressedInfo(compressed,
                                        [](std::vector<uint8_t>& b, uint64_t off, uint64_t) {
                                          for (uint64_t i = 0; i < 64; ++i) {
                                            b[off + sizeof(Elf64_Chdr) + i] = 0xff;
                                          }
                                        }),
                  "not a valid zlib stream");
  // A zlib header that asks for a preset dictionary (FDICT, its check bits
  // made right again): ISA-L stops and asks for one (ISAL_NEED_DICT), and
  // no zlib section has one.
  ExpectMalformed(DamagedCompressedInfo(compressed,
                                        [](std::vector<uint8_t>& b, uint64_t off, uint64_t) {
                                          const size_t at = off + sizeof(Elf64_Chdr);
                                          const unsigned cmf = b[at];
                                          unsigned flg = (b[at + 1] | 0x20) & ~0x1fu;
                                          flg |= 31 - (cmf * 256 + flg) % 31;
                                          b[at + 1] = static_cast<uint8_t>(flg % 256);
                                        }),
                  "not a valid zlib stream");
  // The size its header states, one more than the stream inflates to.
  ExpectMalformed(DamagedCompressedInfo(compressed,
                                        [](std::vector<uint8_t>& b, uint64_t off, uint64_t) {
                                          Elf64_Chdr chdr;
                                          std::memcpy(&chdr, &b[off], sizeof(chdr));
                                          ++chdr.ch_size;
                                          std::memcpy(&b[off], &chdr, sizeof(chdr));
                                        }),
                  "does not inflate to the size its header states");
  // A size no deflate stream of that length can reach is left to libdw,
  // which refuses it too.
  ElfFile absurd =
      DamagedCompressedInfo(compressed, [](std::vector<uint8_t>& b, uint64_t off, uint64_t) {
        Elf64_Chdr chdr;
        std::memcpy(&chdr, &b[off], sizeof(chdr));
        chdr.ch_size = uint64_t{1} << 33;
        std::memcpy(&b[off], &chdr, sizeof(chdr));
      });
  try {
    std::optional<DwarfTypes> dwarf = DwarfTypes::Open(absurd);
    if (dwarf) {
      EXPECT_FALSE(dwarf->FindStruct("DwarfProbe"));
    }
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kMalformed) << e.what();
  }
}

}  // namespace
}  // namespace goheap2pprof
