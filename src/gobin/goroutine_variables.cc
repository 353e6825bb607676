#include "gobin/goroutine_variables.h"

#include <cstring>
#include <string>

#include "base/error.h"
#include "gobin/variable_recovery.h"

namespace goheap2pprof {

namespace {

// The first wait reasons of every Go release: waitReasonZero, then
// waitReasonGCAssistMarking (go-goroutine-facts.md §10.5: the rest moves).
constexpr std::string_view kFirstWaitReasons[] = {"", "GC assist marking"};
// More than any release has (1.27: about 50); the table's bound.
constexpr uint64_t kMaxWaitReasons = 256;
constexpr uint64_t kMaxWaitReasonLength = 64;

RuntimeVariable GoroutineSymbol(const GoBinary& bin, std::string_view name) {
  return SymbolOrRefuse(bin, name, "goroutines");
}

// The Go string {ptr, len} at a in the file, if it and its bytes are there
// and it reads as a wait reason (printable ASCII, short).
std::optional<std::string> FileWaitReason(const GoBinary& bin, uint64_t a) {
  const std::optional<uint64_t> ptr = bin.ReadPointer(a);
  const std::optional<Bytes> len_bytes = bin.elf().ReadVaddr(a + 8, 8);
  if (!ptr || !len_bytes || len_bytes->size() != 8) return std::nullopt;
  const uint64_t len = LoadU64(len_bytes->data());
  if (len == 0) return std::string();
  if (len > kMaxWaitReasonLength) return std::nullopt;
  const std::optional<Bytes> text = bin.elf().ReadVaddr(*ptr, len);
  if (!text || text->size() != len) return std::nullopt;
  std::string out(text->begin(), text->end());
  for (char c : out) {
    if (c < ' ' || c > '~') return std::nullopt;
  }
  return out;
}

// How many wait reasons the file holds at a: "" first, "GC assist marking"
// second, then every entry that reads as one; 0 if a is no such table.
uint64_t CountWaitReasons(const GoBinary& bin, uint64_t a) {
  uint64_t n = 0;
  for (; n < kMaxWaitReasons; ++n) {
    std::optional<std::string> s = FileWaitReason(bin, a + 16 * n);
    if (n < std::size(kFirstWaitReasons)) {
      if (!s || *s != kFirstWaitReasons[n]) return 0;
    } else if (!s || s->empty()) {
      break;
    }
  }
  return n;
}

// allgptr: loaded by forEachGRace (atomicAllG) beside allglen, and
// replaced by allgadd when append moves the array. A pointer, so in .bss,
// which tells it from allglen (.noptrbss); allgs, which allgadd also
// touches, forEachGRace never does.
RuntimeVariable RecoverAllgptr(const GoBinary& bin, RuntimeCode& code, const ModuleData& md) {
  return RecoverVariable(
      bin, code, "runtime.allgptr",
      {{{"runtime.allgadd"}, true, std::nullopt}, {{"runtime.forEachGRace"}, true, std::nullopt}},
      0, [&](uint64_t a) { return CheckPlacement(md, DataSection::kBss, 8, a); });
}

// The finalizer state: set around each finalizer call by the finalizer
// goroutine and read by isSystemGoroutine, a 1-byte bool (fingRunning) up
// to 1.19 and a 4-byte atomic (fingStatus) from 1.20. isSystemGoroutine's
// access size leaves out the finalizer goroutine's other variables (which
// takes fingStatus's address for its atomic updates, so any access there).
std::optional<RuntimeVariable> RecoverFing(const GoBinary& bin, RuntimeCode& code,
                                           const ModuleData& md,
                                           const GoroutineVariableLayout& layout) {
  if (!code.Refs({layout.finalizer_function})) return std::nullopt;
  const uint8_t size = layout.fing_is_bool ? 1 : 4;
  return RecoverVariable(
      bin, code, layout.fing_is_bool ? "runtime.fingRunning" : "runtime.fingStatus",
      {{{layout.finalizer_function}, true, std::nullopt},
       {{"runtime.isSystemGoroutine"}, true, size}},
      0, [&](uint64_t a) { return CheckPlacement(md, DataSection::kNoptrbss, size, a); });
}

// waitReasonStrings: the one array that waitReason.String (or
// goroutineheader, where String is inlined) indexes, in .data (its
// strings are pointers), whose first entries are the first wait reasons.
std::optional<RuntimeVariable> RecoverWaitReasons(const GoBinary& bin, RuntimeCode& code,
                                                  const ModuleData& md, uint64_t* count) {
  if (!code.Refs({"runtime.waitReason.String", "runtime.goroutineheader"})) return std::nullopt;
  RuntimeVariable v = RecoverVariable(
      bin, code, "runtime.waitReasonStrings",
      {{{"runtime.waitReason.String", "runtime.goroutineheader"}, true, 0}}, 0,
      [&](uint64_t a) -> std::string {
        if (std::string why = CheckPlacement(md, DataSection::kData, 8, a); !why.empty()) {
          return why;
        }
        return CountWaitReasons(bin, a) > 2 ? "" : "does not begin \"\", \"GC assist marking\"";
      });
  *count = CountWaitReasons(bin, v.addr);
  return v;
}

GoroutineVariables RecoverFromCode(const GoBinary& bin, const GoroutineVariableLayout& layout) {
  const PclntabLocation loc = bin.LocatePclntab();
  const ModuleData& md = ModuleDataOrRefuse(bin, loc, "runtime.allgptr");
  RuntimeCode code(bin);
  GoroutineVariables v;
  v.allglen = RecoverAllglen(bin, code, md);
  v.allgptr = RecoverAllgptr(bin, code, md);
  v.fing = RecoverFing(bin, code, md, layout);
  v.wait_reasons = RecoverWaitReasons(bin, code, md, &v.wait_reason_count);
  return v;
}

}  // namespace

// Stored by allgadd, loaded by forEachGRace (atomicAllG).
RuntimeVariable RecoverAllglen(const GoBinary& bin, RuntimeCode& code, const ModuleData& md) {
  return RecoverVariable(
      bin, code, "runtime.allglen",
      {{{"runtime.allgadd"}, true, std::nullopt}, {{"runtime.forEachGRace"}, true, std::nullopt}},
      0, [&](uint64_t a) { return CheckPlacement(md, DataSection::kNoptrbss, 8, a); });
}

GoroutineVariables LocateGoroutineVariables(const GoBinary& bin,
                                            const GoroutineVariableLayout& layout) {
  if (!bin.elf().HasSymtab()) return RecoverFromCode(bin, layout);
  GoroutineVariables v;
  v.allglen = GoroutineSymbol(bin, "runtime.allglen");
  v.allgptr = GoroutineSymbol(bin, "runtime.allgptr");
  if (std::optional<uint64_t> a =
          bin.SymbolAddress(layout.fing_is_bool ? "runtime.fingRunning" : "runtime.fingStatus")) {
    v.fing = RuntimeVariable{*a, "symbol table"};
  }
  if (std::optional<ElfSymbol> sym = bin.elf().FindSymbol("runtime.waitReasonStrings")) {
    v.wait_reasons = RuntimeVariable{sym->value, "symbol table"};
    v.wait_reason_count = sym->size / 16;
  }
  return v;
}

}  // namespace goheap2pprof
