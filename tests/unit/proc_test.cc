// /proc parsers and the memory readers, on text and on this test process.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <span>
#include <vector>

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

// A batch of 8 MiB is read by two threads (ProcessMemoryReader's
// kParallelReadBytes is 4 MiB): every range lands where it was asked to, an
// unmapped range in either half fails alone, and the statistics count both
// threads' calls and bytes.
TEST(ProcessMemoryReader, ALargeBatchReadOnTwoThreadsIsTheSameRead) {
  constexpr size_t kRanges = 2048, kRange = 4096;
  std::vector<uint64_t> source(kRanges * kRange / 8);
  for (size_t i = 0; i < source.size(); ++i) source[i] = i * 0x9e3779b97f4a7c15ull;
  std::vector<uint8_t> dst(kRanges * kRange);
  std::vector<ReadRequest> reqs;
  for (size_t i = 0; i < kRanges; ++i) {
    // In reverse order, so that a range written to the wrong place shows.
    const size_t from = kRanges - 1 - i;
    reqs.push_back({reinterpret_cast<uint64_t>(source.data()) + from * kRange,
                    std::span<uint8_t>(dst.data() + i * kRange, kRange)});
  }
  std::vector<uint8_t> bad1(kRange), bad2(kRange);
  reqs[100] = {8, bad1};             // page 0 is never mapped: in the first half
  reqs[kRanges - 100] = {16, bad2};  // and in the second
  ProcessMemoryReader mem(getpid());
  mem.ReadMany(reqs);
  for (size_t i = 0; i < kRanges; ++i) {
    ASSERT_EQ(reqs[i].ok, i != 100 && i != kRanges - 100) << i;
    if (!reqs[i].ok) continue;
    const size_t from = kRanges - 1 - i;
    ASSERT_EQ(std::memcmp(dst.data() + i * kRange, source.data() + from * kRange / 8, kRange), 0)
        << i;
  }
  EXPECT_EQ(mem.stats().bytes_read, (kRanges - 2) * kRange);
  // Two calls a half (1,024 ranges each), and for each unmapped range one
  // that stops at it, one alone to classify it, and one for the rest of its
  // call: 2 + 2 x 2.
  EXPECT_EQ(mem.stats().syscalls, 6u);
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

// 64 KiB of bytes that differ from block to block, mapped at 0x100000.
TestMemory PatternMemory(std::vector<uint8_t>& bytes) {
  TestMemory mem;
  bytes.resize(64 * 1024);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + i / 4096);
  mem.Map(0x100000, bytes);
  return mem;
}

TEST(BlockCacheReader, EvictsTheLeastRecentlyUsedBlockAndRereadsItTheSame) {
  std::vector<uint8_t> bytes;
  TestMemory mem = PatternMemory(bytes);
  BlockCacheReader cached(mem, {{0x100000, 0x110000}}, 4096, /*max_blocks=*/2);
  std::vector<uint8_t> buf(16);
  auto read = [&](uint64_t block) {
    const uint64_t off = block * 4096 + 100;
    EXPECT_TRUE(cached.TryRead(0x100000 + off, buf));
    EXPECT_TRUE(std::equal(buf.begin(), buf.end(), bytes.begin() + off));
  };
  read(0);
  read(1);
  read(0);  // held
  EXPECT_EQ(cached.block_reads(), 2u);
  read(2);  // evicts block 1, the least recently used
  EXPECT_EQ(cached.block_reads(), 3u);
  read(0);  // still held
  EXPECT_EQ(cached.block_reads(), 3u);
  read(1);  // read again (evicting block 2), with the same bytes
  EXPECT_EQ(cached.block_reads(), 4u);
  read(2);
  EXPECT_EQ(cached.block_reads(), 5u);
  EXPECT_EQ(mem.stats().syscalls, 5u);
  // A view is of the block's bytes, also after it was evicted and re-read.
  const uint8_t* v = cached.View(0x100000 + 3 * 4096 + 8, 64);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(std::memcmp(v, bytes.data() + 3 * 4096 + 8, 64), 0);
  EXPECT_EQ(cached.failed_blocks(), 0u);
}

TEST(BlockCacheReader, AReadStraddlingBlocksWorksWithOneBlockHeld) {
  std::vector<uint8_t> bytes;
  TestMemory mem = PatternMemory(bytes);
  BlockCacheReader cached(mem, {{0x100000, 0x110000}}, 4096, /*max_blocks=*/1);
  // Across three blocks: each is read, copied from and evicted in turn.
  std::vector<uint8_t> buf(2 * 4096 + 200);
  const uint64_t off = 4096 - 100;
  ASSERT_TRUE(cached.TryRead(0x100000 + off, buf));
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), bytes.begin() + off));
  EXPECT_EQ(cached.block_reads(), 4u);
  // No view spans two blocks: the caller copies instead.
  EXPECT_EQ(cached.View(0x100000 + 4096 - 8, 16), nullptr);
  ASSERT_NE(cached.View(0x100000 + 4096 - 8, 8), nullptr);
}

TEST(BlockCacheReader, ABlockThatCannotBeReadIsReadAroundNotRetried) {
  // The maps claim 64 KiB; only the first 6 KiB are still mapped (the
  // target unmapped the rest since /proc/<pid>/maps was read).
  TestMemory mem;
  std::vector<uint8_t> bytes(6 * 1024);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i ^ 0x5a);
  mem.Map(0x100000, bytes);
  BlockCacheReader cached(mem, {{0x100000, 0x110000}}, 4096, /*max_blocks=*/4);
  std::vector<uint8_t> buf(64);
  ASSERT_TRUE(cached.TryRead(0x100000 + 4096 + 10, buf));  // its block fails: read directly
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), bytes.begin() + 4096 + 10));
  EXPECT_EQ(cached.failed_blocks(), 1u);
  EXPECT_EQ(cached.View(0x100000 + 4096 + 10, 64), nullptr);
  ASSERT_TRUE(cached.TryRead(0x100000 + 4096 + 20, buf));
  EXPECT_EQ(cached.block_reads(), 1u);                 // the failed block is remembered
  EXPECT_FALSE(cached.TryRead(0x100000 + 8192, buf));  // really unmapped
  // A read from the good block into the bad one: the good part from the
  // cache, the rest directly.
  std::vector<uint8_t> across(200);
  ASSERT_TRUE(cached.TryRead(0x100000 + 4096 - 100, across));
  EXPECT_TRUE(std::equal(across.begin(), across.end(), bytes.begin() + 4096 - 100));
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

// Where reader's view of 0x100000 + 100 is: the first slot of its buffer.
const uint8_t* FirstSlotView(BlockCacheReader& reader) { return reader.View(0x100000 + 100, 16); }

TEST(BlockCacheReader, KeepsNoBufferUnlessAsked) {
  std::vector<uint8_t> bytes;
  TestMemory mem = PatternMemory(bytes);
  {
    BlockCacheReader reader(mem, {{0x100000, 0x110000}}, 4096, /*max_blocks=*/4);
    ASSERT_NE(FirstSlotView(reader), nullptr);
  }
  EXPECT_EQ(BlockCacheReader::KeptBufferBytes(), 0u);
  BlockCacheReader::KeepBuffersForReuse(true);
  {
    BlockCacheReader reader(mem, {{0x100000, 0x110000}}, 4096, /*max_blocks=*/4);
    ASSERT_NE(FirstSlotView(reader), nullptr);
  }
  EXPECT_EQ(BlockCacheReader::KeptBufferBytes(), size_t{2} << 20);  // one huge page
  BlockCacheReader::ReleaseKeptBuffer();
  EXPECT_EQ(BlockCacheReader::KeptBufferBytes(), 0u);
  {
    BlockCacheReader reader(mem, {{0x100000, 0x110000}}, 4096, /*max_blocks=*/4);
    ASSERT_NE(FirstSlotView(reader), nullptr);
  }
  BlockCacheReader::KeepBuffersForReuse(false);  // gives back what it kept
  EXPECT_EQ(BlockCacheReader::KeptBufferBytes(), 0u);
}

TEST(BlockCacheReader, ALaterReaderTakesTheBufferOfOneThatEndedAndReadsItsOwnBytes) {
  BlockCacheReader::KeepBuffersForReuse(true);
  std::vector<uint8_t> first_bytes;
  TestMemory first_mem = PatternMemory(first_bytes);
  const uint8_t* first_view = nullptr;
  const uint8_t* beside_view = nullptr;
  {
    BlockCacheReader first(first_mem, {{0x100000, 0x110000}}, 4096, /*max_blocks=*/4);
    first_view = FirstSlotView(first);
    ASSERT_NE(first_view, nullptr);
  }
  // Other bytes at the same addresses (another process): the buffer is the
  // same, what it serves is read anew, none of the first reader's blocks.
  std::vector<uint8_t> second_bytes(64 * 1024, 0xa5);
  TestMemory second_mem;
  second_mem.Map(0x100000, second_bytes);
  {
    BlockCacheReader second(second_mem, {{0x100000, 0x110000}}, 4096, /*max_blocks=*/4);
    const uint8_t* second_view = FirstSlotView(second);
    ASSERT_NE(second_view, nullptr);
    EXPECT_EQ(second_view, first_view);
    EXPECT_EQ(std::memcmp(second_view, second_bytes.data() + 100, 16), 0);
    EXPECT_EQ(second.block_reads(), 1u);
    // One buffer is kept: a reader beside this one maps its own.
    BlockCacheReader beside(first_mem, {{0x100000, 0x110000}}, 4096, /*max_blocks=*/4);
    beside_view = FirstSlotView(beside);
    ASSERT_NE(beside_view, nullptr);
    EXPECT_NE(beside_view, second_view);
    EXPECT_EQ(std::memcmp(beside_view, first_bytes.data() + 100, 16), 0);
  }
  // The reader beside ended first and its buffer is the one kept (the
  // other was unmapped). A reader whose buffer is another size (4 MiB: 16
  // blocks of 256 KiB) does not take it; one of its size does.
  {
    BlockCacheReader larger(first_mem, {{0x100000, 0x110000}}, 256 * 1024, /*max_blocks=*/16);
    const uint8_t* larger_view = FirstSlotView(larger);
    ASSERT_NE(larger_view, nullptr);
    EXPECT_NE(larger_view, beside_view);
    EXPECT_EQ(std::memcmp(larger_view, first_bytes.data() + 100, 16), 0);
    BlockCacheReader same_size(second_mem, {{0x100000, 0x110000}}, 4096, /*max_blocks=*/4);
    EXPECT_EQ(FirstSlotView(same_size), beside_view);
  }
  BlockCacheReader::KeepBuffersForReuse(false);
}

}  // namespace
}  // namespace goheap2pprof

namespace goheap2pprof {
namespace {

TEST(ParseProcStatusMemory, ReadsTheMemoryLinesInBytes) {
  const std::string status =
      "Name:\tserver\nVmPeak:\t  1263876 kB\nVmHWM:\t   120344 kB\nVmRSS:\t   118000 kB\n"
      "RssAnon:\t  105000 kB\nRssFile:\t   12000 kB\nRssShmem:\t    1000 kB\nThreads:\t9\n";
  const ProcStatusMemory m = ParseProcStatusMemory(status);
  EXPECT_EQ(m.vm_hwm, uint64_t{120344} * 1024);
  EXPECT_EQ(m.vm_rss, uint64_t{118000} * 1024);
  EXPECT_EQ(m.rss_anon, uint64_t{105000} * 1024);
  EXPECT_EQ(m.rss_file, uint64_t{12000} * 1024);
  EXPECT_EQ(m.rss_shmem, uint64_t{1000} * 1024);
}

TEST(ParseProcStatusMemory, MissingOrMalformedLinesAreAbsent) {
  // A kernel before 4.5 has no Rss* lines; a kernel thread has no Vm* lines.
  const ProcStatusMemory m = ParseProcStatusMemory(
      "VmRSS:\t 12 kB\nVmHWM:\t x kB\nRssAnon:\t 12 MB\nRssFileX:\t 1 kB\n"
      "RssShmem:\t 99999999999999999999 kB\n");
  EXPECT_EQ(m.vm_rss, uint64_t{12} * 1024);
  EXPECT_FALSE(m.vm_hwm);
  EXPECT_FALSE(m.rss_anon);
  EXPECT_FALSE(m.rss_file);
  EXPECT_FALSE(m.rss_shmem);
  EXPECT_FALSE(ParseProcStatusMemory("").vm_rss);
}

TEST(ParseProcStatusMemory, ReadsThisProcess) {
  const ProcStatusMemory m = ParseProcStatusMemory(ReadProcFile(getpid(), "status"));
  ASSERT_TRUE(m.vm_rss && m.vm_hwm);
  EXPECT_GT(*m.vm_rss, 0u);
  EXPECT_GE(*m.vm_hwm, *m.vm_rss);
}

// The one read of those lines that serve's worker, watch, growth and mem
// use: this process's, and none for a process that has ended and been reaped.
TEST(ReadProcStatusMemory, ReadsALiveProcessAndNothingForAGoneOne) {
  const std::optional<ProcStatusMemory> self = ReadProcStatusMemory(getpid());
  ASSERT_TRUE(self && self->vm_rss && self->vm_hwm);
  EXPECT_GE(*self->vm_hwm, *self->vm_rss);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_FALSE(ReadProcStatusMemory(child));
}

}  // namespace
}  // namespace goheap2pprof
