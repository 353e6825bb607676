#!/usr/bin/env bash
# Installs what goheap2pprof needs, from Debian and the Go module proxy. Safe to
# run again: it installs only what is missing.
#
#   bash scripts/install-deps.sh          # the build set: build goheap2pprof and run
#                                         # scripts/demo.sh (compilers, libraries, Go)
#   bash scripts/install-deps.sh --quick  # the build set and what `scripts/test.sh --quick`
#                                         # runs: GoogleTest, clang-format, ccache
#   bash scripts/install-deps.sh --package  # the build set and the package set: what
#                                         # scripts/package.sh needs (the static build's
#                                         # archives, the arm64 cross toolchain and
#                                         # libraries, qemu, deb-src lines for the Debian
#                                         # sources of libcurl and ISA-L); package.sh runs it
#   bash scripts/install-deps.sh --test   # the build, package and test sets: everything
#                                         # scripts/test.sh runs (clang, mmdebstrap,
#                                         # prometheus, chromium, the Go toolchains, ...)
#
# The demo must not wait for the test set: on a fresh Debian 12 machine the test set is
# several times the build set (docs/contributing.md has the counts and times).
set -euo pipefail

want_test=0
want_quick=0
want_package=0
case ${1:-} in
  "") ;;
  --test) want_test=1 want_package=1 ;;
  --quick) want_quick=1 ;;
  --package) want_package=1 ;;
  *) echo "usage: $0 [--quick | --package | --test]" >&2; exit 2 ;;
esac

# What `cmake` configures and `cmake --build --target goheap2pprof` compiles (help2man:
# the man page target is part of the configured project). Go comes below.
build_packages=(
  cmake ninja-build g++ pkg-config
  libprotobuf-dev protobuf-compiler zlib1g-dev libcli11-dev
  libelf-dev libdw-dev libdeflate-dev libisal-dev libcapstone-dev
  nlohmann-json3-dev
  libcurl4-openssl-dev libssl-dev libseccomp-dev
  # The agents' HTTP listener: Boost.Beast and Asio, header-only, with OpenSSL (libssl-dev
  # above) for TLS.
  libboost-dev
  help2man ca-certificates
)

# What scripts/package.sh needs beyond the build set: the static build's compressors under
# libdw.a, ISA-L's own makefile and x86-64 assembly for the static build's archive of it
# (cmake/static.cmake), dpkg-dev for `apt-get source` (libcurl's and ISA-L's Debian source,
# below) and for the .deb's dpkg-shlibdeps, the arm64 cross toolchain and arm64 libraries,
# qemu to run the arm64 binary for its man page and completions, and `file` for the static
# check.
package_packages=(
  libzstd-dev liblzma-dev libbz2-dev make nasm dpkg-dev file
  g++-aarch64-linux-gnu qemu-user-static
  libprotobuf-dev:arm64 zlib1g-dev:arm64 libelf-dev:arm64 libdw-dev:arm64
  libcapstone-dev:arm64 libseccomp-dev:arm64 libzstd-dev:arm64 liblzma-dev:arm64
  libbz2-dev:arm64 libssl-dev:arm64 libdeflate-dev:arm64
)

# What scripts/test.sh needs beyond the build and package sets: the unit tests, the format
# check, the sanitizer and fuzz builds (clang), the e2e suites' tools, and the toolchains they
# test.
test_packages=(
  libgtest-dev googletest jq curl python3 procps
  clang libclang-rt-14-dev clang-format ccache
  golang-1.19-go
  libc6-arm64-cross
  prometheus gdb openssl
  # The flame graph's tests render it in headless Chromium.
  chromium
  # tests/e2e/identity_test.sh runs a Go target in a podman container (libpod-<id>.scope).
  podman conmon
  # tests/e2e/packaging_test.sh (scripts/package.sh's set above): a Debian 12 root for the
  # .deb test, and what the test runs.
  mmdebstrap zsh man-db systemd
  # The agent's OCI image (tests/e2e/image_test.sh): real readers of the layout.
  umoci skopeo
  # tests/e2e/containerd_test.sh: real pods through the CRI (crictl comes from the Go
  # module proxy, below), and the DaemonSet's YAML read into its CRI view.
  containerd runc python3-yaml
  # tests/e2e/agent_hang_test.sh: a FUSE mount that hangs under a target (tests/e2e/hangfs.c).
  fuse3 libfuse3-dev
)

# The quick path (format check, unit tests, the oracle on the machine's Go) needs only these
# beyond the build set: not the minutes of the test set's downloads and Go builds.
quick_packages=(libgtest-dev googletest clang-format ccache)

packages=("${build_packages[@]}")
((want_package)) && packages+=("${package_packages[@]}")
((want_test)) && packages+=("${test_packages[@]}")
((want_quick)) && packages+=("${quick_packages[@]}")
# The demo builds a Go service and reads the profile with `go tool pprof`: the machine's go,
# or Debian's (1.19, enough for testdata/demo; the tests need the toolchains of
# tests/go_toolchains.txt besides).
command -v go >/dev/null || packages+=(golang-go)

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
# The arm64 libraries are Debian's multiarch packages; the static build compiles libcurl
# from its Debian source (scripts/debian-source.sh), which needs deb-src lines.
need_update=0
if ((want_package)) && ! dpkg --print-foreign-architectures | grep -x arm64 >/dev/null; then
  echo "install-deps: dpkg --add-architecture arm64"
  $sudo dpkg --add-architecture arm64
  need_update=1
fi
if ((want_package)) && ! apt-get indextargets --format '$(CREATED_BY)' 2>/dev/null | grep '^Sources$' >/dev/null &&
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
apt_install() {
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
# The package lists a machine already has are tried first: refreshing them cost a fresh
# machine most of 25 s of the demo's 165 (docs/contributing.md). Lists too old for the mirror fail the
# download (before anything is unpacked); then they are refreshed and the install runs again.
have_lists=0
compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null && have_lists=1
if ((need_update || (${#missing[@]} && !have_lists))); then
  $sudo apt-get update -qq
fi
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  if ! apt_install 2>/dev/null; then
    echo "install-deps: the package lists are out of date; apt-get update, then installing again"
    $sudo apt-get update -qq
    apt_install
  fi
fi

if ((want_quick)); then
  echo "install-deps: ok (the build set and the quick path's)"
  exit 0
fi
if ((want_package && !want_test)); then
  echo "install-deps: ok (the build and package sets)"
  exit 0
fi
if ((!want_test)); then
  echo "install-deps: ok (the build set; --test adds what the tests need)"
  exit 0
fi
# Go toolchains the tests cover (tests/go_toolchains.txt): the machine's go,
# Debian's Go 1.19 (above), Go 1.27.3, which the go command fetches through
# the module proxy once, and the toolchains of ../shared/toolchains beside
# the repository, unpacked into the cache (once; seconds when done before).
if ! GOTOOLCHAIN=go1.27.3 go version >/dev/null 2>&1; then
  echo "install-deps: could not fetch Go 1.27.3 through the module proxy; its tests fail unless GOHEAP2PPROF_ALLOW_MISSING_TOOLCHAINS=1" >&2
fi
bash "$(dirname "$0")/unpack-toolchains.sh"
# helm v3.22 for tests/e2e/deploy_manifests_test.sh (which installs it into the build tree
# itself when this could not): built from source through the Go module proxy, once per machine
# (minutes on a cold Go cache), into /usr/local/bin.
if [[ $(helm version --short 2>/dev/null) != v3.22* ]] &&
  ! GOBIN=/usr/local/bin GOFLAGS=-mod=mod timeout 1500 go install helm.sh/helm/v3/cmd/helm@v3.22.0 >/dev/null 2>&1; then
  echo "install-deps: could not build helm v3.22.0 through the Go module proxy; deploy_manifests_test will try again" >&2
fi
# crictl v1.37.0 for tests/e2e/containerd_test.sh (which installs it into the build tree
# itself when this could not): cri-tools through the Go module proxy, once per machine.
if ! go version -m "$(command -v crictl)" 2>/dev/null | grep "mod.*sigs.k8s.io/cri-tools.*v1.37.0" >/dev/null &&
  ! GOBIN=/usr/local/bin timeout 1500 go install sigs.k8s.io/cri-tools/cmd/crictl@v1.37.0 >/dev/null 2>&1; then
  echo "install-deps: could not build crictl v1.37.0 through the Go module proxy; containerd_test will try again" >&2
fi
# Parca v0.28.0 for tests/e2e/serve_parca_test.sh and push_parca_test.sh: in no package
# registry, and `go install` is refused by the module proxy (its version-list
# request answers 403), so it is built from a scratch module that requires it; once per machine
# (some 10 minutes on 2 cores), into /usr/local/bin.
if ! go version -m "$(command -v parca)" 2>/dev/null | grep "mod.*github.com/parca-dev/parca.*v0.28.0" >/dev/null; then
  echo "install-deps: building Parca v0.28.0 through the Go module proxy (once per machine)"
  parca_src=$(mktemp -d)
  if ! (cd "$parca_src" && go mod init parcatest && GOFLAGS=-mod=mod go get github.com/parca-dev/parca/cmd/parca@v0.28.0 &&
    timeout 1500 go build -o /usr/local/bin/parca github.com/parca-dev/parca/cmd/parca) >"$parca_src.log" 2>&1; then
    echo "install-deps: could not build Parca v0.28.0 ($parca_src.log); the two Parca suites will skip and say so" >&2
  fi
  rm -rf "$parca_src"
fi
echo "install-deps: ok (the build and test sets)"
