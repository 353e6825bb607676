// Fuzz target: the growth report's compact decoder of heap profile files
// (GrowthCollector::AddSerialized, pprof/growth/decode.cc). The files are
// anyone's (a directory of profiles handed to `goheap2pprof growth`): any
// bytes must end in Error(kMalformed) or a snapshot, never in a crash; and
// when libprotobuf parses them too, the message path (GrowthCollector::Add)
// must collect exactly the same sites, locations and points, or refuse them
// as well. The corpus starts from real heap profiles of
// testdata/growthtarget, ours and the runtime's own.
// Input: one serialized (not gzipped) profile.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.h"
#include "pprof/growth/sites.h"
#include "proto/profile.pb.h"

namespace {

// The profile added twice by add(collector, time) at times 0 and 1 s (so
// that Finish accepts them) and collected; nullopt when refused.
template <typename AddFn>
std::optional<goheap2pprof::GrowthData> Collect(AddFn add) {
  using namespace goheap2pprof;
  GrowthCollector c;
  try {
    if (!add(c, 0) || !add(c, 1'000'000'000)) return std::nullopt;
    return std::move(c).Finish();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInternal) __builtin_trap();
    return std::nullopt;
  }
}

}  // namespace

// A time_nanos field appended to serialized bytes: the last value of a
// field is the one protobuf reads, so the raw bytes are decoded as they
// are, with only their time set.
std::string WithTime(std::string bytes, uint64_t time) {
  bytes.push_back(static_cast<char>(9 << 3));
  do {
    bytes.push_back(static_cast<char>((time & 0x7f) | (time > 0x7f ? 0x80 : 0)));
    time >>= 7;
  } while (time != 0);
  return bytes;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace goheap2pprof;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  // Two snapshots of one profile, 1 s apart.
  const std::optional<GrowthData> by_bytes = Collect([&](GrowthCollector& c, int64_t time) {
    return c.AddSerialized(WithTime(bytes, static_cast<uint64_t>(time)), "f");
  });
  pb::Profile p;
  if (!p.ParseFromString(bytes)) return 0;
  bool is_growth_profile = false;
  for (const pb::ValueType& t : p.sample_type()) {
    is_growth_profile |= t.type() >= 0 && t.type() < p.string_table_size() &&
                         p.string_table(static_cast<int>(t.type())) == "inuse_space_per_hour";
  }
  if (is_growth_profile) return 0;  // left out by AddSerialized, not by Add
  const std::optional<GrowthData> by_message = Collect([&](GrowthCollector& c, int64_t time) {
    p.set_time_nanos(time);
    c.Add(p, "f");
    return true;
  });
  if (by_bytes.has_value() != by_message.has_value()) __builtin_trap();
  if (by_bytes && !(*by_bytes == *by_message)) __builtin_trap();
  return 0;
}
