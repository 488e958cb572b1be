"""Imports inside functions stay only on the start-up paths they protect (docs/architecture.md §5).

Two halves: every such import in the source names its path in a ``# start-up: NAME`` comment
(tests/startup_paths.py lists the names), and every path holds: its commands, run as a user runs
them (a fresh interpreter), never load the modules the path defers. Hoisting a protected import
breaks the second half; an unexplained lazy import breaks the first.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from builders import claim
from startup_paths import PATHS

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"#\s*start-up:\s*([\w-]+)")
ENTRY = {"kubectl-dra": "from kubectl_dra.cli import main", "dra-node-agent": "from node_agent.__main__ import main"}


def lazy_imports(path: Path) -> list[tuple[int, str | None]]:
    """(line, path named above it or None) for each import inside a function, outside TYPE_CHECKING.
    A comment covers the contiguous block of imports right below it."""
    source = path.read_text()
    lines = source.splitlines()
    found: list[ast.stmt] = []

    def walk(node, in_function: bool, type_checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function and not type_checking:
                found.append(child)
            walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)),
                 type_checking or (isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)))

    walk(ast.parse(source), False, False)
    ends = {node.end_lineno: node for node in found}
    out = []
    for node in sorted(found, key=lambda n: n.lineno):
        line = node.lineno - 1  # the line above, 1-based
        while line in ends:  # climb the block of imports above
            line = ends[line].lineno - 1
        above = lines[line - 1].strip() if line >= 1 else ""
        match = MARKER.fullmatch(above.split(" - ")[0]) if above.startswith("#") else None
        out.append((node.lineno, match.group(1) if match else None))
    return out


SOURCES = sorted(p for p in [*ROOT.glob("kubectl_dra/**/*.py"), *ROOT.glob("node_agent/**/*.py")]
                 if not p.name.endswith("_pb2.py") and not p.name.endswith("_pb2_grpc.py"))  # generated stubs


def test_every_import_inside_a_function_names_its_start_up_path():
    unexplained = [f"{p.relative_to(ROOT)}:{line}" for p in SOURCES for line, name in lazy_imports(p) if name is None]
    unknown = [f"{p.relative_to(ROOT)}:{line}: {name}" for p in SOURCES for line, name in lazy_imports(p)
               if name is not None and name not in PATHS]
    assert (unexplained, unknown) == ([], [])


def test_every_start_up_path_is_used_and_documented():
    used = {name for p in SOURCES for _, name in lazy_imports(p) if name}
    documented = set(re.findall(r"^\| `([\w-]+)` \|", (ROOT / "docs/architecture.md").read_text().split(
        "## 5.")[1], re.M))
    assert (used, documented) == (set(PATHS), set(PATHS))


def test_each_path_names_every_file_that_defers_for_it():
    """docs/architecture.md §5's "Where" column lists each module holding an import of that path."""
    section = (ROOT / "docs/architecture.md").read_text().split("## 5.")[1]
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([\w-]+)` \|[^|]*\|(.*)\|$", section, re.M)}
    def named(path: Path, row: str) -> bool:
        """The module, or its whole directory (`cli/`), as kubectl_dra/'s tables write it or from the root."""
        forms = [path.relative_to(ROOT).as_posix()]
        if path.is_relative_to(ROOT / "kubectl_dra"):
            inner = path.relative_to(ROOT / "kubectl_dra").as_posix()
            forms += [inner, inner.rsplit("/", 1)[0] + "/" if "/" in inner else None]
        return any(f"`{form}`" in row for form in forms if form)

    unnamed = sorted({f"{name}: {p.relative_to(ROOT)}" for p in SOURCES for _, name in lazy_imports(p)
                      if name and not named(p, rows.get(name, ""))})
    assert unnamed == []


def test_the_marker_reader_covers_a_block_and_only_a_block(tmp_path):
    """The reader the rule rests on: a comment covers the imports right below it, not a later one."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    # start-up: help\n    import a\n    from b import (c,\n        d)\n"
                      "    import e\n\n    import g\n")
    assert lazy_imports(module) == [(3, "help"), (4, "help"), (6, "help"), (8, None)]


def loaded_modules(command: tuple[str, ...], env: dict) -> tuple[set[str], subprocess.CompletedProcess]:
    """The modules a fresh interpreter imports running ``command`` (from -X importtime)."""
    program, *args = command
    code = args[0] if program == "python" else f"import sys; {ENTRY[program]}; sys.argv = {[program, *args]!r}; main()"
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)
    names = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return names - {"package"}, done


@pytest.fixture
def live_env(make_apiserver, kubeconfig_for):
    server = make_apiserver([claim(f"c{i}", "ml") for i in range(3)])
    return {"KUBECONFIG": str(kubeconfig_for(server))}


@pytest.mark.parametrize("name", sorted(PATHS))
def test_the_start_up_path_holds(name, request):
    path = PATHS[name]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    if path.live:
        env.update(request.getfixturevalue("live_env"))
    for command in path.commands:
        names, done = loaded_modules(command, env)
        assert done.returncode in (0, 1, 2, 4) and "Traceback" not in done.stderr, \
            (command, done.returncode, done.stderr[-2000:])
        assert "kubectl_dra" in str(names) or "node_agent" in str(names)  # the reading itself works
        leaked = sorted(n for n in names for a in path.avoids if n == a or n.startswith(a + "."))
        assert leaked == [], f"{' '.join(command)} loaded {leaked[:8]}"
