#!/usr/bin/env bash
# The README's test command: installs missing dependencies, configures,
# builds and runs every test (unit, end-to-end oracle, real pprof client).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure -j1 "$@"
