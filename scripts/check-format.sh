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

differ=0
checked=0
for f in "${files[@]}"; do
  case "$f" in
    *.pb.cc | *.pb.h) continue ;;
  esac
  [[ -f $f ]] || continue # deleted in the work tree but not yet in the index
  checked=$((checked + 1))
  if ! formatted=$("$clang_format" --style=file "$f"); then
    echo "check-format: $clang_format failed on $f" >&2
    exit 2
  fi
  if [[ $formatted != "$(cat "$f")" ]]; then
    lines=$(diff <(printf '%s\n' "$formatted") "$f" | grep -c '^[<>]' || true)
    echo "check-format: $f differs from .clang-format ($lines lines)"
    differ=$((differ + 1))
  fi
done

if ((differ)); then
  echo "check-format: $differ of $checked files need formatting ($("$clang_format" --version));" \
    "run: $clang_format -i <file>..." >&2
  exit 1
fi
echo "check-format: $checked files formatted as .clang-format says"
