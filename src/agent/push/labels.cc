#include "agent/push/labels.h"

#include <algorithm>
#include <set>

#include "agent/common/service_name.h"
#include "base/error.h"
#include "base/utf8.h"

namespace goheap2pprof {
namespace {

bool AgentSets(std::string_view name) {
  return name == "service_name" || name == "pid" || name == "go_version";
}

}  // namespace

bool IsValidLabelName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0)) return false;
  }
  return true;
}

PushLabel ParseLabelOption(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos) {
    throw Error(ErrorKind::kUsage, "--label ", text, ": expected NAME=VALUE");
  }
  std::string name = text.substr(0, eq), value = text.substr(eq + 1);
  if (!IsValidLabelName(name)) {
    throw Error(ErrorKind::kUsage, "--label ", text, ": ", name,
                " is not a valid label name ([a-zA-Z_][a-zA-Z0-9_]*)");
  }
  if (name.rfind("__", 0) == 0 || AgentSets(name)) {
    throw Error(ErrorKind::kUsage, "--label ", text, ": ", name,
                " is reserved (names starting with __, and service_name, pid and go_version, "
                "are set by the agent; see --service-name-from)");
  }
  if (value.empty()) {
    throw Error(ErrorKind::kUsage, "--label ", text, ": the value is empty");
  }
  return {name, value};
}

void CheckExtraLabels(const std::vector<PushLabel>& extras) {
  std::set<std::string> names;
  for (const PushLabel& l : extras) {
    if (!names.insert(l.first).second) {
      throw Error(ErrorKind::kUsage, "--label ", l.first, " is given twice");
    }
  }
  if (extras.size() + kAgentLabels > kMaxLabelsPerSeries) {
    throw Error(ErrorKind::kUsage, "too many --label options: ", extras.size(), " plus the ",
                kAgentLabels, " the agent sets is over Pyroscope's limit of ", kMaxLabelsPerSeries,
                " labels per series");
  }
}

std::vector<PushLabel> PushSeriesLabels(const GoProcess& process,
                                        const std::string& service_name_from,
                                        const std::vector<PushLabel>& extras, bool pyroscope,
                                        std::string_view profile_name) {
  std::vector<PushLabel> labels = {
      {"__name__", std::string(profile_name)},
      {"service_name", ValidUtf8(ServiceNameOf(process.facts, service_name_from))},
      {"pid", std::to_string(process.facts.pid)},
  };
  if (!process.exe.go_version.empty())
    labels.emplace_back("go_version", ValidUtf8(process.exe.go_version));
  if (pyroscope) labels.emplace_back("__delta__", "false");
  for (auto& [identity_name, value] : IdentityLabels(process.facts.identity)) {
    // A name for the binding: clang 14 refuses a lambda capturing a binding.
    const std::string& name = identity_name;
    const bool given = std::any_of(extras.begin(), extras.end(),
                                   [&](const PushLabel& e) { return e.first == name; });
    if (!given) labels.emplace_back(name, ValidUtf8(value));
  }
  // An empty service name (an empty comm) would be replaced by the server.
  if (labels[1].second.empty()) labels[1].second = "unknown_service";
  labels.insert(labels.end(), extras.begin(), extras.end());
  std::sort(labels.begin(), labels.end());
  return labels;
}

}  // namespace goheap2pprof
