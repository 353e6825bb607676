# Shared pieces of the end-to-end tests (tests/e2e/*_test.sh). Not a test:
# each script sources it right after `set -u`:
#
#   source "$(dirname "$0")/lib.sh"
#
# Every test is run as `bash <script> <goheap2pprof> <profdiff>`, with the
# environment GOHEAP2PPROF_SOURCE_DIR (repo root) and GOHEAP2PPROF_BINARY_DIR
# (build tree; scratch space goes to its e2e/ folder). Exit status: 0 pass,
# 1 fail, 77 skip, 2 usage error.
#
# What this defines, in the order a test uses it:
#   e2e_check_args, e2e_init       arguments; tool, profdiff, src, bin; GOCACHE
#   e2e_go_cache_fallback          a Go cache when CTest runs us without HOME
#   e2e_require_executables        skip unless the given files are executable
#   e2e_require_command            skip unless a command is on PATH
#   e2e_require_qemu_arm64         skip unless qemu-user runs arm64 Go programs; sets qemu
#   e2e_require_seams              fail unless the tool was built with its test seams
#   toolchain_versions, go_cmd, toolchain_ok, ...
#                                  the Go toolchains (tests/go_toolchains.txt)
#   go_programs_status, go_program the programs the go_programs fixture built
#   e2e_toolchain_states           each toolchain's fixture state, reported once
#   e2e_require_go                 skip unless `go` is Go 1.26.8; sets go=(...)
#   e2e_make_work                  a fresh scratch directory: work
#   e2e_build_oracle               testdata/oracle built with Go 1.26.8
#   e2e_start, e2e_wait_for_line   background targets and their READY lines
#   e2e_start_time, e2e_same_process, e2e_running, e2e_check_same_process,
#   e2e_wait_exit
#                                  a pid held across other processes' lives is
#                                  still the process it was (start time)
#   e2e_stop_pids                  kill what was started (for cleanup traps)
#   e2e_free_port, e2e_cgroup_name what a suite may not share with another
#                                  suite running at the same time (ctest -j)
#   pass, fail, skip, e2e_finish   counting the cases, summary and exit status

# e2e_check_args "$@": exits 2 with the usage line unless there are exactly
# two arguments.
e2e_check_args() {
  if [[ $# -ne 2 ]]; then
    echo "usage: $0 <goheap2pprof> <profdiff>" >&2
    exit 2
  fi
}

# e2e_init "$@": checks the arguments, then sets tool and profdiff (absolute
# paths of the two arguments), src (the repository) and bin (the build tree),
# and makes sure `go` has a cache directory.
e2e_init() {
  e2e_check_args "$@"
  tool=$(realpath "$1")
  profdiff=$(realpath "$2")
  src=${GOHEAP2PPROF_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
  bin=${GOHEAP2PPROF_BINARY_DIR:-$src/build}
  e2e_go_cache_fallback "$bin"
}

# e2e_go_cache_fallback <build-dir>: `go` needs a cache directory, and CTest
# may run us without HOME: then GOCACHE and GOPATH go to <build-dir>/e2e.
e2e_go_cache_fallback() {
  if [[ -z ${HOME:-} && -z ${GOCACHE:-} ]]; then
    export GOCACHE=$1/e2e/go-cache GOPATH=$1/e2e/go-path
  fi
}

# e2e_require_qemu_arm64: skips the test (exit 77, saying why) unless
# qemu-user can run a cross-built arm64 Go program here, then sets qemu (the
# emulator) and qemu_sysroot (for -L: Go's arm64 PIEs name its dynamic
# loader). Needs qemu-user-static and libc6-arm64-cross
# (scripts/install-deps.sh installs both); a seccomp profile or a low
# vm.mmap_min_addr can still stop qemu, hence the probe.
e2e_require_qemu_arm64() {
  qemu=$(command -v qemu-aarch64-static || true)
  qemu_sysroot=/usr/aarch64-linux-gnu
  if [[ -z $qemu ]]; then
    echo "SKIP: qemu-aarch64-static is not installed (apt-get install qemu-user-static)"
    exit 77
  fi
  if [[ ! -e $qemu_sysroot/lib/ld-linux-aarch64.so.1 ]]; then
    echo "SKIP: $qemu_sysroot/lib/ld-linux-aarch64.so.1 is missing (apt-get install libc6-arm64-cross)"
    exit 77
  fi
  local probe out
  probe=$(mktemp -d)
  printf 'package main\n\nfunc main() { println("ok") }\n' >"$probe/main.go"
  if ! (cd "$probe" && env GOTOOLCHAIN=local GOARCH=arm64 CGO_ENABLED=0 \
    go build -o probe main.go) >"$probe/log" 2>&1; then
    echo "SKIP: cannot cross-build for arm64: $(tail -n 1 "$probe/log")"
    rm -rf "$probe"
    exit 77
  fi
  if ! out=$("$qemu" -L "$qemu_sysroot" "$probe/probe" 2>&1) || [[ $out != ok ]]; then
    echo "SKIP: $qemu cannot run an arm64 program here: $out"
    rm -rf "$probe"
    exit 77
  fi
  rm -rf "$probe"
}

# e2e_require_executables <file>...: skips the test (exit 77) unless every
# file is executable.
e2e_require_executables() {
  local f
  for f in "$@"; do
    if [[ ! -x $f ]]; then
      echo "SKIP: $f is not an executable"
      exit 77
    fi
  done
}

# e2e_require_seams: fails the test (exit 1, never a skip) unless the tool
# was built with -DGOHEAP2PPROF_TEST_SEAMS=ON (scripts/test.sh does): the
# suite's cases need its test seams, and a release build has none, so
# without them the suite would test nothing it claims to.
e2e_require_seams() {
  if ! "$tool" --version 2>/dev/null | grep -q '^test seams compiled in'; then
    echo "FAIL: $tool has no test seams: configure the build with -DGOHEAP2PPROF_TEST_SEAMS=ON" \
      "(scripts/test.sh does); this suite needs them" >&2
    exit 1
  fi
}

# e2e_require_command <command> <reason>: skips the test (exit 77), printing
# "SKIP: <reason>", unless the command is on PATH.
e2e_require_command() {
  if ! command -v "$1" >/dev/null; then
    echo "SKIP: $2"
    exit 77
  fi
}

# The opt-in real Parca suites (serve_parca, push_parca): sets $parca to the
# server binary (GOHEAP2PPROF_PARCA, or <build>/parca/parca, built as
# tests/e2e/serve_parca_test.sh's header says), or skips saying so, and
# checks what they use beside it.
e2e_require_parca() {
  # GOHEAP2PPROF_PARCA, else <build>/parca/parca, else the one install-deps.sh --test builds.
  parca=${GOHEAP2PPROF_PARCA:-$bin/parca/parca}
  [[ -z ${GOHEAP2PPROF_PARCA:-} && ! -x $parca ]] && parca=$(command -v parca || echo "$parca")
  if [[ ! -x $parca ]]; then
    echo "SKIP: no Parca server at $parca or on PATH (scripts/install-deps.sh --test builds it; or set GOHEAP2PPROF_PARCA)"
    exit 77
  fi
  e2e_require_go
  e2e_require_command curl "needs curl"
  e2e_require_command jq "needs jq"
}

# e2e_start_parca [yaml]: starts the Parca server ($parca, from
# e2e_require_parca) on a free port, storing under $work/data, with yaml
# appended to its configuration (e.g. scrape_configs); sets pport, papi (its
# API's base URL) and parca_pid, and waits until the API answers.
e2e_start_parca() {
  pport=$(e2e_free_port)
  mkdir -p "$work/data"
  {
    cat <<YAML
object_storage:
  bucket:
    type: "FILESYSTEM"
    config:
      directory: "$work/data"
YAML
    [[ -n ${1:-} ]] && printf '%s\n' "$1"
  } >"$work/parca.yaml"
  e2e_start "$work/parca.out" "$work/parca.log" "$parca" --config-path="$work/parca.yaml" \
    --http-address="127.0.0.1:$pport" --debuginfod-upstream-servers=
  parca_pid=$target_pid
  papi="http://127.0.0.1:$pport/api"
  for _ in $(seq 1 150); do
    curl -s -o /dev/null "$papi/profiles/types" && break
    kill -0 "$parca_pid" 2>/dev/null || break
    sleep 0.2
  done
}

# The Go toolchains of the test matrix: tests/go_toolchains.txt, the one
# list of them; the "shared" ones are unpacked by scripts/unpack-toolchains.sh
# into toolchains_dir from toolchains_shared (scripts/toolchain_dirs.sh; CTest
# passes both in the environment).
toolchains_list=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/go_toolchains.txt
toolchains_shared=$(repo=$(cd "$(dirname "$toolchains_list")/.." && pwd) &&
  source "$repo/scripts/toolchain_dirs.sh" && echo "$shared")
toolchains_dir=$(repo=$(cd "$(dirname "$toolchains_list")/.." && pwd) &&
  source "$repo/scripts/toolchain_dirs.sh" && echo "$cache")

# toolchain_versions: every version of the list, oldest first.
toolchain_versions() {
  awk '$1 ~ /^go/ {print $1}' "$toolchains_list"
}

# toolchain_minor <version>: the minor number of a go1.N[.P] version (N).
toolchain_minor() {
  local minor=${1#go1.}
  echo "${minor%%.*}"
}

# toolchain_how <version>: shared, path, gotoolchain or a go binary's path.
toolchain_how() {
  awk -v v="$1" '$1 == v {print $2}' "$toolchains_list"
}

# toolchain_arm64_live <version>: 0 if its arm64 builds run live under qemu.
toolchain_arm64_live() {
  [[ $(awk -v v="$1" '$1 == v {print $3}' "$toolchains_list") == arm64-live ]]
}

# go_cmd <version>: the command line that runs that Go toolchain (word-split
# it), or nothing for a version outside the list.
go_cmd() {
  local how
  how=$(toolchain_how "$1")
  case $how in
    shared) echo "env GOTOOLCHAIN=local $toolchains_dir/$1/bin/go" ;;
    path) echo "env GOTOOLCHAIN=local go" ;;
    gotoolchain) echo "env GOTOOLCHAIN=$1 go" ;;
    /*) echo "env GOTOOLCHAIN=local $how" ;;
  esac
}

# toolchain_ok <version>: 0 if the toolchain runs and is that version; else
# prints why not.
toolchain_ok() {
  local version=$1 out cmd
  cmd=$(go_cmd "$version")
  if [[ -z $cmd ]]; then
    echo "toolchain $version is not in $toolchains_list"
    return 1
  fi
  if ! out=$($cmd version 2>&1); then
    echo "toolchain $version unavailable: $(echo "$out" | tail -n 1)"
    return 1
  fi
  if [[ $out != *"go version $version "* ]]; then
    echo "toolchain $version unavailable: got '$out'"
    return 1
  fi
}

# go_programs_status <version>: "ok", "skip <why>" or "fail <why>" from the
# go_programs fixture (tests/go_programs.sh) in $bin/go-programs; "fail ..."
# when the fixture did not run.
go_programs_status() {
  local line
  line=$(awk -v v="$1" '$1 == v {$1 = ""; sub(/^ /, ""); print}' "$bin/go-programs/status" 2>/dev/null)
  echo "${line:-fail the go_programs fixture has no status for $1 (run ctest, or bash tests/go_programs.sh $bin)}"
}

# e2e_toolchain_states [<wanted>]: fills the associative array toolchain_state
# (declare -A it first) with each toolchain's go_programs_status word (ok,
# skip or fail), for the toolchains the function <wanted> accepts (all without
# one), and reports each one that is not ok as a skip or a failure.
e2e_toolchain_states() {
  local version s why
  for version in $(toolchain_versions); do
    [[ -z ${1:-} ]] || "$1" "$version" || continue
    read -r s why <<<"$(go_programs_status "$version")"
    toolchain_state[$version]=$s
    if [[ $s != ok ]]; then
      [[ $s == skip ]] && skip "$version ($why)" || fail "$version ($why)"
    fi
  done
}

# go_program <version> <name>: the path of a program the fixture built.
go_program() {
  echo "$bin/go-programs/$1/$2"
}

# The toolchains with which the go_programs fixture also builds
# testdata/goroutines as a stripped, externally linked cgo PIE
# (goroutines-amd64-pie-cgo-stripped): two, the external link being the
# slowest build; go1.19.8 built Debian's prometheus, go1.26.8 is the newest
# stable one.
goroutines_cgo_versions="go1.19.8 go1.26.8"

# e2e_require_go: sets the array go to the command that runs Go 1.26.8 (the
# `go` on PATH), or skips the test (exit 77) when that is not what it runs.
e2e_require_go() {
  local version
  read -r -a go <<<"$(go_cmd go1.26.8)"
  if ! version=$("${go[@]}" version 2>&1) || [[ $version != *"go version go1.26.8 "* ]]; then
    echo "SKIP: needs Go 1.26.8 as \`go\` (got: ${version:-nothing})"
    exit 77
  fi
}

# e2e_make_work <name>: sets work to a new directory $bin/e2e/<name>.XXXXXX.
e2e_make_work() {
  mkdir -p "$bin/e2e"
  work=$(mktemp -d "$bin/e2e/$1.XXXXXX")
}

# e2e_build_oracle: sets binary to testdata/oracle built with Go 1.26.8: the
# go_programs fixture's, else built with "${go[@]}" (e2e_require_go) into
# $work/bin/oracle; when that fails, reports it and exits 1.
e2e_build_oracle() {
  binary=$(go_program go1.26.8 oracle-amd64-exe)
  if [[ $(go_programs_status go1.26.8) == ok && -x $binary ]]; then
    echo "testdata/oracle as the go_programs fixture built it with Go 1.26.8: $binary"
    return
  fi
  echo "building testdata/oracle with $("${go[@]}" version)"
  binary=$work/bin/oracle
  if ! (cd "$src/testdata/oracle" && CGO_ENABLED=0 "${go[@]}" build -o "$binary" .) \
    >"$work/build.log" 2>&1; then
    fail "go build of testdata/oracle"
    cat "$work/build.log"
    exit 1
  fi
}

# e2e_go_build <program> <output>: builds testdata/<program> (or a path under
# the source tree, such as tests/pushreceiver) with "${go[@]}" and without cgo;
# when that fails, reports it with the build log and ends the suite.
e2e_go_build() {
  local dir=$1 out=$2
  [[ $dir == */* ]] || dir=testdata/$dir
  mkdir -p "$(dirname "$out")"
  if ! (cd "$src/$dir" && CGO_ENABLED=0 "${go[@]}" build -o "$out" .) \
    >"$work/build-$(basename "$out").log" 2>&1; then
    fail "go build of $dir" "$work/build-$(basename "$out").log"
    e2e_finish
  fi
}

# The processes a test started in the background; e2e_stop_pids ends them.
# pid_start_time[pid]: each one's start time, read when it was started.
pids=()
declare -gA pid_start_time=()

# e2e_start <stdout-file> <stderr-file> <command...>: starts the command in
# the background, sets target_pid to its pid and adds it to pids, with its
# start time (an exec keeps it: it is the start of the forked child).
target_pid=""
e2e_start() {
  local out=$1 err=$2
  shift 2
  "$@" >"$out" 2>"$err" &
  target_pid=$!
  e2e_track_pid "$target_pid"
}

# e2e_start_as_nobody <name> <command...>: starts it as user
# $e2e_nobody_uid, 65534 unless a suite sets another (setpriv; the agent
# suites admit only that user, leaving the machine's other Go processes
# alone, and a suite with timing checks takes a user of its own), waits at
# most 30 s for a line "READY..." on its stdout ($work/<name>.out) and sets
# <name>_pid; a target that does not start ends the suite (e2e_finish).
e2e_nobody_uid=65534
e2e_start_as_nobody() {
  local name=$1
  shift
  e2e_start "$work/$name.out" "$work/$name.err" setpriv --reuid="$e2e_nobody_uid" \
    --regid="$e2e_nobody_uid" \
    --clear-groups "$@"
  if ! e2e_wait_for_line "$work/$name.out" "^READY" "$target_pid" 30; then
    fail "$name did not start" "$work/$name.err"
    e2e_finish
  fi
  printf -v "${name}_pid" %s "$target_pid"
}

# e2e_track_pid <pid>: adds a process the test started itself (cmd & ...)
# to pids, with its start time, for e2e_stop_pids. Call it right after $!.
e2e_track_pid() {
  pids+=("$1")
  pid_start_time[$1]=$(e2e_start_time "$1")
}

# e2e_start_time <pid>: the process's start time (field 22 of
# /proc/<pid>/stat, clock ticks after boot), or nothing (status 1) when no
# process has that pid. A pid alone names a process only while it lives:
# pid_max is 32768 on many machines, and a suite (or the suites beside it
# under ctest -j) forks that many processes in minutes, so a pid that was
# freed soon names another process. The pid and its start time together
# name one process, as the engine identifies its targets.
e2e_start_time() {
  local stat fields
  read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
  # After the command name, which may itself hold spaces and ")".
  read -r -a fields <<<"${stat##*) }"
  # fields[0] is field 3 (the state), so field 22 is fields[19].
  [[ -n ${fields[19]:-} ]] || return 1
  echo "${fields[19]}"
}

# e2e_same_process <pid> [<start-time>]: 0 if the pid still names the
# process that had that start time (by default the one e2e_start recorded),
# even as a zombie not yet reaped; 1 if it ended and its pid is free or was
# given to another process.
e2e_same_process() {
  local want=${2:-${pid_start_time[$1]:-}} now
  now=$(e2e_start_time "$1") || return 1
  [[ -n $want && $now == "$want" ]]
}

# e2e_running <pid> [<start-time>]: 0 if the pid still names that process
# (e2e_same_process) and it has not ended (a zombie has).
e2e_running() {
  e2e_same_process "$@" && [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]
}

# e2e_wait_exit <pid> <seconds>: waits for a background child of ours to
# end; sets rc to its exit status, or to 124 after killing it on timeout.
# Never signals another process that got the pid meanwhile.
e2e_wait_exit() {
  local pid=$1 deadline=$((SECONDS + $2)) start
  start=$(e2e_start_time "$pid")
  while e2e_running "$pid" "$start" && ((SECONDS < deadline)); do sleep 0.2; done
  if e2e_running "$pid" "$start"; then
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rc=124
  else
    wait "$pid"
    rc=$?
  fi
}

# e2e_check_same_process <what> <pid> [<start-time>]: for a case about to
# use a pid it has held across other processes' lives (a target started at
# the beginning of a suite): returns 0 if it is still that process; else
# fails the case "<what>" saying how the process ended (its exit status
# from `wait` when it was our child) and what has the pid now, and returns 1.
e2e_check_same_process() {
  local what=$1 pid=$2 start=${3:-${pid_start_time[$2]:-}} rc now
  e2e_same_process "$pid" "$start" && return 0
  wait "$pid" 2>/dev/null
  rc=$?
  now=$({ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null)
  fail "$what: process $pid (start time ${start:-?}) has ended (wait status $rc$( ((rc > 128)) &&
    echo ": signal $((rc - 128))")); its pid now names ${now:-no process}"
  return 1
}

# e2e_wait_until <seconds> <command...>: true once the command succeeds
# (tried every 0.2 s), false when the time is up.
e2e_wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS >= deadline)) && return 1
    sleep 0.2
  done
}

# e2e_wait_for_line <file> <regex> <pid> <timeout-seconds>: waits until a
# line of the file matches; returns 1, silently, if the process <pid> ends or
# the timeout passes first.
e2e_wait_for_line() {
  local file=$1 regex=$2 pid=$3 deadline=$((SECONDS + $4))
  until grep -q "$regex" "$file" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null || ((SECONDS >= deadline)); then
      return 1
    fi
    sleep 0.1
  done
}

# e2e_stop_pids [signal]: kills every process in pids (with SIGTERM, or the
# given signal such as -9), waits for each, and empties the list. Use it in
# the EXIT trap, and between cases. A process that ended by itself (or was
# killed and reaped by a case) is not signalled: its pid may name another
# suite's process by now, and killing that one fails a suite beside us.
e2e_stop_pids() {
  local pid
  for pid in "${pids[@]}"; do
    if [[ -n ${pid_start_time[$pid]:-} ]]; then
      e2e_same_process "$pid" && kill ${1:+"$1"} "$pid" 2>/dev/null
    elif e2e_child_of_this_shell "$pid"; then
      # Put in pids without e2e_track_pid: no start time to check, but a
      # child of this shell is one of ours (and left alive, wait would hang).
      kill ${1:+"$1"} "$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
    unset "pid_start_time[$pid]"
  done
  pids=()
}

# e2e_child_of_this_shell <pid>: 0 if the process's parent is this shell.
e2e_child_of_this_shell() {
  local stat rest
  read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
  rest=${stat##*) } # after the command name: state, ppid, ...
  set -- $rest
  [[ ${2:-} == "$$" ]]
}

# e2e_kernel_core_check: sets core_prefix, the name the kernel gives a core in
# the crashing process's directory (kernel.core_pattern up to its first %),
# and kernel_why: why the kernel cannot write one there, empty if it can.
e2e_kernel_core_check() {
  local pattern
  kernel_why=""
  pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null || echo "?")
  core_prefix=${pattern%%%*}
  if [[ $pattern == \|* ]]; then
    kernel_why="kernel.core_pattern pipes cores to a program ($pattern)"
  elif [[ $pattern == */* || -z $core_prefix ]]; then
    kernel_why="kernel.core_pattern '$pattern' does not name a file in the crashing process's directory"
  elif ! (ulimit -c unlimited) 2>/dev/null; then
    kernel_why="cannot raise RLIMIT_CORE (ulimit -c unlimited fails: hard limit $(ulimit -H -c))"
  fi
}

# e2e_free_port: prints a loopback TCP port that is free now and that the
# kernel does not hand out by itself: for a server that must be told its
# port (Prometheus, Parca). One of the kernel's ephemeral ports (what a bind
# to port 0 gets) could be given, between our check and the server's bind,
# to a connection or a port-0 listener of a suite running beside us; a
# random port below the ephemeral range can only collide with another
# suite's random choice, which the bind check makes unlikely. Servers that
# can listen on port 0 and say where (serve, push, the Go test programs)
# should: that needs no helper at all.
e2e_free_port() {
  python3 - <<'PY'
import random, socket
lo, hi = map(int, open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
# Below the ephemeral range, above the well-known ports; or above it.
choices = range(10000, lo) if lo > 11000 else range(hi + 1, 65536)
for _ in range(200):
    port = random.choice(choices)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break
else:
    raise SystemExit("e2e_free_port: no free port found")
PY
}

# e2e_cgroup_name <what>: a cgroup name no other suite (nor another run of
# this one) uses at the same time: goheap2pprof-<suite>-<what>.<pid of this
# shell>. Create it under the hierarchy you need and remove it in the EXIT
# trap.
e2e_cgroup_name() {
  echo "goheap2pprof-$(basename "$0" .sh)-$1.$$"
}

# Case results: pass <what>, fail <what> [<file>: shows its first 20 lines,
# indented], skip <what>. Each prints one "PASS|FAIL|SKIP <what>" line and
# counts it for e2e_finish.
passed=0 failed=0 skipped=0
pass() {
  echo "PASS $1"
  passed=$((passed + 1))
}
fail() {
  echo "FAIL $1"
  failed=$((failed + 1))
  if [[ -n ${2:-} ]]; then
    sed 's/^/    /' "$2" | head -n 20
  fi
}
skip() {
  echo "SKIP $1"
  skipped=$((skipped + 1))
}

# e2e_finish [--no-skipped]: prints the summary line ("summary: P passed,
# F failed, S skipped (work dir W)"; without the skipped count when asked)
# and exits: 77 if no case passed or failed, 1 if one failed, else 0 after
# removing $work (which is kept on failure, for inspection).
e2e_finish() {
  if [[ ${1:-} == --no-skipped ]]; then
    echo "summary: $passed passed, $failed failed (work dir $work)"
  else
    echo "summary: $passed passed, $failed failed, $skipped skipped (work dir $work)"
  fi
  if ((passed + failed == 0)); then
    echo "SKIP: nothing could run"
    exit 77
  fi
  if ((failed == 0)); then
    rm -rf "$work"
    exit 0
  fi
  exit 1
}
