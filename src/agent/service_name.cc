#include "agent/service_name.h"

#include <string_view>

#include "agent/pod_identity.h"
#include "base/error.h"

namespace goheap2pprof {

std::string PathBaseName(std::string path) {
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.size() > kDeleted.size() &&
      path.compare(path.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0) {
    path.resize(path.size() - kDeleted.size());
  }
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

void CheckServiceNameFrom(const std::string& s) {
  if (s != "auto" && s != "exe" && s != "comm" && s != "cgroup" &&
      !(s.rfind("env:", 0) == 0 && s.size() > 4)) {
    throw Error(ErrorKind::kUsage,
                "--service-name-from must be auto, exe, comm, cgroup or env:VAR");
  }
}

std::string ServiceNameOf(const ProcessFacts& facts, const std::string& from) {
  if (from == "auto") {
    std::string name = DefaultServiceName(facts.identity);
    if (!name.empty()) return name;
  }
  if (from == "comm") return facts.comm;
  if (from == "cgroup") {
    std::string cg = facts.cgroup;
    while (!cg.empty() && cg.back() == '/') cg.pop_back();
    std::string last = PathBaseName(cg);
    if (!last.empty()) return last;
  }
  if (from.rfind("env:", 0) == 0) {
    auto it = facts.environ_wanted.find(from.substr(4));
    if (it != facts.environ_wanted.end() && !it->second.empty()) return it->second;
  }
  return PathBaseName(facts.exe);
}

}  // namespace goheap2pprof
