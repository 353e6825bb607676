// PSI (pressure stall information) triggers for `watch --psi`: the kernel
// wakes us when memory stalls exceed a threshold within a window, so no
// polling is needed. Registered by writing "some|full <stall us> <window us>"
// to a pressure file (a cgroup's memory.pressure or /proc/pressure/memory)
// opened O_RDWR|O_NONBLOCK; POLLPRI then means "fired", POLLERR that the
// source is gone, and closing the descriptor removes the trigger.
//
//   PsiSpec spec = ParsePsiSpec("some:150ms/1s");
//   UniqueFd fd = RegisterPsiTrigger("/proc/pressure/memory", spec);
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/expected.h"
#include "base/unique_fd.h"

namespace goheap2pprof {

struct PsiSpec {
  bool full = false;  // "full": all tasks stalled; "some": at least one
  std::chrono::microseconds stall{0};
  std::chrono::microseconds window{0};
  std::string text;  // as given, for messages
};

// "some:150ms/1s", "full:100ms/2s". Throws kUsage on anything else, including
// windows the kernel rejects (outside 500 ms..10 s, or stall > window).
PsiSpec ParsePsiSpec(std::string_view text);

// The line the kernel expects, NUL included (the kernel replaces the last
// byte written with a NUL, so one must be sent).
std::string PsiTriggerLine(const PsiSpec& spec);

// Registers the trigger. Throws Error with a reason and hint: kIo if PSI is
// absent (no file: kernel without CONFIG_PSI, or booted with psi=0),
// kPermission if the kernel refuses an unprivileged trigger, kUsage if it
// rejects the values.
UniqueFd RegisterPsiTrigger(const std::string& file, const PsiSpec& spec);
// The same with that Error as a value (watch goes on without PSI for a
// process it discovered).
Expected<UniqueFd> TryRegisterPsiTrigger(const std::string& file, const PsiSpec& spec);

}  // namespace goheap2pprof
