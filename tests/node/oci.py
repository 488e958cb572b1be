"""Single-layer OCI image-layout tarballs from local files, for a node without a registry.

``ctr -n k8s.io images import`` takes such a tarball (oci-layout, index.json naming the image in
the ``io.containerd.image.name`` annotation, a manifest, a config and one uncompressed layer).
Every timestamp and owner is fixed, so the same files give the same digest.

    python3 tests/node/oci.py OUT.tar NAME --entrypoint /pause --file /pause=PATH [--busybox PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path


def _blob(data: bytes) -> tuple[str, bytes]:
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


def layer(files: dict[str, bytes], symlinks: dict[str, str]) -> bytes:
    """A tar of ``files`` (path -> content, executable) and ``symlinks`` (path -> target), with
    their parent directories, in a fixed order and with fixed metadata."""
    directories = set()
    for path in (*files, *symlinks):
        parts = path.strip("/").split("/")[:-1]
        directories.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def add(info: tarfile.TarInfo, data: bytes | None = None) -> None:
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            tar.addfile(info, io.BytesIO(data) if data is not None else None)

        for directory in sorted(directories):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            add(info)
        for path in sorted(files):
            info = tarfile.TarInfo(path.strip("/"))
            info.size, info.mode = len(files[path]), 0o755
            add(info, files[path])
        for path in sorted(symlinks):
            info = tarfile.TarInfo(path.strip("/"))
            info.type, info.linkname, info.mode = tarfile.SYMTYPE, symlinks[path], 0o777
            add(info)
    return buffer.getvalue()


def image(name: str, files: dict[str, bytes], symlinks: dict[str, str], entrypoint: list[str]) -> bytes:
    """The whole image-layout tarball."""
    layer_digest, layer_data = _blob(layer(files, symlinks))
    config = {"architecture": "amd64", "os": "linux",
              "config": {"Entrypoint": entrypoint, "Env": ["PATH=/bin"], "WorkingDir": "/"},
              "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
              "history": [{"created_by": "tests/node/oci.py"}]}
    config_digest, config_data = _blob(json.dumps(config, sort_keys=True).encode())
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
    entries = {"oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
               "index.json": json.dumps(index, sort_keys=True).encode()}
    for digest, data in ((layer_digest, layer_data), (config_digest, config_data),
                         (manifest_digest, manifest_data)):
        entries["blobs/sha256/" + digest.split(":", 1)[1]] = data
    return _plain_tar(entries)


def _plain_tar(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for directory in ("blobs", "blobs/sha256"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(info)
        for path in sorted(entries):
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(entries[path]), 0o644, 0
            tar.addfile(info, io.BytesIO(entries[path]))
    return buffer.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("name")
    parser.add_argument("--entrypoint", action="append", default=[])
    parser.add_argument("--file", action="append", default=[], metavar="IMAGEPATH=HOSTPATH")
    parser.add_argument("--busybox", metavar="PATH", help="add a static busybox as /bin/busybox with its applets")
    args = parser.parse_args()
    files = {}
    for spec in args.file:
        target, source = spec.split("=", 1)
        files[target] = Path(source).read_bytes()
    symlinks = {}
    if args.busybox:
        files["/bin/busybox"] = Path(args.busybox).read_bytes()
        applets = subprocess.run([args.busybox, "--list"], capture_output=True, text=True, check=True).stdout.split()
        symlinks = {f"/bin/{applet}": "busybox" for applet in applets if applet != "busybox"}
    out = Path(args.out)
    out.write_bytes(image(args.name, files, symlinks, args.entrypoint))
    print(f"{out}: {args.name}, {out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
