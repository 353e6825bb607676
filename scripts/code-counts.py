#!/usr/bin/env python3
"""Prints the counts that docs/contributing.md tracks for the source tree.

Usage: scripts/code-counts.py [SRC_DIR]   (default: src)

- lines in src/agent/common;
- option fields typed more than once: a field (name and type) declared in
  two or more of the agent's *Options/*Settings structs (each setting
  should be typed once and embedded);
- functions over 60 lines, measured by universal-ctags (start of the
  signature to the closing brace);
- catch blocks.
Needs universal-ctags (Debian: universal-ctags).
"""
import collections
import json
import pathlib
import re
import subprocess
import sys

FIELD = re.compile(r"^\s+((?:const\s+)?[\w:<>,\s\*&]+?)[\s\*&]+(\w+)\s*(?:=[^;]*|\{[^;]*\})?;")
STRUCT = re.compile(r"^(?:struct|class)\s+(\w+(?:Options|Settings))\s*\{")


def option_fields(src):
    seen = collections.defaultdict(set)
    for header in sorted((src / "agent").rglob("*.h")):
        struct = None
        for line in header.read_text().splitlines():
            start = STRUCT.match(line)
            if start:
                struct = start.group(1)
                continue
            if struct and line.startswith("};"):
                struct = None
                continue
            if struct and "(" not in line:
                field = FIELD.match(line)
                if field:
                    seen[f"{field.group(2)} ({' '.join(field.group(1).split())})"].add(struct)
    return {name: structs for name, structs in seen.items() if len(structs) > 1}


def is_embedding(field):
    """A field whose type is one of the settings structs: the setting is typed
    once, in that struct, and embedded where it is used."""
    return re.search(r"\((?:const )?\w+Settings\)$", field) is not None


def long_functions(src, limit=60):
    out = subprocess.run(
        ["ctags", "--output-format=json", "--c++-kinds=f", "--fields=+ne", "-R", "-o", "-", str(src)],
        check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        tag = json.loads(line)
        if "end" in tag and tag["end"] - tag["line"] + 1 > limit:
            rows.append((tag["end"] - tag["line"] + 1, tag["path"], tag["name"]))
    return sorted(rows, reverse=True)


def main():
    src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "src")
    common = sum(len(p.read_text().splitlines()) for p in (src / "agent" / "common").rglob("*") if p.is_file())
    catches = sum(len(re.findall(r"\bcatch\s*\(", p.read_text())) for p in src.rglob("*.cc"))
    catches += sum(len(re.findall(r"\bcatch\s*\(", p.read_text())) for p in src.rglob("*.h"))
    repeated = option_fields(src)
    longs = long_functions(src)
    print(f"lines in agent/common: {common}")
    typed = {f: s for f, s in repeated.items() if not is_embedding(f)}
    print(f"option fields typed more than once: {len(typed)}")
    for name, structs in sorted(typed.items()):
        print(f"  {name}: {', '.join(sorted(structs))}")
    embedded = {f: s for f, s in repeated.items() if is_embedding(f)}
    print(f"settings structs embedded in more than one struct: {len(embedded)}")
    for name, structs in sorted(embedded.items()):
        print(f"  {name}: {', '.join(sorted(structs))}")
    print(f"functions over 60 lines: {len(longs)}")
    for length, path, name in longs:
        print(f"  {length:4d} {path} {name}")
    print(f"catch blocks: {catches}")


if __name__ == "__main__":
    main()
