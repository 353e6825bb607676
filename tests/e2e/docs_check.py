#!/usr/bin/env python3
"""Checks the user documentation against the repository and the built tool.

    docs_check.py <repo> <goheap2pprof> [--max-readme-bytes N]

Prints one line per problem and, at the end, what it checked; exits 1 when it
found a problem, 0 otherwise. The checks (tests/e2e/docs_test.sh runs them):

  size      README.md is at most N bytes (default 12,288: the README is a
            user's five-minute read; details belong to docs/).
  links     every relative link in README.md, bench/README.md and docs/**/*.md
            names a file or directory of the repository, and its #anchor (if
            any) a heading of the target Markdown file, by GitHub's slug rules.
  commands  every `goheap2pprof ...` line in a code block of README.md and
            docs/**/*.md names a subcommand that exists, and each -flag it uses
            appears in that subcommand's --help. A subcommand exists when
            `goheap2pprof SUB --help` succeeds and differs from the top-level
            help, which holds with the per-command dispatch of today and with
            one CLI11 app (where an unknown word is a usage error).
  flag tables  the "## Flags" section of each command's guide (GUIDES below)
            names every flag of that command's --help, and no flag it lacks.
  paths     every repository path README.md, bench/README.md and docs/**/*.md
            name (src/..., tests/..., scripts/..., in text, code spans and code
            blocks; globs and {a,b} allowed) exists, and so does every source
            file named bare in a code span (`worker.h`, `pool.*`) somewhere in
            the repository; so does every .h/.cc file a // comment in src/
            names (by a path from src/ or the repository, or bare). Files moved
            or renamed leave no stale name behind. NOT_IN_REPOSITORY lists the
            few names that are meant not to exist, each with its reason, and
            KNOWN_STALE the stale names left on purpose for now.
"""

import fnmatch
import glob
import os
import pathlib
import re
import shlex
import subprocess
import sys
import unicodedata

FENCE = re.compile(r"^\s{0,3}(```+|~~~+)")
ATX_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target "title") and ![alt](target); the target has no spaces.
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# Each command's guide, whose "## Flags" table must list exactly the flags of
# the command's --help (None: the top-level capture).
GUIDES = {"docs/capture.md": None, "docs/watch.md": "watch", "docs/serve.md": "serve",
          "docs/push.md": "push"}
SUBCOMMAND = re.compile(r"^[a-z][a-z0-9-]*$")
# The repository's top-level folders a document may point a reader into.
PATH_ROOTS = ("src", "tests", "scripts", "testdata", "docs", "bench", "tools", "packaging",
              "deploy")
# A path from the repository's root: not a piece of a longer path (build/tests/unit_tests,
# /usr/share/doc/..., ../src/x, which links check), nor a placeholder's tail (<build>/packaging).
REPO_PATH = re.compile(r"(?<![\w./~$<>*:@-])((?:%s)/[\w.*{},/-]*)" % "|".join(PATH_ROOTS))
# A source file named by itself (in a code span of a document, or in a comment in src/).
BARE_SOURCE = re.compile(r"(?<![\w./~$<>*:@-])([\w-]+\.(?:h|cc|sh|py|cmake|\*|\{[\w,]+\}))"
                         r"(?![\w/*])")
SOURCE_IN_COMMENT = re.compile(r"(?<![\w.~$<>*:@-])((?:[\w-]+/)*[\w-]+\.(?:h|cc|\{h,cc\}|\*))"
                               r"(?![\w/*])")
# Names that are meant not to exist in the repository, with the reason.
NOT_IN_REPOSITORY = {
    # System headers a comment in src/ quotes (the libraries' own declarations).
    "curl.h": "libcurl's header",
    "libdw.h": "elfutils' header",
    "libelf.h": "elfutils' header",
    # A CTest name pattern in docs/contributing.md (tests/fuzz/CMakeLists.txt), not a file.
    "fuzz_replay.*": "the fuzz replays' CTest names",
}
# Stale names known and left on purpose, as (file, name): reason. Each is reported when it is
# fixed, so that the entry goes too.
KNOWN_STALE = {}
# Shell words that end one command (what follows belongs to another program).
COMMAND_END = {"|", "||", "&&", ";", ">", ">>", "2>", "2>&1", "<", "&"}


def markdown_files(repo):
    files = [repo / "README.md", repo / "bench" / "README.md"]
    files += sorted((repo / "docs").rglob("*.md"))
    return [f for f in files if f.is_file()]


def split_blocks(text):
    """Yields (line_number, line, in_code) for each line; in_code is True
    inside fenced blocks and for indented code blocks (four spaces after a
    blank line or another code line)."""
    fence = None
    previous_blank = True
    indented = False
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)[0] * 3
            yield number, line, True
            continue
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            yield number, line, True
            continue
        blank = not line.strip()
        if line.startswith("    ") and not blank and (previous_blank or indented):
            indented = True
        elif not blank:
            indented = False
        yield number, line, indented and not blank
        previous_blank = blank


def heading_text(raw):
    """The text GitHub renders for a heading's Markdown source."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", raw)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = CODE_SPAN.sub(lambda m: m.group(2), text)
    text = re.sub(r"(\*\*|__|\*)", "", text)  # emphasis markers
    return text


def slug(text):
    """GitHub's anchor for a heading: lower case, punctuation other than '-'
    and '_' dropped, each space a '-'."""
    out = []
    for ch in text.strip().lower():
        if ch in "-_" or ch.isalnum() or unicodedata.category(ch).startswith("M"):
            out.append(ch)
        elif ch == " ":
            out.append("-")
    return "".join(out)


def anchors_of(path, cache):
    if path not in cache:
        found = set()
        counts = {}
        text = path.read_text(encoding="utf-8")
        for _, line, in_code in split_blocks(text):
            if in_code:
                continue
            found.update(HTML_ANCHOR.findall(line))
            match = ATX_HEADING.match(line)
            if not match:
                continue
            base = slug(heading_text(match.group(2)))
            n = counts.get(base, 0)
            counts[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        cache[path] = found
    return cache[path]


def link_targets(line):
    text = CODE_SPAN.sub("", line)
    yield from INLINE_LINK.findall(text)
    match = REFERENCE_DEF.match(text)
    if match:
        yield match.group(1)


def check_links(repo, files, problems):
    cache = {}
    checked = 0
    for md in files:
        for number, line, in_code in split_blocks(md.read_text(encoding="utf-8")):
            if in_code:
                continue
            for target in link_targets(line):
                if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                    continue  # http:, https:, mailto: ...: not ours to check offline
                checked += 1
                where = f"{md.relative_to(repo)}:{number}: link {target}"
                path_part, _, anchor = target.partition("#")
                dest = md if not path_part else (md.parent / path_part).resolve()
                try:
                    dest.relative_to(repo)
                except ValueError:
                    problems.append(f"{where}: leaves the repository")
                    continue
                if not dest.exists():
                    problems.append(f"{where}: {dest.relative_to(repo)} does not exist")
                    continue
                if anchor and dest.suffix == ".md" and dest.is_file():
                    if anchor not in anchors_of(dest, cache):
                        problems.append(f"{where}: no heading #{anchor} in {dest.relative_to(repo)}")
                elif anchor and not dest.is_file():
                    problems.append(f"{where}: #{anchor} on a directory")
    return checked


def command_lines(text):
    """Yields (line_number, command) for each goheap2pprof command in a code
    block, with backslash continuations joined."""
    pending = None
    for number, line, in_code in split_blocks(text):
        if not in_code:
            pending = None
            continue
        stripped = line.strip()
        if pending is not None:
            start, so_far = pending
            so_far += " " + stripped.rstrip("\\")
            pending = (start, so_far) if stripped.endswith("\\") else None
            if pending is None:
                yield start, so_far
            continue
        stripped = re.sub(r"^(\$\s+|sudo\s+)+", "", stripped)
        if not re.match(r"^goheap2pprof(\s|$)", stripped):
            continue
        if stripped.endswith("\\"):
            pending = (number, stripped.rstrip("\\"))
        else:
            yield number, stripped


def words_of(command):
    command = re.sub(r"\s#\s.*$|\s#$", "", command)  # a trailing shell comment
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    out = []
    for word in words[1:]:
        if word in COMMAND_END:
            break
        out.append(word)
    return out


class Tool:
    def __init__(self, path):
        self.path = path
        self.helps = {}
        self.top = self.help_of(None)

    def help_of(self, sub):
        if sub not in self.helps:
            argv = [self.path] + ([sub] if sub else []) + ["--help"]
            result = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            text = result.stdout + result.stderr
            self.helps[sub] = text if result.returncode == 0 else None
        return self.helps[sub]

    def subcommand_help(self, sub):
        text = self.help_of(sub)
        if text is None or text == self.top:
            return None
        return text


def flag_in_help(flag, help_text):
    return re.search(r"(^|[\s,\[])" + re.escape(flag) + r"(?![A-Za-z0-9-])", help_text, re.M)


def check_commands(repo, files, tool, problems):
    checked = 0
    for md in files:
        if md.parent.name == "bench":
            continue
        for number, command in command_lines(md.read_text(encoding="utf-8")):
            checked += 1
            where = f"{md.relative_to(repo)}:{number}: `{command}`"
            words = words_of(command)
            sub = words[0] if words and SUBCOMMAND.match(words[0]) else None
            help_text = tool.top if sub is None else tool.subcommand_help(sub)
            if help_text is None:
                problems.append(f"{where}: no subcommand {sub!r} (`goheap2pprof {sub} --help`)")
                continue
            for word in words:
                flag = word.strip("[]").split("=", 1)[0].rstrip(".")
                if not re.match(r"^(--[a-z0-9][a-z0-9-]*|-[a-zA-Z])$", flag):
                    continue
                if not flag_in_help(flag, help_text):
                    name = f"goheap2pprof {sub} --help" if sub else "goheap2pprof --help"
                    problems.append(f"{where}: {flag} is not in `{name}`")
    return checked


def help_flags(help_text):
    """The flags an --help lists: the first column of its option lines (CLI11
    indents them by two spaces; wrapped text and the exit codes, by more)."""
    flags = set()
    for line in help_text.splitlines():
        match = re.match(r"^  (-[^\s]+)", line)
        if match:
            flags.update(f for f in match.group(1).split(",") if f.startswith("-"))
    return flags - {"-h", "--help"}


def section(text, title):
    match = re.search(r"^## " + re.escape(title) + r"\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    return match.group(1) if match else None


def check_flag_tables(repo, tool, problems):
    checked = 0
    for guide, sub in GUIDES.items():
        path = repo / guide
        if not path.is_file():
            problems.append(f"{guide}: missing (the guide of {sub or 'the capture'})")
            continue
        table = section(path.read_text(encoding="utf-8"), "Flags")
        help_text = tool.top if sub is None else tool.subcommand_help(sub)
        name = f"goheap2pprof {sub} --help" if sub else "goheap2pprof --help"
        if table is None or help_text is None:
            problems.append(f"{guide}: no '## Flags' section, or no `{name}`")
            continue
        documented = set()
        for span in CODE_SPAN.findall(table):
            documented.update(re.findall(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*|-[a-zA-Z])(?![\w-])",
                                         span[1]))
        documented -= {"-h", "--help"}  # "From `goheap2pprof X --help`"
        listed = help_flags(help_text)
        checked += len(listed)
        for flag in sorted(listed - documented):
            problems.append(f"{guide}: {flag} is in `{name}` but not in the guide's Flags table")
        for flag in sorted(documented - listed):
            problems.append(f"{guide}: the Flags table has {flag}, which `{name}` does not list")
    return checked


def expand_braces(path):
    """src/a.{h,cc} -> [src/a.h, src/a.cc] (one level per pair, nested by recursion)."""
    match = re.search(r"\{([^{}]*)\}", path)
    if not match:
        return [path]
    out = []
    for alternative in match.group(1).split(","):
        out += expand_braces(path[:match.start()] + alternative + path[match.end():])
    return out


def repository_names(repo):
    """The file names under the repository's source folders (for bare names)."""
    names = set()
    for root in PATH_ROOTS + ("cmake", "proto"):
        for _, _, files in os.walk(repo / root):
            names.update(files)
    return names


def missing_names(token, exists):
    """The expansions of one named path (trailing sentence punctuation dropped) that do not
    exist by exists(path)."""
    token = token.rstrip(".,:;")
    if token in NOT_IN_REPOSITORY:
        return []
    return [p for p in expand_braces(token) if p not in NOT_IN_REPOSITORY and not exists(p)]


def check_paths(repo, files, names, problems):
    in_repo = lambda p: bool(glob.glob(glob.escape(str(repo)) + "/" + p))
    somewhere = lambda p: bool(fnmatch.filter(names, p))
    checked = 0
    for md in files:
        for number, line, _ in split_blocks(md.read_text(encoding="utf-8")):
            spans = " ".join(span[1] for span in CODE_SPAN.findall(line))
            for pattern, text, exists, what in ((REPO_PATH, line, in_repo, "does not exist"),
                                                (BARE_SOURCE, spans, somewhere,
                                                 "is no file of the repository")):
                for match in pattern.finditer(text):
                    checked += 1
                    for path in missing_names(match.group(1), exists):
                        problems.append(f"{md.relative_to(repo)}:{number}: {path} {what}")
    return checked


def check_source_comments(repo, names, problems):
    """Each .h/.cc file a // comment in src/ names exists: as a path from src/, from the
    repository or from the commenting file's folder, or (a bare name) anywhere."""
    checked = 0
    stale = set()
    for source in sorted(list((repo / "src").rglob("*.h")) + list((repo / "src").rglob("*.cc"))):
        base = source.parent
        def exists(path):
            if "/" not in path:
                return bool(fnmatch.filter(names, path))
            return any(glob.glob(glob.escape(str(root)) + "/" + path)
                       for root in (repo / "src", repo, base))
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
            comment = line.find("//")
            if comment < 0 or '"' in line[:comment]:
                continue  # no comment, or // inside a string literal
            for match in SOURCE_IN_COMMENT.finditer(line[comment + 2:]):
                checked += 1
                for path in missing_names(match.group(1), exists):
                    where = str(source.relative_to(repo))
                    if (where, path) in KNOWN_STALE:
                        stale.add((where, path))
                    else:
                        problems.append(f"{where}:{number}: {path} does not exist")
    for where, path in sorted(set(KNOWN_STALE) - stale):
        problems.append(f"{where}: no longer names {path}: drop it from KNOWN_STALE")
    return checked


def main(argv):
    if len(argv) not in (3, 5) or (len(argv) == 5 and argv[3] != "--max-readme-bytes"):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    repo = pathlib.Path(argv[1]).resolve()
    limit = int(argv[4]) if len(argv) == 5 else 12288
    problems = []
    size = (repo / "README.md").stat().st_size
    if size > limit:
        problems.append(f"README.md: {size} bytes, more than {limit}")
    files = markdown_files(repo)
    links = check_links(repo, files, problems)
    tool = Tool(argv[2])
    commands = check_commands(repo, files, tool, problems)
    table_flags = check_flag_tables(repo, tool, problems)
    names = repository_names(repo)
    paths = check_paths(repo, files, names, problems)
    comment_paths = check_source_comments(repo, names, problems)
    for p in problems:
        print(p)
    print(f"checked: README.md {size} bytes (limit {limit}), {len(files)} Markdown files, "
          f"{links} relative links, {commands} goheap2pprof commands, {table_flags} flags of "
          f"{len(GUIDES)} guides' tables, {paths} file names in the docs and {comment_paths} in "
          f"src/'s comments; {len(problems)} problems")
    if links == 0 or commands == 0 or table_flags == 0 or paths == 0 or comment_paths == 0:
        print("nothing to check: the parser found no links or no commands")
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
