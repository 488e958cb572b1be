"""The driver-shaped fixtures and the example cluster, through the CLI (snapshot and live)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubectl_dra.kube.snapshot import load_snapshot
from kubectl_dra.model.registry import models

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "objects"
EXAMPLE = ROOT / "examples" / "cluster"


@pytest.mark.parametrize("snapshot", [FIXTURES / "v1", FIXTURES / "v1beta1", FIXTURES / "v1beta2", EXAMPLE])
def test_every_fixture_object_loads_without_problems(snapshot):
    inventory = load_snapshot(snapshot)
    assert inventory.problems == []
    kinds = {m.KIND for m in models() if inventory.all(m)}
    assert {"Pod", "ResourceClaim", "ResourceSlice"} <= kinds


def findings(dra, snapshot, namespace, name):
    result = dra("explain", "claim", name, "-n", namespace, "--snapshot", str(snapshot), "-o", "json")
    assert result.exit_code == 0, result
    doc = result.json()
    return doc, sorted((f["code"], f["severity"]) for f in doc["findings"])


# (namespace, claim, the findings a careful SRE expects) — examples/cluster/README.md "What a tool should find"
EXAMPLE_CLAIMS = [
    ("default", "eval-gpu", [("StaleReservation", "warning"), ("StaleReservation", "warning")]),
    ("ml", "shared-gpu", [("ReferencedButNotReserved", "error")]),
    ("ml", "spare-gpu", [("PendingNoConsumers", "info")]),
    # node-side (the agent's report of worker-gpu-1): the claim's CDI spec is gone after a reboot
    ("ml", "trainer-gpus-hd295", [("CDIDeviceMissing", "error"), ("CDIDeviceMissing", "error")]),
    ("default", "risk-engine-cpus", []),
    ("ml", "embedder-gpu-qfx82", []),
    # node-side: the node holds an older object of the claim and never prepared this one
    ("ml", "ingest-gateway-nic-v2tc9", [("PreparedNotReserved", "error"), ("ReservedNotPrepared", "error")]),
    # its GPU is reported Unhealthy by the kubelet (allocatedResourcesStatus)
    ("ml", "llm-inference-7c9d8b6f5d-r772r-gpu-2nqcv", [("DeviceUnhealthy", "warning")]),
]


@pytest.mark.parametrize("namespace,name,expected", EXAMPLE_CLAIMS)
def test_example_cluster_findings(dra, namespace, name, expected):
    assert findings(dra, EXAMPLE, namespace, name)[1] == expected


def test_example_stale_reservation_resolution(dra):
    doc, _ = findings(dra, EXAMPLE, "default", "eval-gpu")
    assert [(r["name"], r["resolved"]) for r in doc["reservedFor"]] == [
        ("eval-server-0", "uidMismatch"), ("eval-nightly-20261119-pdb2j", "done"), ("eval-server-0", "exists")]


def test_example_podgroup_reservation_covers_members(dra):
    doc, _ = findings(dra, EXAMPLE, "ml", "trainer-gpus-hd295")
    assert doc["reservedFor"][0]["pods"] == ["ml/trainer-0-h6h2p", "ml/trainer-1-gl2xk"]
    assert all(c["reserved"] for c in doc["consumers"]) and len(doc["consumers"]) == 2


def test_example_network_device_status(dra):
    doc, _ = findings(dra, EXAMPLE, "ml", "ingest-gateway-nic-v2tc9")
    assert doc["devices"][0]["networkData"]["interfaceName"] == "net1"
    assert doc["devices"][0]["attributes"]["dra.net/ifName"] == "ens32"


def test_zombie_claim_being_deleted(dra):
    doc, codes = findings(dra, FIXTURES / "v1", "default", "stuck-gpu")
    assert codes == [("DeallocationBlocked", "error"), ("DeletedButAllocated", "warning"), ("StaleReservation", "warning")]
    assert doc["claim"]["state"] == ["deleted", "allocated", "reserved"]
    assert doc["reservedFor"][0]["resolved"] == "missing"


@pytest.mark.parametrize("snapshot,namespace,claim,expected", [
    (EXAMPLE, "default", "risk-engine-cpus", {"cpu": "10"}),           # 1.37 capacityKey x 1
    (FIXTURES / "v1", "default", "quant-engine-0-cpus-fs9g5", {"cpu": "4"}),
    (FIXTURES / "v1beta1", "ml", "cpu-worker-cpus-4nkbk", {"cpu": "4"}),  # 1.36 capacityKey
    (FIXTURES / "v1beta2", "ml", "render-gpu", {"memory": "2Gi"}),     # 1.36 per-device multiplier
    (EXAMPLE, "ml", "shared-gpu", {}),                                 # overhead only, no mapping
])
def test_device_node_allocatable_mapping(dra, snapshot, namespace, claim, expected):
    doc, _ = findings(dra, snapshot, namespace, claim)
    assert doc["devices"][0]["nodeAllocatable"] == expected


def test_overhead_is_reported_per_device(dra):
    doc, _ = findings(dra, EXAMPLE, "ml", "trainer-gpus-hd295")
    assert [d["nodeAllocatableOverhead"] for d in doc["devices"]] == [
        {"memory": {"perPod": "1Gi", "perContainer": "512Mi"}}] * 2


def test_extended_resource_claim_consumer(dra):
    doc, codes = findings(dra, FIXTURES / "v1", "ml", "batch-infer-c4fh2-extended-resources-kpl28")
    assert doc["consumers"] == [{"pod": "ml/batch-infer-c4fh2", "reserved": True, "node": "worker-1",
                                 "phase": "Running", "via": "extendedResource",
                                 "extended": ["worker/example.com/gpu=container-0-request-0"]}]
    assert codes == []


def test_older_generation_live_with_podgroup(make_apiserver, kubeconfig_for, dra):
    """1.36 cluster: resource.k8s.io/v1beta1 and scheduling.k8s.io/v1alpha2 only."""
    objects = [o.raw for m in models() for o in load_snapshot(FIXTURES / "v1beta1").all(m)]
    server = make_apiserver(objects, served={"resource.k8s.io": ["v1beta1"], "scheduling.k8s.io": ["v1alpha2"]})
    kubeconfig = str(kubeconfig_for(server, namespace="ml"))
    result = dra("explain", "claim", "group-1-gpu-xd97l", "--kubeconfig", kubeconfig, "-o", "json")
    assert result.exit_code == 0, result
    doc = result.json()
    assert doc["reservedFor"][0]["resolved"] == "exists"
    assert doc["reservedFor"][0]["pods"] == ["ml/group-1-member-0", "ml/group-1-member-1"]
    assert doc["findings"] == []
    paths = {r.path for r in server.list_requests()}
    assert "/apis/scheduling.k8s.io/v1alpha2/namespaces/ml/podgroups" in paths
    assert "/apis/resource.k8s.io/v1beta1/resourceslices" in paths
