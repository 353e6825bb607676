#include "base/side_by_side.h"

#include <sched.h>

#include <algorithm>
#include <exception>
#include <future>
#include <system_error>
#include <thread>

namespace goheap2pprof {

namespace {

// RunSideBySide; without `fallback`, returns false (having run nothing) when
// no thread can be had.
bool Run(const std::function<void()>& here, const std::function<void()>& there, bool fallback) {
  // The task keeps an exception from `there` in its future, on whichever
  // thread it runs.
  std::packaged_task<void()> there_task(there);
  std::future<void> there_done = there_task.get_future();
  std::thread thread;
  try {
    thread = std::thread(std::ref(there_task));
  } catch (const std::system_error&) {
    // Boundary: no thread to be had (a limit on threads); `there` runs here
    // after `here`, below, or neither runs.
    if (!fallback) return false;
  }
  std::exception_ptr here_error;
  try {
    here();
  } catch (...) {
    // Boundary: `there` still runs (or is joined) before `here`'s error goes
    // on; the thread reads the caller's state until then.
    here_error = std::current_exception();
  }
  if (thread.joinable()) {
    thread.join();
  } else {
    there_task();
  }
  if (here_error) std::rethrow_exception(here_error);
  there_done.get();
  return true;
}

}  // namespace

void RunSideBySide(const std::function<void()>& here, const std::function<void()>& there) {
  Run(here, there, /*fallback=*/true);
}

bool TryRunSideBySide(const std::function<void()>& here, const std::function<void()>& there) {
  return CpusAvailable() >= 2 && Run(here, there, /*fallback=*/false);
}

int CpusAvailable() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

}  // namespace goheap2pprof
