"""A pool whose shared counter the cluster's allocations already overdrew, through ``kubectl dra
explain claim``: the scheduler (``checkAvailableCounters`` compares every counter of the pool) refuses
every counter-consuming device of that pool, so no node may be called feasible for it
(docs/kubernetes/dra-apis.md §6)."""

from __future__ import annotations

from pathlib import Path

import yaml
from builders import claim

GPU, NODE = "gpu.example.com", "worker-1"


def _snapshot(tmp_path: Path, sm: str) -> str:
    """worker-1's one pool: counter set ``gpu`` (mem 80Gi, sm ``sm``); partition ``p0`` (sm 8) is
    allocated, partition ``p1`` (mem 10Gi only) is free; claim ``want`` asks for one GPU."""
    pool = {"name": NODE, "generation": 1, "resourceSliceCount": 2}
    counters = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "w1-counters"},
                "spec": {"driver": GPU, "nodeName": NODE, "pool": pool, "sharedCounters": [
                    {"name": "gpu", "counters": {"mem": {"value": "80Gi"}, "sm": {"value": sm}}}]}}
    devices = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "w1-devices"},
               "spec": {"driver": GPU, "nodeName": NODE, "pool": pool, "devices": [
                   {"name": "p0", "consumesCounters": [{"counterSet": "gpu", "counters": {"sm": {"value": "8"}}}]},
                   {"name": "p1", "consumesCounters": [{"counterSet": "gpu", "counters": {"mem": {"value": "10Gi"}}}]},
               ]}}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": {}}}
    klass = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": GPU},
             "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU}"'}}]}}
    want = claim("want", devices=(), node=None)
    (tmp_path / "all.yaml").write_text(yaml.safe_dump_all([
        node, klass, counters, devices, want, claim("holder", devices=[(GPU, NODE, "p0")])]))
    return str(tmp_path)


def test_an_overdrawn_counter_refuses_a_partition_that_does_not_consume_it(dra, tmp_path):
    result = dra("explain", "claim", "want", "-n", "ml", "--snapshot", _snapshot(tmp_path, "4"), "-o", "json")
    assert result.exit_code == 0, result
    allocation = result.json()["allocation"]
    assert allocation["feasibleNodes"] == []
    (node,) = allocation["nodes"]
    (request,) = node["requests"]
    assert request["candidates"] == []
    assert {r["device"]: (r["reason"], r["message"]) for r in request["rejected"]} == {
        f"{GPU}/{NODE}/p0": ("AlreadyAllocated", "allocated to claim ml/holder"),
        f"{GPU}/{NODE}/p1": ("Counters", "shared counter gpu/sm of the pool is overdrawn (-4 left after the "
                                         "cluster's allocations): the scheduler refuses every device of the pool "
                                         "that consumes counters")}
    text = dra("explain", "claim", "want", "-n", "ml", "--snapshot", _snapshot(tmp_path, "4"))
    assert text.exit_code == 0 and "NOT feasible" in text.stdout and "gpu/sm of the pool is overdrawn" in " ".join(
        text.stdout.split())


def test_a_counter_used_exactly_to_its_value_still_admits_the_other_partition(dra, tmp_path):
    result = dra("explain", "claim", "want", "-n", "ml", "--snapshot", _snapshot(tmp_path, "8"), "-o", "json")
    assert result.exit_code == 0, result
    allocation = result.json()["allocation"]
    assert allocation["feasibleNodes"] == [NODE]
    (node,) = allocation["nodes"]
    assert node["results"] == [{"claim": "ml/want", "request": "req", "driver": GPU, "pool": NODE, "device": "p1"}]
