#!/usr/bin/env bash
# serve's /pid/N/metrics?names=otel: the Go runtime's metrics of a process
# under OpenTelemetry's semantic-convention names, written as OTel's
# Prometheus exporter writes them (go_memory_used_bytes{go_memory_type=...},
# counters with _total, otel_scope_name/otel_scope_version labels):
#   - promtool (Prometheus's own parser and linter) accepts the text, but
#     for its remark on the _count ending of OTel's go_goroutine_count;
#   - names=prometheus is today's client_golang text, any other names 400;
#   - the oracle: each target holds still (testdata/metricstarget), then
#     reads its own runtime/metrics; every sample must equal what the
#     conventions compute from the target's own numbers, exactly, and the
#     set of samples must be exactly the expected one: with GOGC=50 and
#     GOMEMLIMIT all nine metrics, with GOGC=off and no limit neither
#     go.config.gogc nor go.memory.limit (the conventions have no value for
#     them), and on Go 1.19.8 (no /gc/gogc:percent, no /gc/gomemlimit:bytes)
#     neither.
#
#   bash tests/e2e/serve_otel_metrics_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command curl "needs curl"
e2e_require_command python3 "needs python3"
e2e_make_work serve-otel-metrics
trap 'exec 7>&- 8>&- 9>&-; e2e_stop_pids -9' EXIT

e2e_go_build metricstarget "$work/mt126"
if why=$(toolchain_ok go1.19.8); then
  read -r -a go <<<"$(go_cmd go1.19.8)"
  e2e_go_build metricstarget "$work/mt119"
else
  skip "the Go 1.19.8 target: $why"
fi

# start_target <n> <binary> [env...]: a target reading its stdin from a
# FIFO the suite holds open on fd 6+n.
start_target() {
  local n=$1 binary=$2
  shift 2
  mkfifo "$work/in$n"
  eval "exec $((6 + n))<>\"\$work/in$n\""
  e2e_start "$work/t$n.out" "$work/t$n.err" env "$@" sh -c 'exec "$0" -retain 8 <"$1"' \
    "$binary" "$work/in$n"
  tpids[n]=$target_pid
  e2e_wait_for_line "$work/t$n.out" "^READY" "$target_pid" 20 ||
    { fail "target $n start" "$work/t$n.err"; e2e_finish; }
}
tpids=()
labels=([1]="go1.26.8 GOGC=50 GOMEMLIMIT=300MiB" [2]="go1.26.8 GOGC=off" [3]="go1.19.8")
start_target 1 "$work/mt126" GOGC=50 GOMEMLIMIT=300MiB
start_target 2 "$work/mt126" GOGC=off
[[ -x $work/mt119 ]] && start_target 3 "$work/mt119"

e2e_start "$work/serve.out" "$work/serve.log" "$tool" serve --listen 127.0.0.1:0 --discover-interval 1
spid=$target_pid
e2e_wait_for_line "$work/serve.log" "listening on" "$spid" 10 || { fail "serve start" "$work/serve.log"; e2e_finish; }
addr=$(sed -n 's/.*listening on //p' "$work/serve.log")
for _ in $(seq 1 50); do
  code=$(curl -s -o "$work/first.txt" -w '%{http_code}' "http://$addr/pid/${tpids[1]}/metrics?names=otel")
  [[ $code == 200 ]] && break
  sleep 0.2
done

if [[ $code == 200 ]] && grep -q '^go_memory_used_bytes{go_memory_type="stack",otel_scope_name="goheap2pprof",' "$work/first.txt"; then
  pass "/pid/N/metrics?names=otel answers 200 with OTel's names"
else
  fail "/pid/N/metrics?names=otel ($code)" "$work/first.txt"
fi
if ! command -v promtool >/dev/null; then
  skip "promtool check metrics: needs promtool (Debian package prometheus)"
else
  # It parses; its linter's one remark is on OTel's own name go_goroutine_count
  # ("_count" is a summary's suffix there), which the exporter writes too.
  promtool check metrics <"$work/first.txt" >"$work/promtool.out" 2>&1
  rc=$?
  if [[ $rc == 0 ]] || { [[ $rc == 3 ]] && ! grep -v '^go_goroutine_count non-histogram and non-summary metrics should not have "_count" suffix$' "$work/promtool.out" | grep -q .; }; then
    pass "promtool check metrics parses the text; lint: only go_goroutine_count's _count (exit $rc)"
  else
    fail "promtool check metrics (exit $rc)" "$work/promtool.out"
  fi
fi
curl -s "http://$addr/metrics?pid=${tpids[1]}&names=prometheus" >"$work/prom.txt"
code=$(curl -s -o "$work/bad.txt" -w '%{http_code}' "http://$addr/pid/${tpids[1]}/metrics?names=statsd")
if grep -q '^go_memstats_alloc_bytes ' "$work/prom.txt" && ! grep -q '^go_memory_used' "$work/prom.txt" &&
  [[ $code == 400 ]]; then
  pass "names=prometheus is client_golang's text; names=statsd is 400 ($(cat "$work/bad.txt"))"
else
  fail "names=prometheus / names=statsd ($code)" "$work/bad.txt"
fi

for n in "${!tpids[@]}"; do
  curl -s "http://$addr/pid/${tpids[n]}/metrics?names=otel" >"$work/otel$n.txt"
  echo dump >&$((6 + n))
  e2e_wait_for_line "$work/t$n.out" '^{' "${tpids[n]}" 10 || fail "target $n dump" "$work/t$n.err"
  if python3 - "$work/otel$n.txt" "$work/t$n.out" >"$work/compare$n.txt" 2>&1 <<'PY'; then
import json, re, sys

text, dump = open(sys.argv[1]).read(), open(sys.argv[2]).read()
own = json.loads([l for l in dump.split("\n") if l.startswith("{")][0])
m = own["metrics"]
got, types = {}, {}
for line in text.split("\n"):
    if line.startswith("# TYPE "):
        _, _, name, kind = line.split(" ")
        types[name] = kind
    elif line and not line.startswith("#"):
        series, value = line.rsplit(" ", 1)
        got[series] = float(value)

scope = 'otel_scope_name="goheap2pprof",otel_scope_version="'

want = {}
def add(name, value, kind, attr=None):
    want[(name, attr)] = (float(value), kind)
total, released = m["/memory/classes/total:bytes"], m["/memory/classes/heap/released:bytes"]
stacks = m["/memory/classes/heap/stacks:bytes"]
add("go_memory_used_bytes", stacks, "gauge", "stack")
add("go_memory_used_bytes", total - released - stacks, "gauge", "other")
if m.get("/gc/gomemlimit:bytes", 2**63 - 1) < 2**63 - 1:
    add("go_memory_limit_bytes", m["/gc/gomemlimit:bytes"], "gauge")
add("go_memory_allocated_bytes_total", m["/gc/heap/allocs:bytes"], "counter")
add("go_memory_allocations_total", m["/gc/heap/allocs:objects"], "counter")
add("go_memory_gc_goal_bytes", m["/gc/heap/goal:bytes"], "gauge")
add("go_memory_gc_cycles_total", m["/gc/cycles/total:gc-cycles"], "counter")
add("go_goroutine_count", m["/sched/goroutines:goroutines"], "gauge")
add("go_processor_limit", m["/sched/gomaxprocs:threads"], "gauge")
if m.get("/gc/gogc:percent", 2**64 - 1) < 2**63:
    add("go_config_gogc_percent", m["/gc/gogc:percent"], "gauge")

seen = {}
bad = 0
for series, value in got.items():
    name, _, labels = series.partition("{")
    attr = re.search(r'go_memory_type="(\w+)"', labels)
    if scope not in labels:
        print(f"NO SCOPE LABELS {series}"); bad += 1
    seen[(name, attr.group(1) if attr else None)] = (value, types.get(name))
for k in sorted(set(want) | set(seen), key=str):
    if k not in seen:
        print(f"MISSING {k} (want {want[k]})"); bad += 1
    elif k not in want:
        print(f"EXTRA {k} = {seen[k]}"); bad += 1
    elif seen[k] != want[k]:
        print(f"DIFF {k}: served {seen[k]}, the target's own {want[k]}"); bad += 1
print(f"{len(want)} samples expected, {len(seen)} served, {bad} differences")
sys.exit(1 if bad else 0)
PY
    pass "${labels[n]}: $(tail -n 1 "$work/compare$n.txt")"
  else
    fail "${labels[n]}: the served samples differ from the target's own" "$work/compare$n.txt"
  fi
done
e2e_finish
