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
  profile_tables.reset();
  ++fresh_;
  fresh_reason_ = std::move(reason);
}

size_t ProcessCaptureState::ApproximateBytes() const {
  size_t bytes = snapshot.buckets.capacity() * sizeof(Bucket) + snapshot.scratch.capacity() +
                 snapshot.stacks.ApproximateBytes();
  if (profile_tables) bytes += profile_tables->ApproximateBytes();
  return bytes;
}

}  // namespace goheap2pprof
