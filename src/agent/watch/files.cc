#include "agent/watch/files.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>

#include "base/error.h"
#include "base/utf8.h"

namespace goheap2pprof {
namespace {

std::string Stamp(std::chrono::system_clock::time_point t, const char* format, bool dot) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch());
  std::time_t secs = static_cast<std::time_t>(ms.count() / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  size_t n = std::strftime(buf, sizeof(buf), format, &tm);
  char frac[16];
  std::snprintf(frac, sizeof(frac), "%s%03dZ", dot ? "." : "", static_cast<int>(ms.count() % 1000));
  return std::string(buf, n) + frac;
}

std::string Safe(std::string_view text, std::string_view fallback) {
  std::string out;
  for (char c : text) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '+' || c == '-';
    out += ok ? c : '_';
  }
  if (out.empty() || out == "." || out == "..") out = std::string(fallback);
  return out;
}

}  // namespace

std::string UtcFileStamp(std::chrono::system_clock::time_point t) {
  return Stamp(t, "%Y%m%dT%H%M%S", true);
}

std::string UtcIsoTime(std::chrono::system_clock::time_point t) {
  return Stamp(t, "%Y-%m-%dT%H:%M:%S", true);
}

std::string ProfileFileName(std::string_view program, pid_t pid,
                            std::chrono::system_clock::time_point t, std::string_view reason) {
  return Safe(program, "go") + "-" + std::to_string(pid) + "-" + UtcFileStamp(t) + "-" +
         Safe(reason, "trigger") + ".heap.pb.gz";
}

std::string GoroutineFileName(std::string_view heap_name) {
  constexpr std::string_view kHeap = ".heap.pb.gz";
  if (heap_name.ends_with(kHeap)) heap_name.remove_suffix(kHeap.size());
  return std::string(heap_name) + ".goroutine.pb.gz";
}

std::string GrowthReportBaseName(std::string_view program, pid_t pid) {
  return Safe(program, "go") + "-" + std::to_string(pid) + "-growth";
}

namespace {

FileRotation::Written Stated(const std::string& path) {
  FileRotation::Written w;
  w.path = path;
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    w.dev = st.st_dev;
    w.ino = st.st_ino;
  }
  return w;
}

}  // namespace

void FileRotation::AddCompanion(const std::string& path) {
  if (!files_.empty()) files_.back().companions.push_back(Stated(path));
}

std::vector<FileRotation::Written> FileRotation::Add(const std::string& path) {
  files_.push_back(Stated(path));
  std::vector<Written> drop;
  while (files_.size() > max_files_) {
    drop.push_back(std::move(files_.front()));
    files_.pop_front();
  }
  return drop;
}

bool FileRotation::Delete(const Written& w) {
  struct stat st;
  if (::lstat(w.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != w.dev ||
      st.st_ino != w.ino) {
    return false;
  }
  return ::unlink(w.path.c_str()) == 0;
}

OutputDir::OutputDir(const std::string& path) : path_(path) {
  fd_.Reset(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd_.valid()) {
    const int err = errno;
    if (err == ENOENT)
      throw Error(ErrorKind::kIo, "the output directory ", path, " does not exist");
    throw Error(ErrorKind::kIo, "cannot open the output directory ", path, ": ",
                std::strerror(err));
  }
  struct stat st;
  if (::fstat(fd_.get(), &st) != 0) {
    throw Error(ErrorKind::kIo, "cannot stat ", path, ": ", std::strerror(errno));
  }
  // Group-writable is fine when the group is root's or our own: its other
  // members are then as trusted as we are (a user's private group).
  const bool others_write =
      (st.st_mode & S_IWOTH) != 0 ||
      ((st.st_mode & S_IWGRP) != 0 && st.st_gid != 0 && st.st_gid != getegid());
  if (others_write && (st.st_mode & S_ISVTX) == 0) {
    throw Error(ErrorKind::kUsage, "the output directory ", path,
                " may be written by other users and has no sticky bit, so they could replace "
                "watch's files there: choose a directory only its owner can write to (or "
                "chmod go-w, or chmod +t)");
  }
  if (st.st_uid != 0 && st.st_uid != geteuid()) {
    throw Error(ErrorKind::kUsage, "the output directory ", path, " belongs to uid ", st.st_uid,
                ", neither root nor us, so its owner could replace watch's files there: choose "
                "a directory of root or of uid ",
                geteuid());
  }
}

namespace {

// A hex suffix that another user cannot predict.
std::string RandomSuffix(int attempt) {
  uint64_t r = 0;
  if (getrandom(&r, sizeof(r), 0) != static_cast<ssize_t>(sizeof(r))) {
    r ^= static_cast<uint64_t>(getpid()) << 32 ^ static_cast<uint64_t>(attempt);
  }
  char suffix[17];
  std::snprintf(suffix, sizeof(suffix), "%016llx", static_cast<unsigned long long>(r));
  return suffix;
}

bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

void OutputDir::WriteAtomically(const std::string& name, std::string_view bytes) const {
  std::string tmp;
  UniqueFd fd;
  int err = EEXIST;
  // O_EXCL with O_NOFOLLOW: a name someone planted (a link, a FIFO) fails
  // with EEXIST, and a fresh random name is tried.
  for (int attempt = 0; attempt < 100 && !fd.valid() && err == EEXIST; ++attempt) {
    tmp = "." + name + ".tmp." + RandomSuffix(attempt);
    fd.Reset(::openat(fd_.get(), tmp.c_str(),
                      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0644));
    if (!fd.valid()) err = errno;
  }
  if (!fd.valid()) {
    throw Error(ErrorKind::kIo, "cannot create a temporary file in ", path_, ": ",
                std::strerror(err));
  }
  const std::string what = path_ + "/" + tmp;
  const char* step = nullptr;
  if (!WriteAll(fd.get(), bytes)) {
    step = "writing ";
  } else if (::fsync(fd.get()) != 0) {
    step = "flushing ";
  } else if (::close(fd.Release()) != 0) {
    step = "closing ";
  } else if (::renameat(fd_.get(), tmp.c_str(), fd_.get(), name.c_str()) != 0) {
    step = "renaming into place ";
  }
  if (step) {
    err = errno;
    ::unlinkat(fd_.get(), tmp.c_str(), 0);
    throw Error(ErrorKind::kIo, step, what, ": ", std::strerror(err));
  }
}

UniqueFd OutputDir::OpenForAppend(const std::string& name) const {
  const std::string what = path_ + "/" + name;
  // O_NONBLOCK: opening a FIFO must not wait for a reader (and without one
  // it fails with ENXIO); what was opened is checked to be a regular file.
  UniqueFd fd(::openat(
      fd_.get(), name.c_str(),
      O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    const int err = errno;
    throw Error(ErrorKind::kIo, "cannot open ", what, " for appending: ",
                err == ELOOP   ? "it is a symbolic link, which watch does not follow"
                : err == ENXIO ? "it is a FIFO or socket, not a regular file"
                               : std::strerror(err));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    throw Error(ErrorKind::kIo, "cannot stat ", what, ": ", std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    throw Error(ErrorKind::kIo, "refusing to append to ", what, ": not a regular file");
  }
  if (st.st_nlink != 1) {
    throw Error(ErrorKind::kIo, "refusing to append to ", what, ": it has ", st.st_nlink,
                " hard links, so it may be another file");
  }
  if (st.st_uid != geteuid()) {
    throw Error(ErrorKind::kIo, "refusing to append to ", what, ": it belongs to uid ", st.st_uid,
                ", not to us");
  }
  return fd;
}

WatchLog::WatchLog(const OutputDir& dir, const std::string& name)
    : path_(dir.path() + "/" + name), fd_(dir.OpenForAppend(name)) {}

bool WatchLog::Append(const nlohmann::json& record) {
  const auto dump = [](const nlohmann::json& j) { return JsonText(j) + "\n"; };
  std::string lines;
  if (lost_ > 0) {
    lines = dump({{"time", UtcIsoTime(std::chrono::system_clock::now())},
                  {"event", "records-lost"},
                  {"count", lost_},
                  {"reason", last_error_}});
  }
  lines += dump(record);
  struct stat st;
  const off_t before = ::fstat(fd_.get(), &st) == 0 ? st.st_size : -1;
  // One write(2) normally; a full disk takes what fits, and the write of
  // the rest then says why (ENOSPC).
  if (WriteAll(fd_.get(), lines)) {
    lost_ = 0;
    last_error_.clear();
    return true;
  }
  last_error_ = std::strerror(errno);
  // A torn line would make the whole file unreadable to a JSON-lines reader.
  if (before >= 0) (void)::ftruncate(fd_.get(), before);
  ++lost_;
  return false;
}

}  // namespace goheap2pprof
