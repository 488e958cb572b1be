"""``kubectl dra explain pod`` through the CLI: the JSON contract, the example cluster, live reads."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubectl_dra.kube.snapshot import load_snapshot
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.registry import models
from kubectl_dra.quantity import Quantity

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster"
FIXTURES = ROOT / "tests" / "fixtures" / "objects"


def explain(dra, name, namespace, *extra, snapshot=EXAMPLE):
    result = dra("explain", "pod", name, "-n", namespace, "--snapshot", str(snapshot), "-o", "json", *extra)
    assert result.exit_code == 0, result
    return result.json()


def test_json_contract_keys(dra):
    doc = explain(dra, "embedder", "ml")
    assert (doc["apiVersion"], doc["kind"]) == ("kubectl-dra.io/v1alpha1", "PodExplanation")
    assert {"pod", "claims", "scheduler", "cgroups", "findings"} <= set(doc)
    assert {"namespace", "name", "uid", "node", "qosClass"} <= set(doc["pod"])
    claim = doc["claims"][0]
    assert {"name", "podClaimName", "containers", "mapping", "overhead", "source"} <= set(claim)
    assert claim == {**claim, "name": "embedder-gpu-qfx82", "podClaimName": "gpu", "containers": ["encoder", "reranker"],
                     "mapping": {}, "overhead": {"memory": {"perPod": "1Gi", "perContainer": "512Mi"}},
                     "source": "podStatus"}
    assert set(doc["scheduler"]) >= {"requests"}
    assert {"path", "files"} <= set(doc["cgroups"]["pod"])
    for container in doc["cgroups"]["containers"]:
        assert {"name", "path", "files"} <= set(container)
        assert all(isinstance(v, str) for v in container["files"].values())
    for finding in doc["findings"]:
        assert {"code", "severity", "message"} <= set(finding)


def test_embedder_values(dra):
    doc = explain(dra, "embedder", "ml")
    pod = doc["cgroups"]["pod"]
    assert pod["path"] == ("kubepods.slice/kubepods-burstable.slice/"
                           "kubepods-burstable-pod3cfdf372_dd62_461c_8b8f_48f219656949.slice")
    assert pod["files"]["memory.max"] == str(14 << 30)  # 8Gi + 4Gi + perPod 1Gi + 2 x 512Mi
    encoder = doc["cgroups"]["containers"][0]
    assert encoder["files"]["memory.max"] == str(9728 << 20)
    assert encoder["path"].endswith(".slice/cri-containerd-"
                                    "2a08df07f62a8b8a63fde87d10242e6ae5421051089122b02efd39f1eb39a895.scope")
    assert doc["scheduler"]["requests"]["memory"] == "14Gi" and doc["scheduler"]["dra"] == {"memory": "2Gi"}
    assert doc["findings"] == []


def test_risk_engine_cpu_mapping_and_hugepages(dra):
    doc = explain(dra, "risk-engine", "default")
    assert doc["pod"]["qosClass"] == "Guaranteed"
    assert doc["claims"][0]["mapping"] == {"cpu": "10"}
    pod, engine = doc["cgroups"]["pod"], doc["cgroups"]["containers"][0]
    assert pod["path"] == "kubepods.slice/kubepods-pod1e6b5e4c_b2ca_4fc7_9797_904e9eceee78.slice"
    assert pod["files"]["cpu.max"] == engine["files"]["cpu.max"] == "1000100 100000"
    assert engine["files"]["cpu.weight"] == "1"
    # containerd (the node's runtime) leaves container hugepage limits unset by default: the files read max
    assert engine["files"]["hugetlb.2MB.max"] == engine["files"]["hugetlb.2MB.rsvd.max"] == "max"
    applied = explain(dra, "risk-engine", "default", "--runtime-hugetlb", "on")["cgroups"]["containers"][0]
    assert applied["files"]["hugetlb.2MB.max"] == applied["files"]["hugetlb.2MB.rsvd.max"] == str(1 << 30)


def _limits_read_back(snapshot: Path):
    """Every running container of the example whose status carries read-back limits (1.37 kubelet)."""
    inventory = load_snapshot(snapshot)
    for pod in inventory.all(Pod):
        for status in pod.raw.get("status", {}).get("containerStatuses", []):
            limits = (status.get("resources") or {}).get("limits")
            if limits and pod.node_name:
                yield pod, status["name"], limits


@pytest.mark.parametrize("pod,container,limits", list(_limits_read_back(EXAMPLE)),
                         ids=lambda v: v.name if isinstance(v, Pod) else (v if isinstance(v, str) else ""))
def test_prediction_matches_the_limits_the_kubelet_read_back(dra, pod, container, limits):
    """containerStatuses[].resources are read back from the cgroups: the prediction must agree."""
    doc = explain(dra, pod.name, pod.namespace)
    files = next(c for c in doc["cgroups"]["containers"] if c["name"] == container)["files"]
    if "memory" in limits:
        assert files["memory.max"] == str(Quantity.parse(str(limits["memory"])).value())
    if "cpu" in limits:
        assert files["cpu.max"] == f"{Quantity.parse(str(limits['cpu'])).milli_value() * 100} 100000"


def test_node_options_from_node_and_flags(dra):
    doc = explain(dra, "risk-engine", "default")
    assert doc["nodeOptionsSource"]["runtime"] == "node worker-cpu-1"
    assert doc["nodeOptionsSource"]["cgroupDriver"] == "default"
    flagged = explain(dra, "risk-engine", "default", "--cgroup-driver", "cgroupfs", "--runtime", "crio",
                      "--hugepage-sizes", "2Mi", "--kubelet-dra", "off", "--cpu-cfs-period", "50ms")
    pod, engine = flagged["cgroups"]["pod"], flagged["cgroups"]["containers"][0]
    assert pod["path"] == "kubepods/pod1e6b5e4c-b2ca-4fc7-9797-904e9eceee78"
    assert engine["path"].startswith(pod["path"] + "/crio-")
    assert engine["files"]["cpu.max"] == "1000 50000"  # 1m, DRA off, minimum quota
    assert "hugetlb.1GB.max" not in engine["files"] and "hugetlb.2MB.rsvd.max" not in engine["files"]
    assert flagged["nodeOptionsSource"]["runtime"] == "flag"


def test_tree_output_shows_reasons(dra):
    result = dra("explain", "pod", "embedder", "-n", "ml", "--snapshot", str(EXAMPLE))
    assert result.exit_code == 0
    text = result.stdout
    assert "memory.max           = 15032385536     limits 12Gi + DRA 2Gi = 14Gi" in text
    assert "Container reranker" in text and "DRA never adds cpu shares" in text


def test_older_generation_pod_is_not_enforced(dra):
    doc = explain(dra, "cpu-worker", "ml", snapshot=FIXTURES / "v1beta1")
    assert doc["claims"][0]["resources"] == {"cpu": "4"} and doc["claims"][0]["source"] == "podStatus"
    assert [f["code"] for f in doc["findings"]] == ["NodeAllocatableNotEnforced"]
    assert doc["nodeOptions"]["kubeletDra"] is False  # node-b runs a 1.36 kubelet


def test_bad_inputs_still_explain_what_is_known(tmp_path, dra):
    objects = [o.raw for m in models() for o in load_snapshot(EXAMPLE).all(m)]
    for obj in objects:
        if obj["kind"] == "ResourceSlice" and obj["spec"]["driver"] == "dra.cpu":
            obj["spec"]["devices"][0]["nodeAllocatableResources"]["cpu"]["mapping"]["capacityMultiplier"] = "lots"
        if obj["kind"] == "Pod" and obj["metadata"]["name"] == "risk-engine":
            obj["spec"].pop("nodeName")
    (tmp_path / "all.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    result = dra("explain", "pod", "risk-engine", "-n", "default", "--snapshot", str(tmp_path), "-o", "json")
    assert result.exit_code == 4
    assert 'capacityMultiplier: invalid quantity "lots"' in result.stderr
    assert "ResourceSlice worker-cpu-1-dra.cpu-6lchp: spec.devices[0].nodeAllocatableResources.cpu.mapping." \
           "capacityMultiplier" in result.stderr and "the object is kept" in result.stderr
    doc = result.json()
    assert doc["pod"]["node"] is None
    assert doc["claims"][0]["mapping"] == {"cpu": "10"}  # the recorded status is still there
    codes = [f["code"] for f in doc["findings"]]
    # one bad field is not a missing slice: the device is found, and what depends on the field is unknown
    assert "AllocatedDeviceMissing" not in codes and "InvalidNodeAllocatableMapping" not in codes
    assert "NodeAllocatableStatusMismatch" not in codes and "NodeAllocatableUnknown" in codes


def test_pod_not_found(dra):
    result = dra("explain", "pod", "nope", "-n", "ml", "--snapshot", str(EXAMPLE))
    assert result.exit_code == 3
    assert result.stderr.strip() == f'error: pod "nope" not found in namespace ml (snapshot {EXAMPLE})'


def test_bad_node_flags(dra):
    """A bad flag value is a usage error (exit 2), in click's words, as in dra-node-agent."""
    result = dra("explain", "pod", "embedder", "-n", "ml", "--snapshot", str(EXAMPLE), "--hugepage-sizes", "3Mi")
    assert result.exit_code == 2 and "a page size is a power of two" in result.stderr
    result = dra("explain", "pod", "embedder", "-n", "ml", "--snapshot", str(EXAMPLE), "--cpu-cfs-period", "fast")
    assert result.exit_code == 2 and "Invalid value for '--cpu-cfs-period': \"fast\"" in result.stderr
