// Fuzz target: Go build info blobs, version strings and the version scan.
#include <cstdint>
#include <string_view>

#include "base/error.h"
#include "gobin/buildinfo.h"
#include "gobin/go_binary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace goheap2pprof;
  Bytes bytes(data, size);
  try {
    (void)ParseBuildInfo(bytes);
  } catch (const Error&) {
  }
  try {
    (void)FindBuildInfo(bytes);
  } catch (const Error&) {
  }
  (void)ParseGoVersion(std::string_view(reinterpret_cast<const char*>(data), size));
  (void)ScanForGoVersion(bytes);
  return 0;
}
