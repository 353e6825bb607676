// The Go toolchains of the tests (tests/go_toolchains.txt, the one list,
// compiled in as go_toolchains_list.inc) and the test programs the
// go_programs fixture (tests/go_programs.sh) built with each of them into
// <build>/go-programs/<version>/. The gtests of the Go tier read those
// programs; none builds one.
//
//   const GoProgram p = FindGoProgram(tc, "frames-amd64-pie");
//   if (!p.skip_reason.empty()) GTEST_SKIP() << p.skip_reason;
//   ASSERT_TRUE(p.error.empty()) << p.error;
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

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

}  // namespace testing_go
}  // namespace goheap2pprof
