#include "agent/worker/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>

#include "base/error.h"
#include "gobin/capstone_library.h"

namespace goheap2pprof {
namespace {

void SetLimit(int resource, rlim_t soft, rlim_t hard, const char* name) {
  rlimit rl{soft, hard};
  if (setrlimit(resource, &rl) != 0) {
    throw Error(ErrorKind::kInternal, "worker: setrlimit(", name, "): ", std::strerror(errno));
  }
}

// What a capture does, by system call. Reading files: the executable and
// its mapped libraries through /proc/<pid>/{exe,map_files,root}, /proc text
// files. Memory: the allocator and the mapped ELF images. The socket: read
// and write on the inherited descriptor.
constexpr int kAllowed[] = {
    SCMP_SYS(read),
    SCMP_SYS(pread64),
    SCMP_SYS(readv),
    SCMP_SYS(write),
    SCMP_SYS(writev),
    SCMP_SYS(close),
    SCMP_SYS(fstat),
    SCMP_SYS(newfstatat),
    SCMP_SYS(statx),
    SCMP_SYS(stat),
    SCMP_SYS(lstat),
    SCMP_SYS(lseek),
    SCMP_SYS(readlink),
    SCMP_SYS(readlinkat),
    SCMP_SYS(getdents64),
    SCMP_SYS(munmap),
    SCMP_SYS(mremap),
    SCMP_SYS(madvise),
    SCMP_SYS(brk),
    SCMP_SYS(process_vm_readv),
    SCMP_SYS(clock_gettime),
    SCMP_SYS(clock_nanosleep),
    SCMP_SYS(nanosleep),
    SCMP_SYS(gettimeofday),
    SCMP_SYS(getrusage),
    SCMP_SYS(getpid),
    SCMP_SYS(gettid),
    SCMP_SYS(futex),
    SCMP_SYS(rt_sigreturn),
    SCMP_SYS(rt_sigprocmask),
    SCMP_SYS(rt_sigaction),
    SCMP_SYS(exit),
    SCMP_SYS(exit_group),
    SCMP_SYS(poll),
    SCMP_SYS(ppoll),
    SCMP_SYS(restart_syscall),
    SCMP_SYS(getrandom),
    SCMP_SYS(sysinfo),
    // A thread's start (the profile is gzipped on a second thread): see
    // the clone rules below.
    SCMP_SYS(set_robust_list),
    SCMP_SYS(rseq),
    SCMP_SYS(sched_yield),
    // Sanitizer builds give each thread a signal stack and read its
    // attributes (CPU affinity is public in /proc/<pid>/status anyway).
    SCMP_SYS(sigaltstack),
    SCMP_SYS(sched_getaffinity),
};

// Adds one rule; `sys` < 0 (a call this architecture does not have: open
// and stat on arm64, fcntl64 on 64-bit ones) adds nothing.
void AddRule(scmp_filter_ctx ctx, uint32_t action, int sys,
             std::initializer_list<scmp_arg_cmp> args = {}) {
  if (sys < 0) return;
  const int rc = seccomp_rule_add_array(ctx, action, sys, static_cast<unsigned>(args.size()),
                                        args.size() ? args.begin() : nullptr);
  if (rc != 0) {
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, sys);
    std::string what = name ? name : std::to_string(sys);
    free(name);
    throw Error(ErrorKind::kInternal, "worker: seccomp_rule_add(", what, "): ", std::strerror(-rc));
  }
}

// Files are opened for reading only: a worker creates, truncates or writes
// no file, whatever it opens. An open asking for more fails with EACCES (not
// a kill: it is a refusal, as a read-only file system would give). Which
// files it may read is not restricted: see agent/worker/sandbox.h.
void AllowReadOnlyOpens(scmp_filter_ctx ctx) {
  constexpr scmp_datum_t kWriteFlags =
      O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND | __O_TMPFILE;
  struct OpenCall {
    int sys;
    unsigned flags_arg;
  };
  for (OpenCall call : {OpenCall{SCMP_SYS(openat), 2}, OpenCall{SCMP_SYS(open), 1}}) {
    AddRule(ctx, SCMP_ACT_ALLOW, call.sys,
            {scmp_arg_cmp{call.flags_arg, SCMP_CMP_MASKED_EQ, kWriteFlags, 0}});
    for (scmp_datum_t bit = 1; bit != 0 && bit <= kWriteFlags; bit <<= 1) {
      if ((kWriteFlags & bit) == 0) continue;
      AddRule(ctx, SCMP_ACT_ERRNO(EACCES), call.sys,
              {scmp_arg_cmp{call.flags_arg, SCMP_CMP_MASKED_EQ, bit, bit}});
    }
  }
}

// fcntl: only reading and setting the worker's own descriptor and status
// flags. F_SETOWN, F_SETSIG and O_ASYNC together make the kernel send any
// signal to any process the worker may signal (as root: every process);
// F_SETLEASE and F_NOTIFY signal too; a read lock (F_SETLK, F_OFD_SETLK) on
// a file others write would block them. Every other command, and F_SETFL
// with O_ASYNC, kills the worker (SIGSYS). glibc issues fcntl(2) on 64-bit
// architectures (amd64, arm64) and fcntl64(2) on 32-bit ones, so both are
// filtered alike.
void AllowOwnFcntl(scmp_filter_ctx ctx) {
  for (int sys : {SCMP_SYS(fcntl), SCMP_SYS(fcntl64)}) {
    for (scmp_datum_t cmd : {F_GETFD, F_SETFD, F_GETFL}) {
      AddRule(ctx, SCMP_ACT_ALLOW, sys, {SCMP_A1_32(SCMP_CMP_EQ, cmd)});
    }
    AddRule(ctx, SCMP_ACT_ALLOW, sys,
            {SCMP_A1_32(SCMP_CMP_EQ, F_SETFL), SCMP_A2_64(SCMP_CMP_MASKED_EQ, O_ASYNC, 0)});
  }
}

// Memory: never executable, never shared. New code cannot be mapped or
// made executable (an exploit must reuse the code there is, as systemd's
// MemoryDenyWriteExecute also demands), and no page is shared with
// another process (a futex wake on a shared file mapping would reach the
// processes that map it too). Refused with EPERM, as MemoryDenyWriteExecute
// refuses.
void AllowPrivateDataMappings(scmp_filter_ctx ctx) {
  AddRule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap),
          {SCMP_A2_64(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0),
           SCMP_A3_64(SCMP_CMP_MASKED_EQ, MAP_SHARED, 0)});
  AddRule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mmap),
          {SCMP_A2_64(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC)});
  AddRule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mmap),
          {SCMP_A3_64(SCMP_CMP_MASKED_EQ, MAP_SHARED, MAP_SHARED)});
  AddRule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), {SCMP_A2_64(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)});
  AddRule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mprotect),
          {SCMP_A2_64(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC)});
}

// Threads, never processes: clone only with CLONE_THREAD, and without
// namespace flags (as root a thread could otherwise enter new namespaces).
// clone3 passes its flags in memory a filter cannot read, so it fails with
// ENOSYS and glibc's pthread_create falls back to clone.
void AllowThreadsOnly(scmp_filter_ctx ctx) {
  constexpr scmp_datum_t kMustNot = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID |
                                    CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWUSER | CLONE_PTRACE |
                                    CLONE_VFORK | CLONE_PARENT | CLONE_PIDFD;
  AddRule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone),
          {SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_THREAD | kMustNot, CLONE_THREAD)});
  AddRule(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3));
}

// Under memory pressure the kernel kills a worker, never the server: the
// highest badness adjustment (raising one's own needs no privilege). Where
// /proc/self/oom_score_adj cannot be written (a read-only /proc), the
// worker says so and goes on: the filter and limits, not this, confine it.
void VolunteerForOomKill() {
  const int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  const bool ok = fd >= 0 && write(fd, "1000", 4) == 4;
  const int saved = errno;
  if (fd >= 0) close(fd);
  if (!ok) {
    const std::string note = std::string("goheap2pprof worker: cannot set oom_score_adj 1000: ") +
                             std::strerror(saved) + "\n";
    (void)!write(STDERR_FILENO, note.data(), note.size());
  }
}

constexpr uint64_t CapBit(int cap) { return uint64_t{1} << cap; }

void CheckSyscall(int rc, const char* what) {
  if (rc != 0) throw Error(ErrorKind::kInternal, "worker: ", what, ": ", std::strerror(errno));
}

// The effective capabilities of this process (capget(2); no libcap).
uint64_t EffectiveCapabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  CheckSyscall(static_cast<int>(syscall(SYS_capget, &header, data)), "capget");
  return data[0].effective | uint64_t{data[1].effective} << 32;
}

// Makes `caps` the effective and permitted sets, and the inheritable empty.
void KeepOnlyCapabilities(uint64_t caps) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; ++i) {
    data[i].effective = data[i].permitted = static_cast<uint32_t>(caps >> (32 * i));
  }
  CheckSyscall(static_cast<int>(syscall(SYS_capset, &header, data)), "capset");
}

// Plain root (`sudo goheap2pprof serve`) holds every capability, and some
// opens act with them even read-only: /proc/kmsg consumes the kernel log
// (CAP_SYSLOG), /dev/mem and /proc/kcore read physical memory
// (CAP_SYS_RAWIO). A worker started so becomes uid:gid with no
// supplementary groups, and keeps the two capabilities a capture needs:
//   CAP_SYS_PTRACE       process_vm_readv, /proc/<pid>/{mem,maps,exe,root}
//                        of any process (and Yama's ptrace_scope);
//   CAP_DAC_READ_SEARCH  /proc/<pid>/mem, a 0600 file of the target's
//                        user, and executables its own user could not open.
// Which files and devices it may read is unchanged: CAP_DAC_READ_SEARCH
// reads any file (docs/security.md, the worker's system calls). A worker
// without CAP_SETUID (the unit's DynamicUser, the chart's uid 0 with those
// two) already holds no more, and stays as it is.
void BecomeCaptureUser(uint32_t uid, uint32_t gid) {
  const uint64_t change_ids = CapBit(CAP_SETUID) | CapBit(CAP_SETGID);
  if (uid == 0 || geteuid() != 0 || (EffectiveCapabilities() & change_ids) != change_ids) return;
  // Keep the permitted set across the change of uid, then narrow it.
  CheckSyscall(prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0), "PR_SET_KEEPCAPS");
  // An id this user namespace does not map fails (EINVAL): the worker
  // does not start unconfined, and the log says which flag chooses another.
  if (setgroups(0, nullptr) != 0 || setresgid(gid, gid, gid) != 0 ||
      setresuid(uid, uid, uid) != 0) {
    throw Error(ErrorKind::kInternal, "worker: cannot become uid ", uid, " gid ", gid, ": ",
                std::strerror(errno),
                " (choose them with --worker-uid and --worker-gid; 0 keeps root)");
  }
  KeepOnlyCapabilities(CapBit(CAP_SYS_PTRACE) | CapBit(CAP_DAC_READ_SEARCH));
  CheckSyscall(prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0), "PR_SET_KEEPCAPS");
}

}  // namespace

void EnterCaptureSandbox(const SandboxLimits& limits) {
  // Confined, no library can be mapped (no executable mappings): the one a
  // dynamic build loads when a capture first needs it, Capstone for
  // stripped targets, is loaded now. If it is missing, the captures that
  // need it say so.
  std::string capstone_missing;
  TryCapstone(&capstone_missing);
  if (limits.address_space_bytes) {
    SetLimit(RLIMIT_AS, limits.address_space_bytes, limits.address_space_bytes, "RLIMIT_AS");
  }
  // SIGXCPU at the soft limit, SIGKILL one second later.
  if (limits.cpu_seconds) {
    SetLimit(RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds + 1, "RLIMIT_CPU");
  }
  SetLimit(RLIMIT_CORE, 0, 0, "RLIMIT_CORE");
  VolunteerForOomKill();
  SetLimit(RLIMIT_NOFILE, 64, 64, "RLIMIT_NOFILE");
  // Nothing a worker does creates or grows a file.
  SetLimit(RLIMIT_FSIZE, 0, 0, "RLIMIT_FSIZE");
  // After oom_score_adj: a worker no longer root cannot write it.
  BecomeCaptureUser(limits.uid, limits.gid);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    throw Error(ErrorKind::kInternal, "worker: PR_SET_NO_NEW_PRIVS: ", std::strerror(errno));
  }
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    throw Error(ErrorKind::kInternal, "worker: PR_SET_DUMPABLE: ", std::strerror(errno));
  }

  std::unique_ptr<void, void (*)(scmp_filter_ctx)> ctx(seccomp_init(SCMP_ACT_KILL_PROCESS),
                                                       seccomp_release);
  if (!ctx) throw Error(ErrorKind::kInternal, "worker: seccomp_init failed");
  for (int sys : kAllowed) AddRule(ctx.get(), SCMP_ACT_ALLOW, sys);
  AllowReadOnlyOpens(ctx.get());
  AllowOwnFcntl(ctx.get());
  AllowPrivateDataMappings(ctx.get());
  AllowThreadsOnly(ctx.get());
  // abort() (an assertion, an uncaught exception) signals the process
  // itself: allow exactly that, so such a worker ends with SIGABRT, not
  // SIGSYS, and cannot signal any other process.
  const auto self = static_cast<scmp_datum_t>(getpid());
  AddRule(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(tgkill), {SCMP_A0_32(SCMP_CMP_EQ, self)});
  AddRule(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(kill), {SCMP_A0_32(SCMP_CMP_EQ, self)});
  if (int rc = seccomp_load(ctx.get()); rc != 0) {
    throw Error(ErrorKind::kInternal, "worker: seccomp_load: ", std::strerror(-rc));
  }
}

}  // namespace goheap2pprof
