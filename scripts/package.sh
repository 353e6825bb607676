#!/usr/bin/env bash
# Release files: the fully static goheap2pprof for linux/amd64 and linux/arm64 (cross-compiled
# with Debian's g++-aarch64-linux-gnu and arm64 multiarch libraries), each as
#   dist/goheap2pprof-<version>-linux-<arch>.tar.gz
#     goheap2pprof                        the static executable (stripped)
#     goheap2pprof.1                      the man page
#     completions/goheap2pprof            bash completion
#     completions/_goheap2pprof           zsh completion
#     systemd/goheap2pprof-serve.service  the serve unit, for /usr/local/bin/goheap2pprof
#     LICENSES/                           the licence of every library linked in (from Debian's
#                                         /usr/share/doc/<package>/copyright) and the common
#                                         licences they name
#     README.txt
# and, with --deb, the Debian package dist/goheap2pprof_<version>_<host arch>.deb, made by
# CPack from the ordinary dynamic build (cmake/packaging.cmake says why).
#
#   bash scripts/package.sh [--arch amd64|arm64|all] [--deb] [--no-tar] [--build-root DIR]
#                           [--dynamic-build DIR] [--out DIR]
#
# --build-root (default build-package): one build tree per arch, static-<arch>, reused by the
# next run (ccache is used when installed). --dynamic-build: the dynamic build tree the .deb is
# made from (default <build-root>/dynamic, configured here). Prints one line per file written.
# It installs what it needs first (scripts/install-deps.sh --package: seconds when all is there;
# its lines go to stderr), so a clone on a fresh Debian 12 machine is enough.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
archs=(amd64 arm64) deb=0 tar=1 root=$src/build-package out=$src/dist dynamic=""
while (($#)); do
  case $1 in
    --arch) [[ $2 == all ]] && archs=(amd64 arm64) || archs=("$2"); shift 2 ;;
    --deb) deb=1; shift ;;
    --no-tar) tar=0; shift ;;
    --build-root) root=$(realpath -m "$2"); shift 2 ;;
    --dynamic-build) dynamic=$(realpath -m "$2"); shift 2 ;;
    --out) out=$(realpath -m "$2"); shift 2 ;;
    *) echo "usage: $0 [--arch amd64|arm64|all] [--deb] [--no-tar] [--build-root DIR] [--dynamic-build DIR] [--out DIR]" >&2; exit 2 ;;
  esac
done
bash "$src/scripts/install-deps.sh" --package >&2
mkdir -p "$out" "$root"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# The release binaries are stripped, so the build directory in the debug info does not matter:
# let ccache share objects between build trees (a test's and a developer's).
# CCACHE_BASEDIR makes the absolute paths under the source tree relative, so build trees at the
# same depth (build-package/static-amd64, build/package/static-amd64) share their objects.
export CCACHE_NOHASHDIR=1 CCACHE_BASEDIR=$src
log=$root/package.log
: >"$log"

# build <dir> <cmake args...>: configures (once) and builds the tool and its docs; the output
# goes to $log and is shown when it fails.
build() {
  local dir=$1
  shift
  if ! { cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DBUILD_TESTING=OFF -DGOHEAP2PPROF_WERROR="${GOHEAP2PPROF_WERROR:-OFF}" \
    -DGOHEAP2PPROF_TEST_SEAMS=OFF "${launcher[@]}" "$@" &&
    cmake --build "$dir" -j"$(nproc)" --target goheap2pprof goheap2pprof_docs; } >>"$log" 2>&1; then
    echo "package: the build in $dir failed; the end of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
}

# static_check <binary>: fails unless it has no dynamic section and no interpreter.
static_check() {
  local what
  what=$(file -b "$1")
  if [[ $what != *"statically linked"* ]] || LC_ALL=C readelf -d "$1" | grep 'Dynamic section' >/dev/null ||
    LC_ALL=C readelf -l "$1" | grep 'INTERP' >/dev/null; then
    echo "package: $1 is not fully static: $what" >&2
    LC_ALL=C readelf -d "$1" | head -n 20 >&2
    exit 1
  fi
}

for arch in "${archs[@]}"; do
  dir=$root/static-$arch
  case $arch in
    amd64) build "$dir" -DGOHEAP2PPROF_STATIC=ON; strip_tool=strip; machine=x86-64 ;;
    arm64)
      build "$dir" -DGOHEAP2PPROF_STATIC=ON -DCMAKE_TOOLCHAIN_FILE="$src/cmake/aarch64-linux-gnu.cmake"
      strip_tool=aarch64-linux-gnu-strip machine=aarch64 ;;
    *) echo "package: unknown arch $arch (amd64 or arm64)" >&2; exit 2 ;;
  esac
  static_check "$dir/goheap2pprof"
  if [[ $(file -b "$dir/goheap2pprof") != *"$machine"* ]]; then
    echo "package: $dir/goheap2pprof is not a $machine executable" >&2
    exit 1
  fi
  "$strip_tool" -o "$dir/goheap2pprof.stripped" "$dir/goheap2pprof"
  echo "package: static linux/$arch $(stat -c %s "$dir/goheap2pprof.stripped") bytes: $dir/goheap2pprof.stripped"
  ((tar)) || continue

  version=$(sed -n 's/^project(goheap2pprof VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
  name=goheap2pprof-$version-linux-$arch
  stage=$root/stage/$name
  rm -rf "$stage"
  mkdir -p "$stage/completions" "$stage/systemd" "$stage/LICENSES/common-licenses"
  install -m 0755 "$dir/goheap2pprof.stripped" "$stage/goheap2pprof"
  install -m 0644 "$dir/packaging/goheap2pprof.1" "$stage/"
  install -m 0644 "$dir/packaging/completions/goheap2pprof" "$dir/packaging/completions/_goheap2pprof" \
    "$stage/completions/"
  install -m 0644 "$src/packaging/goheap2pprof-serve.service" "$stage/systemd/"
  install -m 0644 "$src/packaging/copyright" "$stage/LICENSES/goheap2pprof.txt"
  while read -r library package; do
    [[ -z $library || $library == \#* ]] && continue
    copyright=/usr/share/doc/$package/copyright
    if [[ ! -f $copyright ]]; then
      echo "package: $copyright is missing (is $package installed?)" >&2
      exit 1
    fi
    install -m 0644 "$copyright" "$stage/LICENSES/$library.txt"
    for common in $(grep -oE '/usr/share/common-licenses/[A-Za-z0-9.+_-]+' "$copyright" | sort -u); do
      [[ -f $common ]] && install -m 0644 "$common" "$stage/LICENSES/common-licenses/"
    done
  done <"$src/packaging/linked-libraries.txt"
  cat >"$stage/README.txt" <<TXT
goheap2pprof $version for linux/$arch: one static executable, no dependencies.

  install -m 0755 goheap2pprof /usr/local/bin/      # or run it from here
  goheap2pprof <pid> -o heap.pb.gz && go tool pprof -top heap.pb.gz
  man ./goheap2pprof.1

Optional: completions/goheap2pprof -> /usr/share/bash-completion/completions/,
completions/_goheap2pprof -> /usr/share/zsh/vendor-completions/,
systemd/goheap2pprof-serve.service -> /etc/systemd/system/ (see the comments in it).
LICENSES/ has the licence of goheap2pprof and of every library linked into it.
$("$dir/goheap2pprof" --version 2>/dev/null | sed -n '2,$p' || true)
TXT
  tarball=$out/$name.tar.gz
  tar -C "$root/stage" --owner=0 --group=0 --numeric-owner --sort=name -czf "$tarball.tmp" "$name"
  mv "$tarball.tmp" "$tarball"
  echo "package: $tarball ($(stat -c %s "$tarball") bytes)"
done

if ((deb)); then
  # A release never has the test seams: a test build tree (scripts/test.sh's) is not packaged.
  if [[ -n $dynamic ]] && grep -q '^GOHEAP2PPROF_TEST_SEAMS:BOOL=ON$' "$dynamic/CMakeCache.txt" 2>/dev/null; then
    echo "package: $dynamic was configured with GOHEAP2PPROF_TEST_SEAMS=ON; building the package in $root/dynamic" >&2
    dynamic=""
  fi
  if [[ -z $dynamic ]]; then
    dynamic=$root/dynamic
    build "$dynamic"
  elif ! cmake --build "$dynamic" -j"$(nproc)" --target goheap2pprof goheap2pprof_docs >>"$log" 2>&1; then
    echo "package: the build in $dynamic failed; the end of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  rm -rf "$root/cpack"
  if ! cpack --config "$dynamic/CPackConfig.cmake" -B "$root/cpack" >>"$log" 2>&1; then
    echo "package: cpack failed; the end of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  for f in "$root"/cpack/goheap2pprof_*.deb; do
    mv "$f" "$out/"
    echo "package: $out/$(basename "$f") ($(stat -c %s "$out/$(basename "$f")") bytes)"
  done
fi
