#include "base/shared_library.h"

#include <dlfcn.h>

namespace goheap2pprof {

Expected<SharedLibrary> SharedLibrary::Open(const char* soname, std::string_view needed_by,
                                            std::string_view library, std::string_view hint) {
  void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Error(ErrorKind::kUnsupported, needed_by, " needs ", library, ", and ", soname,
                 " cannot be loaded: ", why != nullptr ? why : "no reason given")
        .WithHint(std::string(hint));
  }
  return SharedLibrary(handle, soname);
}

void* SharedLibrary::Symbol(const char* name) {
  void* symbol = dlsym(handle_, name);
  if (symbol == nullptr && missing_.empty()) missing_ = name;
  return symbol;
}

std::optional<Error> SharedLibrary::Missing(std::string_view what) const {
  if (missing_.empty()) return std::nullopt;
  return Error(ErrorKind::kUnsupported, soname_, " has no function ", missing_, ": it is not ",
               what);
}

}  // namespace goheap2pprof
