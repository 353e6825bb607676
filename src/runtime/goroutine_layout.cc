#include "runtime/goroutine_layout.h"

#include <algorithm>

#include "base/error.h"

namespace goheap2pprof {

namespace {

// go-goroutine-facts.md §3: A = 1.18-1.20, B = 1.21-1.22, C = 1.23-1.24,
// D = 1.25, E = 1.26-1.27. `shift` is where C's extra syscallbp word moves
// the fields after it; D dropped gobuf.ret; E grew g after runningCleanups.
GoroutineLayout FamilyLayout(int minor) {
  GoroutineLayout l;
  const bool has_ret = minor <= 24;  // gobuf: sp pc g ctxt [ret] lr bp
  l.sched_lr = l.sched + (has_ret ? 40 : 32);
  l.sched_bp = l.sched + (has_ret ? 48 : 40);
  l.gobuf_size = has_ret ? 56 : 48;
  l.syscallsp = has_ret ? 112 : 104;
  l.syscallpc = l.syscallsp + 8;
  if (minor >= 23) l.syscallbp = l.syscallsp + 16;
  const uint64_t shift = minor == 23 || minor == 24 ? 8 : 0;
  l.atomicstatus = 144 + shift;
  l.goid = 152 + shift;
  l.waitsince = 168 + shift;
  l.waitreason = 176 + shift;
  l.tracking_seq = minor <= 20 ? 189 : minor == 21 ? 188 : 191 + shift;
  l.lockedm = minor <= 20 ? 232 : 208 + shift;
  if (minor <= 20) {
    l.gopc = 296;
    l.startpc = 312;
    l.labels = 360;
  } else {
    const uint64_t grown = minor >= 26 ? 8 : 0;  // E: runningCleanups pushed the rest
    l.parent_goid = 272 + shift + grown;
    l.gopc = 280 + shift + grown;
    l.startpc = 296 + shift + grown;
    l.labels = 344 + shift + grown;
  }
  if (minor >= 25) l.running_cleanups = minor == 25 ? 218 : 220;
  l.labels_encoding = minor <= 23 ? LabelsEncoding::kMap : LabelsEncoding::kSlice;
  l.has_leaked_status = minor >= 26;
  if (minor >= 25) l.finalizer_function = "runtime.runFinalizers";
  l.read_size = l.labels + 8;
  return l;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

// Differences between the table's fields and the DWARF's (fields the table
// does not list are not compared: runtime.g has many the reader ignores).
void CompareFields(const StructLayout& want, const DwarfStruct& have,
                   std::vector<std::string>& out) {
  for (const FieldLayout& f : want.fields) {
    auto m = std::find_if(have.members.begin(), have.members.end(),
                          [&f](const DwarfMember& c) { return c.name == f.name; });
    const std::string field = std::string(want.name) + "." + std::string(f.name);
    if (m == have.members.end()) {
      out.push_back(field + " is not in the DWARF");
    } else if (m->offset != f.offset || (f.size != 0 && m->size != f.size)) {
      out.push_back(field + " is at " + (m->offset ? std::to_string(*m->offset) : "(unknown)") +
                    " (" + (m->size ? std::to_string(*m->size) : "?") +
                    " bytes) in the DWARF, at " + std::to_string(f.offset) + " (" +
                    std::to_string(f.size) + " bytes) in the table");
    }
  }
}

}  // namespace

GoroutineLayout GoroutineLayoutForVersion(const GoVersion& version) {
  const GoVersion newest = NewestVerifiedVersion();
  const bool newer = version.major > newest.major ||
                     (version.major == newest.major && version.minor > newest.minor);
  return FamilyLayout(newer ? newest.minor : version.minor);
}

std::vector<StructLayout> ExpectedGoroutineStructs(const GoroutineLayout& l) {
  StructLayout gobuf{"runtime.gobuf",
                     false,
                     l.gobuf_size,
                     {{"sp", 0, 8},
                      {"pc", 8, 8},
                      {"lr", l.sched_lr - l.sched, 8},
                      {"bp", l.sched_bp - l.sched, 8}}};
  StructLayout g{"runtime.g",
                 false,
                 0,
                 {{"stack", 0, 16},
                  {"sched", l.sched, l.gobuf_size},
                  {"syscallsp", l.syscallsp, 8},
                  {"syscallpc", l.syscallpc, 8},
                  {"atomicstatus", l.atomicstatus, 4},
                  {"goid", l.goid, 8},
                  {"waitsince", l.waitsince, 8},
                  {"waitreason", l.waitreason, 1},
                  {"trackingSeq", l.tracking_seq, 1},
                  {"lockedm", l.lockedm, 8},
                  {"gopc", l.gopc, 8},
                  {"startpc", l.startpc, 8},
                  {"labels", l.labels, 8}}};
  if (l.syscallbp) g.fields.push_back({"syscallbp", *l.syscallbp, 8});
  if (l.parent_goid) g.fields.push_back({"parentGoid", *l.parent_goid, 8});
  // atomic.Bool's size is the DWARF's business; only where it is matters.
  if (l.running_cleanups) g.fields.push_back({"runningCleanups", *l.running_cleanups, 0});
  return {gobuf, g};
}

GoroutineLayoutVerdict CheckGoroutineLayout(std::string_view exe_name, const DwarfTypes* dwarf,
                                            const RuntimeTraits& traits) {
  GoroutineLayoutVerdict v;
  v.layout = GoroutineLayoutForVersion(traits.version);
  const std::string version = FormatGoVersion(traits.version);
  std::vector<std::string> differences;
  bool described = dwarf != nullptr;
  for (const StructLayout& s : ExpectedGoroutineStructs(v.layout)) {
    std::optional<DwarfStruct> have = dwarf ? dwarf->FindStruct(s.name) : std::nullopt;
    if (!have) {
      described = false;
      continue;
    }
    CompareFields(s, *have, differences);
  }
  if (!differences.empty()) {
    throw Error(
        ErrorKind::kUnsupported, exe_name, ", built with ", version,
        ", does not lay out runtime.g the way goheap2pprof's table does: ", Join(differences))
        .WithHint(
            "goheap2pprof refuses rather than read wrong goroutines; please report it "
            "with the output of `go version -m` on the executable");
  }
  if (described) {
    v.proof = LayoutProof::kDwarf;
    v.notes.push_back("runtime.g and runtime.gobuf layout proven from DWARF");
    return v;
  }
  if (traits.newer_than_verified) {
    throw Error(ErrorKind::kUnsupported, exe_name, " was built with ", version,
                ", newer than every Go version goheap2pprof is tested with, and has no DWARF "
                "to prove that its runtime.g is laid out as the newest one's")
        .WithHint("give goheap2pprof the unstripped build with --exe");
  }
  v.notes.push_back("runtime.g layout from goheap2pprof's table for " + version +
                    " (no DWARF to check it against)");
  if (!traits.verified) {
    v.warnings.push_back(version +
                         " is not a tested Go version; runtime.g read from the table "
                         "of its minor version without proof");
  }
  return v;
}

}  // namespace goheap2pprof
