#include "agent/serve_sandbox.h"

#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "base/error.h"

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
    SCMP_SYS(fcntl),
    SCMP_SYS(getdents64),
    SCMP_SYS(mmap),
    SCMP_SYS(munmap),
    SCMP_SYS(mremap),
    SCMP_SYS(mprotect),
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
    // Sanitizer builds give each thread a signal stack and read its attributes.
    SCMP_SYS(sigaltstack),
    SCMP_SYS(sched_getaffinity),
};

}  // namespace

void EnterCaptureSandbox(const SandboxLimits& limits) {
  if (limits.address_space_bytes) {
    SetLimit(RLIMIT_AS, limits.address_space_bytes, limits.address_space_bytes, "RLIMIT_AS");
  }
  // SIGXCPU at the soft limit, SIGKILL one second later.
  if (limits.cpu_seconds) {
    SetLimit(RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds + 1, "RLIMIT_CPU");
  }
  SetLimit(RLIMIT_CORE, 0, 0, "RLIMIT_CORE");
  SetLimit(RLIMIT_NOFILE, 64, 64, "RLIMIT_NOFILE");
  // Nothing a worker does creates or grows a file.
  SetLimit(RLIMIT_FSIZE, 0, 0, "RLIMIT_FSIZE");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    throw Error(ErrorKind::kInternal, "worker: PR_SET_NO_NEW_PRIVS: ", std::strerror(errno));
  }
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    throw Error(ErrorKind::kInternal, "worker: PR_SET_DUMPABLE: ", std::strerror(errno));
  }

  std::unique_ptr<void, void (*)(scmp_filter_ctx)> ctx(seccomp_init(SCMP_ACT_KILL_PROCESS),
                                                       seccomp_release);
  if (!ctx) throw Error(ErrorKind::kInternal, "worker: seccomp_init failed");
  for (int sys : kAllowed) {
    // Negative numbers are calls this architecture does not have (open,
    // stat on arm64): nothing to allow.
    if (sys < 0) continue;
    if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, sys, 0); rc != 0) {
      throw Error(ErrorKind::kInternal, "worker: seccomp_rule_add(", sys,
                  "): ", std::strerror(-rc));
    }
  }
  // Files are opened for reading only: a worker creates, truncates or
  // writes no file, whatever it opens. An open asking for more fails with
  // EACCES (not a kill: it is a refusal, as a read-only file system would
  // give). Which files it may read is not restricted: see serve_sandbox.h.
  constexpr scmp_datum_t kWriteFlags =
      O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND | __O_TMPFILE;
  struct OpenCall {
    int sys;
    unsigned flags_arg;
  };
  for (OpenCall call : {OpenCall{SCMP_SYS(openat), 2}, OpenCall{SCMP_SYS(open), 1}}) {
    if (call.sys < 0) continue;  // no open(2) on arm64
    const scmp_datum_t zero = 0;
    if (int rc =
            seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, call.sys, 1,
                             scmp_arg_cmp{call.flags_arg, SCMP_CMP_MASKED_EQ, kWriteFlags, zero});
        rc != 0) {
      throw Error(ErrorKind::kInternal, "worker: seccomp_rule_add(open): ", std::strerror(-rc));
    }
    for (scmp_datum_t bit = 1; bit != 0 && bit <= kWriteFlags; bit <<= 1) {
      if ((kWriteFlags & bit) == 0) continue;
      if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EACCES), call.sys, 1,
                                    scmp_arg_cmp{call.flags_arg, SCMP_CMP_MASKED_EQ, bit, bit});
          rc != 0) {
        throw Error(ErrorKind::kInternal, "worker: seccomp_rule_add(open): ", std::strerror(-rc));
      }
    }
  }
  // Threads, never processes: clone only with CLONE_THREAD. clone3 passes
  // its flags in memory a filter cannot read, so it fails with ENOSYS and
  // glibc's pthread_create falls back to clone.
  if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                                scmp_arg_cmp{0, SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD});
      rc != 0) {
    throw Error(ErrorKind::kInternal, "worker: seccomp_rule_add(clone): ", std::strerror(-rc));
  }
  if (SCMP_SYS(clone3) >= 0) {
    if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
        rc != 0) {
      throw Error(ErrorKind::kInternal, "worker: seccomp_rule_add(clone3): ", std::strerror(-rc));
    }
  }
  // abort() (an assertion, an uncaught exception) signals the process
  // itself: allow exactly that, so such a worker ends with SIGABRT, not
  // SIGSYS, and cannot signal any other process.
  const pid_t self = getpid();
  for (int sys : {SCMP_SYS(tgkill), SCMP_SYS(kill)}) {
    if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, sys, 1,
                                  SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(self)));
        rc != 0) {
      throw Error(ErrorKind::kInternal, "worker: seccomp_rule_add(", sys,
                  "): ", std::strerror(-rc));
    }
  }
  if (int rc = seccomp_load(ctx.get()); rc != 0) {
    throw Error(ErrorKind::kInternal, "worker: seccomp_load: ", std::strerror(-rc));
  }
}

}  // namespace goheap2pprof
