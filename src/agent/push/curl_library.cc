#include "agent/push/curl_library.h"

#include <mutex>
#include <optional>
#include <string>

#include "base/error.h"

#ifdef GOHEAP2PPROF_CURL_DLOPEN
#include <dlfcn.h>
#endif

namespace goheap2pprof {

#ifdef GOHEAP2PPROF_CURL_DLOPEN

namespace {

// dlsym of `name` into `fn`, or the Error naming what is missing.
template <typename Fn>
void Resolve(void* handle, const char* soname, const char* name, Fn& fn) {
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    throw Error(ErrorKind::kUnsupported, soname, " has no function ", name,
                ": it is not the libcurl push was built for");
  }
  fn = reinterpret_cast<Fn>(symbol);
}

}  // namespace

CurlLibrary LoadCurlLibrary(const char* soname) {
  // Never closed: libcurl's handles and threads may outlive any one user.
  void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw Error(ErrorKind::kUnsupported, "push needs libcurl, and ", soname,
                " cannot be loaded: ", why != nullptr ? why : "no reason given")
        .WithHint("install libcurl (Debian: apt-get install libcurl4), or use the static build");
  }
  CurlLibrary c{};
  Resolve(handle, soname, "curl_global_init", c.global_init);
  Resolve(handle, soname, "curl_easy_init", c.easy_init);
  Resolve(handle, soname, "curl_easy_setopt", c.easy_setopt);
  Resolve(handle, soname, "curl_easy_perform", c.easy_perform);
  Resolve(handle, soname, "curl_easy_getinfo", c.easy_getinfo);
  Resolve(handle, soname, "curl_easy_cleanup", c.easy_cleanup);
  Resolve(handle, soname, "curl_easy_strerror", c.easy_strerror);
  Resolve(handle, soname, "curl_slist_append", c.slist_append);
  Resolve(handle, soname, "curl_slist_free_all", c.slist_free_all);
  Resolve(handle, soname, "curl_version_info", c.version_info);
  Resolve(handle, soname, "curl_getdate", c.getdate);
  return c;
}

namespace {

// The library, or the Error loading it gave; loaded once.
struct Loaded {
  std::optional<CurlLibrary> library;
  std::optional<Error> error;
};

const Loaded& Load() {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] {
    try {
      loaded.library = LoadCurlLibrary("libcurl.so.4");
    } catch (const Error& e) {
      loaded.error = e;
    }
  });
  return loaded;
}

}  // namespace

const CurlLibrary& Curl() {
  const Loaded& loaded = Load();
  if (loaded.error) throw *loaded.error;
  return *loaded.library;
}

const CurlLibrary* TryCurl(std::string* why) {
  const Loaded& loaded = Load();
  if (loaded.error) {
    *why = loaded.error->what();
    return nullptr;
  }
  return &*loaded.library;
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
