"""The house rules on imports, read from the source (every import, also inside functions): the core
imports no CLI, printer, flag, agent, click or API-client code; the agent imports no kubectl-dra
command; printers import no command; nothing in kubectl_dra imports the agent (the agent is built
on kubectl_dra, never the reverse); no module imports itself in a circle; and the packages form a DAG
(docs/architecture.md §4)."""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# every core package of docs/architecture.md §1, and the leaves under them
CORE = ("exitcodes", "allocatable", "allocation", "cgroups", "claims", "devices", "nodes", "nodescan", "nodestate", "overlays", "pods", "pools",
        "scheduling", "taints", "verify", "model", "quantity", "duration", "document", "errors", "labels", "text")
# The one door from the core into kube/: a ReadRequest is a plain description of what to read (kind,
# namespace, selectors), which the core writes (scheduling/reads.py, nodescan/node.py) and kube/ carries
# out. kube/reads.py holds only that data class and imports only model, so the door leads nowhere
# else (pinned by test_the_read_request_module_is_only_data).
ALLOWED_FROM_KUBE = ("kubectl_dra.kube.reads",)
OUTSIDE_CORE = ("kubectl_dra.cli", "kubectl_dra.commands", "kubectl_dra.printers", "kubectl_dra.flags", "kubectl_dra.kube", "node_agent",
                "click", "kubernetes", "urllib3")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for path in [*ROOT.glob("kubectl_dra/**/*.py"), *ROOT.glob("node_agent/*.py")]:
        name = module_name(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                graph[name] |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                graph[name].add(node.module)
    return graph


GRAPH = imports()


def within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if within(m, tuple(f"kubectl_dra.{c}" for c in CORE))))
def test_the_core_imports_nothing_outside_it(module):
    assert not [m for m in GRAPH[module] if within(m, OUTSIDE_CORE) and m not in ALLOWED_FROM_KUBE]


def test_every_core_package_is_listed():
    """A new package under kubectl_dra/ is core unless it is one of the programs' own layers."""
    programs = {"cli", "commands", "printers", "flags", "kube"}
    packages = {p.parent.name for p in ROOT.glob("kubectl_dra/*/__init__.py")}
    assert packages - programs - set(CORE) == set()


def test_the_read_request_module_is_only_data():
    assert {m for m in GRAPH["kubectl_dra.kube.reads"] if m.startswith("kubectl_dra")} <= {"kubectl_dra.model.base"}


def test_the_agent_and_the_printers_import_no_command():
    offenders = {m: sorted(i for i in GRAPH[m] if within(i, ("kubectl_dra.cli", "kubectl_dra.commands")))
                 for m in GRAPH if within(m, ("node_agent", "kubectl_dra.printers", "kubectl_dra.flags",
                                                "kubectl_dra.kube"))}
    assert {m: i for m, i in offenders.items() if i} == {}


def test_kubectl_dra_imports_no_agent():
    """The node scan, its readers and the output flags live in kubectl_dra; ``node_agent`` only adds the
    service, publishing, the PodResources gRPC client and the network check on top."""
    offenders = {m: sorted(i for i in GRAPH[m] if within(i, ("node_agent",))) for m in GRAPH
                 if within(m, ("kubectl_dra",))}
    assert {m: i for m, i in offenders.items() if i} == {}


def package(module: str) -> str:
    """``kubectl_dra.claims.views`` -> ``kubectl_dra.claims``; a top-level module is its own package;
    the agent is one package."""
    parts = module.split(".")
    return parts[0] if parts[0] == "node_agent" else ".".join(parts[:2])


def package_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the package graph (every import, also inside functions), or None for a DAG."""
    edges: dict[str, set[str]] = defaultdict(set)
    for module, deps in graph.items():
        for dep in deps:
            if dep in graph and package(dep) != package(module):
                edges[package(module)].add(package(dep))
    done, on_path = set(), []

    def visit(node):
        if node in on_path:
            return on_path[on_path.index(node):] + [node]
        if node in done:
            return None
        on_path.append(node)
        for dep in sorted(edges[node]):
            if (cycle := visit(dep)) is not None:
                return cycle
        on_path.pop()
        done.add(node)
        return None

    for node in sorted(edges):
        if (cycle := visit(node)) is not None:
            return cycle
    return None


def test_the_packages_form_a_dag():
    cycle = package_cycle(GRAPH)
    assert cycle is None, "package cycle: " + " -> ".join(cycle)


def test_a_package_cycle_is_found_and_printed():
    """The check itself: model -> pools -> model (the hole issue 26 closed) is a cycle."""
    graph = {"kubectl_dra.model.inventory": {"kubectl_dra.pools.slices"},
             "kubectl_dra.pools.slices": {"kubectl_dra.model.resource"}, "kubectl_dra.model.resource": set()}
    assert package_cycle(graph) == ["kubectl_dra.model", "kubectl_dra.pools", "kubectl_dra.model"]
    assert package_cycle({**graph, "kubectl_dra.model.inventory": set()}) is None


def test_no_import_circles():
    ours = {m: {i for i in deps if i in GRAPH} for m, deps in GRAPH.items()}
    seen, on_path, cycles = set(), [], []

    def visit(module):
        if module in on_path:
            cycles.append(on_path[on_path.index(module):] + [module])
            return
        if module in seen:
            return
        seen.add(module)
        on_path.append(module)
        for dep in sorted(ours.get(module, ())):
            visit(dep)
        on_path.pop()

    for module in sorted(ours):
        visit(module)
    assert cycles == []


def top_level_imports(path: Path) -> set[str]:
    """The modules a file imports at module level (``if TYPE_CHECKING:`` blocks aside)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted(ROOT.glob("kubectl_dra/cli/*.py")), ids=lambda p: p.name)
def test_a_cli_module_loads_only_click_flags_and_the_standard_library(path):
    """``--help`` and completion load the cli/ modules, so what they import at their top is all that
    start-up pays for: click, cli/, flags/, the exit-code table, the guarded streams (click and the
    standard library only) and the standard library (docs/architecture.md §5, the ``help`` path)."""
    allowed = ("click", "kubectl_dra.cli", "kubectl_dra.flags", "kubectl_dra.exitcodes", "kubectl_dra.streams",
               "__future__")
    assert {m for m in top_level_imports(ROOT / "kubectl_dra" / "streams.py") if m != "click"
            and m.split(".")[0] not in sys.stdlib_module_names} == set()
    assert {m for m in top_level_imports(path) if not within(m, allowed)
            and m != "kubectl_dra" and m.split(".")[0] not in sys.stdlib_module_names} == set()  # (the package: __version__)
