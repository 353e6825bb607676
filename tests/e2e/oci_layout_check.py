#!/usr/bin/env python3
"""Checks an OCI image layout against the fields the image spec requires, and that it was
written reproducibly (tests/e2e/image_test.sh). Prints one line per problem; exit 1 if any.

    python3 tests/e2e/oci_layout_check.py LAYOUT_DIR EXPECTED_CONTAINERD_NAME EXPECTED_TAG

Spec facts checked (image-spec v1.0/1.1: image-layout.md, descriptor.md, manifest.md,
config.md, image-index.md, layer.md):
  - oci-layout is {"imageLayoutVersion": "1.0.0"};
  - index.json: schemaVersion 2, mediaType of an index, manifests[] of descriptors;
  - every descriptor (mediaType, digest "sha256:<64 hex>", size) names a blob under
    blobs/sha256/<hex> whose sha256 and length are those;
  - the manifest: schemaVersion 2, mediaType of a manifest, a config descriptor of the
    config media type, layers of the tar+gzip media type;
  - the config: architecture, os, rootfs.type "layers", one diff_id per layer equal to the
    sha256 of the layer's uncompressed tar;
Reproducibility: gzip headers with MTIME 0 and no FNAME; tar entries owned by 0:0 with no
user or group names, in sorted order, parents before children, every mtime the same.
"""
import gzip
import hashlib
import io
import json
import os
import re
import sys
import tarfile
import zlib

problems = []


def problem(message):
    problems.append(message)
    print("oci_layout_check: " + message)


def load_json(path):
    with open(path, "rb") as f:
        return json.loads(f.read())


def blob(root, desc, media_type, where):
    """The bytes a descriptor names, after checking the descriptor against them."""
    if desc.get("mediaType") != media_type:
        problem("%s: mediaType %r, want %r" % (where, desc.get("mediaType"), media_type))
    digest = desc.get("digest", "")
    if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        problem("%s: digest %r is not sha256:<64 hex>" % (where, digest))
        return b""
    path = os.path.join(root, "blobs", "sha256", digest[7:])
    if not os.path.isfile(path):
        problem("%s: blob %s is missing" % (where, path))
        return b""
    with open(path, "rb") as f:
        data = f.read()
    if hashlib.sha256(data).hexdigest() != digest[7:]:
        problem("%s: blob %s does not hash to its name" % (where, digest))
    if desc.get("size") != len(data):
        problem("%s: size %r, the blob has %d bytes" % (where, desc.get("size"), len(data)))
    return data


def check_gzip_header(data, where):
    # RFC 1952: ID1 ID2 CM FLG MTIME(4) XFL OS; FLG bit 3 is FNAME.
    if data[:3] != b"\x1f\x8b\x08":
        problem(where + ": not a gzip stream")
        return
    if data[3] & 0x08:
        problem(where + ": the gzip header names a file")
    if data[4:8] != b"\0\0\0\0":
        problem(where + ": the gzip header has a time")


def check_tar(raw, where):
    names, mtimes = [], set()
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
        for m in tar.getmembers():
            names.append(m.name.rstrip("/"))
            mtimes.add(m.mtime)
            if (m.uid, m.gid, m.uname, m.gname) != (0, 0, "", ""):
                problem("%s: %s is owned by %d:%d (%r:%r)" % (where, m.name, m.uid, m.gid,
                                                              m.uname, m.gname))
            parent = os.path.dirname(m.name.rstrip("/"))
            if parent and parent not in names:
                problem("%s: %s comes before its directory" % (where, m.name))
    if names != sorted(names):
        problem(where + ": entries are not in sorted order")
    if len(mtimes) > 1:
        problem(where + ": entries have different times %s" % sorted(mtimes))
    return names


def check_manifest(root, desc, where):
    manifest = json.loads(blob(root, desc, "application/vnd.oci.image.manifest.v1+json", where))
    if manifest.get("schemaVersion") != 2:
        problem(where + ": schemaVersion is not 2")
    if manifest.get("mediaType") != "application/vnd.oci.image.manifest.v1+json":
        problem(where + ": mediaType is not that of a manifest")
    config = json.loads(blob(root, manifest.get("config", {}),
                             "application/vnd.oci.image.config.v1+json", where + " config"))
    for field in ("architecture", "os"):
        if not config.get(field):
            problem("%s config: no %s" % (where, field))
    if config.get("architecture") != desc.get("platform", {}).get("architecture"):
        problem(where + ": the index's platform and the config's architecture differ")
    rootfs = config.get("rootfs", {})
    if rootfs.get("type") != "layers":
        problem(where + " config: rootfs.type is not layers")
    layers = manifest.get("layers", [])
    if not layers or len(rootfs.get("diff_ids", [])) != len(layers):
        problem(where + ": no layers, or not one diff_id per layer")
        return
    for i, (layer, diff_id) in enumerate(zip(layers, rootfs["diff_ids"])):
        what = "%s layer %d" % (where, i)
        data = blob(root, layer, "application/vnd.oci.image.layer.v1.tar+gzip", what)
        check_gzip_header(data, what)
        try:
            raw = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            problem("%s: does not decompress: %s" % (what, e))
            continue
        if "sha256:" + hashlib.sha256(raw).hexdigest() != diff_id:
            problem(what + ": diff_id is not the sha256 of the uncompressed layer")
        print("%s: %s" % (what, " ".join(check_tar(raw, what))))


def main():
    root, want_name, want_tag = sys.argv[1:4]
    if load_json(os.path.join(root, "oci-layout")) != {"imageLayoutVersion": "1.0.0"}:
        problem("oci-layout is not {\"imageLayoutVersion\": \"1.0.0\"}")
    index = load_json(os.path.join(root, "index.json"))
    if index.get("schemaVersion") != 2:
        problem("index.json: schemaVersion is not 2")
    if index.get("mediaType") != "application/vnd.oci.image.index.v1+json":
        problem("index.json: mediaType is not that of an index")
    manifests = index.get("manifests", [])
    if len(manifests) != 1:
        problem("index.json: %d manifests, want 1" % len(manifests))
    for i, desc in enumerate(manifests):
        notes = desc.get("annotations", {})
        got = (notes.get("io.containerd.image.name"), notes.get("org.opencontainers.image.ref.name"))
        if got != (want_name, want_tag):
            problem("index.json manifest %d: names %r, want %r" % (i, got, (want_name, want_tag)))
        check_manifest(root, desc, "manifest %d" % i)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
