"""Extended resources through DRA (KEP-5004) through the CLI, on examples/extended: the pending
pod's allocation of the scheduler's claim, the claim's consumer and its findings when the cluster
around it changes (docs/kubernetes/extended-resources.md §7)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "extended"
CLAIM = "infer-a-extended-resources-7xk2p"


def objects() -> list[dict]:
    return list(yaml.safe_load_all((EXAMPLE / "cluster.yaml").read_text()))


def snapshot(tmp_path: Path, docs: list[dict]) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def test_pending_pod_shows_the_schedulers_claim(dra):
    result = dra("explain", "pod", "infer-b", "--snapshot", str(EXAMPLE), "-o", "json")
    assert result.exit_code == 0, result
    doc = result.json()
    assert doc["scheduling"]["message"] == \
        "0/2 nodes are available: 1 Insufficient example.com/gpu, 1 cannot allocate all claims."
    allocation = doc["allocation"]
    assert allocation["claims"] == ["default/<extended-resources>"] and allocation["nodesChecked"] == 1
    assert allocation["extended"] == {
        "resources": {"example.com/gpu": 1}, "classes": {"example.com/gpu": "gpu.example.com"},
        "requests": [{"name": "container-0-request-1", "deviceClassName": "gpu.example.com", "count": 1}],
        "mappings": [{"containerName": "infer", "resourceName": "example.com/gpu",
                      "requestName": "container-0-request-1"}],
        "devicePluginNodes": ["dp-node-1"], "existingClaim": None}
    [node] = allocation["nodes"]
    assert node["node"] == "dra-node-1" and not node["feasible"]
    assert node["requests"][0]["rejected"][0]["reason"] == "AlreadyAllocated"


def test_freed_device_makes_the_dra_node_fit(dra, tmp_path):
    docs = [d for d in objects() if d["metadata"]["name"] not in (CLAIM, "infer-a")]
    result = dra("explain", "pod", "infer-b", "--snapshot", snapshot(tmp_path, docs), "-o", "json")
    doc = result.json()
    assert doc["scheduling"]["message"] is None and doc["scheduling"]["feasibleNodes"] == ["dra-node-1"]
    assert doc["allocation"]["nodes"][0]["results"] == [{
        "claim": "default/<extended-resources>", "request": "container-0-request-1", "driver": "gpu.example.com",
        "pool": "dra-node-1", "device": "gpu-0"}]


def test_the_claims_consumer_is_its_pod_with_the_mappings(dra):
    doc = dra("explain", "claim", CLAIM, "--snapshot", str(EXAMPLE), "-o", "json").json()
    assert doc["consumers"] == [{"pod": "default/infer-a", "reserved": True, "node": "dra-node-1",
                                 "phase": "Running", "via": "extendedResource",
                                 "extended": ["infer/example.com/gpu=container-0-request-1"]}]
    assert doc["findings"] == []


def _codes(dra, path: str) -> dict[str, str]:
    doc = dra("explain", "claim", CLAIM, "--snapshot", path, "-o", "json").json()
    return {f["code"]: f["message"] for f in doc["findings"]}


def test_findings_when_the_class_goes_clashes_or_the_node_advertises_it(dra, tmp_path):
    docs = objects()
    gone = [d for d in docs if d["kind"] != "DeviceClass"]
    assert "ExtendedResourceClassMissing" in _codes(dra, snapshot(tmp_path, gone))
    rival = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
             "metadata": {"name": "gpu-new", "creationTimestamp": "2026-11-21T08:00:00Z"},
             "spec": {"extendedResourceName": "example.com/gpu", "selectors": [{"cel": {"expression": "true"}}]}}
    codes = _codes(dra, snapshot(tmp_path, [*docs, rival]))
    assert "newest, gpu-new" in codes["ExtendedResourceNameClash"]
    for d in docs:
        if d["kind"] == "Node" and d["metadata"]["name"] == "dra-node-1":
            d["status"]["allocatable"]["example.com/gpu"] = "1"
    codes = _codes(dra, snapshot(tmp_path, docs))
    assert set(codes) == {"ExtendedResourceBothWays"} and "example.com/gpu: 1" in codes["ExtendedResourceBothWays"]
