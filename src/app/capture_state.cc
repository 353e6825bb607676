#include "app/capture_state.h"

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
  size_t bytes = snapshot.buckets.capacity() * sizeof(Bucket) + snapshot.scratch.capacity() +
                 snapshot.stacks.ApproximateBytes();
  if (profile_tables) bytes += profile_tables->ApproximateBytes();
  bytes += runs_by_stack_.ApproximateBytes();
  if (seed_) bytes += seed_->ApproximateBytes();
  return bytes;
}

void ProcessCaptureState::KeepTables(std::shared_ptr<const ProfileTables> tables,
                                     std::unique_ptr<HeapProfileBuilder::Seed> seed) {
  DropTables();
  seed_ = std::move(seed);
  profile_tables = std::move(tables);
  RememberRuns(snapshot.buckets.size());
}

void ProcessCaptureState::KeepContinued(std::shared_ptr<const ProfileTables> tables,
                                        std::unique_ptr<HeapProfileBuilder::Seed> seed) {
  seed_ = std::move(seed);
  profile_tables = std::move(tables);
  RememberRuns(snapshot.new_buckets);
}

void ProcessCaptureState::RememberRuns(size_t buckets) {
  if (profile_tables->samples() != snapshot.buckets.size()) return;
  for (size_t i = 0; i < buckets; ++i) {
    const std::span<const uint64_t> stack = snapshot.buckets[i].stack;
    const uint64_t at = reinterpret_cast<uintptr_t>(stack.data());
    if (at != 0 && runs_by_stack_.Find(at) == nullptr) {
      runs_by_stack_.Insert(at, {stack.size(), profile_tables->sample_runs[i]});
    }
  }
}

void ProcessCaptureState::DropTables() {
  profile_tables.reset();
  runs_by_stack_ = PcMap<StackRun>();
  seed_.reset();
}

std::optional<uint32_t> ProcessCaptureState::RunOfStack(std::span<const uint64_t> stack) const {
  const StackRun* r = runs_by_stack_.Find(reinterpret_cast<uintptr_t>(stack.data()));
  if (r == nullptr || r->words != stack.size()) return std::nullopt;
  return r->run;
}

}  // namespace goheap2pprof
