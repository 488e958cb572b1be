"""The start-up paths that imports inside functions protect (docs/architecture.md §5).

An import inside a function is allowed only under a ``# start-up: NAME`` comment naming one of
these. Each path says which commands take it, which modules they must never load, and what the
deferred imports would cost if hoisted: tests/e2e/test_startup_paths.py runs the commands and fails
when one loads a module it must not (someone hoisted the import), and ``scripts/bench --only
startup`` measures the time each path saves.
"""

from __future__ import annotations

from dataclasses import dataclass

SNAPSHOT = "examples/cluster"
GPU_NODE = "examples/nodes/worker-gpu-1"


@dataclass(frozen=True)
class StartupPath:
    name: str
    why: str
    commands: tuple[tuple[str, ...], ...]  # ("kubectl-dra" | "dra-node-agent" | "python", args...)
    avoids: tuple[str, ...]  # modules (and their submodules) none of the commands may import
    already: str  # Python the path runs anyway (the bench imports it first)
    deferred: str  # Python the lazy imports defer (the bench times it after ``already``)
    live: bool = False  # the commands read a (fake) API server, not a snapshot


PATHS = {p.name: p for p in (
    StartupPath(
        "help",
        "--help, a usage error and shell completion load cli/ and flags/ only: no model, no core",
        (("kubectl-dra", "--help"), ("kubectl-dra", "claims", "--help"), ("kubectl-dra", "explain", "pod", "--help"),
         ("kubectl-dra", "verify", "--help"), ("kubectl-dra", "taints", "--help"),
         ("kubectl-dra", "overlays", "--help"), ("kubectl-dra", "claims", "--sort-by", "nope"),
         ("dra-node-agent", "scan", "--help")),
        ("pydantic", "kubectl_dra.model", "kubectl_dra.commands", "kubectl_dra.claims.summary", "kubectl_dra.nodescan",
         "kubectl_dra.allocation", "kubectl_dra.scheduling", "kubernetes"),
        "import kubectl_dra.cli.claims",
        "import kubectl_dra.commands.claims"),
    StartupPath(
        "offline",
        "a --snapshot run never loads the kubernetes client or urllib3",
        (("kubectl-dra", "claims", "-A", "--snapshot", SNAPSHOT),
         ("kubectl-dra", "explain", "pod", "embedder", "-n", "ml", "--snapshot", SNAPSHOT),
         ("kubectl-dra", "verify", "-A", "--snapshot", SNAPSHOT)),
        ("kubernetes", "urllib3"),
        "import kubectl_dra.kube.sources, kubectl_dra.kube.config",
        "import kubectl_dra.kube.live, kubernetes.client, kubernetes.config"),
    StartupPath(
        "pending",
        "the allocator and the scheduler's filters load only when a claim or a pod is pending",
        (("kubectl-dra", "explain", "pod", "embedder", "-n", "ml", "--snapshot", SNAPSHOT),
         ("kubectl-dra", "explain", "claim", "embedder-gpu-qfx82", "-n", "ml", "--snapshot", SNAPSHOT)),
        ("kubectl_dra.allocation.allocator", "kubectl_dra.scheduling.dra", "kubectl_dra.scheduling.framework",
         "cel_expr_python"),
        "import kubectl_dra.pods.explain, kubectl_dra.claims.explain",
        "import kubectl_dra.scheduling.explain, kubectl_dra.scheduling.dra, kubectl_dra.allocation.explain"),
    StartupPath(
        "light",
        "a command pays only for what it prints: the plain `claims` list of a cluster builds the claim views only",
        (("kubectl-dra", "claims", "-A"),),
        ("kubectl_dra.model.pod", "kubectl_dra.model.karpenter", "kubectl_dra.model.workloads",
         "kubectl_dra.model.storage", "kubectl_dra.model.resource", "kubectl_dra.claims.explain",
         "kubectl_dra.printers.claim_tree", "kubectl_dra.allocation", "pycurl", "kubectl_dra.kube.http2"),
        "import kubectl_dra.commands.claims",
        "from kubectl_dra.model.registry import models; models(); import kubectl_dra.claims.explain",
        live=True),
    StartupPath(
        "check-network",
        "pyroute2 loads only in an agent run with --check-network",
        (("python", "import node_agent.service, node_agent.netns"),),
        ("pyroute2",),
        "import node_agent.service",
        "import pyroute2"),
)}
