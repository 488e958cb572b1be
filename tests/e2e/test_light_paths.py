"""A command pays only for what it prints (issue 13): the plain ``claims`` list reads ResourceClaims
and nothing else, and a fresh interpreter running it never imports (so never builds the view classes
of) pods, the claim explanation or the allocator. ``-o wide`` does read pods and explain each claim,
which shows the check can see it, and still leaves the allocator alone while no claim waits."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from builders import small_cluster
from startup_paths import PATHS

PROBE = """
import json, sys
from kubectl_dra.cli import main
sys.argv = ["kubectl-dra", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    code = exc.code
sys.stderr.write("\\nMODULES " + json.dumps(sorted(m for m in sys.modules if m.startswith("kubectl_dra"))) + "\\n")
"""
HEAVY = set(PATHS["light"].avoids)  # pods, slices, classes, taint rules, Karpenter, the explanation, the allocator


def imported(kubeconfig: str, *args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True,
                          env={**os.environ, "KUBECONFIG": kubeconfig}, timeout=60)
    line = [l for l in done.stderr.splitlines() if l.startswith("MODULES ")][-1]
    return done, set(json.loads(line.removeprefix("MODULES ")))


@pytest.fixture
def cluster(make_apiserver, kubeconfig_for):
    server = make_apiserver(small_cluster())
    return server, str(kubeconfig_for(server, namespace="ml"))


def test_plain_claims_list_reads_and_builds_claims_only(cluster):
    server, kubeconfig = cluster
    done, modules = imported(kubeconfig, "claims", "-A")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 4  # header + the small cluster's three claims
    assert sorted(modules & HEAVY) == []
    assert {r.resource for r in server.requests if r.resource} == {"resourceclaims"}


def test_wide_claims_list_reads_what_its_columns_need(cluster):
    server, kubeconfig = cluster
    done, modules = imported(kubeconfig, "claims", "-A", "-o", "wide")
    assert done.returncode == 0, done.stderr
    assert {"kubectl_dra.model.pod", "kubectl_dra.claims.explain"} <= modules
    # no claim waits for an allocation here: the allocator (and CEL) stay unloaded
    assert not {"kubectl_dra.allocation.allocator", "kubectl_dra.allocation.cel"} & modules
    assert {"resourceclaims", "pods", "resourceslices"} <= {r.resource for r in server.requests if r.resource}
