"""Why is it pending, through the CLI: explain pod on unbound pods and explain claim on pending
claims (the example cluster's three stuck pods, and built scenarios), the -o json contract of
docs/contracts.md §3.9 "Allocation", --node, the claims FINDINGS, and bad input that must never crash."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from builders import claim, pod, resource_slice

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster"
GPU = "gpu.example.com"
REASONS = {"NodeSelection", "DeviceClassSelector", "RequestSelector", "AlreadyAllocated", "Taint", "Capacity",
           "Counters", "Constraint", "AdminAccess", "BindingConditions", "PoolIncomplete", "PoolStale", "PoolInvalid",
           "Undetermined"}


def contract(allocation: dict) -> None:
    """The document's shape (docs/contracts.md §3.9): every key, every reason one of the stable codes."""
    assert set(allocation) >= {"feasibleNodes", "nodes"}
    for node in allocation["nodes"]:
        assert set(node) >= {"node", "feasible", "results", "requests"}
        for result in node["results"]:
            assert set(result) >= {"claim", "request", "driver", "pool", "device"}
        for request in node["requests"]:
            assert set(request) >= {"claim", "request", "candidates", "rejected"}
            for rejected in request["rejected"]:
                assert set(rejected) >= {"device", "reason", "message"} and rejected["reason"] in REASONS
                assert rejected["device"].count("/") == 2


def node_of(allocation: dict, name: str) -> dict:
    return next(n for n in allocation["nodes"] if n["node"] == name)


def rejected(node: dict, reason: str) -> dict[str, str]:
    return {x["device"]: x["message"] for r in node["requests"] for x in r["rejected"] if x["reason"] == reason}


def test_selector_no_device_matches(dra):
    result = dra("explain", "pod", "llm-70b", "-n", "ml", "--snapshot", str(EXAMPLE), "-o", "json")
    assert result.exit_code == 0, result
    allocation = result.json()["allocation"]
    contract(allocation)
    assert allocation["feasibleNodes"] == [] and allocation["nodesChecked"] == 3
    assert allocation["claims"] == ["ml/llm-70b-gpu-x7k2p"]
    gpu2 = node_of(allocation, "worker-gpu-2")
    selector = 'device.capacity["gpu.example.com"].memory.compareTo(quantity("141Gi")) >= 0 is false'
    assert set(rejected(gpu2, "RequestSelector")) == {f"{GPU}/worker-gpu-2/gpu-{i}" for i in range(4)}
    assert set(rejected(gpu2, "RequestSelector").values()) == {selector}
    cpu = node_of(allocation, "worker-cpu-1")
    assert set(rejected(cpu, "DeviceClassSelector")) == {"dra.cpu/worker-cpu-1/cpudevnuma000",
                                                         "dra.cpu/worker-cpu-1/cpudevnuma001",
                                                         "dra.memory/worker-cpu-1/numa0",
                                                         "dra.memory/worker-cpu-1/numa1"}
    (finding,) = [f for f in result.json()["findings"] if f["code"] == "Unsatisfiable"]
    assert finding["severity"] == "error" and "change the selector" in finding["message"]


def test_device_held_by_another_claim(dra):
    doc = dra("explain", "pod", "eval-replay", "-n", "default", "--snapshot", str(EXAMPLE), "-o", "json").json()
    gpu2 = node_of(doc["allocation"], "worker-gpu-2")
    assert rejected(gpu2, "AlreadyAllocated") == {f"{GPU}/worker-gpu-2/gpu-1": "allocated to claim default/eval-gpu"}
    (finding,) = [f for f in doc["findings"] if f["code"] == "Unsatisfiable"]
    assert "gpu-1 is allocated to claim default/eval-gpu" in finding["message"]


def test_tainted_device_and_one_screen_of_text(dra):
    result = dra("explain", "pod", "batch-embed", "-n", "ml", "--snapshot", str(EXAMPLE))
    assert result.exit_code == 0, result
    text = result.stdout
    # the whole answer on one screen: rows of a 120-column terminal (before wrapping it was 25 lines of up
    # to 300 columns, 35 such rows)
    # (+4 rows since the scheduler's own verdict heads it: its header, message, the nodes on one line, next)
    # (+3 rows: what Karpenter does with such a pod, and the setting that answer assumes)
    assert sum(max(1, -(-len(line) // 120)) for line in text.splitlines()) <= 48
    assert "Pod cgroup" not in text and "-o json (cgroups)" in text  # not on a node: why pending is the story
    assert "worker-gpu-2  NOT feasible: request gpus of ml/batch-embed-gpus needs 2, 1 device qualifies" in text
    assert (f"Taint: {GPU}/worker-gpu-2/gpu-3 — taint gpu.example.com/unhealthy=ecc-errors:NoSchedule is not "
            "tolerated") in " ".join(text.split())
    doc = dra("explain", "pod", "batch-embed", "-n", "ml", "--snapshot", str(EXAMPLE), "-o", "json").json()
    gpu2 = node_of(doc["allocation"], "worker-gpu-2")
    assert gpu2["requests"][0]["candidates"] == [f"{GPU}/worker-gpu-2/gpu-2"] and gpu2["requests"][0]["wanted"] == "2"


def test_a_pending_claim_that_fits_says_where_and_what(dra):
    doc = dra("explain", "claim", "spare-gpu", "-n", "ml", "--snapshot", str(EXAMPLE), "-o", "json").json()
    contract(doc["allocation"])
    assert doc["allocation"]["feasibleNodes"] == ["worker-gpu-2"]
    (node,) = [n for n in doc["allocation"]["nodes"] if n["feasible"]]
    assert node["results"] == [{"claim": "ml/spare-gpu", "request": "gpu", "driver": GPU, "pool": "worker-gpu-2",
                                "device": "gpu-2"}]
    assert not [f for f in doc["findings"] if f["code"].startswith("Unsatisfiable")]


def test_node_narrows(dra):
    doc = dra("explain", "claim", "spare-gpu", "-n", "ml", "--snapshot", str(EXAMPLE), "--node", "worker-gpu-1",
              "-o", "json").json()
    assert [n["node"] for n in doc["allocation"]["nodes"]] == ["worker-gpu-1"]
    assert doc["allocation"]["nodesChecked"] == 1 and doc["allocation"]["feasibleNodes"] == []


def test_allocated_claims_and_bound_pods_get_no_allocation_section(dra):
    assert dra("explain", "claim", "eval-gpu", "-n", "default", "--snapshot", str(EXAMPLE), "-o",
               "json").json()["allocation"] is None
    assert dra("explain", "pod", "embedder", "-n", "ml", "--snapshot", str(EXAMPLE), "-o",
               "json").json()["allocation"] is None


def test_claims_findings_name_the_unsatisfiable_ones(dra):
    doc = dra("claims", "-A", "--snapshot", str(EXAMPLE), "-o", "json").json()
    findings = {i["name"]: i["findings"] for i in doc["items"]}
    assert "Unsatisfiable" in findings["llm-70b-gpu-x7k2p"] and "Unsatisfiable" in findings["batch-embed-gpus"]
    assert "Unsatisfiable" in findings["eval-replay-gpu"]
    assert "Unsatisfiable" not in findings["spare-gpu"]  # no pod waits for it: nothing asks the scheduler


# -- built scenarios --------------------------------------------------------------------------

def write(tmp_path: Path, objects: list[dict]) -> str:
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "labels": {}}} for n in ("worker-1", "worker-2")]
    klass = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": GPU},
             "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU}"'}}]}}
    (tmp_path / "all.yaml").write_text(yaml.safe_dump_all([*nodes, klass, *objects]))
    return str(tmp_path)


def pending(name: str, claims: dict[str, str], nominated: str | None = None) -> dict:
    p = pod(name, node=None, claims=claims, phase="Pending")
    if nominated:
        p["status"]["nominatedNodeName"] = nominated
    return p


def want(name: str, count: int = 1, selector: str | None = None, klass: str = GPU, **more) -> dict:
    c = claim(name, devices=(), node=None)
    exactly = c["spec"]["devices"]["requests"][0]["exactly"]
    exactly.update({"deviceClassName": klass, "count": count, **more})
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return c


def test_a_pods_claims_are_allocated_together(dra, tmp_path):
    """Each claim alone fits worker-1's one free GPU; together they do not (one pass, as the scheduler)."""
    snap = write(tmp_path, [resource_slice("worker-1", GPU, ["gpu-0"]), resource_slice("worker-2", GPU, []),
                            want("a"), want("b"), pending("both", {"x": "a", "y": "b"})])
    doc = dra("explain", "pod", "both", "-n", "ml", "--snapshot", snap, "-o", "json").json()
    assert doc["allocation"]["claims"] == ["ml/a", "ml/b"] and doc["allocation"]["feasibleNodes"] == []
    alone = dra("explain", "claim", "a", "-n", "ml", "--snapshot", snap, "-o", "json").json()
    assert alone["allocation"]["feasibleNodes"] == ["worker-1"]


def test_template_claims_before_they_exist(dra, tmp_path):
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "two-gpus", "namespace": "ml"},
                "spec": {"spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": GPU,
                                                                                     "count": 2}}]}}}}
    p = pod("fresh", node=None, templates={"g": "two-gpus"}, phase="Pending")
    snap = write(tmp_path, [resource_slice("worker-1", GPU, ["gpu-0", "gpu-1"]), resource_slice("worker-2", GPU, ["gpu-0"]),
                            template, p])
    doc = dra("explain", "pod", "fresh", "-n", "ml", "--snapshot", snap, "-o", "json").json()
    assert doc["allocation"]["feasibleNodes"] == ["worker-1"]
    assert doc["allocation"]["claims"] == ["ml/fresh-g-<template>"]


def test_nominated_node_that_cannot_take_it(dra, tmp_path):
    snap = write(tmp_path, [resource_slice("worker-1", GPU, ["gpu-0"]), resource_slice("worker-2", GPU, []),
                            want("a"), pending("p", {"x": "a"}, nominated="worker-2")])
    doc = dra("explain", "pod", "p", "-n", "ml", "--snapshot", snap, "-o", "json").json()
    codes = [f["code"] for f in doc["findings"]]
    assert "UnsatisfiableOnNode" in codes and "Unsatisfiable" not in codes


@pytest.mark.parametrize("make, error", [
    (lambda: want("a", selector="device.attributes[ 1 +"), "CEL compile error"),
    (lambda: want("a", selector=f'device.attributes["{GPU}"].model > 5'), "CEL runtime error"),
    (lambda: want("a", klass="no-such-class"), "could not retrieve device class no-such-class"),
    # a missing attribute: the scheduler's words, with its hint (errors.go)
    (lambda: want("a", selector=f'device.attributes["{GPU}"].nope == 1'),
     "CEL runtime error: no such key: nope. consider using CEL optional chaining (.? followed by orValue()) or "
     "guarding the check with has() for optional fields"),
])
def test_bad_input_is_a_finding_never_a_traceback(dra, tmp_path, make, error):
    snap = write(tmp_path, [resource_slice("worker-1", GPU, ["gpu-0"]), make(), pending("p", {"x": "a"})])
    result = dra("explain", "pod", "p", "-n", "ml", "--snapshot", snap, "-o", "json")
    assert result.exit_code == 0 and "Traceback" not in result.stderr, result
    doc = result.json()
    errors = [n["error"] for n in doc["allocation"]["nodes"] if n["error"]]
    assert errors and all(error in e for e in errors)
    (finding,) = [f for f in doc["findings"] if f["code"] == "Unsatisfiable"]
    assert "the scheduler fails with an error" in finding["message"] and error in finding["message"]
    text = dra("explain", "pod", "p", "-n", "ml", "--snapshot", snap)
    assert text.exit_code == 0 and "the scheduler fails on this node with an error" in text.stdout


def test_a_function_this_tool_lacks_is_no_verdict(dra, tmp_path):
    snap = write(tmp_path, [resource_slice("worker-1", GPU, ["gpu-0"]),
                            want("a", selector='ip("10.0.0.1").family() == 4'), pending("p", {"x": "a"})])
    doc = dra("explain", "pod", "p", "-n", "ml", "--snapshot", snap, "-o", "json").json()
    codes = [f["code"] for f in doc["findings"]]
    assert "AllocationUnknown" in codes and "Unsatisfiable" not in codes
    assert [n["undetermined"] for n in doc["allocation"]["nodes"] if n["node"] == "worker-1"][0]


def test_would_karpenter_launch_a_node_for_it(dra, tmp_path):
    """No node fits a 141Gi GPU; the NodeOverlay templates predict p5en.48xlarge nodes with such GPUs
    (a proposal): listed as would-fit, and the finding says so."""
    it_key = "node.kubernetes.io/instance-type"
    overlay = {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": "h200-slices"},
               "spec": {"weight": 10, "requirements": [{"key": it_key, "operator": "In", "values": ["p5en.48xlarge"]}],
                        "dynamicResources": {"resourceSliceTemplates": [{"metadata": {"name": "gpus"}, "spec": {
                            "driver": GPU, "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "H200"}},
                                                        "capacity": {"memory": {"value": "141Gi"}}} for i in range(8)]}}]}}}
    nodepool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu"},
                "spec": {"template": {"metadata": {"labels": {}}, "spec": {"requirements": []}}}}
    catalog = {"apiVersion": "kubectl-dra.io/v1alpha1", "kind": "InstanceTypeCatalog", "metadata": {"name": "c"},
               "instanceTypes": [{"name": name, "labels": {it_key: name}, "capacity": {"cpu": "192", "memory": "2Ti"},
                                  "offerings": [{"zone": "z1", "capacityType": "on-demand", "price": 1.0}]}
                                 for name in ("p5en.48xlarge", "m7i.2xlarge")]}
    big = 'device.capacity["gpu.example.com"].memory.compareTo(quantity("141Gi")) >= 0'
    snap = write(tmp_path, [resource_slice("worker-1", GPU, ["gpu-0"]), overlay, nodepool, catalog,
                            want("a", selector=big), pending("p", {"x": "a"})])
    doc = dra("explain", "pod", "p", "-n", "ml", "--snapshot", snap, "-o", "json").json()
    proposals = {(p["nodePool"], p["instanceType"]): p for p in doc["allocation"]["proposals"]}
    assert list(proposals) == [("gpu", "p5en.48xlarge")]  # m7i has no predicted slices: not a candidate
    fit = proposals[("gpu", "p5en.48xlarge")]
    assert fit["feasible"] and fit["proposal"] and fit["results"][0]["device"] == "gpu-0"
    (finding,) = [f for f in doc["findings"] if f["code"] == "Unsatisfiable"]
    assert "NodePool gpu, instance type p5en.48xlarge" in finding["message"]
    text = dra("explain", "pod", "p", "-n", "ml", "--snapshot", snap).stdout
    assert "gpu/p5en.48xlarge  would fit: gpu.example.com/gpu-0 (req)" in text
    # a pod that fits an existing node gets no proposals
    snap2 = write(tmp_path / "2" if (tmp_path / "2").mkdir() is None else tmp_path,
                  [resource_slice("worker-1", GPU, ["gpu-0"]), overlay, nodepool, catalog, want("a"),
                   pending("p", {"x": "a"})])
    assert dra("explain", "pod", "p", "-n", "ml", "--snapshot", snap2, "-o", "json").json()["allocation"]["proposals"] == []
