#!/usr/bin/env python3
"""Writes a single-layer OCI image layout from local files, offline and reproducibly.

    python3 scripts/oci_image.py --out DIR --name goheap2pprof:0.1.0 \
        --file build/goheap2pprof:/goheap2pprof:0755 --entrypoint /goheap2pprof \
        [--cmd ARG]... [--env K=V]... [--dir /tmp:1777]... [--label K=V]... \
        [--arch amd64] [--user 0:0] [--tar layout.tar]

The layout (OCI image-layout 1.0: oci-layout, index.json, blobs/sha256/<hex>) holds one
manifest, one config and one gzip layer on an empty (scratch) base. Two runs on the same
inputs give the same bytes: entries are sorted, owned by 0:0 with no user or group names,
dated SOURCE_DATE_EPOCH (default 0), and the gzip streams carry no name and no time. Only the
file contents, the listed modes and the options make the digest.

The manifest in index.json carries both names an importer may look for:
io.containerd.image.name (the normalized reference, docker.io/library/NAME:TAG, which
`ctr images import` records and the CRI looks images up by) and
org.opencontainers.image.ref.name (the tag alone, as the image-layout spec defines it and
umoci and skopeo's oci:DIR:TAG address it). --tar also writes the layout as one tar for
`ctr images import`.
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
import time

MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


def fail(message):
    print("oci_image: " + message, file=sys.stderr)
    sys.exit(1)


def normalize_reference(name):
    """NAME[:TAG] -> (full reference as containerd names it, tag)."""
    repo, tag = name, "latest"
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        repo, tag = name.rsplit(":", 1)
    first = repo.split("/", 1)[0]
    if "/" not in repo:
        repo = "docker.io/library/" + repo
    elif not ("." in first or ":" in first or first == "localhost"):
        repo = "docker.io/" + repo
    return repo + ":" + tag, tag


def parse_file_spec(spec):
    """SRC:DEST[:MODE]; the mode defaults to 0755 for executable sources, else 0644."""
    parts = spec.split(":")
    if len(parts) not in (2, 3) or not parts[1].startswith("/"):
        fail("--file wants SRC:/DEST[:MODE], not " + spec)
    src, dest = parts[0], parts[1]
    if not os.path.isfile(src):
        fail("--file: no such file: " + src)
    if len(parts) == 3:
        mode = int(parts[2], 8)
    else:
        mode = 0o755 if os.access(src, os.X_OK) else 0o644
    return dest.strip("/"), src, mode


def parse_dir_spec(spec):
    path, _, mode = spec.partition(":")
    if not path.startswith("/"):
        fail("--dir wants /PATH[:MODE], not " + spec)
    return path.strip("/"), int(mode, 8) if mode else 0o755


def tar_info(name, kind, mode, mtime, size=0):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.mtime = mtime
    info.size = size
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def layer_tar(files, dirs, mtime):
    """The uncompressed layer: parent directories first, every entry in sorted order."""
    entries = {}
    for path, mode in dirs:
        entries[path] = ("dir", mode, None)
    for dest, src, mode in files:
        entries[dest] = ("file", mode, src)
        parent = os.path.dirname(dest)
        while parent:
            entries.setdefault(parent, ("dir", 0o755, None))
            parent = os.path.dirname(parent)
    out = io.BytesIO()
    # USTAR: no PAX records (whose fields a tar implementation may fill with times).
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path in sorted(entries):
            kind, mode, src = entries[path]
            if kind == "dir":
                tar.addfile(tar_info(path + "/", tarfile.DIRTYPE, mode, mtime))
                continue
            with open(src, "rb") as f:
                data = f.read()
            tar.addfile(tar_info(path, tarfile.REGTYPE, mode, mtime, len(data)), io.BytesIO(data))
    return out.getvalue()


def gzip_bytes(data):
    out = io.BytesIO()
    # mtime=0 and no file name: the header depends on nothing but the data.
    with gzip.GzipFile(filename="", fileobj=out, mode="wb", compresslevel=9, mtime=0) as z:
        z.write(data)
    return out.getvalue()


def canonical_json(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


class Blobs:
    def __init__(self, root):
        self.dir = os.path.join(root, "blobs", "sha256")
        os.makedirs(self.dir, exist_ok=True)

    def put(self, data, media_type):
        hexdigest = hashlib.sha256(data).hexdigest()
        with open(os.path.join(self.dir, hexdigest), "wb") as f:
            f.write(data)
        return {"mediaType": media_type, "digest": "sha256:" + hexdigest, "size": len(data)}


def image_config(args, diff_id, created):
    config = {"Entrypoint": args.entrypoint, "WorkingDir": "/", "User": args.user}
    if args.cmd:
        config["Cmd"] = args.cmd
    if args.env:
        config["Env"] = args.env
    if args.label:
        config["Labels"] = dict(label.split("=", 1) for label in args.label)
    return {
        "created": created,
        "architecture": args.arch,
        "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": created, "created_by": "scripts/oci_image.py"}],
    }


def write_layout(args):
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    created = "%04d-%02d-%02dT%02d:%02d:%02dZ" % time.gmtime(mtime)[:6]
    files = [parse_file_spec(spec) for spec in args.file]
    dirs = [parse_dir_spec(spec) for spec in args.dir]
    layer = layer_tar(files, dirs, mtime)
    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    blobs = Blobs(args.out)
    layer_desc = blobs.put(gzip_bytes(layer), MEDIA_LAYER)
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    config_desc = blobs.put(canonical_json(image_config(args, diff_id, created)), MEDIA_CONFIG)
    manifest = {"schemaVersion": 2, "mediaType": MEDIA_MANIFEST, "config": config_desc,
                "layers": [layer_desc]}
    manifest_desc = blobs.put(canonical_json(manifest), MEDIA_MANIFEST)
    full, tag = normalize_reference(args.name)
    manifest_desc["platform"] = {"architecture": args.arch, "os": "linux"}
    manifest_desc["annotations"] = {"io.containerd.image.name": full,
                                    "org.opencontainers.image.ref.name": tag}
    index = {"schemaVersion": 2, "mediaType": MEDIA_INDEX, "manifests": [manifest_desc]}
    with open(os.path.join(args.out, "index.json"), "wb") as f:
        f.write(canonical_json(index))
    with open(os.path.join(args.out, "oci-layout"), "wb") as f:
        f.write(canonical_json({"imageLayoutVersion": "1.0.0"}))
    return full, manifest_desc["digest"], mtime


def write_layout_tar(root, path, mtime):
    """The layout as one tar, entries sorted, for `ctr images import`."""
    names = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel = os.path.relpath(dirpath, root)
        if rel != ".":
            names.append((rel, True))
        names.extend((os.path.normpath(os.path.join(rel, n)), False) for n in filenames)
    tmp = path + ".tmp"
    with tarfile.open(tmp, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, is_dir in sorted(names):
            if is_dir:
                tar.addfile(tar_info(name + "/", tarfile.DIRTYPE, 0o755, mtime))
                continue
            with open(os.path.join(root, name), "rb") as f:
                data = f.read()
            tar.addfile(tar_info(name, tarfile.REGTYPE, 0o644, mtime, len(data)), io.BytesIO(data))
    os.replace(tmp, path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="layout directory (replaced)")
    p.add_argument("--name", required=True, help="NAME[:TAG] (default tag: latest)")
    p.add_argument("--file", action="append", default=[], help="SRC:/DEST[:MODE] (repeatable)")
    p.add_argument("--dir", action="append", default=[], help="/PATH[:MODE] empty directory")
    p.add_argument("--entrypoint", action="append", required=True, help="argv, one per flag")
    p.add_argument("--cmd", action="append", default=[], help="default arguments")
    p.add_argument("--env", action="append", default=[], help="K=V")
    p.add_argument("--label", action="append", default=[], help="K=V")
    p.add_argument("--arch", default="amd64", choices=["amd64", "arm64"])
    p.add_argument("--user", default="0:0")
    p.add_argument("--tar", help="also write the layout as this tar file")
    args = p.parse_args()
    if not args.file:
        fail("no --file: an image needs at least its entrypoint")
    full, digest, mtime = write_layout(args)
    if args.tar:
        write_layout_tar(args.out, args.tar, mtime)
    print("oci_image: %s %s in %s%s" % (full, digest, args.out,
                                        " and " + args.tar if args.tar else ""))


if __name__ == "__main__":
    main()
