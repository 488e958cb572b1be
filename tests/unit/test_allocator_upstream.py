"""The upstream allocator test table (k8s.io/dynamic-resource-allocation structured/internal/
allocatortesting/allocator_testing.go @ v0.37.2), every case the stable allocator runs, as API
objects (tests/fixtures/allocator: how they were extracted, and the expectations the upstream
assertions accepted). Each runs with exactly its own feature flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubectl_dra.allocation.allocator import AllocatedState, Allocator
from kubectl_dra.allocation.gather import gather
from kubectl_dra.model.registry import parse_object
from kubectl_dra.quantity import Quantity

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "allocator"
CASES = json.loads((FIXTURES / "upstream-stable-cases.json").read_text())
# the cases only the incubating allocator (1.37's default) runs: consumable capacity, binding
# conditions, fractional capacity, and the lexicographical-order ones
INCUBATING = json.loads((FIXTURES / "upstream-incubating-cases.json").read_text())


def _obj(raw: dict, api_version: str, kind: str):
    return parse_object({"apiVersion": api_version, "kind": kind, **raw})


def run(case: dict):
    features = frozenset(k for k, v in case["features"].items() if v)
    node = _obj({"metadata": {"name": case["node"], "labels": case.get("nodeLabels") or {}}}, "v1", "Node")
    # upstream's claims have no namespace (the extraction added one): the messages name them by name
    claims = [_obj({**c, "metadata": {k: v for k, v in c["metadata"].items() if k != "namespace"}},
                   "resource.k8s.io/v1", "ResourceClaim") for c in case["claims"]]
    classes = {c["metadata"]["name"]: _obj(c, "resource.k8s.io/v1", "DeviceClass") for c in case["classes"]}
    slices = [_obj(s, "resource.k8s.io/v1", "ResourceSlice") for s in case["slices"]]
    state = AllocatedState()
    for device in case["allocatedDevices"]:
        state.exclusive[tuple(device.split("/", 2))] = "other/claim"
    for shared in case.get("allocatedSharedDevices") or ():
        state.shared.setdefault(tuple(shared.split("/")[:3]), []).append("other/claim")
    for device, consumed in (case.get("aggregatedCapacity") or {}).items():
        state.consumed[tuple(device.split("/", 2))] = {k: Quantity.parse(v) for k, v in consumed.items()}
    by_pool: dict = {}
    for rs in slices:
        by_pool.setdefault((rs.spec.driver, rs.spec.pool.name), []).append(rs)
    reaching = [rs for rs in slices if not rs.spec.node_name or rs.spec.node_name == node.name]
    gathered = gather(node, reaching, by_pool, partitionable="partitionableDevices" in features)
    return Allocator(claims, classes, state, features=features).allocate(node, gathered), claims


@pytest.mark.parametrize("case", CASES + INCUBATING, ids=[c["name"] for c in CASES + INCUBATING])
def test_upstream_case(case):
    outcome, claims = run(case)
    if case["expectError"]:
        assert outcome.error is not None, f"expected an error, got feasible={outcome.feasible}"
        for part in case.get("expectErrorSubstrings") or [case["expectError"]]:
            assert part in outcome.error
        return
    assert outcome.error is None, outcome.error
    if case["expectNoAllocation"] or not case["expectResults"]:
        assert not outcome.feasible or not claims
        return
    assert outcome.feasible
    for index, (claim, expected) in enumerate(zip(claims, case["expectResults"])):
        def row(p):
            consumed = {k: str(v) for k, v in p.consumed.items()} if p.consumed else None
            return (p.request, p.driver, p.pool, p.device, p.shared, json.dumps(consumed, sort_keys=True))

        got = [row(p) for p in outcome.results if p.claim == claim.name]
        if len({c.name for c in claims}) != len(claims):  # two claims of one name: by position in pick order
            got = [row(p) for p in outcome.results][sum(len(e) for e in case["expectResults"][:index]):][:len(expected)]
        want = [(r["request"], r["driver"], r["pool"], r["device"], bool(r.get("shared")),
                 json.dumps({k: str(Quantity.parse(v)) for k, v in r["consumedCapacity"].items()}, sort_keys=True)
                 if r.get("consumedCapacity") else "null") for r in expected]
        if case.get("resultOrderSignificant"):
            assert got == want
        else:
            assert sorted(got) == sorted(want)
