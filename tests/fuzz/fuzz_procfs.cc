// Fuzz target: the /proc stat and maps parsers and the pid parser.
#include <cstdint>
#include <string_view>

#include "base/error.h"
#include "proc/procfs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace goheap2pprof;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    ProcStat st = ParseProcStat(text);
    (void)st;
  } catch (const Error&) {
  }
  try {
    for (const MapsEntry& e : ParseProcMaps(text)) {
      if (e.end < e.start) __builtin_trap();  // the parser promises end >= start
    }
  } catch (const Error&) {
  }
  (void)ParsePid(text.substr(0, 16));
  return 0;
}
