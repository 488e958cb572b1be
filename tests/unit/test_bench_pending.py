"""scripts/bench.py's explain-pod scenario is the realistic one its figure claims (issue 41): pods
from many workloads, with the scheduling terms real ones carry, DRA objects at the same scale, and
a pending pod with a claim, affinity and spread. A scenario that drifts back to identical pods
fails here before a figure is quoted from it."""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "tests")]
_spec = importlib.util.spec_from_file_location("bench", ROOT / "scripts" / "bench.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

NODES, PER_NODE = 30, 100


def test_the_pending_cluster_has_many_workloads_and_dra_at_scale():
    objects = bench.pending_cluster(NODES, PER_NODE)
    kinds = Counter(o["kind"] for o in objects)
    assert kinds["Node"] == NODES and kinds["ResourceSlice"] == NODES
    assert kinds["Pod"] == NODES * PER_NODE + 1
    assert kinds["ResourceClaim"] == NODES * bench.GPU_PODS_PER_NODE + 1
    running = [o for o in objects if o["kind"] == "Pod" and o["spec"].get("nodeName")]
    workloads = {o["metadata"]["ownerReferences"][0]["name"] for o in running}
    assert len(workloads) >= 300  # not 10 identical templates
    assert len({o["metadata"]["namespace"] for o in running}) == 40
    assert sum("podAntiAffinity" in (o["spec"].get("affinity") or {}) for o in running) >= len(running) // 10
    assert sum(bool(o["spec"].get("topologySpreadConstraints")) for o in running) >= len(running) // 10
    claims = [o for o in objects if o["kind"] == "ResourceClaim" and o["status"]]
    assert all(o["status"]["allocation"] and o["status"]["reservedFor"] for o in claims)
    # no two claims hold one device
    devices = Counter((c["status"]["allocation"]["devices"]["results"][0]["pool"],
                       c["status"]["allocation"]["devices"]["results"][0]["device"]) for c in claims)
    assert max(devices.values()) == 1


def test_the_pending_pod_has_a_claim_affinity_anti_affinity_and_spread():
    objects = bench.pending_cluster(NODES, PER_NODE)
    pending = next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == "pending")
    spec = pending["spec"]
    assert "nodeName" not in spec
    assert spec["resourceClaims"] == [{"name": "gpus", "resourceClaimName": "pending-gpus"}]
    assert spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert spec["topologySpreadConstraints"][0]["whenUnsatisfiable"] == "DoNotSchedule"
    claim = next(o for o in objects if o["kind"] == "ResourceClaim" and o["metadata"]["name"] == "pending-gpus")
    assert claim["metadata"]["namespace"] == pending["metadata"]["namespace"]
    assert bench.GPUS_PER_NODE - bench.GPU_PODS_PER_NODE < 2  # each node has fewer GPUs free than it asks


def test_a_goal_is_stated_as_pass_or_fail():
    assert (bench.verdict(True), bench.verdict(False)) == ("PASS", "FAIL")
