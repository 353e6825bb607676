#include "pprof/output.h"

#include <fcntl.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <utility>

#include "base/error.h"
#include "base/unique_fd.h"

namespace goheap2pprof {

namespace {

// Owns a z_stream for its whole life, whichever way the function exits.
class ZStream {
 public:
  explicit ZStream(bool deflate) : deflate_(deflate) {}
  ~ZStream() {
    if (!initialized_) return;
    if (deflate_)
      deflateEnd(&s_);
    else
      inflateEnd(&s_);
  }
  z_stream* get() { return &s_; }
  void MarkInitialized() { initialized_ = true; }

 private:
  z_stream s_{};
  bool deflate_;
  bool initialized_ = false;
};

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void WriteAll(int fd, std::string_view data, const std::string& what) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorKind::kIo, "writing ", what, ": ", std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace

std::string Gzip(std::string_view data) {
  ZStream zs(/*deflate=*/true);
  // windowBits 15 + 16 selects the gzip wrapper.
  if (deflateInit2(zs.get(), 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw Error(ErrorKind::kInternal, "zlib deflateInit2 failed");
  }
  zs.MarkInitialized();
  std::string out;
  out.resize(deflateBound(zs.get(), data.size()) + 32);
  zs.get()->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.get()->avail_in = static_cast<uInt>(data.size());
  zs.get()->next_out = reinterpret_cast<Bytef*>(out.data());
  zs.get()->avail_out = static_cast<uInt>(out.size());
  int rc = deflate(zs.get(), Z_FINISH);
  if (rc != Z_STREAM_END) throw Error(ErrorKind::kInternal, "zlib deflate failed: ", rc);
  out.resize(zs.get()->total_out);
  return out;
}

std::string Gunzip(std::string_view data, size_t max_size) {
  ZStream zs(/*deflate=*/false);
  if (inflateInit2(zs.get(), 15 + 32) != Z_OK) {
    throw Error(ErrorKind::kInternal, "zlib inflateInit2 failed");
  }
  zs.MarkInitialized();
  std::string out;
  zs.get()->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.get()->avail_in = static_cast<uInt>(data.size());
  char buf[65536];
  for (;;) {
    zs.get()->next_out = reinterpret_cast<Bytef*>(buf);
    zs.get()->avail_out = sizeof(buf);
    int rc = inflate(zs.get(), Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      throw Error(ErrorKind::kMalformed, "gzip data is corrupt (zlib error ", rc, ")");
    }
    out.append(buf, sizeof(buf) - zs.get()->avail_out);
    if (out.size() > max_size) throw Error(ErrorKind::kMalformed, "gzip data expands too far");
    if (rc == Z_STREAM_END) break;
    if (zs.get()->avail_in == 0 && zs.get()->avail_out != 0) {
      throw Error(ErrorKind::kMalformed, "gzip data is truncated");
    }
  }
  return out;
}

std::string EncodeProfile(const pb::Profile& profile) {
  std::string raw;
  if (!profile.SerializeToString(&raw)) {
    throw Error(ErrorKind::kInternal, "protobuf serialization of the profile failed");
  }
  return Gzip(raw);
}

void CheckOutputWritable(const std::string& path) {
  if (path == "-") return;
  std::string dir = DirName(path);
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    int err = errno;
    throw Error(ErrorKind::kIo, "output directory ", dir,
                err == ENOENT ? " does not exist (" : " cannot be reached (", std::strerror(err),
                ")");
  }
  if (!S_ISDIR(st.st_mode))
    throw Error(ErrorKind::kIo, "output directory ", dir, " is not a directory");
  if (access(dir.c_str(), W_OK) != 0) {
    throw Error(ErrorKind::kIo, "output directory ", dir, " is not writable (",
                std::strerror(errno), ")");
  }
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw Error(ErrorKind::kIo, "output ", path, " is a directory");
  }
}

namespace {

// A new file next to path, created the way os.Create (and so go tool pprof)
// creates its output: mode 0666, which the kernel reduces by the umask (or
// the directory's default ACL). mkstemp would give 0600, and a fixed fchmod
// would ignore the user's umask.
std::pair<UniqueFd, std::string> CreateTemporaryNextTo(const std::string& path) {
  const std::string prefix = DirName(path) + "/.goheap2pprof.tmp.";
  int err = EEXIST;
  for (int attempt = 0; attempt < 100 && err == EEXIST; ++attempt) {
    uint64_t r = 0;
    if (getrandom(&r, sizeof(r), 0) != static_cast<ssize_t>(sizeof(r))) {
      r ^= static_cast<uint64_t>(getpid()) << 32 ^ static_cast<uint64_t>(attempt);
    }
    char suffix[17];
    std::snprintf(suffix, sizeof(suffix), "%016llx", static_cast<unsigned long long>(r));
    std::string tmp = prefix + suffix;
    UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC, 0666));
    if (fd.valid()) return {std::move(fd), std::move(tmp)};
    err = errno;
  }
  throw Error(ErrorKind::kIo, "cannot create a temporary file next to ", path, ": ",
              std::strerror(err));
}

// Runs write(fd, what) against the destination so that a failure leaves it
// untouched: a regular file (or a new one) is written to a temporary file in
// the same directory, flushed and renamed over it; "-" is standard output; a
// device or pipe (/dev/stdout, a FIFO, /dev/full) cannot be replaced by
// rename and is written directly.
void WriteAtomically(const std::string& path,
                     const std::function<void(int fd, const std::string& what)>& write) {
  if (path == "-") {
    write(STDOUT_FILENO, "standard output");
    return;
  }
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd.valid()) throw Error(ErrorKind::kIo, "cannot open ", path, ": ", std::strerror(errno));
    write(fd.get(), path);
    return;
  }
  auto [fd, tmp] = CreateTemporaryNextTo(path);
  try {
    write(fd.get(), tmp);
    if (fsync(fd.get()) != 0) {
      throw Error(ErrorKind::kIo, "flushing ", tmp, ": ", std::strerror(errno));
    }
    int rc = close(fd.Release());
    if (rc != 0) throw Error(ErrorKind::kIo, "closing ", tmp, ": ", std::strerror(errno));
    if (rename(tmp.c_str(), path.c_str()) != 0) {
      throw Error(ErrorKind::kIo, "renaming ", tmp, " to ", path, ": ", std::strerror(errno));
    }
  } catch (...) {
    unlink(tmp.c_str());
    throw;
  }
}

}  // namespace

void WriteOutput(const std::string& path, std::string_view data) {
  WriteAtomically(path, [&](int fd, const std::string& what) { WriteAll(fd, data, what); });
}

void WriteProfile(const std::string& path, const pb::Profile& profile) {
  WriteAtomically(path, [&](int fd, const std::string& what) {
    // Serialize straight into the compressor: the encoded profile never
    // exists in memory as a whole, only its compressed blocks do.
    google::protobuf::io::FileOutputStream file(fd, 1 << 16);
    {
      google::protobuf::io::GzipOutputStream::Options options;
      options.format = google::protobuf::io::GzipOutputStream::GZIP;
      options.compression_level = 1;  // what runtime/pprof uses
      options.buffer_size = 1 << 16;
      google::protobuf::io::GzipOutputStream gzip(&file, options);
      if (!profile.SerializeToZeroCopyStream(&gzip) || !gzip.Close()) {
        throw Error(ErrorKind::kIo, "writing ", what, ": ",
                    file.GetErrno() ? std::strerror(file.GetErrno()) : "compression failed");
      }
    }
    if (!file.Flush()) {
      throw Error(ErrorKind::kIo, "writing ", what, ": ", std::strerror(file.GetErrno()));
    }
  });
}

}  // namespace goheap2pprof
