// The libcurl functions push uses, as one table. A dynamic build loads
// libcurl.so.4 when push first needs it (dlopen), not when the process
// starts: libcurl and the TLS, Kerberos, LDAP and SSH libraries it brings
// cost every start of a dynamic goheap2pprof 5-8 ms (bench/README.md),
// and a one-shot capture, `mem` and the workers never use them. A static
// build links libcurl in, and the table points at it.
//
//   const CurlLibrary& curl = Curl();  // throws if libcurl cannot be loaded
//   CURL* h = curl.easy_init();
//   curl.easy_setopt(h, CURLOPT_URL, "http://127.0.0.1:4040/ingest");
#pragma once

#include <curl/curl.h>

#include <ctime>
#include <string>

#include "base/expected.h"

namespace goheap2pprof {

struct CurlLibrary {
  CURLcode (*global_init)(long flags);
  CURL* (*easy_init)();
  CURLcode (*easy_setopt)(CURL* curl, CURLoption option, ...);
  CURLcode (*easy_perform)(CURL* curl);
  CURLcode (*easy_getinfo)(CURL* curl, CURLINFO info, ...);
  void (*easy_cleanup)(CURL* curl);
  const char* (*easy_strerror)(CURLcode code);
  curl_slist* (*slist_append)(curl_slist* list, const char* line);
  void (*slist_free_all)(curl_slist* list);
  curl_version_info_data* (*version_info)(CURLversion age);
  time_t (*getdate)(const char* date, const time_t* unused);
};

// The process's libcurl, loaded on the first call (thread-safe). Throws
// Error(kUnsupported) naming the library and why when it cannot be loaded,
// on every call.
const CurlLibrary& Curl();

// The same, or nullptr with *why set to the Error's text: for --version,
// which says that libcurl is missing rather than fail.
const CurlLibrary* TryCurl(std::string* why);

#ifdef GOHEAP2PPROF_CURL_DLOPEN
// Loads the libcurl called `soname` and resolves the table's functions;
// Error(kUnsupported) when the library cannot be loaded or lacks one of
// them. What Curl() does once with "libcurl.so.4", the soname of libcurl's
// ABI since 7.16.
Expected<CurlLibrary> TryLoadCurlLibrary(const char* soname);
#endif

}  // namespace goheap2pprof
