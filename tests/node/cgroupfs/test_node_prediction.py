"""Prediction equals reality: for every pod of matrix.py on the cgroupfs node, each file that
``kubectl dra explain pod -o json`` predicts is what the real kubelet v1.37.2 and runc 1.5.2 wrote,
read from the guest's /sys/fs/cgroup, within the kernel's own rounding (nodecheck.kernel_reads).

The node: cgroupfs driver, static CPU manager with CPU 0 reserved, Memory QoS (TieredReservation,
throttling factor 0.9), containerd's default disable_hugetlb_controller = true, DRA
node-allocatable resources on. ``FACTS`` are values the real node wrote, computed by hand from the
pod specs and the formulas of docs/kubernetes/kubelet-cgroups.md; they make sure each scenario really happened (a
DRA amount that neither side added would still "match").
"""

from __future__ import annotations

import pytest
from boots import CGROUPFS_FLAGS
from nodecheck import explain, prediction_against_the_node

import matrix

MI = 1 << 20
# (pod, cgroup: "pod" or a container, file) -> what the file reads on the real node
FACTS = {
    ("burstable", "pod", "cpu.weight"): "10",  # 250m -> 256 shares -> linear (the kubelet's)
    ("burstable", "pod", "cpu.max"): "75000 100000",
    ("burstable", "pod", "memory.max"): str(192 * MI),
    ("burstable", "app", "cpu.weight"): "35",  # 256 shares -> quadratic (runc)
    ("burstable", "app", "memory.low"): str(64 * MI),  # TieredReservation: Burstable -> memory.low
    ("burstable", "app", "memory.high"): "187904000",  # 64Mi + 0.9 x (192Mi - 64Mi), whole pages
    ("guaranteed", "pod", "memory.min"): str(128 * MI),  # TieredReservation: Guaranteed -> memory.min
    ("guaranteed", "pod", "hugetlb.2MB.max"): str(8 * MI),
    ("guaranteed", "app", "hugetlb.2MB.max"): "max",  # containerd leaves container limits unset
    ("guaranteed", "app", "hugetlb.2MB.rsvd.max"): "max",
    ("besteffort", "pod", "cpu.weight"): "1",
    ("besteffort", "app", "memory.high"): None,  # 0.9 x capacity: depends on the VM's memory, not fixed
    ("odd-memory", "app", "memory.max"): "99999744",  # 100000000 in whole pages
    ("odd-memory", "app", "cpu.max"): "33300 100000",
    ("hugepages-1g", "pod", "hugetlb.1GB.max"): str(1 << 30),
    ("exclusive", "pod", "cpu.max"): "max 100000",  # a container with exclusive CPUs lifts the pod's quota
    ("exclusive", "pinned", "cpu.max"): "max 100000",
    ("exclusive", "shared", "cpu.max"): "5000 100000",
    ("pod-level", "pod", "cpu.max"): "40000 100000",
    ("pod-level", "inherits", "cpu.max"): "40000 100000",  # no limit of its own: the pod-level limit
    ("pod-level", "inherits", "memory.max"): str(160 * MI),
    ("init-sidecar", "pod", "cpu.max"): "30000 100000",  # max(main + log, setup + log) limits
    ("cpu-limit-only", "zero-request", "cpu.weight"): "1",  # an explicit request 0: 2 shares
    ("dra-mapped", "pod", "memory.max"): str(192 * MI),  # 128Mi + mapping 64Mi
    ("dra-mapped", "app", "cpu.max"): "30000 100000",  # 200m + mapping 100m
    ("dra-mapped", "pod", "cpu.weight"): "8",  # 100m + 100m -> 204 shares, linear
    ("dra-shared", "pod", "memory.max"): str(192 * MI),  # 2 x 64Mi + perPod 32Mi + 2 x perContainer 16Mi
    ("dra-shared", "a", "memory.max"): str(112 * MI),  # 64Mi + perPod 32Mi + perContainer 16Mi
    ("dra-two-claims", "pod", "memory.max"): str(280 * MI),  # 192Mi + 64Mi + 8Mi + 2 x 8Mi
    ("dra-two-claims", "pod", "hugetlb.2MB.max"): str(4 * MI),  # DRA huge pages, always added
    ("dra-two-claims", "main", "memory.max"): str(208 * MI),  # 128Mi + 64Mi + 8Mi + 8Mi
    ("dra-two-claims", "side", "memory.max"): str(80 * MI),  # 64Mi + 8Mi + 8Mi
    ("dra-extended", "pod", "memory.max"): str(128 * MI),  # example.com/gpu through DRA writes no cgroup value
    ("dra-extended", "app", "cpu.max"): "20000 100000",
}
PODS = [p["metadata"]["name"] for p in matrix.pods()]


@pytest.mark.parametrize("name", PODS)
def test_every_predicted_file_is_what_the_kubelet_and_runc_wrote(cgroupfs_node, dra, name):
    compared = prediction_against_the_node(dra, cgroupfs_node, name, CGROUPFS_FLAGS, "cgroupfs")
    facts = {key: value for key, value in FACTS.items() if key[0] == name and value is not None}
    assert {key: compared.get(key) for key in facts} == facts


def test_the_dra_amounts_come_from_the_schedulers_record(cgroupfs_node, dra):
    """The amounts the kubelet added are the scheduler's, recorded in the pod's status; explain shows
    them as recorded (not recomputed) for every claim of the pod with two claims."""
    pod = cgroupfs_node.pods["dra-two-claims"]
    recorded = {e["resourceClaimName"]: e for e in pod["status"]["nodeAllocatableResourceClaimStatuses"]}
    doc = explain(dra, cgroupfs_node, "dra-two-claims", *CGROUPFS_FLAGS)
    assert {c["name"] for c in doc["claims"]} == set(recorded)
    for claim in doc["claims"]:
        entry = recorded[claim["name"]]
        assert claim["source"] == "podStatus"
        assert sorted(claim["containers"]) == sorted(entry["containers"])
        assert claim["mapping"] == {m["name"]: m["quantity"] for m in entry.get("mapping", [])}
    assert {c["podClaimName"]: c["mapping"] for c in doc["claims"]} == {
        "cpu": {"cpu": "100m", "memory": "64Mi"}, "pages": {"hugepages-2Mi": "4Mi"}}


def test_exclusive_cpus_are_where_the_static_policy_put_them(cgroupfs_node):
    """The pinned container (Guaranteed, 1 whole CPU) got one CPU out of the shared pool; the other
    containers run on the rest (CPU 0 is reserved, so it stays shared)."""
    node, pod = cgroupfs_node.node, cgroupfs_node.pods["exclusive"]
    ids = {s["name"]: s["containerID"].split("//")[1] for s in pod["status"]["containerStatuses"]}
    base = f"kubepods/pod{pod['metadata']['uid']}"
    pinned = node.cgroup_files(f"{base}/{ids['pinned']}", ["cpuset.cpus"])["cpuset.cpus"]
    shared = node.cgroup_files(f"{base}/{ids['shared']}", ["cpuset.cpus"])["cpuset.cpus"]
    assert pinned in ("1", "2", "3")
    assert set(_cpus(shared)) == {0, 1, 2, 3} - {int(pinned)}


def _cpus(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        out += range(int(low), int(high or low) + 1)
    return out
