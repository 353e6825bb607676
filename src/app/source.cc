#include "app/source.h"

#include <map>
#include <utility>

namespace goheap2pprof {

std::vector<ProfileMapping> ExecutableFileMappings(
    const std::vector<MapsEntry>& maps, const FileIdentity& exe, const std::string& exe_build_id,
    const std::function<std::string(const MapsEntry&)>& build_id_of) {
  std::vector<ProfileMapping> out;
  std::map<std::string, std::string> build_ids;  // by path: each file is read once
  for (const MapsEntry& e : maps) {
    if (!e.executable()) continue;
    if (e.path.empty()) continue;
    std::string file = StripDeleted(e.path);
    ProfileMapping m{e.start, e.end, e.offset, file, "", false};
    if (MapsEntryIsFile(e, exe)) {
      m.build_id = exe_build_id;
    } else if (file[0] == '/') {
      auto it = build_ids.find(file);
      if (it == build_ids.end()) it = build_ids.emplace(file, build_id_of(e)).first;
      m.build_id = it->second;
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace goheap2pprof
