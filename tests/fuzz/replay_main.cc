// Runs a libFuzzer target over files and directories given on the command
// line, so CTest replays the committed corpora with any compiler (no
// -fsanitize=fuzzer needed). Exits non-zero if a path cannot be read or holds
// no input at all: a replay that runs nothing must not pass.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool RunFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    return false;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      for (const auto& entry : std::filesystem::directory_iterator(p)) {
        if (!entry.is_regular_file()) continue;
        if (!RunFile(entry.path())) return 2;
        ++inputs;
      }
    } else {
      if (!RunFile(p)) return 2;
      ++inputs;
    }
  }
  std::printf("replay: %zu inputs ran without a crash\n", inputs);
  return inputs == 0 ? 1 : 0;
}
