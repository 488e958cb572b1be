"""The project's releases, as CHANGELOG.md records them: version, date and the commit each was made from.

A release heading reads ``## 0.1.0 (2026-11-27, commit c77f37d…)``; the version being prepared has
no commit yet (``## 0.2.0 (unreleased)`` or with its date), and ``scripts/release --tag`` writes it
in once the release commit is tagged. The commit, not only the tag, is recorded so that a clone
without tags can still build an earlier release from its own sources: the node tier's upgrade test
runs the previous release's image and manifests, built from that commit, before this checkout's.

    python3 scripts/releases.py previous          # "VERSION COMMIT" of the newest earlier release
    python3 scripts/releases.py current           # the version kubectl_dra/__init__.py says
    python3 scripts/releases.py record VERSION COMMIT   # write COMMIT into VERSION's heading
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHANGELOG = ROOT / "CHANGELOG.md"
HEADING = re.compile(r"^## (?P<version>\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.]+)?) \((?P<when>[^,)]*)"
                     r"(?:, commit (?P<commit>[0-9a-f]{40}))?\)$", re.M)


@dataclass(frozen=True)
class Release:
    version: str
    when: str  # a date (YYYY-MM-DD) or "unreleased"
    commit: str | None  # None until the release is tagged


def current_version(root: Path = ROOT) -> str:
    text = (root / "kubectl_dra" / "__init__.py").read_text()
    match = re.search(r'^__version__ = "(.*)"$', text, re.M)
    if match is None:
        raise ValueError("kubectl_dra/__init__.py has no __version__")
    return match.group(1)


def releases(text: str | None = None) -> list[Release]:
    """Every entry of the changelog, newest first (the file's order)."""
    text = CHANGELOG.read_text() if text is None else text
    return [Release(m["version"], m["when"].strip(), m["commit"]) for m in HEADING.finditer(text)]


def previous(text: str | None = None, version: str | None = None) -> Release:
    """The newest recorded release other than ``version`` (default: this checkout's)."""
    version = version or current_version()
    for release in releases(text):
        if release.version != version and release.commit:
            return release
    raise LookupError(f"CHANGELOG.md records no release before {version} with its commit")


def record(version: str, commit: str, text: str | None = None) -> str:
    """The changelog with ``commit`` written into ``version``'s heading (once)."""
    text = CHANGELOG.read_text() if text is None else text
    for match in HEADING.finditer(text):
        if match["version"] == version:
            if match["commit"] and match["commit"] != commit:
                raise ValueError(f"{version} is already recorded as released from {match['commit']}")
            when = match["when"].strip()
            heading = f"## {version} ({when}, commit {commit})"
            return text[:match.start()] + heading + text[match.end():]
    raise LookupError(f"CHANGELOG.md has no entry for {version}")


def main(argv: list[str]) -> int:
    try:
        if argv == ["previous"]:
            release = previous()
            print(release.version, release.commit)
        elif argv == ["current"]:
            print(current_version())
        elif len(argv) == 3 and argv[0] == "record":
            CHANGELOG.write_text(record(argv[1], argv[2]))
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except (LookupError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
