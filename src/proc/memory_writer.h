// The one way goheap2pprof writes to a target: one aligned 8-byte word with
// process_vm_writev, for `goheap2pprof enable-sampling` (app/enable_sampling.h)
// and nothing else. Never ptrace, never /proc/<pid>/mem, never a stop of the
// target. Kept apart from MemoryReader so that no capture path (the CLI
// capture, serve, push, watch, the agent's workers) holds a writer: they take
// a MemoryReader, which has no write.
//
//   ProcessWordWriter w(pid);
//   w.WriteU64(rate_addr, 524288);  // throws Error on failure
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace goheap2pprof {

// Writes one aligned 8-byte word of a target. An interface so that the
// verify-and-retry logic above it can be tested with a fake.
class WordWriter {
 public:
  virtual ~WordWriter() = default;
  // Writes value at addr (8-aligned, else Error(kInternal): the caller
  // proves alignment first). Throws Error: kNoSuchProcess (the process is
  // gone), kPermission (not allowed: ptrace access mode attach, as for
  // reading), kMalformed (addr not mapped writable in the target), kIo.
  virtual void WriteU64(uint64_t addr, uint64_t value) = 0;
};

// A live process's memory, written with process_vm_writev.
class ProcessWordWriter : public WordWriter {
 public:
  explicit ProcessWordWriter(pid_t pid) : pid_(pid) {}
  void WriteU64(uint64_t addr, uint64_t value) override;

 private:
  pid_t pid_;
};

}  // namespace goheap2pprof
