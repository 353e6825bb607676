// --version text; see version.h.
#include "cli/version.h"

#include <capstone/capstone.h>
#include <elfutils/libdwfl.h>
#include <gnu/libc-version.h>
#include <google/protobuf/stubs/common.h>
#include <isa-l.h>
#include <libdeflate.h>
#include <zlib.h>
#if !GOHEAP2PPROF_CAPTURE_ONLY  // the agent's libraries
#include <openssl/opensslv.h>
#include <seccomp.h>

#include <boost/version.hpp>
#endif
#ifdef GOHEAP2PPROF_STATIC
#include <bzlib.h>
#include <lzma.h>
#include <zstd.h>
#endif

#include <CLI/Version.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "build_info.h"  // generated: GOHEAP2PPROF_GIT_COMMIT (cmake/build_info.cmake)
#include "gobin/capstone_library.h"
#if !GOHEAP2PPROF_CAPTURE_ONLY
#include "agent/push/curl_library.h"
#endif

namespace goheap2pprof {
namespace {

#if defined(__x86_64__)
constexpr const char* kArch = "amd64";
#elif defined(__aarch64__)
constexpr const char* kArch = "arm64";
#else
constexpr const char* kArch = "unknown";
#endif

#ifdef GOHEAP2PPROF_STATIC
constexpr const char* kLinkage = "static";
#else
constexpr const char* kLinkage = "dynamic";
#endif

// The capture's libraries. Run-time versions where the library reports its
// own (what is really linked, also when a shared library was upgraded under
// us); header macros for the rest.
void WriteCaptureLibraries(std::ostream& out) {
  // A dynamic build loads Capstone only for stripped binaries, and here.
  std::string capstone_missing;
  const CapstoneLibrary* capstone = TryCapstone(&capstone_missing);
  int capstone_major = 0, capstone_minor = 0;
  if (capstone != nullptr) capstone->version(&capstone_major, &capstone_minor);
  out << "  protobuf " << google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION) << "\n"
      << "  zlib " << zlibVersion() << "\n"
      << "  elfutils (libelf, libdw) " << dwfl_version(nullptr) << "\n"
      << "  libdeflate " << LIBDEFLATE_VERSION_STRING << "\n"
      << "  ISA-L " << ISAL_MAJOR_VERSION << "." << ISAL_MINOR_VERSION << "." << ISAL_PATCH_VERSION
      << "\n"
      << "  capstone "
      << (capstone != nullptr ? Concat(capstone_major, ".", capstone_minor, ".", CS_VERSION_EXTRA)
                              : "missing (" + capstone_missing + ")")
      << "\n";
}

#if !GOHEAP2PPROF_CAPTURE_ONLY
// The agent's libraries, as WriteCaptureLibraries.
void WriteAgentLibraries(std::ostream& out) {
  const scmp_version* seccomp = seccomp_version();
  // A dynamic build loads libcurl only for push, and here.
  std::string curl_missing;
  const CurlLibrary* curl_library = TryCurl(&curl_missing);
  const curl_version_info_data* curl =
      curl_library != nullptr ? curl_library->version_info(CURLVERSION_NOW) : nullptr;
  out << "  libseccomp " << seccomp->major << "." << seccomp->minor << "." << seccomp->micro
      << "\n"
      // The agents' HTTP listener (agent/common/http_listener.h), header-only.
      << "  Boost.Beast/Asio " << BOOST_VERSION / 100000 << "." << BOOST_VERSION / 100 % 1000 << "."
      << BOOST_VERSION % 100
      << "\n"
      // The listener's TLS.
      << "  " << OPENSSL_VERSION_TEXT
      << "\n"
      // push's HTTP client and the TLS library under it, as loaded.
      << "  libcurl ";
  if (curl == nullptr) {
    out << "missing (" << curl_missing << ")\n";
  } else {
    out << curl->version << " ("
        << (curl->ssl_version != nullptr ? curl->ssl_version : "no TLS library") << ")\n";
  }
}
#endif

}  // namespace

std::string VersionText() {
  std::ostringstream out;
  out << "goheap2pprof " << GOHEAP2PPROF_VERSION << "\n"
      << "commit " << GOHEAP2PPROF_GIT_COMMIT << "\n"
      << "linux/" << kArch << ", " << kLinkage << "ally linked\n";
#if GOHEAP2PPROF_TEST_SEAMS
  // The end-to-end suites that need the seams look for this line.
  out << "test seams compiled in: not a release build\n";
#endif
  out << "libraries:\n";
  WriteCaptureLibraries(out);
#if GOHEAP2PPROF_CAPTURE_ONLY
  out << "  (the capture alone: built without the agent's commands and libraries)\n";
#else
  WriteAgentLibraries(out);
#endif
  out << "  CLI11 " << CLI11_VERSION << "\n"
      << "  nlohmann-json " << NLOHMANN_JSON_VERSION_MAJOR << "." << NLOHMANN_JSON_VERSION_MINOR
      << "." << NLOHMANN_JSON_VERSION_PATCH << "\n";
#ifdef GOHEAP2PPROF_STATIC
  // Linked in only here: a dynamic libdw.so brings its own compressors, and the C and C++
  // runtimes are the host's.
  out << "  zstd " << ZSTD_versionString() << "\n"
      << "  xz (liblzma) " << lzma_version_string() << "\n"
      << "  bzip2 " << BZ2_bzlibVersion() << "\n";
#endif
  out << "  glibc " << gnu_get_libc_version() << "\n"
      << "  libstdc++ (GCC " << __GNUC__ << "." << __GNUC_MINOR__ << "." << __GNUC_PATCHLEVEL__
      << ")";
  return out.str();
}

}  // namespace goheap2pprof
