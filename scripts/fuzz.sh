#!/usr/bin/env bash
# Runs every libFuzzer target under ASan+UBSan for a while, starting from the
# committed seeds (testdata/fuzz/<target>/); new inputs go to a scratch corpus,
# crashes to build-fuzz/crashes/. Prints a table: target, runs, coverage, time.
#   bash scripts/fuzz.sh [seconds-per-target] [target ...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(procfs buildinfo elf pclntab heap block_cache cgroup core serve_query profile_delta push_profile)

bash scripts/install-deps.sh >/dev/null
build=build-fuzz
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGOHEAP2PPROF_FUZZ=ON -DGOHEAP2PPROF_SANITIZE=ON >/dev/null
cmake --build "$build" -j"$(nproc)" $(printf -- '--target fuzz_%s ' "${targets[@]}") >/dev/null
mkdir -p "$build/crashes"
printf '%-10s %12s %8s %8s %8s %s\n' target runs cov ft seconds result
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  mkdir -p "$corpus"
  log="$build/fuzz-$t.log"
  start=$(date +%s)
  status=ok
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$build/tests/fuzz/fuzz_$t" "$corpus" "testdata/fuzz/$t" -max_total_time="$seconds" \
    -rss_limit_mb=2048 -timeout=10 -artifact_prefix="$build/crashes/$t-" -print_final_stats=1 \
    > "$log" 2>&1 || status=FAILED
  end=$(date +%s)
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo '?')
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo '?')
  printf '%-10s %12s %8s %8s %8s %s\n' "$t" "$runs" "$cov" "$ft" "$((end - start))" "$status"
done
