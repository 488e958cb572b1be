"""The node tier's two boots, what `kubectl dra` and the agent are told about each (what a user would
pass; the rest they find out from the Node and the node's own files), and how a boot is brought up
with the matrix's pods Running and torn down again.

- ``kdra-cgroupfs``: our init as PID 1, /var/lib on a disk (it reboots), the cgroupfs driver, the
  static CPU manager (one reserved CPU), Memory QoS with TieredReservation and throttling factor 0.9,
  containerd's default hugetlb setting (container limits not applied).
- ``kdra-systemd``: the host's systemd as the guest's PID 1, the systemd driver, the CPU manager's
  none policy, the MemoryQoS gate with the kubelet's defaults, containerd applying container hugepage
  limits (disable_hugetlb_controller = false).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import matrix
from realnode import ContainerdSettings, KubeletSettings, RealNode

CGROUPFS, SYSTEMD = "kdra-cgroupfs", "kdra-systemd"
AGENT_NAMESPACE = "kubectl-dra-system"
# The kubernetes Service's ClusterIP (the range's first address, 10.0.2.97) lies in qemu's user
# network, where the VM forwards it to the API server: pods' in-cluster clients work without kube-proxy.
SERVICE_CIDR = "10.0.2.96/28"

CGROUPFS_KUBELET = KubeletSettings(
    cgroup_driver="cgroupfs", cpu_manager_policy="static", reserved_cpus="0",
    gates=(("DRANodeAllocatableResources", True), ("MemoryQoS", True)),
    extra=(("memoryReservationPolicy", "TieredReservation"), ("memoryThrottlingFactor", 0.9)))
# what `kubectl dra` and the agent need to be told about that kubelet (the rest they find out)
CGROUPFS_FLAGS = ("--cgroup-driver", "cgroupfs", "--cpu-manager-policy", "static", "--memory-qos", "tiered",
                  "--memory-throttling-factor", "0.9")
# the agent reads the driver from the tree and the policy from cpu_manager_state; Memory QoS it is told
CGROUPFS_AGENT_FLAGS = CGROUPFS_FLAGS[4:]
SYSTEMD_KUBELET = KubeletSettings(cgroup_driver="systemd",
                                  gates=(("DRANodeAllocatableResources", True), ("MemoryQoS", True)))
SYSTEMD_FLAGS = ("--cgroup-driver", "systemd", "--runtime-hugetlb", "on", "--memory-qos", "none")
SYSTEMD_AGENT_FLAGS = SYSTEMD_FLAGS[4:]  # the agent finds the driver and containerd's setting in the tree

RUNNING: list[RealNode] = []  # nodes up now (their logs go into a failing test's report)
BOOTED: list["Booted"] = []  # every boot of this run (the terminal summary prints their timings)


@dataclass
class Booted:
    """A booted node with the matrix's pods Running, and the identities users and the agent have."""

    node: RealNode
    pods: dict[str, dict] = field(default_factory=dict)
    agent_kubeconfig: str = ""
    user_kubeconfig: str = ""
    measured: dict[str, float] = field(default_factory=dict)  # figures the summary prints

    @property
    def plane(self):
        return self.node.plane

    def refresh(self) -> None:
        """The matrix's pods as they are now (after a test recreated some, or the node rebooted)."""
        self.pods = self.node.wait_pods(matrix.NAMESPACE, [p["metadata"]["name"] for p in matrix.pods()])


def boot(plane, workdir: Path, name: str, *, mode: str, kubelet: KubeletSettings, containerd: ContainerdSettings,
         disk: bool = False, registry_port: int | None = None) -> Booted:
    """Start the VM, containerd, the kubelet and the driver's plugin; create the matrix's objects and
    wait for its pods to run."""
    node = RealNode(plane, workdir / name, name, mode=mode, kubelet=kubelet, containerd=containerd,
                    devices=matrix.devices(), disk=disk, registry_port=registry_port)
    RUNNING.append(node)
    try:
        node.boot()
        began = time.monotonic()
        node.apply(matrix.objects())
        booted = Booted(node)
        booted.refresh()
        node.timings["matrix"] = time.monotonic() - began
    except BaseException:
        stop(node)
        raise
    booted.agent_kubeconfig = node.write_agent_kubeconfig(AGENT_NAMESPACE, "dra-node-agent")
    booted.user_kubeconfig = str(plane.kubeconfig(node.host_dir / "user.kubeconfig"))
    BOOTED.append(booted)
    return booted


def stop(node: RealNode) -> None:
    """Stop the VM and forget the node: its Node object and the matrix's pods and claims, which no
    kubelet will finish (the next boot makes its own). What the VM cost goes into the summary."""
    if node.first_start:
        node.timings.update(node.cost())
    node.stop()
    if node in RUNNING:
        RUNNING.remove(node)
    kubectl = node.plane.kubectl
    kubectl("delete", "pods", "--all", "-n", matrix.NAMESPACE, "--force", "--grace-period=0", check=False)
    kubectl("delete", "namespace", matrix.NAMESPACE, "--ignore-not-found", "--timeout=180s", check=False)
    kubectl("delete", "node", node.name, "--ignore-not-found", check=False)
