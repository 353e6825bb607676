// Confinement of a capture worker (agent/worker/worker.h), applied by the worker to
// itself once, before it reads a byte of any target (first loading what a
// dynamic build loads on first use and a capture may need: Capstone):
//   - resource limits: address space and CPU time (a runaway parse ends in
//     std::bad_alloc or SIGXCPU/SIGKILL, never in the server), no core files,
//     few open files; oom_score_adj 1000 (the kernel's first choice);
//   - started as plain root (every capability, outside the systemd unit and
//     the chart), an unprivileged user (--worker-uid, nobody by default)
//     that keeps CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH only: what the
//     unit's DynamicUser and the chart's uid 0 hold;
//   - no_new_privs, and not dumpable (other processes cannot ptrace it);
//   - a seccomp filter (libseccomp) allowing only the system calls a capture
//     makes: reading target memory (process_vm_readv), opening files for
//     reading only (write, create, truncate or append flags: EACCES) and
//     reading /proc and executable files, mapping them privately and never
//     executable (EPERM), memory management, the clock, I/O on the already
//     open request socket, fcntl for descriptor and status flags only,
//     threads of its own (clone with CLONE_THREAD and no namespace flag;
//     the gzip thread) and signals to itself (abort). Anything else, a new
//     process or a signal to another one included, kills the worker with
//     SIGSYS, which the server answers with 500 and counts.
// docs/security.md lists, call by call, what a worker that runs an
// attacker's code can still do.
// Which paths a worker may read is not restricted. Landlock would, but a
// Landlock domain also denies ptrace access to processes outside it
// (process_vm_readv: EPERM; opening /proc/<pid>/mem or exe: EACCES), so it
// needs the server to open each capture's handles for the worker (README,
// "Security model").
#pragma once

#include <cstdint>

namespace goheap2pprof {

struct SandboxLimits {
  uint64_t address_space_bytes = 0;
  uint64_t cpu_seconds = 0;
  // Who a worker started as plain root becomes; 0: it stays root.
  uint32_t uid = 0;
  uint32_t gid = 0;
};

// Throws Error(kInternal) if a step fails: a worker never runs unconfined.
void EnterCaptureSandbox(const SandboxLimits& limits);

}  // namespace goheap2pprof
