#include "app/growth_input.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "base/error.h"
#include "pprof/output.h"

namespace goheap2pprof {

namespace {

constexpr size_t kMaxFiles = 100000;
constexpr size_t kMaxProfileBytes = size_t{1} << 30;

bool LooksLikeProfileName(const std::string& name) {
  const auto ends = [&](std::string_view suffix) {
    return name.size() >= suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends(".pb.gz") || ends(".pb") || ends(".pprof") || ends(".prof") ||
         name.rfind("heap", 0) == 0;
}

void AddDirectory(const std::filesystem::path& dir, std::vector<std::string>& files) {
  std::error_code ec;
  std::vector<std::string> found;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || !LooksLikeProfileName(it->path().filename().string())) {
      continue;
    }
    found.push_back(it->path().string());
    if (found.size() > kMaxFiles) break;
  }
  if (ec) throw Error(ErrorKind::kIo, dir.string(), ": cannot list: ", ec.message());
  std::sort(found.begin(), found.end());
  files.insert(files.end(), found.begin(), found.end());
}

}  // namespace

std::vector<std::string> GrowthInputFiles(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const std::string& arg : args) {
    std::error_code ec;
    const std::filesystem::file_status st = std::filesystem::status(arg, ec);
    if (ec || !std::filesystem::exists(st)) {
      throw Error(ErrorKind::kUsage, arg, ": no such file or directory");
    }
    if (std::filesystem::is_directory(st)) {
      AddDirectory(arg, files);
    } else {
      files.push_back(arg);
    }
    if (files.size() > kMaxFiles) {
      throw Error(ErrorKind::kUsage, "more than ", kMaxFiles, " profiles");
    }
  }
  return files;
}

std::string ReadProfileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::kIo, path, ": cannot open");
  std::ostringstream data;
  data << in.rdbuf();
  if (in.bad()) throw Error(ErrorKind::kIo, path, ": read error");
  std::string bytes = std::move(data).str();
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
      static_cast<unsigned char>(bytes[1]) == 0x8b) {
    Expected<std::string> inflated = TryGunzip(bytes, kMaxProfileBytes);
    if (!inflated) throw Error(ErrorKind::kMalformed, path, ": ", inflated.error().what());
    bytes = std::move(inflated).value();
  }
  if (bytes.size() > kMaxProfileBytes) {
    throw Error(ErrorKind::kMalformed, path, ": larger than ", kMaxProfileBytes, " bytes");
  }
  return bytes;
}

std::vector<std::string> AddProfileFiles(GrowthCollector& collector,
                                         const std::vector<std::string>& args) {
  std::vector<std::string> notes;
  for (const std::string& path : GrowthInputFiles(args)) {
    if (!collector.AddSerialized(ReadProfileBytes(path), path)) {
      notes.push_back(path + ": a growth profile, left out");
    }
  }
  return notes;
}

}  // namespace goheap2pprof
