"""The explanation and the search ask one device the same checks (``Allocator._refusal``, the
upstream allocator's order): for a claim with one request for one device and no constraints, a
node is feasible exactly when the explanation lists a candidate, and each refused device carries
the reason of the first check it fails."""

from __future__ import annotations

import pytest
from builders import claim

from kubectl_dra.allocation.allocator import AllocatedState, Allocator
from kubectl_dra.allocation.gather import gather
from kubectl_dra.model.registry import parse_object

GPU, NODE = "gpu.example.com", "worker-1"
HELD = (GPU, NODE, "gpu-0")


def _slices(device: dict, counter: str = "80Gi") -> list[dict]:
    pool = {"name": NODE, "generation": 1, "resourceSliceCount": 2}
    return [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "counters"},
             "spec": {"driver": GPU, "nodeName": NODE, "pool": pool,
                      "sharedCounters": [{"name": "set", "counters": {"mem": {"value": counter}}}]}},
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "devices"},
             "spec": {"driver": GPU, "nodeName": NODE, "pool": pool, "devices": [{"name": "gpu-0", **device}]}}]


def _outcome(device: dict, request: dict, held: bool = False, counter: str = "80Gi"):
    node = parse_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}})
    slices = [parse_object(s) for s in _slices(device, counter)]
    klass = parse_object({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": GPU},
                          "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU}"'}}]}})
    wanted = claim("want")
    wanted["status"] = {}
    wanted["spec"]["devices"] = {"requests": [{"name": "req", "exactly": {"deviceClassName": GPU, **request}}]}
    state = AllocatedState(exclusive={HELD: "ml/other"} if held else {})
    return Allocator([parse_object(wanted)], {GPU: klass}, state).allocate(node, gather(node, slices,
                                                                                       {(GPU, NODE): slices}))


SHAREABLE = {"allowMultipleAllocations": True, "capacity": {"memory": {"value": "80Gi"}},
             "consumesCounters": [{"counterSet": "set", "counters": {"mem": {"value": "50Gi"}}}]}
TAINTED = {"taints": [{"key": "example.com/broken", "effect": "NoSchedule"}]}

CASES = [
    # (what, device, asked (the request spec), held, counter, reason the explanation gives, or None for a candidate)
    ("a free device", {}, {}, False, "80Gi", None),
    ("held by another claim", {}, {}, True, "80Gi", "AlreadyAllocated"),
    ("admin access minds no other claim", {}, {"adminAccess": True}, True, "80Gi", None),
    ("a selector that is false before the holder", {}, {"selectors": [{"cel": {"expression": "false"}}]}, True,
     "80Gi", "RequestSelector"),
    ("an untolerated taint", TAINTED, {}, False, "80Gi", "Taint"),
    ("counters used up", SHAREABLE, {}, False, "40Gi", "Counters"),
    # a shareable device held whole: its counters are charged again for an admin-access request (only
    # shares already counted skip them, deviceCapacityInUse), so the search refuses it, and so must the
    # explanation
    ("admin access to a shareable device held whole, counters short", SHAREABLE, {"adminAccess": True}, True,
     "80Gi", "Counters"),
    ("capacity the device lacks", {"capacity": {"memory": {"value": "1Gi"}}},
     {"capacity": {"requests": {"memory": "2Gi"}}}, False, "80Gi", "Capacity"),
]


@pytest.mark.parametrize("what, device, asked, held, counter, reason", CASES, ids=[c[0] for c in CASES])
def test_the_explanation_refuses_what_the_search_refuses(what, device, asked, held, counter, reason):
    outcome = _outcome(device, asked, held, counter)
    assert (outcome.error, outcome.undetermined) == (None, None)
    (diagnosis,) = outcome.requests
    assert outcome.feasible == bool(diagnosis.candidates) == (reason is None)
    assert [r.reason for r in diagnosis.rejected] == ([] if reason is None else [reason])
