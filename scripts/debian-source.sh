#!/usr/bin/env bash
# Unpacks the Debian source of an installed binary package, at the installed
# version, into a directory (the static build compiles libcurl from it;
# cmake/static.cmake calls this).
#
#   bash scripts/debian-source.sh <binary-package> <dest-dir>
#
# Uses `apt-get source`, so the machine needs deb-src lines
# (scripts/install-deps.sh --package adds them). Exit status 0, or 1 with the reason.
set -euo pipefail
pkg=${1:?usage: $0 <binary-package> <dest-dir>}
dest=${2:?usage: $0 <binary-package> <dest-dir>}
if ! read -r source version < <(dpkg-query -W -f='${source:Package} ${source:Version}\n' "$pkg" 2>/dev/null); then
  echo "debian-source: $pkg is not installed (bash scripts/install-deps.sh --package)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# _apt cannot write into a root-only mktemp directory; the download is the
# same files either way.
chmod 755 "$tmp"
if ! (cd "$tmp" && apt-get source -qq "$source=$version") >"$tmp.log" 2>&1; then
  echo "debian-source: apt-get source $source=$version failed:" >&2
  sed 's/^/    /' "$tmp.log" >&2
  echo "hint: it needs deb-src lines in the apt sources and 'apt-get update' (bash scripts/install-deps.sh --package adds them)" >&2
  rm -f "$tmp.log"
  exit 1
fi
rm -f "$tmp.log"
dir=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d | head -n 1)
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$dir" "$dest"
echo "debian-source: $source $version in $dest"
