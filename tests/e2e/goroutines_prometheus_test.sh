#!/usr/bin/env bash
# A real program's goroutines: Debian's prometheus (/usr/bin/prometheus, or
# GOROUTINES_PROMETHEUS; stripped, go1.19.8, cgo, externally linked, so
# runtime.text is above .text and every runtime variable the goroutine
# reader needs is recovered from machine code) runs with a throwaway
# configuration that scrapes itself. Its own /debug/pprof/goroutine?debug=1
# and `goheap2pprof goroutines <pid> --format debug1`, taken right after,
# must list every parked goroutine with the same stack, PCs, frames and
# count, but for the request's own: the handler that writes the profile,
# its connection's background read, and a goroutine the request just
# created (only runtime.goexit). An idle server connection may differ by
# one (the request's, parked until the client's close reaches it). A
# scrape or a query running in between changes stacks: up to five pairs are
# taken, and one must match. The same for its ?debug=2 dump: every goroutine
# in both dumps but the request's has the same header (wait reason; minutes
# within one), frames, +0x offsets and created-by lines, argument lists
# masked (we print "(...)"), and at most the request's three are only in
# its dump.
#
#   bash tests/e2e/goroutines_prometheus_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# Exit status: 0 passed, 1 failed, 77 skipped (no prometheus, no curl).
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
e2e_require_executables "$tool"
prometheus=${GOROUTINES_PROMETHEUS:-/usr/bin/prometheus}
if [[ ! -x $prometheus ]]; then
  echo "SKIP: no prometheus at $prometheus (Debian's package prometheus; GOROUTINES_PROMETHEUS=path)"
  exit 77
fi
if ! command -v curl >/dev/null; then
  echo "SKIP: no curl to ask prometheus for its own goroutine profile"
  exit 77
fi
e2e_make_work goroutines_prometheus
trap e2e_stop_pids EXIT
trap 'exit 1' INT TERM

# compare <theirs.txt> <ours.txt>: every record of theirs but the request's
# is in ours with the same count, and ours has no other; a
# net/http.(*conn).serve record may count one more or one less.
compare() {
  python3 - "$1" "$2" <<'PY'
import sys
def records(path):
    body = open(path).read().split('\n', 1)[1]
    out = {}
    for r in body.split('\n\n'):
        if not r.strip():
            continue
        count, rest = r.strip('\n').split(' ', 1)
        out[rest] = int(count)
    return out
def request_own(key):
    frames = [l for l in key.split('\n') if l.startswith('#\t')]
    return (not frames or 'runtime/pprof.writeGoroutine' in key or
            'net/http.(*connReader).backgroundRead' in key)
theirs = {k: n for k, n in records(sys.argv[1]).items() if not request_own(k)}
ours = {k: n for k, n in records(sys.argv[2]).items() if not request_own(k)}
bad = []
for k in sorted(set(theirs) | set(ours)):
    a, b = theirs.get(k, 0), ours.get(k, 0)
    slack = 1 if 'net/http.(*conn).serve' in k else 0
    if abs(a - b) > slack:
        bad.append(f"theirs {a}, ours {b}:\n{k}")
if bad:
    sys.exit(f"{len(bad)} records differ; the first:\n" + bad[0])
if len(theirs) < 10:
    sys.exit(f"only {len(theirs)} records to compare")
print(f"{len(theirs)} stacks of {sum(theirs.values())} parked goroutines")
PY
}

# compare2 <theirs2.txt> <ours2.txt>: the dumps, as above.
compare2() {
  PYTHONPATH="$src/tests/e2e" python3 - "$1" "$2" <<'PY'
import sys
from goroutine_dump import blocks
def request_own(block):
    status, _, body = block
    text = '\n'.join(body)
    return (status == 'running' or 'runtime/pprof.writeGoroutine' in text or
            'net/http.(*connReader).backgroundRead' in text)
theirs, ours = blocks(sys.argv[1]), blocks(sys.argv[2])
shared = [g for g in theirs if g in ours and not request_own(theirs[g])]
only = [g for g in theirs if g not in ours]
for g in shared:
    (s1, m1, b1), (s2, m2, b2) = theirs[g], ours[g]
    if s1 != s2 or abs(m1 - m2) > 1 or b1 != b2:
        sys.exit(f"goroutine {g} differs:\ntheirs [{s1}]\n" + '\n'.join(b1) +
                 f"\nours [{s2}]\n" + '\n'.join(b2))
if len(only) > 3 or len(shared) < 20:
    sys.exit(f"{len(shared)} goroutines in both dumps, {len(only)} only in theirs: {only[:5]}")
print(f"{len(shared)} goroutines")
PY
}

dir=$work/prometheus
mkdir -p "$dir"
port=$(e2e_free_port)
cat >"$dir/prometheus.yml" <<YAML
global:
  scrape_interval: 5s
scrape_configs:
  - job_name: self
    static_configs:
      - targets: ['127.0.0.1:$port']
YAML
e2e_start "$dir/prometheus.out" "$dir/prometheus.err" "$prometheus" \
  --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
  --web.listen-address="127.0.0.1:$port"
pid=$target_pid
base=http://127.0.0.1:$port
# Ready, and its first scrape of itself done: the scrape's goroutines exist.
if ! e2e_wait_until 60 bash -c "curl -sf '$base/api/v1/query?query=up' | grep -q '\"1\"\\]'"; then
  fail "prometheus did not start or scrape itself" "$dir/prometheus.err"
  e2e_finish
fi
version=$(LC_ALL=C "$prometheus" --version 2>&1 | head -n 1)
# pairs <debug 1|2> <compare function> <what>: up to five pairs of its
# endpoint's and ours, taken right after; one must match.
pairs() {
  local d=$1 check=$2 what=$3 i matched=0
  for i in 1 2 3 4 5; do
    curl -sf "$base/debug/pprof/goroutine?debug=$d" -o "$dir/theirs$d-$i.txt" ||
      { fail "prometheus's own goroutine profile" "$dir/prometheus.err"; return; }
    if ! "$tool" goroutines "$pid" --format "debug$d" -o "$dir/ours$d-$i.txt" -v \
      2>"$dir/tool$d-$i.err"; then
      fail "goheap2pprof goroutines $pid (prometheus) failed" "$dir/tool$d-$i.err"
      return
    fi
    if "$check" "$dir/theirs$d-$i.txt" "$dir/ours$d-$i.txt" >"$dir/compare$d-$i.out" 2>&1; then
      matched=$i
      break
    fi
    sleep 1
  done
  if ((matched)); then
    pass "$version debug=$d: $(cat "$dir/compare$d-$matched.out") $what (pair $matched); $(grep -c 'recovered from' "$dir/tool$d-$matched.err") variables recovered from code"
  else
    fail "prometheus debug=$d: no pair of five matched ($dir)" "$dir/compare$d-5.out"
  fi
}

pairs 1 compare "equal to its own endpoint's"
pairs 2 compare2 "with the same headers, frames, +0x offsets and creators as its own dump"
e2e_stop_pids
e2e_finish
