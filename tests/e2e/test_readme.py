"""The README's example outputs are what the commands print: every `$ kubectl dra ...` line in a
README code block is run (through click's runner, the clock at 2026-11-22T12:00Z so AGE columns are
stable) and the lines below it must match the output. In the README, a line `...` stands for any
number of lines, a word `...` for any words, and `…` inside a word for any text; columns may be
aligned differently. The README cites nothing outside the repository."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def examples() -> list[tuple[str, list[str]]]:
    found, fenced, current = [], False, None
    for line in README.splitlines():
        if line.startswith("```"):
            fenced, current = not fenced, None
        elif fenced and line.startswith("$ kubectl dra "):
            current = (line[len("$ kubectl dra "):], [])
            if not watches(current[0]):
                found.append(current)
        elif fenced and current is not None:
            current[1].append(line)
    return found


def watches(command: str) -> bool:
    """A ``-w`` example needs a cluster that changes while it runs: tests/e2e/test_watch.py runs those."""
    return bool({"-w", "--watch", "--watch-only"} & set(shlex.split(command)))


def line_pattern(line: str) -> re.Pattern:
    regex = ""
    for i, word in enumerate(line.split()):
        if word == "...":
            regex += r"(?:\s.*?)?" if i else r".*?"
            continue
        piece = ".*?".join(re.escape(part) for part in word.split("…"))
        regex += (r"\s+" if i and not regex.endswith(".*?") else r"\s*" if i else "") + piece
    return re.compile(regex)


def matches(expected: list[str], actual: list[str]) -> bool:
    """``expected`` against all of ``actual``; a ``...`` line skips any number of lines."""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head.strip() == "...":
        return any(matches(rest, actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and bool(line_pattern(head).fullmatch(actual[0].strip())) and matches(rest, actual[1:])


EXAMPLES = examples()


def test_the_readme_has_examples():
    assert len(EXAMPLES) >= 6


@pytest.mark.parametrize("command,expected", EXAMPLES, ids=[c for c, _ in EXAMPLES])
def test_readme_example_is_what_the_command_prints(command, expected, dra, monkeypatch, tmp_path):
    if command.startswith("snapshot"):  # never let a broken refusal write into the repository
        shutil.copytree(ROOT / "examples" / "cluster", tmp_path / "examples" / "cluster")
        monkeypatch.chdir(tmp_path)
    else:
        monkeypatch.chdir(ROOT)
    result = dra(*shlex.split(command))
    assert "Traceback" not in result.stderr
    actual = result.stdout.splitlines() + result.stderr.splitlines()
    assert matches(expected, actual), "\n".join(["the command prints:", *actual])


def test_the_readme_cites_nothing_outside_the_repository():
    assert "DESIGN" not in README and "../shared" not in README and "reference/" not in README
    for link in re.findall(r"\]\(([^)#]+)\)", README):
        assert link.startswith(("http://", "https://")) or (ROOT / link).exists(), link


def help_examples() -> list[str]:
    """Every `kubectl dra ...` example line in the commands' --help texts."""
    from click.testing import CliRunner

    from kubectl_dra.cli import cli

    out = []
    for command in (["claims"], ["explain", "claim"], ["explain", "pod"], ["explain", "node"], ["verify"],
                    ["overlays"], ["snapshot"], []):
        text = CliRunner().invoke(cli, [*command, "--help"], prog_name="kubectl dra").stdout
        out += [line.split("#")[0].strip() for line in text.splitlines() if line.strip().startswith("kubectl dra ")]
    return out


@pytest.mark.parametrize("example", [e for e in help_examples()
                                     if "bundle/" not in e and "$(" not in e and not watches(e)])
def test_help_examples_name_real_objects(example, dra, monkeypatch):
    """Run against the bundled example, every --help example names objects that exist there."""
    monkeypatch.chdir(ROOT)
    args = shlex.split(example)[2:]
    if "--snapshot" not in args:
        args += ["--snapshot", "examples/cluster"]
    result = dra(*args)
    assert result.exit_code in (0, 1, 4), (example, result.stderr)
    assert "not found" not in result.stderr
