#include "base/mapped_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/error.h"
#include "base/huge_pages.h"

namespace goheap2pprof {

namespace {

// Big enough that a section is a few preads, small enough that a lookup of
// a few bytes does not copy much.
constexpr uint64_t kChunk = 64 * 1024;

}  // namespace

MappedBytes::Region::Region(Region&& other) noexcept
    : addr(std::exchange(other.addr, nullptr)), size(std::exchange(other.size, 0)) {}

MappedBytes::Region& MappedBytes::Region::operator=(Region&& other) noexcept {
  if (this != &other) {
    if (addr != nullptr) munmap(addr, size);
    addr = std::exchange(other.addr, nullptr);
    size = std::exchange(other.size, 0);
  }
  return *this;
}

MappedBytes::Region::~Region() {
  if (addr != nullptr) munmap(addr, size);
}

MappedBytes::MappedBytes(MappedBytes&& other) noexcept
    : name_(std::move(other.name_)),
      owned_(std::move(other.owned_)),
      region_(std::move(other.region_)),
      fd_(std::move(other.fd_)),
      loaded_(std::move(other.loaded_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedBytes& MappedBytes::operator=(MappedBytes&& other) noexcept {
  if (this != &other) {
    name_ = std::move(other.name_);
    owned_ = std::move(other.owned_);
    region_ = std::move(other.region_);
    fd_ = std::move(other.fd_);
    loaded_ = std::move(other.loaded_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedBytes::~MappedBytes() = default;

namespace {

Error OpenError(int err, const std::string& name) {
  ErrorKind kind = (err == EACCES || err == EPERM) ? ErrorKind::kPermission : ErrorKind::kIo;
  return Error(kind, "cannot open ", name, ": ", std::strerror(err));
}

}  // namespace

Expected<MappedBytes> MappedBytes::OpenFile(const std::string& path, const std::string& name,
                                            Access access, ErrorKind not_regular) {
  // The path is a target's to choose (its executable, a library, a link it
  // planted), and opening a file for reading is not always harmless: a
  // watchdog device arms, /proc/kmsg consumes the kernel log, a FIFO wakes
  // the writer waiting on it. So the inode is looked up first (O_PATH runs
  // no driver's or FIFO's open), and only a regular file is opened for
  // reading, through that very inode: the path cannot change in between.
  UniqueFd inode(open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!inode.valid()) return OpenError(errno, name);
  struct stat st;
  if (fstat(inode.get(), &st) != 0) {
    return Error(ErrorKind::kIo, "cannot stat ", name, ": ", std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return Error(not_regular, name, " is not a regular file");
  const std::string reopen = "/proc/self/fd/" + std::to_string(inode.get());
  UniqueFd fd(open(reopen.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.valid()) return OpenError(errno, name);
  const size_t size = static_cast<size_t>(st.st_size);
  if (access == Access::kMap) return Map(fd, size, name);
  return ReadOnDemand(std::move(fd), size, name);
}

MappedBytes MappedBytes::Own(std::vector<uint8_t> bytes) {
  MappedBytes out;
  out.owned_ = std::move(bytes);
  out.data_ = out.owned_.data();
  out.size_ = out.owned_.size();
  return out;
}

MappedBytes MappedBytes::Map(const UniqueFd& fd, size_t size, const std::string& name) {
  MappedBytes out;
  out.name_ = name;
  if (size > 0) {
    void* addr = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get(), 0);
    if (addr == MAP_FAILED) {
      throw Error(ErrorKind::kIo, "cannot map ", name, ": ", std::strerror(errno));
    }
    out.region_ = Region(addr, size);
    out.data_ = static_cast<const uint8_t*>(addr);
  }
  out.size_ = size;
  return out;
}

MappedBytes::Region MappedBytes::Reserve(size_t size, const std::string& name) {
  if (size == 0) return Region();
  // MAP_NORESERVE: only the pages written count against memory.
  void* addr = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (addr == MAP_FAILED) {
    throw Error(ErrorKind::kIo, "cannot reserve ", size, " bytes of memory for ", name, ": ",
                std::strerror(errno));
  }
  return Region(addr, size);
}

MappedBytes MappedBytes::ReadOnDemand(UniqueFd fd, size_t size, std::string name) {
  MappedBytes out;
  out.region_ = Reserve(size, name);
  out.name_ = std::move(name);
  out.fd_ = std::move(fd);
  out.loaded_ = std::make_unique<Loaded>();
  out.loaded_->chunks.assign((size + kChunk - 1) / kChunk, false);
  out.data_ = static_cast<const uint8_t*>(out.region_.addr);
  out.size_ = size;
  return out;
}

MappedBytes MappedBytes::Zeroed(size_t size, const std::string& name) {
  MappedBytes out;
  out.region_ = Reserve(size, name);
  out.name_ = name;
  out.data_ = static_cast<const uint8_t*>(out.region_.addr);
  out.size_ = size;
  return out;
}

std::optional<Bytes> MappedBytes::Range(uint64_t offset, uint64_t len) const {
  if (offset > size_ || len > size_ - offset) return std::nullopt;
  if (len == 0) return Bytes();
  if (loaded_) Load(offset, len);
  return Bytes(data_ + offset, len);
}

bool MappedBytes::CopyTo(uint64_t offset, std::span<uint8_t> dst) const {
  if (offset > size_ || dst.size() > size_ - offset) return false;
  if (dst.empty()) return true;
  if (loaded_) {
    Pread(offset, dst);
  } else {
    std::memcpy(dst.data(), data_ + offset, dst.size());
  }
  return true;
}

void MappedBytes::Load(uint64_t offset, uint64_t len) const {
  std::lock_guard<std::mutex> lock(loaded_->mu);
  std::vector<bool>& chunks = loaded_->chunks;
  const uint64_t last = (offset + len - 1) / kChunk;
  uint64_t i = offset / kChunk;
  while (i <= last) {
    if (chunks[i]) {
      ++i;
      continue;
    }
    // One pread for each run of chunks not read yet.
    uint64_t run_end = i;
    while (run_end + 1 <= last && !chunks[run_end + 1]) ++run_end;
    const uint64_t from = i * kChunk;
    const uint64_t to = std::min<uint64_t>((run_end + 1) * kChunk, size_);
    // A large section (the pclntab) is read whole: into huge pages.
    AdviseHugePages(data_ + from, to - from);
    Pread(from, std::span<uint8_t>(const_cast<uint8_t*>(data_) + from, to - from));
    for (uint64_t j = i; j <= run_end; ++j) chunks[j] = true;
    i = run_end + 1;
  }
}

void MappedBytes::Pread(uint64_t offset, std::span<uint8_t> dst) const {
  size_t done = 0;
  while (done < dst.size()) {
    ssize_t n =
        pread(fd_.get(), dst.data() + done, dst.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw Error(ErrorKind::kIo, "cannot read ", name_, " at offset ", Hex(offset + done), ": ",
                  std::strerror(errno));
    }
    if (n == 0) {
      // The file was size_ bytes when opened: someone (the target, for its
      // own files) cut it short since.
      throw Error(ErrorKind::kIo, name_, " shrank while being read: it was ", size_,
                  " bytes when opened and ends before offset ", Hex(offset + done));
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace goheap2pprof
