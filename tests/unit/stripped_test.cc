// Recovering data references from machine code, on hand-assembled
// instructions. Stripped real Go binaries: the Go tier's
// tests/go/stripped_binaries_test.cc.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gobin/code_scan.h"

namespace goheap2pprof {
namespace {

// ---------------------------------------------------------------------------
// Code scanning on hand-assembled instructions.

TEST(CodeScanTest, Amd64RipRelative) {
  // mov rax, [rip+0x10]; lea rcx, [rip-0x20]; mov dword ptr [rip+0x8], 1; ret
  const std::vector<uint8_t> code = {0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00,  //
                                     0x48, 0x8d, 0x0d, 0xe0, 0xff, 0xff, 0xff,  //
                                     0xc7, 0x05, 0x08, 0x00, 0x00, 0x00, 0x01,
                                     0x00, 0x00, 0x00, 0xc3};
  std::vector<DataRef> refs = ScanDataRefs(EM_X86_64, code, 0x1000);
  ASSERT_EQ(refs.size(), 3u);
  EXPECT_EQ(refs[0].target, 0x1007u + 0x10);
  EXPECT_EQ(refs[0].size, 8);
  EXPECT_FALSE(refs[0].write);
  EXPECT_EQ(refs[1].target, 0x100eu - 0x20);
  EXPECT_EQ(refs[1].size, 0);
  EXPECT_EQ(refs[2].target, 0x1018u + 0x8);
  EXPECT_EQ(refs[2].size, 4);
  EXPECT_TRUE(refs[2].write);
}

TEST(CodeScanTest, Arm64AdrpPairs) {
  auto put = [](std::vector<uint8_t>& b, uint32_t insn) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(insn >> (8 * i)));
  };
  std::vector<uint8_t> code;
  put(code, 0x90000001);  // adrp x1, +0 pages  (page of 0x10000 = 0x10000)
  put(code, 0x91004021);  // add  x1, x1, #0x10
  put(code, 0x88dffc21);  // ldar w1, [x1]
  put(code, 0xb0000002);  // adrp x2, +1 page
  put(code, 0xf9000440);  // str  x0, [x2, #8]
  put(code, 0xd65f03c0);  // ret
  std::vector<DataRef> refs = ScanDataRefs(EM_AARCH64, code, 0x10000);
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0].target, 0x10010u);
  EXPECT_EQ(refs[0].size, 4);  // from the ldar through the ADD's register
  EXPECT_FALSE(refs[0].write);
  EXPECT_EQ(refs[1].target, 0x11008u);
  EXPECT_EQ(refs[1].size, 8);
  EXPECT_TRUE(refs[1].write);
  // Truncated and garbage code decode without reading out of bounds.
  for (size_t n = 0; n <= code.size(); ++n) {
    ScanDataRefs(EM_AARCH64, Bytes(code.data(), n), 0x10000);
  }
  EXPECT_THROW(ScanDataRefs(EM_386, code, 0), Error);
}

}  // namespace
}  // namespace goheap2pprof
