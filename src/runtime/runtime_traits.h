// What differs between Go runtime versions for a remote heap-profile reader,
// as data chosen once from the target's Go version. Code below the app layer
// reads these fields and never compares version numbers itself.
//
//   RuntimeTraits t = TraitsForVersion({1, 22, 0});
//   if (t.cycle_encoding == CycleEncoding::kMProfCycle) ...
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gobin/buildinfo.h"

namespace goheap2pprof {

enum class CycleEncoding {
  kMProfStruct,  // 1.18: runtime.mProf {cycle uint32; flushed bool}
  kMProfCycle,   // 1.19+: runtime.mProfCycle, uint32 value = cycle<<1 | flushed
};

// FuncIDs needed for expandFinalInlineFrame's wrapper elision.
struct FuncIds {
  uint8_t gopanic = 0;
  uint8_t panicwrap = 0;
  uint8_t sigpanic = 0;
  uint8_t wrapper = 0;
};

struct RuntimeTraits {
  GoVersion version;
  // True for versions whose layout the project's tests verify end to end;
  // others are read only when the runtime tables validate, with a warning.
  bool verified = false;

  // --- heap buckets (runtime/mprof.go) ---
  std::string_view cycle_symbol;  // runtime.mProfCycle or runtime.mProf
  CycleEncoding cycle_encoding = CycleEncoding::kMProfCycle;
  // Largest nstk a heap bucket can have: 32 before 1.23, the 1024 cap of
  // debug.profstackdepth from 1.23, plus the 2 extra words recorded from 1.26.
  uint64_t max_stack_words = 32;

  // --- runtime/pprof's heap writer (protomem.go, proto.go) ---
  // hideRuntime drops leading frames whose FuncForPC name has one of these.
  std::vector<std::string_view> hidden_prefixes;
  bool writes_start_line = false;         // Function.start_line, 1.20+
  bool dedup_by_printed_name = false;     // 1.21 only: Function keyed by "F[...]"
  bool deck_compares_printed_name = false;  // 1.18-1.21 compare Frame.Function
  bool cached_location_deck_retry = false;  // 1.19+: fake-PC retry on cache hit
  FuncIds func_ids;
};

// Throws Error(kUnsupported) for Go older than 1.18 (other bucket and
// pclntab formats). Versions newer than the newest verified one get the
// newest known traits with verified = false.
RuntimeTraits TraitsForVersion(const GoVersion& version);

// The newest and oldest Go versions the tests verify, for messages.
std::string VerifiedVersionsText();

}  // namespace goheap2pprof
