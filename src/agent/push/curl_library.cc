#include "agent/push/curl_library.h"

#include <string>
#include <utility>

#include "base/error.h"
#include "base/expected.h"

#ifdef GOHEAP2PPROF_CURL_DLOPEN
#include <dlfcn.h>
#endif

namespace goheap2pprof {

#ifdef GOHEAP2PPROF_CURL_DLOPEN

namespace {

// dlsym of `name` into `fn`; false if the library lacks it.
template <typename Fn>
bool Resolve(void* handle, const char* name, Fn& fn) {
  void* symbol = dlsym(handle, name);
  if (symbol != nullptr) fn = reinterpret_cast<Fn>(symbol);
  return symbol != nullptr;
}

// LoadCurlLibrary, with the Error returned: Curl() keeps it for every
// caller, TryCurl() reports it.
Expected<CurlLibrary> TryLoadCurlLibrary(const char* soname) {
  // Never closed: libcurl's handles and threads may outlive any one user.
  void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Error(ErrorKind::kUnsupported, "push needs libcurl, and ", soname,
                 " cannot be loaded: ", why != nullptr ? why : "no reason given")
        .WithHint("install libcurl (Debian: apt-get install libcurl4), or use the static build");
  }
  CurlLibrary c{};
  const std::pair<const char*, bool> resolved[] = {
      {"curl_global_init", Resolve(handle, "curl_global_init", c.global_init)},
      {"curl_easy_init", Resolve(handle, "curl_easy_init", c.easy_init)},
      {"curl_easy_setopt", Resolve(handle, "curl_easy_setopt", c.easy_setopt)},
      {"curl_easy_perform", Resolve(handle, "curl_easy_perform", c.easy_perform)},
      {"curl_easy_getinfo", Resolve(handle, "curl_easy_getinfo", c.easy_getinfo)},
      {"curl_easy_cleanup", Resolve(handle, "curl_easy_cleanup", c.easy_cleanup)},
      {"curl_easy_strerror", Resolve(handle, "curl_easy_strerror", c.easy_strerror)},
      {"curl_slist_append", Resolve(handle, "curl_slist_append", c.slist_append)},
      {"curl_slist_free_all", Resolve(handle, "curl_slist_free_all", c.slist_free_all)},
      {"curl_version_info", Resolve(handle, "curl_version_info", c.version_info)},
      {"curl_getdate", Resolve(handle, "curl_getdate", c.getdate)},
  };
  for (const auto& [name, found] : resolved) {
    if (!found) {
      return Error(ErrorKind::kUnsupported, soname, " has no function ", name,
                   ": it is not the libcurl push was built for");
    }
  }
  return c;
}

// The library, or the Error loading it gave; loaded once.
const Expected<CurlLibrary>& Load() {
  static const Expected<CurlLibrary> loaded = TryLoadCurlLibrary("libcurl.so.4");
  return loaded;
}

}  // namespace

CurlLibrary LoadCurlLibrary(const char* soname) { return TryLoadCurlLibrary(soname).value(); }

const CurlLibrary& Curl() { return Load().value(); }

const CurlLibrary* TryCurl(std::string* why) {
  const Expected<CurlLibrary>& loaded = Load();
  if (!loaded) {
    *why = loaded.error().what();
    return nullptr;
  }
  return &loaded.value();
}

#else  // linked in

const CurlLibrary& Curl() {
  // The library's own functions; curl_easy_setopt and curl_easy_getinfo are
  // also macros (type checks) in curl.h, hence the parentheses.
  static const CurlLibrary kLinked{
      .global_init = &curl_global_init,
      .easy_init = &curl_easy_init,
      .easy_setopt = &(curl_easy_setopt),
      .easy_perform = &curl_easy_perform,
      .easy_getinfo = &(curl_easy_getinfo),
      .easy_cleanup = &curl_easy_cleanup,
      .easy_strerror = &curl_easy_strerror,
      .slist_append = &curl_slist_append,
      .slist_free_all = &curl_slist_free_all,
      .version_info = &curl_version_info,
      .getdate = &curl_getdate,
  };
  return kLinked;
}

const CurlLibrary* TryCurl(std::string* /*why*/) { return &Curl(); }

#endif

}  // namespace goheap2pprof
