#!/usr/bin/env bash
# Load test of `goheap2pprof serve` (issue 12): 200 Go processes of one small
# binary are all discovered by the first scan of /proc with one analysis of
# their executable (cache hits for the rest, in /metrics); then 1,000
# requests from 20 concurrent clients against 10 of them are answered with
# 200 or 503 only, reusing the workers' analyses, and the server's resident
# memory stays bounded.
#
#   bash tests/e2e/serve_load_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command curl "needs curl"
e2e_make_work serve-load
trap 'e2e_stop_pids -9' EXIT

n=200
if ! (cd "$src/testdata/servetarget" && CGO_ENABLED=0 "${go[@]}" build -o "$work/small" .) \
  >"$work/build.log" 2>&1; then
  fail "build servetarget" "$work/build.log"
  e2e_finish
fi
mkdir -p "$work/t"
targets=()
for i in $(seq 1 $n); do
  e2e_start "$work/t/$i.out" "$work/t/$i.err" "$work/small" -retain 0 -http=false
  targets+=("$target_pid")
done
for i in $(seq 1 $n); do
  if ! e2e_wait_for_line "$work/t/$i.out" "^READY" "${targets[$((i - 1))]}" 30; then
    fail "target $i did not start" "$work/t/$i.err"
    e2e_finish
  fi
done
pass "$n targets started"

e2e_start "$work/serve.out" "$work/serve.log" "$tool" serve --listen 127.0.0.1:0 --discover-interval 30
serve_pid=$target_pid
e2e_wait_for_line "$work/serve.log" "listening on" "$serve_pid" 10 || { fail "serve start" "$work/serve.log"; e2e_finish; }
addr=$(sed -n 's/.*listening on //p' "$work/serve.log")
metric() { curl -s "http://$addr/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

# Wait for the first scan to finish (scans are 30 s apart: the check below
# is about scan 1).
for _ in $(seq 1 600); do
  [[ $(metric goheap2pprof_discovery_scans_total) -ge 1 ]] && break
  sleep 0.1
done
scans=$(metric goheap2pprof_discovery_scans_total)
curl -s "http://$addr/targets" >"$work/targets.json"
found=$(jq --arg exe "$work/small" '[.[] | select(.labels.exe == $exe)] | length' "$work/targets.json")
builds=$(jq -r --arg exe "$work/small" '[.[] | select(.labels.exe == $exe) | .labels.build_id] | unique | length' "$work/targets.json")
hits=$(metric 'goheap2pprof_analysis_cache_hits_total{phase="discovery"}')
analyses=$(metric 'goheap2pprof_executable_analyses_total{phase="discovery"}')
echo "after scan $scans: $found of $n targets listed, discovery analyses $analyses, cache hits $hits"
if [[ $scans == 1 && $found == "$n" && $builds == 1 ]]; then
  pass "all $n processes discovered by the first scan"
else
  fail "discovery: scan $scans found $found of $n"
fi
# One analysis for the shared executable: the other 199 are cache hits
# (other executables on the machine add analyses and hits of their own).
if [[ ${hits:-0} -ge $((n - 1)) && ${analyses:-0} -lt $((n - 1)) ]]; then
  pass "one analysis for the shared executable ($hits cache hits, $analyses analyses in all)"
else
  fail "analysis cache: $hits hits, $analyses analyses"
fi

rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
rss_before=$(rss "$serve_pid")
printf '%s\n' "${targets[@]:0:10}" >"$work/ten"
for i in $(seq 1 1000); do sed -n "$(((i % 10) + 1))p" "$work/ten"; done >"$work/requests"
start=$SECONDS
xargs -P 20 -I{} curl -s -o /dev/null -w '%{http_code}\n' "http://$addr/debug/pprof/heap?pid={}" \
  <"$work/requests" >"$work/codes"
elapsed=$((SECONDS - start))
rss_after=$(rss "$serve_pid")
sort "$work/codes" | uniq -c | sed 's/^/    /'
others=$(grep -cv '^\(200\|503\)$' "$work/codes")
total=$(wc -l <"$work/codes")
if [[ $total == 1000 && $others == 0 ]]; then
  pass "1000 requests from 20 clients on 10 targets: only 200/503 (${elapsed}s)"
else
  fail "load: $total answers, $others not 200/503"
fi
# Captures reuse the workers' analyses: at most one per worker (2) for the
# shared executable, every other capture a cache hit.
cap_analyses=$(metric 'goheap2pprof_executable_analyses_total{phase="capture"}')
cap_hits=$(metric 'goheap2pprof_analysis_cache_hits_total{phase="capture"}')
if [[ ${cap_analyses:-9} -le 2 && ${cap_hits:-0} -gt 0 ]]; then
  pass "captures reuse the workers' analyses ($cap_analyses analyses, $cap_hits cache hits)"
else
  fail "capture analyses: $cap_analyses analyses, $cap_hits cache hits"
fi
echo "server RSS: ${rss_before} kB before, ${rss_after} kB after"
if [[ $rss_after -lt 262144 ]]; then
  pass "server RSS bounded: ${rss_after} kB < 256 MiB"
else
  fail "server RSS ${rss_after} kB"
fi
e2e_finish
