"""The two boots of the node tier (conftest.py) and what `kubectl dra` and the agent are told about
each: what a user would pass, the rest they find out from the Node and the node's own files."""

from __future__ import annotations

from realnode import KubeletSettings

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
