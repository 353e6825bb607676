#!/usr/bin/env bash
# `goheap2pprof watch` on a hostile node (issue 22), against testdata/oomgrower:
#   1. its captures run in the confined worker: a target whose capture
#      crashes, hangs or exhausts the worker (the worker test seams,
#      GOHEAP2PPROF_SERVE_SEAM) costs that capture only: it is recorded as
#      failed with the reason, and the other process is still captured;
#   2. a full disk (a 256 KiB tmpfs) costs the files only: profile writes and
#      watch.jsonl appends fail, watch says so and goes on, and writes again
#      once space is freed, with a records-lost line in watch.jsonl;
#   3. a shared output directory: one that others may write to without the
#      sticky bit, or another user's, is refused (exit 2); a symbolic link or
#      a FIFO planted at watch.jsonl is refused without following or
#      blocking (exit 9); links and FIFOs planted under the names of its next
#      profiles are neither written through nor blocked on.
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_seams
e2e_require_executables "$tool"
e2e_require_go
e2e_require_command jq "jq is not installed (scripts/install-deps.sh installs it)"
e2e_require_command perl "perl is not installed"
e2e_make_work watch_hostile

echo "building testdata/oomgrower with $("${go[@]}" version)"
grower=$work/bin/oomgrower
e2e_go_build oomgrower "$grower"

mounted=""
cleanup() {
  e2e_stop_pids -9
  [[ -n $mounted ]] && umount "$mounted" 2>/dev/null
}
trap cleanup EXIT

# start_grower <name>: starts a grower capped at 8 MiB; sets grower_pid.
start_grower() {
  e2e_start "$work/$1.out" "$work/$1.err" "$grower" -max-mib 8
  grower_pid=$target_pid
  e2e_wait_for_line "$work/$1.out" '^READY' "$grower_pid" 10
}

# count <jsonl> <jq filter>: the number of records that match.
count() {
  jq -c "select($2)" "$1" 2>/dev/null | wc -l
}

# --- 1. hostile targets cost one capture --------------------------------------
for seam in crash spin hog; do
  dir=$work/seam-$seam
  mkdir "$dir"
  if ! start_grower "$seam-bad" || ! bad=$grower_pid || ! start_grower "$seam-good"; then
    fail "$seam: the growers did not start"
    e2e_stop_pids -9
    continue
  fi
  good=$grower_pid
  GOHEAP2PPROF_SERVE_SEAM=$seam:$bad "$tool" watch "$bad" "$good" -o "$dir" --every 1s \
    --capture-timeout 2 --poll 100ms >"$dir/watch.out" 2>"$dir/watch.err" &
  watch_pid=$!
  # Two failed captures of the bad one (each up to the 2 s timeout), then
  # the good one must have been captured after them.
  deadline=$((SECONDS + 30))
  while (($(count "$dir/watch.jsonl" ".pid == $bad and .error != null") < 2)) &&
    kill -0 "$watch_pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
  sleep 1.5
  alive=no
  kill -0 "$watch_pid" 2>/dev/null && alive=yes
  kill -TERM "$watch_pid"
  e2e_wait_exit "$watch_pid" 20
  jsonl=$dir/watch.jsonl
  nfailed=$(count "$jsonl" ".pid == $bad and .event == \"trigger\" and .error != null")
  ok_bad=$(count "$jsonl" ".pid == $bad and .file != null")
  ok_good=$(count "$jsonl" ".pid == $good and .file != null")
  why=$(jq -r "select(.pid == $bad and .error != null) | .error" "$jsonl" 2>/dev/null | head -n 1)
  case $seam in
    crash) want='killed by signal 6' ;;
    spin) want='did not finish within --capture-timeout' ;;
    hog) want='memory limit' ;;
  esac
  if [[ $alive == yes && $rc == 0 ]] && ((nfailed >= 2 && ok_bad == 0 && ok_good >= 2)) &&
    [[ $why == *"$want"* ]]; then
    pass "$seam: $nfailed captures of the hostile pid failed (\"$why\"), $ok_good of the other written, watch went on"
  else
    fail "$seam: alive $alive, exit $rc, $nfailed failed / $ok_bad written of the hostile pid, $ok_good of the other; reason \"$why\"" "$dir/watch.err"
    sed 's/^/    /' "$jsonl" | head -n 10
  fi
  e2e_stop_pids -9
done

# --- 2. a full disk -----------------------------------------------------------
full=$work/full
mkdir "$full"
if [[ $(id -u) != 0 ]]; then
  skip "full disk: needs root to mount a small tmpfs"
elif ! mount -t tmpfs -o size=256k,mode=0755 tmpfs "$full" 2>"$work/mount.err"; then
  skip "full disk: cannot mount a tmpfs here ($(head -n 1 "$work/mount.err"))"
elif ! start_grower fullgrower; then
  fail "full disk: the grower did not start" "$work/fullgrower.err"
else
  mounted=$full
  "$tool" watch "$grower_pid" -o "$full" --every 300ms --max-files 2 --poll 100ms \
    >"$work/full.out" 2>"$work/full.err" &
  watch_pid=$!
  e2e_wait_for_line "$full/watch.jsonl" '"reason":"baseline"' "$watch_pid" 20
  # Fill the filesystem to the last block.
  dd if=/dev/zero of="$full/filler" bs=4k count=1000 2>/dev/null
  # Failed profiles and appends until the page watch.jsonl ends in is full.
  e2e_wait_for_line "$work/full.err" 'cannot append to .*watch.jsonl: No space left' "$watch_pid" 20
  sleep 1
  alive=no
  kill -0 "$watch_pid" 2>/dev/null && alive=yes
  lines_full=$(wc -l <"$full/watch.jsonl")
  rm -f "$full/filler"
  e2e_wait_for_line "$work/full.err" 'appending to watch.jsonl again' "$watch_pid" 10
  sleep 1
  kill -TERM "$watch_pid"
  e2e_wait_exit "$watch_pid" 20
  jsonl=$full/watch.jsonl
  nospace=$(count "$jsonl" '.error != null and (.error | contains("No space left"))')
  lost=$(jq -r 'select(.event == "records-lost") | .count' "$jsonl" 2>/dev/null | head -n 1)
  after=$(jq -r 'select(.event == "records-lost") | input_line_number' "$jsonl" 2>/dev/null | head -n 1)
  written_after=$(tail -n +"${after:-999999}" "$jsonl" | jq -c 'select(.file != null)' 2>/dev/null | wc -l)
  if [[ $alive == yes ]] && grep -q 'capture failed: writing .*No space left on device' "$work/full.err"; then
    pass "full disk: a profile write failed with ENOSPC and watch went on"
  else
    fail "full disk: alive $alive after the disk filled" "$work/full.err"
  fi
  if [[ $alive == yes ]] && grep -q 'cannot append to .*watch.jsonl: No space left' "$work/full.err"; then
    pass "full disk: a watch.jsonl append failed with ENOSPC and watch went on"
  else
    fail "full disk: no failed append, or watch ended ($alive)" "$work/full.err"
  fi
  if [[ $rc == 0 && -n $lost ]] && ((lost > 0 && written_after > 0)) && jq -s . "$jsonl" >/dev/null; then
    pass "full disk: space freed: $lost record(s) said lost, $written_after profile(s) written again, watch.jsonl parses ($nospace ENOSPC failures recorded, $lines_full lines when full)"
  else
    fail "full disk: exit $rc, records-lost '$lost', $written_after written after" "$work/full.err"
    tail -n 5 "$jsonl" | sed 's/^/    /'
  fi
fi
e2e_stop_pids -9
[[ -n $mounted ]] && umount "$mounted" && mounted=""

# --- 3. a shared output directory ---------------------------------------------
if ! start_grower sharedgrower; then
  fail "shared dir: the grower did not start" "$work/sharedgrower.err"
  e2e_finish
fi
echo "do not touch" >"$work/victim"

# refused <what> <dir> <code> <message>: watch must exit <code> at once
# (within 10 s: it must not block), naming the problem, without touching the
# victim.
refused() {
  local what=$1 dir=$2 code=$3 text=$4
  timeout -k 2 10 "$tool" watch "$grower_pid" -o "$dir" --no-baseline >"$work/refused.out" 2>&1
  local got=$?
  if [[ $got == "$code" ]] && grep -q -- "$text" "$work/refused.out" &&
    [[ $(cat "$work/victim") == "do not touch" ]]; then
    pass "$what: exit $code, \"$(head -n 1 "$work/refused.out")\""
  else
    fail "$what: exit $got (want $code), victim: $(cat "$work/victim")" "$work/refused.out"
  fi
}

mkdir -m 0777 "$work/open"
chmod 0777 "$work/open"
refused "world-writable dir without sticky bit" "$work/open" 2 "no sticky bit"
mkdir "$work/theirs"
chown 12345:12345 "$work/theirs" 2>/dev/null &&
  refused "another user's dir" "$work/theirs" 2 "neither root nor us"
mkdir "$work/link"
ln -s "$work/victim" "$work/link/watch.jsonl"
refused "symlink at watch.jsonl" "$work/link" 9 "symbolic link"
mkdir "$work/fifo"
mkfifo "$work/fifo/watch.jsonl"
refused "FIFO at watch.jsonl" "$work/fifo" 9 "FIFO"

# Links and FIFOs under every name the profiles of the next 4 s could take
# (the name has millisecond precision): watch must replace them, not write
# through them, and never block on one. A sticky world-writable directory
# (as /tmp) is accepted: others cannot remove our files there, but can plant.
dir=$work/planted
mkdir -m 1777 "$dir"
chmod 1777 "$dir"
perl -MPOSIX -MTime::HiRes=time -e '
  my ($dir, $pid, $victim) = @ARGV;
  my $t0 = int(time() * 1000);
  for my $ms ($t0 .. $t0 + 4000) {
    my $name = sprintf("%s/oomgrower-%d-%s.%03dZ-every.heap.pb.gz", $dir, $pid,
                       strftime("%Y%m%dT%H%M%S", gmtime(int($ms / 1000))), $ms % 1000);
    if ($ms % 2) { symlink($victim, $name) or die "symlink: $!" }
    else { POSIX::mkfifo($name, 0666) or die "mkfifo: $!" }
  }' "$dir" "$grower_pid" "$work/victim"
"$tool" watch "$grower_pid" -o "$dir" --no-baseline --every 500ms --max-files 100 \
  >"$work/planted.out" 2>"$work/planted.err" &
watch_pid=$!
sleep 3
alive=no
kill -0 "$watch_pid" 2>/dev/null && alive=yes
kill -TERM "$watch_pid"
e2e_wait_exit "$watch_pid" 20
written=$(jq -r 'select(.file != null) | .file' "$dir/watch.jsonl" 2>/dev/null)
regular=0
for f in $written; do [[ -f $dir/$f && ! -L $dir/$f ]] && regular=$((regular + 1)); done
if [[ $alive == yes && $rc == 0 && $(cat "$work/victim") == "do not touch" ]] &&
  ((regular >= 3)) && [[ $regular == $(wc -w <<<"$written") ]]; then
  pass "planted links and FIFOs: $regular profiles written as regular files in their place, the link target untouched, no block"
else
  fail "planted links and FIFOs: alive $alive, exit $rc, $regular regular of $(wc -w <<<"$written"), victim: $(cat "$work/victim")" "$work/planted.err"
fi

e2e_finish
