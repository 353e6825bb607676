#!/usr/bin/env bash
# serve's /debug/pprof/goroutine?pid=N, against the goroutine oracle
# (testdata/goroutines, which writes its own goroutine profile at debug=0,
# 1 and 2, then holds still): on Go 1.26.8 and 1.18.10 the served profile
# has the target's samples, the debug=1 text is the target's byte for byte
# and the debug=2 dump lists the same goroutines with the same headers and
# frames, each but for the writer goroutine, with the comparisons of
# goroutines_test.sh (goroutine_checks.sh); with net/http/pprof's content
# types. Then the answers the heap route gives: 404 for an unknown pid and
# a filtered one, 400 for a missing pid and for seconds with debug, a
# ?seconds=N delta (goroutine is one of net/http/pprof's delta profiles),
# 500 for a reply over --max-capture-bytes and for a worker that crashes,
# 504 for a capture past --capture-timeout and 503 while the one worker is
# held (test seams). And a stripped Go 1.26.8 target's heap and goroutine
# profiles are served (its variables found with Capstone, which a confined
# worker loads before it confines itself).
#
#   bash tests/e2e/serve_goroutine_test.sh <goheap2pprof> <profdiff>
#
# SERVE_GOROUTINE_VERSIONS="go1.26.8 go1.18.10" picks the toolchains.
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/goroutine_checks.sh"
e2e_init "$@"
e2e_require_executables "$tool" "$profdiff"
e2e_require_seams
e2e_require_command curl "needs curl"
e2e_require_command python3 "needs python3"
e2e_make_work serve-goroutine
source "$(dirname "$0")/serve_lib.sh"
trap e2e_stop_pids EXIT
trap 'exit 1' INT TERM

# start_oracle <version>: starts testdata/goroutines as the go_programs
# fixture built it; sets tpid, dir and prog, or fails and returns 1.
start_oracle() {
  local version=$1
  dir=$work/$version
  usable_toolchain "$version" || return 1
  goroutines_program "$version" exe "$version" || return 1
  mkdir -p "$dir/out"
  e2e_start "$dir/target.out" "$dir/target.err" "$prog" "$dir/out" 1000
  tpid=$target_pid
  if ! e2e_wait_until 120 test -e "$dir/out/ready"; then
    fail "$version: the target did not write its profiles" "$dir/target.err"
    return 1
  fi
  # Discovery must have found it (every second).
  e2e_wait_until 20 grep -q "\"$tpid\"" <(curl -s "http://$addr/targets")
}

# content_type <want> <what>: the last reply's Content-Type.
content_type() {
  if grep -qix "content-type: $1"$'\r' "$work/headers"; then
    pass "$2: Content-Type $1"
  else
    fail "$2: Content-Type is not $1" "$work/headers"
  fi
}

# check_profile <theirs.pb.gz> <ours.pb.gz>: check_diff of their profdiff.
check_profile() {
  "$profdiff" --ignore-comments "$1" "$2" >"$2.diff" 2>&1
  check_diff "$2.diff" >>"$2.diff" 2>&1 && sed -n 's/^samples: //p' "$2.diff" ||
    { cat "$2.diff"; return 1; }
}

# served <what> <url> <ours> <content-type> <check> <theirs>: fetches url
# into ours; its status, Content-Type and `check theirs ours` must pass.
served() {
  local what=$1 url=$2 ours=$3 type=$4 check=$5 theirs=$6 got
  got=$(curl -s -o "$ours" -D "$work/headers" -w '%{http_code}' "$url")
  content_type "$type" "$what"
  if [[ $got == 200 ]] && "$check" "$theirs" "$ours" >"$ours.check" 2>&1; then
    pass "$what: as the target's own but the writer goroutine ($(head -c 200 "$ours.check"))"
  else
    fail "$what: status $got, or it differs from the target's ($dir)" "$ours.check"
  fi
}

oracle() {
  local version=$1 url
  start_oracle "$version" || return
  url="http://$addr/debug/pprof/goroutine?pid=$tpid"
  served "$version debug=0" "$url" "$dir/ours.pb.gz" "application/octet-stream" \
    check_profile "$dir/out/goroutine.pb.gz"
  grep -qi 'content-disposition: attachment; filename="goroutine"' "$work/headers" ||
    fail "$version debug=0: no Content-Disposition filename=\"goroutine\"" "$work/headers"
  served "$version debug=1" "$url&debug=1" "$dir/ours.txt" "text/plain; charset=utf-8" \
    check_text "$dir/out/goroutine.txt"
  served "$version debug=2" "http://$addr/pid/$tpid/debug/pprof/goroutine?debug=2" \
    "$dir/ours2.txt" "text/plain; charset=utf-8" check_dump "$dir/out/goroutine2.txt"
}

start_serve main -- --max-concurrent 1
versions=${SERVE_GOROUTINE_VERSIONS:-go1.26.8 go1.18.10}
tpid=
for v in $versions; do
  oracle "$v"
done
[[ -n $tpid ]] || e2e_finish

# A stripped target's runtime variables are found by reading its code with
# Capstone, which a dynamic build loads when first needed; a confined worker
# cannot map a library (no executable mappings), so it loads Capstone before
# it confines itself. Its heap and goroutine profiles are served.
stripped() {
  local sdir=$work/stripped prog got route
  goroutines_program go1.26.8 pie-stripped "go1.26.8 stripped" || return
  mkdir -p "$sdir/out"
  e2e_start "$sdir/target.out" "$sdir/target.err" "$prog" "$sdir/out" 10
  if ! e2e_wait_until 120 test -e "$sdir/out/ready"; then
    fail "the stripped target did not start" "$sdir/target.err"
    return
  fi
  e2e_wait_until 20 grep -q "\"$target_pid\"" <(curl -s "http://$addr/targets")
  for route in heap goroutine; do
    got=$(curl -s -o "$sdir/$route.pb.gz" -w '%{http_code}' \
      "http://$addr/debug/pprof/$route?pid=$target_pid")
    if [[ $got == 200 ]] && "$profdiff" "$sdir/$route.pb.gz" "$sdir/$route.pb.gz" >/dev/null; then
      pass "a stripped target's $route profile is served"
    else
      fail "a stripped target's $route profile: status $got" "$sdir/$route.pb.gz"
    fi
  done
  kill "$target_pid"
}
stripped

# The answers of the heap route, for the last target (still running).
base="http://$addr/debug/pprof/goroutine"
expect_status "no such pid" 404 "no such process" "$base?pid=999999999"
expect_status "missing pid" 400 "missing pid" "$base"
expect_status "seconds with debug" 400 "seconds and debug params are incompatible" "$base?pid=$tpid&seconds=1&debug=1"
e2e_start "$work/sleep.out" "$work/sleep.err" sleep 300
expect_status "not a Go program" 404 "is not a Go program" "$base?pid=$target_pid"
expect_status "?seconds=1: a delta" 200 "" "$base?pid=$tpid&seconds=1"
grep -qi 'filename="goroutine-delta"' "$work/headers" && gzip -t "$work/body" &&
  pass "... named goroutine-delta, gzipped" ||
  fail "the delta's Content-Disposition" "$work/headers"
kill "$serve_pid"

start_serve filtered -- --deny-pid "$tpid"
base="http://$addr/debug/pprof/goroutine"
expect_status "a denied pid" 404 "no such process: $tpid" "$base?pid=$tpid"
kill "$serve_pid"

# The dump of 50,000 goroutines gzips to more than the smallest
# --max-capture-bytes (64 KiB; 1,000 gzip to 4 KB).
mkdir -p "$work/big"
e2e_start "$work/big.out" "$work/big.err" "$prog" "$work/big" 50000
big=$target_pid
if e2e_wait_until 120 test -e "$work/big/ready"; then
  start_serve small -- --max-capture-bytes 64KiB --capture-timeout 120
  expect_status "a dump over --max-capture-bytes" 500 "(--max-capture-bytes)" \
    "http://$addr/debug/pprof/goroutine?pid=$big&debug=2"
  kill "$serve_pid"
else
  fail "the target of 50,000 goroutines did not start" "$work/big.err"
fi
kill "$big"

start_serve crash GOHEAP2PPROF_SERVE_SEAM="crash:$tpid" --
base="http://$addr/debug/pprof/goroutine"
expect_status "a worker that crashes" 500 "capture of process $tpid failed" "$base?pid=$tpid"
kill "$serve_pid"

# One worker, held by a capture that pauses past --capture-timeout (504);
# a second request meanwhile waits --timeout for it (503).
start_serve slow GOHEAP2PPROF_SERVE_SEAM="pause-before-walk=4000:$tpid" -- \
  --max-concurrent 1 --timeout 1 --capture-timeout 2
base="http://$addr/debug/pprof/goroutine"
status "$base?pid=$tpid" >"$work/slow.status" &
slow=$!
e2e_wait_for_line "$work/slow.log" "pausing" "$serve_pid" 10
got=$(curl -s -o "$work/busy.body" -w '%{http_code}' "$base?pid=$tpid&debug=1")
[[ $got == 503 ]] && pass "a request while the one worker is held: 503" ||
  fail "a request while the one worker is held: $got, not 503" "$work/busy.body"
wait "$slow"
[[ $(cat "$work/slow.status") == 504 ]] && grep -q "did not finish" "$work/body" &&
  pass "a capture past --capture-timeout: 504" ||
  fail "a capture past --capture-timeout: $(cat "$work/slow.status")" "$work/body"
e2e_finish
