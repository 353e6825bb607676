// The OTEP 4719 process-context reader: headers in test memory (valid, torn,
// hostile), and a context this test process publishes itself the way an SDK
// does (memfd "OTEL_CTX" mapped shared), read back through /proc like a target's.
#include "proc/otel_context.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

namespace goheap2pprof {
namespace {

constexpr uint64_t kHeader = 0x7f0000001000;
constexpr uint64_t kPayload = 0x7f0000002000;

std::vector<uint8_t> HeaderBytes(std::string_view sig, uint32_t version, uint32_t size,
                                 uint64_t published, uint64_t payload) {
  std::vector<uint8_t> h(32);
  std::memcpy(h.data(), sig.data(), std::min<size_t>(sig.size(), 8));
  std::memcpy(&h[8], &version, 4);
  std::memcpy(&h[12], &size, 4);
  std::memcpy(&h[16], &published, 8);
  std::memcpy(&h[24], &payload, 8);
  return h;
}

TestMemory WithContext(std::string_view sig, uint32_t version, const std::string& payload,
                       uint64_t published = 1700000000000000000) {
  TestMemory mem;
  mem.Map(kHeader, HeaderBytes(sig, version, payload.size(), published, kPayload));
  mem.Map(kPayload, std::vector<uint8_t>(payload.begin(), payload.end()));
  return mem;
}

TEST(OtelContext, ReadsAPublishedPayload) {
  TestMemory mem = WithContext("OTEL_CTX", 2, "resource-bytes");
  auto ctx = ReadOtelContextAt(mem, kHeader);
  ASSERT_TRUE(ctx);
  EXPECT_EQ(ctx->resource, "resource-bytes");
  EXPECT_EQ(ctx->version, 2u);
  EXPECT_EQ(ctx->published_at_ns, 1700000000000000000u);
}

TEST(OtelContext, RefusesWhatIsNotAContext) {
  TestMemory nothing;
  EXPECT_FALSE(ReadOtelContextAt(nothing, kHeader));
  TestMemory bad_sig = WithContext("OTEL_CTY", 2, "x");
  EXPECT_FALSE(ReadOtelContextAt(bad_sig, kHeader));
  TestMemory bad_version = WithContext("OTEL_CTX", 3, "x");
  EXPECT_FALSE(ReadOtelContextAt(bad_version, kHeader));
  TestMemory empty = WithContext("OTEL_CTX", 2, "");
  EXPECT_FALSE(ReadOtelContextAt(empty, kHeader));
  // A hostile size is refused before any allocation of that size.
  TestMemory huge;
  huge.Map(kHeader, HeaderBytes("OTEL_CTX", 2, kMaxOtelContextPayload + 1, 1, kPayload));
  EXPECT_FALSE(ReadOtelContextAt(huge, kHeader));
  // A payload pointer into unmapped memory.
  TestMemory dangling;
  dangling.Map(kHeader, HeaderBytes("OTEL_CTX", 2, 4, 1, 0xdead0000));
  EXPECT_FALSE(ReadOtelContextAt(dangling, kHeader));
}

TEST(OtelContext, StaysMidUpdateMeansNoContext) {
  TestMemory mem = WithContext("OTEL_CTX", 2, "x", /*published=*/0);
  EXPECT_FALSE(ReadOtelContextAt(mem, kHeader));
}

TEST(OtelContext, AnUpdateDuringTheReadIsReadAgain) {
  TestMemory mem = WithContext("OTEL_CTX", 2, "old-payload", 100);
  bool updated = false;
  // The publisher replaces the payload and its timestamp while the reader
  // copies the old one: the first read is discarded, the second is whole.
  mem.SetReadHook([&](uint64_t addr, uint64_t) {
    if (addr != kPayload || updated) return;
    updated = true;
    std::string fresh = "new-payload";
    mem.Map(kPayload, std::vector<uint8_t>(fresh.begin(), fresh.end()));
    mem.PutU64(kHeader + 16, 200);
  });
  auto ctx = ReadOtelContextAt(mem, kHeader);
  ASSERT_TRUE(ctx);
  EXPECT_TRUE(updated);
  EXPECT_EQ(ctx->resource, "new-payload");
  EXPECT_EQ(ctx->published_at_ns, 200u);
}

TEST(OtelContext, FindsTheMappingByName) {
  MapsEntry e;
  e.start = 1;
  e.end = 4097;
  e.perms = "rw-s";
  for (const char* name :
       {"/memfd:OTEL_CTX (deleted)", "[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]"}) {
    e.path = name;
    EXPECT_TRUE(IsOtelContextMapping(e)) << name;
  }
  for (const char* name : {"", "[heap]", "/memfd:OTHER (deleted)", "/tmp/OTEL_CTX"}) {
    e.path = name;
    EXPECT_FALSE(IsOtelContextMapping(e)) << name;
  }
  e.path = "/memfd:OTEL_CTX (deleted)";
  e.perms = "---s";
  EXPECT_FALSE(IsOtelContextMapping(e));
}

// What an SDK does (OTEP 4719's publication protocol, steps 2-9), in this
// process: a memfd named OTEL_CTX, mapped shared, payload after the header.
class PublishedHere {
 public:
  explicit PublishedHere(const std::string& payload) {
    int fd = memfd_create("OTEL_CTX", MFD_CLOEXEC);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, 4096), 0);
    page_ = static_cast<uint8_t*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    close(fd);
    EXPECT_NE(page_, MAP_FAILED);
    auto addr = reinterpret_cast<uint64_t>(page_);
    std::vector<uint8_t> h = HeaderBytes("", 2, payload.size(), 42, addr + 32);
    std::memcpy(page_ + 32, payload.data(), payload.size());
    std::memcpy(page_ + 8, &h[8], 24);
    std::memcpy(page_, "OTEL_CTX", 8);  // the signature last
  }
  ~PublishedHere() { munmap(page_, 4096); }

 private:
  uint8_t* page_ = nullptr;
};

TEST(OtelContext, ReadsAContextPublishedByALiveProcess) {
  ProcessMemoryReader mem(getpid());
  EXPECT_FALSE(ReadOtelContext(mem, ReadProcMaps(getpid())));
  PublishedHere published("\x0a\x05hello");
  auto ctx = ReadOtelContext(mem, ReadProcMaps(getpid()));
  ASSERT_TRUE(ctx);
  EXPECT_EQ(ctx->resource, "\x0a\x05hello");
  EXPECT_EQ(ctx->published_at_ns, 42u);
}

}  // namespace
}  // namespace goheap2pprof
