"""Helpers of scripts/krew-archive: a reproducible tar.gz of the frozen plugin, and the krew
manifest rendered from the repository's .krew.yaml.

.krew.yaml stays the one source of the manifest (description, caveats, platforms): it is the
template krew-release-bot fills on a tagged release, and this renders the same two template
actions it uses, ``{{ .TagName }}`` and ``{{addURIAndSha "URL" .TagName }}``, for a local archive.
Anything else in braces is left unrendered and refused, so a template this does not understand
never becomes a manifest that merely looks right.

    python scripts/krew_release.py pack DIR OUT.tar.gz
    python scripts/krew_release.py manifest TEMPLATE TAG ARCHIVE OUT.yaml
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import sys
import tarfile
from pathlib import Path

ADD_URI_AND_SHA = re.compile(r'^(?P<indent>\s*)\{\{\s*addURIAndSha\s+"(?P<url>[^"]+)"\s+\.TagName\s*\}\}\s*$')
TAG_NAME = re.compile(r"\{\{\s*\.TagName\s*\}\}")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def render(template: str, tag: str, archive_sha256: str) -> str:
    """The manifest for ``tag``: what krew-release-bot would write, with this archive's sha256."""
    lines = []
    for line in template.splitlines():
        match = ADD_URI_AND_SHA.match(line)
        if match:
            indent = match["indent"]
            lines.append(f"{indent}uri: {TAG_NAME.sub(tag, match['url'])}")
            lines.append(f"{indent}sha256: {archive_sha256}")
            continue
        lines.append(TAG_NAME.sub(tag, line))
    text = "\n".join(lines) + "\n"
    left = re.search(r"\{\{.*?\}\}", text)
    if left:
        raise ValueError(f"template action this renderer does not know: {left.group(0)}")
    if not any(ADD_URI_AND_SHA.match(line) for line in template.splitlines()):
        raise ValueError('the template has no {{addURIAndSha "URL" .TagName }} line: no archive to point at')
    return text


def pack(src: Path, out: Path) -> None:
    """A tar.gz of ``src``'s contents: sorted, owner root, fixed times, regular files and
    directories only (krew's extractor refuses symbolic links), so one input gives one sha256."""
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH") or "0")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(src.rglob("*")):
            if path.is_symlink():
                raise ValueError(f"{path}: a symbolic link; krew cannot extract one")
            info = tar.gettarinfo(str(path), arcname=path.relative_to(src).as_posix())
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = epoch
            info.mode = 0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644
            if path.is_file():
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=epoch, compresslevel=6) as gz:
        gz.write(buffer.getvalue())
    tmp.replace(out)


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "pack":
        pack(Path(argv[1]), Path(argv[2]))
        return 0
    if len(argv) == 5 and argv[0] == "manifest":
        template, tag, archive, out = argv[1:]
        Path(out).write_text(render(Path(template).read_text(), tag, sha256(Path(archive))))
        return 0
    print(__doc__.split("\n\n")[-1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
