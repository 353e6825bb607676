#include "cli/target_flags.h"

#include <optional>

#include "base/error.h"
#include "proc/procfs.h"
#include "runtime/bucket_layout.h"

namespace goheap2pprof {

void AddTargetFlags(CLI::App& app, TargetFlags& flags, const TargetFlagHelp& help) {
  if (help.pid != nullptr) {
    flags.pid_option = app.add_option("pid", flags.pid_text, help.pid);
    if (help.pid_required) flags.pid_option->required();
  }
  if (help.core != nullptr) {
    flags.core_option = app.add_option("--core", flags.core, help.core);
    if (flags.pid_option != nullptr) flags.core_option->excludes(flags.pid_option);
  }
}

void AddExecutableFlags(CLI::App& app, TargetFlags& flags, const TargetFlagHelp& help) {
  flags.force_needs_exe = help.force_needs_exe;
  flags.exe_option = app.add_option("--exe", flags.executable.path, help.exe);
  flags.force_option = app.add_flag("--force", flags.executable.force, help.force);
  if (help.assume_layout != nullptr) {
    flags.assume_layout_option =
        app.add_option("--assume-go-layout", flags.assume_layout, help.assume_layout);
  }
}

void CheckTargetFlags(TargetFlags& flags) {
  if (flags.assume_layout_option != nullptr && flags.assume_layout_option->count() > 0) {
    flags.executable.assume_go_layout = ParseAssumedLayout(flags.assume_layout);
  }
  if (!flags.force_needs_exe || flags.force_option->count() == 0) return;
  if (flags.exe_option->count() > 0) return;
  if (flags.core_option == nullptr) throw Error(ErrorKind::kUsage, "--force requires --exe");
  if (flags.core_option->count() == 0) {
    throw Error(ErrorKind::kUsage, "--force requires --exe or --core");
  }
}

pid_t TargetPid(const TargetFlags& flags, const std::string& hint) {
  std::optional<pid_t> pid = ParsePid(flags.pid_text);
  if (pid) return *pid;
  Error e(ErrorKind::kUsage, "\"", flags.pid_text, "\" is not a process id");
  if (!hint.empty()) e.WithHint(hint);
  throw e;
}

}  // namespace goheap2pprof
