#include "agent/push/curl_library.h"

#include <optional>
#include <string>

#include "base/error.h"
#include "base/expected.h"

#ifdef GOHEAP2PPROF_CURL_DLOPEN
#include "base/shared_library.h"
#endif

namespace goheap2pprof {

#ifdef GOHEAP2PPROF_CURL_DLOPEN

Expected<CurlLibrary> TryLoadCurlLibrary(const char* soname) {
  Expected<SharedLibrary> lib = SharedLibrary::Open(
      soname, "push", "libcurl",
      "install libcurl (Debian: apt-get install libcurl4), or use the static build");
  if (!lib) return lib.error();
  CurlLibrary c{};
  lib->Resolve("curl_global_init", c.global_init);
  lib->Resolve("curl_easy_init", c.easy_init);
  lib->Resolve("curl_easy_setopt", c.easy_setopt);
  lib->Resolve("curl_easy_perform", c.easy_perform);
  lib->Resolve("curl_easy_getinfo", c.easy_getinfo);
  lib->Resolve("curl_easy_cleanup", c.easy_cleanup);
  lib->Resolve("curl_easy_strerror", c.easy_strerror);
  lib->Resolve("curl_slist_append", c.slist_append);
  lib->Resolve("curl_slist_free_all", c.slist_free_all);
  lib->Resolve("curl_version_info", c.version_info);
  lib->Resolve("curl_getdate", c.getdate);
  if (std::optional<Error> missing = lib->Missing("the libcurl push was built for")) {
    return *missing;
  }
  return c;
}

namespace {

// The library, or the Error loading it gave; loaded once.
const Expected<CurlLibrary>& Load() {
  static const Expected<CurlLibrary> loaded = TryLoadCurlLibrary("libcurl.so.4");
  return loaded;
}

}  // namespace

const CurlLibrary& Curl() { return Load().value(); }

const CurlLibrary* TryCurl(std::string* why) { return LoadedOrWhy(Load(), why); }

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
