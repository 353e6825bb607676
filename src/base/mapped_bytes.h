// The bytes of a file (or of a buffer standing in for one) with an address
// that stays put for the object's life, so parsers can keep spans into them.
// Three ways to hold them, chosen by who controls the file:
//
//  - Map: the file mapped privately. Only for files the user controls (a
//    core file named on the command line): a mapped file that shrinks
//    kills the reader with SIGBUS on the next touch of a vanished page.
//  - ReadOnDemand: an address range reserved (anonymous, so untouched pages
//    cost nothing) and filled with pread, a 64 KiB chunk at a time, when a
//    range is first asked for. For files the target controls (its
//    executable and mapped files under /proc/<pid>/...): if the target
//    truncates one, pread comes back short and Range throws kIo, instead of
//    a signal.
//  - Own: a vector (tests, fuzzers), or Zeroed: a writable anonymous
//    mapping for building an image piece by piece.
//
//   MappedBytes file = MappedBytes::ReadOnDemand(std::move(fd), size, "/proc/1/exe");
//   std::optional<Bytes> head = file.Range(0, 64);  // nullopt: not in the file
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/bytes.h"
#include "base/error.h"
#include "base/expected.h"
#include "base/unique_fd.h"

namespace goheap2pprof {

class MappedBytes {
 public:
  MappedBytes() = default;
  MappedBytes(MappedBytes&&) noexcept;
  MappedBytes& operator=(MappedBytes&&) noexcept;
  ~MappedBytes();

  // How OpenFile holds the file (see above).
  enum class Access { kMap, kReadOnDemand };
  // Opens path, named `name` in messages, and holds it as `access` says. A
  // target may plant anything where we look: only a regular file is ever
  // opened for reading (a device, FIFO or socket is refused after an O_PATH
  // lookup, before its own open could act), never blocking or taking a
  // terminal. Errors as values:
  // kPermission or kIo if it cannot be opened, `not_regular` if it is not a
  // regular file. Throws kIo only if memory cannot be reserved or mapped.
  static Expected<MappedBytes> OpenFile(const std::string& path, const std::string& name,
                                        Access access, ErrorKind not_regular);

  static MappedBytes Own(std::vector<uint8_t> bytes);
  // Maps size bytes of fd privately (writable copy-on-write: libelf may
  // convert data in place, which must never reach the file). Throws kIo.
  static MappedBytes Map(const UniqueFd& fd, size_t size, const std::string& name);
  // Keeps fd and reads from it on demand. Throws kIo if the address range
  // cannot be reserved.
  static MappedBytes ReadOnDemand(UniqueFd fd, size_t size, std::string name);
  // size zero bytes, writable through writable_data(). Throws kIo.
  static MappedBytes Zeroed(size_t size, const std::string& name);

  size_t size() const { return size_; }
  // The file descriptor of a ReadOnDemand file (for libelf's own preads);
  // -1 otherwise.
  int fd() const { return fd_.get(); }
  // Zeroed only.
  uint8_t* writable_data() { return const_cast<uint8_t*>(data_); }

  // [offset, offset+len), valid as long as this; nullopt if the range is
  // not inside the file's size when opened. Throws kIo if the file has
  // since shrunk (ReadOnDemand) or cannot be read.
  std::optional<Bytes> Range(uint64_t offset, uint64_t len) const;
  // The whole file (for ReadOnDemand, reads all of it).
  Bytes All() const { return *Range(0, size_); }
  // Copies [offset, offset+dst.size()) into dst without keeping a copy
  // here; false if the range is not inside the file. Throws as Range.
  bool CopyTo(uint64_t offset, std::span<uint8_t> dst) const;

 private:
  // munmap on destruction.
  struct Region {
    void* addr = nullptr;
    size_t size = 0;
    Region() = default;
    Region(void* a, size_t s) : addr(a), size(s) {}
    Region(Region&& other) noexcept;
    Region& operator=(Region&& other) noexcept;
    ~Region();
  };
  // ReadOnDemand's record of the chunks already read. Behind a pointer so
  // the mutex does not make the type immovable.
  struct Loaded {
    std::mutex mu;
    std::vector<bool> chunks;
  };

  static Region Reserve(size_t size, const std::string& name);
  // Reads the chunks of [offset, offset+len) not read yet.
  void Load(uint64_t offset, uint64_t len) const;
  // pread of exactly dst.size() bytes at offset; throws kIo when short.
  void Pread(uint64_t offset, std::span<uint8_t> dst) const;

  std::string name_;
  std::vector<uint8_t> owned_;
  Region region_;
  UniqueFd fd_;
  std::unique_ptr<Loaded> loaded_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace goheap2pprof
