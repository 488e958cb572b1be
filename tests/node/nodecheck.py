"""What the node tier asks of a booted node, in the words of its tests.

``kernel_reads`` is the only tolerance: what a cgroup v2 file reads after a value is written to it
(docs/kubernetes/kubelet-cgroups.md §3.4, each rule seen on the real node here): memory files keep whole 4 KiB
pages, hugetlb files whole huge pages, and under the systemd driver a CFS quota is rounded up to
10 ms per second (CPUQuotaPerSecUSec). It is written here, apart from the product's own comparison,
so that a wrong product rule cannot agree with itself.
"""

from __future__ import annotations

import json
import re
from contextlib import contextmanager

PAGE = 4096
HUGE = {"2MB": 2 << 20, "1GB": 1 << 30}


def kernel_reads(file: str, written: str, driver: str) -> str:
    if written == "max" or not re.fullmatch(r"\d+( \d+)?", written):
        return written
    if file.startswith("memory."):
        return str(int(written) // PAGE * PAGE)
    match = re.fullmatch(r"hugetlb\.(\w+?)\.(rsvd\.)?max", file)
    if match:
        size = HUGE[match.group(1)]
        return str(int(written) // size * size)
    if file == "cpu.max" and driver == "systemd":
        quota, period = map(int, written.split())
        per_second = -(-quota * 1_000_000 // period)
        rounded = -(-per_second // 10_000) * 10_000
        return f"{rounded * period // 1_000_000} {period}"
    return written


def explain(dra, booted, name: str, *flags: str) -> dict:
    """``kubectl dra explain pod NAME -o json`` on the host, as a user with a kubeconfig runs it."""
    result = dra("explain", "pod", name, "-n", "matrix", "--kubeconfig", booted.user_kubeconfig, "-o", "json", *flags)
    assert result.exit_code == 0, result
    return result.json()


def running_cgroups(doc: dict, pod: dict) -> list[tuple[str, dict]]:
    """The pod cgroup and every container cgroup that exists now (a finished init container has none)."""
    running = {s["name"] for s in (*pod["status"].get("containerStatuses", []),
                                   *pod["status"].get("initContainerStatuses", [])) if "running" in s["state"]}
    return [("pod", doc["cgroups"]["pod"])] + [(c["name"], c) for c in doc["cgroups"]["containers"]
                                                if c["name"] in running]


def prediction_against_the_node(dra, booted, name: str, flags: tuple[str, ...], driver: str) -> dict:
    """Every file ``explain pod`` predicts for pod NAME, asserted equal to what the node holds (as the
    kernel reads it back); returns {(pod, cgroup, file): the value read} for scenario checks."""
    node, pod = booted.node, booted.pods[name]
    doc = explain(dra, booted, name, *flags)
    assert doc["pod"]["uid"] == pod["metadata"]["uid"] and doc["pod"]["node"] == node.name
    compared = {}
    cgroups = running_cgroups(doc, pod)
    for label, cgroup in cgroups:
        real = node.cgroup_files(cgroup["path"], list(cgroup["files"]))
        for file, predicted in cgroup["files"].items():
            compared[(name, label, file)] = real[file]
            assert real[file] == kernel_reads(file, predicted, driver), (
                f"{label} {cgroup['path']}/{file}: predicted {predicted}, the node wrote {real[file]}")
    assert len(compared) >= 7 * len(cgroups)  # cpu, memory and four hugetlb files each, at least
    return compared


def scan(booted, *flags: str) -> tuple[int, dict, str]:
    """``dra-node-agent scan --once -o json`` inside the node, with the agent's own identity."""
    node = booted.node
    result = node.agent("scan", "--once", "--kubeconfig", booted.agent_kubeconfig, "--node", node.name, "-o", "json",
                        *flags)
    doc = json.loads(result["stdout"]) if result["stdout"].strip() else {}
    return result["rc"], doc, result["stderr"]


def verdicts(doc: dict) -> dict[str, str]:
    return {p["name"]: p["verdict"] for p in doc["status"]["pods"]}


def divergences(doc: dict, severities=("error", "warning")) -> list[tuple]:
    return sorted((p["name"], d["scope"], d.get("container"), d["file"], d["cause"])
                  for p in doc["status"]["pods"] for d in p["divergences"] if d["severity"] in severities)


def claim_findings(doc: dict) -> list[tuple[str, str, str]]:
    return sorted((c["name"], f["code"], f["severity"]) for c in doc["status"].get("claims", [])
                  for f in c["findings"])


def container_cgroup(pod: dict, container: str) -> str:
    """A running container's cgroup on the cgroupfs node (containerd's ID as the directory name)."""
    status = next(s for s in pod["status"]["containerStatuses"] if s["name"] == container)
    qos = pod["status"]["qosClass"].lower()
    parent = "kubepods" if qos == "guaranteed" else f"kubepods/{qos}"
    return f"/sys/fs/cgroup/{parent}/pod{pod['metadata']['uid']}/{status['containerID'].split('//')[1]}"


MI = 1 << 20


@contextmanager
def planted_divergence(booted, pod_name: str = "burstable", container: str = "app"):
    """A container's memory.max rewritten behind the kubelet's back (300Mi), put back afterwards."""
    path = container_cgroup(booted.pods[pod_name], container) + "/memory.max"
    vm = booted.node.vm
    before = vm.read(path)[path].strip()
    vm.write(path, str(300 * MI))
    try:
        yield path
    finally:
        vm.write(path, before)


def diverged_on(doc: dict, pod_name: str = "burstable") -> bool:
    """That pod Diverged with exactly the planted divergence."""
    return verdicts(doc).get(pod_name) == "Diverged" and \
        [d for d in divergences(doc) if d[0] == pod_name] == [(pod_name, "container", "app", "memory.max", "Unexplained")]
