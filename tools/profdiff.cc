// profdiff: do two pprof profiles mean the same thing?
//
//   profdiff [--ignore-addresses] [--ignore-comments] expected.pb.gz actual.pb.gz
//   profdiff --aggregate-inuse profile.pb.gz
//
// The end-to-end tests compare goheap2pprof's output with the target's own
// runtime/pprof output. Byte identity is neither possible (time_nanos, packed
// vs unpacked fields, id numbering) nor needed, so both profiles are reduced to
// a canonical form: the header (period type, period, sample types), the main
// executable mapping, and the multiset of samples, each sample being its values,
// labels and stack spelled out in full (location address, then per line the
// function name, system name, file, start line and line). Ids and string table
// order disappear in the process; the order of samples does not matter.
//
// --aggregate-inuse prints, for the JSON snapshot tests, the in-use bytes and
// objects summed per stack (samples with both zero left out), one line per
// stack: "<bytes>\t<objects>\t<frame>\t<frame>...", frames "function
// file:line" leaf first (inline frames innermost first), sorted.
//
// Exit status: 0 identical, 1 different, 2 error (unreadable or malformed file).
#include <zlib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "proto/profile.pb.h"

namespace goheap2pprof {
namespace {

constexpr int kMaxReported = 20;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::kIo, path, ": cannot open");
  std::ostringstream data;
  data << in.rdbuf();
  if (!in.good() && !in.eof()) throw Error(ErrorKind::kIo, path, ": read error");
  return data.str();
}

// Gunzips `data`; data without the gzip magic is returned as is (an
// uncompressed profile is still a profile).
std::string Gunzip(const std::string& path, const std::string& data) {
  if (data.size() < 2 || static_cast<unsigned char>(data[0]) != 0x1f ||
      static_cast<unsigned char>(data[1]) != 0x8b) {
    return data;
  }
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
    throw Error(ErrorKind::kInternal, path, ": inflateInit2 failed");
  }
  std::string out;
  char buffer[1 << 16];
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buffer);
    zs.avail_out = sizeof(buffer);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      std::string message = zs.msg != nullptr ? zs.msg : "truncated stream";
      inflateEnd(&zs);
      throw Error(ErrorKind::kMalformed, path, ": gzip: ", message);
    }
    out.append(buffer, sizeof(buffer) - zs.avail_out);
  }
  inflateEnd(&zs);
  return out;
}

// The text of every distinct location met in either profile, numbered: a
// sample's key names its locations by number, so that a profile of 250k
// stacks of 1,000 frames is not held as 250M lines of text (22 GB).
class LocationTexts {
 public:
  uint32_t Number(std::string text) {
    auto [it, inserted] = numbers_.try_emplace(std::move(text), texts_.size());
    if (inserted) texts_.push_back(&it->first);
    return it->second;
  }
  const std::string& Text(uint32_t number) const { return *texts_.at(number); }

 private:
  std::unordered_map<std::string, uint32_t> numbers_;
  std::vector<const std::string*> texts_;  // by number; keys of numbers_ do not move
};

// A sample's key: the length of its values and labels as text (4 bytes),
// that text, then its locations' numbers (4 bytes each, leaf first).
std::string SampleKeyText(const std::string& key, const LocationTexts& texts) {
  uint32_t head = 0;
  std::memcpy(&head, key.data(), 4);
  std::string out = key.substr(4, head) + "\n";
  for (size_t at = 4 + size_t{head}; at + 4 <= key.size(); at += 4) {
    uint32_t number = 0;
    std::memcpy(&number, key.data() + at, 4);
    out += "    " + texts.Text(number) + "\n";
  }
  return out;
}

// A profile reduced to what it means.
struct Canonical {
  std::string header;
  std::string main_mapping;
  std::vector<std::string> other_mappings;  // sorted; reported, never fatal
  std::map<std::string, int> samples;       // sample key -> multiplicity
  int sample_count = 0;
};

class Canonicalizer {
 public:
  Canonicalizer(const std::string& path, const pb::Profile& profile, bool ignore_addresses,
                LocationTexts& texts)
      : path_(path), p_(profile), ignore_addresses_(ignore_addresses) {
    for (const pb::Function& fn : p_.function()) functions_[fn.id()] = &fn;
    for (const pb::Mapping& m : p_.mapping()) mappings_[m.id()] = &m;
    for (const pb::Location& loc : p_.location()) {
      locations_[loc.id()] = texts.Number(LocationText(loc));
    }
  }

  Canonical Run() {
    Canonical c;
    std::ostringstream header;
    header << "period_type " << ValueType(p_.period_type()) << ", period " << p_.period()
           << ", sample types [";
    for (int i = 0; i < p_.sample_type_size(); ++i) {
      header << (i ? " " : "") << ValueType(p_.sample_type(i));
    }
    header << "], default_sample_type \"" << Str(p_.default_sample_type()) << "\"";
    header << ", drop_frames \"" << Str(p_.drop_frames()) << "\", keep_frames \""
           << Str(p_.keep_frames()) << "\", comments " << p_.comment_size();
    c.header = header.str();

    const pb::Mapping* main = MainMapping();
    c.main_mapping = main != nullptr ? MappingText(*main) : "(none)";
    for (const pb::Mapping& m : p_.mapping()) {
      if (&m != main) c.other_mappings.push_back(MappingText(m));
    }
    std::sort(c.other_mappings.begin(), c.other_mappings.end());

    for (const pb::Sample& s : p_.sample()) ++c.samples[SampleKey(s)];
    c.sample_count = p_.sample_size();
    return c;
  }

 private:
  const std::string& Str(int64_t index) const {
    if (index < 0 || index >= p_.string_table_size()) {
      throw Error(ErrorKind::kMalformed, path_, ": string index ", index, " out of range");
    }
    return p_.string_table(static_cast<int>(index));
  }

  std::string ValueType(const pb::ValueType& vt) const {
    return Str(vt.type()) + "/" + Str(vt.unit());
  }

  // The mapping of the first location that has one, else mapping id 1: the
  // executable in both runtime/pprof and goheap2pprof output.
  const pb::Mapping* MainMapping() const {
    for (const pb::Location& loc : p_.location()) {
      if (loc.mapping_id() == 0) continue;
      auto it = mappings_.find(loc.mapping_id());
      if (it != mappings_.end()) return it->second;
    }
    auto it = mappings_.find(1);
    return it != mappings_.end() ? it->second : nullptr;
  }

  std::string MappingText(const pb::Mapping& m) const {
    std::ostringstream out;
    out << Str(m.filename()) << " build_id \"" << Str(m.build_id()) << "\""
        << " has_functions " << m.has_functions();
    if (!ignore_addresses_) {
      out << std::hex << " [0x" << m.memory_start() << ", 0x" << m.memory_limit() << ") offset 0x"
          << m.file_offset();
    }
    return out.str();
  }

  // Values and labels as text, then each location's number, leaf first
  // (SampleKeyText gives one line per location; inline frames joined by " <- ").
  std::string SampleKey(const pb::Sample& s) const {
    std::ostringstream out;
    out << "values [";
    for (int i = 0; i < s.value_size(); ++i) out << (i ? " " : "") << s.value(i);
    out << "]";
    std::vector<std::string> labels;
    for (const pb::Label& l : s.label()) {
      std::string text = Str(l.key()) + "=";
      text += l.str() != 0 ? "\"" + Str(l.str()) + "\"" : std::to_string(l.num());
      if (l.num_unit() != 0) text += " " + Str(l.num_unit());
      labels.push_back(text);
    }
    std::sort(labels.begin(), labels.end());
    for (const std::string& l : labels) out << " " << l;
    const std::string head = out.str();
    const auto head_size = static_cast<uint32_t>(head.size());
    std::string key(reinterpret_cast<const char*>(&head_size), 4);
    key += head;
    for (uint64_t id : s.location_id()) {
      auto it = locations_.find(id);
      if (it == locations_.end()) {
        throw Error(ErrorKind::kMalformed, path_, ": sample refers to missing location ", id);
      }
      key.append(reinterpret_cast<const char*>(&it->second), 4);
    }
    return key;
  }

  std::string LocationText(const pb::Location& loc) const {
    std::ostringstream out;
    if (!ignore_addresses_) out << "0x" << std::hex << loc.address() << std::dec << " ";
    if (loc.is_folded()) out << "(folded) ";
    if (loc.line_size() == 0) out << "??";
    for (int i = 0; i < loc.line_size(); ++i) {
      const pb::Line& line = loc.line(i);
      auto it = functions_.find(line.function_id());
      if (it == functions_.end()) {
        throw Error(ErrorKind::kMalformed, path_, ": location ", loc.id(),
                    " refers to missing function ", line.function_id());
      }
      const pb::Function& fn = *it->second;
      if (i > 0) out << " <- ";
      out << Str(fn.name());
      if (Str(fn.system_name()) != Str(fn.name())) {
        out << " (system_name " << Str(fn.system_name()) << ")";
      }
      out << " " << Str(fn.filename()) << ":" << line.line();
      if (line.column() != 0) out << ":" << line.column();
      out << " (start " << fn.start_line() << ")";
    }
    return out.str();
  }

  const std::string& path_;
  const pb::Profile& p_;
  bool ignore_addresses_;
  std::unordered_map<uint64_t, uint32_t> locations_;  // id -> its text's number
  std::unordered_map<uint64_t, const pb::Function*> functions_;
  std::unordered_map<uint64_t, const pb::Mapping*> mappings_;
};

Canonical Load(const std::string& path, bool ignore_addresses, bool ignore_comments,
               LocationTexts& texts) {
  std::string data = Gunzip(path, ReadFile(path));
  pb::Profile profile;
  if (!profile.ParseFromString(data)) {
    throw Error(ErrorKind::kMalformed, path, ": not a profile.proto message");
  }
  // goheap2pprof's comments carry its warnings, not profile data.
  if (ignore_comments) profile.clear_comment();
  return Canonicalizer(path, profile, ignore_addresses, texts).Run();
}

// Prints the samples of `a` that `b` lacks (counting multiplicity); returns
// how many there are.
int ReportMissing(const char* title, const Canonical& a, const Canonical& b,
                  const LocationTexts& texts) {
  int missing = 0;
  for (const auto& [key, count] : a.samples) {
    auto it = b.samples.find(key);
    int extra = count - (it == b.samples.end() ? 0 : it->second);
    if (extra <= 0) continue;
    if (missing < kMaxReported) {
      std::cout << title << (extra > 1 ? " (x" + std::to_string(extra) + ")" : "") << ": "
                << SampleKeyText(key, texts);
    }
    missing += extra;
  }
  if (missing > kMaxReported) {
    std::cout << "... and " << missing - kMaxReported << " more " << title << "\n";
  }
  return missing;
}

// --aggregate-inuse: the per-stack in-use sums of one profile.
int AggregateInUse(const std::string& path) {
  pb::Profile p;
  if (!p.ParseFromString(Gunzip(path, ReadFile(path)))) {
    throw Error(ErrorKind::kMalformed, path, ": not a profile.proto message");
  }
  auto str = [&](int64_t i) -> const std::string& {
    if (i < 0 || i >= p.string_table_size()) {
      throw Error(ErrorKind::kMalformed, path, ": string index ", i, " out of range");
    }
    return p.string_table(static_cast<int>(i));
  };
  int objects_index = -1, bytes_index = -1;
  for (int i = 0; i < p.sample_type_size(); ++i) {
    if (str(p.sample_type(i).type()) == "inuse_objects") objects_index = i;
    if (str(p.sample_type(i).type()) == "inuse_space") bytes_index = i;
  }
  if (objects_index < 0 || bytes_index < 0) {
    throw Error(ErrorKind::kMalformed, path, ": no inuse_objects/inuse_space sample types");
  }
  std::unordered_map<uint64_t, const pb::Location*> locations;
  std::unordered_map<uint64_t, const pb::Function*> functions;
  for (const pb::Location& loc : p.location()) locations[loc.id()] = &loc;
  for (const pb::Function& fn : p.function()) functions[fn.id()] = &fn;
  std::map<std::string, std::pair<int64_t, int64_t>> sums;  // stack -> bytes, objects
  for (const pb::Sample& s : p.sample()) {
    if (s.value_size() <= std::max(objects_index, bytes_index)) continue;
    const int64_t objects = s.value(objects_index), bytes = s.value(bytes_index);
    if (objects == 0 && bytes == 0) continue;
    std::string stack;
    for (uint64_t id : s.location_id()) {
      auto loc = locations.find(id);
      if (loc == locations.end()) {
        throw Error(ErrorKind::kMalformed, path, ": sample refers to missing location ", id);
      }
      bool any = false;
      for (const pb::Line& line : loc->second->line()) {
        auto fn = functions.find(line.function_id());
        if (fn == functions.end() || str(fn->second->name()).empty()) continue;
        stack += "\t" + str(fn->second->name()) + " " + str(fn->second->filename()) + ":" +
                 std::to_string(line.line());
        any = true;
      }
      if (!any) stack += "\t" + Hex(loc->second->address());
    }
    sums[stack].first += bytes;
    sums[stack].second += objects;
  }
  std::vector<std::string> lines;
  for (const auto& [stack, sum] : sums) {
    lines.push_back(std::to_string(sum.first) + "\t" + std::to_string(sum.second) + stack);
  }
  std::sort(lines.begin(), lines.end());
  for (const std::string& line : lines) std::cout << line << "\n";
  return 0;
}

int Run(int argc, char** argv) {
  CLI::App app{"Compare two pprof profiles by meaning (exit 0 same, 1 different, 2 error)"};
  bool ignore_addresses = false;
  std::string expected_path, actual_path;
  app.add_flag("--ignore-addresses", ignore_addresses,
               "do not compare location addresses and mapping ranges");
  bool ignore_comments = false;
  app.add_flag("--ignore-comments", ignore_comments,
               "do not compare the profiles' comments (goheap2pprof's warnings)");
  std::string aggregate_path;
  app.add_option("--aggregate-inuse", aggregate_path,
                 "print the profile's in-use bytes and objects per stack instead of comparing");
  app.add_option("expected", expected_path, "expected profile (.pb.gz or .pb)");
  app.add_option("actual", actual_path, "actual profile (.pb.gz or .pb)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (!aggregate_path.empty()) return AggregateInUse(aggregate_path);
  if (expected_path.empty() || actual_path.empty()) {
    std::cerr << "profdiff: need an expected and an actual profile (or --aggregate-inuse)\n";
    return 2;
  }

  LocationTexts texts;
  Canonical expected = Load(expected_path, ignore_addresses, ignore_comments, texts);
  Canonical actual = Load(actual_path, ignore_addresses, ignore_comments, texts);

  bool same = true;
  if (expected.header != actual.header) {
    same = false;
    std::cout << "header differs:\n  expected: " << expected.header
              << "\n  actual:   " << actual.header << "\n";
  }
  if (expected.main_mapping != actual.main_mapping) {
    same = false;
    std::cout << "main mapping differs:\n  expected: " << expected.main_mapping
              << "\n  actual:   " << actual.main_mapping << "\n";
  }
  if (expected.other_mappings != actual.other_mappings) {
    std::cout << "note (not compared): other mappings differ:\n";
    for (const std::string& m : expected.other_mappings) std::cout << "  expected: " << m << "\n";
    for (const std::string& m : actual.other_mappings) std::cout << "  actual:   " << m << "\n";
  }
  int only_expected = ReportMissing("only in expected", expected, actual, texts);
  int only_actual = ReportMissing("only in actual", actual, expected, texts);
  if (only_expected != 0 || only_actual != 0) same = false;

  std::cout << "samples: expected " << expected.sample_count << ", actual " << actual.sample_count
            << ", matched " << expected.sample_count - only_expected << ", only in expected "
            << only_expected << ", only in actual " << only_actual << "\n";
  std::cout << (same ? "IDENTICAL" : "DIFFERENT") << "\n";
  return same ? 0 : 1;
}

}  // namespace
}  // namespace goheap2pprof

int main(int argc, char** argv) {
  try {
    return goheap2pprof::Run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "profdiff: " << e.what() << "\n";
    return 2;
  }
}
