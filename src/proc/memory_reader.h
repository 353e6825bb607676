// All target memory goes through MemoryReader: a live process
// (process_vm_readv, falling back to /proc/<pid>/mem) or test memory built in
// a unit test or fuzzer. Readers never write to the target.
//
//   ProcessMemoryReader mem(pid);
//   uint64_t head = mem.ReadU64(mbuckets_addr, "runtime.mbuckets");
//   std::vector<uint8_t> buf(48);
//   if (!mem.TryRead(addr, buf)) { /* unmapped */ }
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"

namespace goheap2pprof {

struct ReadRequest {
  uint64_t addr = 0;
  std::span<uint8_t> dst;
  bool ok = false;  // set by ReadMany: the whole range was read
};

struct ReadStats {
  uint64_t syscalls = 0;    // read system calls issued
  uint64_t bytes_read = 0;  // bytes successfully copied from the target
};

class MemoryReader {
 public:
  virtual ~MemoryReader() = default;

  // Reads all of dst from addr. Returns false if any part of the range is not
  // mapped in the target. Throws Error for process-level failures: the process
  // is gone (kNoSuchProcess) or reading is not allowed (kPermission).
  virtual bool TryRead(uint64_t addr, std::span<uint8_t> dst) = 0;

  // Reads many ranges, setting each request's ok. The default issues one
  // TryRead per request; a live reader batches them into few system calls.
  virtual void ReadMany(std::span<ReadRequest> requests);
  // Whether ReadMany may be called from two threads at once, each with
  // requests of its own (a capture state's revalidation then reads and
  // checks on both).
  virtual bool ConcurrentReadMany() const { return false; }

  virtual ReadStats stats() const { return {}; }

  // Bytes [addr, addr+len) if the reader already holds them locally (a
  // cache), valid until the next call on the reader (a bounded cache may
  // then evict them); nullptr otherwise, and then the caller reads with
  // TryRead. Lets walkers parse without copying.
  virtual const uint8_t* View(uint64_t addr, uint64_t len) {
    (void)addr;
    (void)len;
    return nullptr;
  }

  // TryRead that throws Error(kMalformed) naming `what` when unmapped.
  void Read(uint64_t addr, std::span<uint8_t> dst, std::string_view what);
  uint64_t ReadU64(uint64_t addr, std::string_view what);
  uint32_t ReadU32(uint64_t addr, std::string_view what);
};

// Memory of a live process.
class ProcessMemoryReader : public MemoryReader {
 public:
  explicit ProcessMemoryReader(pid_t pid);
  ~ProcessMemoryReader() override;
  bool TryRead(uint64_t addr, std::span<uint8_t> dst) override;
  void ReadMany(std::span<ReadRequest> requests) override;
  bool ConcurrentReadMany() const override { return true; }
  ReadStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  bool ReadViaProcMem(uint64_t addr, std::span<uint8_t> dst);
  // Reads requests with process_vm_readv (batches of up to IOV_MAX ranges),
  // counting into stats. Returns the index of the first request it could not
  // try because process_vm_readv is unavailable (the caller reads from there
  // through /proc/<pid>/mem), or requests.size(). Safe to call from two
  // threads on disjoint requests.
  size_t ReadVectored(std::span<ReadRequest> requests, ReadStats& stats) const;
  // ReadVectored of requests[0, split) here and of the rest on a second
  // thread, counting into stats; returns where a fallback must start, as
  // ReadVectored does.
  size_t ReadHalves(std::span<ReadRequest> requests, size_t split, ReadStats& stats) const;
  // One request read by itself, after a batch faulted at it: ok if it is
  // mapped whole; throws on an error other than a fault.
  void ReadAlone(ReadRequest& request, ReadStats& stats) const;
  [[noreturn]] void ThrowFor(int err, uint64_t addr, size_t len) const;

  pid_t pid_;
  // Guards what follows: ReadMany runs on two threads at once.
  mutable std::mutex mu_;
  UniqueFd mem_fd_;                         // /proc/<pid>/mem, opened on first fallback
  std::atomic<bool> use_proc_mem_ = false;  // process_vm_readv unavailable (ENOSYS)
  ReadStats stats_;
};

// Sparse memory assembled by tests and fuzzers: byte ranges at addresses;
// everything else reads as unmapped.
class TestMemory : public MemoryReader {
 public:
  void Map(uint64_t addr, std::vector<uint8_t> bytes);
  void PutU64(uint64_t addr, uint64_t value);  // into an existing mapping
  bool TryRead(uint64_t addr, std::span<uint8_t> dst) override;
  // As a process's: reads (and the hook) take turns.
  bool ConcurrentReadMany() const override { return true; }
  ReadStats stats() const override { return stats_; }
  // Called before every read with the range about to be read; lets a test
  // change memory mid-walk (the process "moves on" under the reader) when
  // the reader reaches a given object, whatever the reads before it were.
  void SetReadHook(std::function<void(uint64_t addr, uint64_t len)> hook) {
    hook_ = std::move(hook);
  }

 private:
  std::map<uint64_t, std::vector<uint8_t>> ranges_;                  // start -> bytes
  std::unique_ptr<std::mutex> mu_ = std::make_unique<std::mutex>();  // for TryRead (movable)
  ReadStats stats_;
  std::function<void(uint64_t, uint64_t)> hook_;
};

}  // namespace goheap2pprof
