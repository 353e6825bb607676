#include "agent/watch/process.h"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "proc/procfs.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace goheap2pprof {

std::optional<ZombieStat> ParseZombieStat(std::string_view line) {
  // comm may hold spaces and ')': the fields start after the last ')'.
  size_t close = line.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(close + 1);
  std::vector<std::string_view> fields;
  while (!rest.empty() && fields.size() < 64) {
    size_t start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    rest = rest.substr(start);
    size_t end = rest.find_first_of(" \n");
    fields.push_back(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  }
  // fields[0] is field 3 (state); field N is fields[N - 3].
  if (fields.size() < 50 || fields[0].size() != 1) return std::nullopt;
  ZombieStat z;
  z.state = fields[0][0];
  auto parse = [](std::string_view t, auto& out) {
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    return ec == std::errc() && p == t.data() + t.size();
  };
  if (!parse(fields[22 - 3], z.start_time) || !parse(fields[52 - 3], z.exit_code)) {
    return std::nullopt;
  }
  return z;
}

ProcessEndObserver::ProcessEndObserver(pid_t pid, uint64_t start_time)
    : pid_(pid), start_time_(start_time) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) {
    int err = errno;
    if (err == ESRCH) throw Error(ErrorKind::kNoSuchProcess, "no process with pid ", pid);
    throw Error(ErrorKind::kInternal, "pidfd_open(", pid, "): ", std::strerror(err));
  }
  pidfd_.Reset(fd);
  // The pid may have been reused between reading its start time and opening
  // the pidfd: then the pidfd names the wrong process.
  if (Exited()) return;
  ProcStat now = ReadProcStat(pid);
  if (now.start_time != start_time) {
    throw Error(ErrorKind::kNoSuchProcess, "process ", pid, " exited (its pid now names another)");
  }
}

bool ProcessEndObserver::Exited() const {
  pollfd p{pidfd_.get(), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

ProcessEnd ProcessEndObserver::Observe() const {
  ProcessEnd end;
  std::optional<std::string> text = ReadProcFileIfPresent(pid_, "stat");
  if (!text) {
    end.status_unknown_because =
        "its parent reaped it before its exit status could be read (a process that is not "
        "watch's child shows its status only while it is a zombie)";
    return end;
  }
  std::optional<ZombieStat> z = ParseZombieStat(*text);
  if (!z || z->start_time != start_time_) {
    end.status_unknown_because =
        "its parent reaped it before its exit status could be read (the pid names another "
        "process now)";
  } else if (z->state != 'Z') {
    end.status_unknown_because =
        std::string("it was in state ") + z->state + ", not a zombie, when its end was reported";
  } else {
    end.wait_status = z->exit_code;
  }
  return end;
}

EndSummary DescribeEnd(const ProcessEnd& end, std::optional<uint64_t> oom_kills_before,
                       std::optional<uint64_t> oom_kills_after) {
  EndSummary s;
  if (end.wait_status) {
    int st = *end.wait_status;
    if (WIFSIGNALED(st)) {
      s.how = "signal";
      s.signal = WTERMSIG(st);
      const char* name = sigabbrev_np(*s.signal);
      s.text = "killed by signal " + std::to_string(*s.signal) +
               (name ? std::string(" (SIG") + name + ")" : std::string());
    } else {
      s.how = "exit";
      s.exit_code = WEXITSTATUS(st);
      s.text = "exited with code " + std::to_string(*s.exit_code);
    }
  } else {
    s.how = "unknown";
    s.text = "ended; exit status unknown: " + end.status_unknown_because;
  }
  if (oom_kills_before && oom_kills_after) {
    s.oom_kill_rose = *oom_kills_after > *oom_kills_before;
    if (*s.oom_kill_rose) {
      s.text += "; its memory cgroup's oom_kill counter rose from " +
                std::to_string(*oom_kills_before) + " to " + std::to_string(*oom_kills_after) +
                " while it was watched";
      if (s.signal == SIGKILL) {
        s.text += ": the OOM killer killed it";
      } else if (!s.signal && !s.exit_code) {
        s.text +=
            ": most likely the OOM killer killed it (another process of the cgroup "
            "may have been the victim)";
      } else {
        s.text += " (another process of the cgroup was the victim)";
      }
    } else {
      s.text += "; its memory cgroup's oom_kill counter did not change while it was watched (" +
                std::to_string(*oom_kills_after) + "): not an OOM kill";
    }
  } else {
    s.text += "; no oom_kill counter could be read for its memory cgroup";
  }
  return s;
}

}  // namespace goheap2pprof
