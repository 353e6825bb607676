#!/usr/bin/env bash
# The size of what `goheap2pprof push` sends: for a few targets, the first
# push (everything the process allocated since it started) and a later one
# (one interval's deltas), to Pyroscope (samples, gzipped profile, request)
# and to Parca (samples, JSON request), as the agent's -v log reports them.
# Targets: testdata/demo (a small leaking web service, default
# MemProfileRate) after 5 and 20 s, and testdata/benchtarget with 1,000 and
# 20,000 buckets (the latter over Pyroscope's 16,000-sample limit). The
# receiver is tests/pushreceiver. Run as root (targets run as user 65534 so
# that only they are pushed).
#
#   bash bench/push_size.sh [build-dir]
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$src/build}")
tool=$build/goheap2pprof
work=$(mktemp -d /tmp/push-size.XXXXXX)
chmod 755 "$work"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$work"' EXIT

(cd "$src/testdata/demo" && CGO_ENABLED=0 go build -o "$work/demo" .) || exit 1
(cd "$src/testdata/benchtarget" && CGO_ENABLED=0 go build -o "$work/benchtarget" .) || exit 1
(cd "$src/tests/pushreceiver" && go build -o "$work/pushreceiver" .) || exit 1
mkdir "$work/rec"
"$work/pushreceiver" serve -dir "$work/rec" >"$work/rec.out" 2>&1 &
pids+=($!)
sleep 1
addr=$(sed -n 's/^LISTENING //p' "$work/rec.out")

# run <name> <seconds> <command...>: pushes the target for a while and
# prints its first and last push.
run() {
  local name=$1 seconds=$2 tpid
  shift 2
  "$tool" push --pyroscope "http://$addr" --parca "http://$addr" --interval 2s \
    --discover-interval 1 --allow-uid 65534 --metrics-listen "" -v 2>"$work/$name.log" &
  local agent=$!
  sleep 0.5
  setpriv --reuid=65534 --regid=65534 --clear-groups "$@" >"$work/$name.out" 2>&1 &
  tpid=$!
  sleep "$seconds"
  kill "$tpid" "$agent"
  wait "$agent" 2>/dev/null
  local first last
  first=$(grep "pyroscope: pid $tpid " "$work/$name.log" | head -n 1)
  last=$(grep "pyroscope: pid $tpid " "$work/$name.log" | tail -n 1)
  pfirst=$(grep "parca: pid $tpid " "$work/$name.log" | head -n 1)
  plast=$(grep "parca: pid $tpid " "$work/$name.log" | tail -n 1)
  printf '| %s | first | %s | %s |\n' "$name" "${first#*): }" "${pfirst#*): }"
  printf '| %s | last (of %d) | %s | %s |\n' "$name" "$(grep -c "pyroscope: pid $tpid " "$work/$name.log")" \
    "${last#*): }" "${plast#*): }"
  grep "trimmed" "$work/$name.log" | head -n 1 | sed 's/^/    /' >&2
}

echo "| target | push | Pyroscope | Parca |"
echo "|---|---|---|---|"
run "demo, 5 s" 5 "$work/demo"
run "demo, 20 s" 20 "$work/demo"
run "benchtarget 1,000 buckets" 6 "$work/benchtarget" -buckets 1000
run "benchtarget 20,000 buckets" 8 "$work/benchtarget" -buckets 20000
