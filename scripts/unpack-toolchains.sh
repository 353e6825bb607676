#!/usr/bin/env bash
# Unpacks every Go toolchain listed as "shared" in tests/go_toolchains.txt
# from the shared folder (../shared/toolchains/<version>.linux-amd64.tar.xz
# beside the repository) into the toolchain cache, once: an unpacked
# toolchain is kept under <cache>/<version>/ with a stamp naming the
# tarball's size and time, and is unpacked again only when the tarball
# changes. Prints one line per toolchain it unpacks, or one line saying there
# is no shared folder (the tests then skip those versions, saying so).
#
#   bash scripts/unpack-toolchains.sh        # cache: see toolchain_dirs below
#
# Environment: GOHEAP2PPROF_SHARED_TOOLCHAINS (the folder of tarballs),
# GOHEAP2PPROF_TOOLCHAINS_DIR (the cache). Exit status 1 when a listed
# tarball is missing or does not unpack to a working toolchain.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
source "$repo/scripts/toolchain_dirs.sh"

if [[ ! -d $shared ]]; then
  echo "unpack-toolchains: no $shared folder; the tests skip Go versions provided only there"
  exit 0
fi
mkdir -p "$cache"
status=0
while read -r version how _; do
  [[ -z $version || $version == \#* || $how != shared ]] && continue
  tarball=$shared/$version.linux-amd64.tar.xz
  if [[ ! -f $tarball ]]; then
    echo "unpack-toolchains: $tarball is missing" >&2
    status=1
    continue
  fi
  stamp="$(stat -c '%s %Y' "$tarball")"
  if [[ -x $cache/$version/bin/go && $(cat "$cache/$version/.stamp" 2>/dev/null) == "$stamp" ]]; then
    continue
  fi
  echo "unpack-toolchains: unpacking $version into $cache"
  tmp=$(mktemp -d "$cache/.$version.XXXXXX")
  if ! tar -C "$tmp" -xJf "$tarball" || [[ ! -x $tmp/$version/bin/go ]]; then
    echo "unpack-toolchains: $tarball does not hold $version/bin/go" >&2
    rm -rf "$tmp"
    status=1
    continue
  fi
  echo "$stamp" >"$tmp/$version/.stamp"
  rm -rf "$cache/$version"
  mv "$tmp/$version" "$cache/$version"
  rmdir "$tmp"
  if ! out=$(GOTOOLCHAIN=local "$cache/$version/bin/go" version 2>&1) ||
    [[ $out != "go version $version "* ]]; then
    echo "unpack-toolchains: $cache/$version/bin/go does not run as $version: $out" >&2
    status=1
  fi
done <"$repo/tests/go_toolchains.txt"
exit $status
