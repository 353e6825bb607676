// What the engine learns from a Go executable's file, once: the Go version
// and its RuntimeTraits, the link-time addresses of the runtime's
// heap-profile variables, the pclntab and the symbolizer's cache. None of it
// depends on a process (every address is link-time; a capture adds its
// process's load bias), so one analysis serves every capture of every
// process running that executable, and a long-running caller analyses a
// binary once.
//
//   std::shared_ptr<const ExecutableAnalysis> a =
//   ExecutableAnalysis::Create(src->executable().elf); CaptureResult r1 = Capture(source_of_pid_1,
//   *a, {}); CaptureResult r2 = Capture(source_of_pid_2, *a, {});  // no re-analysis
//
// Sharing: an analysis is immutable after Create except for the symbolizer's
// cache, a background layout check's verdicts and the memory-statistics
// variables (each taken once, under std::call_once), all internally
// synchronized, so captures on several threads may
// use one analysis at the same time. Keep it in a shared_ptr: it owns the
// ElfFile (shared with the source that opened it), and the symbolizer's
// frames point into that file's bytes.
#pragma once

#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "elf/elf_file.h"
#include "gobin/go_binary.h"
#include "gobin/memstats_variables.h"
#include "gobin/pclntab.h"
#include "gobin/runtime_variables.h"
#include "runtime/bucket_layout.h"
#include "runtime/memstats_layout.h"
#include "runtime/runtime_traits.h"
#include "symbolize/symbolizer.h"

namespace goheap2pprof {

// Where the runtime's memory statistics are in the executable (link-time
// addresses) and how they are laid out (runtime/memstats_layout.h).
struct MemstatsAnalysis {
  MemstatsVariables variables;
  MemstatsLayoutVerdict layout;
};

// When the heap-bucket layout (and with it the memory-statistics layout) is
// checked against the DWARF: before Create
// returns, or on another thread while the caller goes on (a one-shot
// capture walks the buckets meanwhile: inflating and searching the DWARF
// was most of its "identify" pass).
enum class LayoutCheck { kInCreate, kInBackground };

class ExecutableAnalysis {
 public:
  // Analyses elf. Throws Error: kNotGo (no Go runtime in it), kUnsupported
  // (a Go version or binary form we cannot read, a runtime variable not
  // found), kMalformed (corrupt build info or pclntab).
  // The heap-bucket layout is checked once per executable, against the
  // DWARF when there is some (runtime/bucket_layout.h), and the
  // memory-statistics layout judged from the same DWARF; `assume_go_layout` is
  // --assume-go-layout. A layout that cannot be proven throws kUnsupported:
  // from Create, or with kInBackground from AwaitLayoutCheck.
  static std::shared_ptr<const ExecutableAnalysis> Create(
      std::shared_ptr<const ElfFile> elf, std::optional<GoVersion> assume_go_layout = std::nullopt,
      LayoutCheck check = LayoutCheck::kInCreate);

  ExecutableAnalysis(const ExecutableAnalysis&) = delete;
  ExecutableAnalysis& operator=(const ExecutableAnalysis&) = delete;

  const ElfFile& elf() const { return *elf_; }
  const RuntimeTraits& traits() const { return traits_; }
  const std::string& go_version() const { return go_version_; }  // "go1.26.8"
  // Link-time addresses of mbuckets, MemProfileRate, the cycle and
  // disableMemoryProfiling, and how each was found.
  const RuntimeVariables& variables() const { return variables_; }
  // The pclntab decoder in link-time addresses (load bias 0).
  const Pclntab& pclntab() const { return *pclntab_; }
  // Symbolizes link-time PCs; caches per PC across captures. Thread-safe.
  Symbolizer& symbolizer() const { return *symbolizer_; }

  // Waits for a layout check made in the background and throws its Error,
  // on every call; returns at once otherwise. Nothing read with traits()
  // may be output before it returned. The three lists below wait for it.
  void AwaitLayoutCheck() const;

  // For -v: how the version, the layout and the variables were found.
  const std::vector<std::string>& notes() const;
  // For every capture's report: an inferred or untested Go version.
  const std::vector<std::string>& warnings() const;
  // The warnings that also belong in the output itself (profile comments):
  // a layout read without proof or proven only from DWARF.
  const std::vector<std::string>& layout_warnings() const;

  // The memory-statistics variables and layout. The layout is judged with
  // the heap-bucket layout, from the same read of the DWARF (inflating and
  // indexing it costs milliseconds; judging one more layout on it, a tenth
  // of that), so that the first read of a process's statistics does not pay
  // for a second read; the variables are found on first use (a heap capture
  // does not need them). Waits for a layout check made in the background.
  // Throws the Error judging or finding them threw (or the layout check's),
  // on every call. Thread-safe.
  const MemstatsAnalysis& memstats() const;

 private:
  // What the layout check gives: the heap-bucket layout's verdict, and the
  // memory-statistics layout or why it cannot be read (a heap capture goes
  // on without it).
  struct Layouts {
    LayoutVerdict bucket;
    std::optional<MemstatsLayoutVerdict> memstats;
    std::optional<Error> memstats_error;
  };
  // Both layouts from one read of `elf`'s DWARF. Throws what the bucket
  // layout's check throws (runtime/bucket_layout.h).
  static Layouts CheckLayouts(const ElfFile& elf, const RuntimeTraits& table_traits,
                              const RuntimeTraits& layout_traits,
                              std::optional<GoVersion> assume_go_layout);

  ExecutableAnalysis(std::shared_ptr<const ElfFile> elf, std::optional<GoVersion> assume_go_layout,
                     LayoutCheck check);
  void TakeVerdict(Layouts layouts) const;

  std::shared_ptr<const ElfFile> elf_;
  // Refers to *elf_. Not exposed: its lazily filled caches are not
  // thread-safe, and everything a capture needs from it is taken here.
  GoBinary binary_;
  RuntimeTraits traits_;
  std::string go_version_;
  RuntimeVariables variables_;
  std::unique_ptr<const Pclntab> pclntab_;
  std::unique_ptr<Symbolizer> symbolizer_;  // refers to *pclntab_ and traits_
  // Completed by the layouts' verdicts (TakeVerdict), once; memstats_'s
  // variables, and an Error finding them, by memstats(), once.
  mutable std::vector<std::string> notes_;
  mutable std::vector<std::string> warnings_;
  mutable std::vector<std::string> layout_warnings_;
  mutable std::once_flag memstats_once_;
  mutable std::optional<MemstatsAnalysis> memstats_;
  mutable std::optional<Error> memstats_error_;
  // A check in the background, and its end: the verdict taken or the Error
  // it threw. Last: destroyed first, it waits for the check to end.
  mutable std::once_flag layout_once_;
  mutable std::optional<Error> layout_error_;
  mutable std::future<Layouts> layout_check_;
};

}  // namespace goheap2pprof
