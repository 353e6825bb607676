#!/usr/bin/env bash
# The README's test command: installs missing dependencies, checks the
# formatting (.clang-format), configures, builds and runs every test (unit,
# fuzz corpus replay, end-to-end oracle, error cases, real pprof client), then
# the unit tests and corpus replays once more under AddressSanitizer +
# UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/check-format.sh
build=${BUILD_DIR:-build}
# GOHEAP2PPROF_WERROR=ON (set by .ci/run) makes any warning in our code fail the build.
werror=${GOHEAP2PPROF_WERROR:-OFF}
# The test builds have the test seams the end-to-end suites need (never a
# release build: scripts/package.sh leaves them out).
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGOHEAP2PPROF_WERROR="$werror" -DGOHEAP2PPROF_TEST_SEAMS=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure -j1 "$@"

if [[ ${GOHEAP2PPROF_SKIP_SANITIZERS:-0} == 1 ]]; then
  echo "test.sh: skipping the ASan+UBSan pass (GOHEAP2PPROF_SKIP_SANITIZERS=1)"
  exit 0
fi
asan=${build}-asan
cmake -S . -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGOHEAP2PPROF_SANITIZE=ON \
  -DGOHEAP2PPROF_WERROR="$werror" -DGOHEAP2PPROF_TEST_SEAMS=ON >/dev/null
cmake --build "$asan" -j"$(nproc)" --target unit_tests go_binary_tests fuzz_replays
# The Go tier reads the Go programs the first pass's fixture built.
GOHEAP2PPROF_GO_PROGRAMS_DIR=$(realpath "$build")/go-programs \
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --test-dir "$asan" --output-on-failure -j1 -E '^(e2e|go_programs)\.' -FS go_programs
