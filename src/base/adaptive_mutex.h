// A mutex that spins briefly before it sleeps (glibc's adaptive mutex), for
// locks held a short while by two threads that take them very often: a
// capture's walk and build both ask the symbolizer's cache about every new
// PC, and with std::mutex a lock that was taken a moment ago put the other
// thread to sleep in the kernel and woke it again (futex calls and context
// switches were a tenth of a short-stack capture's build). Lockable, as
// std::mutex is:
//
//   AdaptiveMutex mu;
//   std::lock_guard<AdaptiveMutex> lock(mu);
#pragma once

#include <pthread.h>

namespace goheap2pprof {

class AdaptiveMutex {
 public:
  AdaptiveMutex() {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&mu_, &attr);
    pthread_mutexattr_destroy(&attr);
  }
  ~AdaptiveMutex() { pthread_mutex_destroy(&mu_); }
  AdaptiveMutex(const AdaptiveMutex&) = delete;
  AdaptiveMutex& operator=(const AdaptiveMutex&) = delete;

  void lock() { pthread_mutex_lock(&mu_); }
  void unlock() { pthread_mutex_unlock(&mu_); }
  bool try_lock() { return pthread_mutex_trylock(&mu_) == 0; }

 private:
  pthread_mutex_t mu_;
};

}  // namespace goheap2pprof
