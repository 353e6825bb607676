"""Turns the text view that testdata/memstats -crash-view writes without
allocating (crashview.go) into the JSON of its -out, for memstats_compare.py.

    python3 memstats_crashview.py <view.txt> <view.json>

Exits 1 if the view is incomplete (no END line: the target died early).
"""
import json
import sys


def main():
    lines = open(sys.argv[1]).read().split("\n")
    if "END" not in lines:
        print("the view has no END line")
        return 1
    ms = {"PauseNs": [0] * 256, "PauseEnd": [0] * 256}
    by_size = {}
    out = {"memstats": ms, "metrics_uint64": {}}
    for line in lines:
        if not line or line == "END":
            continue
        tag, name, value = line.split(" ")
        if tag == "M":
            ms[name] = int(value)
        elif tag == "Z":
            ms[name] = value == "1"
        elif tag == "F":
            ms[name] = float(value)
        elif tag in ("P", "Q"):
            ms["PauseNs" if tag == "P" else "PauseEnd"][int(name)] = int(value)
        elif tag in ("S", "A", "R"):
            key = {"S": "Size", "A": "Mallocs", "R": "Frees"}[tag]
            by_size.setdefault(int(name), {})[key] = int(value)
        elif tag == "U":
            out["metrics_uint64"][name] = int(value)
        elif tag == "G":
            out["num_goroutine"] = int(value)
        elif tag == "T":
            out["threads"] = int(value)
    ms["BySize"] = [by_size[i] for i in sorted(by_size)]
    json.dump(out, open(sys.argv[2], "w"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
