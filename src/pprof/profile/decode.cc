#include "pprof/profile/decode.h"

#include <algorithm>
#include <initializer_list>
#include <utility>
#include <variant>

#include "base/error.h"

namespace goheap2pprof {
namespace {

Error Malformed(std::string_view what) { return Error(ErrorKind::kMalformed, "profile: ", what); }

// One top-level field into f.
void DecodeProfileField(FieldReader& r, ProfileFields& f) {
  switch (r.field()) {
    case 1:
      return r.Message(f.sample_types, "a message field");
    case 2:
      return r.Message(f.samples, "a message field");
    case 3:
      return r.Message(f.mappings, "a message field");
    case 4:
      return r.Message(f.locations, "a message field");
    case 5:
      return r.Message(f.functions, "a message field");
    case 6:
      return r.Message(f.strings, "a string");
    case 7:
      return r.Read(f.drop_frames);
    case 8:
      return r.Read(f.keep_frames);
    case 9:
      return r.Read(f.time_nanos);
    case 10:
      return r.Read(f.duration_nanos);
    case 11:
      return r.Message(f.period_types, "a message field");
    case 12:
      return r.Read(f.period);
    case 13:
      return r.Repeated([&](uint64_t v) { f.comments.push_back(static_cast<int64_t>(v)); });
    case 14:
      return r.Read(f.default_sample_type);
    default:
      return r.Skip();
  }
}

// Reads a message whose fields are all numbers: each listed field into
// where it points, the others skipped.
using NumberField = std::variant<uint64_t*, int64_t*, bool*>;
void ReadNumbers(std::string_view m, WireTypes rule,
                 std::initializer_list<std::pair<uint64_t, NumberField>> fields) {
  FieldReader r(m, rule);
  while (r.Next()) {
    const auto* it = std::find_if(fields.begin(), fields.end(),
                                  [&](const auto& f) { return f.first == r.field(); });
    if (it == fields.end()) {
      r.Skip();
    } else {
      std::visit([&](auto* to) { r.Read(*to); }, it->second);
    }
  }
}

LineFields DecodeLine(std::string_view m, WireTypes rule) {
  LineFields l;
  ReadNumbers(m, rule, {{1, &l.function_id}, {2, &l.line}});
  return l;
}

}  // namespace

bool FieldReader::IsNumber() {
  if (type_ == 0) return true;
  if (rule_ == WireTypes::kStrict) throw Malformed("a number field is not a varint");
  Skip();
  return false;
}

bool FieldReader::Message(std::string_view& v, std::string_view what) {
  if (type_ == 2) {
    v = w_.Bytes();
    return true;
  }
  if (rule_ == WireTypes::kStrict) {
    throw Error(ErrorKind::kMalformed, "profile: ", what, " is not length-delimited");
  }
  Skip();
  return false;
}

void FieldReader::Packed(std::vector<std::string_view>& to) {
  if (type_ == 0) {
    to.push_back(w_.VarintBytes());
  } else if (type_ == 2) {
    to.push_back(w_.Bytes());
  } else if (rule_ == WireTypes::kStrict) {
    throw Malformed("a repeated number field is neither varint nor packed");
  } else {
    Skip();
  }
}

std::string_view ProfileFields::Str(int64_t i) const {
  if (i < 0 || static_cast<uint64_t>(i) >= strings.size()) {
    throw Error(ErrorKind::kMalformed, "profile: string index ", i, " out of range (",
                strings.size(), " strings)");
  }
  return strings[static_cast<size_t>(i)];
}

ProfileFields DecodeProfile(std::string_view bytes, WireTypes rule, uint32_t select) {
  ProfileFields f;
  FieldReader r(bytes, rule);
  while (r.Next()) {
    if (r.field() < 32 && (select >> r.field() & 1) != 0) {
      DecodeProfileField(r, f);
    } else {
      r.Skip();
    }
  }
  return f;
}

void DecodeValueType(std::string_view m, WireTypes rule, ValueTypeFields& into) {
  ReadNumbers(m, rule, {{1, &into.type}, {2, &into.unit}});
}

MappingFields DecodeMapping(std::string_view m, WireTypes rule) {
  MappingFields f;
  ReadNumbers(m, rule,
              {{1, &f.id},
               {2, &f.start},
               {3, &f.limit},
               {4, &f.offset},
               {5, &f.filename},
               {6, &f.build_id},
               {7, &f.has_functions},
               {8, &f.has_filenames},
               {9, &f.has_line_numbers},
               {10, &f.has_inline_frames}});
  return f;
}

FunctionFields DecodeFunction(std::string_view m, WireTypes rule) {
  FunctionFields f;
  ReadNumbers(
      m, rule,
      {{1, &f.id}, {2, &f.name}, {3, &f.system_name}, {4, &f.filename}, {5, &f.start_line}});
  return f;
}

void DecodeLocation(std::string_view m, WireTypes rule, LocationFields& out) {
  out.id = out.mapping_id = out.address = 0;
  out.is_folded = false;
  out.lines.clear();
  FieldReader r(m, rule);
  while (r.Next()) {
    switch (r.field()) {
      case 1:
        r.Read(out.id);
        break;
      case 2:
        r.Read(out.mapping_id);
        break;
      case 3:
        r.Read(out.address);
        break;
      case 4:
        if (std::string_view line; r.Message(line, "a line")) {
          out.lines.push_back(DecodeLine(line, rule));
        }
        break;
      case 5:
        r.Read(out.is_folded);
        break;
      default:
        r.Skip();
    }
  }
}

void DecodeSample(std::string_view m, WireTypes rule, bool labels, SampleFields& out) {
  out.location_ids.clear();
  out.values.clear();
  out.labels.clear();
  FieldReader r(m, rule);
  while (r.Next()) {
    if (r.field() == 1) {
      r.Packed(out.location_ids);
    } else if (r.field() == 2) {
      r.Repeated([&](uint64_t v) { out.values.push_back(v); });
    } else if (r.field() == 3 && labels) {
      r.Message(out.labels, "a label");
    } else {
      r.Skip();
    }
  }
}

LabelFields DecodeLabel(std::string_view m, WireTypes rule) {
  LabelFields l;
  ReadNumbers(m, rule, {{1, &l.key}, {2, &l.str}, {3, &l.num}, {4, &l.unit}});
  return l;
}

uint64_t DecodeId(std::string_view m, WireTypes rule) {
  uint64_t id = 0;
  ReadNumbers(m, rule, {{1, &id}});
  return id;
}

IdIndex::IdIndex(std::span<const uint64_t> ids, Repeats repeats, const char* what) : what_(what) {
  uint64_t max = 0;
  for (uint64_t id : ids) max = std::max(max, id);
  dense_ = max <= 4 * static_cast<uint64_t>(ids.size()) + 1024;
  if (dense_) table_.assign(max + 1, kNone);
  for (size_t i = 0; i < ids.size(); ++i) {
    const uint64_t id = ids[i];
    if (repeats == Repeats::kRefuse && (id == 0 || Find(id) != kNone)) {
      throw Error(ErrorKind::kMalformed, "profile: ", what, " id ", id, " is 0 or repeated");
    }
    if (dense_) {
      table_[id] = static_cast<uint32_t>(i);
    } else {
      map_[id] = static_cast<uint32_t>(i);
    }
  }
}

uint32_t IdIndex::Get(uint64_t id) const {
  const uint32_t at = Find(id);
  if (at == kNone) throw Error(ErrorKind::kMalformed, "profile: no ", what_, " with id ", id);
  return at;
}

}  // namespace goheap2pprof
