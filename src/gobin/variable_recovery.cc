#include "gobin/variable_recovery.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <set>
#include <string>

namespace goheap2pprof {

namespace {

// Targets referenced by refs, optionally only those accessed with `size`.
std::set<uint64_t> Targets(const std::vector<DataRef>& refs, std::optional<uint8_t> size) {
  std::set<uint64_t> out;
  for (const DataRef& r : refs) {
    if (!size || r.size == *size) out.insert(r.target);
  }
  return out;
}

std::set<uint64_t> Intersect(const std::set<uint64_t>& a, const std::set<uint64_t>& b) {
  std::set<uint64_t> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::inserter(out, out.end()));
  return out;
}

std::string List(const std::set<uint64_t>& s) {
  std::string out;
  for (uint64_t a : s) out += (out.empty() ? "" : ", ") + Hex(a);
  return out.empty() ? "none" : out;
}

}  // namespace

const std::vector<DataRef>* RuntimeCode::Refs(std::initializer_list<std::string_view> names,
                                              std::string* which) {
  for (std::string_view name : names) {
    auto it = cache_.find(name);
    if (it == cache_.end()) {
      it = cache_.emplace(std::string(name), bin_.FunctionDataRefs(name)).first;
    }
    if (it->second) {
      if (which) *which = name;
      return &*it->second;
    }
  }
  return nullptr;
}

bool RuntimeCode::References(std::string_view name, uint64_t target, std::optional<uint8_t> size) {
  const std::vector<DataRef>* refs = Refs({name});
  if (!refs) return false;
  return std::any_of(refs->begin(), refs->end(), [&](const DataRef& r) {
    return r.target == target && (!size || r.size == *size);
  });
}

RuntimeVariable SymbolOrRefuse(const GoBinary& bin, std::string_view name, std::string_view what) {
  std::optional<uint64_t> addr = bin.SymbolAddress(name);
  if (!addr) {
    throw Error(ErrorKind::kUnsupported, bin.elf().name(), " has no symbol ", name,
                "; this Go runtime's ", what, " cannot be located")
        .WithHint(std::string(what) + " are read from Go 1.18+ programs");
  }
  return {*addr, "symbol table"};
}

Error Unrecoverable(const GoBinary& bin, std::string_view variable, std::string why) {
  Error e(ErrorKind::kUnsupported, bin.elf().name(), " is stripped (no .symtab) and ", variable,
          " could not be recovered from the runtime's machine code: ", why, "; refusing to guess");
  e.WithHint(
      "capture from an unstripped build of the same program (built without "
      "-ldflags=-s), or report this Go version/build mode as unsupported");
  return e;
}

RuntimeVariable RecoverVariable(const GoBinary& bin, RuntimeCode& code, std::string_view variable,
                                std::initializer_list<CodeEvidence> groups, uint64_t field_offset,
                                const std::function<std::string(uint64_t)>& check) {
  std::optional<std::set<uint64_t>> common;
  std::string used;
  for (const CodeEvidence& g : groups) {
    std::string which;
    const std::vector<DataRef>* refs = code.Refs(g.names, &which);
    if (!refs) {
      if (!g.required) continue;
      throw Unrecoverable(bin, variable,
                          "the pclntab has no function " + std::string(*g.names.begin()));
    }
    std::set<uint64_t> t = Targets(*refs, g.size);
    common = common ? Intersect(*common, t) : t;
    used += (used.empty() ? "" : ", ") + which;
  }
  std::set<uint64_t> accepted;
  std::string rejected;
  for (uint64_t shared : common.value_or(std::set<uint64_t>{})) {
    // A shared address below the field's offset is no address of this field.
    if (shared < field_offset) continue;
    const uint64_t a = shared - field_offset;
    std::string why = check(a);
    if (why.empty()) {
      accepted.insert(a);
    } else {
      rejected += "; " + Hex(a) + " " + why;
    }
  }
  if (accepted.size() != 1) {
    std::string field =
        field_offset == 0 ? "" : " (minus the field offset " + std::to_string(field_offset) + ")";
    throw Unrecoverable(bin, variable,
                        "the addresses referenced by all of " + used + field + " are {" +
                            List(common.value_or(std::set<uint64_t>{})) + "}, of which " +
                            std::to_string(accepted.size()) + " pass the checks" + rejected);
  }
  return {*accepted.begin(), "recovered from " + used};
}

std::string CheckSection(const ModuleData& md, DataSection section, uint64_t a) {
  if (md.In(section, a)) return "";
  return "is not in " + std::string(DataSectionName(section));
}

std::string CheckPlacement(const ModuleData& md, DataSection section, uint64_t align, uint64_t a) {
  if (std::string why = CheckSection(md, section, a); !why.empty()) return why;
  if (a % align != 0) return "is not " + std::to_string(align) + "-byte aligned";
  return "";
}

const ModuleData& ModuleDataOrRefuse(const GoBinary& bin, const PclntabLocation& loc,
                                     std::string_view variable) {
  if (!loc.moduledata) throw Unrecoverable(bin, variable, "no moduledata was found");
  return *loc.moduledata;
}

}  // namespace goheap2pprof
