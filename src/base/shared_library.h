// A shared library a dynamic build loads when a feature first needs it
// (dlopen), not when the process starts: loading a library and relocating
// its tables costs every start of goheap2pprof, also the many that never
// use it (libcurl for push; Capstone for stripped binaries, 1.6-2.5 ms a
// start: bench/README.md). Each feature keeps a table of the functions it
// calls (agent/push/curl_library.h, gobin/capstone_library.h).
//
//   Expected<SharedLibrary> lib = SharedLibrary::Open("libz.so.1", "compression", hint);
//   if (!lib) return lib.error();
//   lib->Resolve("zlibVersion", table.version);
//   if (std::optional<Error> e = lib->Missing("the zlib this was built for")) return *e;
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/error.h"
#include "base/expected.h"

namespace goheap2pprof {

class SharedLibrary {
 public:
  // Loads `soname` (never closed: a library's handles and threads may
  // outlive any one user). Error(kUnsupported) when it cannot be loaded:
  // "<needed_by> needs <library>, and <soname> cannot be loaded: <why>",
  // with `hint`.
  static Expected<SharedLibrary> Open(const char* soname, std::string_view needed_by,
                                      std::string_view library, std::string_view hint);

  // The function `name` into fn; a name the library lacks is remembered
  // for Missing (the first one) and fn left as it was.
  template <typename Fn>
  void Resolve(const char* name, Fn& fn) {
    if (void* symbol = Symbol(name)) fn = reinterpret_cast<Fn>(symbol);
  }
  // After the Resolves: Error(kUnsupported) naming the first function the
  // library lacked ("<soname> has no function <name>: it is not <what>"),
  // or nullopt.
  std::optional<Error> Missing(std::string_view what) const;

 private:
  SharedLibrary(void* handle, const char* soname) : handle_(handle), soname_(soname) {}
  void* Symbol(const char* name);

  void* handle_;
  std::string soname_;
  std::string missing_;  // the first function not found
};

// A table of functions loaded once, or nullptr with *why set to why the
// library could not be loaded (for --version, which says so rather than
// fail).
template <typename Table>
const Table* LoadedOrWhy(const Expected<Table>& loaded, std::string* why) {
  if (loaded) return &loaded.value();
  *why = loaded.error().what();
  return nullptr;
}

}  // namespace goheap2pprof
