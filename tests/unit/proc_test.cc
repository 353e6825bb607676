// /proc parsers and the memory readers, on text and on this test process.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "base/error.h"
#include "proc/memory_reader.h"
#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

TEST(ParsePid, AcceptsOnlyPlainPositiveNumbers) {
  EXPECT_EQ(ParsePid("1234"), 1234);
  EXPECT_EQ(ParsePid("1"), 1);
  for (const char* bad : {"", "0", "-1", "+5", "12a", " 12", "0x10", "99999999999", "007"}) {
    EXPECT_FALSE(ParsePid(bad)) << bad;
  }
}

TEST(ParseProcStat, HandlesCommWithSpacesAndParens) {
  std::string line =
      "4242 (my (weird) prog) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 8 0 987654 "
      "1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  ProcStat st = ParseProcStat(line);
  EXPECT_EQ(st.pid, 4242);
  EXPECT_EQ(st.comm, "my (weird) prog");
  EXPECT_EQ(st.state, 'S');
  EXPECT_EQ(st.flags, 4194560u);
  EXPECT_EQ(st.start_time, 987654u);
}

TEST(ParseProcStat, RejectsTruncatedLines) {
  EXPECT_THROW(ParseProcStat("12 (x) S 1 2 3"), Error);
  EXPECT_THROW(ParseProcStat("no parens here"), Error);
  EXPECT_THROW(ParseProcStat(""), Error);
}

TEST(ParseProcStat, ReadsThisProcess) {
  ProcStat st = ReadProcStat(getpid());
  EXPECT_EQ(st.pid, getpid());
  EXPECT_GT(st.start_time, 0u);
  EXPECT_EQ(ReadProcStat(getpid()).start_time, st.start_time);
}

TEST(ParseProcMaps, ParsesAllFieldKinds) {
  std::string text =
      "00400000-00452000 r-xp 00000000 fd:01 1234567                            /usr/bin/prog\n"
      "7f00aa000000-7f00aa021000 rw-p 00000000 00:00 0 \n"
      "7f00ab000000-7f00ab001000 r-xp 00003000 08:02 42   /tmp/lib with space.so (deleted)\n"
      "7ffd1a3f2000-7ffd1a3f4000 r-xp 00000000 00:00 0                          [vdso]\n"
      "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";
  std::vector<MapsEntry> maps = ParseProcMaps(text);
  ASSERT_EQ(maps.size(), 5u);
  EXPECT_EQ(maps[0].start, 0x400000u);
  EXPECT_EQ(maps[0].end, 0x452000u);
  EXPECT_EQ(maps[0].perms, "r-xp");
  EXPECT_EQ(maps[0].inode, 1234567u);
  EXPECT_EQ(maps[0].path, "/usr/bin/prog");
  EXPECT_EQ(maps[1].path, "");
  EXPECT_EQ(maps[2].offset, 0x3000u);
  EXPECT_EQ(maps[2].path, "/tmp/lib with space.so (deleted)");
  EXPECT_EQ(maps[3].path, "[vdso]");
  EXPECT_EQ(maps[4].start, 0xffffffffff600000u);
}

TEST(ParseProcMaps, RejectsGarbage) {
  EXPECT_THROW(ParseProcMaps("zzzz-0000 r-xp 0 0:0 0\n"), Error);
  EXPECT_THROW(ParseProcMaps("1000-0fff r-xp 0 00:00 0\n"), Error);  // end < start
  EXPECT_THROW(ParseProcMaps("1000-2000 rx 0 00:00 0\n"), Error);
}

TEST(ReadProcFile, MissingProcessIsNoSuchProcess) {
  try {
    ReadProcFile(999999999, "stat");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNoSuchProcess);
  }
}

TEST(ProcessMemoryReader, ReadsOwnMemoryAndBatches) {
  static uint64_t values[300];
  for (size_t i = 0; i < 300; ++i) values[i] = 0x1000 + i;
  static char text[] = "hello, remote reader";
  ProcessMemoryReader mem(getpid());
  EXPECT_EQ(mem.ReadU64(reinterpret_cast<uint64_t>(&values[1]), "v"), 0x1001u);
  EXPECT_EQ(mem.stats().syscalls, 1u);

  // 300 small ranges: one process_vm_readv (up to IOV_MAX ranges per call);
  // a reader issuing one call per range would count 300.
  std::vector<std::vector<uint8_t>> bufs(300, std::vector<uint8_t>(8));
  std::vector<ReadRequest> reqs;
  for (size_t i = 0; i < 300; ++i)
    reqs.push_back({reinterpret_cast<uint64_t>(&values[i]), bufs[i]});
  mem.ReadMany(reqs);
  EXPECT_EQ(mem.stats().syscalls, 2u);
  for (size_t i = 0; i < 300; ++i) {
    ASSERT_TRUE(reqs[i].ok) << i;
    uint64_t v;
    std::memcpy(&v, bufs[i].data(), 8);
    ASSERT_EQ(v, 0x1000 + i);
  }

  // An unmapped range in the middle: the call stops there, the range is
  // retried alone to classify it, and the rest goes in one more call.
  std::vector<uint8_t> bad(8), tail(sizeof(text));
  reqs[150] = {8, bad};  // page 0 is never mapped
  reqs.push_back({reinterpret_cast<uint64_t>(text), tail});
  mem.ReadMany(reqs);
  EXPECT_EQ(mem.stats().syscalls, 2u + 3u);
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(reqs[i].ok, i != 150) << i;
  EXPECT_EQ(std::memcmp(tail.data(), text, sizeof(text)), 0);
  EXPECT_EQ(mem.stats().bytes_read, 8u + 300u * 8u + 299u * 8u + sizeof(text));
}

TEST(ProcessMemoryReader, UnmappedAddressIsNotFatal) {
  ProcessMemoryReader mem(getpid());
  std::vector<uint8_t> buf(16);
  EXPECT_FALSE(mem.TryRead(0x10, buf));
  try {
    mem.Read(0x10, buf, "runtime.mbuckets");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kMalformed);
    EXPECT_NE(std::string(e.what()).find("runtime.mbuckets at 0x10"), std::string::npos);
  }
}

TEST(ProcessMemoryReader, ExitedProcessIsNoSuchProcess) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  int status;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ProcessMemoryReader mem(child);
  std::vector<uint8_t> buf(8);
  try {
    mem.TryRead(0x400000, buf);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNoSuchProcess) << e.what();
  }
}

TEST(TestMemory, ReadsOnlyWhatIsMapped) {
  TestMemory mem;
  mem.Map(0x1000, std::vector<uint8_t>(16, 0xab));
  std::vector<uint8_t> buf(8);
  EXPECT_TRUE(mem.TryRead(0x1008, buf));
  EXPECT_FALSE(mem.TryRead(0x100c, buf));  // crosses the end
  EXPECT_FALSE(mem.TryRead(0xff8, buf));
  mem.PutU64(0x1000, 42);
  EXPECT_EQ(mem.ReadU64(0x1000, "x"), 42u);
}

}  // namespace
}  // namespace goheap2pprof

#include "proc/block_cache_reader.h"

namespace goheap2pprof {
namespace {

TEST(BlockCacheReader, ServesManySmallReadsFromFewBlockReads) {
  TestMemory mem;
  std::vector<uint8_t> bytes(1 << 20);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7);
  mem.Map(0x100000, bytes);
  BlockCacheReader cached(mem, {{0x100000, 0x200000}}, 64 * 1024);
  std::vector<uint8_t> buf(48);
  for (uint64_t off = 0; off + 48 <= bytes.size(); off += 200) {
    ASSERT_TRUE(cached.TryRead(0x100000 + off, buf));
    ASSERT_EQ(buf[5], static_cast<uint8_t>((off + 5) * 7));
  }
  EXPECT_EQ(mem.stats().syscalls, 16u);  // 1 MiB / 64 KiB blocks, each read once
  // A read across a block boundary is stitched from two blocks.
  std::vector<uint8_t> across(100);
  ASSERT_TRUE(cached.TryRead(0x100000 + 64 * 1024 - 50, across));
  EXPECT_EQ(across[60], static_cast<uint8_t>((64 * 1024 - 50 + 60) * 7));
}

TEST(BlockCacheReader, ArenaNeverHandsOutBytesPastItsEnd) {
  BlockCacheReader::Arena arena(4090);
  uint8_t* first = arena.Take(100);
  ASSERT_NE(first, nullptr);
  uint8_t* second = arena.Take(3962);  // at 128, up to the last byte
  ASSERT_EQ(second, first + 128);
  // Rounded up to 64, the second block would end at 4096, past the arena's
  // 4090 bytes; the arena is full, not "4096 - 4090" bytes short of empty.
  EXPECT_EQ(arena.Take(1), nullptr);
  BlockCacheReader::Arena exact(4096);
  ASSERT_NE(exact.Take(4096), nullptr);
  EXPECT_EQ(exact.Take(1), nullptr);
}

TEST(BlockCacheReader, BlocksThatFillAnArenaExactlyStayInside) {
  // A block clamped to a mapping of 4090 bytes fills a 4090-byte arena; its
  // 64-byte rounding must not push the arena's fill mark past the end, or
  // the next block would be carved from the page after the arena.
  TestMemory mem;
  std::vector<uint8_t> first(4090), second(64);
  for (size_t i = 0; i < first.size(); ++i) first[i] = static_cast<uint8_t>(i);
  for (size_t i = 0; i < second.size(); ++i) second[i] = static_cast<uint8_t>(0xff - i);
  mem.Map(0x10000, first);
  mem.Map(0x20000, second);
  BlockCacheReader cached(mem, {{0x10000, 0x10000 + 4090}, {0x20000, 0x20000 + 64}}, 4096,
                          /*first_arena_size=*/4090);
  std::vector<uint8_t> buf(4090);
  ASSERT_TRUE(cached.TryRead(0x10000, buf));
  EXPECT_EQ(buf, first);
  buf.resize(64);
  ASSERT_TRUE(cached.TryRead(0x20000, buf));
  EXPECT_EQ(buf, second);
  // Both blocks still hold their own bytes.
  const uint8_t* a = cached.View(0x10000 + 4000, 90);
  const uint8_t* b = cached.View(0x20000, 64);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(std::memcmp(a, first.data() + 4000, 90), 0);
  EXPECT_EQ(std::memcmp(b, second.data(), 64), 0);
  EXPECT_EQ(mem.stats().syscalls, 2u);  // each block read once
}

TEST(BlockCacheReader, ClampsBlocksToMappingsAndFallsBackOutside) {
  TestMemory mem;
  mem.Map(0x10000, std::vector<uint8_t>(0x1000, 1));  // a 4 KiB mapping
  mem.Map(0x90000, std::vector<uint8_t>(0x100, 2));   // not in the range list
  BlockCacheReader cached(mem, {{0x10000, 0x11000}}, 256 * 1024);
  std::vector<uint8_t> buf(16);
  EXPECT_TRUE(cached.TryRead(0x10ff0, buf));   // the block is the whole mapping
  EXPECT_FALSE(cached.TryRead(0x10ff8, buf));  // runs past the mapping's end
  EXPECT_TRUE(cached.TryRead(0x90000, buf));   // uncached, read directly
  EXPECT_EQ(buf[0], 2);
  EXPECT_FALSE(cached.TryRead(0x50000, buf));  // unmapped
}

}  // namespace
}  // namespace goheap2pprof
