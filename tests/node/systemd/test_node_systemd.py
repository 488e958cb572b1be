"""The second boot: the host's systemd as the guest's PID 1 and the systemd cgroup driver (kubelet
and runc both through systemd's D-Bus API), the CPU manager's none policy, the MemoryQoS gate with
the kubelet's defaults (reservation policy None, no throttling factor), and containerd applying
container hugepage limits (disable_hugetlb_controller = false). The same pods as on the cgroupfs
node; each predicted file is what the node wrote, and the agent on it says Match."""

from __future__ import annotations

import pytest
from boots import SYSTEMD_AGENT_FLAGS, SYSTEMD_FLAGS
from nodecheck import claim_findings, divergences, prediction_against_the_node, running_cgroups, explain, scan, verdicts

import matrix

MI = 1 << 20
FACTS = {
    ("odd-memory", "pod", "cpu.max"): "34000 100000",  # systemd rounds 33300 up to 10 ms per second
    ("odd-memory", "app", "cpu.max"): "34000 100000",
    ("burstable", "pod", "cpu.max"): "75000 100000",  # already a multiple: unchanged
    ("guaranteed", "app", "hugetlb.2MB.max"): str(8 * MI),  # containerd applies container limits now
    ("guaranteed", "app", "hugetlb.2MB.rsvd.max"): str(8 * MI),
    ("guaranteed", "app", "hugetlb.1GB.max"): "0",  # sizes not requested: 0
    ("hugepages-1g", "app", "hugetlb.1GB.max"): str(1 << 30),
    ("dra-two-claims", "main", "hugetlb.2MB.max"): str(4 * MI),  # DRA huge pages reach the container
    ("dra-two-claims", "side", "hugetlb.2MB.max"): str(4 * MI),
    ("exclusive", "pinned", "cpu.max"): "100000 100000",  # policy none: no exclusive CPUs, quota kept
    ("burstable", "app", "memory.min"): "0",  # reservation policy None: no protection
    ("burstable", "app", "memory.low"): "0",
}
PODS = [p["metadata"]["name"] for p in matrix.pods()]


@pytest.mark.parametrize("name", PODS)
def test_every_predicted_file_is_what_systemd_the_kubelet_and_runc_wrote(systemd_node, dra, name):
    compared = prediction_against_the_node(dra, systemd_node, name, SYSTEMD_FLAGS, "systemd")
    facts = {key: value for key, value in FACTS.items() if key[0] == name}
    assert {key: compared.get(key) for key in facts} == facts


def test_paths_are_systemd_slices_and_scopes(systemd_node, dra):
    doc = explain(dra, systemd_node, "burstable", *SYSTEMD_FLAGS)
    uid = systemd_node.pods["burstable"]["metadata"]["uid"].replace("-", "_")
    assert doc["cgroups"]["pod"]["path"] == (f"kubepods.slice/kubepods-burstable.slice/"
                                             f"kubepods-burstable-pod{uid}.slice")
    container = doc["cgroups"]["containers"][0]["path"]
    assert container.startswith(doc["cgroups"]["pod"]["path"] + "/cri-containerd-") and container.endswith(".scope")


def test_memory_qos_with_the_kubelets_defaults_sets_no_memory_high(systemd_node, dra):
    """MemoryQoS on, memoryThrottlingFactor unset (the 1.37 default): the kubelet writes memory.min
    and memory.low 0 and no memory.high, so every container and pod reads max."""
    node = systemd_node.node
    for name, pod in systemd_node.pods.items():
        doc = explain(dra, systemd_node, name, *SYSTEMD_FLAGS)
        for label, cgroup in running_cgroups(doc, pod):
            assert "memory.high" not in cgroup["files"], (name, label)
            assert node.cgroup_files(cgroup["path"], ["memory.high"])["memory.high"] == "max", (name, label)


def test_scan_once_on_the_systemd_node_says_match_for_every_pod(systemd_node):
    rc, doc, stderr = scan(systemd_node, *SYSTEMD_AGENT_FLAGS)
    assert rc == 0, stderr
    assert verdicts(doc) == {name: "Match" for name in PODS}
    assert divergences(doc) == [] and claim_findings(doc) == []
    options, source = doc["status"]["nodeOptions"], doc["status"]["nodeOptionsSource"]
    assert (options["cgroupDriver"], source["cgroupDriver"]) == ("systemd", "cgroup tree")
    assert (options["runtimeHugetlb"], source["runtimeHugetlb"]) == (True, "cgroup tree")
    assert options["cpuManagerPolicy"] == "none" and source["cpuManagerPolicy"].startswith(
        "/var/lib/kubelet/cpu_manager_state")
    assert len(doc["status"]["claims"]) == matrix.CLAIMS
