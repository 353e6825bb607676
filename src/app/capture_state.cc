#include "app/capture_state.h"

#include "base/error.h"

namespace goheap2pprof {

namespace {
bool SameMappings(const std::vector<ProfileMapping>& a, const std::vector<ProfileMapping>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].start != b[i].start || a[i].limit != b[i].limit || a[i].offset != b[i].offset ||
        a[i].file != b[i].file || a[i].build_id != b[i].build_id || a[i].fake != b[i].fake) {
      return false;
    }
  }
  return true;
}
}  // namespace

std::string ProcessCaptureState::Mismatch(const Key& key) const {
  if (!key_ || !valid) return "first capture";
  const Key& k = *key_;
  if (k.pid != key.pid) return "another pid";
  if (k.start_time != key.start_time) return "start time changed (another process)";
  if (k.exe_path != key.exe_path || k.exe_inode != key.exe_inode || k.build_id != key.build_id) {
    return "executable changed";
  }
  if (k.analysis != key.analysis) return "another executable analysis";
  if (k.bias != key.bias || !SameMappings(k.mappings, key.mappings)) {
    return "executable mappings changed";
  }
  return "";
}

void ProcessCaptureState::Reset(std::string reason) {
  key_.reset();
  valid = false;
  snapshot = HeapSnapshot();
  other_rate.reset();
  DropTables();
  ++fresh_;
  fresh_reason_ = std::move(reason);
}

size_t ProcessCaptureState::ApproximateBytes() const {
  const HeapSnapshot& s = snapshot;
  size_t bytes = s.buckets.capacity() * sizeof(Bucket) + s.scratch.capacity() +
                 s.stacks.ApproximateBytes() + s.record_at.capacity() * sizeof(uint64_t) +
                 s.ends.capacity() * sizeof(StackEnds) +
                 (s.plan.header_at.capacity() + s.plan.record_at.capacity()) * sizeof(uint64_t) +
                 s.plan.ranges.capacity() * sizeof(RevalidationPlan::Range) +
                 s.plan.order.capacity() * sizeof(uint32_t) +
                 s.plan.batches.capacity() * sizeof(RevalidationPlan::Batch);
  if (profile_tables) bytes += profile_tables->ApproximateBytes();
  if (seed_) bytes += seed_->ApproximateBytes();
  return bytes;
}

void ProcessCaptureState::KeepTables(std::shared_ptr<const ProfileTables> tables,
                                     std::unique_ptr<HeapProfileBuilder::Seed> seed) {
  DropTables();
  seed_ = std::move(seed);
  profile_tables = std::move(tables);
}

void ProcessCaptureState::KeepContinued(std::shared_ptr<const ProfileTables> tables,
                                        std::unique_ptr<HeapProfileBuilder::Seed> seed) {
  seed_ = std::move(seed);
  profile_tables = std::move(tables);
}

ProcessCaptureState::TablesToContinue ProcessCaptureState::TakeTablesToContinue() {
  if (!profile_tables) throw Error(ErrorKind::kInternal, "continuing a state without tables");
  TablesToContinue out;
  const std::shared_ptr<const ProfileTables> tables = std::move(profile_tables);
  // Ours alone (this reference and, for the locations, the tables'): no
  // other thread can come to hold them, so moving them out is safe. Both
  // were made as non-const objects (std::make_shared) before being shared
  // as const.
  if (tables.use_count() == 1 && tables->locations.use_count() == 1) {
    auto& owned = const_cast<ProfileTables&>(*tables);
    out.locations = std::move(const_cast<LocationTables&>(*owned.locations));
    out.sample_runs = std::move(owned.sample_runs);
  } else {
    out.locations = *tables->locations;
    out.sample_runs = tables->sample_runs;
  }
  return out;
}

void ProcessCaptureState::DropTables() {
  profile_tables.reset();
  seed_.reset();
}

}  // namespace goheap2pprof
