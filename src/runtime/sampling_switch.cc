#include "runtime/sampling_switch.h"

#include <iterator>

#include "base/error.h"

namespace goheap2pprof {
namespace {

// Read in each toolchain's src/runtime/malloc.go (line numbers per toolchain
// in docs/enable-sampling.md).
// The why of each row is the rule its toolchains' mallocgc and profilealloc
// follow; enable-sampling prints it in -v.
constexpr SamplingSwitch kSwitches[] = {
    {18, 23, SamplingWrites::kRateOnly,
     "mallocgc samples when MemProfileRate > 0 and size >= c.nextSample; an mcache made at "
     "rate 0 holds nextSample = fastexprand(0) = 0 and is not decremented at rate 0, so its "
     "next allocation draws a new one"},
    {24, 27, SamplingWrites::kRateOnly,
     "mallocgc samples when c.nextSample < 0 || MemProfileRate != c.memProfRate, and "
     "profilealloc takes the new rate, so each P follows it at its next allocation"},
};

}  // namespace

std::optional<SamplingSwitch> SamplingSwitchFor(const GoVersion& v) {
  if (v.major != 1) return std::nullopt;
  for (const SamplingSwitch& s : kSwitches) {
    if (v.minor >= s.first_minor && v.minor <= s.last_minor) return s;
  }
  return std::nullopt;
}

std::string ProvenSamplingSwitchVersions() {
  return Concat("Go 1.", kSwitches[0].first_minor, " to 1.", std::end(kSwitches)[-1].last_minor);
}

}  // namespace goheap2pprof
