// Fuzz target: the core file reader (program headers, the notes NT_FILE,
// NT_AUXV, NT_PRPSINFO, NT_SIGINFO, NT_PRSTATUS, the dumped ELF header page)
// and CoreMemoryReader over its segments. libdwfl's dwfl_core_file_report is
// left out: it is elfutils' parser, not ours.
#include <cstdint>
#include <vector>

#include "base/error.h"
#include "elf/core_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace goheap2pprof;
  try {
    CoreFile core = CoreFile::FromBytes(std::vector<uint8_t>(data, data + size), "fuzz");
    (void)CoreProducerName(core.producer());
    if (core.process()) (void)core.process()->comm.size();
    if (core.signal()) (void)SignalName(core.signal()->signo);
    CoreMemoryReader mem(core, nullptr, "", 0);
    std::vector<uint8_t> buf(64);
    for (const CoreSegment& seg : core.segments()) {
      if (seg.end() < seg.vaddr) __builtin_trap();  // Load promises no wrap-around
      (void)mem.TryRead(seg.vaddr, buf);
      (void)mem.TryRead(seg.end() - 8, buf);  // runs into the next segment or a gap
      if (const uint8_t* view = mem.View(seg.vaddr, seg.filesz)) {
        uint8_t sum = 0;
        for (uint64_t i = 0; i < seg.filesz; i += 4096) sum ^= view[i];
        (void)sum;
      }
      (void)core.DumpedHeaderAt(seg.vaddr);
    }
    for (const CoreFileMapping& m : core.file_mappings()) {
      (void)core.DumpedHeaderAt(m.start);
      (void)core.FirstMappingOf(m.path);
    }
    if (auto entry = core.auxv_entry()) {
      (void)core.FileMappingAt(*entry);
      (void)mem.TryRead(*entry, buf);
    }
  } catch (const Error&) {
  }
  // The header page parser on the raw bytes, as if they were dumped memory.
  (void)ParseDumpedElfHeader(Bytes(data, size));
  return 0;
}
