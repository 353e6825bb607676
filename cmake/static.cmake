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
#  - the agents' HTTP listener (src/agent/common/http_listener.cc): Boost.Beast and Asio are
#    header-only (nothing of Boost is linked), and its TLS uses the OpenSSL archives found
#    below (GOHEAP2PPROF_LIBSSL_A, GOHEAP2PPROF_LIBCRYPTO_A; CMakeLists.txt);
#  - libcurl (push's client): compiled from its Debian source, HTTP and HTTPS only (below);
#  - ISA-L (the profile's gzip): its igzip part compiled from its Debian source (below);
#  - dlopen: libdw.a's debuginfod client dlopen()s libdebuginfod.so when DEBUGINFOD_URLS is
#    set. A static glibc loading a shared object built against another glibc is undefined
#    behaviour, so the executable is linked with --wrap=dlopen and src/cli/static_dlopen.cc
#    refuses every load: debuginfod is off (goheap2pprof never asks it for anything: it
#    reads the target's own executable).
#  - the link warnings left, "Using 'getaddrinfo' (and 'gethostbyname', from libcrypto's
#    BIO_gethostbyname, which libcurl does not call: it resolves names itself) in statically
#    linked applications requires at runtime the shared libraries from the glibc version used
#    for linking", come from Asio's resolver (a `serve --listen` host name) and libcurl's
#    resolver: a numeric address (the default `serve --listen` 127.0.0.1) never reaches NSS; a
#    host name is resolved by glibc's NSS, which may load the host's NSS modules, built for the
#    host's glibc (`--listen localhost:N` and `push --pyroscope http://localhost:N` worked on
#    Debian 12).
set(CMAKE_FIND_LIBRARY_SUFFIXES .a)
add_link_options(-static)

# OpenSSL's archives, for the listener's TLS and libcurl's https (libcrypto's own dlopen of
# engines and providers meets the refusing dlopen below, so only the built-in providers exist).
find_library(GOHEAP2PPROF_LIBSSL_A ssl REQUIRED)
find_library(GOHEAP2PPROF_LIBCRYPTO_A crypto REQUIRED)

# libcurl (push's HTTP client): Debian's libcurl.a is built against Kerberos, LDAP, libssh2,
# libpsl, libidn2, nghttp2, rtmp and brotli, several of which Debian ships without an archive,
# so it cannot be linked statically. The static build compiles libcurl from the Debian source
# of the installed libcurl4-openssl-dev (same version and security patches) with HTTP and
# HTTPS over the OpenSSL archives found above and nothing else, once per build tree: the
# installed archive under _deps/curl-install is reused by every later configure.
# Its CA store is OpenSSL's default (the Debian OPENSSLDIR's certs, or SSL_CERT_FILE /
# SSL_CERT_DIR); push --ca-file overrides it.
set(GOHEAP2PPROF_CURL_PREFIX ${CMAKE_BINARY_DIR}/_deps/curl-install)
if(NOT EXISTS ${GOHEAP2PPROF_CURL_PREFIX}/lib/libcurl.a)
  set(curl_src ${CMAKE_BINARY_DIR}/_deps/curl-src)
  set(curl_build ${CMAKE_BINARY_DIR}/_deps/curl-build)
  if(NOT EXISTS ${curl_src}/CMakeLists.txt)
    execute_process(
      COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/debian-source.sh libcurl4-openssl-dev ${curl_src}
      RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "could not fetch the Debian source of libcurl (above)")
    endif()
  endif()
  set(curl_args -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=${GOHEAP2PPROF_CURL_PREFIX}
      -DCMAKE_INSTALL_LIBDIR=lib -DBUILD_SHARED_LIBS=OFF -DBUILD_CURL_EXE=OFF
      -DBUILD_TESTING=OFF -DPICKY_COMPILER=OFF
      -DHTTP_ONLY=ON -DCURL_USE_OPENSSL=ON -DOPENSSL_USE_STATIC_LIBS=ON
      -DCURL_DISABLE_LDAP=ON -DCURL_DISABLE_LDAPS=ON -DCURL_USE_GSSAPI=OFF
      -DCURL_USE_LIBSSH2=OFF -DCURL_USE_LIBSSH=OFF -DCURL_USE_LIBPSL=OFF -DUSE_LIBIDN2=OFF
      -DUSE_NGHTTP2=OFF -DCURL_BROTLI=OFF -DCURL_ZSTD=OFF -DCURL_ZLIB=OFF -DENABLE_ARES=OFF
      -DENABLE_UNIX_SOCKETS=OFF -DCURL_DISABLE_COOKIES=ON -DCURL_DISABLE_ALTSVC=ON
      -DCURL_DISABLE_HSTS=ON -DCURL_DISABLE_NETRC=ON -DENABLE_MANUAL=OFF
      -DCURL_CA_BUNDLE=none -DCURL_CA_PATH=none -DCURL_CA_FALLBACK=ON)
  if(CMAKE_TOOLCHAIN_FILE)
    list(APPEND curl_args -DCMAKE_TOOLCHAIN_FILE=${CMAKE_TOOLCHAIN_FILE})
  endif()
  if(CMAKE_CXX_COMPILER_LAUNCHER)
    list(APPEND curl_args -DCMAKE_C_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER})
  endif()
  message(STATUS "Building a static libcurl from ${curl_src} (once per build tree)")
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${curl_src} -B ${curl_build} -G Ninja ${curl_args}
                  OUTPUT_FILE ${curl_build}-configure.log ERROR_FILE ${curl_build}-configure.log
                  RESULT_VARIABLE rc)
  if(rc EQUAL 0)
    execute_process(COMMAND ${CMAKE_COMMAND} --build ${curl_build} --target install
                    OUTPUT_FILE ${curl_build}.log ERROR_FILE ${curl_build}.log RESULT_VARIABLE rc)
  endif()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "building the static libcurl failed: see ${curl_build}-configure.log "
                        "and ${curl_build}.log")
  endif()
endif()
add_library(goheap2pprof_curl INTERFACE)
target_include_directories(goheap2pprof_curl SYSTEM BEFORE INTERFACE
                           ${GOHEAP2PPROF_CURL_PREFIX}/include)
target_compile_definitions(goheap2pprof_curl INTERFACE CURL_STATICLIB)
target_link_libraries(goheap2pprof_curl INTERFACE ${GOHEAP2PPROF_CURL_PREFIX}/lib/libcurl.a
                      ${GOHEAP2PPROF_LIBSSL_A} ${GOHEAP2PPROF_LIBCRYPTO_A} pthread)

# ISA-L (the profile's gzip, src/pprof/output.cc): Debian ships no archive of it. The static
# build compiles its igzip part (and the CRC code igzip uses) from the Debian source of the
# installed libisal-dev, with the source's own makefile for a static library (Makefile.unx:
# nasm for x86-64's assembly, the C compiler for arm64's), once per build tree. The headers
# are the installed package's, of the same version.
set(GOHEAP2PPROF_ISAL_SRC ${CMAKE_BINARY_DIR}/_deps/isal-src)
set(GOHEAP2PPROF_ISAL_A ${GOHEAP2PPROF_ISAL_SRC}/bin/isa-l.a)
if(NOT EXISTS ${GOHEAP2PPROF_ISAL_A})
  if(NOT EXISTS ${GOHEAP2PPROF_ISAL_SRC}/Makefile.unx)
    execute_process(
      COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/debian-source.sh libisal-dev ${GOHEAP2PPROF_ISAL_SRC}
      RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "could not fetch the Debian source of ISA-L (above)")
    endif()
  endif()
  if(CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
    set(isal_args host_cpu=aarch64 arch=aarch64)
  else()
    set(isal_args host_cpu=x86_64)
  endif()
  if(CMAKE_C_COMPILER)
    list(APPEND isal_args CC=${CMAKE_C_COMPILER})
  endif()
  message(STATUS "Building a static ISA-L from ${GOHEAP2PPROF_ISAL_SRC} (once per build tree)")
  execute_process(COMMAND make -f Makefile.unx units=igzip AR=${CMAKE_AR} ${isal_args} lib
                  WORKING_DIRECTORY ${GOHEAP2PPROF_ISAL_SRC}
                  OUTPUT_FILE ${GOHEAP2PPROF_ISAL_SRC}.log ERROR_FILE ${GOHEAP2PPROF_ISAL_SRC}.log
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT EXISTS ${GOHEAP2PPROF_ISAL_A})
    message(FATAL_ERROR "building the static ISA-L failed: see ${GOHEAP2PPROF_ISAL_SRC}.log "
                        "(it needs make, and nasm on x86-64: "
                        "bash scripts/install-deps.sh --package)")
  endif()
endif()
add_library(goheap2pprof_isal INTERFACE)
target_link_libraries(goheap2pprof_isal INTERFACE ${GOHEAP2PPROF_ISAL_A})

# What libdw.a and libelf.a need below them, in link order (elfutils 0.188 in Debian 12 is
# built with zlib, bzip2, xz and zstd).
find_library(GOHEAP2PPROF_LIBZSTD_A zstd REQUIRED)
find_library(GOHEAP2PPROF_LIBLZMA_A lzma REQUIRED)
find_library(GOHEAP2PPROF_LIBBZ2_A bz2 REQUIRED)
find_library(GOHEAP2PPROF_LIBZ_A z REQUIRED)
set(GOHEAP2PPROF_STATIC_LIBDW_DEPS ${GOHEAP2PPROF_LIBZSTD_A} ${GOHEAP2PPROF_LIBLZMA_A}
    ${GOHEAP2PPROF_LIBBZ2_A} ${GOHEAP2PPROF_LIBZ_A})
