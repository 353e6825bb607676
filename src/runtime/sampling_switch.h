// What `goheap2pprof enable-sampling` must write, per Go version, for a new
// runtime.MemProfileRate to take effect in a running program: proven from
// each toolchain's src/runtime/malloc.go (docs/enable-sampling.md has the
// lines). A table: a Go version it does not cover is refused, so a future
// runtime that needs more than the rate (a per-P reset, say) fails closed
// instead of being half switched.
//
//   std::optional<SamplingSwitch> s = SamplingSwitchFor(traits.version);
//   if (!s) refuse;  // unproven version
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gobin/buildinfo.h"

namespace goheap2pprof {

// The words to write. Every proven version needs the rate alone; a value
// added here must be implemented by app/enable_sampling.cc before a row
// uses it.
enum class SamplingWrites { kRateOnly };

struct SamplingSwitch {
  int first_minor = 0;  // Go 1.<first_minor> ...
  int last_minor = 0;   // ... to 1.<last_minor>, every patch release
  SamplingWrites writes = SamplingWrites::kRateOnly;
  // Why the rate alone suffices, for -v and the docs.
  std::string_view why;
};

// The row for v, or nullopt for a version no row proves.
std::optional<SamplingSwitch> SamplingSwitchFor(const GoVersion& v);

// "Go 1.18 to 1.27", for the refusal's message.
std::string ProvenSamplingSwitchVersions();

}  // namespace goheap2pprof
