#!/usr/bin/env python3
"""Checks a flame graph page against the target's own heap profile.

  flamegraph_oracle.py PAGE.html AGGREGATE.txt bytes|objects

AGGREGATE is `profdiff --aggregate-inuse` of the target's own profile:
"<bytes>\\t<objects>\\t<frame>..." per stack, frames "function file:line"
leaf first, inline frames innermost first. The script builds the call tree
of those stacks (root first, a frame per function and file) and requires:
the page's total is the profile's; every frame the page draws (except the
"[N smaller frames]" ones) has exactly the value of its path in the tree;
every frame's children are ordered widest first and laid end to end from
its left edge. Prints one "ok:" line, or "FAIL: ..." and exits 1.
"""
import html.parser
import json
import sys
from collections import defaultdict


class DataScript(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.inside = False
        self.text = ""

    def handle_starttag(self, tag, attrs):
        self.inside = tag == "script" and ("id", "flame-data") in attrs

    def handle_endtag(self, tag):
        self.inside = False

    def handle_data(self, data):
        if self.inside:
            self.text += data


def main():
    page, aggregate, kind = sys.argv[1:4]
    parser = DataScript()
    with open(page, encoding="utf-8") as f:
        parser.feed(f.read())
    data = json.loads(parser.text)
    column = 0 if kind == "bytes" else 1
    tree = defaultdict(int)  # path (tuple of (function, file)) -> value
    total = 0
    with open(aggregate, encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            value = int(fields[column])
            if value <= 0:
                continue
            total += value
            path = ()
            for frame in reversed(fields[2:]):
                function, where = frame.rsplit(" ", 1)
                path += ((function, where.rsplit(":", 1)[0]),)
                tree[path] += value
    if data["total"] != total:
        fail("page total %d, the target's own profile %d" % (data["total"], total))
    frames, names, locations = data["frames"], data["names"], data["locations"]
    n = len(frames) // 6
    stack, checked, narrowest = [], 0, None
    next_x = {}
    for i in range(n):
        depth, x, value, name, loc, flags = frames[i * 6:i * 6 + 6]
        name = names[name]
        stack = stack[:depth]
        if depth > 0:
            parent = stack[-1]
            if x != next_x[parent["i"]]:
                fail("%s starts at %d, not where its left sibling ends (%d)" %
                     (name, x, next_x[parent["i"]]))
            if value > parent["last"] and not flags & 2:
                fail("%s (%d) after a narrower sibling (%d)" % (name, value, parent["last"]))
            next_x[parent["i"]] = x + value
            parent["last"] = value
        next_x[i] = x
        entry = {"i": i, "last": float("inf"), "path": ()}
        if depth > 0 and not flags & 2:
            where = locations[loc].rsplit(":", 1)[0] if ":" in locations[loc] else locations[loc]
            entry["path"] = stack[-1]["path"] + ((name, where),)
            want = tree.get(entry["path"])
            if want != value:
                fail("%s: page %d, the target's own profile %s" %
                     (" > ".join(p[0] for p in entry["path"]), value, want))
            checked += 1
            narrowest = value if narrowest is None else min(narrowest, value)
        stack.append(entry)
    print("ok: total %d and %d frames equal the target's own profile (%d frames there, %d merged "
          "on the page, narrowest kept %s)" % (total, checked, len(tree), data["merged"], narrowest))


def fail(text):
    print("FAIL: " + text)
    sys.exit(1)


if __name__ == "__main__":
    main()
