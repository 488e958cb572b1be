"""What `explain` loads is what its answer needs, in a fresh interpreter as a user runs it: a usage
error loads no core at all; a bound pod and an allocated claim never load the allocator or the
scheduler's filters; a pending pod loads them, and Karpenter's overlay evaluation only when no
node can take its claims (the proposals). Each row also names what must load, so the check is
seen to see."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ("--snapshot", "examples/cluster")
ALLOCATOR = "kubectl_dra.allocation.allocator"
FILTERS = "kubectl_dra.scheduling.framework"
OVERLAYS = "kubectl_dra.overlays.explain"


def loaded(*args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    code = f"import sys; from kubectl_dra.cli import main; sys.argv = {['kubectl-dra', *args]!r}; main()"
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    return done, {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.parametrize("args, code, loads, never", [
    # a usage error the flags decide: click only, nothing read (the check runs before the command's module)
    (("explain", "claim", *SNAPSHOT), 2, {"kubectl_dra.flags.catalog"},  # (imported by cli/explain.py only)
     {"pydantic", "kubectl_dra.commands.explain_claim", "kubectl_dra.model.claim"}),
    (("explain", "pod", "embedder", "-n", "ml", *SNAPSHOT), 0, {"kubectl_dra.pods.explain"},
     {ALLOCATOR, FILTERS, "kubectl_dra.scheduling.explain", OVERLAYS}),
    (("explain", "claim", "embedder-gpu-qfx82", "-n", "ml", *SNAPSHOT), 0, {"kubectl_dra.claims.explain"},
     {ALLOCATOR, FILTERS, "kubectl_dra.scheduling.explain", OVERLAYS}),
    # pending, and its claim fits worker-cpu-1: no proposals asked, so no overlay evaluation
    (("explain", "pod", "feature-store", "-n", "ml", *SNAPSHOT), 0, {ALLOCATOR, FILTERS}, {OVERLAYS}),
    # pending, and no node can take its claim: would a node Karpenter launches fit?
    (("explain", "pod", "llm-70b", "-n", "ml", *SNAPSHOT), 0, {ALLOCATOR, FILTERS, OVERLAYS}, set()),
    (("explain", "pod", "llm-70b", "-n", "ml", "--node", "worker-gpu-2", *SNAPSHOT), 0, {ALLOCATOR, FILTERS},
     {OVERLAYS}),  # --node asks about that node only: no proposals
    (("explain", "claim", "batch-embed-gpus", "-n", "ml", *SNAPSHOT), 0, {ALLOCATOR}, {OVERLAYS}),
])
def test_explain_loads_what_its_answer_needs(args, code, loads, never):
    done, names = loaded(*args)
    assert done.returncode == code, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert loads <= names, sorted(loads - names)
    assert sorted(n for n in names for m in never if n == m or n.startswith(m + ".")) == []
