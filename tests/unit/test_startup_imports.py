"""Imports inside functions hide the import graph (issue 26 item 5), so one stays only where it keeps
a named start-up path light, with the line above it (or above its block) saying which:
``# start-up: NAME`` (optionally `` - why``). The paths:

- ``help``: ``--help``, a usage error and shell completion import only cli/ and flags/;
- ``offline``: a ``--snapshot`` run never imports the kubernetes client or urllib3;
- ``pending``: the allocator and the scheduler's filters load only when something is pending;
- ``light``: the plain ``claims`` list builds claim views only (tests/e2e/test_light_paths.py).

Imports under ``if TYPE_CHECKING:`` cost nothing at run time and need no comment. The modules
checked are those already in this shape; a module joins the list when it is converted."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PATHS = {"help", "offline", "pending", "light"}
MARK = re.compile(r"^\s*# start-up: ([\w-]+)(?: - \S.*)?$")
CONVERTED = (
    "kubectl_dra/cli/__init__.py", "kubectl_dra/cli/completion.py", "kubectl_dra/cli/lazy.py",
    "kubectl_dra/cli/options.py", "kubectl_dra/cli/overlays.py", "kubectl_dra/cli/snapshot.py",
    "kubectl_dra/cli/verify.py", "kubectl_dra/cli/version.py", "kubectl_dra/commands/inputs.py",
    "kubectl_dra/commands/overlays.py", "kubectl_dra/commands/snapshot.py", "kubectl_dra/commands/verify.py",
    "kubectl_dra/verify/result.py", "kubectl_dra/printers/verify.py", "kubectl_dra/overlays/explain.py",
)
# what a cli/ module may import at its top: --help and completion load these and nothing more
CLI_TOP = re.compile(r"^(__future__|click(\..+)?|kubectl_dra|kubectl_dra\.(cli|flags)(\..+)?|kubectl_dra\.exitcodes)$")


def unmarked_imports(source: str) -> list[str]:
    """Each import inside a function whose block is not under a ``# start-up: NAME`` line naming a
    known path, as ``line N: text``."""
    lines = source.splitlines()
    found = []
    for func in ast.walk(ast.parse(source)):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(func):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            above = node.lineno - 2  # the line before the import, 0-based
            while above >= 0 and re.match(r"^\s*(from \S+ )?import ", lines[above]):
                above -= 1  # a contiguous block shares one comment
            mark = MARK.match(lines[above]) if above >= 0 else None
            if mark is None or mark.group(1) not in PATHS:
                found.append(f"line {node.lineno}: {lines[node.lineno - 1].strip()}")
    return found


def top_imports(source: str) -> set[str]:
    """The modules a file imports at module level (``if TYPE_CHECKING:`` blocks aside)."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", CONVERTED)
def test_every_import_inside_a_function_names_its_start_up_path(path):
    assert unmarked_imports((ROOT / path).read_text()) == []


@pytest.mark.parametrize("path", [p for p in CONVERTED if p.startswith("kubectl_dra/cli/")])
def test_a_cli_module_imports_only_cli_flags_and_click_at_its_top(path):
    stdlib = {"sys", "importlib", "pathlib", "os", "threading", "click.core", "click.shell_completion"}
    assert {m for m in top_imports((ROOT / path).read_text()) if not CLI_TOP.match(m) and m not in stdlib} == set()


@pytest.mark.parametrize("source, unmarked", [
    ("def f():\n    import os\n", ["line 2: import os"]),
    ("def f():\n    # start-up: help\n    import os\n", []),
    ("def f():\n    # start-up: help - why\n    import os\n    from a import b\n", []),
    ("def f():\n    # start-up: fast\n    import os\n", ["line 3: import os"]),  # not a known path
    ("def f():\n    # start-up: help\n    import os\n\n    import sys\n", ["line 5: import sys"]),  # a new block
    ("def f():\n    x = 1\n    import os\n", ["line 3: import os"]),
    ("import os\n", []),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import os\n", []),
])
def test_the_check_itself(source, unmarked):
    assert unmarked_imports(source) == unmarked
