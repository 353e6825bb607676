#include "agent/watch_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <ctime>

#include "base/error.h"

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

std::vector<FileRotation::Written> FileRotation::Add(const std::string& path) {
  Written w;
  w.path = path;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    w.dev = st.st_dev;
    w.ino = st.st_ino;
  }
  files_.push_back(std::move(w));
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

WatchLog::WatchLog(const std::string& path) : path_(path) {
  fd_.Reset(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!fd_.valid()) {
    throw Error(ErrorKind::kIo, "cannot open ", path, " for appending: ", std::strerror(errno));
  }
}

void WatchLog::Append(const nlohmann::json& record) {
  std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line += '\n';
  ssize_t n = ::write(fd_.get(), line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) {
    throw Error(ErrorKind::kIo, "cannot append to ", path_, ": ",
                n < 0 ? std::strerror(errno) : "short write");
  }
}

}  // namespace goheap2pprof
