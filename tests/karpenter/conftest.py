"""The Karpenter tier: the real Karpenter controller set (its kwok provider, sigs.k8s.io/karpenter
v1.14.1, built by scripts/build-karpenter) beside a real v1.37.2 API server, as the oracle for what
kubectl-dra says of NodeOverlays (docs/kubernetes/nodeoverlay.md §7).

Skipped with one reason when the binaries are missing; ``KUBECTL_DRA_REQUIRE_CONTROL_PLANE=1`` (set
by .ci/run) makes that a failure instead. Karpenter's log is attached to a failing test's report.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "cluster")]

import kwok  # noqa: E402
from clusterobjects import wait_for  # noqa: E402
from controlplane import binaries_present  # noqa: E402

REQUIRED = os.environ.get("KUBECTL_DRA_REQUIRE_CONTROL_PLANE") == "1"
_RUNNING: list = []


def pytest_collection_modifyitems(config, items):
    if (binaries_present() and kwok.binaries_present()) or REQUIRED:
        return
    reason = f"Karpenter's kwok provider not built in {kwok.BIN} (scripts/build-karpenter needs Go)"
    for item in items:
        if "tests/karpenter/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and _RUNNING:
        plane, proc = _RUNNING[0]
        report.sections.append(("karpenter log (last lines)", plane.tail(proc, 60)))


@pytest.fixture(scope="session")
def karpenter(tmp_path_factory):
    """(the control plane, Karpenter) with the CRDs and a KWOKNodeClass named default."""
    if not kwok.binaries_present():
        pytest.fail(f"KUBECTL_DRA_REQUIRE_CONTROL_PLANE=1 but Karpenter is not built in {kwok.BIN}")
    work = tmp_path_factory.mktemp("karpenter")
    plane = kwok.prepared_plane(work / "plane")
    try:
        proc = kwok.start(plane, work)
        _RUNNING[:] = [(plane, proc)]
        wait_for("Karpenter's nodeoverlay controller to start",
                  lambda: proc.popen.poll() is not None or b'"controller":"nodeoverlay.controller"'
                  b',"controllerGroup":"karpenter.sh","controllerKind":"NodeOverlay","worker count"'
                  in proc.log.read_bytes())
        assert proc.popen.poll() is None, plane.tail(proc)
        yield plane, proc
    finally:
        _RUNNING.clear()
        plane.stop()  # Karpenter first: it was started last
