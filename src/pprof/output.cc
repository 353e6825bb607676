#include "pprof/output.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <isa-l/igzip_lib.h>
#include <libdeflate.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

namespace goheap2pprof {

namespace {

// Owns an inflating z_stream for its whole life, whichever way the function
// exits.
class InflateStream {
 public:
  InflateStream() = default;
  ~InflateStream() {
    if (initialized_) inflateEnd(&s_);
  }
  z_stream* get() { return &s_; }
  void MarkInitialized() { initialized_ = true; }

 private:
  z_stream s_{};
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

// A ZeroCopyOutputStream that gzips on two threads: protobuf (or our sample
// encoder) serializes into 256 KiB chunks while earlier ones are deflated, each
// chunk on its own, by whichever compressing thread is free, and written in
// order. With zlib, compression was most of a large profile's encoding time
// (the deep-stack target's 20 MB of samples: 42 ms of CPU); ISA-L's level 1
// takes a tenth of that, beside the encoding on the other core.
//
// The file is one gzip member, as pigz makes them: every chunk is deflated
// from an empty dictionary and ends with a full flush, which byte-aligns it,
// so the chunks' raw deflate streams concatenate into one deflate stream; the
// last chunk ends the stream. The trailer's CRC-32 is the chunks' CRCs combined.
// Matches cost a few bytes at the start of each chunk (no earlier window),
// about 0.1% of a file. A few chunks are recycled, so memory stays bounded
// whatever the profile's size.
class ParallelGzipStream : public google::protobuf::io::ZeroCopyOutputStream {
 public:
  // sink gets the compressed bytes, in order, on a compressing thread.
  explicit ParallelGzipStream(std::function<void(std::string_view)> sink) : sink_(std::move(sink)) {
    for (auto& worker : workers_) worker = std::thread([this] { Compress(); });
  }
  ~ParallelGzipStream() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
      cv_.notify_all();
    }
    for (auto& worker : workers_) {
      if (worker.joinable()) worker.join();
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
  // rethrows a compressing thread's error (the sink's included).
  void Finish() {
    Push(std::move(current_), /*last=*/true);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return finished_ || error_; });
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // Chunks in flight, their deflated copies and the level buffers are most
  // of a one-shot capture's fixed memory: at 1 MiB they took 9 MB of a
  // 131k-bucket capture's 50 MiB peak (issue 42). A quarter of that costs
  // about 0.1% more output (each chunk starts without a window) and no time.
  static constexpr size_t kChunk = 256 * 1024;
  static constexpr size_t kMaxChunks = 4;
  struct Chunk {
    std::vector<uint8_t> bytes;
    size_t used = 0;
  };
  struct Item {
    Chunk chunk;
    uint64_t seq = 0;
    bool last = false;
  };
  struct Done {
    std::vector<uint8_t> out;  // raw deflate, ending in a full flush or the final block
    uLong crc = 0;
    size_t in = 0;
    bool last = false;
  };

  bool failed() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_ != nullptr;
  }
  // A chunk to fill: a recycled one, or a new one while few are in flight.
  Chunk Free() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !free_.empty() || chunks_ < kMaxChunks || error_; });
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
    queue_.push_back({std::move(c), next_seq_++, last});
    cv_.notify_all();
  }

  // One compressing thread: takes the next queued chunk, deflates it with
  // its own level buffer, and writes every finished chunk whose turn has come.
  void Compress() {
    std::vector<uint8_t> spare;
    try {
      std::vector<uint8_t> level_buf(ISAL_DEF_LVL1_DEFAULT);
      for (;;) {
        Item item;
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [&] { return !queue_.empty() || closing_ || error_; });
          if (queue_.empty() || error_) return;
          item = std::move(queue_.front());
          queue_.pop_front();
        }
        Done done = Deflate(level_buf, item, std::move(spare));
        std::unique_lock<std::mutex> lock(mu_);
        if (!item.chunk.bytes.empty()) {
          item.chunk.used = 0;
          free_.push_back(std::move(item.chunk));
        }
        done_.emplace(item.seq, std::move(done));
        cv_.notify_all();
        // Only one thread writes at a time, in sequence order.
        if (writing_) continue;
        writing_ = true;
        while (!done_.empty() && done_.begin()->first == next_write_) {
          Done d = std::move(done_.begin()->second);
          done_.erase(done_.begin());
          ++next_write_;
          lock.unlock();
          Write(d);
          lock.lock();
          spare = std::move(d.out);
          if (d.last) finished_ = true;
        }
        writing_ = false;
        cv_.notify_all();
      }
    } catch (...) {
      // Boundary: a compressing thread's failure is kept for Finish, which
      // rethrows it on the caller's thread.
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
      cv_.notify_all();
    }
  }

  // ISA-L's level 1, one shot per chunk (level 0 only finds repeats in a
  // small window). A full flush byte-aligns a chunk's end, and the next chunk
  // needs no window from it.
  static Done Deflate(std::vector<uint8_t>& level_buf, Item& item, std::vector<uint8_t> out) {
    Done d;
    d.in = item.chunk.used;
    d.last = item.last;
    if (d.in == 0 && !d.last) return d;  // nothing to add to the stream
    // libdeflate's CRC-32 (carry-less multiply where the CPU has it) is the
    // same checksum as zlib's at a fraction of its time: crc32_z was 1.4-1.7%
    // of a cold capture's CPU (perf record, 250k buckets).
    d.crc = libdeflate_crc32(0, item.chunk.bytes.data(), d.in);
    // At most the input in stored blocks (5 bytes of header per 64 KiB),
    // after a block header of at most ISAL_DEF_MAX_HDR_SIZE.
    out.resize(d.in + 5 * (d.in / 65535 + 2) + ISAL_DEF_MAX_HDR_SIZE + 64);
    isal_zstream z;
    isal_deflate_stateless_init(&z);
    z.level = 1;
    z.level_buf = level_buf.data();
    z.level_buf_size = static_cast<uint32_t>(level_buf.size());
    z.gzip_flag = IGZIP_DEFLATE;
    z.flush = item.last ? NO_FLUSH : FULL_FLUSH;
    z.end_of_stream = item.last ? 1 : 0;
    z.next_in = item.chunk.bytes.data();
    z.avail_in = static_cast<uint32_t>(d.in);
    z.next_out = out.data();
    z.avail_out = static_cast<uint32_t>(out.size());
    const int rc = isal_deflate_stateless(&z);
    if (rc != COMP_OK || z.avail_in != 0) {
      throw Error(ErrorKind::kInternal, "ISA-L deflate failed: ", rc);
    }
    out.resize(out.size() - z.avail_out);
    d.out = std::move(out);
    return d;
  }

  // The gzip header before the first chunk (no name, no time, "fastest",
  // Unix), the trailer after the last.
  void Write(const Done& d) {
    static constexpr uint8_t kHeader[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 3};
    if (!header_written_) {
      sink_({reinterpret_cast<const char*>(kHeader), sizeof kHeader});
      header_written_ = true;
    }
    sink_({reinterpret_cast<const char*>(d.out.data()), d.out.size()});
    crc_ = crc32_combine(crc_, d.crc, static_cast<z_off_t>(d.in));
    total_in_ += d.in;
    if (d.last) {
      uint8_t trailer[8];
      for (int i = 0; i < 4; ++i) {
        trailer[i] = static_cast<uint8_t>(crc_ >> (8 * i));
        trailer[4 + i] = static_cast<uint8_t>(total_in_ >> (8 * i));  // ISIZE: mod 2^32
      }
      sink_({reinterpret_cast<const char*>(trailer), sizeof trailer});
    }
  }

  std::function<void(std::string_view)> sink_;
  Chunk current_;
  size_t count_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  std::vector<Chunk> free_;
  size_t chunks_ = 0;  // chunks made, at most kMaxChunks
  uint64_t next_seq_ = 0;
  std::map<uint64_t, Done> done_;  // deflated, waiting for their turn
  uint64_t next_write_ = 0;
  bool writing_ = false;
  bool finished_ = false;  // the last chunk and the trailer were written
  bool closing_ = false;
  std::exception_ptr error_;
  // Touched only by the thread that is writing.
  bool header_written_ = false;
  uLong crc_ = crc32(0L, Z_NULL, 0);
  uint64_t total_in_ = 0;
  std::thread workers_[2];
};

}  // namespace

namespace {

// Serializes with `serialize` (a false return: protobuf failed) straight into
// a ParallelGzipStream feeding sink: the encoded profile never exists in
// memory as a whole, only a few chunks of it do.
template <typename Serialize>
void GzipSerialized(const std::function<void(std::string_view)>& sink, const std::string& what,
                    Serialize serialize) {
  ParallelGzipStream gzip(sink);
  const bool ok = serialize(&gzip);
  gzip.Finish();  // throws the writer's error if it had one
  if (!ok) throw Error(ErrorKind::kIo, "writing ", what, ": serialization failed");
}

}  // namespace

std::string Gzip(std::string_view data) {
  std::string out;
  GzipSerialized([&](std::string_view bytes) { out.append(bytes); }, "gzip data",
                 [&](google::protobuf::io::ZeroCopyOutputStream* s) {
                   google::protobuf::io::CodedOutputStream cos(s);
                   cos.WriteRaw(data.data(), static_cast<int>(data.size()));
                   cos.Trim();
                   return !cos.HadError();
                 });
  return out;
}

namespace {

// Deflate's largest expansion: a 258-byte match per 2 bits at best, about
// 1032 to 1; with the gzip header and trailer's 18 bytes and a margin for
// the shortest streams.
constexpr uint64_t kMaxDeflateRatio = 1032;

struct DecompressorFree {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};

// One gzip member inflated by libdeflate, about twice as fast as zlib's
// inflate and its CRC: a tenth of the growth report's CPU time over 100
// profiles (bench/README.md). libdeflate inflates into a buffer of the
// whole output's size, which only the untrusted ISIZE trailer (the size
// mod 2^32) gives: it is believed only within max_size and deflate's
// largest ratio, and the output must then be exactly that long, with the
// member ending at the data's end. Anything else (concatenated members, a
// lying or wrapped ISIZE, corrupt data) is nullopt, and Gunzip's zlib
// reader decides, with its own errors.
std::optional<std::string> GunzipOneMember(std::string_view data, size_t max_size) {
  if (data.size() < 18) return std::nullopt;
  uint32_t isize = 0;
  for (int i = 0; i < 4; ++i) {
    isize |= static_cast<uint32_t>(static_cast<uint8_t>(data[data.size() - 4 + i])) << (8 * i);
  }
  if (isize > max_size || isize > kMaxDeflateRatio * data.size()) return std::nullopt;
  const std::unique_ptr<libdeflate_decompressor, DecompressorFree> d(
      libdeflate_alloc_decompressor());
  if (d == nullptr) return std::nullopt;
  // Not zero-filled: only the pages written are touched, so a lying ISIZE
  // costs address space, not memory.
  const std::unique_ptr<char[]> out(new char[std::max<size_t>(isize, 1)]);
  size_t in_used = 0, out_size = 0;
  const libdeflate_result rc = libdeflate_gzip_decompress_ex(d.get(), data.data(), data.size(),
                                                             out.get(), isize, &in_used, &out_size);
  if (rc != LIBDEFLATE_SUCCESS || in_used != data.size() || out_size != isize) {
    return std::nullopt;
  }
  return std::string(out.get(), out_size);
}

}  // namespace

Expected<std::string> TryGunzip(std::string_view data, size_t max_size) {
  if (std::optional<std::string> out = GunzipOneMember(data, max_size)) return std::move(*out);
  InflateStream zs;
  if (inflateInit2(zs.get(), 15 + 32) != Z_OK) {
    return Error(ErrorKind::kInternal, "zlib inflateInit2 failed");
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
      return Error(ErrorKind::kMalformed, "gzip data is corrupt (zlib error ", rc, ")");
    }
    out.append(buf, sizeof(buf) - zs.get()->avail_out);
    if (out.size() > max_size) return Error(ErrorKind::kMalformed, "gzip data expands too far");
    if (rc == Z_STREAM_END) {
      // Another member may follow (gzip readers, Go's among them, read
      // concatenated members as one stream).
      if (zs.get()->avail_in == 0) break;
      if (inflateReset(zs.get()) != Z_OK) {
        return Error(ErrorKind::kInternal, "zlib inflateReset failed");
      }
      continue;
    }
    if (zs.get()->avail_in == 0 && zs.get()->avail_out != 0) {
      return Error(ErrorKind::kMalformed, "gzip data is truncated");
    }
  }
  return out;
}

std::string Gunzip(std::string_view data, size_t max_size) {
  return TryGunzip(data, max_size).value();
}

struct GunzipStream::State {
  InflateStream zs;
  bool ended = false;
};

GunzipStream::GunzipStream(std::string_view gzipped) : state_(std::make_unique<State>()) {
  z_stream* zs = state_->zs.get();
  if (inflateInit2(zs, 15 + 32) != Z_OK)
    throw Error(ErrorKind::kInternal, "zlib inflateInit2 failed");
  state_->zs.MarkInitialized();
  zs->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gzipped.data()));
  zs->avail_in = static_cast<uInt>(gzipped.size());
  if (gzipped.size() > std::numeric_limits<uInt>::max()) {
    throw Error(ErrorKind::kMalformed, "gzip data of ", gzipped.size(), " bytes is too long");
  }
}

GunzipStream::~GunzipStream() = default;

size_t GunzipStream::Read(std::span<char> out) { return TryRead(out).value(); }

Expected<size_t> GunzipStream::TryRead(std::span<char> out) {
  z_stream* zs = state_->zs.get();
  size_t got = 0;
  while (got < out.size() && !state_->ended) {
    zs->next_out = reinterpret_cast<Bytef*>(out.data() + got);
    zs->avail_out = static_cast<uInt>(std::min<size_t>(out.size() - got, uInt{1} << 30));
    const uInt before = zs->avail_out;
    const int rc = inflate(zs, Z_NO_FLUSH);
    got += before - zs->avail_out;
    if (rc == Z_STREAM_END) {
      // Another member may follow, as Gunzip reads them.
      state_->ended = zs->avail_in == 0;
      if (!state_->ended && inflateReset(zs) != Z_OK) {
        return Error(ErrorKind::kInternal, "zlib inflateReset failed");
      }
      continue;
    }
    if (rc != Z_OK)
      return Error(ErrorKind::kMalformed, "gzip data is corrupt (zlib error ", rc, ")");
    if (zs->avail_in == 0 && zs->avail_out != 0) {
      return Error(ErrorKind::kMalformed, "gzip data is truncated");
    }
  }
  return got;
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

bool WritesAtomically(const std::string& path) {
  if (path == "-") return false;
  struct stat st;
  return stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode);
}

void WriteGzippedProfile(
    const std::string& path,
    const std::function<bool(google::protobuf::io::ZeroCopyOutputStream*)>& serialize) {
  WriteAtomically(path, [&](int fd, const std::string& what) {
    GzipSerialized([&](std::string_view bytes) { WriteAll(fd, bytes, what); }, what, serialize);
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
