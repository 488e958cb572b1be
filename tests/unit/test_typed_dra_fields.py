"""Nested DRA fields are views (resource.k8s.io/v1 names): a bad value in a taint, a toleration, a
counter, a capacity request policy, a selector or a constraint is a named invalid field when the
object is read, and what the allocator or the eviction controller would decide on it is "cannot
tell" (never a traceback, never a verdict from what is left of the object)."""

from __future__ import annotations

import copy
from datetime import datetime, timezone

import pytest
from builders import claim, pod, reserved_pod

from kubectl_dra.allocation.allocator import AllocatedState, Allocator
from kubectl_dra.allocation.explain import template_claim
from kubectl_dra.allocation.gather import gather
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.registry import invalid_field_problems, parse_object
from kubectl_dra.quantity import Quantity
from kubectl_dra.taints.explain import explain_taints

GPU, NODE = "gpu.example.com", "worker-1"
T0 = datetime(2026, 11, 20, 9, 0, tzinfo=timezone.utc)


def _slice(name: str, spec: dict) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": GPU, "nodeName": NODE, "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 2},
                     **spec}}


def world() -> dict[str, dict]:
    """One partitionable GPU with every nested field set, and one claim that can have it: the
    allocation is feasible as written."""
    counters = _slice("counters", {"sharedCounters": [{"name": "gpu-0-set", "counters": {"mem": {"value": "80Gi"}}}]})
    devices = _slice("devices", {"devices": [{
        "name": "gpu-0",
        "attributes": {"model": {"string": "L40S"}},
        "capacity": {"memory": {"value": "80Gi", "requestPolicy": {
            "default": "1Gi", "validRange": {"min": "1Gi", "max": "80Gi", "step": "1Gi"}}}},
        "consumesCounters": [{"counterSet": "gpu-0-set", "counters": {"mem": {"value": "40Gi"}}}],
        "taints": [{"key": "example.com/maintenance", "value": "soon", "effect": "NoSchedule",
                    "timeAdded": "2026-11-20T08:00:00Z"}],
    }]})
    klass = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": GPU},
             "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU}"'}}]}}
    wanted = claim("want")
    wanted["status"] = {}
    wanted["spec"]["devices"] = {
        "requests": [{"name": "req", "exactly": {
            "deviceClassName": GPU,
            "selectors": [{"cel": {"expression": f'device.attributes["{GPU}"].model == "L40S"'}}],
            "tolerations": [{"key": "example.com/maintenance", "operator": "Exists", "effect": "NoSchedule",
                             "tolerationSeconds": 60}],
            "capacity": {"requests": {"memory": "2Gi"}}}}],
        "constraints": [{"requests": ["req"], "matchAttribute": f"{GPU}/model"}]}
    return {"counters": counters, "devices": devices, "class": klass, "claim": wanted}


def allocate(objects: dict[str, dict]):
    node = parse_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}})
    slices = [parse_object(objects[k]) for k in ("counters", "devices")]
    klass = parse_object(objects["class"])
    wanted = parse_object(objects["claim"])
    by_pool = {(GPU, NODE): slices}
    outcome = Allocator([wanted], {klass.name: klass}, AllocatedState()).allocate(node, gather(node, slices, by_pool))
    return outcome, {"counters": slices[0], "devices": slices[1], "class": klass, "claim": wanted}


def test_the_world_as_written_is_feasible():
    outcome, objects = allocate(world())
    assert (outcome.feasible, outcome.error, outcome.undetermined) == (True, None, None)
    assert [p.device for p in outcome.results] == ["gpu-0"]
    assert all(not obj.invalid_fields for obj in objects.values())
    device = objects["devices"].spec.devices[0]  # typed, with Quantity values
    assert device.consumes_counters[0].counters["mem"].value == Quantity.parse("40Gi")
    assert device.capacity["memory"].request_policy.valid_range.step == Quantity.parse("1Gi")
    assert device.taints[0].effect == "NoSchedule"
    assert objects["claim"].spec.devices.requests[0].exactly.tolerations[0].toleration_seconds == 60
    assert objects["claim"].spec.devices.constraints[0].match_attribute == f"{GPU}/model"
    assert objects["class"].spec.selectors[0].cel.expression == f'device.driver == "{GPU}"'


def _set(obj: dict, path: tuple, value) -> None:
    for part in path[:-1]:
        obj = obj[part]
    obj[path[-1]] = value


DEVICE = ("spec", "devices", 0)
POLICY = (*DEVICE, "capacity", "memory", "requestPolicy")
REQUEST = ("spec", "devices", "requests", 0, "exactly")

# (view, object, where the bad value goes, the bad value, the invalid field's path, words of its reason)
BAD = [
    ("Counter (shared)", "counters", ("spec", "sharedCounters", 0, "counters", "mem", "value"), "abc",
     "spec.sharedCounters[0].counters.mem.value", 'invalid quantity "abc"'),
    ("CounterSet", "counters", ("spec", "sharedCounters", 0, "name"), 7,
     "spec.sharedCounters[0].name", "string"),
    ("Counter (consumed)", "devices", (*DEVICE, "consumesCounters", 0, "counters", "mem", "value"), "abc",
     "spec.devices[0].consumesCounters[0].counters.mem.value", 'invalid quantity "abc"'),
    ("DeviceCounterConsumption", "devices", (*DEVICE, "consumesCounters", 0, "counterSet"), ["gpu-0-set"],
     "spec.devices[0].consumesCounters[0].counterSet", "string"),
    ("DeviceTaint", "devices", (*DEVICE, "taints", 0, "effect"), 5,
     "spec.devices[0].taints[0].effect", "string"),
    ("DeviceTaint (time)", "devices", (*DEVICE, "taints", 0, "timeAdded"), "yesterday",
     "spec.devices[0].taints[0].timeAdded", "datetime"),
    ("CapacityRequestPolicyRange", "devices", (*POLICY, "validRange", "min"), "lots",
     "spec.devices[0].capacity.memory.requestPolicy.validRange.min", 'invalid quantity "lots"'),
    ("CapacityRequestPolicy (default)", "devices", (*POLICY, "default"), {"value": "1Gi"},
     "spec.devices[0].capacity.memory.requestPolicy.default", "not a string"),
    ("CapacityRequestPolicy (validValues)", "devices", (*POLICY, "validValues"), ["1Gi", "many"],
     "spec.devices[0].capacity.memory.requestPolicy.validValues[1]", 'invalid quantity "many"'),
    ("DeviceToleration", "claim", (*REQUEST, "tolerations", 0, "effect"), 5,
     "spec.devices.requests[0].exactly.tolerations[0].effect", "string"),
    ("DeviceToleration (seconds)", "claim", (*REQUEST, "tolerations", 0, "tolerationSeconds"), "soon",
     "spec.devices.requests[0].exactly.tolerations[0].tolerationSeconds", "integer"),
    ("DeviceSelector", "claim", (*REQUEST, "selectors", 0, "cel"), "device.driver == 'x'",
     "spec.devices.requests[0].exactly.selectors[0].cel", "CELDeviceSelector"),
    ("CELDeviceSelector", "class", ("spec", "selectors", 0, "cel", "expression"), True,
     "spec.selectors[0].cel.expression", "string"),
    ("DeviceConstraint", "claim", ("spec", "devices", "constraints", 0, "matchAttribute"), {"name": "model"},
     "spec.devices.constraints[0].matchAttribute", "string"),
    ("DeviceConstraint (requests)", "claim", ("spec", "devices", "constraints", 0, "requests"), "req",
     "spec.devices.constraints[0].requests", "list"),
]


@pytest.mark.parametrize("view, which, where, value, path, reason", BAD, ids=[b[0] for b in BAD])
def test_a_bad_nested_value_is_a_named_invalid_field_when_read(view, which, where, value, path, reason):
    objects = world()
    _set(objects[which], where, value)
    obj = parse_object(objects[which])
    assert [f.path for f in obj.invalid_fields] == [path]
    assert reason in obj.invalid_fields[0].reason
    (line,) = invalid_field_problems(obj)  # what the Inventory reports on stderr
    assert line.startswith(f"{obj.KIND} {obj.key}: {path}: ") and "the object is kept" in line


@pytest.mark.parametrize("view, which, where, value, path, reason", BAD, ids=[b[0] for b in BAD])
def test_the_allocation_on_a_bad_nested_value_is_cannot_tell(view, which, where, value, path, reason):
    """Dropping the value would decide on what is left (no taint, no toleration, a missing counter:
    a wrong verdict); the allocator says it cannot tell, naming the object and the field."""
    objects = world()
    _set(objects[which], where, value)
    outcome, parsed = allocate(objects)
    if path.endswith(".timeAdded"):  # what the allocator does not read decides nothing: as written
        assert (outcome.feasible, outcome.error, outcome.undetermined) == (True, None, None)
        return
    assert (outcome.feasible, outcome.error, outcome.results) == (False, None, [])
    assert outcome.undetermined is not None and path in outcome.undetermined
    assert outcome.undetermined == f"{parsed[which].KIND} {parsed[which].key}: {path} did not validate" or \
        outcome.undetermined == f"device {GPU}/{NODE}/gpu-0: {parsed[which].KIND} {parsed[which].key}: {path} did not validate"


def test_a_bad_device_decides_nothing_for_its_neighbours():
    """A device's own unreadable taint leaves the other devices of its pool decided as before."""
    objects = world()
    objects["counters"]["spec"]["sharedCounters"][0]["counters"]["mem"]["value"] = "160Gi"
    second = copy.deepcopy(objects["devices"]["spec"]["devices"][0])
    second["name"] = "gpu-1"
    objects["devices"]["spec"]["devices"].append(second)
    objects["devices"]["spec"]["devices"][1]["taints"][0]["effect"] = 5
    outcome, _ = allocate(objects)
    assert outcome.feasible and [p.device for p in outcome.results] == ["gpu-0"]
    (request,) = outcome.requests
    assert request.candidates == [f"{GPU}/{NODE}/gpu-0"]
    assert [(r.device, r.reason) for r in request.rejected] == [(f"{GPU}/{NODE}/gpu-1", "Undetermined")]
    assert "spec.devices[1].taints[0].effect did not validate" in request.rejected[0].message


def test_a_template_claims_bad_toleration_is_cannot_tell():
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "t", "namespace": "ml"},
                "spec": {"spec": {"devices": {"requests": [{"name": "req", "exactly": {
                    "deviceClassName": GPU, "tolerations": [{"operator": "Exists", "effect": 5}]}}]}}}}
    made = template_claim(parse_object(pod("p", node=None, templates={"g": "t"})), "g", parse_object(template))
    assert [f.path for f in made.invalid_fields] == ["spec.devices.requests[0].exactly.tolerations[0].effect"]
    objects = world()
    node = parse_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}})
    slices = [parse_object(objects[k]) for k in ("counters", "devices")]
    klass = parse_object(objects["class"])
    outcome = Allocator([made], {GPU: klass}, AllocatedState()).allocate(
        node, gather(node, slices, {(GPU, NODE): slices}))
    assert not outcome.feasible and outcome.error is None
    assert "tolerations[0].effect did not validate" in outcome.undetermined


# ---- the eviction controller's view ---------------------------------------------------------------

def taint_world(*, taint: dict, toleration: dict | None = None):
    p = pod("my-pod", claims={"gpu": "my-claim"}, node=NODE)
    c = claim("my-claim", devices=[(GPU, NODE, "gpu-0")], reserved_for=[reserved_pod(p)])
    if toleration is not None:
        c["status"]["allocation"]["devices"]["results"][0]["tolerations"] = [toleration]
    s = _slice("devices", {"devices": [{"name": "gpu-0", "taints": [taint]}, {"name": "gpu-1"}]})
    s["spec"]["pool"]["resourceSliceCount"] = 1
    inventory = Inventory()
    inventory.extend(parse_object(o) for o in (p, c, s))
    result = explain_taints(inventory, T0)
    return {(d.device, c.claim): c for d in result.devices for c in d.consumers}


TAINT = {"key": "example.com/taint", "effect": "NoExecute", "timeAdded": "2026-11-20T08:00:00Z"}
MINE = (f"{GPU}/{NODE}/gpu-0", "ml/my-claim")


@pytest.mark.parametrize("taint, toleration, path", [
    ({**TAINT, "effect": 5}, None, "ResourceSlice devices: spec.devices[0].taints[0].effect"),
    ({**TAINT, "key": ["k"]}, None, "ResourceSlice devices: spec.devices[0].taints[0].key"),
    ({**TAINT, "timeAdded": "yesterday"}, None, "ResourceSlice devices: spec.devices[0].taints[0].timeAdded"),
    (TAINT, {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": "soon"},
     "ResourceClaim ml/my-claim: status.allocation.devices.results[0].tolerations[0].tolerationSeconds"),
    (TAINT, {"operator": "Exists", "effect": 5},
     "ResourceClaim ml/my-claim: status.allocation.devices.results[0].tolerations[0].effect"),
])
def test_an_unreadable_taint_or_toleration_is_outcome_unknown(taint, toleration, path):
    consumer = taint_world(taint=taint, toleration=toleration)[MINE]
    assert (consumer.outcome, consumer.pods, consumer.evict_at) == ("Unknown", ["ml/my-pod"], None)
    assert consumer.unknown == f"{path} did not validate"


def test_readable_taints_and_tolerations_decide_as_before():
    toleration = {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 7200}
    consumer = taint_world(taint=TAINT, toleration=toleration)[MINE]
    assert (consumer.outcome, consumer.evict_at, consumer.unknown) == ("EvictionPending", "2026-11-20T10:00:00Z", None)


def test_a_device_the_class_does_not_select_decides_nothing():
    """Its selectors read only attributes and capacity values: a bad request policy on a device the
    class does not select is that device's "not selected", as before, not the node's "cannot tell"."""
    objects = world()
    other = copy.deepcopy(objects["devices"]["spec"]["devices"][0])
    other.update(name="nic-0", consumesCounters=[])
    other["capacity"]["memory"]["requestPolicy"]["validRange"]["min"] = "lots"
    other["attributes"]["model"]["string"] = "NIC"
    objects["devices"]["spec"]["devices"].insert(0, other)
    objects["class"]["spec"]["selectors"][0]["cel"]["expression"] = \
        f'device.attributes["{GPU}"].model == "L40S" && device.capacity["{GPU}"].memory.compareTo(quantity("1Gi")) > 0'
    outcome, _ = allocate(objects)
    assert (outcome.feasible, outcome.undetermined) == (True, None)
    (request,) = outcome.requests
    assert request.candidates == [f"{GPU}/{NODE}/gpu-0"]
    assert [(r.device, r.reason) for r in request.rejected] == [(f"{GPU}/{NODE}/nic-0", "DeviceClassSelector")]
    other["attributes"]["model"]["string"] = "L40S"  # selected: now its policy decides, and nobody can read it
    outcome, _ = allocate(objects)
    assert not outcome.feasible and "spec.devices[0].capacity.memory.requestPolicy.validRange.min" in outcome.undetermined


def test_a_proposal_template_value_that_does_not_validate_is_cannot_tell():
    """Predicted slices are read like published ones: the bad value is named, not a ValidationError."""
    from types import SimpleNamespace

    from kubectl_dra.allocation.proposals import explain_proposals

    objects = world()
    inventory = Inventory()
    inventory.add(parse_object(objects["class"]))
    device = {"name": "gpu-0", "attributes": {"model": {"string": "L40S"}}, "capacity": {"memory": {"value": "lots"}}}
    view = SimpleNamespace(node_pool="np", name="big", resource_slices=[{"driver": GPU, "pool": {}, "devices": [device]}])
    (proposal,) = explain_proposals([parse_object(objects["claim"])], inventory, [view])
    assert (proposal.feasible, proposal.results) == (False, [])
    assert proposal.message == ("kubectl-dra cannot tell: device gpu.example.com/proposal-np-big/gpu-0: ResourceSlice "
                                "proposal-np-big-0: spec.devices[0].capacity.memory.value did not validate")
