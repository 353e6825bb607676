#!/usr/bin/env bash
# The README's demo: builds goheap2pprof and a small Go service that serves no
# pprof endpoint, captures the service's heap from outside, and shows it with
# go tool pprof -top. It installs the build set only (scripts/install-deps.sh without
# --test) and builds the capture alone: no tests (BUILD_TESTING=OFF: no GoogleTest to find)
# and no agent (GOHEAP2PPROF_AGENT=OFF: serve, push, watch, agent, mem and growth are left
# out, about half the compiler time); docs/contributing.md states how long it takes on a
# fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

work=$(mktemp -d)
go_build_pid=""
demo_pid=""
# Whatever was started is stopped and waited for, so that no demo process outlives the script.
# (A Go build still running after a failure is waited for: it ends in seconds.)
cleanup() {
  [[ -z $go_build_pid ]] || wait "$go_build_pid" 2>/dev/null || true
  if [[ -n $demo_pid ]]; then
    kill "$demo_pid" 2>/dev/null || true
    wait "$demo_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# The demo service compiles while the packages download (a cold Go build cache: about 20 s of
# CPU), when the machine has its Go already; otherwise install-deps installs Debian's first.
build_service() {
  (cd testdata/demo && go build -o "$work/demo-service" .) >"$work/go-build.log" 2>&1
}
if command -v go >/dev/null; then
  build_service &
  go_build_pid=$!
fi
bash scripts/install-deps.sh
build=${BUILD_DIR:-build-demo}
# ccache when the machine has it (a contributor's): a second demo then builds in seconds.
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Unoptimised, without debug information, and as a unity build (several sources per
# compiler run, so the big headers -- CLI11, nlohmann/json, Boost.Beast -- are compiled
# once per batch, not once per file): a sixth of a RelWithDebInfo build's compiler time
# (docs/contributing.md), and the demo's capture is as quick. The tool for real use is
# built as the README's Install says.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g0" \
  -DCMAKE_UNITY_BUILD=ON -DBUILD_TESTING=OFF -DGOHEAP2PPROF_AGENT=OFF "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)" --target goheap2pprof

status=0
if [[ -n $go_build_pid ]]; then
  wait "$go_build_pid" || status=$?
  go_build_pid=""
else
  build_service || status=$?
fi
if ((status)); then
  cat "$work/go-build.log" >&2
  echo "demo: building the demo service (testdata/demo) failed" >&2
  exit 1
fi
"$work/demo-service" > "$work/stdout" &
demo_pid=$!
for _ in $(seq 100); do
  grep -q READY "$work/stdout" 2>/dev/null && break
  sleep 0.1
done
grep -q READY "$work/stdout" || { echo "demo: the demo service did not start" >&2; exit 1; }

echo "demo: capturing the heap of demo-service (pid $demo_pid) from outside the process"
"$build/goheap2pprof" -v "$demo_pid" -o "$work/heap.pb.gz"
echo
echo "demo: go tool pprof -top $work/heap.pb.gz"
go tool pprof -top -nodecount=15 "$work/heap.pb.gz"
echo
echo "demo: $build/goheap2pprof has the capture alone (any pid, --core, every --format); the"
echo "demo: agent's commands (serve, push, watch, agent, mem, growth) come with the whole tool:"
echo "demo: see Install in README.md"
echo "demo: done in $((SECONDS - start)) s"
