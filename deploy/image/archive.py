#!/usr/bin/env python3
"""Writes a container image as a docker-archive tarball, with no daemon and no registry.

The image has one layer holding the given files. Everything that could vary between two builds
of the same inputs is fixed: entries are sorted, owned by root, dated 1970, and the config has no
creation time, so the same files give the same image ID (the config's sha256), which is printed.
`ctr -n k8s.io images import` loads the result into containerd; `docker load` into Docker.

    archive.py --tag NAME:TAG --output FILE.tar [--entrypoint JSON] [--user UID:GID]
               [--env K=V]... [--dir PATH[:MODE]]... [--link TARGET:PATH]... SOURCE:PATH...
"""

import argparse
import hashlib
import io
import json
import os
import stat
import sys
import tarfile


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tag", required=True, help="the image's name, e.g. wasmop.dev/wasmop:dev")
    parser.add_argument("--output", required=True, help="the tarball to write")
    parser.add_argument("--entrypoint", type=json.loads, default=None, help="a JSON array")
    parser.add_argument("--user", default=None, help="UID:GID the container runs as")
    parser.add_argument("--env", action="append", default=[], help="K=V, repeatable")
    parser.add_argument("--dir", action="append", default=[], help="an empty directory, PATH[:MODE]")
    parser.add_argument("--link", action="append", default=[], help="a symlink, TARGET:PATH")
    parser.add_argument("files", nargs="*", help="SOURCE:PATH, a file of this machine and its path in the image")
    return parser.parse_args(argv)


def split_pair(text, what):
    source, sep, dest = text.rpartition(":")
    if not sep or not source or not dest.startswith("/"):
        sys.exit(f"archive.py: {what} {text!r} is not SOURCE:/PATH")
    return source, dest


def tar_info(name, kind, mode, size=0, linkname=""):
    info = tarfile.TarInfo(name.lstrip("/"))
    info.type, info.mode, info.size, info.linkname = kind, mode, size, linkname
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    return info


def layer_entries(args):
    """Every entry of the layer, keyed by its path: files, links, asked-for and parent directories."""
    entries = {}
    for spec in args.files:
        source, dest = split_pair(spec, "file")
        with open(source, "rb") as f:
            data = f.read()
        executable = os.stat(source).st_mode & stat.S_IXUSR
        entries[dest] = (tar_info(dest, tarfile.REGTYPE, 0o755 if executable else 0o644, len(data)), data)
    for spec in args.link:
        target, dest = split_pair(spec, "link")
        entries[dest] = (tar_info(dest, tarfile.SYMTYPE, 0o777, linkname=target), None)
    for spec in args.dir:
        path, _, mode = spec.partition(":")
        entries[path] = (tar_info(path, tarfile.DIRTYPE, int(mode or "755", 8)), None)
    for path in list(entries):
        parent = os.path.dirname(path)
        while parent not in ("/", ""):
            entries.setdefault(parent, (tar_info(parent, tarfile.DIRTYPE, 0o755), None))
            parent = os.path.dirname(parent)
    return entries


def tarball(entries):
    """A deterministic tar of `entries`: (TarInfo, bytes or None) pairs, written in path order."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for path in sorted(entries):
            info, data = entries[path]
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def main(argv):
    args = parse_args(argv)
    layer = tarball(layer_entries(args))
    layer_digest = hashlib.sha256(layer).hexdigest()
    config = {"Env": args.env or ["PATH=/usr/local/bin:/usr/bin:/bin"], "WorkingDir": "/"}
    if args.entrypoint:
        config["Entrypoint"] = args.entrypoint
    if args.user:
        config["User"] = args.user
    image = canonical({
        "architecture": "amd64",
        "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer_digest}"]},
        "history": [{"created_by": "deploy/image/archive.py"}],
    })
    image_id = hashlib.sha256(image).hexdigest()
    manifest = canonical([{
        "Config": f"{image_id}.json",
        "RepoTags": [args.tag],
        "Layers": [f"{layer_digest}/layer.tar"],
    }])
    outer = {
        f"/{image_id}.json": (tar_info(f"{image_id}.json", tarfile.REGTYPE, 0o644, len(image)), image),
        f"/{layer_digest}": (tar_info(layer_digest, tarfile.DIRTYPE, 0o755), None),
        f"/{layer_digest}/layer.tar": (tar_info(f"{layer_digest}/layer.tar", tarfile.REGTYPE, 0o644, len(layer)), layer),
        "/manifest.json": (tar_info("manifest.json", tarfile.REGTYPE, 0o644, len(manifest)), manifest),
    }
    with open(args.output, "wb") as f:
        f.write(tarball(outer))
    print(f"{args.tag} sha256:{image_id} ({len(layer) / 2**20:.1f} MiB uncompressed)")


if __name__ == "__main__":
    main(sys.argv[1:])
