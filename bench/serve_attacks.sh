#!/usr/bin/env bash
# What hostile clients cost `goheap2pprof serve` (issue 22): the three
# attacks before authentication (a 1 GiB request line without newline,
# 512 MiB of 4 KB header lines, a 512 MiB chunked POST) and the slow-client
# attack (16 slow-loris connections sending a byte every 3 s plus 1,040
# idle connections from 127.0.0.2..9), each against a serve with a token;
# then issue 38's: 512 connections from 127.0.0.2..17 that each get 401,
# 1,040 silent connections from those addresses, and 300 heads of 16,000
# empty header fields.
# For each: the server's peak RSS (VmHWM, reset before each attack through
# /proc/PID/clear_refs) idle and during the attack, the attack's answer,
# and the slowest of the /metrics probes sent (every 0.1 s, 1 s timeout)
# while it ran. Prints a table; no thresholds. Needs python3 and curl, and
# root or the server's owner for clear_refs.
#
#   bash bench/serve_attacks.sh                       # uses build/goheap2pprof
#   TOOL=/path/to/goheap2pprof PROBES=30 bash bench/serve_attacks.sh
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
source "$src/bench/lib.sh"
tool=$(realpath "${TOOL:-$src/build/goheap2pprof}")
probes=${PROBES:-20}
attack=$src/tests/e2e/http_attack.py
work=$(mktemp -d /tmp/goheap2pprof-serve-attacks.XXXXXX)
spid=""
trap 'bench_stop "$spid"; rm -rf "$work"' EXIT

printf 'secret-token-0123456789\n' >"$work/token"
"$tool" serve --listen 127.0.0.1:0 --token-file "$work/token" >"$work/serve.out" 2>"$work/serve.log" &
spid=$!
for _ in $(seq 1 100); do grep -q "listening on" "$work/serve.log" && break; sleep 0.1; done
addr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$work/serve.log" | head -n 1)
[[ -n $addr ]] || { cat "$work/serve.log"; exit 1; }
auth=(-H "Authorization: Bearer secret-token-0123456789")
curl -s -o /dev/null "${auth[@]}" "http://$addr/metrics"

kib() { awk -v k="$1" '$1 == k ":" {print $2}' "/proc/$spid/status"; }
mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }

# probe_loop <seconds-at-least> <file>: /metrics probes until the file
# $work/stop exists and at least PROBES were sent; the slowest time (s) or
# "timeout" per probe, one a line.
probe_loop() {
  local n=0
  while [[ ! -e $work/stop ]] || ((n < probes)); do
    curl -s -o /dev/null --max-time 1 -w '%{http_code} %{time_total}\n' "${auth[@]}" \
      "http://$addr/metrics" >>"$1"
    n=$((n + 1))
    sleep 0.1
  done
}

printf '%-34s %10s %10s %12s %10s  %s\n' attack "idle MiB" "peak MiB" "/metrics max" "failed" "answer"
run() {
  local name=$1
  shift
  echo 5 >"/proc/$spid/clear_refs"  # VmHWM := VmRSS
  local idle
  idle=$(kib VmHWM)
  rm -f "$work/stop" "$work/probes"
  probe_loop "$work/probes" &
  local prober=$!
  local out
  out=$("$@" 2>&1 | tail -n 1)  # each attack bounds its own time
  touch "$work/stop"
  wait "$prober"
  local peak max failed
  peak=$(kib VmHWM)
  max=$(awk '{ if ($2 > m) m = $2 } END {printf "%.3f s", m}' "$work/probes")
  failed=$(awk '$1 != 200' "$work/probes" | wc -l)
  printf '%-34s %10s %10s %12s %6s/%-3s  %s\n' "$name" "$(mib "$idle")" "$(mib "$peak")" "$max" \
    "$failed" "$(wc -l <"$work/probes")" "${out:0:110}"
}

run "1 GiB request line, no newline" python3 "$attack" line "$addr" $((1 << 30))
run "512 MiB of 4 KB header lines" python3 "$attack" headers "$addr" $((512 << 20))
run "512 MiB chunked POST" python3 "$attack" chunked "$addr" $((512 << 20))
slow_clients() {
  python3 "$attack" idle "$addr" 1040 15 \
    127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5,127.0.0.6,127.0.0.7,127.0.0.8,127.0.0.9 >"$work/idle.out" &
  local loris
  loris=$(python3 "$attack" slowloris "$addr" 16 15 3 127.0.0.10)
  wait
  echo "idle: $(cat "$work/idle.out"); slow-loris: $loris"
}
run "16 slow-loris + 1,040 idle conns" slow_clients
# Issue 38: from 16 loopback addresses, which count as one source.
sources=$(seq -s, -f '127.0.0.%g' 2 17)
run "512 conns that got 401, 16 addrs" python3 "$attack" noauth "$addr" 512 5 "$sources"
run "1,040 silent conns, 16 addrs" python3 "$attack" idle "$addr" 1040 15 "$sources"
run "300 heads of 16,000 empty fields" python3 "$attack" fields "$addr" 300 16000 "$sources"
echo "server: $("$tool" --version | head -n 1); listener limits: serve's defaults"
