#!/usr/bin/env bash
# `goheap2pprof push --otlp-metrics` into a real OpenTelemetry Collector
# (v0.165.0, tests/e2e/otelcol_lib.sh), over OTLP/HTTP (POST /v1/metrics,
# protobuf) and over gRPC (MetricsService/Export on HTTP/2): what the
# Collector received, read back from its debug exporter, is
#   - one ResourceMetrics per push of the target, with the resource
#     attributes the semantic conventions name (service.name, process.pid,
#     process.executable.name, .path and .build_id.go, process.runtime.name
#     and .version, host.name), and a start time that is the process's own;
#   - exactly the go.* metrics the conventions define and we can fill, each
#     of the right type, and each value between what `goheap2pprof mem
#     --format json` read just before and just after the pushes, computed
#     from runtime/metrics as the conventions say (the target sits idle, so
#     the two reads differ at most by the runtime's own background work).
#
# The Collector is built through the Go module proxy once per build tree;
# without Go 1.26.8 or the proxy the suite is skipped and says so.
#
#   bash tests/e2e/push_otlp_metrics_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/otelcol_lib.sh"
e2e_init "$@"
e2e_require_command python3 "needs python3"
e2e_require_otelcol
e2e_make_work push-otlp-metrics
trap 'exec 7>&-; e2e_stop_pids -9' EXIT

e2e_go_build metricstarget "$work/mt"
mkfifo "$work/in"
exec 7<>"$work/in"
e2e_start "$work/t.out" "$work/t.err" env GOGC=50 GOMEMLIMIT=300MiB sh -c 'exec "$0" -retain 8 <"$1"' \
  "$work/mt" "$work/in"
tpid=$target_pid
e2e_wait_for_line "$work/t.out" "^READY" "$tpid" 20 || { fail "target start" "$work/t.err"; e2e_finish; }

buildid=$("${go[@]}" tool buildid "$work/mt")
e2e_start_otelcol metrics

# push_round <protocol> <host:port> <name>: mem before, push until the
# Collector has two requests of the target more, mem after.
push_round() {
  local protocol=$1 addr=$2 name=$3 before
  before=$(grep -c "process.pid: Int($tpid)" "$otelcol_log")
  date +%s%N >"$work/$name.t0"
  "$tool" mem "$tpid" --format json >"$work/$name.before.json" 2>"$work/$name.mem.err"
  e2e_start "$work/$name.push.out" "$work/$name.push.log" "$tool" push --otlp-metrics "http://$addr" \
    --otlp-protocol "$protocol" --interval 1s --discover-interval 1s --pid "$tpid" --metrics-listen ''
  local ppid=$target_pid
  for _ in $(seq 1 100); do
    (($(grep -c "process.pid: Int($tpid)" "$otelcol_log") >= before + 2)) && break
    kill -0 "$ppid" 2>/dev/null || break
    sleep 0.1
  done
  kill -TERM "$ppid"
  wait "$ppid" 2>/dev/null
  "$tool" mem "$tpid" --format json >"$work/$name.after.json" 2>>"$work/$name.mem.err"
  date +%s%N >"$work/$name.t1"
  local got=$(($(grep -c "process.pid: Int($tpid)" "$otelcol_log") - before))
  if ((got >= 2)) && ! grep -q "rejected\|gave up\|attempt" "$work/$name.push.log"; then
    pass "$protocol: the Collector received $got pushes of the target, none refused or retried"
  else
    fail "$protocol: the Collector received $got pushes" "$work/$name.push.log"
    return 1
  fi
  # The last push's ResourceMetrics, against the two reads.
  if python3 - "$otelcol_log" "$tpid" "$work" "$name" "$work/mt" "$buildid" >"$work/$name.compare.txt" 2>&1 <<'PY'; then
import datetime, json, os, re, socket, sys

log, pid, work, name, exe, buildid = sys.argv[1:7]
lines = open(log).read().split("\n")
# Blocks: from "ResourceMetrics #" to the next export's summary line.
blocks, cur = [], None
for line in lines:
    if re.search(r"\tResourceMetrics #\d+$", line):
        cur = []
        blocks.append(cur)
    elif cur is not None:
        cur.append(line)
mine = [b for b in blocks if f"     -> process.pid: Int({pid})" in b]
block = mine[-1]

def value(text):  # Str(x) / Int(5)
    kind, v = re.match(r"(\w+)\((.*)\)$", text).groups()
    return int(v) if kind == "Int" else v

resource, metrics, m, point = {}, {}, None, None
section = None
for line in block:
    if line.startswith("Resource attributes:"):
        section = "resource"
    elif line.startswith("ScopeMetrics #"):
        section = "scope"
    elif line.startswith("InstrumentationScope "):
        scope = line.split(" ", 1)[1]
    elif line.startswith("Metric #"):
        section, m = "metric", {"points": []}
    elif line.startswith("NumberDataPoints #"):
        point = {"attrs": {}}
        m["points"].append(point)
        section = "point"
    elif line.startswith("     -> ") and section == "resource":
        k, v = line[8:].split(": ", 1)
        resource[k] = value(v)
    elif line.startswith("     -> ") and section == "metric":
        k, v = line[8:].split(": ", 1)
        m[k] = v
        if k == "Name":
            metrics[v] = m
    elif line.startswith("     -> ") and section == "point":
        k, v = line[8:].split(": ", 1)
        point["attrs"][k] = value(v)
    elif line.startswith("Value: "):
        point["value"] = int(line[7:])
    elif line.startswith("StartTimestamp: "):
        point["start"] = line[16:]
    elif line.startswith("Timestamp: "):
        point["time"] = line[11:]

bad = []
def check(ok, what):
    if not ok:
        bad.append(what)

a = json.load(open(f"{work}/{name}.before.json"))
b = json.load(open(f"{work}/{name}.after.json"))
want_resource = {
    "service.name": resource.get("service.name"),  # as push names it; checked non-empty
    "process.pid": int(pid),
    "process.executable.name": os.path.basename(exe),
    "process.executable.path": os.path.realpath(exe),
    "process.executable.build_id.go": buildid,
    "process.runtime.name": "go",
    "process.runtime.version": a["go_version"],
    "host.name": socket.gethostname(),
}
check(resource == want_resource and resource["service.name"], f"resource {resource} != {want_resource}")
check(scope.startswith("goheap2pprof "), f"scope {scope}")

def expected(d):
    m = d["metrics"]
    out = {
        ("go.memory.used", "stack"): m["/memory/classes/heap/stacks:bytes"],
        ("go.memory.used", "other"): m["/memory/classes/total:bytes"] - m["/memory/classes/heap/released:bytes"] - m["/memory/classes/heap/stacks:bytes"],
        ("go.memory.limit", ""): m["/gc/gomemlimit:bytes"],
        ("go.memory.allocated", ""): m["/gc/heap/allocs:bytes"],
        ("go.memory.allocations", ""): m["/gc/heap/allocs:objects"],
        ("go.memory.gc.goal", ""): m["/gc/heap/goal:bytes"],
        ("go.memory.gc.cycles", ""): m["/gc/cycles/total:gc-cycles"],
        ("go.goroutine.count", ""): m["/sched/goroutines:goroutines"],
        ("go.processor.limit", ""): m["/sched/gomaxprocs:threads"],
        ("go.config.gogc", ""): m["/gc/gogc:percent"],
    }
    return out

ea, eb = expected(a), expected(b)
monotonic = {"go.memory.allocated", "go.memory.allocations", "go.memory.gc.cycles"}
units = {"go.memory.used": "By", "go.memory.limit": "By", "go.memory.allocated": "By",
         "go.memory.allocations": "{allocation}", "go.memory.gc.goal": "By",
         "go.memory.gc.cycles": "{gc_cycle}", "go.goroutine.count": "{goroutine}",
         "go.processor.limit": "{thread}", "go.config.gogc": "%"}
got = {}
for mname, metric in metrics.items():
    check(metric.get("DataType") == "Sum" and metric.get("AggregationTemporality") == "Cumulative",
          f"{mname}: {metric.get('DataType')} {metric.get('AggregationTemporality')}")
    check(metric.get("IsMonotonic") == ("true" if mname in monotonic else "false"), f"{mname}: monotonic")
    check(metric.get("Unit") == units.get(mname), f"{mname}: unit {metric.get('Unit')}")
    for p in metric["points"]:
        got[(mname, p["attrs"].get("go.memory.type", ""))] = p["value"]

# The process's start, as the kernel has it: the Sums' start time.
btime = int([l for l in open("/proc/stat") if l.startswith("btime ")][0].split()[1])
ticks = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[19])
start_ns = btime * 10**9 + ticks * (10**9 // os.sysconf("SC_CLK_TCK"))
def parse_ns(text):  # Go's time.String(): "2026-12-05 11:12:00.34 +0000 UTC"
    date, clock = text.split(" ")[:2]
    whole, _, frac = clock.partition(".")
    t = datetime.datetime.strptime(f"{date} {whole}", "%Y-%m-%d %H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return int(t.timestamp()) * 10**9 + int((frac + "000000000")[:9])
t0, t1 = int(open(f"{work}/{name}.t0").read()), int(open(f"{work}/{name}.t1").read())
for mname, metric in metrics.items():
    for p in metric["points"]:
        check(parse_ns(p["start"]) == start_ns, f"{mname}: start {p['start']} != the process's start")
        check(t0 <= parse_ns(p["time"]) <= t1, f"{mname}: time {p['time']} not between the reads")

for k in sorted(set(ea) | set(got)):
    if k not in got:
        bad.append(f"MISSING {k}")
    elif k not in ea:
        bad.append(f"EXTRA {k} = {got[k]}")
    elif not min(ea[k], eb[k]) <= got[k] <= max(ea[k], eb[k]):
        bad.append(f"DIFF {k}: {got[k]} not within [{ea[k]}, {eb[k]}]")
for k in sorted(got):
    print(f"  {k[0]}{'{'+k[1]+'}' if k[1] else ''} = {got[k]} (mem: {ea.get(k)} .. {eb.get(k)})")
for line in bad:
    print(line)
exact = sum(1 for k in got if ea.get(k) == eb.get(k) == got[k])
print(f"{len(got)} points, {exact} equal to both reads, {len(bad)} problems")
sys.exit(1 if bad else 0)
PY
    pass "$protocol: resource and every go.* value as mem read it: $(tail -n 1 "$work/$name.compare.txt")"
  else
    fail "$protocol: what the Collector received" "$work/$name.compare.txt"
  fi
}

push_round http/protobuf "$otelcol_http" http
push_round grpc "$otelcol_grpc" grpc

# A Collector without a metrics pipeline has no MetricsService: its gRPC
# server answers grpc-status 12 (UNIMPLEMENTED) in the trailers, which is
# the request's fault: said once per push, not retried.
e2e_start_otelcol traces otelcol-traces
e2e_start "$work/refused.out" "$work/refused.log" "$tool" push --otlp-metrics "http://$otelcol_grpc" \
  --otlp-protocol grpc --interval 1s --discover-interval 1s --pid "$tpid" --metrics-listen ''
ppid=$target_pid
for _ in $(seq 1 100); do
  (($(grep -c "rejected, not retried" "$work/refused.log") >= 2)) && break
  sleep 0.1
done
kill -TERM "$ppid"
wait "$ppid" 2>/dev/null
# libcurl 7.88 sometimes fails such a call with "Stream error in the HTTP/2
# framing layer" before it has passed on the status (the server resets the
# stream it answered before reading the request): that attempt is retried
# as a connection error, and the next one is refused.
if (($(grep -c "rejected, not retried: pid $tpid .*grpc-status 12: " "$work/refused.log") >= 2)) &&
  ! grep "retrying\|gave up" "$work/refused.log" | grep -vq "Stream error in the HTTP/2 framing layer"; then
  pass "gRPC: grpc-status 12 from the trailers is said and not retried ($(grep -m1 -o 'grpc-status 12: .*' "$work/refused.log" | head -c 100))"
else
  fail "gRPC: a refused call" "$work/refused.log"
fi

e2e_finish
