#include "pprof/profile/view.h"

#include "base/error.h"

namespace goheap2pprof {

std::string StackFrame::Text() const {
  if (function.empty()) return Hex(address);
  return function + " " + file + ":" + std::to_string(line);
}

ProfileView::ProfileView(const pb::Profile& profile) : p_(profile) {
  for (const pb::Location& l : p_.location()) locations_[l.id()] = &l;
  for (const pb::Function& f : p_.function()) functions_[f.id()] = &f;
  for (const pb::Mapping& m : p_.mapping()) mappings_[m.id()] = &m;
}

const std::string& ProfileView::Str(int64_t i) const {
  if (i < 0 || i >= p_.string_table_size()) {
    throw Error(ErrorKind::kMalformed, "profile string index ", i, " out of range (",
                p_.string_table_size(), " strings)");
  }
  return p_.string_table(static_cast<int>(i));
}

const pb::Location* ProfileView::Location(uint64_t id) const {
  auto it = locations_.find(id);
  return it == locations_.end() ? nullptr : it->second;
}

const pb::Function* ProfileView::Function(uint64_t id) const {
  auto it = functions_.find(id);
  return it == functions_.end() ? nullptr : it->second;
}

const pb::Mapping* ProfileView::Mapping(uint64_t id) const {
  auto it = mappings_.find(id);
  return it == mappings_.end() ? nullptr : it->second;
}

int ProfileView::SampleIndex(std::string_view type) const {
  std::string known;
  for (int i = 0; i < p_.sample_type_size(); ++i) {
    const std::string& name = Str(p_.sample_type(i).type());
    if (name == type) return i;
    known += (i ? ", " : "") + name;
  }
  throw Error(ErrorKind::kUsage, "the profile has no sample type \"", type,
              "\" (it has: ", known.empty() ? "none" : known, ")");
}

std::vector<StackFrame> ProfileView::Frames(const pb::Sample& sample) const {
  std::vector<StackFrame> frames;
  for (uint64_t id : sample.location_id()) {
    const pb::Location* loc = Location(id);
    if (loc == nullptr) {
      throw Error(ErrorKind::kMalformed, "profile sample refers to missing location ", id);
    }
    bool symbolized = false;
    for (const pb::Line& line : loc->line()) {
      const pb::Function* fn = Function(line.function_id());
      if (fn == nullptr) continue;
      frames.push_back({Str(fn->name()), Str(fn->filename()), line.line(), loc->address()});
      symbolized = true;
    }
    if (!symbolized) frames.push_back({"", "", 0, loc->address()});
  }
  return frames;
}

}  // namespace goheap2pprof
