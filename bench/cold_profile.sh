#!/usr/bin/env bash
# Where a cold capture's CPU goes, part by part: ROUNDS one-shot captures of a
# running Go target under `perf record` with DWARF call graphs, each sample
# filed under the first part (in the table's order) that its stack names, and
# a table of the parts: samples, share, CPU ms a capture, and how much of each
# was page faults on fresh memory. Then the captures' own --stats phases and
# wall times, run again without perf. For explaining where a goal is missed
# (issue 42): a profile of the process from exec to exit, the dynamic
# loader and the teardown included, which --stats does not see.
#
#   bash bench/cold_profile.sh <pid> <goheap2pprof> [rounds]      # FREQ=4000
#   bash bench/cold_profile.sh 4242 build-rel/goheap2pprof 20
#
# The target is any running Go process (testdata/benchtarget prints its pid on
# its READY line). Needs perf and python3. Each capture is written to a
# scratch file and removed. DEBUG=1 prints the commonest stacks of "other"
# (those perf could not unwind, mostly) on stderr.
set -euo pipefail
(($# >= 2)) || { sed -n '2,18p' "$0" >&2; exit 2; }
pid=$1 tool=$2 rounds=${3:-20} freq=${FREQ:-4000}
command -v perf >/dev/null || { echo "cold_profile.sh: perf is not installed" >&2; exit 1; }
kill -0 "$pid" 2>/dev/null || { echo "cold_profile.sh: no process $pid" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The profile: the captures back to back in one perf session.
perf record -q -o "$work/perf.data" -F "$freq" --call-graph dwarf,16384 -- \
  bash -c 'for _ in $(seq "$1"); do "$2" "$3" -o "$4/out.pb.gz"; done' _ \
  "$rounds" "$tool" "$pid" "$work" >/dev/null 2>"$work/record.err" ||
  { cat "$work/record.err" >&2; exit 1; }
perf script -i "$work/perf.data" --comm "$(basename "$tool" | cut -c1-15)" \
  -F comm,tid,ip,sym,dso 2>/dev/null >"$work/script.txt"

# The same captures without perf: their --stats phases and wall times.
for _ in $(seq "$rounds"); do
  t0=$(date +%s%N)
  "$tool" "$pid" -o "$work/out.pb.gz" --stats 2>"$work/stats.txt"
  t1=$(date +%s%N)
  echo "wall $(((t1 - t0) / 1000)) $(awk '/^  time /{printf "%s %s ", $2, $3}' "$work/stats.txt")"
done >"$work/timed.txt"

python3 - "$work/script.txt" "$work/timed.txt" "$rounds" "$freq" <<'PY'
import collections, os, statistics, sys

script, timed, rounds, freq = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
# Parts, first match wins; a frame matches when it contains one of the words.
PARTS = [
    ("start: exec (the kernel)", ["load_elf_binary", "bprm_execve", "do_execveat"]),
    ("start: the dynamic loader", ["_dl_start", "_dl_relocate_object", "_dl_runtime_resolve",
                                   "_dl_fixup", "dl_main", "_dl_map_object", "_dl_init"]),
    ("exit: teardown", ["do_exit", "exit_mmap", "__run_exit_handlers", "_dl_fini",
                        "exit_group"]),
    ("walk: process_vm_readv (the read)", ["process_vm_readv"]),
    ("walk: symbolizing ahead of the build", ["StackWarmer"]),
    ("build: stacks to locations and samples", ["HeapProfileBuilder", "LocationTables",
                                                "PackedBuckets::ForEach", "Records::",
                                                "BuildFrom"]),
    ("write: encoding and gzip", ["WriteSample", "FinishedProfile", "isal_deflate",
                                  "encode_deflate", "deflate_icf", "ParallelGzipStream",
                                  "SerializeTo"]),
    ("identify: ELF, pclntab, symbols, DWARF", ["ExecutableAnalysis::ExecutableAnalysis",
                                                "ExecutableAnalysis::Create", "DwarfTypes",
                                                "CheckLayouts", "Identify",
                                                "decode_huffman"]),
    ("walk: parsing buckets", ["StreamBuckets", "BlockCacheReader", "WalkInto",
                               "PackedBuckets::Append"]),
    ("threads: hand-over and scheduling", ["futex", "pthread_cond", "__schedule",
                                           "std::thread", "clone3"]),
    # Samples whose stack perf could not unwind past these are filed by them.
    ("memory: malloc and free, not placed", ["_int_malloc", "_int_free", "malloc_consolidate",
                                             "__libc_malloc", "__libc_free", "unlink_chunk"]),
    ("memory: unmapping, not placed", ["munmap"]),
    ("files: the kernel's reads and writes, not placed", ["ext4_", "filemap_", "vfs_read",
                                                         "vfs_write", "seq_read"]),
]
OTHER = "other"
FAULT = "asm_exc_page_fault"

DEBUG = os.environ.get("DEBUG") == "1"
others = collections.Counter()
counts = {name: [0, 0] for name, _ in PARTS}
counts[OTHER] = [0, 0]
total = 0

def file_sample(frames):
    global total
    if not frames:
        return
    total += 1
    fault = any(FAULT in f for f in frames)
    for name, words in PARTS:
        if any(w in f for f in frames for w in words):
            counts[name][0] += 1
            counts[name][1] += fault
            return
    counts[OTHER][0] += 1
    counts[OTHER][1] += fault
    if DEBUG:
        others[" < ".join(f.split(" ", 1)[-1] for f in frames[:6])] += 1

frames = []
with open(script, errors="replace") as f:
    for line in f:
        if not line.strip():
            file_sample(frames)
            frames = []
        elif line.startswith(("\t", " ")):
            frames.append(line.strip())
file_sample(frames)

if DEBUG:
    for stack, n in others.most_common(25):
        print(n, stack, file=sys.stderr)
if total == 0:
    sys.exit("cold_profile.sh: perf recorded no samples of the tool")
print(f"{rounds} cold captures under perf record -F {freq} --call-graph dwarf: {total} samples")
print()
print("| part | samples | share | CPU ms a capture | of which page faults |")
print("|---|---:|---:|---:|---:|")
for name in [n for n, _ in PARTS] + [OTHER]:
    n, faults = counts[name]
    if n == 0:
        continue
    print(f"| {name} | {n} | {100 * n / total:.1f}% | {n / freq / rounds * 1000:.2f} |"
          f" {100 * faults / n:.0f}% |")
all_faults = sum(c[1] for c in counts.values())
print(f"| all | {total} | 100% | {total / freq / rounds * 1000:.2f} |"
      f" {100 * all_faults / total:.0f}% |")

walls, phases = [], {}
with open(timed) as f:
    for line in f:
        words = line.split()
        walls.append(int(words[1]) / 1000)
        for name, ms in zip(words[2::2], words[3::2]):
            phases.setdefault(name, []).append(float(ms))
def spread(xs):
    return f"{statistics.median(xs):.1f} ({min(xs):.1f}-{max(xs):.1f})"
print()
print(f"The same captures without perf, {rounds} rounds, medians (min-max) in ms:")
print()
print("| wall | " + " | ".join(phases) + " |")
print("|---:|" + "---:|" * len(phases))
print(f"| {spread(walls)} | " + " | ".join(spread(v) for v in phases.values()) + " |")
PY
