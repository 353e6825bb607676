// The Capstone the code scan calls through (gobin/capstone_library.h): the
// one it was built against, and, in a dynamic build, what loading another
// library, or none, says.
#include "gobin/capstone_library.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "base/error.h"

namespace goheap2pprof {
namespace {

TEST(CapstoneLibrary, IsTheCapstoneTheScanWasBuiltAgainst) {
  const CapstoneLibrary& cs = Capstone();
  int major = 0, minor = 0;
  cs.version(&major, &minor);
  EXPECT_EQ(major, CS_API_MAJOR);
  EXPECT_EQ(minor, CS_API_MINOR);
  // A call through the table reaches Capstone itself: lea rax, [rip+0x10]
  // decodes, with its operand's displacement.
  csh handle = 0;
  ASSERT_EQ(cs.open(CS_ARCH_X86, CS_MODE_64, &handle), CS_ERR_OK);
  ASSERT_EQ(cs.option(handle, CS_OPT_DETAIL, CS_OPT_ON), CS_ERR_OK);
  cs_insn* insn = cs.malloc(handle);
  ASSERT_NE(insn, nullptr);
  const uint8_t code[] = {0x48, 0x8d, 0x05, 0x10, 0x00, 0x00, 0x00};
  const uint8_t* p = code;
  size_t left = sizeof(code);
  uint64_t addr = 0x401000;
  ASSERT_TRUE(cs.disasm_iter(handle, &p, &left, &addr, insn));
  EXPECT_EQ(insn->id, X86_INS_LEA);
  EXPECT_EQ(insn->detail->x86.operands[1].mem.disp, 0x10);
  EXPECT_STREQ(cs.reg_name(handle, insn->detail->x86.operands[0].reg), "rax");
  EXPECT_EQ(left, 0u);
  cs.free(insn, 1);
  EXPECT_EQ(cs.close(&handle), CS_ERR_OK);
  EXPECT_STREQ(cs.strerror(CS_ERR_OK), "OK (CS_ERR_OK)");
  std::string why;
  EXPECT_EQ(TryCapstone(&why), &cs);
  EXPECT_TRUE(why.empty());
}

#ifdef GOHEAP2PPROF_CAPSTONE_DLOPEN
TEST(CapstoneLibrary, AMissingCapstoneIsNamedWithAHint) {
  const auto loaded = TryLoadCapstoneLibrary("libcapstone-goheap2pprof-absent.so.4");
  ASSERT_FALSE(loaded) << "loaded libcapstone-goheap2pprof-absent.so.4 as Capstone";
  const Error& e = loaded.error();
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  const std::string what = e.what();
  EXPECT_NE(what.find("reading a stripped Go binary's code needs Capstone"), std::string::npos)
      << what;
  EXPECT_NE(what.find("libcapstone-goheap2pprof-absent.so.4"), std::string::npos) << what;
  EXPECT_NE(e.hint().find("libcapstone4"), std::string::npos) << e.hint();
}

TEST(CapstoneLibrary, ALibraryWithoutCapstonesFunctionsIsRefused) {
  const auto loaded = TryLoadCapstoneLibrary("libz.so.1");
  ASSERT_FALSE(loaded) << "loaded libz.so.1 as Capstone";
  const Error& e = loaded.error();
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  EXPECT_NE(std::string(e.what()).find("libz.so.1 has no function cs_open"), std::string::npos)
      << e.what();
}
#endif

}  // namespace
}  // namespace goheap2pprof
