// The one error type of goheap2pprof. Thrown where a problem is found, caught
// only in main, which prints the message plus a hint and exits with the kind's
// exit code.
//
//   throw Error(ErrorKind::kMalformed, Hex(addr), ": bucket nstk ", n, " exceeds ", max);
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace goheap2pprof {

// Values are the process exit codes, documented in --help and the README.
enum class ErrorKind : int {
  kUsage = 2,             // bad command line
  kNoSuchProcess = 3,     // pid does not exist, or exited during the capture
  kPermission = 4,        // not allowed to read the target
  kNotGo = 5,             // the target is not a Go program
  kUnsupported = 6,       // Go version, architecture or binary form we cannot read
  kSamplingDisabled = 7,  // heap profiling is off in the target
  kMalformed = 8,         // target memory or file contents inconsistent
  kIo = 9,                // local file error (output, reading the executable)
  kInternal = 10,         // a bug in goheap2pprof
};

std::string_view ErrorKindName(ErrorKind kind);

// The parts written one after another, as `out << a << b` would: the text of
// an error, or of a message built the same way.
template <typename... Parts>
std::string Concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

class Error : public std::runtime_error {
 public:
  template <typename... Parts>
  explicit Error(ErrorKind kind, const Parts&... parts)
      : std::runtime_error(Concat(parts...)), kind_(kind) {}

  ErrorKind kind() const { return kind_; }
  // Advice for the user, shown by main under the message. Set where the
  // problem is found when the place knows better than the kind's generic hint.
  const std::string& hint() const { return hint_; }
  Error& WithHint(std::string hint) {
    hint_ = std::move(hint);
    return *this;
  }

 private:
  ErrorKind kind_;
  std::string hint_;
};

// The kind of e at a boundary that catches any exception (one request, one
// target, one report of a long-running role): an Error's own, kInternal for
// another (a library's, std::bad_alloc), which must not end the other roles.
inline ErrorKind KindOf(const std::exception& e) {
  const auto* error = dynamic_cast<const Error*>(&e);
  return error ? error->kind() : ErrorKind::kInternal;
}

// "0x1234" for messages.
std::string Hex(uint64_t value);

}  // namespace goheap2pprof
