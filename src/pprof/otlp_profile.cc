#include "pprof/otlp_profile.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>

#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "base/utf8.h"
#include "proto/otlp_profiles.pb.h"

namespace goheap2pprof {
namespace {

namespace otlp = goheap2pprof::otlp;

otlp::common::AnyValue StringValue(const std::string& s) {
  otlp::common::AnyValue v;
  v.set_string_value(s);
  return v;
}

otlp::common::AnyValue IntValue(int64_t i) {
  otlp::common::AnyValue v;
  v.set_int_value(i);
  return v;
}

otlp::common::AnyValue BoolValue(bool b) {
  otlp::common::AnyValue v;
  v.set_bool_value(b);
  return v;
}

// Builds the dictionary and the profiles of one pprof profile. Each table
// starts with its zero entry (index 0 means "none" in OTLP).
class OtlpTranslator {
 public:
  explicit OtlpTranslator(const pb::Profile& in) : in_(in) {
    if (in.string_table_size() == 0 || !in.string_table(0).empty()) {
      throw Error(ErrorKind::kMalformed, "profile: string_table[0] is not \"\"");
    }
    // The pprof string table as it is, so that pprof indexes stay valid;
    // what OTLP adds (attribute keys) is appended.
    for (const std::string& s : in.string_table()) {
      strings_.emplace(ValidUtf8(s), dict_.string_table_size());
      dict_.add_string_table(ValidUtf8(s));
    }
    dict_.add_mapping_table();
    dict_.add_location_table();
    dict_.add_function_table();
    dict_.add_link_table();
    dict_.add_attribute_table();
    dict_.add_stack_table();
    stacks_.emplace("", 0);
    attributes_.emplace(dict_.attribute_table(0).SerializeAsString(), 0);
  }

  OtlpProfileParts Build(const OtlpScope& scope) {
    AddFunctions();
    AddMappings();
    AddLocations();
    otlp::profiles::ResourceProfiles rp;
    otlp::profiles::ScopeProfiles* sp = rp.add_scope_profiles();
    FillScope(scope, *sp->mutable_scope());
    const std::vector<std::pair<int32_t, std::vector<int32_t>>> samples = SampleKeys();
    for (int t = 0; t < in_.sample_type_size(); ++t) AddProfile(t, samples, *sp->add_profiles());
    OtlpProfileParts parts;
    parts.samples = samples.size() * static_cast<size_t>(in_.sample_type_size());
    rp.SerializeToString(&parts.resource_profiles);
    dict_.SerializeToString(&parts.dictionary);
    return parts;
  }

 private:
  int32_t Str(int64_t index, const char* what) const {
    if (index < 0 || index >= in_.string_table_size()) {
      throw Error(ErrorKind::kMalformed, "profile: ", what, " string index ", index,
                  " out of range");
    }
    return static_cast<int32_t>(index);
  }

  int32_t Intern(const std::string& s) {
    auto [it, added] = strings_.emplace(s, dict_.string_table_size());
    if (added) dict_.add_string_table(s);
    return it->second;
  }

  int32_t Attribute(const std::string& key, const otlp::common::AnyValue& value, int32_t unit = 0) {
    otlp::profiles::KeyValueAndUnit kv;
    kv.set_key_strindex(Intern(key));
    *kv.mutable_value() = value;
    kv.set_unit_strindex(unit);
    auto [it, added] = attributes_.emplace(kv.SerializeAsString(), dict_.attribute_table_size());
    if (added) *dict_.add_attribute_table() = std::move(kv);
    return it->second;
  }

  static int32_t IndexOf(const std::unordered_map<uint64_t, int32_t>& ids, uint64_t id,
                         const char* what) {
    auto it = ids.find(id);
    if (it == ids.end()) throw Error(ErrorKind::kMalformed, "profile: no ", what, " ", id);
    return it->second;
  }

  void AddFunctions() {
    for (const pb::Function& f : in_.function()) {
      function_ids_[f.id()] = dict_.function_table_size();
      otlp::profiles::Function* out = dict_.add_function_table();
      out->set_name_strindex(Str(f.name(), "function name"));
      out->set_system_name_strindex(Str(f.system_name(), "function system name"));
      out->set_filename_strindex(Str(f.filename(), "function file"));
      out->set_start_line(f.start_line());
    }
  }

  void AddMappings() {
    for (const pb::Mapping& m : in_.mapping()) {
      mapping_ids_[m.id()] = dict_.mapping_table_size();
      otlp::profiles::Mapping* out = dict_.add_mapping_table();
      out->set_memory_start(m.memory_start());
      out->set_memory_limit(m.memory_limit());
      out->set_file_offset(m.file_offset());
      out->set_filename_strindex(Str(m.filename(), "mapping file"));
      const int32_t build_id = Str(m.build_id(), "mapping build id");
      if (build_id != 0) {
        out->add_attribute_indices(Attribute("process.executable.build_id.gnu",
                                             StringValue(dict_.string_table(build_id))));
      }
      const std::pair<const char*, bool> flags[] = {
          {"pprof.mapping.has_functions", m.has_functions()},
          {"pprof.mapping.has_filenames", m.has_filenames()},
          {"pprof.mapping.has_line_numbers", m.has_line_numbers()},
          {"pprof.mapping.has_inline_frames", m.has_inline_frames()}};
      for (const auto& [key, set] : flags) {
        if (set) out->add_attribute_indices(Attribute(key, BoolValue(true)));
      }
    }
  }

  void AddLocations() {
    for (const pb::Location& l : in_.location()) {
      location_ids_[l.id()] = dict_.location_table_size();
      otlp::profiles::Location* out = dict_.add_location_table();
      out->set_mapping_index(
          l.mapping_id() == 0 ? 0 : IndexOf(mapping_ids_, l.mapping_id(), "mapping"));
      out->set_address(l.address());
      for (const pb::Line& line : l.line()) {
        otlp::profiles::Line* o = out->add_lines();
        o->set_function_index(IndexOf(function_ids_, line.function_id(), "function"));
        o->set_line(line.line());
        o->set_column(line.column());
      }
      if (l.is_folded()) {
        out->add_attribute_indices(Attribute("pprof.location.is_folded", BoolValue(true)));
      }
    }
  }

  // Each sample's stack and attributes, as OTLP indexes, shared by every
  // profile.
  std::vector<std::pair<int32_t, std::vector<int32_t>>> SampleKeys() {
    std::vector<std::pair<int32_t, std::vector<int32_t>>> out;
    out.reserve(static_cast<size_t>(in_.sample_size()));
    const int32_t bytes_unit = Intern("bytes");
    for (const pb::Sample& s : in_.sample()) {
      if (s.value_size() != in_.sample_type_size()) {
        throw Error(ErrorKind::kMalformed, "profile: a sample has ", s.value_size(), " values for ",
                    in_.sample_type_size(), " sample types");
      }
      otlp::profiles::Stack stack;
      for (uint64_t id : s.location_id()) {
        stack.add_location_indices(IndexOf(location_ids_, id, "location"));
      }
      std::string key = stack.SerializeAsString();
      auto [it, added] = stacks_.emplace(key, dict_.stack_table_size());
      if (added) *dict_.add_stack_table() = std::move(stack);
      std::vector<int32_t> attrs;
      for (const pb::Label& label : s.label()) {
        const std::string& name = dict_.string_table(Str(label.key(), "label key"));
        if (label.str() != 0) {
          attrs.push_back(
              Attribute(name, StringValue(dict_.string_table(Str(label.str(), "label")))));
          continue;
        }
        int32_t unit = Str(label.num_unit(), "label unit");
        if (unit == 0 && name == "bytes") unit = bytes_unit;  // pprof's implied unit
        attrs.push_back(Attribute(name, IntValue(label.num()), unit));
      }
      out.emplace_back(it->second, std::move(attrs));
    }
    return out;
  }

  void AddProfile(int t, const std::vector<std::pair<int32_t, std::vector<int32_t>>>& samples,
                  otlp::profiles::Profile& out) {
    out.mutable_sample_type()->set_type_strindex(Str(in_.sample_type(t).type(), "sample type"));
    out.mutable_sample_type()->set_unit_strindex(Str(in_.sample_type(t).unit(), "sample unit"));
    out.set_time_unix_nano(static_cast<uint64_t>(in_.time_nanos()));
    out.set_duration_nano(static_cast<uint64_t>(in_.duration_nanos()));
    out.mutable_period_type()->set_type_strindex(Str(in_.period_type().type(), "period type"));
    out.mutable_period_type()->set_unit_strindex(Str(in_.period_type().unit(), "period unit"));
    out.set_period(in_.period());
    AddProfileAttributes(out);
    for (size_t i = 0; i < samples.size(); ++i) {
      otlp::profiles::Sample* s = out.add_samples();
      s->set_stack_index(samples[i].first);
      for (int32_t a : samples[i].second) s->add_attribute_indices(a);
      s->add_values(in_.sample(static_cast<int>(i)).value(t));
    }
  }

  void AddProfileAttributes(otlp::profiles::Profile& out) {
    if (in_.comment_size() > 0) {
      otlp::common::AnyValue comments;
      for (int64_t c : in_.comment()) {
        *comments.mutable_array_value()->add_values() =
            StringValue(dict_.string_table(Str(c, "comment")));
      }
      out.add_attribute_indices(Attribute("pprof.profile.comment", comments));
    }
    const std::pair<const char*, int64_t> strings[] = {
        {"pprof.profile.drop_frames", in_.drop_frames()},
        {"pprof.profile.keep_frames", in_.keep_frames()},
        {"pprof.profile.doc_url", in_.doc_url()}};
    for (const auto& [key, index] : strings) {
      if (Str(index, key) != 0) {
        out.add_attribute_indices(Attribute(key, StringValue(dict_.string_table(Str(index, key)))));
      }
    }
  }

  void FillScope(const OtlpScope& scope, otlp::common::InstrumentationScope& out) const {
    out.set_name(scope.name);
    out.set_version(scope.version);
    otlp::common::KeyValue* order = out.add_attributes();
    order->set_key("pprof.scope.sample_type_order");
    for (int t = 0; t < in_.sample_type_size(); ++t) {
      *order->mutable_value()->mutable_array_value()->add_values() = IntValue(t);
    }
    const int32_t def = Str(in_.default_sample_type(), "default sample type");
    if (def != 0) {
      otlp::common::KeyValue* kv = out.add_attributes();
      kv->set_key("pprof.scope.default_sample_type");
      *kv->mutable_value() = StringValue(dict_.string_table(def));
    }
  }

  const pb::Profile& in_;
  otlp::profiles::ProfilesDictionary dict_;
  std::unordered_map<std::string, int32_t> strings_, stacks_, attributes_;
  std::unordered_map<uint64_t, int32_t> function_ids_, mapping_ids_, location_ids_;
};

// A length-delimited field (wire type 2), written by libprotobuf's coder.
void AppendField(std::string& out, uint32_t field, std::string_view bytes) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw Error(ErrorKind::kMalformed, "OTLP request part of ", bytes.size(), " bytes: over 2 GiB");
  }
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.WriteTag(google::protobuf::internal::WireFormatLite::MakeTag(
      static_cast<int>(field),
      google::protobuf::internal::WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
  coded.WriteVarint64(bytes.size());
  coded.WriteRaw(bytes.data(), static_cast<int>(bytes.size()));
}

}  // namespace

OtlpProfileParts PprofToOtlp(const pb::Profile& profile, const OtlpScope& scope) {
  return OtlpTranslator(profile).Build(scope);
}

std::string JoinOtlpProfilesRequest(const std::string& resource, const OtlpProfileParts& parts) {
  std::string resource_profiles;
  AppendField(resource_profiles, 1, resource);  // ResourceProfiles.resource
  resource_profiles += parts.resource_profiles;
  std::string out;
  AppendField(out, 1, resource_profiles);  // ExportProfilesServiceRequest.resource_profiles
  AppendField(out, 2, parts.dictionary);   // .dictionary
  return out;
}

}  // namespace goheap2pprof
