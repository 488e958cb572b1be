"""Detection equals reality: faults planted on the real cgroupfs node the way they happen on real
nodes. Each gives the documented verdict and cause, nothing else turns red, and each test puts the
node back as it found it. What the real kubelet does in each case is checked too, since the
findings say it (their messages quote it).

They run last on that node (conftest.ORDER): they restart the kubelet and recreate pods.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

from boots import CGROUPFS_AGENT_FLAGS, CGROUPFS_FLAGS
from nodecheck import claim_findings, container_cgroup, divergences, explain, kernel_reads, scan, verdicts
from realnode import CDI_DIR, DRIVER, KUBELET_ROOT

import matrix

MI = 1 << 20
CHECKPOINT = f"{KUBELET_ROOT}/dra_manager_state"
KUBELET_CORRUPT = ("failed to run Kubelet: create ResourceClaim cache: GetOrCreate() on checkpoint state: failed "
                   "to get checkpoint dra_manager_state: checkpoint is corrupted")


def all_match_but(doc: dict, *names: str) -> dict[str, str]:
    return {p["metadata"]["name"]: ("Diverged" if p["metadata"]["name"] in names else "Match")
            for p in matrix.pods()}


def pod_now(booted, name: str) -> dict | None:
    result = booted.plane.kubectl("get", "pod", "-n", "matrix", name, "-o", "json", check=False)
    return json.loads(result.stdout) if result.returncode == 0 else None


def claim_of(booted, pod: str, pod_claim: str = "dev") -> tuple[str, str]:
    name = next(s["resourceClaimName"] for s in booted.pods[pod]["status"]["resourceClaimStatuses"]
                if s["name"] == pod_claim)
    claim = json.loads(booted.plane.kubectl("get", "resourceclaim", "-n", "matrix", name, "-o", "json").stdout)
    return name, claim["metadata"]["uid"]


def container_id(booted, pod: str, container: str) -> str:
    status = next(s for s in booted.pods[pod]["status"]["containerStatuses"] if s["name"] == container)
    return status["containerID"].split("//")[1]


def kill(booted, pod: str, container: str) -> None:
    """The container's process dies (SIGKILL through containerd); the kubelet restarts it."""
    booted.node.ctr("tasks", "kill", "-s", "KILL", container_id(booted, pod, container))


def recreate(booted, *names: str) -> None:
    """Delete pods (their template claims go with them) and create them again from matrix.py."""
    booted.plane.kubectl("delete", "pod", "-n", "matrix", *names, "--wait=true", "--timeout=300s")
    booted.node.apply([p for p in matrix.pods() if p["metadata"]["name"] in names])
    booted.refresh()


def test_a_container_cgroup_rewritten_behind_the_kubelets_back(cgroupfs_node):
    node, pod = cgroupfs_node.node, cgroupfs_node.pods["burstable"]
    path = container_cgroup(pod, "app")
    before = node.vm.read(f"{path}/memory.max")[f"{path}/memory.max"].strip()
    node.vm.write(f"{path}/memory.max", str(300 * MI))
    try:
        rc, doc, stderr = scan(cgroupfs_node, *CGROUPFS_AGENT_FLAGS)
        assert rc == 1, stderr
        assert verdicts(doc) == all_match_but(doc, "burstable")
        assert divergences(doc) == [("burstable", "container", "app", "memory.max", "Unexplained")]
        found = next(d for p in doc["status"]["pods"] for d in p["divergences"] if d["file"] == "memory.max")
        assert (found["expected"], found["observed"]) == (before, str(300 * MI)) and claim_findings(doc) == []
    finally:
        node.vm.write(f"{path}/memory.max", before)


def test_the_drivers_cdi_spec_deleted(cgroupfs_node):
    node = cgroupfs_node.node
    claim, uid = claim_of(cgroupfs_node, "dra-shared")
    cdi_id = f"{DRIVER}/test=claim-{uid}-dev"
    spec = f"{CDI_DIR}/{DRIVER}-{uid}-dev.json"
    node.vm.run("rm", spec)
    try:
        rc, doc, stderr = scan(cgroupfs_node, *CGROUPFS_AGENT_FLAGS)
        assert rc == 1, stderr
        assert claim_findings(doc) == [(claim, "CDIDeviceMissing", "error")]
        assert set(verdicts(doc).values()) == {"Match"}
        message = next(c for c in doc["status"]["claims"] if c["name"] == claim)["findings"][0]["message"]
        assert cdi_id in message
        # what the finding says happens: the next container start fails, with the runtime's own words
        kill(cgroupfs_node, "dra-shared", "a")
        waiting = node._until(lambda: _waiting(cgroupfs_node, "dra-shared", "a", "CreateContainerError"), 180,
                              "container a failing to start")
        assert f"CDI device injection failed: unresolvable CDI devices {cdi_id}" in waiting["message"]
        assert "CDI device injection failed: unresolvable CDI devices" in message
        # and restarting this driver's plugin does not write it again: the kubelet prepares a claim
        # once per run of its own, when it creates a sandbox, as the finding says
        node.stop_plugin()
        node.start_plugin()
        node.wait_slices()
        time.sleep(10)
        assert node.vm.read(spec)[spec] is None and "once per run of its own" in message
    finally:
        recreate(cgroupfs_node, "dra-shared")


def _waiting(booted, pod: str, container: str, reason: str) -> dict | None:
    current = pod_now(booted, pod)
    status = next(s for s in current["status"]["containerStatuses"] if s["name"] == container)
    waiting = status["state"].get("waiting") or {}
    if waiting.get("reason") == reason:
        return waiting
    last = status.get("lastState", {}).get("waiting") or {}
    return last if last.get("reason") == reason else None


def test_a_pod_deleted_while_the_drivers_plugin_is_stopped(cgroupfs_node):
    node = cgroupfs_node.node
    claim, uid = claim_of(cgroupfs_node, "dra-mapped")
    node.stop_plugin()
    try:
        cgroupfs_node.plane.kubectl("delete", "pod", "-n", "matrix", "dra-mapped", "--wait=false")

        def stuck():
            pod = pod_now(cgroupfs_node, "dra-mapped")
            deleted = datetime.fromisoformat(pod["metadata"]["deletionTimestamp"].replace("Z", "+00:00"))
            stopped = all("terminated" in s["state"] for s in pod["status"]["containerStatuses"])
            return pod if stopped and (datetime.now(timezone.utc) - deleted).total_seconds() > 40 else None

        pod = node._until(stuck, 240, "dra-mapped terminating past its grace period", interval=5)
        assert pod["status"]["phase"] == "Running"  # what the real kubelet leaves: Terminating, not gone
        rc, doc, stderr = scan(cgroupfs_node, *CGROUPFS_AGENT_FLAGS)
        assert rc == 1, stderr
        assert claim_findings(doc) == [(claim, "UnprepareBlocked", "error")]
        message = next(c for c in doc["status"]["claims"] if c["name"] == claim)["findings"][0]["message"]
        quoted = f"unprepare dynamic resources: DRA driver {DRIVER} is not registered"
        assert quoted in message and quoted in (node.vm.logs / "kubelet.log").read_text()
        assert divergences(doc) == []
    finally:
        node.start_plugin()
    # the finding's next step works: with the plugin back, the kubelet unprepares and the pod goes
    node._until(lambda: pod_now(cgroupfs_node, "dra-mapped") is None, 240, "dra-mapped gone")
    node.wait_slices()
    assert claim not in node.vm.read(CHECKPOINT)[CHECKPOINT]
    node.apply([p for p in matrix.pods() if p["metadata"]["name"] == "dra-mapped"])
    cgroupfs_node.refresh()


def test_the_dra_checkpoint_corrupted(cgroupfs_node):
    node = cgroupfs_node.node
    good = node.vm.read(CHECKPOINT)[CHECKPOINT]
    first = next(iter(json.loads(json.loads(good)["Data"])["ClaimInfoStateList"]))["ClaimName"]
    node.vm.write(CHECKPOINT, good.replace(first, first[:-1] + ("x" if first[-1] != "x" else "y"), 1))
    try:
        rc, doc, stderr = scan(cgroupfs_node, *CGROUPFS_AGENT_FLAGS)
        assert rc == 1, stderr
        source = next(s for s in doc["status"]["sources"] if s["name"] == "draCheckpoint")
        assert source["state"] == "corrupt" and "checksum mismatch" in source["message"]
        names = {c["name"] for c in doc["status"]["claims"]}
        assert claim_findings(doc) == sorted((n, "CheckpointCorrupt", "error") for n in names) and len(names) == 4
        message = doc["status"]["claims"][0]["findings"][0]["message"]
        # what the finding says the kubelet does with the file: it does not start
        node.stop_kubelet()
        node.start_kubelet()
        exited = node._until(lambda: (s := node.vm.daemon_status("kubelet"))["rc"] is not None and s, 180,
                             "the kubelet exiting on the corrupt checkpoint")
        assert exited["rc"] != 0 and KUBELET_CORRUPT in (node.vm.logs / "kubelet.log").read_text()
        assert KUBELET_CORRUPT in message
    finally:
        node.stop_kubelet()
        node.vm.write(CHECKPOINT, good)
        node.start_kubelet()
        node.wait_ready()


def test_a_kubelet_restarted_without_dra_node_allocatable_resources(cgroupfs_node, dra):
    """The scheduler recorded the amounts of dra-two-claims; the kubelet is restarted with the gate off
    and a container of that pod dies. The kubelet restarts it without the amounts, while the pod cgroup
    and the other container keep theirs: KubeletDRADisabled on that container, nothing else red."""
    node, plane = cgroupfs_node.node, cgroupfs_node.plane
    node.restart_kubelet(node.kubelet.with_gate("DRANodeAllocatableResources", False))
    try:
        # the new kubelet declares its features once it has started (the Node was Ready before it)
        node._until(lambda: "DRANodeAllocatableResources" not in node.node_object()["status"].get(
            "declaredFeatures", []), 180, "status.declaredFeatures without DRANodeAllocatableResources")
        # the API server now refuses the driver's slices, which carry node-allocatable mappings
        node._until(lambda: "does not support DRANodeAllocatableResources feature" in
                    (node.vm.logs / "dra-plugin.log").read_text(), 180, "the API server refusing the slices")
        kill(cgroupfs_node, "dra-two-claims", "main")
        node._until(lambda: _restarted(cgroupfs_node, "dra-two-claims", "main"), 240, "main restarted")
        rc, doc, stderr = scan(cgroupfs_node, *CGROUPFS_AGENT_FLAGS)
        assert rc == 1, stderr
        assert verdicts(doc) == all_match_but(doc, "dra-two-claims")
        rows = divergences(doc)
        assert {r[3] for r in rows} >= {"cpu.max", "memory.max"}
        assert all(r[:3] == ("dra-two-claims", "container", "main") and r[4] == "KubeletDRADisabled" for r in rows)
        assert doc["status"]["kubeletDra"] is False
        # explain follows the node (status.declaredFeatures): it predicts the restarted container right
        restarted = pod_now(cgroupfs_node, "dra-two-claims")
        ex = explain(dra, cgroupfs_node, "dra-two-claims", *CGROUPFS_FLAGS)
        main = next(c for c in ex["cgroups"]["containers"] if c["name"] == "main")
        new_id = next(s for s in restarted["status"]["containerStatuses"] if s["name"] == "main")["containerID"]
        assert main["path"].endswith(new_id.split("//")[1])
        real = node.cgroup_files(main["path"], ["cpu.max", "memory.max"])
        assert real == {f: kernel_reads(f, main["files"][f], "cgroupfs") for f in ("cpu.max", "memory.max")}
        assert real["memory.max"] == str(128 * MI)  # its own limit, without the 64Mi + 8Mi + 8Mi of its claims
    finally:
        node.restart_kubelet(node.kubelet.with_gate("DRANodeAllocatableResources", True))
        node.stop_plugin()  # publish now, not after the slice controller's backoff
        node.start_plugin()
        node.wait_slices()
        recreate(cgroupfs_node, "dra-two-claims")


def _restarted(booted, pod: str, container: str) -> bool:
    status = next(s for s in pod_now(booted, pod)["status"]["containerStatuses"] if s["name"] == container)
    return status["restartCount"] >= 1 and "running" in status["state"]
