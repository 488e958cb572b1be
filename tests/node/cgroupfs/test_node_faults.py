"""Detection equals reality: faults planted on the real cgroupfs node the way they happen on real
nodes, found by the deployed agent (conftest.deployed: the image, the node-dra-state overlay, a 3 s
interval). Each fault shows its own finding, and in every version of the report written meanwhile
(a watch) every other pod and claim keeps its verdict. What the real kubelet does in each case is
shown on the node too, since the findings say it (their messages quote it). Each test puts the node
back as it found it.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from datetime import datetime, timezone

from agentpod import INTERVAL, all_match
from boots import CGROUPFS_AGENT_FLAGS, CGROUPFS_FLAGS
from nodecheck import (claim_findings, container_cgroup, diverged_on, divergences, explain, kernel_reads,
                       planted_divergence, scan, verdicts)
from realnode import CDI_DIR, DRIVER, KUBELET_ROOT
from waiting import Stuck

import matrix

MI = 1 << 20
STALL = 20 * INTERVAL
CHECKPOINT = f"{KUBELET_ROOT}/dra_manager_state"
KUBELET_CORRUPT = ("failed to run Kubelet: create ResourceClaim cache: GetOrCreate() on checkpoint state: failed "
                   "to get checkpoint dra_manager_state: checkpoint is corrupted")


def unchanged_but(versions: list[dict], pods: set[str] = frozenset(), claims: set[str] = frozenset()) -> list:
    """What changed in any version besides the planted fault: a pod not in ``pods`` that is not
    Match, a claim finding (error or warning) about a claim not in ``claims``."""
    found = []
    for doc in versions:
        at = doc["status"]["observedAt"]
        found += [(at, name, verdict) for name, verdict in verdicts(doc).items() if name not in pods and verdict != "Match"]
        found += [(at, *f) for f in claim_findings(doc) if f[0] not in claims and f[2] != "info"]
    return found


@contextmanager
def fault(deployed):
    """The report watched while a fault is planted and put back: yields the watch."""
    with deployed.agent.reports() as reports:
        reports.until("all Match before the fault", lambda o: all_match(o[deployed.agent.node.name]), stall=STALL)
        yield reports


def back_to_match(deployed) -> None:
    with deployed.agent.reports() as reports:
        reports.until("all Match after the fault", lambda o: all_match(o[deployed.agent.node.name]), stall=STALL)


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


def waiting_reason(booted, pod: str, container: str, reason: str) -> dict | None:
    current = pod_now(booted, pod)
    status = next(s for s in current["status"]["containerStatuses"] if s["name"] == container)
    for state in (status["state"].get("waiting") or {}, status.get("lastState", {}).get("waiting") or {}):
        if state.get("reason") == reason:
            return state
    return None


def recreate(booted, *names: str) -> None:
    """Delete pods (their template claims go with them) and create them again from matrix.py."""
    booted.plane.kubectl("delete", "pod", "-n", "matrix", *names, "--wait=true", "--timeout=300s")
    booted.node.apply([p for p in matrix.pods() if p["metadata"]["name"] in names])
    booted.refresh()


def test_a_container_cgroup_rewritten_behind_the_kubelets_back(deployed):
    """The agent reports exactly that file of that container, with both values; `scan --once` on a
    node shell says the same and exits 1."""
    agent, node = deployed.agent, deployed.agent.node
    booted = agent.booted
    path = container_cgroup(booted.pods["burstable"], "app")
    before = node.vm.read(f"{path}/memory.max")[f"{path}/memory.max"].strip()
    with fault(deployed) as reports, planted_divergence(booted):
        doc = reports.until("the rewritten memory.max", lambda o: diverged_on(o[node.name]) and o[node.name],
                            stall=STALL)
        found = next(d for p in doc["status"]["pods"] for d in p["divergences"] if d["file"] == "memory.max")
        assert (found["expected"], found["observed"]) == (before, str(300 * MI))
        rc, scanned, stderr = scan(booted, *CGROUPFS_AGENT_FLAGS)
        assert rc == 1, stderr
        assert divergences(scanned) == [("burstable", "container", "app", "memory.max", "Unexplained")]
        assert claim_findings(scanned) == []
        seen = list(reports.versions)
    assert unchanged_but(seen, pods={"burstable"}) == []
    back_to_match(deployed)


def test_the_drivers_cdi_spec_deleted(deployed):
    agent, node = deployed.agent, deployed.agent.node
    booted = agent.booted
    claim, uid = claim_of(booted, "dra-shared")
    cdi_id = f"{DRIVER}/test=claim-{uid}-dev"
    spec = f"{CDI_DIR}/{DRIVER}-{uid}-dev.json"
    try:
        with fault(deployed) as reports:
            node.vm.run("rm", spec)
            doc = reports.until("CDIDeviceMissing for the claim", lambda o: claim_findings(o[node.name]) == [
                (claim, "CDIDeviceMissing", "error")] and o[node.name], stall=STALL)
            assert set(verdicts(doc).values()) == {"Match"}
            message = next(c for c in doc["status"]["claims"] if c["name"] == claim)["findings"][0]["message"]
            assert cdi_id in message
            # what the finding says happens: the next container start fails, with the runtime's own words
            kill(booted, "dra-shared", "a")
            waiting = node.wait("container a failing to start",
                                lambda: waiting_reason(booted, "dra-shared", "a", "CreateContainerError"),
                                daemon="kubelet")
            assert f"CDI device injection failed: unresolvable CDI devices {cdi_id}" in waiting["message"]
            assert "CDI device injection failed: unresolvable CDI devices" in message
            # and restarting this driver's plugin does not write it again: the kubelet prepares a claim
            # once per run of its own, when it creates a sandbox, as the finding says
            log = node.vm.logs / "kubelet.log"
            connected = 'driverName="node.kubectl-dra.test"'
            count = lambda: sum(1 for line in log.read_text().splitlines()  # noqa: E731
                                if "Connection changed" in line and connected in line and "connected=true" in line)
            registered = count()
            node.stop_plugin()
            node.start_plugin()
            node.wait_slices()
            node.wait("the kubelet connected to the restarted plugin", lambda: count() > registered, daemon="kubelet")
            assert node.vm.read(spec)[spec] is None and "once per run of its own" in message
            seen = list(reports.versions)
        assert unchanged_but(seen, pods={"dra-shared"}, claims={claim}) == []
    finally:
        recreate(booted, "dra-shared")
    back_to_match(deployed)


def test_a_pod_deleted_while_the_drivers_plugin_is_stopped(deployed):
    agent, node = deployed.agent, deployed.agent.node
    booted = agent.booted
    claim, uid = claim_of(booted, "dra-mapped")
    node.stop_plugin()
    try:
        with fault(deployed) as reports:
            booted.plane.kubectl("delete", "pod", "-n", "matrix", "dra-mapped", "--wait=false")
            # the agent says so 30 s past the grace period, while the containers have stopped
            doc = reports.until("UnprepareBlocked for the claim", lambda o: claim_findings(o[node.name]) == [
                (claim, "UnprepareBlocked", "error")] and o[node.name], stall=STALL + 60)
            pod = pod_now(booted, "dra-mapped")
            assert pod["status"]["phase"] == "Running"  # what the real kubelet leaves: Terminating, not gone
            assert all("terminated" in s["state"] for s in pod["status"]["containerStatuses"])
            deleted = datetime.fromisoformat(pod["metadata"]["deletionTimestamp"].replace("Z", "+00:00"))
            assert (datetime.now(timezone.utc) - deleted).total_seconds() > 30
            message = next(c for c in doc["status"]["claims"] if c["name"] == claim)["findings"][0]["message"]
            quoted = f"unprepare dynamic resources: DRA driver {DRIVER} is not registered"
            assert quoted in message and quoted in (node.vm.logs / "kubelet.log").read_text()
            assert divergences(doc) == []
            seen = list(reports.versions)
        assert unchanged_but(seen, pods={"dra-mapped"}, claims={claim}) == []
    finally:
        node.start_plugin()
    # the finding's next step works: with the plugin back, the kubelet unprepares and the pod goes
    node.wait("dra-mapped gone", lambda: pod_now(booted, "dra-mapped") is None, daemon="kubelet")
    node.wait_slices()
    node.wait("the claim unprepared", lambda: claim not in node.vm.read(CHECKPOINT)[CHECKPOINT], daemon="kubelet")
    node.apply([p for p in matrix.pods() if p["metadata"]["name"] == "dra-mapped"])
    booted.refresh()
    back_to_match(deployed)


def held_claims(text: str) -> set[str]:
    return {c["ClaimName"] for c in json.loads(json.loads(text)["Data"])["ClaimInfoStateList"] or []}


def test_the_dra_checkpoint_corrupted_and_what_the_kubelet_does_without_it(deployed):
    """A corrupt checkpoint: every claim of the node is CheckpointCorrupt (nothing is concluded from
    the file), every pod keeps its verdict. Then what the finding says of the kubelet, on the node:
    with that file it does not start; without it, it starts with no claim prepared, the running pods
    keep running, and a container of theirs that restarts fails with the message the finding quotes."""
    agent, node = deployed.agent, deployed.agent.node
    booted = agent.booted
    good = node.vm.read(CHECKPOINT)[CHECKPOINT]
    names = held_claims(good)
    first = sorted(names)[0]
    try:
        with fault(deployed) as reports:
            node.vm.write(CHECKPOINT, good.replace(first, first[:-1] + ("x" if first[-1] != "x" else "y"), 1))
            doc = reports.until("CheckpointCorrupt on every claim", lambda o: claim_findings(o[node.name]) == sorted(
                (n, "CheckpointCorrupt", "error") for n in names) and o[node.name], stall=STALL)
            source = next(s for s in doc["status"]["sources"] if s["name"] == "draCheckpoint")
            assert source["state"] == "corrupt" and "checksum mismatch" in source["message"]
            assert set(verdicts(doc).values()) == {"Match"} and divergences(doc) == [] and len(names) == matrix.CLAIMS
            message = doc["status"]["claims"][0]["findings"][0]["message"]
            seen = list(reports.versions)
        assert unchanged_but(seen, claims=names) == []
        # with the file, the kubelet does not start
        node.stop_kubelet()
        node.start_kubelet()
        exited = node.wait("the kubelet exiting on the corrupt checkpoint",
                           lambda: (s := node.vm.daemon_status("kubelet"))["rc"] is not None and s)
        assert exited["rc"] != 0 and KUBELET_CORRUPT in (node.vm.logs / "kubelet.log").read_text()
        assert KUBELET_CORRUPT in message
        # without it, it starts with no claim prepared; the pods run on, and a restarting container fails
        node.vm.run("rm", CHECKPOINT)
        restarts = {n: [s["restartCount"] for s in p["status"]["containerStatuses"]] for n, p in booted.pods.items()}
        node.start_kubelet()
        node.wait_ready()
        assert held_claims(node.wait("a new checkpoint", lambda: node.vm.read(CHECKPOINT)[CHECKPOINT])) == set()
        kill(booted, "dra-mapped", "app")
        waiting = node.wait("the restarted container failing", lambda: waiting_reason(
            booted, "dra-mapped", "app", "CreateContainerConfigError"), daemon="kubelet")
        assert "unable to get claim info for ResourceClaim" in waiting["message"]
        assert "Without the file it starts with no claim prepared" in message
        assert 'CreateContainerConfigError "unable to get claim info for ResourceClaim"' in message
        others = {n: [s["restartCount"] for s in pod_now(booted, n)["status"]["containerStatuses"]]
                  for n in booted.pods if n != "dra-mapped"}
        assert others == {n: r for n, r in restarts.items() if n != "dra-mapped"}
    finally:
        node.stop_kubelet()
        node.vm.write(CHECKPOINT, good)
        node.start_kubelet()
        node.wait_ready()
    try:
        node.wait("the container started again with its claim", lambda: (p := pod_now(booted, "dra-mapped")) and all(
            "running" in s["state"] for s in p["status"]["containerStatuses"]), daemon="kubelet")
    except Stuck:
        recreate(booted, "dra-mapped")
        raise
    booted.refresh()
    back_to_match(deployed)


def test_a_kubelet_restarted_without_dra_node_allocatable_resources(deployed, dra):
    """The scheduler recorded the amounts of dra-two-claims; the kubelet is restarted with the gate off
    and a container of that pod dies. The kubelet restarts it without the amounts, while the pod cgroup
    and the other container keep theirs: KubeletDRADisabled on that container, no other pod and no
    claim changes (the checkpoint still holds every claim)."""
    agent, node = deployed.agent, deployed.agent.node
    booted = agent.booted
    try:
        with fault(deployed) as reports:
            node.restart_kubelet(node.kubelet.with_gate("DRANodeAllocatableResources", False))
            # the new kubelet declares its features once it has started (the Node was Ready before it)
            node.wait("status.declaredFeatures without DRANodeAllocatableResources",
                      lambda: "DRANodeAllocatableResources" not in node.node_object()["status"].get(
                          "declaredFeatures", []), daemon="kubelet")
            # the API server now refuses the driver's slices, which carry node-allocatable mappings
            node.wait("the API server refusing the slices", lambda: "does not support DRANodeAllocatableResources "
                      "feature" in (node.vm.logs / "dra-plugin.log").read_text(), daemon="dra-plugin")
            kill(booted, "dra-two-claims", "main")
            node.wait("main restarted", lambda: _restarted(booted, "dra-two-claims", "main"), daemon="kubelet")
            doc = reports.until("KubeletDRADisabled on main", lambda o: verdicts(o[node.name]).get(
                "dra-two-claims") == "Diverged" and o[node.name], stall=STALL)
            rows = divergences(doc)
            assert {r[3] for r in rows} >= {"cpu.max", "memory.max"}
            assert all(r[:3] == ("dra-two-claims", "container", "main") and r[4] == "KubeletDRADisabled" for r in rows)
            assert doc["status"]["kubeletDra"] is False
            assert claim_findings(doc) == [] and len(doc["status"]["claims"]) == matrix.CLAIMS
            seen = list(reports.versions)
        assert unchanged_but(seen, pods={"dra-two-claims"}) == []
        # explain follows the node (status.declaredFeatures): it predicts the restarted container right
        restarted = pod_now(booted, "dra-two-claims")
        ex = explain(dra, booted, "dra-two-claims", *CGROUPFS_FLAGS)
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
        recreate(booted, "dra-two-claims")
    back_to_match(deployed)


def _restarted(booted, pod: str, container: str) -> bool:
    status = next(s for s in pod_now(booted, pod)["status"]["containerStatuses"] if s["name"] == container)
    return status["restartCount"] >= 1 and "running" in status["state"]
