#!/usr/bin/env python3
"""Reads a debug=2 goroutine dump (runtime/pprof's ?debug=2, or ours) for the
goroutine suites (goroutines_test.sh, goroutines_prometheus_test.sh):

    from goroutine_dump import blocks
    dump = blocks("goroutine2.txt")  # {"17": (state, minutes, lines), ...}
    expected, actual = profdiff_blocks("profdiff.out")

in the dump's order. The state is the header's bracket without its
", N minutes" (the minutes apart, 0 when absent), with the pprof labels the
header shows (Go 1.26+ with GODEBUG tracebacklabels=1); each frame line's argument
list is masked as "(...)", since the runtime prints stack slots that a reader
from outside cannot tell live from stale. A block that is no goroutine ends
the caller with an error. profdiff_blocks splits profdiff's output into its
"only in expected" and "only in actual" samples, and ends the caller with an
error when the header or the main mapping differs.
"""
import re
import sys


def blocks(path):
    out = {}
    for b in open(path).read().split('\n\n'):
        if not b.strip():
            continue
        lines = b.strip('\n').split('\n')
        # Go 1.26 prints pprof labels (GODEBUG tracebacklabels=1) inside
        # the brackets, ' labels:{...}', 1.27 after them, ' {...}': either
        # stays part of the state.
        m = re.match(r'goroutine (\d+) \[(.*?)\]((?: \{.*\})?):$', lines[0])
        if not m:
            sys.exit(f"{path}: not a goroutine header: {lines[0]!r}")
        state = m.group(2) + m.group(3)
        minutes = re.search(r', (\d+) minutes', state)
        state = re.sub(r', \d+ minutes', '', state)
        body = [l if l.startswith(('\t', 'created by ', '...')) else re.sub(r'\([^()]*\)$', '(...)', l)
                for l in lines[1:]]
        out[m.group(1)] = (state, int(minutes.group(1)) if minutes else 0, body)
    return out


def profdiff_blocks(path):
    text = open(path).read()
    if re.search(r'^(header differs|main mapping differs)', text, re.M):
        sys.exit("header or main mapping differs")
    found = re.split(r'^(?=only in (?:expected|actual):)', text, flags=re.M)[1:]
    return ([b for b in found if b.startswith('only in expected')],
            [b for b in found if b.startswith('only in actual')])
