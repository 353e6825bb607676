#include "runtime/runtime_traits.h"

#include <iterator>

#include "base/error.h"

namespace goheap2pprof {

namespace {
// Minor versions exercised end to end by tests/e2e/oracle_test.sh.
constexpr int kVerifiedMinors[] = {19, 26, 27};
}  // namespace

RuntimeTraits TraitsForVersion(const GoVersion& v) {
  if (v.major != 1 || v.minor < 18) {
    throw Error(ErrorKind::kUnsupported, "target was built with ", FormatGoVersion(v),
                "; goheap2pprof reads Go 1.18 and newer (older runtimes use other bucket "
                "and pclntab layouts)");
  }
  const int m = v.minor;
  RuntimeTraits t;
  t.version = v;
  for (int verified : kVerifiedMinors) t.verified |= (m == verified);
  t.newer_than_verified = m > kVerifiedMinors[std::size(kVerifiedMinors) - 1];

  if (m == 18) {
    t.cycle_symbol = "runtime.mProf";
    t.cycle_encoding = CycleEncoding::kMProfStruct;
  } else {
    t.cycle_symbol = "runtime.mProfCycle";
    t.cycle_encoding = CycleEncoding::kMProfCycle;
  }
  if (m <= 22) {
    t.max_stack_words = 32;
  } else if (m <= 25) {
    t.max_stack_words = 1024;
  } else {
    t.max_stack_words = 1024 + 2;
  }

  if (m >= 27) {
    t.record_layout = MemRecordLayout::kCountsOnly;
    t.bytes_label_is_object_size = true;
  }

  t.hidden_prefixes = {"runtime."};
  if (m >= 24) t.hidden_prefixes.push_back("internal/runtime/");
  t.writes_start_line = m >= 20;
  t.debug_text_sorts_ascending = m >= 23;
  t.dedup_by_printed_name = m == 21;
  t.deck_compares_printed_name = m <= 21;
  t.cached_location_deck_retry = m >= 19;

  // internal/abi FuncID numbering (runtime/symtab.go before 1.21).
  if (m <= 21) {
    t.func_ids = {.gopanic = 9, .panicwrap = 14, .sigpanic = 18, .wrapper = 21};
  } else if (m <= 24) {
    t.func_ids = {.gopanic = 10, .panicwrap = 15, .sigpanic = 19, .wrapper = 22};
  } else {
    t.func_ids = {.gopanic = 10, .panicwrap = 15, .sigpanic = 20, .wrapper = 23};
  }
  return t;
}

std::string VerifiedVersionsText() {
  // "Go 1.19, 1.26 and 1.27", from the list itself so the two cannot differ.
  std::string text = "Go ";
  const size_t n = std::size(kVerifiedMinors);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) text += i + 1 == n ? " and " : ", ";
    text += "1." + std::to_string(kVerifiedMinors[i]);
  }
  return text;
}

std::optional<std::string> UntestedVersionWarning(const RuntimeTraits& traits) {
  if (traits.verified) return std::nullopt;
  return FormatGoVersion(traits.version) +
         (traits.newer_than_verified ? " is newer than" : " is not one of") +
         " the Go versions goheap2pprof is tested with (" + VerifiedVersionsText() +
         "); proceeding because its runtime tables validate";
}

}  // namespace goheap2pprof
