"""Single-layer OCI image-layout tarballs, without a registry or a container engine.

``ctr -n k8s.io images import`` (and ``podman load``, ``skopeo copy oci-archive:``) take such a
tarball: oci-layout, index.json naming the image in the ``io.containerd.image.name`` annotation, a
manifest, a config and one uncompressed layer. Every timestamp is SOURCE_DATE_EPOCH (default 0)
and every owner root, entries are sorted, so the same files give the same digest.

    python3 scripts/oci_image.py OUT.tar NAME [--rootfs DIR] [--file IMAGEPATH=HOSTPATH ...]
        [--busybox PATH] [--entrypoint ARG ...] [--cmd ARG ...] [--env K=V ...] [--user UID:GID]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import stat
import subprocess
import tarfile
from pathlib import Path

EPOCH = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))


def _blob(data: bytes) -> tuple[str, bytes]:
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


class Layer:
    """A tar archive built entry by entry with fixed metadata; parent directories come first."""

    def __init__(self):
        self.buffer = io.BytesIO()
        self.tar = tarfile.open(fileobj=self.buffer, mode="w", format=tarfile.PAX_FORMAT)
        self.seen: set[str] = set()

    def _add(self, info: tarfile.TarInfo, data: bytes | None = None) -> None:
        info.mtime, info.uid, info.gid, info.uname, info.gname = EPOCH, 0, 0, "", ""
        self.tar.addfile(info, io.BytesIO(data) if data is not None else None)
        self.seen.add(info.name)

    def directory(self, path: str, mode: int = 0o755) -> None:
        path = path.strip("/")
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            name = "/".join(parts[:i])
            if name and name not in self.seen:
                info = tarfile.TarInfo(name)
                info.type, info.mode = tarfile.DIRTYPE, mode if i == len(parts) else 0o755
                self._add(info)

    def file(self, path: str, data: bytes, mode: int = 0o755) -> None:
        path = path.strip("/")
        self.directory(os.path.dirname(path))
        info = tarfile.TarInfo(path)
        info.size, info.mode = len(data), mode
        self._add(info, data)

    def symlink(self, path: str, target: str) -> None:
        path = path.strip("/")
        self.directory(os.path.dirname(path))
        info = tarfile.TarInfo(path)
        info.type, info.linkname, info.mode = tarfile.SYMTYPE, target, 0o777
        self._add(info)

    def tree(self, root: Path) -> None:
        """Every directory, regular file and symlink under ``root``, in sorted order, with its
        permission bits (hard links become copies; nothing else is kept)."""
        for directory, dirs, files in os.walk(root):
            dirs.sort()
            relative = os.path.relpath(directory, root)
            if relative != ".":
                self.directory(relative, stat.S_IMODE(os.lstat(directory).st_mode))
            for name in sorted(files + [d for d in dirs if os.path.islink(os.path.join(directory, d))]):
                full = os.path.join(directory, name)
                path = name if relative == "." else f"{relative}/{name}"
                status = os.lstat(full)
                if stat.S_ISLNK(status.st_mode):
                    self.symlink(path, os.readlink(full))
                elif stat.S_ISREG(status.st_mode):
                    self.file(path, Path(full).read_bytes(), stat.S_IMODE(status.st_mode))

    def bytes(self) -> bytes:
        self.tar.close()
        return self.buffer.getvalue()


def image(name: str, layer: bytes, config: dict) -> bytes:
    """The whole image-layout tarball for one layer and an image config (Entrypoint, Cmd, Env, User)."""
    layer_digest, layer_data = _blob(layer)
    document = {"architecture": "amd64", "os": "linux", "config": config,
                "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
                "history": [{"created_by": "scripts/oci_image.py"}]}
    config_digest, config_data = _blob(json.dumps(document, sort_keys=True).encode())
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                           "digest": config_digest, "size": len(config_data)},
                "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                            "digest": layer_digest, "size": len(layer_data)}]}
    manifest_digest, manifest_data = _blob(json.dumps(manifest, sort_keys=True).encode())
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else "latest"
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": [{"mediaType": manifest["mediaType"], "digest": manifest_digest,
                            "size": len(manifest_data), "platform": {"architecture": "amd64", "os": "linux"},
                            "annotations": {"io.containerd.image.name": name,
                                            "org.opencontainers.image.ref.name": tag}}]}
    outer = Layer()
    outer.file("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode(), 0o644)
    outer.file("index.json", json.dumps(index, sort_keys=True).encode(), 0o644)
    for digest, data in ((layer_digest, layer_data), (config_digest, config_data), (manifest_digest, manifest_data)):
        outer.file("blobs/sha256/" + digest.split(":", 1)[1], data, 0o644)
    return outer.bytes()


def manifest_digest(tarball: Path) -> str:
    """The digest containerd shows for the image (its manifest's)."""
    with tarfile.open(tarball) as tar:
        index = json.load(tar.extractfile("index.json"))
    return index["manifests"][0]["digest"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("name")
    parser.add_argument("--rootfs", metavar="DIR", help="a whole root filesystem for the layer")
    parser.add_argument("--file", action="append", default=[], metavar="IMAGEPATH=HOSTPATH")
    parser.add_argument("--busybox", metavar="PATH", help="a static busybox as /bin/busybox with its applets")
    parser.add_argument("--entrypoint", action="append", default=[])
    parser.add_argument("--cmd", action="append", default=[])
    parser.add_argument("--env", action="append", default=[], metavar="K=V")
    parser.add_argument("--user", default="")
    args = parser.parse_args()
    layer = Layer()
    if args.rootfs:
        layer.tree(Path(args.rootfs))
    for spec in args.file:
        target, source = spec.split("=", 1)
        layer.file(target, Path(source).read_bytes())
    if args.busybox:
        layer.file("/bin/busybox", Path(args.busybox).read_bytes())
        applets = subprocess.run([args.busybox, "--list"], capture_output=True, text=True, check=True).stdout.split()
        for applet in sorted(applets):
            if applet != "busybox":
                layer.symlink(f"/bin/{applet}", "busybox")
    config = {"Entrypoint": args.entrypoint, "Env": args.env or ["PATH=/bin"], "WorkingDir": "/"}
    if args.cmd:
        config["Cmd"] = args.cmd
    if args.user:
        config["User"] = args.user
    out = Path(args.out)
    out.write_bytes(image(args.name, layer.bytes(), config))
    print(f"{out}: {args.name}, {out.stat().st_size} bytes, {manifest_digest(out)}")


if __name__ == "__main__":
    main()
