#!/usr/bin/env bash
# The sampling state as the runtime sees it (issue 39, "the refusal fixed"):
# testdata/sampling links no runtime/pprof, so the linker sets
# runtime.disableMemoryProfiling and schedinit zeroes MemProfileRate; with
# -setrate 1 the program assigns the rate itself first thing in main, and
# -keep-at-start "A 1000 4096" keeps 1000 objects of 4096 bytes at main.keepA
# before READY. Its heap profile is then real from that moment on:
# - CLI, every toolchain of tests/go_toolchains.txt, the fixture's exe and
#   stripped PIE: captured; main.keepA holds exactly 1000 objects and
#   4096000 bytes in use (read back with `go tool pprof -raw`, not with our
#   own code); the profile's comments and the JSON (sampling_started_late)
#   say that sampling began after start-up. Without -setrate the capture
#   exits 7 and its hint names `goheap2pprof enable-sampling <pid>`.
# - serve (one instance, a GET per pid), push (to tests/pushreceiver), watch
#   (an --rss-above trigger crossed by a second keep) and `goheap2pprof
#   growth`, on go1.18.10, go1.23.4 and go1.26.8 only: the agents share the
#   engine the CLI runs on every toolchain, and each target at rate 1 costs
#   half a core while it lives, which on every toolchain would add about a
#   minute of two busy cores. The three span the runtime's ways: 1.18
#   initializes the rate in runtime.init (runtime.mProf), 1.23 is the last
#   with per-mcache nextSample only, 1.26 keeps mcache.memProfRate.
#
#   bash tests/e2e/sampling_state_test.sh <goheap2pprof> <profdiff>
#
# SAMPLING_VERSIONS="v ..." limits the toolchains. Exit status: 0 all cases
# passed, 1 some failed, 77 nothing could run.
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
source "$(dirname "$0")/push_lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command jq "the JSON output is read with jq"
e2e_require_command python3 "go tool pprof -raw's text is read with a Python script"
e2e_require_command curl "serve is asked with curl"
e2e_make_work sampling-state
chmod 755 "$work"
trap 'e2e_stop_pids -9' EXIT

agent_versions=(go1.18.10 go1.23.4 go1.26.8)
binaries=(sampling-amd64-exe sampling-amd64-pie-stripped)
wanted() { [[ -z ${SAMPLING_VERSIONS:-} || " $SAMPLING_VERSIONS " == *" $1 "* ]]; }

# site <profile> <function> <size>: "<inuse objects> <inuse bytes>" summed
# over the samples whose allocation frame is <function> and whose objects are
# <size> bytes (the bytes label), as go tool pprof reads the file; then the
# same over all sizes ("all <objects> <bytes>": the runtime may allocate on
# the function's behalf, e.g. when its make starts a GC, under frames
# runtime/pprof hides); then one line per comment ("comment <text>").
site() {
  "${go[@]}" tool pprof -raw "$1" 2>"$1.err" | python3 -c '
import re, sys
fn, size = sys.argv[1], int(sys.argv[2])
lines = sys.stdin.read().split("\n")
at = lines.index("Samples:")
kinds = [t.split("/")[0] for t in lines[at + 1].split()]
leaf, samples = {}, []
for line in lines[at + 2:]:
    m = re.match(r"^\s*(-?\d+(?:\s+-?\d+)*):\s+(\d+)", line)
    if m:
        samples.append([[int(v) for v in m.group(1).split()], int(m.group(2)), None])
    m = re.match(r"^\s*bytes:\[(\d+)\]", line)
    if m and samples:
        samples[-1][2] = int(m.group(1))
    m = re.match(r"^\s*(\d+): 0x[0-9a-f]+ M=\d+ (\S+)", line)
    if m:
        leaf[int(m.group(1))] = m.group(2)
def total(kind, sizes):
    return sum(v[kinds.index(kind)] for v, loc, b in samples if leaf.get(loc) == fn and sizes(b))
print(total("inuse_objects", lambda b: b == size), total("inuse_space", lambda b: b == size))
print("all", total("inuse_objects", lambda b: True), total("inuse_space", lambda b: True))
for line in lines:
    if line.startswith("Comment: "):
        print("comment", line[len("Comment: "):])
' "$2" "$3"
}

late_comment="goheap2pprof: sampling began after start-up"

# kept_a_merged <json [x, objects, bytes]> <x>: main.keepA's figures with its
# object sizes merged hold the 1000 objects of 4096 bytes and at most smaller
# ones besides.
kept_a_merged() {
  [[ $1 =~ ^\[([a-z]+),([0-9]+),([0-9]+)\]$ ]] || return 1
  local extra_objects=$((BASH_REMATCH[2] - 1000)) extra_bytes=$((BASH_REMATCH[3] - 4096000))
  [[ ${BASH_REMATCH[1]} == "$2" ]] && ((extra_objects >= 0 && extra_bytes >= 0)) &&
    ((extra_bytes == 0 || extra_bytes < 4096 * extra_objects))
}

# check_profile <what> <profile> <objects> <bytes>: main.keepA holds them, and
# the comment says that sampling began after start-up.
check_profile() {
  local what=$1 file=$2 want="$3 $4" got
  got=$(site "$file" main.keepA 4096)
  if [[ $(head -n 1 <<<"$got") != "$want" ]]; then
    fail "$what: main.keepA in use $(head -n 1 <<<"$got"), want $want ($file)" "$file.err"
  elif ! grep -qF "comment $late_comment" <<<"$got"; then
    fail "$what: no comment saying that sampling began after start-up: $(grep comment <<<"$got")"
  else
    pass "$what: main.keepA $want in use; the comment says sampling began after start-up"
  fi
}

# start_target <name> <binary> [flags...] [--no-wait]: starts it on a fifo
# held open as its stdin (fd in ${name}_fd); sets ${name}_pid and, unless
# --no-wait, waits for READY (wait_ready).
start_target() {
  local name=$1 binary=$2 fd wait=1
  shift 2
  local args=()
  for a in "$@"; do [[ $a == --no-wait ]] && wait=0 || args+=("$a"); done
  rm -f "$work/$name.in"
  mkfifo "$work/$name.in"
  exec {fd}<>"$work/$name.in"
  printf -v "${name}_fd" %s "$fd"
  "$binary" "${args[@]}" <"$work/$name.in" >"$work/$name.out" 2>"$work/$name.err" &
  target_pid=$!
  e2e_track_pid "$target_pid"
  printf -v "${name}_pid" %s "$target_pid"
  ((wait == 0)) || wait_ready "$name"
}

# wait_ready <name>: returns 1 (failed) if it does not print READY.
wait_ready() {
  local pid=${1}_pid
  if ! e2e_wait_for_line "$work/$1.out" '^READY ' "${!pid}" 60; then
    fail "$1 did not print READY" "$work/$1.err"
    return 1
  fi
}

# say <name> <command> <reply>: sends a command line to the target (none if
# empty) and waits for the answer that starts with <reply> (none if
# --no-wait).
say() {
  local name=$1 line=$2 reply=$3 fd pid
  fd=${name}_fd pid=${name}_pid
  [[ -z $line ]] || echo "$line" >&"${!fd}"
  [[ $reply == --no-wait ]] || e2e_wait_for_line "$work/$name.out" "^$reply" "${!pid}" 60
}

# stop_target <name>: quits it and closes its fifo.
stop_target() {
  local fd=${1}_fd pid=${1}_pid
  echo quit >&"${!fd}"
  e2e_wait_exit "${!pid}" 10
  exec {fd}>&-
}

# --- 1. the CLI, every toolchain ------------------------------------------------
echo "== the CLI, every toolchain"
cli_case() {
  local version=$1 exe=$2 label="$1 $2" name pid rc
  name=t_${version//./_}_${exe//-/_}
  start_target "$name" "$(go_program "$version" "$exe")" -setrate 1 -keep-at-start "A 1000 4096" ||
    return
  pid=${name}_pid
  pid=${!pid}
  "$tool" "$pid" -o "$work/$name.pb.gz" 2>"$work/$name.cli.err"
  rc=$?
  if [[ $rc != 0 ]]; then
    fail "$label -setrate 1: capture exited $rc" "$work/$name.cli.err"
  else
    check_profile "$label -setrate 1: CLI" "$work/$name.pb.gz" 1000 4096000
  fi
  "$tool" "$pid" --format json --top 0 >"$work/$name.json" 2>>"$work/$name.cli.err"
  rc=$?
  local json
  # The JSON merges main.keepA's object sizes (the extras of site() above): its
  # 1000 objects of 4096 bytes, and any more only smaller ones.
  json=$(jq -c '[.entries[] | select(.stack[0] | startswith("main.keepA "))] as $a |
    [.sampling_started_late, ($a | map(.objects) | add), ($a | map(.bytes) | add)]' \
    "$work/$name.json" 2>&1)
  if [[ $rc == 0 ]] && kept_a_merged "$json" true; then
    pass "$label -setrate 1: JSON says sampling_started_late; main.keepA [objects, bytes] $json"
  else
    fail "$label -setrate 1: JSON exited $rc: [sampling_started_late, objects, bytes] = $json" \
      "$work/$name.cli.err"
  fi
  stop_target "$name"

  # The same program without -setrate: nothing turned sampling on.
  start_target "${name}_off" "$(go_program "$version" "$exe")" || return
  pid=${name}_off_pid
  pid=${!pid}
  "$tool" "$pid" -o "$work/${name}_off.pb.gz" 2>"$work/${name}_off.err"
  rc=$?
  if [[ $rc == 7 ]] && grep -qF "goheap2pprof enable-sampling $pid" "$work/${name}_off.err" &&
    [[ ! -e $work/${name}_off.pb.gz ]]; then
    pass "$label without -setrate: exit 7, the hint names enable-sampling"
  else
    fail "$label without -setrate: exit $rc, want 7 with a hint naming enable-sampling" \
      "$work/${name}_off.err"
  fi
  stop_target "${name}_off"
}

declare -A toolchain_state
e2e_toolchain_states wanted
for version in $(toolchain_versions); do
  [[ ${toolchain_state[$version]:-} == ok ]] || continue
  for exe in "${binaries[@]}"; do
    if [[ ! -x $(go_program "$version" "$exe") ]]; then
      fail "$version $exe (not built by the go_programs fixture)"
      continue
    fi
    cli_case "$version" "$exe"
  done
done

# --- 2. serve, push, watch and growth, three toolchains ------------------------
# Each target at rate 1 costs half a core while it lives: they are started
# together, serve asks them first, push and watch run at the same time, and
# the growth windows overlap.
echo "== serve, push, watch and growth (${SECONDS}s into the suite)"
# The receiver builds meanwhile.
mkdir -p "$work/bin"
receiver=$work/bin/pushreceiver
(cd "$src/tests/pushreceiver" && CGO_ENABLED=0 "${go[@]}" build -o "$receiver" .) \
  >"$work/build-pushreceiver.log" 2>&1 &
receiver_build=$!
targets=()
for version in "${agent_versions[@]}"; do
  wanted "$version" && [[ ${toolchain_state[$version]:-} == ok ]] || continue
  for exe in "${binaries[@]}"; do
    name=a_${version//./_}_${exe//-/_}
    start_target "$name" "$(go_program "$version" "$exe")" -setrate 1 \
      -keep-at-start "A 1000 4096" --no-wait
    targets+=("$name")
  done
done
started=()
for name in "${targets[@]}"; do wait_ready "$name" && started+=("$name"); done
targets=("${started[@]}")
if ((${#targets[@]} == 0)); then
  e2e_finish
fi
pid_of() { local p=${1}_pid; echo "${!p}"; }

# serve: one instance, a GET per pid.
start_serve serve --
for name in "${targets[@]}"; do
  got=$(status "http://$addr/debug/pprof/heap?pid=$(pid_of "$name")")
  if [[ $got == 200 ]]; then
    cp "$work/body" "$work/$name.serve.pb.gz"
  else
    fail "$name: serve answered $got: $(head -c 300 "$work/body")"
  fi
done
kill "$serve_pid"

# push: one agent for all the targets, to the test receiver, until each pid
# has a push; watch: a trigger that fires, --rss-above crossed by a second
# keep of 40 MB at main.keepB (main.keepA stays as it was); growth meanwhile.
if ! wait "$receiver_build"; then
  fail "go build of tests/pushreceiver" "$work/build-pushreceiver.log"
  e2e_finish
fi
push_start_receiver
pid_args=()
for name in "${targets[@]}"; do pid_args+=(--pid "$(pid_of "$name")"); done
e2e_start "$work/push.out" "$work/push.log" "$tool" push --pyroscope "http://$raddr" \
  --interval 1s --discover-interval 1 --metrics-listen "" "${pid_args[@]}" -v
push_pid=$target_pid
mkdir -p "$work/watch"
e2e_start "$work/watch.out" "$work/watch.log" "$tool" watch $(for name in "${targets[@]}"; do
  pid_of "$name"
done) -o "$work/watch" --rss-above 45M --no-baseline --poll 100ms -v
watch_pid=$target_pid
# growth: a live window of a few snapshots, all at once; keep B's two GCs
# fall inside it, so that it sees distinct GC cycles however busy the machine.
growths=()
for name in "${targets[@]}"; do
  "$tool" growth "$(pid_of "$name")" --every 300ms --for 3s --keep "$work/$name.growth" \
    --format json --top 0 >"$work/$name.growth.json" 2>"$work/$name.growth.err" &
  growths+=($!)
done
sleep 1 # the watch's first poll sees the targets below the level
for name in "${targets[@]}"; do say "$name" "keep B 10000 4096" --no-wait; done
for name in "${targets[@]}"; do
  say "$name" "" "kept B" || fail "$name: no answer to keep B" "$work/$name.err"
done
pushed() { (($("$receiver" count -dir "$work/rec" -pid "$1" 2>/dev/null || echo 0) > 0)); }
watched() { compgen -G "$work/watch/*-$1-*.heap.pb.gz" >/dev/null; }
all_done() {
  local name
  for name in "${targets[@]}"; do
    pushed "$(pid_of "$name")" && watched "$(pid_of "$name")" || return 1
  done
}
e2e_wait_until 30 all_done
kill "$push_pid" "$watch_pid"

for i in "${!targets[@]}"; do
  wait "${growths[$i]}"
  printf -v "${targets[$i]}_growth_rc" %s $?
done
for name in "${targets[@]}"; do stop_target "$name"; done

echo "== checking the profiles (${SECONDS}s)"
for name in "${targets[@]}"; do
  pid=$(pid_of "$name")
  [[ -e $work/$name.serve.pb.gz ]] &&
    check_profile "$name: serve" "$work/$name.serve.pb.gz" 1000 4096000
  file=$(jq -r --arg pid "$pid" 'select(.labels.pid == $pid) | .file' \
    "$work/rec/pyroscope.jsonl" 2>/dev/null | tail -n 1)
  if [[ -z $file ]]; then
    fail "$name: push: nothing pushed in 30 s" "$work/push.log"
  else
    [[ $file == /* ]] || file=$work/rec/$file
    check_profile "$name: push" "$file" 1000 4096000
  fi
  file=$(compgen -G "$work/watch/*-$pid-*.heap.pb.gz" | head -n 1)
  if [[ -z $file ]]; then
    fail "$name: watch: no profile within 30 s of crossing --rss-above 45M" "$work/watch.log"
  else
    check_profile "$name: watch (--rss-above)" "$file" 1000 4096000
  fi
  rc=${name}_growth_rc
  got=$(jq -c '[.sites[] | select(.stack[0] | startswith("main.keepA "))] |
    map([true, .last_objects, .last_bytes]) | .[0]' "$work/$name.growth.json" 2>&1)
  if [[ ${!rc} != 0 ]]; then
    fail "$name: growth exited ${!rc}" "$work/$name.growth.err"
  elif ! kept_a_merged "$got" true; then
    fail "$name: growth: main.keepA last [objects, bytes] $got, want 1000 of 4096 bytes"
  else
    last=$(compgen -G "$work/$name.growth/heap-*.pb.gz" | sort -V | tail -n 1)
    check_profile "$name: growth (its last snapshot)" "$last" 1000 4096000
  fi
done
# --- 3. watch keeps a process whose sampling is off ---------------------------
# Its baseline capture fails with exit 7, but enable-sampling may turn
# sampling on while it is watched: a trigger after that captures it.
version=go1.26.8
if wanted "$version" && [[ ${toolchain_state[$version]:-} == ok ]]; then
  echo "== watch, then enable-sampling (${SECONDS}s)"
  start_target w_off "$(go_program "$version" sampling-amd64-exe)"
  pid=$w_off_pid
  mkdir -p "$work/watch-off"
  e2e_start "$work/watch-off.out" "$work/watch-off.log" "$tool" watch "$pid" \
    -o "$work/watch-off" --rss-above 45M --poll 100ms -v
  watch_pid=$target_pid
  baseline_failed() { grep -q "compiled out" "$work/watch-off.log" "$work/watch-off.out"; }
  if ! e2e_wait_until 30 baseline_failed; then
    fail "watch: its baseline of pid $pid did not say that sampling is compiled out" \
      "$work/watch-off.log"
  elif ! kill -0 "$watch_pid" 2>/dev/null; then
    fail "watch: gave up on pid $pid (sampling off) instead of watching it" "$work/watch-off.log"
  elif ! "$tool" enable-sampling "$pid" --rate 1 >"$work/watch-off.enable" 2>&1; then
    fail "watch: enable-sampling $pid failed" "$work/watch-off.enable"
  else
    say w_off "keep A 1000 4096" "kept A"
    say w_off "keep B 10000 4096" "kept B"
    watched_off() { compgen -G "$work/watch-off/*-$pid-*.heap.pb.gz" >/dev/null; }
    if ! e2e_wait_until 30 watched_off; then
      fail "watch: no profile of pid $pid within 30 s of enable-sampling and --rss-above" \
        "$work/watch-off.log"
    else
      check_profile "$version exe: watch before enable-sampling, trigger after" \
        "$(compgen -G "$work/watch-off/*-$pid-*.heap.pb.gz" | head -n 1)" 1000 4096000
    fi
  fi
  kill "$watch_pid" 2>/dev/null
  stop_target w_off
fi
echo "== done (${SECONDS}s)"
e2e_finish
