#!/usr/bin/env bash
# Installs everything goheap2pprof needs to build and test, from Debian and
# the Go module proxy. Safe to run again: it installs only what is missing.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libprotobuf-dev protobuf-compiler zlib1g-dev libcli11-dev
  libelf-dev libdw-dev libcapstone-dev libgtest-dev googletest
  nlohmann-json3-dev jq
  clang libclang-rt-14-dev clang-format
  golang-1.19-go curl ca-certificates
  qemu-user-static libc6-arm64-cross
  libcpp-httplib-dev libseccomp-dev prometheus gdb
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
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
