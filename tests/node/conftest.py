"""The node tier: a real kubelet v1.37.2, containerd 2.4.2 and runc 1.5.2 on a real cgroup v2 kernel
(a qemu VM, vm.py), joined to a real control plane (tests/cluster/controlplane.py), with a real DRA
kubelet plugin. Every node-side verdict of the project is checked against what they really do.

Two boots share one control plane, one after the other (2 cores: running both at once is no faster):
- ``cgroupfs_node``: our init as PID 1, /var/lib on a disk (it reboots), the cgroupfs driver, the
  static CPU manager (one reserved CPU), Memory QoS with TieredReservation and throttling factor 0.9, containerd's default hugetlb
  setting (container limits not applied). The fault tests run last on it.
- ``systemd_node``: the host's systemd as the guest's PID 1, the systemd driver, the CPU manager's
  none policy, the MemoryQoS gate with the kubelet's defaults, containerd applying container hugepage
  limits (disable_hugetlb_controller = false).
Both run the pods of matrix.py. Skipped with one reason when the binaries are missing
(scripts/build-node); ``KUBECTL_DRA_REQUIRE_NODE=1`` (set by .ci/run) makes that a failure instead.
On a failure, the end of every node log (console, containerd, kubelet, plugin, agent) is attached
to the report; the whole run directory stays under pytest's basetemp.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "cluster")]

from controlplane import BIN, ControlPlane, binaries_present  # noqa: E402
from boots import AGENT_NAMESPACE, CGROUPFS, CGROUPFS_KUBELET, SERVICE_CIDR, SYSTEMD, SYSTEMD_KUBELET  # noqa: E402
from realnode import ContainerdSettings, RealNode  # noqa: E402
from vm import NODE as NODE_CACHE, node_binaries_present  # noqa: E402

import matrix  # noqa: E402

REQUIRED = os.environ.get("KUBECTL_DRA_REQUIRE_NODE") == "1"
# the order the tier runs in: everything on the cgroupfs boot, its faults last, then the systemd boot
ORDER = ("test_node_prediction", "test_node_agent", "test_node_state", "test_node_faults", "test_node_daemonset",
         "test_node_systemd")

def pytest_collection_modifyitems(config, items):
    ours = [i for i in items if "tests/node/" in str(i.fspath).replace(os.sep, "/")]
    if not ours:
        return
    missing = [what for what, ok in (("control plane", binaries_present()), ("node", node_binaries_present())) if not ok]
    if missing and not REQUIRED:
        reason = (f"{' and '.join(missing)} binaries not built (scripts/build-control-plane, scripts/build-node; "
                  f"they need Go, apt-get and the module proxy): see {BIN.parent}")
        for item in ours:
            item.add_marker(pytest.mark.skip(reason=reason))
    rank = {name: i for i, name in enumerate(ORDER)}
    positions = sorted(items.index(i) for i in ours)
    ordered = sorted(ours, key=lambda i: (rank.get(Path(str(i.fspath)).stem, len(ORDER)), positions[ours.index(i)]))
    for position, item in zip(positions, ordered):
        items[position] = item


BOOTED: dict[str, "Booted"] = {}  # every boot of this run (also for the terminal summary)


class Nodes:
    """At most one node VM at a time; asking for the other boot stops the first."""

    def __init__(self, plane: ControlPlane, workdir: Path):
        self.plane, self.workdir = plane, workdir
        self.current: RealNode | None = None

    def boot(self, name: str, make) -> "Booted":
        if name in BOOTED and self.current is BOOTED[name].node:
            return BOOTED[name]
        if name in BOOTED:
            pytest.fail(f"node {name} was already booted and stopped in this run; the tier's order is {ORDER}")
        self.stop()
        node = make()
        self.current = node
        try:
            node.boot()
        except BaseException:
            self.stop()
            raise
        BOOTED[name] = Booted(node)
        return BOOTED[name]

    def stop(self) -> None:
        """Stop the VM and forget its node: its Node object, and the matrix's pods and claims, which
        no kubelet will ever finish (the next boot creates them again, for itself)."""
        if self.current is not None:
            self.current.stop()
            kubectl = self.plane.kubectl
            kubectl("delete", "pods", "--all", "-n", matrix.NAMESPACE, "--force", "--grace-period=0", check=False)
            kubectl("delete", "namespace", matrix.NAMESPACE, "--ignore-not-found", "--timeout=180s", check=False)
            kubectl("delete", "node", self.current.name, "--ignore-not-found", check=False)
            self.current = None


class Booted:
    """A booted node with the matrix's pods running and the agent's identity on it."""

    def __init__(self, node: RealNode):
        self.node = node
        self.plane = node.plane
        began = time.monotonic()
        node.apply(matrix.objects())
        self.pods = node.wait_pods(matrix.NAMESPACE, [p["metadata"]["name"] for p in matrix.pods()])
        node.timings["matrix"] = time.monotonic() - began
        self.agent_kubeconfig = node.write_agent_kubeconfig(AGENT_NAMESPACE, "dra-node-agent")
        self.user_kubeconfig = str(self.plane.kubeconfig(node.host_dir / "user.kubeconfig"))

    def refresh(self) -> None:
        self.pods = self.node.wait_pods(matrix.NAMESPACE, [p["metadata"]["name"] for p in matrix.pods()])


def pytest_terminal_summary(terminalreporter):
    """Each boot's timings (seconds from qemu's start): VM up, containerd with the images, the Node
    Ready, the plugin's slice published, then the matrix's pods Running."""
    for name, booted in BOOTED.items():
        t = booted.node.timings
        terminalreporter.write_line(
            f"node tier {name}: guest up {t.get('vm', 0):.0f}s, containerd {t.get('containerd', 0):.0f}s, "
            f"Ready {t.get('ready', 0):.0f}s, slice {t.get('slices', 0):.0f}s; {len(matrix.pods())} pods Running "
            f"{t.get('matrix', 0):.0f}s later")
        standard = {"vm", "containerd", "ready", "slices", "matrix"}
        for what, seconds in booted.node.timings.items():
            if what not in standard:
                terminalreporter.write_line(f"node tier {name}: {what} {seconds:.0f}s")
        for what, value in getattr(booted.node, "measured", {}).items():
            terminalreporter.write_line(f"node tier {name}: agent with 60 pods: {what} {value:.1f}")


@pytest.fixture(scope="session")
def node_plane(tmp_path_factory):
    if not binaries_present():
        pytest.fail(f"KUBECTL_DRA_REQUIRE_NODE=1 but the control plane binaries are missing in {BIN}")
    if not node_binaries_present():
        pytest.fail(f"KUBECTL_DRA_REQUIRE_NODE=1 but the node's binaries are missing in {NODE_CACHE} (scripts/build-node)")
    plane = ControlPlane(tmp_path_factory.mktemp("node-plane"), scheduler=True, controllers=True, node_lifecycle=True,
                         extra_tokens=(RealNode.token_for(CGROUPFS), RealNode.token_for(SYSTEMD)),
                         service_accounts=True, service_cidr=SERVICE_CIDR).start()
    try:
        root = HERE.parents[1] / "manifests" / "agent"
        for part in ("namespace.yaml", "crd.yaml", "rbac.yaml"):  # the agent's identity, as shipped
            plane.kubectl("apply", "-f", str(root / part))
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def nodes(node_plane, tmp_path_factory):
    manager = Nodes(node_plane, tmp_path_factory.mktemp("nodes"))
    yield manager
    manager.stop()


@pytest.fixture(scope="session")
def cgroupfs_node(nodes) -> Booted:
    return nodes.boot(CGROUPFS, lambda: RealNode(nodes.plane, nodes.workdir / CGROUPFS, CGROUPFS, mode="cgroupfs",
                                                 kubelet=CGROUPFS_KUBELET, containerd=ContainerdSettings(),
                                                 devices=matrix.devices(), disk=True))


@pytest.fixture(scope="session")
def systemd_node(nodes) -> Booted:
    return nodes.boot(SYSTEMD, lambda: RealNode(nodes.plane, nodes.workdir / SYSTEMD, SYSTEMD, mode="systemd",
                                                kubelet=SYSTEMD_KUBELET,
                                                containerd=ContainerdSettings(systemd_cgroup=True,
                                                                              hugetlb_controller=True),
                                                devices=matrix.devices()))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed or "tests/node/" not in str(item.fspath).replace(os.sep, "/"):
        return
    manager = item.funcargs.get("nodes") or _manager(item)
    if manager is not None and manager.current is not None and manager.current.vm is not None:
        vm = manager.current.vm
        report.sections.append(("node logs", f"run directory: {vm.workdir}\n{vm.tail(60)}"))


def _manager(item):
    for name in ("cgroupfs_node", "systemd_node"):
        booted = item.funcargs.get(name)
        if booted is not None:
            return _Single(booted.node)
    return None


class _Single:
    def __init__(self, node):
        self.current = node
