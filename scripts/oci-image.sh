#!/usr/bin/env bash
# Builds an OCI image layout (and optionally a tar of it for `ctr images import`) from local
# files, offline and byte-for-byte reproducibly: see scripts/oci_image.py for the options.
#
#   bash scripts/oci-image.sh --out DIR --name NAME[:TAG] --file SRC:/DEST[:MODE]... \
#        --entrypoint /DEST [--cmd ARG]... [--tar FILE]
#   bash scripts/oci-image.sh --agent [--binary FILE] [--arch amd64|arm64] [--out DIR]
#        [--name NAME[:TAG]] [--tar FILE]
#
# --agent: the goheap2pprof agent image: the static release binary (scripts/package.sh
# builds it unless --binary names one) as /goheap2pprof on a scratch base, with the licences
# of everything linked in under /LICENSES, run as uid 0 (docs/kubernetes.md says why: the
# container gets only SYS_PTRACE and DAC_READ_SEARCH, and Kubernetes gives added
# capabilities to the effective set of uid 0 only). Default name goheap2pprof:<version>,
# default out build-image/goheap2pprof-<arch>.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
[[ ${1:-} == --agent ]] || exec python3 "$src/scripts/oci_image.py" "$@"
shift
arch=amd64 binary="" out="" name="" tar=()
while (($#)); do
  case $1 in
    --binary) binary=$(realpath "$2"); shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    --tar) tar=(--tar "$2"); shift 2 ;;
    *) echo "usage: $0 --agent [--binary FILE] [--arch amd64|arm64] [--out DIR] [--name NAME[:TAG]] [--tar FILE]" >&2; exit 2 ;;
  esac
done
version=$(sed -n 's/^project(goheap2pprof VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
name=${name:-goheap2pprof:$version}
out=${out:-$src/build-image/goheap2pprof-$arch}
if [[ -z $binary ]]; then
  bash "$src/scripts/package.sh" --arch "$arch" --no-tar --build-root "$src/build-package" >&2
  binary=$src/build-package/static-$arch/goheap2pprof.stripped
fi
if [[ $(file -b "$binary") != *"statically linked"* ]]; then
  echo "oci-image: $binary is not statically linked: a scratch image has no libc" >&2
  exit 1
fi
# The licences, as the release tarball carries them (scripts/package.sh).
files=(--file "$binary:/goheap2pprof:0755" --file "$src/packaging/copyright:/LICENSES/goheap2pprof.txt:0644")
while read -r library package; do
  [[ -z $library || $library == \#* ]] && continue
  if [[ ! -f /usr/share/doc/$package/copyright ]]; then
    echo "oci-image: /usr/share/doc/$package/copyright is missing (is $package installed?)" >&2
    exit 1
  fi
  files+=(--file "/usr/share/doc/$package/copyright:/LICENSES/$library.txt:0644")
done <"$src/packaging/linked-libraries.txt"
# /tmp: nothing the agent writes goes there, but a read-only root leaves it the one
# directory a debugging `kubectl exec` (there is no shell: a copied-in tool) could use.
exec python3 "$src/scripts/oci_image.py" --out "$out" --name "$name" --arch "$arch" \
  "${files[@]}" --dir /tmp:1777 --entrypoint /goheap2pprof --user 0:0 \
  --label "org.opencontainers.image.title=goheap2pprof" \
  --label "org.opencontainers.image.version=$version" "${tar[@]}"
