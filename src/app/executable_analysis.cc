#include "app/executable_analysis.h"

#include <future>
#include <utility>

#include "base/error.h"
#include "elf/dwarf_types.h"
#include "runtime/bucket_layout.h"
#include "runtime/memstats_layout.h"

namespace goheap2pprof {

namespace {

// The Go version's traits, or why this executable is not a Go program we read.
RuntimeTraits TraitsOf(const GoBinary& bin) {
  const ElfFile& exe = bin.elf();
  if (!bin.version()) {
    std::optional<uint64_t> has_runtime = bin.SymbolAddress("runtime.mbuckets");
    if (!has_runtime && !exe.FindSection(".gopclntab") && !exe.FindSection(".go.buildinfo")) {
      throw Error(ErrorKind::kNotGo, exe.name(),
                  " is not a Go program: no Go build info, pclntab or runtime symbols");
    }
    throw Error(ErrorKind::kUnsupported, exe.name(),
                " looks like Go but its Go version "
                "could not be determined");
  }
  return TraitsForVersion(*bin.version());
}

}  // namespace

ExecutableAnalysis::Layouts ExecutableAnalysis::CheckLayouts(
    const ElfFile& elf, const RuntimeTraits& table_traits, const RuntimeTraits& layout_traits,
    std::optional<GoVersion> assume_go_layout) {
  const std::optional<DwarfTypes> dwarf = DwarfTypes::Open(elf, {"runtime"});
  const DwarfTypes* types = dwarf ? &*dwarf : nullptr;
  Layouts out;
  out.bucket = CheckBucketLayout(elf.name(), types, table_traits, assume_go_layout);
  try {
    out.memstats = JudgeMemstatsLayout(elf.name(), layout_traits, elf.machine(), types);
  } catch (const Error& e) {
    // Boundary: the memory statistics are an optional part of a capture; a
    // heap capture goes on without them, and memstats() throws this.
    out.memstats_error = e;
  }
  return out;
}

std::shared_ptr<const ExecutableAnalysis> ExecutableAnalysis::Create(
    std::shared_ptr<const ElfFile> elf, std::optional<GoVersion> assume_go_layout,
    LayoutCheck check) {
  // Not make_shared: the constructor is private.
  return std::shared_ptr<const ExecutableAnalysis>(
      new ExecutableAnalysis(std::move(elf), assume_go_layout, check));
}

ExecutableAnalysis::ExecutableAnalysis(std::shared_ptr<const ElfFile> elf,
                                       std::optional<GoVersion> assume_go_layout, LayoutCheck check)
    : elf_(std::move(elf)), binary_(*elf_), traits_(TraitsOf(binary_)) {
  go_version_ = FormatGoVersion(traits_.version);
  notes_.push_back("Go version " + go_version_ + " (from " + binary_.version_source() + ")");
  if (binary_.version_inferred()) {
    warnings_.push_back(elf_->name() + " has no Go build info; its version " + go_version_ +
                        " was inferred from " + binary_.version_source());
  }
  // The bucket layout to read with, proven from DWARF where there is some;
  // refused when it cannot be trusted. Its warnings (an untested version and
  // how its layout was chosen) also go into every profile. The layout's
  // traits do not depend on the DWARF, only whether they are trusted.
  const RuntimeTraits table_traits = traits_;
  traits_ = LayoutTraits(table_traits, assume_go_layout);
  if (check == LayoutCheck::kInBackground) {
    // The task holds the ElfFile (thread-safe to read) and copies of the rest.
    layout_check_ = std::async(
        std::launch::async, [elf = elf_, table_traits, layout_traits = traits_, assume_go_layout] {
          return CheckLayouts(*elf, table_traits, layout_traits, assume_go_layout);
        });
  } else {
    TakeVerdict(CheckLayouts(*elf_, table_traits, traits_, assume_go_layout));
    std::call_once(layout_once_, [] {});
  }
  try {
    variables_ = LocateRuntimeVariables(binary_, traits_.variables);
    // Link-time addresses (bias 0): the same table then serves every process.
    pclntab_ = std::make_unique<const Pclntab>(binary_.OpenPclntab(0));
    symbolizer_ = std::make_unique<Symbolizer>(*pclntab_, traits_);
  } catch (const Error&) {
    // Rollback: the background layout check is finished before the object
    // is abandoned, and a layout it refused is said first, as in kInCreate.
    AwaitLayoutCheck();
    throw;
  }
}

void ExecutableAnalysis::TakeVerdict(Layouts layouts) const {
  LayoutVerdict& verdict = layouts.bucket;
  notes_.insert(notes_.end(), verdict.notes.begin(), verdict.notes.end());
  warnings_.insert(warnings_.end(), verdict.warnings.begin(), verdict.warnings.end());
  layout_warnings_ = std::move(verdict.warnings);
  if (layouts.memstats) {
    memstats_.emplace();
    memstats_->layout = std::move(*layouts.memstats);
  }
  memstats_error_ = std::move(layouts.memstats_error);
}

void ExecutableAnalysis::AwaitLayoutCheck() const {
  std::call_once(layout_once_, [this] {
    try {
      TakeVerdict(layout_check_.get());
    } catch (const Error& e) {
      // Boundary: the background check's failure, kept so that every later
      // call throws it, not only the first.
      layout_error_ = e;
    } catch (const std::exception& e) {
      layout_error_ = Error(ErrorKind::kInternal, "checking the heap-bucket layout: ", e.what());
    }
  });
  if (layout_error_) throw *layout_error_;
}

const std::vector<std::string>& ExecutableAnalysis::notes() const {
  AwaitLayoutCheck();
  return notes_;
}

const std::vector<std::string>& ExecutableAnalysis::warnings() const {
  AwaitLayoutCheck();
  return warnings_;
}

const std::vector<std::string>& ExecutableAnalysis::layout_warnings() const {
  AwaitLayoutCheck();
  return layout_warnings_;
}

const MemstatsAnalysis& ExecutableAnalysis::memstats() const {
  AwaitLayoutCheck();  // it judged the layout, or why it cannot be read
  std::call_once(memstats_once_, [this] {
    if (memstats_error_) return;
    try {
      memstats_->variables = LocateMemstatsVariables(binary_, traits_.memstats.variables);
    } catch (const Error& e) {
      // Boundary: as in CheckLayouts, the memory statistics are optional;
      // kept so that every call throws it.
      memstats_error_ = e;
    }
  });
  if (memstats_error_) throw *memstats_error_;
  return *memstats_;
}

}  // namespace goheap2pprof
