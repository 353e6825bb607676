#include "base/side_by_side.h"

#include <exception>
#include <system_error>
#include <thread>

namespace goheap2pprof {

void RunSideBySide(const std::function<void()>& here, const std::function<void()>& there) {
  std::exception_ptr there_error;
  std::thread thread;
  bool threaded = true;
  try {
    thread = std::thread([&] {
      try {
        there();
      } catch (...) {
        there_error = std::current_exception();
      }
    });
  } catch (const std::system_error&) {
    threaded = false;
  }
  std::exception_ptr here_error;
  try {
    here();
  } catch (...) {
    here_error = std::current_exception();
  }
  if (threaded) {
    thread.join();
  } else {
    try {
      there();
    } catch (...) {
      there_error = std::current_exception();
    }
  }
  if (here_error) std::rethrow_exception(here_error);
  if (there_error) std::rethrow_exception(there_error);
}

}  // namespace goheap2pprof
