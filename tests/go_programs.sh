#!/usr/bin/env bash
# The CTest fixture of the Go tier (FIXTURES_SETUP go_programs): builds every
# Go test program once per toolchain of tests/go_toolchains.txt and build
# mode into <build>/go-programs/<version>/, where the suites that need them
# (go_binary_tests, e2e.oracle_test, e2e.stripped_oracle_test,
# e2e.arm64_qemu_test, e2e.goroutines_test, ...) read them instead of
# building their own.
#
#   bash tests/go_programs.sh <build-dir>
#
# <build>/go-programs/status gets one line per toolchain:
#   <version> ok
#   <version> skip <why>    allowed to be missing: a "shared" toolchain when
#                           the shared folder does not exist, or any toolchain
#                           with GOHEAP2PPROF_ALLOW_MISSING_TOOLCHAINS=1
#   <version> fail <why>    missing or failing to build: the suites FAIL
# GOHEAP2PPROF_GO_VERSIONS="go1.26.8 ..." limits the build to those toolchains (the others
# get "skip not selected"), and GOHEAP2PPROF_GO_PROGRAMS="oracle-amd64-exe ..." to those
# programs: scripts/test.sh --quick.
# A program is rebuilt only when its toolchain, flags or sources change (the
# key beside it). Exit status: 0 when every toolchain is ok or allowed to be
# skipped, 1 otherwise (the suites then report each failed toolchain too).
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:?usage: $0 <build-dir>}")
source "$src/tests/e2e/lib.sh"
e2e_go_cache_fallback "$bin"
out=$bin/go-programs
mkdir -p "$out"

bash "$src/scripts/unpack-toolchains.sh" || echo "FAIL: unpacking the shared toolchains (above)"

# build_one <version> <program> <arch> <mode exe|pie> <cgo 0|1> <variant
# plain|stripped|twin|mod127>: builds testdata/<program> into
# $out/<version>/<name>, name = <basename>-<arch>-<mode>[-cgo][-<variant>].
build_one() {
  local version=$1 program=$2 arch=$3 mode=$4 cgo=$5 variant=$6 name key flags=()
  name=$(basename "$program")-$arch-$mode$([[ $cgo == 1 ]] && echo -cgo)
  [[ $variant != plain ]] && name+=-$variant
  # GOHEAP2PPROF_GO_PROGRAMS="<name> ..." builds those programs only (scripts/test.sh --quick:
  # the three the oracle suite runs); the suites that need the others then fail, not skip.
  if [[ -n ${GOHEAP2PPROF_GO_PROGRAMS:-} && " $GOHEAP2PPROF_GO_PROGRAMS " != *" $name "* ]]; then
    return 0
  fi
  # The twin's -ldflags has the length of the stripped one's: build info
  # records the flags, and another length would move every data section.
  local ldflags=""
  case $variant in
    stripped) ldflags="-s -w" ;;
    twin) ldflags="-w -w" ;;
  esac
  # testdata/goroutines has no C of its own: its cgo build is linked
  # externally on purpose (.text then starts 0x100 below runtime.text).
  [[ $program == goroutines && $cgo == 1 ]] && ldflags+="${ldflags:+ }-linkmode=external"
  [[ -n $ldflags ]] && flags+=("-ldflags=$ldflags")
  # Its module's go.mod says go 1.27: the GODEBUG defaults are Go 1.27's.
  [[ $variant == mod127 ]] && flags+=(-modfile=go127.mod)
  [[ ($program == oracle || $program == memstats) && $cgo == 1 ]] && flags+=(-tags withcgo)
  key="$version_text|$arch|$mode|$cgo|${flags[*]}|$(cat "$src/testdata/$program"/*.go \
    "$src/testdata/$program"/*.mod | md5sum)"
  if [[ -x $out/$version/$name && $(cat "$out/$version/$name.key" 2>/dev/null) == "$key" ]]; then
    return 0
  fi
  rm -f "$out/$version/$name" "$out/$version/$name.key"
  if ! (cd "$src/testdata/$program" &&
    env GOARCH="$arch" CGO_ENABLED="$cgo" $(go_cmd "$version") build -buildmode="$mode" \
      "${flags[@]}" -o "$out/$version/$name" .) >"$out/$version/$name.log" 2>&1; then
    echo "FAIL $version: go build of $name"
    sed 's/^/    /' "$out/$version/$name.log" | tail -n 20
    return 1
  fi
  if [[ $variant == stripped ]] && LC_ALL=C readelf -S "$out/$version/$name" | grep -q ' \.symtab '; then
    echo "FAIL $version: $name still has a .symtab"
    return 1
  fi
  echo "$key" >"$out/$version/$name.key"
  built=$((built + 1))
}

# The programs of one toolchain; returns 1 when one does not build.
build_all() {
  local version=$1 ok=0 arch mode cgo variant
  for mode in exe pie; do
    for cgo in 0 1; do
      build_one "$version" gobin/frames amd64 "$mode" "$cgo" plain || ok=1
    done
  done
  for arch in amd64 arm64; do
    for mode in exe pie; do
      for cgo in 0 1; do
        [[ $arch == arm64 && $cgo == 1 ]] && continue  # no arm64 C compiler
        for variant in stripped twin; do
          build_one "$version" gobin/heapvars "$arch" "$mode" "$cgo" "$variant" || ok=1
        done
      done
    done
  done
  for mode in exe pie; do
    for variant in plain stripped; do
      build_one "$version" oracle amd64 "$mode" 0 "$variant" || ok=1
      if toolchain_arm64_live "$version"; then
        build_one "$version" oracle arm64 "$mode" 0 "$variant" || ok=1
      fi
    done
  done
  # One cgo (externally linked) build per version, and its stripped PIE: an
  # externally linked PIE before 1.26 has no pclntab section at all.
  build_one "$version" oracle amd64 exe 1 plain || ok=1
  build_one "$version" oracle amd64 pie 1 stripped || ok=1
  # The memory-statistics oracle (tests/e2e/memstats_oracle_test.sh).
  for mode in exe pie; do
    build_one "$version" memstats amd64 "$mode" 0 plain || ok=1
  done
  build_one "$version" memstats amd64 exe 1 plain || ok=1
  # Its stripped builds (the variables recovered from machine code, the
  # per-version layout tables) and, where arm64 runs live, arm64 builds for
  # qemu (tests/e2e/memstats_variants_test.sh).
  for mode in exe pie; do
    build_one "$version" memstats amd64 "$mode" 0 stripped || ok=1
  done
  build_one "$version" memstats amd64 pie 1 stripped || ok=1
  if toolchain_arm64_live "$version"; then
    build_one "$version" memstats arm64 exe 0 plain || ok=1
    build_one "$version" memstats arm64 pie 0 stripped || ok=1
  fi
  # The goroutine oracle (tests/e2e/goroutines_test.sh, serve_goroutine_test.sh):
  # plain, as a stripped PIE and, on goroutines_cgo_versions (lib.sh), as a
  # stripped externally linked cgo PIE.
  build_one "$version" goroutines amd64 exe 0 plain || ok=1
  build_one "$version" goroutines amd64 pie 0 stripped || ok=1
  if [[ " $goroutines_cgo_versions " == *" $version "* ]]; then
    build_one "$version" goroutines amd64 pie 1 stripped || ok=1
  fi
  # And for qemu (tests/e2e/goroutines_arm64_test.sh), where arm64 runs live.
  if toolchain_arm64_live "$version"; then
    build_one "$version" goroutines arm64 exe 0 plain || ok=1
    build_one "$version" goroutines arm64 pie 0 stripped || ok=1
  fi
  # From Go 1.27, a build of a go 1.27 module, whose dump's headers show the
  # goroutines' pprof labels by default (GODEBUG tracebacklabels=1).
  if [[ $(toolchain_minor "$version") -ge 27 ]]; then
    build_one "$version" goroutines amd64 exe 0 mod127 || ok=1
  fi
  # The target of the sampling-state and enable-sampling suites
  # (tests/e2e/sampling_state_test.sh, enable_sampling_test.sh): it links no
  # runtime/pprof. A PIE and a stripped build, and arm64 for qemu.
  build_one "$version" sampling amd64 exe 0 plain || ok=1
  build_one "$version" sampling amd64 pie 0 stripped || ok=1
  if toolchain_arm64_live "$version"; then
    build_one "$version" sampling arm64 exe 0 plain || ok=1
  fi
  return $ok
}

status=0 built=0 start=$SECONDS
: >"$out/status.new"
shared_absent=()
for version in $(toolchain_versions); do
  # GOHEAP2PPROF_GO_VERSIONS="v ..." (scripts/test.sh --quick) builds for those only; the
  # suites skip the others, saying why.
  if [[ -n ${GOHEAP2PPROF_GO_VERSIONS:-} && " $GOHEAP2PPROF_GO_VERSIONS " != *" $version "* ]]; then
    echo "$version skip not selected (GOHEAP2PPROF_GO_VERSIONS=$GOHEAP2PPROF_GO_VERSIONS)" >>"$out/status.new"
    continue
  fi
  mkdir -p "$out/$version"
  if ! why=$(toolchain_ok "$version"); then
    if [[ $(toolchain_how "$version") == shared && ! -d $toolchains_shared ]]; then
      echo "$version skip no shared folder $toolchains_shared" >>"$out/status.new"
      shared_absent+=("$version")
    elif [[ ${GOHEAP2PPROF_ALLOW_MISSING_TOOLCHAINS:-0} == 1 ]]; then
      echo "SKIP $version: $why (allowed by GOHEAP2PPROF_ALLOW_MISSING_TOOLCHAINS=1)"
      echo "$version skip $why (allowed by GOHEAP2PPROF_ALLOW_MISSING_TOOLCHAINS=1)" >>"$out/status.new"
    else
      echo "FAIL $version: $why (set GOHEAP2PPROF_ALLOW_MISSING_TOOLCHAINS=1 to skip it)"
      echo "$version fail $why" >>"$out/status.new"
      status=1
    fi
    continue
  fi
  version_text=$($(go_cmd "$version") version)
  if build_all "$version"; then
    echo "$version ok" >>"$out/status.new"
  else
    echo "$version fail a test program did not build (see $out/$version/*.log)" >>"$out/status.new"
    status=1
  fi
done
mv "$out/status.new" "$out/status"
if ((${#shared_absent[@]})); then
  echo "SKIP ${shared_absent[*]}: $toolchains_shared does not exist (only a clone beside a copy of shared/ tests them)"
fi
echo "go_programs: $built programs built in $((SECONDS - start)) s; status in $out/status:"
sed 's/^/  /' "$out/status"
exit $status
