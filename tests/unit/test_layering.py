"""The house rules on imports, read from the source (every import, also inside functions): the core
imports no CLI, printer, flag, agent, click or API-client code; the agent imports no kubectl-dra
command; printers import no command; nothing in kubectl_dra imports the agent (the agent is built
on kubectl_dra, never the reverse); and no package imports itself in a circle."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = ("allocatable", "cgroups", "claims", "pods", "nodes", "overlays", "verify", "pools", "model", "quantity",
        "document", "errors")
OUTSIDE_CORE = ("kubectl_dra.cli", "kubectl_dra.printers", "kubectl_dra.flags", "kubectl_dra.kube", "node_agent",
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
    assert not [m for m in GRAPH[module] if within(m, OUTSIDE_CORE)]


def test_the_agent_and_the_printers_import_no_command():
    offenders = {m: sorted(i for i in GRAPH[m] if within(i, ("kubectl_dra.cli",)))
                 for m in GRAPH if within(m, ("node_agent", "kubectl_dra.printers", "kubectl_dra.flags",
                                                "kubectl_dra.kube"))}
    assert {m: i for m, i in offenders.items() if i} == {}


def test_kubectl_dra_imports_no_agent():
    """The node scan, its readers and the output flags live in kubectl_dra; ``node_agent`` only adds the
    service, publishing, the PodResources gRPC client and the network check on top."""
    offenders = {m: sorted(i for i in GRAPH[m] if within(i, ("node_agent",))) for m in GRAPH
                 if within(m, ("kubectl_dra",))}
    assert {m: i for m, i in offenders.items() if i} == {}


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if within(m, ("kubectl_dra.nodescan",))))
def test_the_node_scan_imports_no_command_printer_flag_or_click(module):
    """The node scan reads the node (host files, and the API through a source it is given) and returns
    a document; each caller prints it. So it is the core's, but for its reads."""
    assert not [m for m in GRAPH[module] if within(m, ("kubectl_dra.cli", "kubectl_dra.printers", "kubectl_dra.flags",
                                                       "node_agent", "click", "kubernetes", "urllib3"))]


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
