"""Compares goheap2pprof's outside read of a Go process's memory statistics
(tools/memstats_dump's JSON) with the process's own view (testdata/memstats's
JSON: runtime/metrics, runtime.ReadMemStats, NumGoroutine,
ThreadCreateProfile), as tests/e2e/memstats_oracle_test.sh needs.

    python3 memstats_compare.py <ours.json> <theirs.json> <go-minor> [table|experiment]

With "table" (a binary without DWARF) the layout must have come from the
per-version table; with "experiment" (a GOEXPERIMENT that moves fields)
from the DWARF, differing from the table; otherwise from the DWARF, and
equal to the table.

Prints one line per difference and exits 1 if there is one. Everything must
be equal except the named exceptions, each with its reason and a checked
bound (go-memstats-facts.md, section 7).
"""
import json
import sys

# The scalar metrics the engine computes, by the Go minor that added them
# (go-memstats-facts.md, section 6; checked against each toolchain's
# runtime/metrics.go).
METRICS_118 = [
    "/gc/cycles/automatic:gc-cycles", "/gc/cycles/forced:gc-cycles",
    "/gc/cycles/total:gc-cycles", "/gc/heap/allocs:bytes", "/gc/heap/allocs:objects",
    "/gc/heap/frees:bytes", "/gc/heap/frees:objects", "/gc/heap/goal:bytes",
    "/gc/heap/objects:objects", "/gc/heap/tiny/allocs:objects",
    "/memory/classes/heap/free:bytes", "/memory/classes/heap/objects:bytes",
    "/memory/classes/heap/released:bytes", "/memory/classes/heap/stacks:bytes",
    "/memory/classes/heap/unused:bytes", "/memory/classes/metadata/mcache/free:bytes",
    "/memory/classes/metadata/mcache/inuse:bytes",
    "/memory/classes/metadata/mspan/free:bytes",
    "/memory/classes/metadata/mspan/inuse:bytes", "/memory/classes/metadata/other:bytes",
    "/memory/classes/os-stacks:bytes", "/memory/classes/other:bytes",
    "/memory/classes/profiling/buckets:bytes", "/memory/classes/total:bytes",
    "/sched/goroutines:goroutines",
]
METRICS_119 = ["/gc/limiter/last-enabled:gc-cycle", "/gc/stack/starting-size:bytes",
               "/sched/gomaxprocs:threads"]
METRICS_121 = ["/gc/gogc:percent", "/gc/gomemlimit:bytes", "/gc/heap/live:bytes",
               "/gc/scan/globals:bytes", "/gc/scan/heap:bytes", "/gc/scan/stack:bytes",
               "/gc/scan/total:bytes"]

# The flush's persistentalloc moves bytes from OtherSys to GCSys; the facts
# saw 2-31 KiB. The bound leaves room for a larger mcentral spine.
GCSYS_SHIFT_BOUND = 256 << 10
# runtime.persistentChunkSize, the same in Go 1.18-1.27.
PERSISTENT_CHUNK = 256 << 10


def scavenged_between(om, tm, their_metrics):
    """The background scavenger released pages between the target's own
    metrics.Read and its ReadMemStats, a race inside the target
    (go-memstats-facts.md 7; seen once in 15 gcore cases of
    memstats_variants_test.sh when the gcore, which stops the target for a
    second, still came before the view): then its ReadMemStats has more
    HeapReleased than its own metrics, while its metrics equal ours and
    HeapIdle (free + released) is unchanged."""
    released = their_metrics.get("/memory/classes/heap/released:bytes")
    return (released == om["HeapReleased"] and tm["HeapReleased"] > released and
            tm["HeapIdle"] == om["HeapIdle"])


def main():
    ours = json.load(open(sys.argv[1]))
    theirs = json.load(open(sys.argv[2]))
    minor = int(sys.argv[3])
    diffs = []

    expected = list(METRICS_118)
    if minor >= 19:
        expected += METRICS_119
    if minor >= 21:
        expected += METRICS_121
    our_metrics = ours["metrics_uint64"]
    their_metrics = theirs["metrics_uint64"]
    if sorted(our_metrics) != sorted(expected):
        diffs.append("metric names: ours %s, expected %s" % (sorted(our_metrics), sorted(expected)))
    if list(our_metrics) != sorted(our_metrics):
        diffs.append("metrics are not sorted by name")
    for name in expected:
        if name not in their_metrics:
            diffs.append("%s: the target has no such metric" % name)
        elif our_metrics.get(name) != their_metrics[name]:
            diffs.append("%s: ours %s, the target's %s" % (name, our_metrics.get(name),
                                                           their_metrics[name]))

    om, tm = ours["memstats"], theirs["memstats"]
    # When the flush's persistentalloc has to map a new chunk, Sys and
    # GCSys+OtherSys grow by that chunk (persistentChunkSize, 256 KiB) inside:
    # both by the same amount, and only by 0 or one chunk.
    chunk = (tm["Sys"] - om["Sys"]) if tm["Sys"] != om["Sys"] else 0
    if chunk not in (0, PERSISTENT_CHUNK):
        diffs.append("MemStats.Sys: ours %d, ReadMemStats %d (neither equal nor one "
                     "persistentalloc chunk more)" % (om["Sys"], tm["Sys"]))
    # That chunk is also mapped memory the memory-limit goal leaves out:
    # when that goal binds (GOGC=off, or a limit), NextGC inside is lower by
    # up to the chunk (less the headroom's share).
    if chunk and 0 <= om["NextGC"] - tm["NextGC"] <= chunk:
        skip_next_gc = True
    else:
        skip_next_gc = False
    for field, value in tm.items():
        if field in ("GCSys", "OtherSys", "Sys") or (field == "NextGC" and skip_next_gc):
            continue
        if field == "HeapReleased" and scavenged_between(om, tm, their_metrics):
            continue
        if om.get(field) != value:
            diffs.append("MemStats.%s: ours %s, ReadMemStats %s" % (field, om.get(field),
                                                                   str(value)[:200]))
    if om["GCSys"] + om["OtherSys"] + chunk != tm["GCSys"] + tm["OtherSys"]:
        diffs.append("GCSys+OtherSys: ours %d (+%d), ReadMemStats %d" %
                     (om["GCSys"] + om["OtherSys"], chunk, tm["GCSys"] + tm["OtherSys"]))
    shift = tm["GCSys"] - om["GCSys"]
    if not 0 <= shift <= GCSYS_SHIFT_BOUND:
        diffs.append("GCSys: ReadMemStats's is %d more than ours, outside [0, %d]" %
                     (shift, GCSYS_SHIFT_BOUND))

    if ours["num_goroutine"] != theirs["num_goroutine"]:
        diffs.append("num_goroutine: ours %s, the target's %s" % (ours["num_goroutine"],
                                                                 theirs["num_goroutine"]))
    # The threads: the runtime may start an M between the target's READY and its view (seen
    # once at -j2 on 2 cores, Go 1.23.4: ours 4, the view's 5). The count never falls, so ours
    # lies between the two counts the target took, and must equal them when they agree.
    low = theirs.get("threads_at_ready", theirs["threads"])
    if not low <= ours["threads"] <= theirs["threads"]:
        diffs.append("threads: ours %s, the target's %s at READY and %s at its view" %
                     (ours["threads"], low, theirs["threads"]))
    if minor >= 19 and ours["gomaxprocs"] != their_metrics["/sched/gomaxprocs:threads"]:
        diffs.append("gomaxprocs: ours %s" % ours["gomaxprocs"])
    mode = sys.argv[4] if len(sys.argv) > 4 else "dwarf"
    if mode == "experiment":
        if not ours["layout_table_differences"]:
            diffs.append("the DWARF of a GOEXPERIMENT build equals the table: nothing was tested")
    elif ours["layout_table_differences"]:
        diffs.append("the DWARF and the table disagree: %s" % ours["layout_table_differences"])
    want_dwarf = mode != "table"
    if ours["layout_from_dwarf"] != want_dwarf:
        diffs.append("the layout was %s from the DWARF" %
                     ("not read" if want_dwarf else "read"))

    for d in diffs:
        print(d)
    print("compared %d metrics, %d MemStats fields, GCSys shift %d B%s" %
          (len(expected), len(tm), shift, ", a new persistentalloc chunk" if chunk else ""))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
