#!/usr/bin/env bash
# Regenerates the committed fuzz seed corpora in testdata/fuzz/ from
# tests/fuzz/make_seeds.cc, plus small ELF seeds compiled from a trivial C
# program. Usage: bash scripts/make-fuzz-seeds.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cmake -S . -B "$build" -G Ninja >/dev/null
cmake --build "$build" --target fuzz_make_seeds >/dev/null

# The Go ELF seed: testdata/fuzzseed built stripped by Go 1.19 (the smallest
# binaries of the supported toolchains), compacted to the code the Go layer
# reads. Without Go 1.19 the committed seed is kept.
go119=/usr/lib/go-1.19/bin/go
gobin=$(mktemp)
src=$(mktemp --suffix=.c)
trap 'rm -f "$gobin" "$src"' EXIT
if [ -x "$go119" ]; then
  (cd testdata/fuzzseed && CGO_ENABLED=0 GOFLAGS= GOTOOLCHAIN=local \
    "$go119" build -trimpath -ldflags="-s -w -buildid=" -o "$gobin" .)
  "$build/tests/fuzz/fuzz_make_seeds" testdata/fuzz "$gobin" go1.19-stripped-compact
else
  echo "make-fuzz-seeds: $go119 not found; keeping the committed Go ELF seed" >&2
  "$build/tests/fuzz/fuzz_make_seeds" testdata/fuzz
fi

elf_dir=testdata/fuzz/elf
mkdir -p "$elf_dir"
printf 'int marker = 42;\nint main(void) { return marker - 42; }\n' > "$src"
gcc -Os -o "$elf_dir/tiny-c" "$src"
gcc -Os -s -o "$elf_dir/tiny-c-stripped" "$src"
# Compressed DWARF (as Go writes it) describing a struct and a variable that
# fuzz_elf looks up.
printf 'struct seed { int small; long big; char text[3]; };\nstruct seed marker_struct = {1, 2, "ab"};\nint main(void) { return marker_struct.small - 1; }\n' > "$src"
gcc -Os -g -gz=zlib -o "$elf_dir/tiny-c-dwarf" "$src"
echo "make-fuzz-seeds: wrote $(find testdata/fuzz -type f | wc -l) seeds"
