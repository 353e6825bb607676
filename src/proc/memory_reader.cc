#include "proc/memory_reader.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "base/bytes.h"
#include "base/error.h"
#include "base/side_by_side.h"
#include "proc/procfs.h"

namespace goheap2pprof {

void MemoryReader::ReadMany(std::span<ReadRequest> requests) {
  for (ReadRequest& r : requests) r.ok = TryRead(r.addr, r.dst);
}

void MemoryReader::Read(uint64_t addr, std::span<uint8_t> dst, std::string_view what) {
  if (!TryRead(addr, dst)) {
    throw Error(ErrorKind::kMalformed, what, " at ", Hex(addr), " (", dst.size(),
                " bytes) is not mapped in the target");
  }
}

uint64_t MemoryReader::ReadU64(uint64_t addr, std::string_view what) {
  uint8_t buf[8];
  Read(addr, buf, what);
  return LoadU64(buf);
}

uint32_t MemoryReader::ReadU32(uint64_t addr, std::string_view what) {
  uint8_t buf[4];
  Read(addr, buf, what);
  return LoadU32(buf);
}

// ---------------------------------------------------------------------------

namespace {
// The kernel caps one process_vm_readv at IOV_MAX iovecs per side.
constexpr size_t kMaxIov = 1024;
}  // namespace

ProcessMemoryReader::ProcessMemoryReader(pid_t pid) : pid_(pid) {}

ProcessMemoryReader::~ProcessMemoryReader() = default;

void ProcessMemoryReader::ThrowFor(int err, uint64_t addr, size_t len) const {
  if (err == ESRCH) {
    throw Error(ErrorKind::kNoSuchProcess, "process ", pid_, " exited while reading ", len,
                " bytes at ", Hex(addr));
  }
  if (err == EPERM || err == EACCES) {
    throw Error(ErrorKind::kPermission, "not permitted to read memory of process ", pid_, " (",
                std::strerror(err), ")");
  }
  throw Error(ErrorKind::kIo, "reading ", len, " bytes at ", Hex(addr), " of process ", pid_, ": ",
              std::strerror(err));
}

bool ProcessMemoryReader::ReadViaProcMem(uint64_t addr, std::span<uint8_t> dst) {
  if (!mem_fd_.valid()) {
    std::string path = ProcPath(pid_, "mem");
    mem_fd_.Reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!mem_fd_.valid()) ThrowFor(errno == ENOENT ? ESRCH : errno, addr, dst.size());
  }
  size_t done = 0;
  while (done < dst.size()) {
    if (addr + done > static_cast<uint64_t>(INT64_MAX)) return false;
    ++stats_.syscalls;
    ssize_t n =
        pread(mem_fd_.get(), dst.data() + done, dst.size() - done, static_cast<off_t>(addr + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EIO || errno == EFAULT) return false;  // unmapped
      ThrowFor(errno, addr, dst.size());
    }
    if (n == 0) {
      // The address space is gone: the process exited (mm released).
      if (kill(pid_, 0) != 0 && errno == ESRCH) ThrowFor(ESRCH, addr, dst.size());
      return false;
    }
    done += static_cast<size_t>(n);
    stats_.bytes_read += static_cast<uint64_t>(n);
  }
  return true;
}

bool ProcessMemoryReader::TryRead(uint64_t addr, std::span<uint8_t> dst) {
  ReadRequest r{addr, dst, false};
  ReadMany(std::span<ReadRequest>(&r, 1));
  return r.ok;
}

void ProcessMemoryReader::ReadAlone(ReadRequest& request, ReadStats& stats) const {
  iovec l{request.dst.data(), request.dst.size()};
  iovec r{reinterpret_cast<void*>(request.addr), request.dst.size()};
  ++stats.syscalls;
  ssize_t g = process_vm_readv(pid_, &l, 1, &r, 1, 0);
  if (g < 0 && errno != EFAULT && errno != EIO) ThrowFor(errno, request.addr, request.dst.size());
  request.ok = g == static_cast<ssize_t>(request.dst.size());
  if (g > 0) stats.bytes_read += static_cast<uint64_t>(g);
}

namespace {

// Marks done the requests of a batch that `got` bytes fully cover, in order;
// returns how many.
size_t MarkCovered(std::span<ReadRequest> batch, size_t got) {
  size_t covered = got;
  size_t k = 0;
  while (k < batch.size() && batch[k].dst.size() <= covered) {
    covered -= batch[k].dst.size();
    batch[k].ok = true;
    ++k;
  }
  return k;
}

}  // namespace

size_t ProcessMemoryReader::ReadVectored(std::span<ReadRequest> requests, ReadStats& stats) const {
  // Batch up to kMaxIov requests per process_vm_readv. The call stops at the
  // first remote iovec that faults, so on a short read the requests it
  // fully covered are done and the failing one is retried alone to learn
  // whether it is unmapped.
  size_t i = 0;
  std::vector<iovec> local, remote;
  while (i < requests.size()) {
    size_t n = std::min(kMaxIov, requests.size() - i);
    local.clear();
    remote.clear();
    size_t total = 0;
    for (size_t k = 0; k < n; ++k) {
      ReadRequest& r = requests[i + k];
      r.ok = false;
      local.push_back({r.dst.data(), r.dst.size()});
      remote.push_back({reinterpret_cast<void*>(r.addr), r.dst.size()});
      total += r.dst.size();
    }
    ++stats.syscalls;
    ssize_t got = process_vm_readv(pid_, local.data(), n, remote.data(), n, 0);
    if (got < 0) {
      int err = errno;
      if (err == ENOSYS) return i;
      if (err == EFAULT || err == EIO) {
        // The first request faulted: mark it, continue after it.
        if (n == 1) {
          requests[i].ok = false;
          ++i;
          continue;
        }
        // Retry the first one alone to classify it.
        ReadAlone(requests[i], stats);
        ++i;
        continue;
      }
      if (err == EPERM && i == 0 && !mem_fd_.valid()) {
        // Some kernels allow /proc/<pid>/mem where process_vm_readv is
        // refused (e.g. under a seccomp filter); try it before giving up.
        return i;
      }
      ThrowFor(err, requests[i].addr, requests[i].dst.size());
    }
    stats.bytes_read += static_cast<uint64_t>(got);
    if (static_cast<size_t>(got) == total) {
      for (size_t k = 0; k < n; ++k) requests[i + k].ok = true;
      i += n;
      continue;
    }
    // Partial: mark the fully covered prefix, then handle the next request alone.
    const size_t k = MarkCovered(requests.subspan(i, n), static_cast<size_t>(got));
    i += k;
    if (k < n) {
      ReadAlone(requests[i], stats);
      ++i;
    }
  }
  return requests.size();
}

namespace {

// A batch of at least this many bytes is read by two threads, each with its
// own system calls: the kernel's copy is most of a large read (the repeated
// capture of 250k buckets reads 88 MB), and one core copies while the other
// idles. Below it a thread costs about what it saves.
constexpr size_t kParallelReadBytes = size_t{4} << 20;

// The index that splits requests into two halves of about equal bytes, or 0
// when the batch is too small to split.
size_t ParallelSplit(std::span<const ReadRequest> requests) {
  size_t total = 0;
  for (const ReadRequest& r : requests) total += r.dst.size();
  if (requests.size() < 2 || total < kParallelReadBytes) return 0;
  size_t half = 0, i = 0;
  while (i + 1 < requests.size() && half < total / 2) half += requests[i++].dst.size();
  return i;
}

}  // namespace

void ProcessMemoryReader::ReadMany(std::span<ReadRequest> requests) {
  // Requests from fallback_from on are read through /proc/<pid>/mem.
  size_t fallback_from = 0;
  if (!use_proc_mem_) {
    const size_t split = ParallelSplit(requests);
    ReadStats stats;
    fallback_from = split == 0 ? ReadVectored(requests, stats) : ReadHalves(requests, split, stats);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.syscalls += stats.syscalls;
    stats_.bytes_read += stats.bytes_read;
  }
  if (fallback_from == requests.size()) return;
  std::lock_guard<std::mutex> lock(mu_);
  use_proc_mem_ = true;
  for (size_t k = fallback_from; k < requests.size(); ++k)
    requests[k].ok = ReadViaProcMem(requests[k].addr, requests[k].dst);
}

size_t ProcessMemoryReader::ReadHalves(std::span<ReadRequest> requests, size_t split,
                                       ReadStats& stats) const {
  ReadStats first_stats, second_stats;
  size_t first_from = split, second_from = requests.size() - split;
  RunSideBySide([&] { first_from = ReadVectored(requests.first(split), first_stats); },
                [&] { second_from = ReadVectored(requests.subspan(split), second_stats); });
  stats.syscalls += first_stats.syscalls + second_stats.syscalls;
  stats.bytes_read += first_stats.bytes_read + second_stats.bytes_read;
  // A fallback re-reads everything after the first request not read (some
  // of the second half, already read, again: harmless and rare).
  if (first_from < split) return first_from;
  return split + second_from;
}

// ---------------------------------------------------------------------------

void TestMemory::Map(uint64_t addr, std::vector<uint8_t> bytes) {
  ranges_[addr] = std::move(bytes);
}

void TestMemory::PutU64(uint64_t addr, uint64_t value) {
  auto it = ranges_.upper_bound(addr);
  if (it == ranges_.begin()) throw Error(ErrorKind::kInternal, "PutU64 outside test memory");
  --it;
  uint64_t off = addr - it->first;
  if (off + 8 > it->second.size()) throw Error(ErrorKind::kInternal, "PutU64 outside test memory");
  std::memcpy(it->second.data() + off, &value, 8);
}

bool TestMemory::TryRead(uint64_t addr, std::span<uint8_t> dst) {
  std::lock_guard<std::mutex> lock(*mu_);
  if (hook_) hook_(addr, dst.size());
  ++stats_.syscalls;
  auto it = ranges_.upper_bound(addr);
  if (it == ranges_.begin()) return false;
  --it;
  uint64_t off = addr - it->first;
  if (off > it->second.size() || dst.size() > it->second.size() - off) return false;
  if (!dst.empty()) std::memcpy(dst.data(), it->second.data() + off, dst.size());
  stats_.bytes_read += dst.size();
  return true;
}

}  // namespace goheap2pprof
