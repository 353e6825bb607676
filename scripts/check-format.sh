#!/usr/bin/env bash
# Checks that every C++ file we wrote is formatted as .clang-format says (Google style), without
# changing anything. Prints each file that differs, with how many lines clang-format would
# change, and exits 1 if there is any; `clang-format -i <file>` fixes one.
#   bash scripts/check-format.sh            # CLANG_FORMAT=clang-format-14 to pick a binary
# Generated code (protoc's *.pb.cc/*.pb.h, which live in the build directory anyway) is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

clang_format=${CLANG_FORMAT:-clang-format}
if ! command -v "$clang_format" >/dev/null; then
  echo "check-format: $clang_format not found (bash scripts/install-deps.sh installs it)" >&2
  exit 2
fi

# The files under version control; from a tree without git history, the source folders.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h')
else
  mapfile -t files < <(find src tests tools -name '*.cc' -o -name '*.h' | sort)
fi

checked=()
for f in "${files[@]}"; do
  case "$f" in
    *.pb.cc | *.pb.h) continue ;;
  esac
  [[ -f $f ]] || continue # deleted in the work tree but not yet in the index
  checked+=("$f")
done

# clang-format over batches of files, one batch per CPU at a time (a process per file took 16 s
# of the quick path; this takes 3). --dry-run --Werror reports each place that differs as
# "<file>:<line>:<col>: error: code should be clang-formatted" and exits 1, so xargs exits 123;
# any other status, or 123 without such a report, is clang-format itself failing.
report=$(mktemp)
trap 'rm -f "$report"' EXIT
status=0
printf '%s\0' "${checked[@]}" |
  xargs -0 -P"$(nproc)" -n 40 "$clang_format" --style=file --dry-run --Werror >/dev/null 2>"$report" ||
  status=$?
mapfile -t places < <(grep -o '^[^:]*:[0-9]*:[0-9]*: error: code should be clang-formatted' "$report" |
  cut -d: -f1,2 | sort -u)
if ((${#places[@]} && (status == 0 || status == 123))); then
  printf '%s\n' "${places[@]}" | cut -d: -f1 | uniq -c | while read -r lines f; do
    echo "check-format: $f differs from .clang-format ($lines lines)"
  done
  differ=$(printf '%s\n' "${places[@]}" | cut -d: -f1 | sort -u | wc -l)
  echo "check-format: $differ of ${#checked[@]} files need formatting ($("$clang_format" --version));" \
    "run: $clang_format -i <file>..." >&2
  exit 1
fi
if ((status)); then
  echo "check-format: $clang_format failed (xargs status $status):" >&2
  head -5 "$report" >&2
  exit 2
fi
echo "check-format: ${#checked[@]} files formatted as .clang-format says"
