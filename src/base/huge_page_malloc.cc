#include "base/huge_page_malloc.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace goheap2pprof {

void ReexecWithHugePageMalloc(char** argv) {
  const char* current = std::getenv("GLIBC_TUNABLES");
  // Set already (also our own mark after the exec, which stops a loop), or
  // set otherwise on purpose by the user: leave malloc as it is.
  if (current != nullptr && std::strstr(current, "glibc.malloc.hugetlb") != nullptr) return;
  std::string tunables = "glibc.malloc.hugetlb=1";
  if (current != nullptr && *current != '\0') tunables = std::string(current) + ":" + tunables;
  if (setenv("GLIBC_TUNABLES", tunables.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // No /proc or no exec permission: run on with small pages, and do not
  // hand the tunable to anything this process starts.
  if (current != nullptr) {
    setenv("GLIBC_TUNABLES", current, 1);
  } else {
    unsetenv("GLIBC_TUNABLES");
  }
}

}  // namespace goheap2pprof
