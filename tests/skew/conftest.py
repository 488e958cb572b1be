"""The skew tier: the same objects and questions as the cluster tier, against the kube-apiserver
and kube-scheduler of each older minor people run (k8s_build.SKEW_VERSIONS, built by
scripts/build-skew), each started with its own defaults (no feature gates, no runtime-config).

One control plane per version, started once and stopped before the next version's starts (a
parametrized session fixture: pytest runs every test of one version, then the next).
``KUBECTL_DRA_REQUIRE_CONTROL_PLANE=1`` (CI) turns missing binaries into failures.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "cluster"))

from controlplane import BIN, ControlPlane  # noqa: E402
from k8s_build import SKEW_VERSIONS, bin_of  # noqa: E402

REQUIRED = os.environ.get("KUBECTL_DRA_REQUIRE_CONTROL_PLANE") == "1"
NEEDED = ("kube-apiserver", "kube-scheduler")


def built(version: str) -> bool:
    return all((bin_of(version) / name).is_file() for name in NEEDED) and (BIN / "etcd").is_file()


def pytest_collection_modifyitems(config, items):
    if REQUIRED:  # required and missing: the fixture fails each test
        return
    for item in items:
        version = getattr(getattr(item, "callspec", None), "params", {}).get("skew_version")
        if "tests/skew/" in str(item.fspath).replace(os.sep, "/") and version and not built(version):
            item.add_marker(pytest.mark.skip(reason=f"kube-apiserver {version} not built in {bin_of(version)} "
                                                    "(scripts/build-skew needs Go)"))


@pytest.fixture(scope="session", params=SKEW_VERSIONS)
def skew_version(request) -> str:
    """The older release a test runs against (every test of one release runs before the next's)."""
    version = request.param
    if not built(version):
        pytest.fail(f"KUBECTL_DRA_REQUIRE_CONTROL_PLANE=1 but {', '.join(NEEDED)} {version} are missing in "
                    f"{bin_of(version)} (scripts/build-skew)")
    return version


@pytest.fixture(scope="module")
def skew_plane(skew_version, tmp_path_factory):
    """etcd (1.37.2's) and the release's kube-apiserver with its defaults: objects stay as written."""
    plane = ControlPlane(tmp_path_factory.mktemp(f"skew-{skew_version}"), version=skew_version,
                         defaults=True).start()
    yield plane
    plane.stop()


@pytest.fixture(scope="module")
def skew_scheduling(skew_version, tmp_path_factory):
    """The same with the release's kube-scheduler (its default profile), for the scheduler's own words."""
    plane = ControlPlane(tmp_path_factory.mktemp(f"skew-scheduler-{skew_version}"), version=skew_version,
                         defaults=True, scheduler=True).start()
    yield plane
    plane.stop()
