// The Go toolchains of the tests (tests/go_toolchains.txt, the one list,
// compiled in as go_toolchains_list.inc) and the test programs the
// go_programs fixture (tests/go_programs.sh) built with each of them into
// <build>/go-programs/<version>/. The gtests of the Go tier read those
// programs; none builds one.
//
//   const GoProgram p = FindGoProgram(tc, "frames-amd64-pie");
//   if (!p.skip_reason.empty()) GTEST_SKIP() << p.skip_reason;
//   ASSERT_TRUE(p.error.empty()) << p.error;
//
// A test over every toolchain x build mode derives from ToolchainTest and is
// instantiated with ToolchainCases and CaseNamer:
//
//   class MyTest : public testing_go::ToolchainTest<Mode, Modes> {};
//   INSTANTIATE_TEST_SUITE_P(Builds, MyTest, testing_go::ToolchainCases(Modes),
//                            testing_go::CaseNamer(Modes));
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "elf/elf_file.h"
#include "gobin/go_binary.h"

namespace goheap2pprof {
namespace testing_go {

struct Toolchain {
  std::string label;  // "go1.21.5"
  int minor;
  int patch;
  bool arm64_live;  // its arm64 builds also run under qemu
};

inline const std::vector<Toolchain>& Toolchains() {
  static const std::vector<Toolchain> kToolchains = {
#include "go_toolchains_list.inc"
  };
  return kToolchains;
}

// Runs a shell command, returning its standard output and setting *status.
inline std::string RunCommand(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  *status = pclose(p);
  return out;
}

struct GoProgram {
  std::string skip_reason;  // non-empty: the toolchain may be missing, and is
  std::string error;        // non-empty: missing though it must not be
  std::string path;
};

// The fixture's program <name> of toolchain tc (in $GOHEAP2PPROF_GO_PROGRAMS_DIR
// when set), as the status file
// (<build>/go-programs/status: "<version> ok|skip <why>|fail <why>") says.
inline GoProgram FindGoProgram(const Toolchain& tc, const std::string& name) {
  GoProgram p;
  // Another build tree's programs (the sanitizer build reuses the main one's).
  const char* env = std::getenv("GOHEAP2PPROF_GO_PROGRAMS_DIR");
  const std::filesystem::path dir =
      env != nullptr && *env != '\0'
          ? std::filesystem::path(env)
          : std::filesystem::path(GOHEAP2PPROF_BINARY_DIR) / "go-programs";
  std::ifstream status(dir / "status");
  std::string line,
      state = "fail",
      why = "the go_programs fixture did not run (bash " + std::string(GOHEAP2PPROF_SOURCE_DIR) +
            "/tests/go_programs.sh <build-dir>)";
  while (std::getline(status, line)) {
    std::istringstream fields(line);
    std::string version;
    fields >> version;
    if (version != tc.label) continue;
    fields >> state;
    std::getline(fields, why);
  }
  if (state == "skip") {
    p.skip_reason = tc.label + ":" + why;
  } else if (state != "ok") {
    p.error = tc.label + ":" + why;
  } else {
    p.path = (dir / tc.label / name).string();
    if (!std::filesystem::exists(p.path)) p.error = p.path + " was not built";
  }
  return p;
}

// Parameters of a test instantiated for every toolchain x build mode.
struct ToolchainCase {
  size_t toolchain;
  size_t mode;
};

// How gtest prints the parameter (and so how CTest names the test).
inline void PrintTo(const ToolchainCase& c, std::ostream* os) {
  *os << Toolchains()[c.toolchain].label << " mode " << c.mode;
}

inline std::vector<ToolchainCase> AllToolchainCases(size_t n_modes) {
  std::vector<ToolchainCase> cases;
  for (size_t t = 0; t < Toolchains().size(); ++t) {
    for (size_t m = 0; m < n_modes; ++m) cases.push_back({t, m});
  }
  return cases;
}

// A gtest parameter name: "go1_21_5_amd64_pie".
inline std::string CaseName(const ToolchainCase& c, const std::string& mode_label) {
  std::string name = Toolchains()[c.toolchain].label + "_" + mode_label;
  for (char& ch : name) {
    if (ch == '.' || ch == '-') ch = '_';
  }
  return name;
}

// A gtest parameter generator for every toolchain x mode of modes().
template <typename Mode>
auto ToolchainCases(const std::vector<Mode>& (*modes)()) {
  return ::testing::ValuesIn(AllToolchainCases(modes().size()));
}

// The name generator to go with it: CaseName with the mode's label.
template <typename Mode>
auto CaseNamer(const std::vector<Mode>& (*modes)()) {
  return [modes](const ::testing::TestParamInfo<ToolchainCase>& info) {
    return CaseName(info.param, modes()[info.param.mode].label);
  };
}

// A test instantiated for every toolchain x mode of modes(): tc_ and mode_
// are this run's.
template <typename Mode, const std::vector<Mode>& (*modes)()>
class ToolchainTest : public ::testing::TestWithParam<ToolchainCase> {
 protected:
  void SetUp() override {
    tc_ = &Toolchains()[GetParam().toolchain];
    mode_ = &modes()[GetParam().mode];
  }

  const Toolchain* tc_ = nullptr;
  const Mode* mode_ = nullptr;
};

// The builds of testdata/gobin/frames that the go_programs fixture makes
// with every toolchain (frames-amd64-<label>): non-PIE and PIE, internally
// and externally (cgo) linked. The mode list of the tests that recover the
// runtime's variables from an ordinary program's code.
struct FramesBuild {
  std::string label;
};

inline const std::vector<FramesBuild>& FramesBuilds() {
  static const std::vector<FramesBuild> kBuilds = {{"exe"}, {"pie"}, {"exe-cgo"}, {"pie-cgo"}};
  return kBuilds;
}

// A Go program opened for analysis; the GoBinary refers to the ElfFile, so
// both live on the heap and move together.
struct OpenedGoBinary {
  std::unique_ptr<ElfFile> elf;
  std::unique_ptr<GoBinary> go;
};

inline OpenedGoBinary OpenGoBinary(const std::string& path) {
  OpenedGoBinary out;
  out.elf = std::make_unique<ElfFile>(ElfFile::Open(path));
  out.go = std::make_unique<GoBinary>(*out.elf);
  return out;
}

// The file's bytes with every build-info magic (debug/buildinfo's, at
// 16-byte-aligned offsets) broken, and how many there were: a binary whose
// version must come from elsewhere.
inline std::vector<uint8_t> WithoutBuildInfo(const ElfFile& elf, size_t* erased) {
  const Bytes all = elf.bytes();
  std::vector<uint8_t> bytes(all.begin(), all.end());
  const std::string_view magic("\xff Go buildinf:", 14);
  *erased = 0;
  for (size_t i = 0; i + magic.size() <= bytes.size(); i += 16) {
    if (std::memcmp(&bytes[i], magic.data(), magic.size()) == 0) {
      bytes[i + 1] = 'X';
      ++*erased;
    }
  }
  return bytes;
}

}  // namespace testing_go
}  // namespace goheap2pprof
