// The ?debug=2 dump of goroutines (runtime.Stack(buf, true) as
// runtime/pprof's writeGoroutineStacks calls it), as the target's own Go
// version prints it (go-goroutine-facts.md §5, §6.5): per goroutine, in
// allgs order, the header "goroutine N [wait reason, M minutes]:" (with
// the goroutine's pprof labels where the target's GODEBUG says so), its frames
// with "\tfile:line +0xoff" (unexported runtime frames hidden, the version's
// frame limit), and "created by F[ in goroutine K]". Argument values are not
// printed: every frame shows "(...)", because the runtime prints spill slots
// that are stale for register arguments and a reader from outside cannot
// tell which are live. A goroutine on a CPU has no stack to print (we never
// stop the target): it shows the runtime's own "stack unavailable" line.
//
//   GoroutineDumpInput in{.pclntab = &tab, .symbolizer = &sym, .version = v,
//                         .bias = bias, .wait_reasons = reasons, .now = mono};
//   std::string text = GoroutineDumpText(in, snapshot.goroutines);
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gobin/pclntab.h"
#include "goroutine/goroutine_reader.h"
#include "runtime/runtime_traits.h"
#include "symbolize/symbolizer.h"

namespace goheap2pprof {

struct GoroutineDumpInput {
  const Pclntab* pclntab = nullptr;  // link-time addresses
  const Symbolizer* symbolizer = nullptr;
  GoVersion version;
  uint64_t bias = 0;  // runtime - link-time
  // runtime.waitReasonStrings of the target (numbers change per version).
  std::vector<std::string> wait_reasons;
  // The target's nanotime() when it was read; nullopt prints no minutes.
  std::optional<int64_t> now;
  // The target's GODEBUG tracebacklabels (Go 1.26+): whether its headers
  // show each goroutine's pprof labels.
  bool traceback_labels = false;
};

// One logical frame as the dump prints it; `shown` is showframe's verdict
// (unexported runtime frames are not).
struct GoroutineFrame {
  std::string function;  // as printed: pkg.F[...], "panic"
  std::string file;
  int64_t line = 0;
  std::optional<uint64_t> offset;  // +0x.. from the entry; none for inlined frames
  bool inlined = false;
  bool shown = false;
};

// The go statement that created g (printcreatedby): nullopt for goroutine 1
// and for a creator the dump hides.
struct GoroutineCreator {
  std::string function;
  std::string file;
  int64_t line = 0;
  std::optional<uint64_t> offset;
  uint64_t parent_goid = 0;  // 0 before Go 1.21
};

// The frames and creators of the goroutines of one rendering, each PC
// decoded once: a program's goroutines park at few PCs, while a PC's file
// and line come from pcvalue tables decoded from its function's entry
// (four fifths of the time of a dump of 100,000 goroutines went there
// before, bench/goroutines.sh). Lives for one rendering; not thread-safe.
class GoroutineSymbols {
 public:
  explicit GoroutineSymbols(const GoroutineDumpInput& in) : in_(in) {}
  // Every logical frame of g's PC list, innermost first.
  std::vector<GoroutineFrame> Frames(const Goroutine& g);
  std::optional<GoroutineCreator> CreatedBy(const Goroutine& g);

 private:
  // The innermost frame at one symbolization PC.
  struct Level {
    std::string function;  // as printed
    std::string_view file;
    int64_t line = 0;
    uint64_t entry = 0;  // of the physical function
    bool inlined = false;
    bool shown_first = false;  // showframe's verdict as the first shown frame
    bool shown_later = false;  // and after one
  };
  const Level* LevelAt(uint64_t sym);
  std::optional<Level> Decode(uint64_t sym) const;
  std::optional<GoroutineCreator> DecodeCreator(uint64_t pc) const;

  const GoroutineDumpInput& in_;
  std::unordered_map<uint64_t, std::optional<Level>> levels_;
  std::unordered_map<uint64_t, std::optional<GoroutineCreator>> creators_;  // by gopc
};

// One goroutine's frames and creator (GoroutineSymbols for one goroutine).
std::vector<GoroutineFrame> GoroutineFrames(const GoroutineDumpInput& in, const Goroutine& g);
std::optional<GoroutineCreator> GoroutineCreatedBy(const GoroutineDumpInput& in,
                                                   const Goroutine& g);

// The header's state: the wait reason of a waiting goroutine, else its
// status ("runnable", "syscall", ...), with " (leaked)" (1.26+).
std::string GoroutineState(const GoroutineDumpInput& in, const Goroutine& g);
// The same without " (leaked)": a leaked goroutine's wait reason.
std::string GoroutineWaitReason(const GoroutineDumpInput& in, const Goroutine& g);
// Whether g is parked: waiting, or leaked (1.26+: waiting on something a
// leak-detecting GC found unreachable, so forever).
bool GoroutineParked(const GoroutineDumpInput& in, const Goroutine& g);
// Whether a leak-detecting GC marked g leaked (_Gleaked, 1.26+).
bool GoroutineLeaked(const GoroutineDumpInput& in, const Goroutine& g);
// Whole minutes since g.waitsince (0 without a clock or a waitsince).
int64_t GoroutineWaitMinutes(const GoroutineDumpInput& in, const Goroutine& g);

// The "[...]" part of a goroutine's header (without labels).
std::string GoroutineStatusText(const GoroutineDumpInput& in, const Goroutine& g);

// The header's pprof labels as the runtime prints them with GODEBUG
// tracebacklabels=1: ' labels:{"k": "v"}' inside the brackets (Go 1.26),
// ' {k: v}' after them, quoted only where needed (1.27+); "" without labels.
std::string GoroutineHeaderLabels(const GoVersion& version, const Labels& labels);

// The whole dump: one block per goroutine, blank lines between them.
std::string GoroutineDumpText(const GoroutineDumpInput& in, std::span<const Goroutine> goroutines);

}  // namespace goheap2pprof
