#!/usr/bin/env python3
"""Counts the option fields typed more than once in the agent: the field
names of every struct named *Options, *Settings or *Limits under src/agent,
and the names that appear in more than one of them (a setting retyped per
role). Nested structs are counted by their own name.

    python3 scripts/option_fields.py [src/agent] [-v]
"""
import pathlib
import re
import sys

STRUCT = re.compile(r"^\s*struct\s+(\w*(?:Options|Settings|Limits))\s*\{")
# A member declaration: type then name, optional initializer, then ';'.
FIELD = re.compile(r"^\s*(?!return|using|static|friend|//)[\w:<>,\s\*&]+?[\s\*&](\w+)(?:\s*(?:=[^;]*|\{[^;]*\}))?\s*;")


def structs(root):
    for path in sorted(pathlib.Path(root).rglob("*.h")):
        lines = path.read_text().splitlines()
        i = 0
        while i < len(lines):
            m = STRUCT.match(lines[i])
            if not m:
                i += 1
                continue
            depth, fields, j = 0, [], i
            while j < len(lines):
                line = lines[j].split("//")[0]
                if depth == 1 and "(" not in line:
                    for f in FIELD.finditer(line):
                        fields.append(f.group(1))
                    # "std::string a, b;": every name after the type
                    extra = re.match(r"^\s*[\w:<>]+\s+(\w+(?:\s*,\s*\w+)+)\s*;", line)
                    if extra:
                        fields[-1:] = [n.strip() for n in extra.group(1).split(",")]
                depth += line.count("{") - line.count("}")
                if depth <= 0 and j > i:
                    break
                j += 1
            yield f"{path}:{m.group(1)}", fields
            i = j + 1


def main():
    args = [a for a in sys.argv[1:] if a != "-v"]
    root = args[0] if args else "src/agent"
    seen = {}
    for name, fields in structs(root):
        for f in set(fields):
            seen.setdefault(f, []).append(name)
    repeated = {f: s for f, s in seen.items() if len(s) > 1}
    if "-v" in sys.argv:
        for f, s in sorted(repeated.items()):
            print(f"{f}: {', '.join(x.split(':')[-1] for x in s)}")
    print(f"option fields typed more than once: {len(repeated)} names, "
          f"{sum(len(s) for s in repeated.values())} declarations")


main()
