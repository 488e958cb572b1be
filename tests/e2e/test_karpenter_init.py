"""explain node on a node Karpenter has not initialized (NodeClaim Initialized=Unknown, Karpenter
v1.14.1's reasons and messages): the missing resource traced to the overlay that promised it and the
NodePool, the DRA driver without a complete pool traced to what was predicted and what is published."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster"


def with_condition(tmp_path: Path, nodeclaim: str, reason: str, message: str) -> str:
    snap = tmp_path / "cluster"
    shutil.copytree(EXAMPLE, snap)
    path = snap / "karpenter" / "nodeclaims.yaml"
    doc = yaml.safe_load(path.read_text())
    item = next(i for i in doc["items"] if i["metadata"]["name"] == nodeclaim)
    for condition in item["status"]["conditions"]:
        if condition["type"] in ("Initialized", "Ready"):
            condition.update(status="Unknown", reason=reason, message=message)
    path.write_text(yaml.safe_dump(doc))
    return str(snap)


def test_resource_not_registered_names_the_overlay_and_nodepool(dra, tmp_path):
    snap = with_condition(tmp_path, "default-5drkj", "ResourceNotRegistered",
                          'Resource "hugepages-2Mi" was requested but not registered')
    doc = dra("explain", "node", "worker-cpu-1", "--snapshot", snap, "-o", "json").json()
    (finding,) = [f for f in doc["findings"] if f["code"] == "ResourceNotRegistered"]
    assert finding["severity"] == "error" and finding["object"] == "nodeclaim/default-5drkj"
    assert "overlay cpu-hugepages promised hugepages-2Mi=8Gi for NodePool default, instance type c7i.16xlarge" \
        in finding["message"]


def test_dra_driver_pools_not_published(dra, tmp_path):
    snap = with_condition(tmp_path, "gpu-wjlj7", "DRADriverPoolsNotPublished",
                          'DRA driver "nic.example.com" has not published a complete resource pool')
    doc = dra("explain", "node", "worker-gpu-1", "--snapshot", snap, "-o", "json").json()
    (finding,) = [f for f in doc["findings"] if f["code"] == "DRADriverPoolsNotPublished"]
    assert "DRA driver nic.example.com has no complete resource pool" in finding["message"]
    assert "NodePool gpu, instance type g6e.12xlarge" in finding["message"] and "published: none" in finding["message"]


@pytest.mark.parametrize("reason", ["NodeNotReady", "StartupTaintsExist"])
def test_other_reasons_are_not_ours(dra, tmp_path, reason):
    snap = with_condition(tmp_path, "default-5drkj", reason, "whatever")
    doc = dra("explain", "node", "worker-cpu-1", "--snapshot", snap, "-o", "json").json()
    assert not {f["code"] for f in doc["findings"]} & {"ResourceNotRegistered", "DRADriverPoolsNotPublished"}


def test_an_initialized_node_has_no_such_finding(dra):
    doc = dra("explain", "node", "worker-gpu-1", "--snapshot", str(EXAMPLE), "-o", "json").json()
    assert not {f["code"] for f in doc["findings"]} & {"ResourceNotRegistered", "DRADriverPoolsNotPublished"}
