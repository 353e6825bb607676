#include "pprof/output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <string>

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
    if (deflate_) deflateEnd(&s_); else inflateEnd(&s_);
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
    throw Error(ErrorKind::kIo, "output directory ", dir, " does not exist (", std::strerror(errno),
                ")");
  }
  if (!S_ISDIR(st.st_mode)) throw Error(ErrorKind::kIo, "output directory ", dir, " is not a directory");
  if (access(dir.c_str(), W_OK) != 0) {
    throw Error(ErrorKind::kIo, "output directory ", dir, " is not writable (",
                std::strerror(errno), ")");
  }
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw Error(ErrorKind::kIo, "output ", path, " is a directory");
  }
}

void WriteOutput(const std::string& path, std::string_view data) {
  if (path == "-") {
    WriteAll(STDOUT_FILENO, data, "standard output");
    return;
  }
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A device or pipe (/dev/stdout, a FIFO, /dev/full) cannot be replaced by
    // rename; write into it directly.
    UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd.valid()) throw Error(ErrorKind::kIo, "cannot open ", path, ": ", std::strerror(errno));
    WriteAll(fd.get(), data, path);
    return;
  }
  std::string tmp = DirName(path) + "/.goheap2pprof.tmp.XXXXXX";
  UniqueFd fd(mkostemp(tmp.data(), O_CLOEXEC));
  if (!fd.valid()) {
    throw Error(ErrorKind::kIo, "cannot create a temporary file next to ", path, ": ",
                std::strerror(errno));
  }
  try {
    WriteAll(fd.get(), data, tmp);
    if (fchmod(fd.get(), 0644) != 0 || fsync(fd.get()) != 0) {
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

}  // namespace goheap2pprof
