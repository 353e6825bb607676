#!/usr/bin/env bash
# The agent at rest (issue 27): `goheap2pprof agent` on a node of ~1,000
# processes, 200 of them Go. Prints two tables, with no thresholds:
#
#   1. the CPU of one discovery scan: the agent runs with the serve role only
#      and no requests, so its CPU is its scans; over WINDOWS windows of
#      WINDOW seconds each, (utime + stime of /proc/<agent>/stat, delta) /
#      (goheap2pprof_discovery_scans_total of its /metrics, delta), after
#      the first scans (which probe each new executable in a worker) are
#      done. One /metrics request per window is in the figure (it costs
#      well under a millisecond against a window's hundreds of scans).
#   2. the soak: the agent with serve and push (to a loopback sink that
#      discards every profile) scanning every SOAK_INTERVAL and pushing
#      every process every PUSH_INTERVAL, admitting only the bench's own
#      processes (--allow-uid of the uid they run as; it still scans them
#      all), its VmRSS, VmHWM, threads and
#      descriptors every STEP seconds against the scans and captures made,
#      until SOAK_SCANS scans or SOAK_SECONDS seconds. Every STEP, CHURN Go
#      processes and CHURN others are replaced by new ones (new pids), as
#      deployments and cron jobs do over a day.
#
# 24 h at the defaults, the arithmetic the soak is measured against:
#   scans:    --discover-interval 10 s  -> 86,400 s / 10 s = 8,640 scans;
#   captures: push --interval 15 s (or a scrape of /debug/pprof/heap every
#             15 s) of 200 Go processes -> 200 x 86,400 / 15 = 1,152,000.
# The scans fit in minutes (SOAK_SCANS=8640 by default); the captures do
# not (one capture costs milliseconds of a worker), so the soak runs the
# captures as fast as the agent's pool makes them and prints which fraction
# of a day's captures it reached, with the RSS trend against both counts.
#
#   bash bench/agent_rest.sh                      # uses build/goheap2pprof
#   SOAK_SECONDS=0 bash bench/agent_rest.sh       # table 1 only
#
# Environment: TOOL, NONGO (default 800), GOPROCS (200), WINDOWS (5),
# WINDOW (seconds, 20), SCAN_INTERVAL (table 1, 0.1), SOAK_SCANS (8640),
# SOAK_SECONDS (600; 0 skips table 2), SOAK_INTERVAL (0.05), PUSH_INTERVAL
# (0.1), STEP (30), CHURN (2), GO (default "env GOTOOLCHAIN=local go").
# Run it under nice -n 19 on a shared machine: CPU time is the robust
# figure; the load average is printed with each table.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
tool=$(realpath "${TOOL:-$src/build/goheap2pprof}")
nongo=${NONGO:-800}
goprocs=${GOPROCS:-200}
windows=${WINDOWS:-5}
window=${WINDOW:-20}
scan_interval=${SCAN_INTERVAL:-0.1}
soak_scans=${SOAK_SCANS:-8640}
soak_seconds=${SOAK_SECONDS:-600}
soak_interval=${SOAK_INTERVAL:-0.05}
push_interval=${PUSH_INTERVAL:-0.1}
step=${STEP:-30}
churn=${CHURN:-2}
read -r -a go_cmd <<<"${GO:-env GOTOOLCHAIN=local go}"
source "$src/bench/lib.sh"

work=$(mktemp -d /tmp/goheap2pprof-agent-rest.XXXXXX)
sleepers=()  # the non-Go processes
gos=()       # the idle Go processes
agent=""
sink=""
cleanup() {
  # kill takes every pid at once; wait reaps them (all are our children).
  kill "${sleepers[@]}" "${gos[@]}" $agent $sink 2>/dev/null
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ ! -x $tool ]]; then
  echo "build the tool first: cmake --build build --target goheap2pprof" >&2
  exit 2
fi
(cd "$src/testdata/restnode" && CGO_ENABLED=0 "${go_cmd[@]}" build -o "$work/restnode" .) || exit 1
chmod 755 "$work"  # for $uid below

# Every process the bench starts runs as $uid: the soak's agent
# admits only that uid (--allow-uid), so that on a shared machine it never
# captures anyone else's Go programs; table 1's agent has no filter and
# scans every process of the node.
# (setpriv execs the command, so $! is the command's pid.) The uid is one
# no account uses: the lead's e2e suites run their targets as nobody.
uid=61727
as_uid=(setpriv --reuid "$uid" --regid "$uid" --clear-groups)
# A non-Go process: sleep, bounded so that nothing outlives a killed script
# by more than two hours.
start_sleeper() {
  "${as_uid[@]}" sleep 7200 &
  sleepers+=($!)
}
# An idle Go process, one thread per P kept to one; restnode idle exits by
# itself after two hours for the same reason.
start_go() {
  "${as_uid[@]}" env GOMAXPROCS=1 "$work/restnode" idle >/dev/null 2>&1 &
  gos+=($!)
}
# Replaces the first n of each kind with new processes (new pids).
churn_some() {
  local n=$1
  ((n > 0)) || return 0
  kill "${sleepers[@]:0:n}" "${gos[@]:0:n}" 2>/dev/null
  wait "${sleepers[@]:0:n}" "${gos[@]:0:n}" 2>/dev/null
  sleepers=("${sleepers[@]:n}")
  gos=("${gos[@]:n}")
  local i
  for ((i = 0; i < n; i++)); do
    start_sleeper
    start_go
  done
}

for ((i = 0; i < nongo; i++)); do start_sleeper; done
for ((i = 0; i < goprocs; i++)); do start_go; done

kib() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$agent/status"; }
mib() { awk '{printf "%.1f", $1 / 1024}'; }
# utime + stime of the agent, clock ticks (fields 14 and 15 after the comm).
cpu_ticks() { sed 's/.*) //' "/proc/$agent/stat" | awk '{print $12 + $13}'; }
procs() { find /proc -mindepth 1 -maxdepth 1 -name '[0-9]*' 2>/dev/null | wc -l; }
metric() { curl -s --max-time 10 "http://$addr/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
captures() {
  curl -s --max-time 10 "http://$addr/metrics" |
    awk '$1 ~ /^goheap2pprof_captures_total[{]/ && $1 ~ /outcome="ok"/ {n += $2} END {print n + 0}'
}
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# start_agent ARGS...: the agent in the background, sets agent and addr.
start_agent() {
  "$tool" agent --listen 127.0.0.1:0 "$@" >"$work/agent.out" 2>"$work/agent.log" &
  agent=$!
  local i
  for ((i = 0; i < 100; i++)); do
    grep -q 'listening on' "$work/agent.log" && break
    sleep 0.1
  done
  addr=$(sed -n 's/.*listening on //p' "$work/agent.log")
  [[ -n $addr ]] || {
    cat "$work/agent.log" >&2
    exit 1
  }
}
# wait_go N: until the last scan found at least N Go processes (bounded).
wait_go() {
  local i
  for ((i = 0; i < 600; i++)); do
    (($(metric goheap2pprof_processes_discovered || echo 0) >= $1)) && return 0
    sleep 0.2
  done
  echo "the agent found $(metric goheap2pprof_processes_discovered) of $1 Go processes" >&2
  exit 1
}

hz=$(getconf CLK_TCK)
echo "goheap2pprof agent at rest: $tool"
echo "$(date -u '+%F %T UTC'), $(nproc) CPUs, kernel $(uname -r)"

echo
echo "1. CPU of one discovery scan (agent --discover-interval $scan_interval, serve role, no requests)"
start_agent --discover-interval "$scan_interval"
wait_go "$goprocs"
sleep 1  # past the scan that probed the executables
printf '%-7s %10s %13s %7s %16s %14s\n' window processes "Go processes" scans "CPU ms per scan" "load average"
per_scan=()
for ((w = 1; w <= windows; w++)); do
  t0=$(cpu_ticks)
  s0=$(metric goheap2pprof_discovery_scans_total)
  sleep "$window"
  t1=$(cpu_ticks)
  s1=$(metric goheap2pprof_discovery_scans_total)
  ms=$(awk -v t=$((t1 - t0)) -v s=$((s1 - s0)) -v hz="$hz" 'BEGIN {printf "%.2f", t * 1000 / hz / s}')
  per_scan+=("$ms")
  printf '%-7s %10s %13s %7s %16s %14s\n' "$w" "$(procs)" \
    "$(metric goheap2pprof_processes_discovered)" $((s1 - s0)) "$ms" "$(loadavg)"
done
printf '%s\n' "${per_scan[@]}" | sort -g |
  awk '{v[NR] = $1} END {printf "CPU ms per scan over %d windows: median %s, max %s\n", NR, v[int((NR + 1) / 2)], v[NR]}'
echo "agent VmRSS $(kib VmRSS | mib) MiB, VmHWM $(kib VmHWM | mib) MiB after $(metric goheap2pprof_discovery_scans_total) scans"
bench_stop "$agent"
agent=""

((soak_seconds > 0)) || exit 0
"$work/restnode" sink >"$work/sink.out" 2>"$work/sink.err" &
sink=$!
for ((i = 0; i < 100; i++)); do
  grep -q '^LISTENING' "$work/sink.out" && break
  sleep 0.1
done
sink_addr=$(sed -n 's/^LISTENING //p' "$work/sink.out")
echo
echo "2. soak: agent --discover-interval $soak_interval --pyroscope (a sink) --interval $push_interval;"
echo "   until $soak_scans scans or $soak_seconds s; $churn Go and $churn other processes replaced every $step s"
start_agent --discover-interval "$soak_interval" --pyroscope "http://$sink_addr" \
  --interval "$push_interval" --allow-uid "$uid"
wait_go "$goprocs"
printf '%8s %7s %9s %12s %12s %8s %5s %14s\n' second scans captures "VmRSS MiB" "VmHWM MiB" threads fds "load average"
start=$(date +%s)
while true; do
  t=$(($(date +%s) - start))
  scans=$(metric goheap2pprof_discovery_scans_total)
  printf '%8s %7s %9s %12s %12s %8s %5s %14s\n' "$t" "$scans" "$(captures)" "$(kib VmRSS | mib)" \
    "$(kib VmHWM | mib)" "$(kib Threads)" "$(find "/proc/$agent/fd" -mindepth 1 | wc -l)" "$(loadavg)"
  ((scans >= soak_scans || t >= soak_seconds)) && break
  sleep "$step"
  churn_some "$churn"
done
scans=$(metric goheap2pprof_discovery_scans_total)
caps=$(captures)
awk -v s="$scans" -v c="$caps" 'BEGIN {
  printf "reached %d scans (%.1f%% of a day'"'"'s 8,640) and %d captures (%.2f%% of a day'"'"'s 1,152,000)\n",
    s, s * 100 / 8640, c, c * 100 / 1152000 }'
echo "captures by outcome: $(curl -s "http://$addr/metrics" | awk '$1 ~ /^goheap2pprof_captures_total[{]/ {printf "%s %s  ", $1, $2}')"
