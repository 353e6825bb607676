#!/usr/bin/env bash
# serve's per-process /metrics (the Go runtime's metrics of processes that
# export nothing, named as prometheus/client_golang's Go collector names
# them), end to end with the real Prometheus:
#   - promtool (Prometheus's own parser and linter) accepts the text;
#   - errors: 404 for an unknown pid, for a process that is not Go and for
#     one the filter refuses (--deny-pid), 400 for a bad pid; serve's own /metrics
#     has no go_* family and counts the reads;
#   - Prometheus discovers two Go targets (Go 1.26.8 with GOGC=50 and
#     GOMEMLIMIT, and Go 1.19.8) through /targets and scrapes them in two
#     jobs, one by ?pid= (metrics_path /metrics and the __param_pid serve's
#     /targets sets), one by relabelling __metrics_path__ to /pid/N/metrics;
#   - the oracle: each target holds still (testdata/metricstarget), then
#     reads its own runtime/metrics, ReadGCStats, NumGoroutine and thread
#     count; every go_* series Prometheus stored from a scrape before that
#     must equal what client_golang would have computed from the target's
#     own numbers, exactly, and the set of series must be exactly the
#     expected one (no name missing, none extra).
#
#   bash tests/e2e/serve_metrics_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command prometheus "needs prometheus (Debian package prometheus)"
e2e_require_command promtool "needs promtool (Debian package prometheus)"
e2e_require_command curl "needs curl"
e2e_require_command jq "needs jq"
e2e_require_command python3 "needs python3"
e2e_make_work serve-metrics
trap 'exec 7>&- 8>&-; e2e_stop_pids -9' EXIT

# The two targets: Go 1.26.8 and, when available, 1.19.8 (before
# /gc/gogc:percent and /gc/gomemlimit:bytes existed).
e2e_go_build metricstarget "$work/mt126"
versions=(go1.26.8)
if why=$(toolchain_ok go1.19.8); then
  read -r -a go <<<"$(go_cmd go1.19.8)"
  e2e_go_build metricstarget "$work/mt119"
  versions+=(go1.19.8)
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
start_target 1 "$work/mt126" GOGC=50 GOMEMLIMIT=300MiB
[[ ${versions[1]:-} ]] && start_target 2 "$work/mt119"

e2e_start "$work/serve.out" "$work/serve.log" "$tool" serve --listen 127.0.0.1:0 --discover-interval 1
spid=$target_pid
e2e_wait_for_line "$work/serve.log" "listening on" "$spid" 10 || { fail "serve start" "$work/serve.log"; e2e_finish; }
addr=$(sed -n 's/.*listening on //p' "$work/serve.log")

# Until discovery has found the target: 404 meanwhile.
for _ in $(seq 1 50); do
  code=$(curl -s -o "$work/direct.txt" -w '%{http_code}' "http://$addr/pid/${tpids[1]}/metrics")
  [[ $code == 200 ]] && break
  sleep 0.2
done
curl -s -o "$work/query.txt" -w '%{http_code}' "http://$addr/metrics?pid=${tpids[1]}" >"$work/query.code"
if [[ $code == 200 && $(cat "$work/query.code") == 200 ]] &&
  grep -q '^go_memstats_alloc_bytes [0-9]' "$work/direct.txt" &&
  grep -q "^go_info{version=\"go1.26.8\"} 1$" "$work/query.txt"; then
  pass "/pid/N/metrics and /metrics?pid=N answer 200 with client_golang's families"
else
  fail "/pid/N/metrics ($code) and /metrics?pid=N ($(cat "$work/query.code"))" "$work/direct.txt"
fi
if promtool check metrics <"$work/direct.txt" >"$work/promtool.out" 2>&1; then
  pass "promtool check metrics accepts the text (parse and lint)"
else
  fail "promtool check metrics" "$work/promtool.out"
fi

# Errors, with the words and statuses of heap requests.
sleep 1000 &
notgo=$!
e2e_track_pid "$notgo"
check_status() {
  local want=$1 url=$2 got
  got=$(curl -s -o "$work/err.txt" -w '%{http_code}' "http://$addr$url")
  if [[ $got == "$want" ]]; then
    pass "$url: $want ($(head -c 80 "$work/err.txt"))"
  else
    fail "$url: $got, expected $want" "$work/err.txt"
  fi
}
check_status 404 "/pid/999999999/metrics"
check_status 404 "/metrics?pid=$notgo"
check_status 400 "/metrics?pid=abc"
check_status 400 "/pid/0/metrics"
# The allow-list applies as to heap requests: a process it refuses is
# answered like an absent one. Both targets run as one uid, so the filter is
# --deny-pid; the other target answering 200 shows discovery has scanned.
e2e_start "$work/serve2.out" "$work/serve2.log" "$tool" serve --listen 127.0.0.1:0 \
  --discover-interval 1 --deny-pid "${tpids[1]}"
e2e_wait_for_line "$work/serve2.log" "listening on" "$target_pid" 10 || fail "serve --deny-pid start" "$work/serve2.log"
addr2=$(sed -n 's/.*listening on //p' "$work/serve2.log")
control=${tpids[2]:-$$}
for _ in $(seq 1 50); do
  [[ $(curl -s -o /dev/null -w '%{http_code}' "http://$addr2/pid/$control/metrics") == 200 ]] && break
  sleep 0.2
done
other=$(curl -s -o /dev/null -w '%{http_code}' "http://$addr2/pid/$control/metrics")
got=$(curl -s -o "$work/err.txt" -w '%{http_code}' "http://$addr2/pid/${tpids[1]}/metrics")
if [[ ${tpids[2]:-} && $other == 200 && $got == 404 &&
  $(cat "$work/err.txt") == "no such process: ${tpids[1]}" ]]; then
  pass "--deny-pid: the denied target's /pid/N/metrics is 404 as a heap request, the other's 200"
elif [[ -z ${tpids[2]:-} ]]; then
  skip "--deny-pid: needs the second target"
else
  fail "--deny-pid: denied $got, other $other" "$work/err.txt"
fi
curl -s "http://$addr/metrics" >"$work/own.txt"
if grep -q '^goheap2pprof_discovery_scans_total ' "$work/own.txt" && ! grep -q '^go_' "$work/own.txt" &&
  grep -q '^goheap2pprof_memory_stats_reads_total{outcome="ok"} [1-9]' "$work/own.txt"; then
  pass "serve's own /metrics: its families, no go_*, the reads counted"
else
  fail "serve's own /metrics" "$work/own.txt"
fi

keep=$(
  IFS='|'
  echo "${tpids[*]}"
)
pport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  # serve's /targets sets __param_pid: Prometheus asks for /metrics?pid=N.
  - job_name: go-by-param
    metrics_path: /metrics
    http_sd_configs:
      - url: http://$addr/targets
        refresh_interval: 1s
    relabel_configs:
      - source_labels: [pid]
        regex: "$keep"
        action: keep
  # The same processes at /pid/N/metrics, without the parameter.
  - job_name: go-by-path
    http_sd_configs:
      - url: http://$addr/targets
        refresh_interval: 1s
    relabel_configs:
      - source_labels: [pid]
        regex: "$keep"
        action: keep
      - source_labels: [pid]
        target_label: __metrics_path__
        replacement: /pid/\${1}/metrics
      - regex: __param_pid
        action: labeldrop
YAML
e2e_start "$work/prom.out" "$work/prom.log" prometheus --config.file="$work/prometheus.yml" \
  --storage.tsdb.path="$work/tsdb" --web.listen-address="127.0.0.1:$pport"
prom=$target_pid
api="http://127.0.0.1:$pport/api/v1"
want=$((2 * ${#versions[@]}))
ok=""
for _ in $(seq 1 150); do
  n=$(curl -s "$api/query" --data-urlencode 'query=count(go_memstats_alloc_bytes)' |
    jq -r '.data.result[0].value[1] // 0' 2>/dev/null)
  [[ $n == "$want" ]] && ok=1 && break
  kill -0 "$prom" 2>/dev/null || break
  sleep 0.2
done
curl -s "$api/targets" >"$work/targets.json"
if [[ -z $ok ]]; then
  fail "prometheus did not scrape $want target series of go_memstats_alloc_bytes" "$work/prom.log"
  jq -c '.data.activeTargets[] | {scrapeUrl, health, lastError}' "$work/targets.json" | head
  e2e_finish
fi
jq -r '.data.activeTargets[] | "    \(.labels.job) \(.scrapeUrl) \(.health) \(.lastError)"' "$work/targets.json"
if [[ $(jq '[.data.activeTargets[] | select(.health == "up" and .lastError == "")] | length' \
  "$work/targets.json") == "$want" ]] &&
  jq -e '[.data.activeTargets[] | select(.labels.job == "go-by-path") | .scrapeUrl |
      test("/pid/[0-9]+/metrics$")] | all' "$work/targets.json" >/dev/null; then
  pass "prometheus scrapes $want targets through /targets, by ?pid= and by /pid/N/metrics"
else
  fail "prometheus targets"
fi

# A moment every sample before it was scraped from still targets: two
# scrape intervals of samples, then the instant 1.5 s back (a scrape that
# began by then ended, timeout 1 s, before the targets read themselves).
sleep 2.5
at=$(python3 -c 'import time; print(f"{time.time() - 1.5:.3f}")')
for n in "${!tpids[@]}"; do
  echo dump >&$((6 + n))
  e2e_wait_for_line "$work/t$n.out" '^{' "${tpids[n]}" 10 || fail "target $n dump" "$work/t$n.err"
done
for job in go-by-param go-by-path; do
  curl -s "$api/query" --data-urlencode "query={__name__=~\"go_.*\",job=\"$job\"}" \
    --data-urlencode "time=$at" >"$work/$job.json"
  for n in "${!tpids[@]}"; do
    if python3 - "$work/$job.json" "${tpids[n]}" "$work/t$n.out" >"$work/compare-$job-$n.txt" 2>&1 <<'PY'; then
import json, sys

result = json.load(open(sys.argv[1]))["data"]["result"]
pid = sys.argv[2]
own = json.loads([l for l in open(sys.argv[3]) if l.startswith("{")][0])
m = own["metrics"]

def series_key(s):
    labels = {k: v for k, v in s["metric"].items()
              if k not in ("job", "instance", "pid", "service_name", "exe", "comm", "go_version",
                           "build_id", "start_time", "cgroup", "container_id", "__name__",
                           "namespace", "pod", "pod_uid", "container", "node")}
    return s["metric"]["__name__"] + "".join(f'{{{k}="{v}"}}' for k, v in sorted(labels.items()))

got = {series_key(s): float(s["value"][1]) for s in result if s["metric"].get("pid") == pid}

def seconds(ns):  # time.Duration(ns).Seconds()
    return float(ns // 1000000000) + float(ns % 1000000000) / 1e9

def u(name):
    return m.get(name, 0)

M64 = (1 << 64) - 1
want = {
    f'go_info{{version="{own["go_version"]}"}}': 1.0,
    "go_goroutines": float(own["num_goroutine"]),
    "go_threads": float(own["threads"]),
    "go_memstats_last_gc_time_seconds": float(own["last_gc_unix_ns"]) / 1e9,
    "go_gc_duration_seconds_sum": seconds(own["pause_total_ns"]),
    "go_gc_duration_seconds_count": float(own["num_gc"]),
}
for q, ns in zip(["0", "0.25", "0.5", "0.75", "1"], own["pause_quantiles_ns"]):
    want[f'go_gc_duration_seconds{{quantile="{q}"}}'] = seconds(ns)
obj, unused = u("/memory/classes/heap/objects:bytes"), u("/memory/classes/heap/unused:bytes")
rel, free = u("/memory/classes/heap/released:bytes"), u("/memory/classes/heap/free:bytes")
tiny = u("/gc/heap/tiny/allocs:objects")
ms = {
    "alloc_bytes": obj, "heap_alloc_bytes": obj,
    "alloc_bytes_total": u("/gc/heap/allocs:bytes"),
    "sys_bytes": u("/memory/classes/total:bytes"),
    "mallocs_total": u("/gc/heap/allocs:objects") + tiny,
    "frees_total": u("/gc/heap/frees:objects") + tiny,
    "heap_sys_bytes": obj + unused + rel + free, "heap_idle_bytes": rel + free,
    "heap_inuse_bytes": obj + unused, "heap_released_bytes": rel,
    "heap_objects": u("/gc/heap/objects:objects"),
    "stack_inuse_bytes": u("/memory/classes/heap/stacks:bytes"),
    "stack_sys_bytes": u("/memory/classes/heap/stacks:bytes") + u("/memory/classes/os-stacks:bytes"),
    "mspan_inuse_bytes": u("/memory/classes/metadata/mspan/inuse:bytes"),
    "mspan_sys_bytes": u("/memory/classes/metadata/mspan/inuse:bytes") + u("/memory/classes/metadata/mspan/free:bytes"),
    "mcache_inuse_bytes": u("/memory/classes/metadata/mcache/inuse:bytes"),
    "mcache_sys_bytes": u("/memory/classes/metadata/mcache/inuse:bytes") + u("/memory/classes/metadata/mcache/free:bytes"),
    "buck_hash_sys_bytes": u("/memory/classes/profiling/buckets:bytes"),
    "gc_sys_bytes": u("/memory/classes/metadata/other:bytes"),
    "other_sys_bytes": u("/memory/classes/other:bytes"),
    "next_gc_bytes": u("/gc/heap/goal:bytes"),
}
for k, v in ms.items():
    want["go_memstats_" + k] = float(v & M64)
for name, v in m.items():
    default = name in ("/gc/gogc:percent", "/gc/gomemlimit:bytes", "/sched/gomaxprocs:threads")
    if name.startswith("/memory/classes/") or default:
        key, unit = name[1:].split(":")
        sub, base = key.rsplit("/", 1)
        prom = "go_" + sub.replace("/", "_").replace("-", "_") + "_" + base.replace("-", "_") + "_" + unit
        want[prom] = float(v)

bad = 0
for k in sorted(set(want) | set(got)):
    if k not in got:
        print(f"MISSING {k} (want {want[k]!r})"); bad += 1
    elif k not in want:
        print(f"EXTRA {k} = {got[k]!r}"); bad += 1
    elif got[k] != want[k]:
        print(f"DIFF {k}: prometheus {got[k]!r}, the target's own {want[k]!r}"); bad += 1
print(f"{len(want)} series expected, {len(got)} stored, {bad} differences "
      f"({own['go_version']}, gomemlimit {m.get('/gc/gomemlimit:bytes')}, gogc {m.get('/gc/gogc:percent')})")
sys.exit(1 if bad else 0)
PY
      pass "$job, ${versions[n - 1]} target: $(tail -n 1 "$work/compare-$job-$n.txt")"
    else
      fail "$job, ${versions[n - 1]} target: the stored series differ from the target's own" \
        "$work/compare-$job-$n.txt"
    fi
  done
done
# The configuration the user guide shows is this one, minus the keep rules.
cp "$work/prometheus.yml" "$work/prometheus.yml.used"
e2e_finish
