#!/usr/bin/env bash
# The README's test command: installs missing dependencies, configures,
# builds and runs every test (unit, fuzz corpus replay, end-to-end oracle,
# error cases, real pprof client), then the unit tests and corpus replays
# once more under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure -j1 "$@"

if [[ ${GOHEAP2PPROF_SKIP_SANITIZERS:-0} == 1 ]]; then
  echo "test.sh: skipping the ASan+UBSan pass (GOHEAP2PPROF_SKIP_SANITIZERS=1)"
  exit 0
fi
asan=${build}-asan
cmake -S . -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGOHEAP2PPROF_SANITIZE=ON >/dev/null
cmake --build "$asan" -j"$(nproc)" --target unit_tests \
  fuzz_replay_procfs fuzz_replay_buildinfo fuzz_replay_elf fuzz_replay_pclntab fuzz_replay_heap \
  fuzz_replay_cgroup
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --test-dir "$asan" --output-on-failure -j1 -E '^e2e\.'
