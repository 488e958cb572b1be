"""Imports inside functions hide the import graph (issue 26, item 5): in the modules converted to
kubectl's shape, one stays only where it keeps a named start-up path light, written directly under
a ``# start-up: NAME`` line (or above a block of such imports). The paths:

- help: ``--help``, a usage error and completion import only cli/ and flags/;
- offline: a ``--snapshot`` run never imports the kubernetes client or urllib3;
- pending: allocation/ and scheduling/ are loaded only when something is pending;
- light: the plain ``claims`` table and ``-o name`` build claim views only (tests/e2e/test_light_paths.py).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PATHS = {"help", "offline", "pending", "light"}
CONVERTED = ["kubectl_dra/cli/claims.py", "kubectl_dra/cli/taints.py", "kubectl_dra/commands/claims.py",
             "kubectl_dra/commands/taints.py", "kubectl_dra/commands/watching.py", "kubectl_dra/flags/watch.py",
             "kubectl_dra/claims/summary.py", *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("kubectl_dra/taints/*.py"))]
MARK = re.compile(r"^\s*# start-up: (\w+)( - .+)?$")


def unmarked_imports(source: str) -> list[str]:
    """``line: import`` for each import inside a function that no ``# start-up: NAME`` (a known
    NAME) stands above, directly or over a block of imports. ``if TYPE_CHECKING:`` imports are at
    module level and cost nothing."""
    lines = source.splitlines()
    found = []
    for function in (n for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        for node in ast.walk(function):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            above = node.lineno - 2
            while above >= 0 and re.match(r"^\s*(from \S+ )?import ", lines[above]):
                above -= 1
            mark = MARK.match(lines[above]) if above >= 0 else None
            if mark is None or mark.group(1) not in PATHS:
                found.append(f"{node.lineno}: {lines[node.lineno - 1].strip()}")
    return sorted(set(found), key=lambda entry: int(entry.split(":")[0]))


@pytest.mark.parametrize("path", CONVERTED)
def test_an_import_inside_a_function_names_the_start_up_path_it_protects(path):
    assert unmarked_imports((ROOT / path).read_text()) == []


@pytest.mark.parametrize("source, unmarked", [
    ("def f():\n    import os\n", ["2: import os"]),
    ("def f():\n    # start-up: help\n    import os\n", []),
    ("def f():\n    # start-up: pending - only when a claim waits\n    import os\n    from a import b\n", []),
    ("def f():\n    # start-up: speed\n    import os\n", ["3: import os"]),  # a name nobody measured
    ("def f():\n    # start-up: help\n    x = 1\n    import os\n", ["4: import os"]),  # not directly above
    ("def f():\n    def g():\n        import os\n", ["3: import os"]),
    ("import os\nif True:\n    import sys\n", []),
])
def test_the_checker(source, unmarked):
    assert unmarked_imports(source) == unmarked
