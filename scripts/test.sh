#!/usr/bin/env bash
# The README's test command. Two paths (docs/contributing.md states how long each takes):
#
#   bash scripts/test.sh            # everything: installs what is missing (the test set of
#                                   # scripts/install-deps.sh), checks the formatting
#                                   # (.clang-format), configures, builds and runs every test
#                                   # in parallel (unit, Go tier, fuzz corpus replays, every
#                                   # end-to-end suite), then the unit tests, Go tier and corpus
#                                   # replays once more under AddressSanitizer +
#                                   # UndefinedBehaviorSanitizer
#   bash scripts/test.sh --quick    # before a commit: the format check, a build of its own
#                                   # (build-quick/: Debug -O0 -g0, a unity build), the unit
#                                   # tests and the oracle suite on one Go version (go1.26.8)
#
# Extra arguments go to the first ctest run of the full path (e.g. -L e2e, -R serve,
# -LE fuzz). GOHEAP2PPROF_TEST_JOBS=N runs N tests at once (default: nproc); the suites may
# run side by side (tests/CMakeLists.txt names the few shared resources as locks).
# GOHEAP2PPROF_SKIP_SANITIZERS=1 skips the sanitizer pass.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
if [[ ${1:-} == --quick ]]; then
  quick=1
  shift
  if (($#)); then
    echo "usage: $0 --quick (no ctest arguments: it runs a fixed set)" >&2
    exit 2
  fi
fi
jobs=${GOHEAP2PPROF_TEST_JOBS:-$(nproc)}
start=$SECONDS
# step <what>: one line per step with the time since the start, so that a slow step shows.
step() {
  echo "test.sh: [$((SECONDS - start)) s] $1"
}
# unit_shards <unit_tests>: runs the binary as two gtest shards at once; prints each shard's
# brief output (failures and the summary) and fails if either failed.
unit_shards() {
  local dir shard status=0 pids=()
  dir=$(mktemp -d)
  for shard in 0 1; do
    GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$shard "$1" --gtest_brief=1 >"$dir/$shard" 2>&1 &
    pids+=($!)
  done
  for shard in 0 1; do
    wait "${pids[$shard]}" || status=1
    echo "unit tests, shard $((shard + 1)) of 2:"
    cat "$dir/$shard"
  done
  rm -rf "$dir"
  return "$status"
}

if ((quick)); then
  step "dependencies (scripts/install-deps.sh --quick)"
  bash scripts/install-deps.sh --quick
else
  step "dependencies (scripts/install-deps.sh --test)"
  bash scripts/install-deps.sh --test
fi
step "format check"
bash scripts/check-format.sh
build=${BUILD_DIR:-build}
# GOHEAP2PPROF_WERROR=ON (set by .ci/run) makes any warning in our code fail the build.
werror=${GOHEAP2PPROF_WERROR:-OFF}
# ccache when installed (the test set has it): a second run rebuilds in seconds.
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
# The test builds have the test seams the end-to-end suites need (never a
# release build: scripts/package.sh leaves them out).

if ((quick)); then
  # Its own build directory, unoptimised, without debug information and as a unity build
  # (several sources per compiler run), as scripts/demo.sh builds: about a third of the
  # RelWithDebInfo build's compiler time (docs/contributing.md). The full path below builds
  # as the release does, and runs everything on that build.
  build=${BUILD_DIR:-build-quick}
  step "configure and build ($build: Debug -O0 -g0, unity)"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g0" \
    -DCMAKE_UNITY_BUILD=ON -DBUILD_TESTING=ON -DGOHEAP2PPROF_WERROR="$werror" \
    -DGOHEAP2PPROF_TEST_SEAMS=ON "${launcher[@]}" >/dev/null
  # The oracle's three Go programs build while the tool does (the fixture builds only
  # those: all of them, for one toolchain, took 88 of its 93 s). With a cold Go cache that
  # is the standard library too, about 30 s, much of it I/O and linking that the compiler
  # runs leave room for. The fixture in the oracle step then finds them built; if this
  # build failed, it builds them again and reports why.
  export GOHEAP2PPROF_GO_VERSIONS=go1.26.8
  export GOHEAP2PPROF_GO_PROGRAMS="oracle-amd64-exe oracle-amd64-pie oracle-amd64-exe-cgo"
  bash tests/go_programs.sh "$build" >"$build/go-programs-early.log" 2>&1 &
  go_programs=$!
  trap 'kill "$go_programs" 2>/dev/null || true' EXIT
  cmake --build "$build" -j"$(nproc)" --target goheap2pprof unit_tests profdiff
  step "unit tests"
  # The whole binary in two shards side by side (a third of its 15 s is listener tests
  # waiting on deadlines): the same tests as ctest -L unit, without a process per test.
  unit_shards "$build/tests/unit_tests"
  wait "$go_programs" || echo "test.sh: the early Go build failed (the oracle step retries it)"
  trap - EXIT
  step "oracle suite on go1.26.8 (with the go_programs fixture for its three programs only)"
  ORACLE_VERSIONS=go1.26.8 ctest --test-dir "$build" --output-on-failure -R '^e2e\.oracle_test$'
  step "quick path passed"
  exit 0
fi

step "configure and build ($build)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON \
  -DGOHEAP2PPROF_WERROR="$werror" -DGOHEAP2PPROF_TEST_SEAMS=ON "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
step "every test, $jobs at a time"
ctest --test-dir "$build" --output-on-failure -j"$jobs" "$@"

if [[ ${GOHEAP2PPROF_SKIP_SANITIZERS:-0} == 1 ]]; then
  step "skipping the ASan+UBSan pass (GOHEAP2PPROF_SKIP_SANITIZERS=1)"
  exit 0
fi
asan=${build}-asan
step "sanitizer build ($asan)"
cmake -S . -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGOHEAP2PPROF_SANITIZE=ON -DBUILD_TESTING=ON \
  -DGOHEAP2PPROF_WERROR="$werror" -DGOHEAP2PPROF_TEST_SEAMS=ON "${launcher[@]}" >/dev/null
cmake --build "$asan" -j"$(nproc)" --target unit_tests go_binary_tests fuzz_replays
step "unit tests, Go tier and corpus replays under ASan+UBSan, $jobs at a time"
# The Go tier reads the Go programs the first pass's fixture built; no e2e suite runs here.
GOHEAP2PPROF_GO_PROGRAMS_DIR=$(realpath "$build")/go-programs \
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --test-dir "$asan" --output-on-failure -j"$jobs" -E '^(e2e|go_programs)\.' -FS go_programs
step "all passed"
