#include "agent/watch/psi.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <optional>

#include "base/duration.h"
#include "base/error.h"
#include "proc/cgroup.h"
#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

// Whether we hold CAP_SYS_RESOURCE (bit 24 of CapEff): without it, Linux
// 6.4+ accepts only PSI windows that are multiples of 2 s, and says EINVAL.
bool HasCapSysResource() { return (OwnEffectiveCapabilities() >> 24) & 1; }

}  // namespace

PsiSpec ParsePsiSpec(std::string_view text) {
  PsiSpec spec;
  spec.text = std::string(text);
  size_t colon = text.find(':');
  size_t slash = text.find('/');
  std::string_view kind = text.substr(0, colon);
  if (colon == std::string_view::npos || slash == std::string_view::npos || slash < colon ||
      (kind != "some" && kind != "full")) {
    throw Error(ErrorKind::kUsage, "--psi \"", text,
                "\": expected some|full:STALL/WINDOW, e.g. some:150ms/1s");
  }
  spec.full = kind == "full";
  std::optional<std::chrono::microseconds> stall =
      ParseDuration(text.substr(colon + 1, slash - colon - 1));
  std::optional<std::chrono::microseconds> window = ParseDuration(text.substr(slash + 1));
  if (!stall || !window) {
    throw Error(ErrorKind::kUsage, "--psi \"", text,
                "\": bad duration (use us, ms or s, e.g. 150ms)");
  }
  // The kernel's bounds (kernel/sched/psi.c), checked here so the message
  // can say so rather than "Invalid argument".
  if (*window < std::chrono::milliseconds(500) || *window > std::chrono::seconds(10)) {
    throw Error(ErrorKind::kUsage, "--psi \"", text, "\": the window must be 500ms..10s");
  }
  if (*stall == std::chrono::microseconds(0) || *stall > *window) {
    throw Error(ErrorKind::kUsage, "--psi \"", text,
                "\": the stall must be more than 0 and at most the window");
  }
  spec.stall = *stall;
  spec.window = *window;
  return spec;
}

std::string PsiTriggerLine(const PsiSpec& spec) {
  std::string line = std::string(spec.full ? "full " : "some ") +
                     std::to_string(spec.stall.count()) + " " + std::to_string(spec.window.count());
  line.push_back('\0');
  return line;
}

UniqueFd RegisterPsiTrigger(const std::string& file, const PsiSpec& spec) {
  return TryRegisterPsiTrigger(file, spec).value();
}

Expected<UniqueFd> TryRegisterPsiTrigger(const std::string& file, const PsiSpec& spec) {
  // Read-write because the kernel registers a trigger on write(2) only; the
  // open refuses a symlink, a FIFO or anything but a regular (cgroupfs) file.
  UniqueFd fd = OpenRegularFile(file, /*read_write=*/true);
  if (!fd.valid()) {
    int err = errno;
    if (err == ENOENT) {
      return Error(ErrorKind::kIo, "PSI is not available: ", file,
                   " does not exist (a kernel built without CONFIG_PSI, or booted with psi=0)")
          .WithHint("drop --psi, or boot the kernel with psi=1");
    }
    if (err == EACCES || err == EPERM) {
      return Error(ErrorKind::kPermission, "cannot open ", file,
                   " for writing a PSI trigger: ", std::strerror(err))
          .WithHint("run as root or with CAP_SYS_RESOURCE");
    }
    return Error(ErrorKind::kIo, "cannot open ", file, ": ", std::strerror(err));
  }
  const std::string line = PsiTriggerLine(spec);
  if (::write(fd.get(), line.data(), line.size()) < 0) {
    int err = errno;
    if (err == EPERM || err == EACCES) {
      return Error(ErrorKind::kPermission, "the kernel refused the PSI trigger \"", spec.text,
                   "\" on ", file, ": ", std::strerror(err))
          .WithHint(
              "unprivileged PSI triggers need a window that is a multiple of 2s (Linux "
              "6.4+); otherwise run as root or with CAP_SYS_RESOURCE");
    }
    if (err == EOPNOTSUPP) {
      return Error(ErrorKind::kIo, "PSI is disabled in this kernel (", file, ": ",
                   std::strerror(err), ")")
          .WithHint("boot the kernel with psi=1, or drop --psi");
    }
    if (err == EINVAL && spec.window.count() % 2000000 != 0 && !HasCapSysResource()) {
      return Error(ErrorKind::kPermission, "the kernel rejected the PSI trigger \"", spec.text,
                   "\" on ", file, ": ", std::strerror(err), "; without CAP_SYS_RESOURCE (which ",
                   "this process lacks) Linux 6.4+ accepts only windows that are multiples of 2s")
          .WithHint("use a 2s window (e.g. --psi some:300ms/2s), or grant CAP_SYS_RESOURCE");
    }
    return Error(ErrorKind::kUsage, "the kernel rejected the PSI trigger \"", spec.text, "\" on ",
                 file, ": ", std::strerror(err));
  }
  return fd;
}

}  // namespace goheap2pprof
