"""The cluster tier: tests against a real control plane (see controlplane.py).

Skipped with one reason when the binaries are missing (scripts/test builds them when Go is
there); ``KUBECTL_DRA_REQUIRE_CONTROL_PLANE=1`` (set by .ci/run) makes that a failure instead,
so CI can never silently lose the tier.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from clusterobjects import SHORT_FILTER  # noqa: E402
from controlplane import BIN, ControlPlane, binaries_present, started  # noqa: E402

REQUIRED = os.environ.get("KUBECTL_DRA_REQUIRE_CONTROL_PLANE") == "1"


def pytest_collection_modifyitems(config, items):
    if binaries_present() or REQUIRED:  # required and missing: the fixtures fail each test
        return
    reason = f"control plane binaries not built in {BIN} (scripts/build-control-plane needs Go)"
    for item in items:
        if "tests/cluster/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.skip(reason=reason))


def _start(tmp_path_factory, name: str, **components) -> ControlPlane:
    return started(tmp_path_factory.mktemp(name), **components)


@pytest.fixture(scope="session")
def apiserver_only(tmp_path_factory):
    """etcd + kube-apiserver: objects stay exactly as written (no controller rewrites them)."""
    plane = _start(tmp_path_factory, "apiserver")
    yield plane
    plane.stop()


@pytest.fixture(scope="session")
def full_cluster(tmp_path_factory):
    """etcd + kube-apiserver + kube-scheduler (its default profile, and SHORT_FILTER) +
    kube-controller-manager, nodes without kubelets."""
    plane = _start(tmp_path_factory, "cluster", scheduler=True, controllers=True, scheduler_profiles=(SHORT_FILTER,))
    yield plane
    plane.stop()


@pytest.fixture
def fresh_apiserver(tmp_path_factory):
    """A control plane of its own for one test (etcd + kube-apiserver), stopped afterwards."""
    planes = []

    def start(name: str = "fresh", **components) -> ControlPlane:
        plane = _start(tmp_path_factory, name, **components)
        planes.append(plane)
        return plane

    yield start
    for plane in planes:
        plane.stop()


@pytest.fixture(scope="session")
def example_cluster(apiserver_only, tmp_path_factory):
    """The example cluster (examples/cluster) loaded into the real API server, as written, and a
    user's kubeconfig for it (namespace ml)."""
    from loader import load
    from test_real_objects import EXAMPLE, crds, raw_objects

    load(apiserver_only, crds() + raw_objects(EXAMPLE))
    kubeconfig = apiserver_only.kubeconfig(tmp_path_factory.mktemp("user") / "kubeconfig", namespace="ml")
    return apiserver_only, str(kubeconfig)
