# -DGOHEAP2PPROF_STATIC=ON: goheap2pprof as one fully static executable, for a host that has
# nothing but a Linux kernel and /proc (scripts/package.sh builds it for amd64 and arm64).
# Included before the libraries are looked up, so that every find_library and pkg-config
# IMPORTED_TARGET resolves to the Debian package's .a archive.
#
# What changes against the ordinary (dynamic) build:
#  - libraries: only .a archives are accepted, and everything is linked with -static
#    (glibc and libstdc++ included);
#  - libdw.a needs the compressors elfutils was built with (zlib, zstd, xz, bzip2): in a
#    dynamic build libdw.so brings them itself;
#  - cpp-httplib: Debian builds it as a shared library only (its /usr/include/httplib.h is
#    split, the code is in libcpp-httplib.so), so the static build compiles the header-only
#    httplib.h of the same Debian source package (scripts/debian-source.sh fetches it with
#    apt-get source), without TLS, zlib or brotli, which serve does not use;
#  - the agents' HTTP listener (src/agent/http_listener.cc): Boost.Beast and Asio are
#    header-only (nothing of Boost is linked), and its TLS uses the same OpenSSL archives as
#    httplib below (GOHEAP2PPROF_LIBSSL_A, GOHEAP2PPROF_LIBCRYPTO_A; CMakeLists.txt);
#  - dlopen: libdw.a's debuginfod client dlopen()s libdebuginfod.so when DEBUGINFOD_URLS is
#    set. A static glibc loading a shared object built against another glibc is undefined
#    behaviour, so the executable is linked with --wrap=dlopen and src/cli/static_dlopen.cc
#    refuses every load: debuginfod is off (goheap2pprof never asks it for anything: it
#    reads the target's own executable).
#  - the link warnings left, "Using 'getaddrinfo' (and libcrypto's BIO: 'gethostbyname') in
#    statically linked applications requires at runtime the shared libraries from the glibc
#    version used for linking", come from httplib (push) and Asio's resolver (a `serve
#    --listen` host name): a numeric `serve --listen` address (the default 127.0.0.1) never reaches
#    NSS; a host name is resolved by glibc's NSS, which may load the host's NSS modules, built
#    for the host's glibc (`--listen localhost:N` worked on Debian 12).
set(CMAKE_FIND_LIBRARY_SUFFIXES .a)
add_link_options(-static)

set(GOHEAP2PPROF_HTTPLIB_SOURCE_DIR "" CACHE PATH "cpp-httplib source tree with the header-only httplib.h (empty: the Debian source of the installed libcpp-httplib-dev, fetched into the build tree)")
if(NOT GOHEAP2PPROF_HTTPLIB_SOURCE_DIR)
  set(fetched ${CMAKE_BINARY_DIR}/_deps/cpp-httplib)
  if(NOT EXISTS ${fetched}/httplib.h)
    execute_process(
      COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/debian-source.sh libcpp-httplib-dev ${fetched}
      RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "could not fetch the Debian source of cpp-httplib (above); give "
                          "-DGOHEAP2PPROF_HTTPLIB_SOURCE_DIR=<dir with the header-only httplib.h>")
    endif()
  endif()
  set(GOHEAP2PPROF_HTTPLIB_SOURCE_DIR ${fetched} CACHE PATH "" FORCE)
endif()
add_library(goheap2pprof_httplib INTERFACE)
target_include_directories(goheap2pprof_httplib SYSTEM BEFORE INTERFACE
                           ${GOHEAP2PPROF_HTTPLIB_SOURCE_DIR})
# Debian's libcpp-httplib is built with OpenSSL, and push's https needs it: the static build
# compiles httplib with TLS too and links OpenSSL's archives (libcrypto's own dlopen of engines
# and providers meets the refusing dlopen below, so only the built-in providers exist).
find_library(GOHEAP2PPROF_LIBSSL_A ssl REQUIRED)
find_library(GOHEAP2PPROF_LIBCRYPTO_A crypto REQUIRED)
target_compile_definitions(goheap2pprof_httplib INTERFACE CPPHTTPLIB_OPENSSL_SUPPORT)
target_link_libraries(goheap2pprof_httplib INTERFACE ${GOHEAP2PPROF_LIBSSL_A}
                      ${GOHEAP2PPROF_LIBCRYPTO_A} pthread)

# What libdw.a and libelf.a need below them, in link order (elfutils 0.188 in Debian 12 is
# built with zlib, bzip2, xz and zstd).
find_library(GOHEAP2PPROF_LIBZSTD_A zstd REQUIRED)
find_library(GOHEAP2PPROF_LIBLZMA_A lzma REQUIRED)
find_library(GOHEAP2PPROF_LIBBZ2_A bz2 REQUIRED)
find_library(GOHEAP2PPROF_LIBZ_A z REQUIRED)
set(GOHEAP2PPROF_STATIC_LIBDW_DEPS ${GOHEAP2PPROF_LIBZSTD_A} ${GOHEAP2PPROF_LIBLZMA_A}
    ${GOHEAP2PPROF_LIBBZ2_A} ${GOHEAP2PPROF_LIBZ_A})
