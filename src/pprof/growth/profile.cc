// GrowthProfile (report.h): the growth report as a pprof profile.
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

#include "base/saturating.h"
#include "pprof/growth/report.h"

namespace goheap2pprof {

namespace {

class GrowthProfileBuilder {
 public:
  GrowthProfileBuilder() { Str(""); }

  int64_t Str(const std::string& s) {
    auto [it, inserted] = strings_.try_emplace(s, p_.string_table_size());
    if (inserted) p_.add_string_table(s);
    return it->second;
  }

  void SampleType(const char* type, const char* unit) {
    pb::ValueType* vt = p_.add_sample_type();
    vt->set_type(Str(type));
    vt->set_unit(Str(unit));
  }

  uint64_t Function(const GrowthLine& l) {
    auto key = std::make_tuple(l.function, l.file, l.start_line);
    auto [it, inserted] = functions_.try_emplace(key, p_.function_size() + 1);
    if (inserted) {
      pb::Function* f = p_.add_function();
      f->set_id(it->second);
      f->set_name(Str(l.function));
      f->set_system_name(Str(l.function));
      f->set_filename(Str(l.file));
      f->set_start_line(l.start_line);
    }
    return it->second;
  }

  // The location of GrowthData::locations[index], made on first use.
  uint64_t Location(const GrowthData& data, uint32_t index) {
    auto [it, inserted] = locations_.try_emplace(index, p_.location_size() + 1);
    if (inserted) {
      const GrowthLocation& g = data.locations[index];
      pb::Location* loc = p_.add_location();
      loc->set_id(it->second);
      loc->set_address(g.address);
      if (p_.mapping_size() > 0) loc->set_mapping_id(1);
      for (const GrowthLine& l : g.lines) {
        pb::Line* line = loc->add_line();
        line->set_function_id(Function(l));
        line->set_line(l.line);
      }
    }
    return it->second;
  }

  pb::Profile& profile() { return p_; }

 private:
  pb::Profile p_;
  std::unordered_map<std::string, int64_t> strings_;
  std::map<std::tuple<std::string, std::string, int64_t>, uint64_t> functions_;
  std::unordered_map<uint32_t, uint64_t> locations_;
};

void Header(const GrowthReport& r, GrowthProfileBuilder& b) {
  pb::Profile& p = b.profile();
  b.SampleType("inuse_objects", "count");
  b.SampleType("inuse_space", "bytes");
  b.SampleType("inuse_objects_per_hour", "count");
  b.SampleType("inuse_space_per_hour", "bytes");
  p.set_default_sample_type(b.Str("inuse_space_per_hour"));
  p.mutable_period_type()->set_type(b.Str("space"));
  p.mutable_period_type()->set_unit(b.Str("bytes"));
  const GrowthData& d = r.data;
  if (d.snapshots.back().rate > 0) p.set_period(d.snapshots.back().rate);
  p.set_time_nanos(d.snapshots.back().time_nanos);
  p.set_duration_nanos(d.snapshots.back().time_nanos - d.snapshots.front().time_nanos);
  p.add_comment(b.Str("goheap2pprof growth of " + r.info.source + " over " +
                      std::to_string(d.snapshots.size()) + " snapshots"));
  p.add_comment(b.Str("inuse_*: last minus first snapshot; *_per_hour: least-squares slope"));
  // The executable, so that pprof names it (and can find it for -symbolize).
  if (const std::optional<GrowthMapping>& m = d.main_mapping) {
    pb::Mapping* mapping = p.add_mapping();
    mapping->set_id(1);
    mapping->set_memory_start(m->start);
    mapping->set_memory_limit(m->limit);
    mapping->set_file_offset(m->offset);
    mapping->set_filename(b.Str(m->filename));
    mapping->set_build_id(b.Str(m->build_id));
    mapping->set_has_functions(true);
  }
}

int64_t Rounded(double v) { return SaturatingFromDouble(std::round(v)); }

}  // namespace

pb::Profile GrowthProfile(const GrowthReport& r) {
  GrowthProfileBuilder b;
  Header(r, b);
  const int64_t class_key = b.Str("growth_class");
  for (size_t i : r.ranking) {
    const SiteGrowth& g = r.sites[i];
    const int64_t values[4] = {g.change_objects, g.change_bytes, Rounded(g.slope_objects_per_hour),
                               Rounded(g.slope_bytes_per_hour)};
    if (values[0] == 0 && values[1] == 0 && values[2] == 0 && values[3] == 0) continue;
    pb::Sample* s = b.profile().add_sample();
    for (int64_t v : values) s->add_value(v);
    for (uint32_t loc : r.data.sites[i].locations) s->add_location_id(b.Location(r.data, loc));
    pb::Label* label = s->add_label();
    label->set_key(class_key);
    label->set_str(b.Str(std::string(GrowthClassName(g.growth_class))));
  }
  return std::move(b.profile());
}

}  // namespace goheap2pprof
