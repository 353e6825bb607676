// The ?debug=1 writer's layout: Go's text/tabwriter, checked against output
// of Go 1.26.8's text/tabwriter.NewWriter(w, 1, 8, 1, '\t', 0) for the same
// input.
#include "pprof/heap_debug_text.h"

#include <gtest/gtest.h>

namespace goheap2pprof {
namespace {

TEST(GoTabwriter, MatchesGoOutput) {
  const std::string in =
      "heap profile: 1: 2 [3: 4] @ heap/1048576\n1: 2 [3: 4] @ 0x1 0x2\n"
      "#\t0x4a5b12\tmain.f+0x1c\t/src/main.go:12\n"
      "#\t0x4a5b1234\tmain.longerName+0x1\t/src/x.go:1\n#\t0x99\n"
      "#\t0x12\t\xc3\xa4.\xc3\xbc+0x2\t/a:3\n\n";
  const std::string want =
      "heap profile: 1: 2 [3: 4] @ heap/1048576\n1: 2 [3: 4] @ 0x1 0x2\n"
      "#\t0x4a5b12\tmain.f+0x1c\t\t/src/main.go:12\n"
      "#\t0x4a5b1234\tmain.longerName+0x1\t/src/x.go:1\n#\t0x99\n"
      "#\t0x12\t\xc3\xa4.\xc3\xbc+0x2\t/a:3\n\n";
  EXPECT_EQ(GoTabwriter(in), want);
}

TEST(GoTabwriter, WideCellsTakeMoreTabsAndBlocksEndAtPlainLines) {
  // Column 1 of the first block is 17 wide + padding: 24, so an 8-wide
  // cell gets 2 tabs; the plain line ends the block.
  EXPECT_EQ(GoTabwriter("#\t0x12345678\ta\n#\t0x123456789abcdef\tb\nx\n#\t0x1\tc\n"),
            "#\t0x12345678\t\ta\n#\t0x123456789abcdef\tb\nx\n#\t0x1\tc\n");
  EXPECT_EQ(GoTabwriter(""), "");
  EXPECT_EQ(GoTabwriter("no tabs\n"), "no tabs\n");
}

}  // namespace
}  // namespace goheap2pprof
