#include "runtime/bucket_layout.h"

#include <algorithm>
#include <utility>

#include "base/error.h"

namespace goheap2pprof {

namespace {

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += separator;
    out += p;
  }
  return out;
}

// "Go 1.27": a layout belongs to a minor version.
std::string LayoutName(const GoVersion& v) {
  return "Go " + std::to_string(v.major) + "." + std::to_string(v.minor);
}

std::string StructLabel(const StructLayout& s) {
  return s.variable ? "the type of " + std::string(s.name) : std::string(s.name);
}

std::string StructList(const std::vector<StructLayout>& structs) {
  std::string out;
  for (size_t i = 0; i < structs.size(); ++i) {
    if (i > 0) out += i + 1 == structs.size() ? " and " : ", ";
    out += structs[i].name;
  }
  return out;
}

void CompareStruct(const StructLayout& want, const DwarfStruct& have,
                   std::vector<std::string>& out) {
  const std::string label = StructLabel(want);
  if (have.size != want.size) {
    out.push_back(label + " is " + std::to_string(have.size) + " bytes in the DWARF, " +
                  std::to_string(want.size) + " in the table");
  }
  for (const FieldLayout& f : want.fields) {
    const DwarfMember* m = nullptr;
    for (const DwarfMember& candidate : have.members) {
      if (candidate.name == f.name) m = &candidate;
    }
    const std::string field = label + "." + std::string(f.name);
    if (m == nullptr) {
      out.push_back(field + " is not in the DWARF (the table has it at offset " +
                    std::to_string(f.offset) + ", " + std::to_string(f.size) + " bytes)");
      continue;
    }
    if (m->offset != f.offset) {
      out.push_back(field + " is at offset " +
                    (m->offset ? std::to_string(*m->offset) : std::string("(unknown)")) +
                    " in the DWARF, " + std::to_string(f.offset) + " in the table");
    }
    if (m->size != f.size) {
      out.push_back(field + " is " +
                    (m->size ? std::to_string(*m->size) : std::string("(unknown)")) +
                    " bytes in the DWARF, " + std::to_string(f.size) + " in the table");
    }
  }
  // A field the table does not know changes what the struct means even when
  // it fits; only empty markers such as Go 1.20's `_ sys.NotInHeap` do not.
  for (const DwarfMember& m : have.members) {
    bool known = false;
    for (const FieldLayout& f : want.fields) known |= m.name == f.name;
    if (!known && m.size != uint64_t{0}) {
      out.push_back(label + " has a field " + (m.name.empty() ? "(unnamed)" : m.name) +
                    " in the DWARF (at offset " +
                    (m.offset ? std::to_string(*m.offset) : std::string("(unknown)")) +
                    ") that the table does not have");
    }
  }
}

}  // namespace

std::vector<StructLayout> ExpectedBucketLayout(const RuntimeTraits& traits) {
  std::vector<StructLayout> out;
  out.push_back({"runtime.bucket",
                 false,
                 kBucketHeaderSize,
                 {{"next", 0, 8},
                  {"allnext", kBucketAllnextOffset, 8},
                  {"typ", kBucketTypOffset, 8},
                  {"hash", kBucketHashOffset, 8},
                  {"size", kBucketSizeOffset, 8},
                  {"nstk", kBucketNstkOffset, 8}}});
  const uint64_t cycle_size = MemRecordCycleSize(traits.record_layout);
  StructLayout cycle{
      "runtime.memRecordCycle", false, cycle_size, {{"allocs", 0, 8}, {"frees", 8, 8}}};
  if (traits.record_layout == MemRecordLayout::kCountsAndBytes) {
    cycle.fields.push_back({"alloc_bytes", 16, 8});
    cycle.fields.push_back({"free_bytes", 24, 8});
  }
  out.push_back(std::move(cycle));
  out.push_back({"runtime.memRecord",
                 false,
                 MemRecordSize(traits.record_layout),
                 {{"active", 0, cycle_size}, {"future", cycle_size, 3 * cycle_size}}});
  if (traits.cycle_encoding == CycleEncoding::kMProfCycle) {
    // mProfCycleHolder{value atomic.Uint32}
    out.push_back({traits.variables.cycle_symbol, true, 4, {{"value", 0, 4}}});
  } else {
    // struct{cycle uint32; flushed bool}
    out.push_back({traits.variables.cycle_symbol, true, 8, {{"cycle", 0, 4}, {"flushed", 4, 1}}});
  }
  return out;
}

LayoutComparison CompareLayout(const std::vector<StructLayout>& expected,
                               const std::vector<std::optional<DwarfStruct>>& observed) {
  LayoutComparison result;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (i >= observed.size() || !observed[i]) {
      result.missing.push_back(StructLabel(expected[i]));
      continue;
    }
    CompareStruct(expected[i], *observed[i], result.disagreements);
  }
  return result;
}

namespace {

bool IsKnownLayout(const GoVersion& v) {
  return v.major == 1 && v.minor >= 18 && v.minor <= NewestVerifiedVersion().minor;
}

std::string KnownLayoutsText() {
  const GoVersion newest = NewestVerifiedVersion();
  return "goheap2pprof knows the heap-bucket layouts of Go 1.18 to " +
         std::to_string(newest.major) + "." + std::to_string(newest.minor);
}

}  // namespace

namespace {

// The version whose table the heap buckets are read with.
GoVersion LayoutVersion(const RuntimeTraits& traits, std::optional<GoVersion> assumed_layout) {
  if (assumed_layout && !IsKnownLayout(*assumed_layout)) {
    throw Error(ErrorKind::kUsage, "--assume-go-layout ", LayoutName(*assumed_layout), ": ",
                KnownLayoutsText());
  }
  return traits.newer_than_verified ? assumed_layout.value_or(NewestVerifiedVersion())
                                    : traits.version;
}

}  // namespace

RuntimeTraits LayoutTraits(const RuntimeTraits& traits, std::optional<GoVersion> assumed_layout) {
  RuntimeTraits out = traits;
  // A newer Go is read with the newest table (or the one the user names),
  // but only once something vouches for it (JudgeBucketLayout).
  if (traits.newer_than_verified) {
    const RuntimeTraits layout_traits = TraitsForVersion(LayoutVersion(traits, assumed_layout));
    out.record_layout = layout_traits.record_layout;
    out.variables = layout_traits.variables;
    out.cycle_encoding = layout_traits.cycle_encoding;
  }
  return out;
}

namespace {

// The words a verdict's messages use for the executable and its layout.
struct LayoutWords {
  std::string_view exe_name;
  std::string version;  // the executable's Go version
  std::string tested;   // "the Go versions goheap2pprof is tested with (...)"
  std::string layout;   // the name of the table it is read with
  std::string structs;  // the structs that table describes
};

[[noreturn]] void RefuseDisagreeingLayout(const LayoutWords& w,
                                          const std::vector<std::string>& disagreements) {
  // The first few name the cause (inner structs come first); the rest
  // follow from it.
  std::vector<std::string> shown(disagreements.begin(),
                                 disagreements.begin() + std::min<size_t>(disagreements.size(), 3));
  if (disagreements.size() > shown.size()) {
    shown.push_back("and " + std::to_string(disagreements.size() - 3) + " more");
  }
  throw Error(ErrorKind::kUnsupported, w.exe_name, ", built with ", w.version,
              ", does not lay out its heap profile the way goheap2pprof's table for ", w.layout,
              " does: ", Join(shown, "; "))
      .WithHint(
          "goheap2pprof refuses rather than read wrong numbers; the Go version in the "
          "binary may be wrong, or its runtime modified. Please report it with the "
          "output of `go version -m` on the executable");
}

// The layout is proven from DWARF: read with the table, warning only that
// the version is not one we test.
void TakeDwarfProof(LayoutVerdict& verdict, const RuntimeTraits& traits, const LayoutWords& w) {
  verdict.proof = LayoutProof::kDwarf;
  verdict.notes.push_back("heap-bucket layout (" + w.structs + ") proven from DWARF to be " +
                          w.layout + "'s");
  if (traits.newer_than_verified) {
    verdict.warnings.push_back(w.version + " is newer than " + w.tested +
                               "; its heap-bucket layout (" + w.structs +
                               ") was proven from the executable's DWARF to be " + w.layout +
                               "'s, so it is read that way");
  } else if (!traits.verified) {
    verdict.warnings.push_back(w.version + " is not one of " + w.tested +
                               "; its heap-bucket layout was proven from the executable's "
                               "DWARF to be the one goheap2pprof reads");
  }
}

// Without proof, a version in the table is read with it; a newer one only
// if the user assumes a layout, and then with a warning that says so.
void JudgeWithoutProof(LayoutVerdict& verdict, const RuntimeTraits& traits,
                       std::optional<GoVersion> assumed_layout, const LayoutWords& w,
                       const std::string& unproven_because) {
  if (traits.newer_than_verified) {
    if (!assumed_layout) {
      const GoVersion newest = NewestVerifiedVersion();
      throw Error(ErrorKind::kUnsupported, w.exe_name, " was built with ", w.version,
                  ", newer than ", w.tested, ", and ", unproven_because,
                  " to prove that its heap-bucket layout (", w.structs, ") is still ", w.layout,
                  "'s")
          .WithHint(
              "give goheap2pprof the unstripped build with --exe (a binary built without "
              "-ldflags=-w keeps its DWARF); or, if you know that " +
              LayoutName(traits.version) +
              " did not change these structs, pass --assume-go-layout " +
              std::to_string(newest.major) + "." + std::to_string(newest.minor));
    }
    verdict.proof = LayoutProof::kAssumed;
    verdict.warnings.push_back(w.version + " is newer than " + w.tested + " and " +
                               std::string(w.exe_name) + " " + unproven_because +
                               "; its heap-bucket layout is assumed to be " + w.layout +
                               "'s (--assume-go-layout): if it is not, the numbers are wrong");
    return;
  }
  verdict.proof = LayoutProof::kTable;
  if (!traits.verified) {
    verdict.warnings.push_back(w.version + " is not one of " + w.tested +
                               "; its heap-bucket layout is read from goheap2pprof's table for " +
                               w.layout + " without proof (the executable " + unproven_because +
                               ")");
  }
}

}  // namespace

LayoutVerdict JudgeBucketLayout(std::string_view exe_name, const RuntimeTraits& traits,
                                const DwarfLookup& dwarf, std::optional<GoVersion> assumed_layout) {
  const GoVersion layout_version = LayoutVersion(traits, assumed_layout);
  LayoutVerdict verdict;
  verdict.traits = LayoutTraits(traits, assumed_layout);
  LayoutWords w;
  w.exe_name = exe_name;
  w.version = FormatGoVersion(traits.version);
  w.tested = "the Go versions goheap2pprof is tested with (" + VerifiedVersionsText() + ")";
  if (assumed_layout && !traits.newer_than_verified) {
    verdict.notes.push_back("--assume-go-layout is ignored: " + w.version +
                            "'s heap-bucket layout is in goheap2pprof's table");
  }
  w.layout = LayoutName(layout_version);
  const std::vector<StructLayout> expected = ExpectedBucketLayout(verdict.traits);
  w.structs = StructList(expected);

  std::string unproven_because = "has no DWARF";
  if (dwarf) {
    std::vector<std::optional<DwarfStruct>> observed;
    for (const StructLayout& s : expected) observed.push_back(dwarf(s));
    const LayoutComparison cmp = CompareLayout(expected, observed);
    if (!cmp.disagreements.empty()) RefuseDisagreeingLayout(w, cmp.disagreements);
    if (cmp.missing.empty()) {
      TakeDwarfProof(verdict, traits, w);
      return verdict;
    }
    unproven_because = "its DWARF does not describe " + Join(cmp.missing, ", ");
  }
  verdict.notes.push_back("heap-bucket layout not checked: " + std::string(exe_name) + " " +
                          unproven_because);
  JudgeWithoutProof(verdict, traits, assumed_layout, w, unproven_because);
  return verdict;
}

LayoutVerdict CheckBucketLayout(const ElfFile& elf, const RuntimeTraits& traits,
                                std::optional<GoVersion> assumed_layout) {
  // Go's linker puts the runtime package's types and variables in units
  // named "runtime" (one for its code and variables, one for all types), so
  // those are searched first; the others only if something is not there.
  const std::optional<DwarfTypes> types = DwarfTypes::Open(elf, {"runtime"});
  return CheckBucketLayout(elf.name(), types ? &*types : nullptr, traits, assumed_layout);
}

LayoutVerdict CheckBucketLayout(std::string_view exe_name, const DwarfTypes* dwarf,
                                const RuntimeTraits& traits,
                                std::optional<GoVersion> assumed_layout) {
  DwarfLookup lookup;
  if (dwarf != nullptr) {
    lookup = [dwarf](const StructLayout& s) {
      return s.variable ? dwarf->FindVariableStruct(s.name) : dwarf->FindStruct(s.name);
    };
  }
  return JudgeBucketLayout(exe_name, traits, lookup, assumed_layout);
}

GoVersion ParseAssumedLayout(std::string_view text) {
  std::string_view digits = text;
  if (digits.starts_with("go")) digits.remove_prefix(2);
  std::optional<GoVersion> v;
  // Only digits and dots: "1.27rc1" or "1.27 X" name no table.
  if (!digits.empty() && digits.find_first_not_of("0123456789.") == std::string_view::npos) {
    v = ParseGoVersion("go" + std::string(digits));
  }
  if (!v || !IsKnownLayout(*v)) {
    throw Error(ErrorKind::kUsage, "--assume-go-layout \"", text,
                "\": ", v ? KnownLayoutsText() : "not a Go version such as 1.27");
  }
  return *v;
}

}  // namespace goheap2pprof
