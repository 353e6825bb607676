// Matching an --exe file against the running executable, and recognising a
// qemu-user emulator, on the running test binary itself and altered copies.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "app/process_source.h"
#include "elf/build_match.h"
#include "elf/elf_file.h"
#include "elf/load_bias.h"
#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

ElfFile Self() { return ElfFile::Open("/proc/self/exe", "self"); }

std::vector<uint8_t> SelfBytes() {
  ElfFile self = Self();
  return std::vector<uint8_t>(self.bytes().begin(), self.bytes().end());
}

TEST(QemuUserPath, RecognisesUserModeEmulatorsOnly) {
  EXPECT_TRUE(IsQemuUserPath("/usr/bin/qemu-aarch64-static"));
  EXPECT_TRUE(IsQemuUserPath("/usr/bin/qemu-aarch64"));
  EXPECT_TRUE(IsQemuUserPath("qemu-x86_64"));
  EXPECT_FALSE(IsQemuUserPath("/usr/bin/qemu-system-aarch64"));
  EXPECT_FALSE(IsQemuUserPath("/usr/bin/qemu-img"));
  EXPECT_FALSE(IsQemuUserPath("/opt/qemu-aarch64/bin/server"));
  EXPECT_FALSE(IsQemuUserPath("/usr/bin/myqemu-aarch64"));
}

TEST(BuildMismatch, SameFileMatches) { EXPECT_EQ(BuildMismatch(Self(), Self()), std::nullopt); }

TEST(BuildMismatch, AnotherGnuBuildIdIsRefused) {
  const std::string id = Self().GnuBuildId();
  if (id.size() < 2) GTEST_SKIP() << "the test binary has no GNU build ID";
  std::vector<uint8_t> bytes = SelfBytes();
  // The note's descriptor holds the ID's bytes; change its first byte.
  const uint8_t first = static_cast<uint8_t>(std::stoi(id.substr(0, 2), nullptr, 16));
  std::vector<uint8_t> needle;
  for (size_t i = 0; i + 1 < id.size(); i += 2) {
    needle.push_back(static_cast<uint8_t>(std::stoi(id.substr(i, 2), nullptr, 16)));
  }
  auto at = std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end());
  ASSERT_NE(at, bytes.end());
  *at = static_cast<uint8_t>(first ^ 0xff);
  ElfFile other = ElfFile::FromBytes(std::move(bytes), "other");
  std::optional<std::string> why = BuildMismatch(other, Self());
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("GNU build ID"), std::string::npos) << *why;
}

TEST(BuildMismatch, OtherSegmentsAreRefused) {
  std::vector<uint8_t> bytes = SelfBytes();
  ElfFile self = Self();
  // Grow the first PT_LOAD's p_memsz (program headers at e_phoff).
  uint64_t phoff = 0;
  std::memcpy(&phoff, &bytes[0x20], 8);
  uint16_t phentsize = 0, phnum = 0;
  std::memcpy(&phentsize, &bytes[0x36], 2);
  std::memcpy(&phnum, &bytes[0x38], 2);
  bool moved = false;
  for (uint16_t i = 0; i < phnum && !moved; ++i) {
    uint8_t* ph = &bytes[phoff + uint64_t{i} * phentsize];
    uint32_t type = 0;
    std::memcpy(&type, ph, 4);
    if (type != 1 /* PT_LOAD */) continue;
    uint64_t memsz = 0;
    std::memcpy(&memsz, ph + 0x28, 8);
    memsz += 0x1000;
    std::memcpy(ph + 0x28, &memsz, 8);
    moved = true;
  }
  ASSERT_TRUE(moved);
  ElfFile other = ElfFile::FromBytes(std::move(bytes), "other");
  std::optional<std::string> why = BuildMismatch(other, self);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("PT_LOAD"), std::string::npos) << *why;
}

TEST(LayoutMismatch, OwnMappingsMatch) {
  const std::vector<MapsEntry> maps = ReadProcMaps(getpid());
  EXPECT_EQ(LayoutMismatch(Self(), maps, ExecutableIdentity(getpid())), std::nullopt);
}

TEST(LayoutMismatch, InconsistentBiasIsRefused) {
  std::vector<MapsEntry> maps = ReadProcMaps(getpid());
  const FileIdentity id = ExecutableIdentity(getpid());
  int seen = 0;
  for (MapsEntry& e : maps) {
    if (MapsEntryIsFile(e, id) && ++seen == 2) {
      e.start += 0x10000;
      e.end += 0x10000;
    }
  }
  ASSERT_GE(seen, 2);
  std::optional<std::string> why = LayoutMismatch(Self(), maps, id);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("does not fit load bias"), std::string::npos) << *why;
}

TEST(LayoutMismatch, OffsetOutsideEverySegmentIsRefused) {
  std::vector<MapsEntry> maps = ReadProcMaps(getpid());
  const FileIdentity id = ExecutableIdentity(getpid());
  int seen = 0;
  for (MapsEntry& e : maps) {
    if (MapsEntryIsFile(e, id) && ++seen >= 2) e.offset += uint64_t{1} << 40;
  }
  ASSERT_GE(seen, 2);
  std::optional<std::string> why = LayoutMismatch(Self(), maps, id);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("in no PT_LOAD"), std::string::npos) << *why;
}

TEST(LayoutMismatch, UnmappedFileIsRefused) {
  const std::vector<MapsEntry> maps = ReadProcMaps(getpid());
  std::optional<std::string> why =
      LayoutMismatch(Self(), maps, FileIdentity{1, "/nonexistent/file"});
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("maps no part of it"), std::string::npos) << *why;
}

}  // namespace
}  // namespace goheap2pprof
