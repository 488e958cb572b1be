"""Releases are recorded (scripts/releases.py reads CHANGELOG.md): this version has an entry, every
earlier release names the commit it was made from, that commit is in the history and says that
version, and ``scripts/release`` refuses what a release must not be."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kubectl_dra import __version__

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import releases  # noqa: E402

SAMPLE = """# Changelog

## 0.3.0 (unreleased)

## 0.2.0 (2026-12-01)

## 0.1.0 (2026-11-27, commit c77f37d85f2380a0e8533cfe535a54667775fcbc)
"""


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=60)


def test_this_version_has_an_entry_and_the_entries_are_newest_first():
    found = releases.releases()
    assert found[0].version == __version__ == releases.current_version()
    numbers = [tuple(int(p) for p in r.version.split("-")[0].split(".")) for r in found]
    assert numbers == sorted(numbers, reverse=True) and len(set(numbers)) == len(numbers)


def test_every_recorded_release_is_a_commit_of_this_history_that_says_its_version():
    recorded = [r for r in releases.releases() if r.commit]
    assert recorded, "no release records its commit"
    for release in recorded:
        assert git("merge-base", "--is-ancestor", release.commit, "HEAD").returncode == 0, release
        source = git("show", f"{release.commit}:kubectl_dra/__init__.py").stdout
        assert f'__version__ = "{release.version}"' in source, release


def test_the_previous_release_is_the_newest_recorded_one_before_this_version():
    assert releases.previous(SAMPLE, "0.3.0") == releases.Release("0.1.0", "2026-11-27",
                                                                    "c77f37d85f2380a0e8533cfe535a54667775fcbc")
    with pytest.raises(LookupError):
        releases.previous("## 0.1.0 (unreleased)\n", "0.1.0")
    assert releases.previous().version != __version__


def test_recording_a_release_writes_its_commit_once():
    commit = "a" * 40
    text = releases.record("0.2.0", commit, SAMPLE)
    assert "## 0.2.0 (2026-12-01, commit " + commit + ")" in text
    assert releases.record("0.2.0", commit, text) == text  # again: nothing changes
    with pytest.raises(ValueError, match="already recorded"):
        releases.record("0.2.0", "b" * 40, text)
    with pytest.raises(LookupError):
        releases.record("9.9.9", commit, SAMPLE)


def test_the_release_script_refuses_to_tag_an_unclean_checkout_or_an_undated_entry(tmp_path):
    """Run in a clone (the checkout itself is never tagged by a test); both refusals come before any
    build, so this is quick."""
    clone = tmp_path / "clone"
    assert subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(clone)], timeout=120).returncode == 0
    for name in ("scripts/release", "scripts/releases.py", "kubectl_dra/__init__.py"):  # this checkout's, committed
        (clone / name).write_bytes((ROOT / name).read_bytes())
    version = releases.current_version(clone)
    tags = subprocess.run(["git", "-C", str(clone), "tag", "-l"], capture_output=True, text=True).stdout
    (clone / "CHANGELOG.md").write_text(f"# Changelog\n\n## {version} (unreleased)\n")
    commit = ["sh", "-c", f"git -C {clone} add -A && git -C {clone} -c user.name=t -c user.email=t@t commit -qm x"]
    script = ["bash", str(clone / "scripts" / "release"), "--no-krew", "--no-image"]

    def release(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*script, *args, str(tmp_path / "dist")], capture_output=True, text=True, timeout=120,
                              cwd=clone)

    done = release("--tag")
    assert done.returncode == 1 and "clean checkout" in done.stderr  # the CHANGELOG is not committed
    subprocess.run(commit, check=True, timeout=60)
    done = release("--tag")
    assert done.returncode == 1 and "is not dated" in done.stderr
    assert subprocess.run(["git", "-C", str(clone), "tag", "-l"], capture_output=True, text=True).stdout == tags
    (clone / "CHANGELOG.md").write_text("# Changelog\n")
    subprocess.run(commit, check=True, timeout=60)
    done = release()
    assert done.returncode == 1 and f"no entry for {version}" in done.stderr
    done = release("--bogus")
    assert done.returncode == 2 and "unknown option --bogus" in done.stderr
