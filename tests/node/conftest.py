"""The node tier: a real kubelet v1.37.2, containerd 2.4.2 and runc 1.5.2 on a real cgroup v2 kernel
(a qemu VM, vm.py), joined to a real control plane (tests/cluster/controlplane.py), with a real DRA
kubelet plugin (testbed/draplugin). Every node-side verdict of the project is checked against what
they really do.

Fixtures, for the whole run:
- ``node_plane``: the control plane the nodes join, with the agent's namespace, CRD and RBAC as
  shipped (manifests/agent);
- ``agent_images``: this checkout's agent image and the previous release's (``scripts/build-image``
  and ``scripts/build-image --previous``), pushed to ``registry``, an image registry on loopback
  that the nodes pull from as a cluster's nodes do.
Each boot is a package with its own fixture, up for that package's tests and stopped after them:
``cgroupfs/`` (``cgroupfs_node``, and the agent deployed there) and ``systemd/`` (``systemd_node``).

Skipped with one reason when the binaries or tools are missing (scripts/build-node, build-image);
``KUBECTL_DRA_REQUIRE_NODE=1`` (set by .ci/run) makes that a failure instead. On a failure, the end
of every log of the nodes up at the time (console, containerd, kubelet, plugin) is attached to the
report; the run directory stays under pytest's basetemp. The summary prints each step's time.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE), str(HERE.parent / "cluster"), str(ROOT / "scripts")]

import releases  # noqa: E402
from boots import BOOTED, RUNNING, SERVICE_CIDR, CGROUPFS, SYSTEMD  # noqa: E402
from controlplane import BIN, ControlPlane, binaries_present  # noqa: E402
from k8s_build import CACHE  # noqa: E402
from realnode import RealNode  # noqa: E402
from registry import PUSHED, Registry, tools_present  # noqa: E402
from vm import NODE as NODE_CACHE, node_binaries_present  # noqa: E402

REQUIRED = os.environ.get("KUBECTL_DRA_REQUIRE_NODE") == "1"
IMAGE_CACHE = CACHE.parent / "image"
REPOSITORY = "kubectl-dra-node-agent"


def unavailable(reason: str):
    if REQUIRED:
        pytest.fail(f"KUBECTL_DRA_REQUIRE_NODE=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def node_plane(tmp_path_factory):
    if not binaries_present():
        unavailable(f"the control plane binaries are missing in {BIN} (scripts/build-control-plane)")
    if not node_binaries_present():
        unavailable(f"the node's binaries are missing in {NODE_CACHE} (scripts/build-node: Go, apt-get, root)")
    plane = ControlPlane(tmp_path_factory.mktemp("node-plane"), scheduler=True, controllers=True, node_lifecycle=True,
                         extra_tokens=(RealNode.token_for(CGROUPFS), RealNode.token_for(SYSTEMD)),
                         service_accounts=True, service_cidr=SERVICE_CIDR).start()
    try:
        for part in ("namespace.yaml", "crd.yaml", "rbac.yaml"):  # the agent's identity, as shipped
            plane.kubectl("apply", "-f", str(ROOT / "manifests" / "agent" / part))
        yield plane
    finally:
        plane.stop()


@dataclass(frozen=True)
class AgentImages:
    """The agent images in the registry, as the node pulls them (``registry.HOST/...``)."""

    current: str  # this checkout's, tagged with its version
    current_digest: str  # what scripts/build-image printed: the kubelet reports it as the imageID
    previous: str  # the previous release's, built from its recorded commit by that commit's own script
    previous_digest: str
    previous_release: releases.Release
    repository: str  # the registry's name for the image, without tag (a kustomize images: newName)


@pytest.fixture(scope="session")
def registry(tmp_path_factory):
    if not tools_present():
        unavailable("docker-registry or skopeo is missing (scripts/build-node installs them)")
    server = Registry(tmp_path_factory.mktemp("registry")).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def agent_images(registry) -> AgentImages:
    from oci_image import manifest_digest
    from registry import HOST

    version = releases.current_version()
    previous = releases.previous()
    current_tar = IMAGE_CACHE / f"dra-node-agent-{version}.tar"
    previous_tar = IMAGE_CACHE / f"dra-node-agent-{previous.version}-{previous.commit[:12]}.tar"
    for tarball, how in ((current_tar, "scripts/build-image"), (previous_tar, "scripts/build-image --previous")):
        if not tarball.is_file():
            unavailable(f"{tarball} is missing ({how} makes it)")
    return AgentImages(current=registry.push(current_tar, REPOSITORY, version),
                       current_digest=manifest_digest(current_tar),
                       previous=registry.push(previous_tar, REPOSITORY, previous.version),
                       previous_digest=manifest_digest(previous_tar), previous_release=previous,
                       repository=f"{HOST}/{REPOSITORY}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "teardown" or not report.failed or not RUNNING:
        return
    if "tests/node/" not in str(item.path).replace(os.sep, "/"):
        return
    for node in RUNNING:
        if node.vm is not None:
            report.sections.append((f"node {node.name} logs", f"run directory: {node.vm.workdir}\n{node.vm.tail(60)}"))


def pytest_terminal_summary(terminalreporter):
    """Each boot's timings (seconds from qemu's start: guest up, containerd with the test images, the
    Node Ready, the plugin's slice, then the matrix's pods Running), then every other step timed."""
    for image, seconds in PUSHED.items():
        terminalreporter.write_line(f"node tier: {image} pushed to the registry in {seconds:.1f}s")
    for booted in BOOTED:
        t, name = booted.node.timings, booted.node.name
        terminalreporter.write_line(
            f"node tier {name}: guest up {t.get('vm', 0):.0f}s, containerd {t.get('containerd', 0):.0f}s, "
            f"Ready {t.get('ready', 0):.0f}s, slice {t.get('slices', 0):.0f}s; pods Running {t.get('matrix', 0):.0f}s later")
        standard = {"vm", "containerd", "ready", "slices", "matrix"}
        for what, seconds in t.items():
            if what not in standard:
                terminalreporter.write_line(f"node tier {name}: {what} {seconds:.1f}s")
        for what, value in booted.measured.items():
            terminalreporter.write_line(f"node tier {name}: {what} {value:.2f}")
