// Fuzz target: the pclntab decoder and the symbolizer on top of it.
// Input: u32 little-endian length of the funcdata (gofunc) blob, then the
// table bytes, then the gofunc bytes.
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "gobin/pclntab.h"
#include "runtime/runtime_traits.h"
#include "symbolize/symbolizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace goheap2pprof;
  if (size < 4) return 0;
  uint32_t gofunc_len;
  std::memcpy(&gofunc_len, data, 4);
  data += 4;
  size -= 4;
  gofunc_len = static_cast<uint32_t>(std::min<size_t>(gofunc_len, size));
  Bytes table(data, size - gofunc_len);
  Bytes gofunc(data + size - gofunc_len, gofunc_len);
  constexpr uint64_t kText = 0x1000;
  try {
    Pclntab tab(table, kText, gofunc);
    uint64_t end = tab.text_end();
    for (uint32_t i = 0; i < tab.nfunc() && i < 16; ++i) {
      try {
        FuncRef f = tab.FuncAt(i);
        (void)tab.FuncName(f);
        (void)tab.FuncId(f);
        for (uint64_t pc = f.entry; pc < f.entry + 0x40 && pc < end; pc += 7) {
          try {
            (void)tab.FrameAt(f, pc);
            (void)tab.InlineParentPc(f, pc);
          } catch (const Error&) {
          }
        }
      } catch (const Error&) {
      }
    }
    // The symbolizer never throws: failures become failed lookups.
    for (GoVersion v : {GoVersion{1, 19, 0}, GoVersion{1, 21, 0}, GoVersion{1, 26, 0}}) {
      RuntimeTraits traits = TraitsForVersion(v);
      Symbolizer sym(tab, traits);
      std::vector<uint64_t> stack;
      for (uint64_t pc = kText; pc < kText + 0x400; pc += 0x13) {
        stack.push_back(pc);
        (void)sym.FramesFor(pc);
        (void)sym.FuncNameForPc(pc);
      }
      (void)sym.ExpandFinalInlineFrame(stack);
    }
  } catch (const Error&) {
  }
  return 0;
}
