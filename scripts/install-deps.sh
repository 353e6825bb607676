#!/usr/bin/env bash
# Installs everything goheap2pprof needs to build and test, from Debian and
# the Go module proxy. Safe to run again: it installs only what is missing.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libprotobuf-dev protobuf-compiler zlib1g-dev libcli11-dev
  libelf-dev libdw-dev libdeflate-dev libcapstone-dev libgtest-dev googletest
  nlohmann-json3-dev jq
  clang libclang-rt-14-dev clang-format
  golang-1.19-go curl ca-certificates
  qemu-user-static libc6-arm64-cross
  libcurl4-openssl-dev libssl-dev libseccomp-dev prometheus gdb
  # The agents' HTTP listener: Boost.Beast and Asio, header-only (the arm64 cross build uses
  # the same headers), with OpenSSL (libssl-dev above) for TLS; openssl makes the TLS tests'
  # certificates.
  libboost-dev openssl
  # Packaging (scripts/package.sh, tests/e2e/packaging_test.sh): the static build's
  # compressors under libdw.a, the arm64 cross toolchain and arm64 libraries, the man page
  # generator, a Debian 12 root for the .deb test, and what the test runs.
  libzstd-dev liblzma-dev libbz2-dev g++-aarch64-linux-gnu
  libprotobuf-dev:arm64 zlib1g-dev:arm64 libelf-dev:arm64 libdw-dev:arm64
  libcapstone-dev:arm64 libseccomp-dev:arm64 libzstd-dev:arm64 liblzma-dev:arm64
  libbz2-dev:arm64 libssl-dev:arm64 libdeflate-dev:arm64
  help2man mmdebstrap zsh file dpkg-dev man-db systemd ccache
  # Tests only: tests/e2e/flamegraph_test.sh renders the flame graph pages in headless Chromium.
  chromium
)

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
# The arm64 libraries are Debian's multiarch packages; the static build compiles libcurl
# from its Debian source (scripts/debian-source.sh), which needs deb-src lines.
need_update=0
if ! dpkg --print-foreign-architectures | grep -x arm64 >/dev/null; then
  echo "install-deps: dpkg --add-architecture arm64"
  $sudo dpkg --add-architecture arm64
  need_update=1
fi
if ! apt-get indextargets --format '$(CREATED_BY)' 2>/dev/null | grep '^Sources$' >/dev/null &&
  ! grep -rqs '^Types:.*deb-src\|^deb-src ' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  echo "install-deps: adding deb-src lines for Debian 12 (/etc/apt/sources.list.d/goheap2pprof-deb-src.sources)"
  $sudo tee /etc/apt/sources.list.d/goheap2pprof-deb-src.sources >/dev/null <<'SOURCES'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  need_update=1
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$p")
done
if ((${#missing[@]} || need_update)); then
  $sudo apt-get update -qq
fi
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Go toolchains the tests cover (tests/go_toolchains.txt): the machine's go,
# Debian's Go 1.19 (above), Go 1.27.3, which the go command fetches through
# the module proxy once, and the toolchains of ../shared/toolchains beside
# the repository, unpacked into the cache (once; seconds when done before).
if ! command -v go >/dev/null; then
  echo "install-deps: no 'go' on PATH; installing Debian's golang-go" >&2
  DEBIAN_FRONTEND=noninteractive ${sudo:-} apt-get install -y -qq golang-go >/dev/null
fi
if ! GOTOOLCHAIN=go1.27.3 go version >/dev/null 2>&1; then
  echo "install-deps: could not fetch Go 1.27.3 through the module proxy; its tests fail unless GOHEAP2PPROF_ALLOW_MISSING_TOOLCHAINS=1" >&2
fi
bash "$(dirname "$0")/unpack-toolchains.sh"
echo "install-deps: ok"
