"""A DeviceTaintRule whose own spec did not validate, or whose effect is none this tool knows, is
never applied as if it were valid (docs/kubernetes/dra-apis.md §7): the devices it may select are
"cannot tell", in the allocator (Undetermined) and in the eviction view (Unknown)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from builders import claim, pod, reserved_pod, resource_slice

from kubectl_dra.allocation.allocator import AllocatedState, Allocator
from kubectl_dra.allocation.explain import rule_taints
from kubectl_dra.allocation.gather import gather
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.registry import parse_object
from kubectl_dra.taints.explain import claim_taints, explain_taints
from kubectl_dra.taints.rules import split_rules, unevaluated_rule

GPU, NIC = "gpu.example.com", "dra.net"
DEVICES = [(GPU, "worker-1", "gpu-0"), (GPU, "worker-1", "gpu-1"), (NIC, "worker-1", "eth0"), (GPU, "worker-2", "gpu-0")]
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)


def rule(spec, name: str = "maint"):
    return parse_object({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name},
                         "spec": spec})


def taint(effect="NoExecute", **more) -> dict:
    return {"key": "example.com/maintenance", **({"effect": effect} if effect is not ... else {}), **more}


CASES = [
    # (what, spec, for allocation, the reason's start or None (applied as read, or provably inert),
    #  the devices of DEVICES it may select)
    ("an effect that is no string", {"deviceSelector": {"device": "gpu-0"}, "taint": taint(7)}, True,
     "spec.taint.effect did not validate", {DEVICES[0], DEVICES[3]}),
    ("an effect a newer release may define", {"deviceSelector": {"driver": GPU},
                                              "taint": taint("NoExecuteWithPodDisruptionBudget")}, True,
     'spec.taint.effect "NoExecuteWithPodDisruptionBudget" is none of None, NoSchedule, NoExecute',
     {DEVICES[0], DEVICES[1], DEVICES[3]}),
    ("no effect", {"deviceSelector": {"driver": GPU, "device": "gpu-1"}, "taint": taint(...)}, True,
     "spec.taint.effect is not set", {DEVICES[1]}),
    ("a selector field that is no string matches any value", {"deviceSelector": {"driver": 5, "pool": "worker-1"},
                                                              "taint": taint()}, True,
     "spec.deviceSelector.driver did not validate", {DEVICES[0], DEVICES[1], DEVICES[2]}),
    ("a selector that is no object may select any device", {"deviceSelector": "all", "taint": taint("NoSchedule")},
     True, "spec.deviceSelector did not validate", set(DEVICES)),
    ("a taint that is no object", {"deviceSelector": {"device": "gpu-1"}, "taint": "NoExecute"}, True,
     "spec.taint did not validate", {DEVICES[1]}),
    ("a taint key that is no string", {"deviceSelector": {"pool": "worker-2"}, "taint": {"key": 1, "effect": "NoSchedule"}},
     True, "spec.taint.key did not validate", {DEVICES[3]}),
    ("a timeAdded that is no time dates an eviction only", {"deviceSelector": {"device": "gpu-0"},
                                                            "taint": taint(timeAdded="soon")}, False,
     "spec.taint.timeAdded did not validate", {DEVICES[0], DEVICES[3]}),
    ("... and is no matter to allocation", {"deviceSelector": {"device": "gpu-0"}, "taint": taint(timeAdded="soon")},
     True, None, set()),
    ("a valid rule is applied as read", {"deviceSelector": {"device": "gpu-0"}, "taint": taint()}, True, None, set()),
    ("effect None does nothing whatever else is wrong", {"deviceSelector": {"driver": 5}, "taint": taint("None")},
     True, None, set()),
    ("no deviceSelector selects nothing, whatever the effect", {"taint": taint("Whatever")}, True, None, set()),
]


@pytest.mark.parametrize("what, spec, allocation, reason, selects", CASES, ids=[c[0] for c in CASES])
def test_which_rules_cannot_be_evaluated_and_what_they_may_select(what, spec, allocation, reason, selects):
    found = unevaluated_rule(rule(spec), allocation=allocation)
    if reason is None:
        assert found is None
        return
    assert found.reason.startswith(reason), found.reason
    assert {key for key in DEVICES if found.may_select(key)} == selects
    assert found.message.startswith(f"DeviceTaintRule maint could not be evaluated ({found.reason})")


def test_split_rules_applies_only_what_can_be_evaluated():
    rules = [rule({"deviceSelector": {"device": "gpu-0"}, "taint": taint()}, "good"),
             rule({"deviceSelector": {"device": "gpu-0"}, "taint": taint("Later")}, "later"),
             rule({"deviceSelector": {"driver": 5}, "taint": taint("None")}, "inert")]
    applied, unevaluated = split_rules(rules)
    assert [r.name for r in applied] == ["good"] and [r.name for r in unevaluated] == ["later"]


# -- the allocator ------------------------------------------------------------------------------

def _allocate(spec: dict, *, device_taints: list | None = None, tolerations: list | None = None):
    node = parse_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"}})
    devices = [{"name": "gpu-0", **({"taints": device_taints} if device_taints else {})}, {"name": "gpu-1"}]
    slices = [parse_object(resource_slice("worker-1", GPU, devices))]
    klass = parse_object({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": GPU},
                          "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU}"'}}]}})
    asking = claim("asking", devices=(), node=None)
    if tolerations:
        asking["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = tolerations
    inventory = Inventory()
    inventory.extend([node, *slices, klass, rule(spec)])
    return Allocator([parse_object(asking)], {GPU: klass}, AllocatedState(), rule_taints=rule_taints(inventory)
                     ).allocate(node, gather(node, slices, {(GPU, "worker-1"): slices}))


UNKNOWN_ON_GPU0 = {"deviceSelector": {"device": "gpu-0"}, "taint": taint(7)}


@pytest.mark.parametrize("what, spec, kwargs, feasible, gpu0", [
    # the search reaches gpu-0 first: whether it takes it is unknown, so the node has no verdict
    ("the first device may be tainted", UNKNOWN_ON_GPU0, {}, None, "Undetermined"),
    ("an unknown effect on the first device", {"deviceSelector": {"device": "gpu-0"}, "taint": taint("Later")}, {},
     None, "Undetermined"),
    # before this fix the dropped driver matched every driver: gpu-0 refused (a false refusal of the
    # first device, and of every device on the cluster)
    ("a dropped selector field", {"deviceSelector": {"driver": 5, "device": "gpu-0"}, "taint": taint()}, {}, None,
     "Undetermined"),
    # a device its own slice already refuses is refused whatever the rule does
    ("a certain taint refuses first", UNKNOWN_ON_GPU0,
     {"device_taints": [{"key": "broken", "effect": "NoSchedule"}]}, True, "Taint"),
    # a request that tolerates every taint takes the device whatever the rule's effect
    ("tolerating every taint", UNKNOWN_ON_GPU0, {"tolerations": [{"operator": "Exists"}]}, True, None),
    # a toleration of one effect does not cover an effect that is unknown
    ("tolerating NoExecute only", {"deviceSelector": {"device": "gpu-0"}, "taint": taint("Later")},
     {"tolerations": [{"operator": "Exists", "effect": "NoExecute"}]}, None, "Undetermined"),
    # the search takes gpu-0 and never reaches the device the rule may taint
    ("only a later device may be tainted", {"deviceSelector": {"device": "gpu-1"}, "taint": taint(7)}, {}, True, None),
])
def test_the_allocator_never_guesses_what_a_rule_does(what, spec, kwargs, feasible, gpu0):
    outcome = _allocate(spec, **kwargs)
    if feasible is None:
        assert not outcome.feasible and outcome.results == []
        assert outcome.undetermined == ("device gpu.example.com/worker-1/gpu-0: DeviceTaintRule maint could not be "
                                        f"evaluated ({unevaluated_rule(rule(spec), allocation=True).reason}): whether "
                                        "it taints the devices it may select is unknown")
    else:
        assert outcome.feasible and outcome.undetermined is None
        assert [p.device for p in outcome.results] == ["gpu-1" if gpu0 else "gpu-0"]
    (diagnosis,) = outcome.requests
    reasons = {r.device.rsplit("/", 1)[1]: r.reason for r in diagnosis.rejected}
    assert reasons.get("gpu-0") == gpu0


# -- the eviction view --------------------------------------------------------------------------

def _cluster(spec: dict) -> Inventory:
    user = pod("user", claims={"g": "held"})
    held = claim("held", devices=[(GPU, "worker-1", "gpu-0")], reserved_for=[reserved_pod(user)])
    inventory = Inventory()
    inventory.extend(parse_object(o) for o in (resource_slice("worker-1", GPU, ["gpu-0", "gpu-1"]), user, held))
    inventory.add(rule(spec))
    return inventory


@pytest.mark.parametrize("spec", [
    UNKNOWN_ON_GPU0,
    {"deviceSelector": {"device": "gpu-0"}, "taint": taint("Later")},
    # before this fix: the dropped driver matched every driver and the pod was Evicted
    {"deviceSelector": {"driver": 5, "device": "gpu-0"}, "taint": taint()},
    {"deviceSelector": {"device": "gpu-0"}, "taint": taint(timeAdded="soon")},
], ids=["effect no string", "effect unknown", "selector field dropped", "timeAdded no time"])
def test_the_eviction_view_says_unknown_never_evicted(spec):
    inventory = _cluster(spec)
    message = unevaluated_rule(rule(spec)).message
    result = explain_taints(inventory, NOW)
    (device,) = result.devices
    assert device.device == f"{GPU}/worker-1/gpu-0" and device.taints == [] and device.unknown == message
    assert [(c.claim, c.outcome, c.unknown, c.pods) for c in device.consumers] == [
        ("ml/held", "Unknown", message, ["ml/user"])]
    assert result.problems[-1] == message
    assert [f.code for f in result.findings] == ["DeviceTaintUnknown"]
    taints, findings = claim_taints(inventory.get(ResourceClaim, "ml", "held"), inventory, NOW)
    assert taints == {}
    assert [(f.code, f.message) for f in findings] == [(
        "DeviceTaintUnknown", f"what the taints of device {GPU}/worker-1/gpu-0 do to claim ml/held is unknown, so "
                              f"whether pods ml/user are evicted or keep it is not concluded: {message}")]


def test_a_valid_rule_still_evicts():
    inventory = _cluster({"deviceSelector": {"device": "gpu-0"}, "taint": taint()})
    result = explain_taints(inventory, NOW)
    (device,) = result.devices
    assert [c.outcome for c in device.consumers] == ["Evicted"] and device.unknown is None and result.problems == []
