#!/usr/bin/env python3
"""Compares the `# runtime.MemStats` block of our ?debug=1 text with the
target's own, read just before (own1) and just after (own2) ours.

    memstats_block.py <own1.txt> <ours.txt> <own2.txt> <gomaxprocs>

Prints one line per field that breaks its rule and exits 1 if any does; exit
2 means the target itself changed between own1 and own2 in a field that must
be exact (a GC ran, the heap grew): the caller retries.

The rules (go-memstats-facts.md, sections 7 and 8):
  exact       equal to own1 and own2 (which must agree): the layout of every
              line, Lookups, Sys, MSpanSys, MCache, BuckHashSys,
              GCSys+OtherSys, NextGC, LastGC, PauseNs, PauseEnd, NumGC,
              NumForcedGC, GCCPUFraction, DebugGC.
  between     own1 <= ours <= own2: what the target's own HTTP handling of
              own1 allocates (GC is off in the target, so nothing is freed):
              Alloc, TotalAlloc, Mallocs, Frees (tiny allocations count in
              both), HeapAlloc, HeapObjects, HeapInuse, MSpanInuse.
  flush       within [min(own1, own2) - B, max(own1, own2) + B], B = 960 KiB
              per P: ReadMemStats's stackcache_clear frees whole stack spans
              while the GC is off, moving bytes from StackInuse to HeapIdle
              and HeapSys, which a read from outside cannot do:
              StackInuse, StackSys, HeapIdle, HeapSys.
  scavenged   HeapReleased within [min(own1, own2), max(own1, own2)]: the
              background scavenger releases pages at its own pace for a
              while after start (seen moving between two reads 50 ms apart
              in 3 of 5 tries with Go 1.22 and 1.23), and the target's
              allocations may take released pages back.
  moved       GCSys and OtherSys each within 64 KiB of own2 (the mcache
              flush moves 2-31 KiB from OtherSys to GCSys in the facts' runs,
              at most 53,464 B in memstats_oracle_test's; the sum is exact).
  rss         MaxRSS (VmHWM x 1024 against ru_maxrss x 1024) within
              [own1 - 1 MiB, own2 + 1 MiB]: kernel paths differ by -400 KiB
              to +36 KiB.
"""
import sys

KIB = 1024


def block(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    try:
        start = lines.index("# runtime.MemStats")
    except ValueError:
        sys.exit(f"{path}: no '# runtime.MemStats' line")
    if lines[start - 1] != "":
        sys.exit(f"{path}: no empty line before the block")
    fields = {}
    order = []
    for line in lines[start + 1:]:
        if line == "":
            continue
        if not line.startswith("# ") or " = " not in line:
            sys.exit(f"{path}: unexpected line in the block: {line!r}")
        name, value = line[2:].split(" = ", 1)
        order.append(name)
        fields[name] = value
    return order, fields


def split_pair(fields, name, inuse, sys_):
    a, b = fields.pop(name).split(" / ")
    fields[inuse], fields[sys_] = a, b


def main():
    own1_order, own1 = block(sys.argv[1])
    ours_order, ours = block(sys.argv[2])
    own2_order, own2 = block(sys.argv[3])
    procs = int(sys.argv[4])
    bad = []
    if ours_order != own2_order:
        bad.append(f"layout: ours {ours_order} own {own2_order}")
    for f in (own1, ours, own2):
        split_pair(f, "Stack", "StackInuse", "StackSys")
        split_pair(f, "MSpan", "MSpanInuse", "MSpanSys")
        split_pair(f, "MCache", "MCacheInuse", "MCacheSys")
        f["GCSys+OtherSys"] = str(int(f["GCSys"]) + int(f["OtherSys"]))
    exact = ["Lookups", "Sys", "MSpanSys", "MCacheInuse", "MCacheSys",
             "BuckHashSys", "GCSys+OtherSys", "NextGC", "LastGC", "PauseNs", "PauseEnd",
             "NumGC", "NumForcedGC", "GCCPUFraction", "DebugGC"]
    moved_in_target = [k for k in exact if own1[k] != own2[k]]
    if moved_in_target:
        print("the target changed between its own two reads: " + ", ".join(moved_in_target))
        return 2
    for k in exact:
        if ours[k] != own2[k]:
            bad.append(f"{k}: ours {ours[k][:80]} own {own2[k][:80]}")
    for k in ["Alloc", "TotalAlloc", "Mallocs", "Frees", "HeapAlloc", "HeapObjects",
              "HeapInuse", "MSpanInuse"]:
        a, o, b = int(own1[k]), int(ours[k]), int(own2[k])
        if not a <= o <= b:
            bad.append(f"{k}: ours {o} not within own1 {a} .. own2 {b}")
    a, o, b = int(own1["HeapReleased"]), int(ours["HeapReleased"]), int(own2["HeapReleased"])
    if not min(a, b) <= o <= max(a, b):
        bad.append(f"HeapReleased: ours {o} not between own1 {a} and own2 {b}")
    flush = 960 * KIB * procs
    for k in ["StackInuse", "StackSys", "HeapIdle", "HeapSys"]:
        a, o, b = int(own1[k]), int(ours[k]), int(own2[k])
        if not min(a, b) - flush <= o <= max(a, b) + flush:
            bad.append(f"{k}: ours {o} more than {flush} outside own1 {a} .. own2 {b}")
    for k in ["GCSys", "OtherSys"]:
        if abs(int(ours[k]) - int(own2[k])) > 64 * KIB:
            bad.append(f"{k}: ours {ours[k]} own {own2[k]}: more than 64 KiB apart")
    if "MaxRSS" in own2:
        a, o, b = int(own1["MaxRSS"]), int(ours["MaxRSS"]), int(own2["MaxRSS"])
        if not a - 1024 * KIB <= o <= b + 1024 * KIB:
            bad.append(f"MaxRSS: ours {o} not within own1 {a} - 1 MiB .. own2 {b} + 1 MiB")
    for line in bad:
        print(line)
    if not bad:
        diffs = [k for k in sorted(ours) if ours[k] != own2[k]]
        rss = ""
        if "MaxRSS" in own2:
            rss = f"; MaxRSS ours - own2 = {(int(ours['MaxRSS']) - int(own2['MaxRSS'])) // KIB} KiB"
        print("equal but for " + (", ".join(diffs) if diffs else "nothing") + rss)
    return 1 if bad else 0


sys.exit(main())
