#!/usr/bin/env bash
# The agent's OCI image (scripts/oci-image.sh --agent), built offline from the static release
# binary:
#  - two builds give byte-identical layouts and layout tars (same manifest digest), and a
#    third with another SOURCE_DATE_EPOCH a different digest (the date is the one input
#    besides the files and options);
#  - the layout has the fields the OCI image spec requires, blobs that hash to their names
#    and sizes, diff_ids of the uncompressed layer, both image names, and a layer written
#    reproducibly (tests/e2e/oci_layout_check.py); a copy with one flipped byte in the layer
#    is refused by that check and by umoci (so the checks can fail);
#  - skopeo reads it (oci:DIR:TAG) and reports the same digest, amd64, linux;
#  - umoci unpacks it into a runtime bundle, and its rootfs, made the root directory of
#    `chroot` (no host file reachable: a scratch image), runs /goheap2pprof --version, and
#    the bundle's config.json runs /goheap2pprof as uid 0.
# The static binary is built by scripts/package.sh --arch amd64 --no-tar in the build root
# packaging_test.sh uses (<build>/package, or $GOHEAP2PPROF_PACKAGE_BUILD_ROOT), or taken
# from $GOHEAP2PPROF_STATIC_BINARY.
#
#   bash tests/e2e/image_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# Needs root (chroot), umoci and skopeo (scripts/install-deps.sh --test).
# Exit status: 0 passed, 1 failed, 77 skipped (the reason is printed).
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: needs root (chroot into the unpacked image)"
  exit 77
fi
for c in umoci skopeo chroot python3; do
  e2e_require_command "$c" "$c is not installed (bash scripts/install-deps.sh --test)"
done
e2e_make_work image

static=${GOHEAP2PPROF_STATIC_BINARY:-}
if [[ -z $static ]]; then
  pkg=${GOHEAP2PPROF_PACKAGE_BUILD_ROOT:-$bin/package}
  if ! bash "$src/scripts/package.sh" --arch amd64 --no-tar --build-root "$pkg" \
    >"$work/package.out" 2>&1; then
    fail "scripts/package.sh --arch amd64 --no-tar" "$work/package.out"
    e2e_finish
  fi
  static=$pkg/static-amd64/goheap2pprof.stripped
fi
version=$(sed -n 's/^project(goheap2pprof VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
name=docker.io/library/goheap2pprof:$version

# build <dir> [env...]: the agent image into <dir> and <dir>.tar; prints the manifest digest.
build() {
  local dir=$1
  shift
  env "$@" bash "$src/scripts/oci-image.sh" --agent --binary "$static" --out "$dir" \
    --tar "$dir.tar" >"$dir.out" 2>&1 || return 1
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' \
    "$dir/index.json"
}

# ---- reproducible
if d1=$(build "$work/one") && d2=$(build "$work/two") &&
  d3=$(build "$work/dated" SOURCE_DATE_EPOCH=1700000000); then
  echo "digests: $d1 $d2 (SOURCE_DATE_EPOCH=1700000000: $d3)"
  if [[ $d1 == "$d2" ]] && cmp -s "$work/one.tar" "$work/two.tar" && diff -r "$work/one" "$work/two" >/dev/null; then
    pass "two builds: the same digest $d1 and byte-identical layouts and tars"
  else
    fail "two builds differ: $d1 vs $d2"
  fi
  if [[ $d3 != "$d1" ]]; then
    pass "another SOURCE_DATE_EPOCH gives another digest"
  else
    fail "SOURCE_DATE_EPOCH did not change the digest"
  fi
else
  fail "scripts/oci-image.sh --agent" "$work/one.out"
  e2e_finish
fi

# ---- the layout against the spec's fields
if python3 "$src/tests/e2e/oci_layout_check.py" "$work/one" "$name" "$version" >"$work/check.out" 2>&1 &&
  grep -q ' goheap2pprof ' "$work/check.out" && grep -q 'LICENSES/goheap2pprof.txt' "$work/check.out"; then
  pass "oci_layout_check: the layout is valid; the layer holds /goheap2pprof and /LICENSES"
else
  fail "oci_layout_check" "$work/check.out"
fi
cp -r "$work/one" "$work/broken"
layer=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1]+"/index.json"))["manifests"][0]["digest"][7:]
print(json.load(open(sys.argv[1]+"/blobs/sha256/"+m))["layers"][0]["digest"][7:])' "$work/broken")
printf 'x' | dd of="$work/broken/blobs/sha256/$layer" bs=1 seek=4096 conv=notrunc status=none
if ! python3 "$src/tests/e2e/oci_layout_check.py" "$work/broken" "$name" "$version" >"$work/broken.out" 2>&1 &&
  grep -q 'does not hash to its name' "$work/broken.out"; then
  pass "oci_layout_check refuses a layer with one byte changed"
else
  fail "oci_layout_check accepted a damaged layer" "$work/broken.out"
fi
if ! umoci unpack --image "$work/broken:$version" "$work/broken-bundle" >"$work/broken-umoci.out" 2>&1; then
  pass "umoci refuses a layer with one byte changed"
else
  fail "umoci unpacked a damaged layer" "$work/broken-umoci.out"
fi

# ---- real tools read it
if skopeo inspect "oci:$work/one:$version" >"$work/skopeo.json" 2>&1 &&
  [[ $(jq -r '[.Digest, .Architecture, .Os] | join(" ")' "$work/skopeo.json") == "$d1 amd64 linux" ]]; then
  pass "skopeo inspect oci:DIR:$version: $d1 amd64 linux"
else
  fail "skopeo inspect" "$work/skopeo.json"
fi
if umoci unpack --image "$work/one:$version" "$work/bundle" >"$work/umoci.out" 2>&1; then
  pass "umoci unpack"
  if chroot "$work/bundle/rootfs" /goheap2pprof --version >"$work/version.out" 2>&1 &&
    grep -qx "goheap2pprof $version" <(head -n 1 "$work/version.out") &&
    grep -q 'statically linked' "$work/version.out"; then
    pass "chroot into the unpacked rootfs: /goheap2pprof --version: $(head -n 1 "$work/version.out")"
  else
    fail "/goheap2pprof --version in the unpacked rootfs" "$work/version.out"
  fi
  if [[ $(jq -c '[.process.args, .process.user.uid, .process.user.gid]' "$work/bundle/config.json") == '[["/goheap2pprof"],0,0]' ]]; then
    pass "the bundle runs /goheap2pprof as uid 0, gid 0"
  else
    fail "the bundle's process: $(jq -c .process "$work/bundle/config.json")"
  fi
else
  fail "umoci unpack" "$work/umoci.out"
fi

e2e_finish
