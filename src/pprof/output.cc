#include "pprof/output.h"

#include <fcntl.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

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

// A ZeroCopyOutputStream that gzips on a second thread: protobuf serializes
// into 1 MiB chunks while the previous ones are deflated and written, so a
// large profile's compression (about a sixth of a cold capture's CPU) runs
// on the other core. The deflate stream is the one GzipOutputStream made
// (gzip wrapper, level 1 as runtime/pprof, memLevel 8, default strategy),
// fed the same bytes without flushes, so the file is the same. A few chunks
// are recycled, so memory stays bounded whatever the profile's size.
class ThreadedGzipStream : public google::protobuf::io::ZeroCopyOutputStream {
 public:
  // sink gets the compressed bytes, on the compressing thread.
  explicit ThreadedGzipStream(std::function<void(std::string_view)> sink) : sink_(std::move(sink)) {
    if (deflateInit2(zs_.get(), 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      throw Error(ErrorKind::kInternal, "zlib deflateInit2 failed");
    }
    zs_.MarkInitialized();
    worker_ = std::thread([this] { Compress(); });
  }
  ~ThreadedGzipStream() override {
    if (worker_.joinable()) {
      Push(Chunk{}, /*last=*/true);
      worker_.join();
    }
  }

  bool Next(void** data, int* size) override {
    if (!current_.bytes.empty()) Push(std::move(current_), /*last=*/false);
    current_ = Free();
    current_.used = current_.bytes.size();
    *data = current_.bytes.data();
    *size = static_cast<int>(current_.bytes.size());
    count_ += current_.bytes.size();
    return !failed();
  }
  void BackUp(int count) override {
    current_.used -= static_cast<size_t>(count);
    count_ -= static_cast<size_t>(count);
  }
  int64_t ByteCount() const override { return static_cast<int64_t>(count_); }

  // Compresses what is left, ends the gzip stream and waits for the writes;
  // rethrows the worker's error.
  void Finish() {
    Push(std::move(current_), /*last=*/true);
    worker_.join();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  static constexpr size_t kChunk = 1 << 20;
  static constexpr size_t kMaxQueued = 4;
  struct Chunk {
    std::vector<uint8_t> bytes;
    size_t used = 0;
  };

  bool failed() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_ != nullptr;
  }
  // A chunk to fill: a recycled one, or a new one while few are in flight.
  Chunk Free() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !free_.empty() || chunks_ < kMaxQueued || error_; });
    if (!free_.empty()) {
      Chunk c = std::move(free_.back());
      free_.pop_back();
      return c;
    }
    ++chunks_;
    return Chunk{std::vector<uint8_t>(kChunk), 0};
  }
  void Push(Chunk c, bool last) {
    std::lock_guard<std::mutex> lock(mu_);
    if (c.used > 0 || last) queue_.push_back({std::move(c), last});
    cv_.notify_all();
  }
  void Compress() {
    try {
      std::vector<uint8_t> out(1 << 16);
      for (;;) {
        Item item;
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [&] { return !queue_.empty(); });
          item = std::move(queue_.front());
          queue_.pop_front();
        }
        z_stream* z = zs_.get();
        z->next_in = item.chunk.bytes.data();
        z->avail_in = static_cast<uInt>(item.chunk.used);
        const int flush = item.last ? Z_FINISH : Z_NO_FLUSH;
        int rc;
        do {
          z->next_out = out.data();
          z->avail_out = static_cast<uInt>(out.size());
          rc = deflate(z, flush);
          if (rc == Z_STREAM_ERROR) throw Error(ErrorKind::kInternal, "zlib deflate failed");
          const size_t n = out.size() - z->avail_out;
          if (n > 0) sink_({reinterpret_cast<const char*>(out.data()), n});
        } while (z->avail_out == 0 || (item.last && rc != Z_STREAM_END));
        if (item.last) return;
        std::lock_guard<std::mutex> lock(mu_);
        item.chunk.used = 0;
        if (!item.chunk.bytes.empty()) free_.push_back(std::move(item.chunk));
        cv_.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = std::current_exception();
      cv_.notify_all();
    }
  }

  struct Item {
    Chunk chunk;
    bool last = false;
  };
  std::function<void(std::string_view)> sink_;
  ZStream zs_{/*deflate=*/true};
  Chunk current_;
  size_t count_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  std::vector<Chunk> free_;
  size_t chunks_ = 0;  // chunks made, at most kMaxQueued
  std::exception_ptr error_;
  std::thread worker_;
};

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

// Serializes with `serialize` (a false return: protobuf failed) straight into
// a ThreadedGzipStream feeding sink: the encoded profile never exists in
// memory as a whole, only a few chunks of it do.
template <typename Serialize>
void GzipSerialized(const std::function<void(std::string_view)>& sink, const std::string& what,
                    Serialize serialize) {
  ThreadedGzipStream gzip(sink);
  const bool ok = serialize(&gzip);
  gzip.Finish();  // throws the writer's error if it had one
  if (!ok) throw Error(ErrorKind::kIo, "writing ", what, ": serialization failed");
}

std::string EncodeProfile(const FinishedProfile& profile) {
  std::string out;
  GzipSerialized(
      [&](std::string_view bytes) { out.append(bytes); }, "the profile",
      [&](google::protobuf::io::ZeroCopyOutputStream* s) { return profile.SerializeTo(s); });
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

// A temporary output file that is removed when it goes out of scope, unless
// Commit says it has been renamed into place: however the write fails (an
// Error from the writer, a full disk, a failed rename), no partial file is
// left behind, and the error goes on to main untouched.
struct TemporaryFile {
  UniqueFd fd;
  std::string path;

  TemporaryFile(UniqueFd f, std::string p) : fd(std::move(f)), path(std::move(p)) {}
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  ~TemporaryFile() {
    if (!path.empty()) unlink(path.c_str());
  }
  void Commit() { path.clear(); }
};

// A new file next to path, created the way os.Create (and so go tool pprof)
// creates its output: mode 0666, which the kernel reduces by the umask (or
// the directory's default ACL). mkstemp would give 0600, and a fixed fchmod
// would ignore the user's umask.
TemporaryFile CreateTemporaryNextTo(const std::string& path) {
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
    if (fd.valid()) return TemporaryFile(std::move(fd), std::move(tmp));
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
  TemporaryFile tmp = CreateTemporaryNextTo(path);
  write(tmp.fd.get(), tmp.path);
  if (fsync(tmp.fd.get()) != 0) {
    throw Error(ErrorKind::kIo, "flushing ", tmp.path, ": ", std::strerror(errno));
  }
  int rc = close(tmp.fd.Release());
  if (rc != 0) throw Error(ErrorKind::kIo, "closing ", tmp.path, ": ", std::strerror(errno));
  if (rename(tmp.path.c_str(), path.c_str()) != 0) {
    throw Error(ErrorKind::kIo, "renaming ", tmp.path, " to ", path, ": ", std::strerror(errno));
  }
  tmp.Commit();
}

}  // namespace

void WriteOutput(const std::string& path, std::string_view data) {
  WriteAtomically(path, [&](int fd, const std::string& what) { WriteAll(fd, data, what); });
}

void WriteProfile(const std::string& path, const pb::Profile& profile) {
  WriteAtomically(path, [&](int fd, const std::string& what) {
    GzipSerialized([&](std::string_view bytes) { WriteAll(fd, bytes, what); }, what,
                   [&](google::protobuf::io::ZeroCopyOutputStream* s) {
                     return profile.SerializeToZeroCopyStream(s);
                   });
  });
}

void WriteProfile(const std::string& path, const FinishedProfile& profile) {
  WriteAtomically(path, [&](int fd, const std::string& what) {
    GzipSerialized(
        [&](std::string_view bytes) { WriteAll(fd, bytes, what); }, what,
        [&](google::protobuf::io::ZeroCopyOutputStream* s) { return profile.SerializeTo(s); });
  });
}

}  // namespace goheap2pprof
