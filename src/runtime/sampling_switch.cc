#include "runtime/sampling_switch.h"

namespace goheap2pprof {
namespace {

// Read in each toolchain's src/runtime/malloc.go (line numbers per toolchain
// in docs/enable-sampling.md).
constexpr SamplingSwitch kSwitches[] = {
    // mallocgc samples only under `if rate := MemProfileRate; rate > 0`, and
    // then when `rate != 1 && size < c.nextSample` is false. An mcache made
    // while the rate was 0 holds nextSample = fastexprand(0) = 0 and is never
    // decremented at rate 0, so the first allocation after the rate is
    // written reaches profilealloc, which draws nextSample at the new rate.
    {18, 23, SamplingWrites::kRateOnly,
     "mallocgc samples when MemProfileRate > 0 and size >= c.nextSample; an mcache made at "
     "rate 0 holds nextSample = fastexprand(0) = 0, so its next allocation draws a new one"},
    // mallocgc calls profilealloc when `c.nextSample < 0 || MemProfileRate
    // != c.memProfRate`, and profilealloc stores c.memProfRate =
    // MemProfileRate: each P follows a new rate at its next allocation.
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

std::string_view ProvenSamplingSwitchVersions() { return "Go 1.18 to 1.27"; }

}  // namespace goheap2pprof
