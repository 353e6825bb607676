// The Go toolchains the tests build programs with (Go 1.19.8 from Debian,
// the machine's Go 1.26.8, Go 1.27.3 through GOTOOLCHAIN), and a helper that
// builds a testdata program with one of them. A missing toolchain is reported
// as a skip reason; a toolchain that fails to build our program is an error.
#pragma once

#include <cstdio>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace goheap2pprof {
namespace testing_go {

struct Toolchain {
  std::string label;  // "go1.19"
  int minor;
  std::string go;   // command
  std::string env;  // extra environment for every go command
};

inline const std::vector<Toolchain>& Toolchains() {
  static const std::vector<Toolchain> kToolchains = {
      {"go1.19", 19, "/usr/lib/go-1.19/bin/go", ""},
      {"go1.26", 26, "go", "GOTOOLCHAIN=local"},
      {"go1.27", 27, "go", "GOTOOLCHAIN=go1.27.3"},
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

struct BuildResult {
  std::string skip_reason;  // non-empty: toolchain or C compiler unavailable
  std::string error;        // non-empty: the build itself failed
};

// Builds testdata/<package_dir> into <binary dir>/<out_name>:
//   env <tc.env> GOARCH=<arch> CGO_ENABLED=<cgo> go build [-buildmode=pie] <extra> -o out .
inline BuildResult BuildGoProgram(const Toolchain& tc, const std::string& package_dir,
                                  const std::string& out_path, const std::string& arch, bool pie,
                                  bool cgo, const std::string& extra_flags = "") {
  BuildResult r;
  int status = 0;
  std::string version = RunCommand("env " + tc.env + " " + tc.go + " version 2>&1", &status);
  if (status != 0 || version.find(tc.label + ".") == std::string::npos) {
    r.skip_reason = tc.label + " toolchain unavailable (`" + tc.go + " version`: " + version + ")";
    return r;
  }
  if (cgo) {
    RunCommand("gcc --version >/dev/null 2>&1", &status);
    if (status != 0) {
      r.skip_reason = "cgo build needs gcc, which is not available";
      return r;
    }
  }
  std::filesystem::create_directories(std::filesystem::path(out_path).parent_path());
  const std::string src = std::string(GOHEAP2PPROF_SOURCE_DIR) + "/testdata/" + package_dir;
  const std::string cmd = "cd '" + src + "' && env " + tc.env + " GOARCH=" + arch +
                          (cgo ? " CGO_ENABLED=1 " : " CGO_ENABLED=0 ") + tc.go + " build -o '" +
                          out_path + "'" + (pie ? " -buildmode=pie " : " ") + extra_flags +
                          " . 2>&1";
  std::string log = RunCommand(cmd, &status);
  if (status != 0) r.error = "build failed: " + cmd + "\n" + log;
  return r;
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

// A gtest parameter name: "go1_26_amd64_pie".
inline std::string CaseName(const ToolchainCase& c, const std::string& mode_label) {
  std::string name = Toolchains()[c.toolchain].label + "_" + mode_label;
  for (char& ch : name) {
    if (ch == '.') ch = '_';
  }
  return name;
}

}  // namespace testing_go
}  // namespace goheap2pprof
