#include "base/error.h"

#include <cstdio>

namespace goheap2pprof {

std::string_view ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage:
      return "usage";
    case ErrorKind::kNoSuchProcess:
      return "no such process";
    case ErrorKind::kPermission:
      return "permission denied";
    case ErrorKind::kNotGo:
      return "not a Go program";
    case ErrorKind::kUnsupported:
      return "unsupported target";
    case ErrorKind::kSamplingDisabled:
      return "heap sampling disabled";
    case ErrorKind::kMalformed:
      return "malformed target data";
    case ErrorKind::kIo:
      return "I/O error";
    case ErrorKind::kInternal:
      return "internal error";
  }
  return "unknown";
}

std::string Hex(uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(value));
  return buf;
}

}  // namespace goheap2pprof
