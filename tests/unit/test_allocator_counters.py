"""Shared counters (KEP-4815 partitionable devices) decided as upstream's ``checkAvailableCounters``
(k8s.io/dynamic-resource-allocation@v0.37.2 structured/internal/incubating/allocator_incubating.go,
docs/kubernetes/dra-apis.md §6): with the candidate's consumption added, EVERY counter
of EVERY counter set of the pool must have at least what the attempt consumes left, a counter it does
not consume counting as zero. So a counter the cluster's allocations already overdrew refuses every
counter-consuming device of its pool, even one that consumes only other counters or another set."""

from __future__ import annotations

import pytest
from builders import claim

from kubectl_dra.allocation.allocator import AllocatedState, Allocator
from kubectl_dra.allocation.gather import gather
from kubectl_dra.model.registry import parse_object

GPU, NODE = "gpu.example.com", "worker-1"


def _uses(consumes: dict[str, dict[str, str]]) -> list[dict]:
    return [{"counterSet": name, "counters": {c: {"value": v} for c, v in counters.items()}}
            for name, counters in consumes.items()]


def _outcome(sets: dict[str, dict[str, str]], held: dict | None, wanted: dict | None, count: int = 1,
             allocated: bool = True):
    """One pool: ``sets`` its counter sets (set -> counter -> value); device ``held`` (its consumption,
    or None for no such device) is allocated to another claim (unless not ``allocated``); device
    ``want`` (its consumption, {} for none) comes after it, and a claim asks ``count`` devices."""
    pool = {"name": NODE, "generation": 1, "resourceSliceCount": 2}
    devices = [{"name": "held", "consumesCounters": _uses(held)}] if held is not None else []
    devices.append({"name": "want", **({"consumesCounters": _uses(wanted)} if wanted else {})})
    slices = [parse_object(s) for s in (
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "counters"},
         "spec": {"driver": GPU, "nodeName": NODE, "pool": pool,
                  "sharedCounters": [{"name": name, "counters": {c: {"value": v} for c, v in counters.items()}}
                                     for name, counters in sets.items()]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "devices"},
         "spec": {"driver": GPU, "nodeName": NODE, "pool": pool, "devices": devices}})]
    node = parse_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}})
    klass = parse_object({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": GPU},
                          "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU}"'}}]}})
    asking = claim("asking")
    asking["status"] = {}
    asking["spec"]["devices"] = {"requests": [{"name": "req", "exactly": {"deviceClassName": GPU, "count": count}}]}
    state = AllocatedState(exclusive={(GPU, NODE, "held"): "ml/other"} if held is not None and allocated else {})
    return Allocator([parse_object(asking)], {GPU: klass}, state).allocate(
        node, gather(node, slices, {(GPU, NODE): slices}))


OVERDRAWN = "shared counter {} of the pool is overdrawn"
USED_UP = "shared counter {} of the pool is used up"

CASES = [
    # (what, counter sets, held's consumption, want's consumption, the refusal of "want" (a message
    # prefix) or None when it fits)
    ("an overdrawn counter the device does not consume refuses it",
     {"gpu": {"mem": "80Gi", "sm": "4"}}, {"gpu": {"mem": "10Gi", "sm": "8"}}, {"gpu": {"mem": "10Gi"}},
     OVERDRAWN.format("gpu/sm")),
    ("an overdrawn counter in a set the device does not consume refuses it",
     {"gpu": {"mem": "80Gi"}, "nic": {"vf": "2"}}, {"nic": {"vf": "3"}}, {"gpu": {"mem": "10Gi"}},
     OVERDRAWN.format("nic/vf")),
    ("a device consuming no counters is not checked at all",
     {"gpu": {"mem": "80Gi", "sm": "4"}}, {"gpu": {"sm": "8"}}, {}, None),
    ("a consumed counter exactly at capacity fits",
     {"gpu": {"mem": "80Gi"}}, {"gpu": {"mem": "40Gi"}}, {"gpu": {"mem": "40Gi"}}, None),
    ("an untouched counter exactly used up (zero left) fits",
     {"gpu": {"mem": "80Gi", "sm": "4"}}, {"gpu": {"sm": "4"}}, {"gpu": {"mem": "80Gi"}}, None),
    ("one unit over a consumed counter is refused",
     {"gpu": {"mem": "80Gi"}}, {"gpu": {"mem": "40Gi"}}, {"gpu": {"mem": "41Gi"}}, USED_UP.format("gpu/mem")),
    ("several sets, every one with room, fit",
     {"gpu": {"mem": "80Gi"}, "nic": {"vf": "2"}}, {"nic": {"vf": "1"}}, {"gpu": {"mem": "80Gi"}}, None),
    ("a device consuming from two sets fits when both have room",
     {"gpu": {"mem": "80Gi"}, "nic": {"vf": "2"}}, {"gpu": {"mem": "40Gi"}, "nic": {"vf": "1"}},
     {"gpu": {"mem": "40Gi"}, "nic": {"vf": "1"}}, None),
    ("a device consuming from two sets is refused when the second is short",
     {"gpu": {"mem": "80Gi"}, "nic": {"vf": "2"}}, {"gpu": {"mem": "40Gi"}, "nic": {"vf": "2"}},
     {"gpu": {"mem": "40Gi"}, "nic": {"vf": "1"}}, USED_UP.format("nic/vf")),
    ("no device allocated: an untouched counter has all its value left",
     {"gpu": {"mem": "80Gi", "sm": "4"}}, None, {"gpu": {"mem": "80Gi"}}, None),
]


@pytest.mark.parametrize("what, sets, held, wanted, refusal", CASES, ids=[c[0] for c in CASES])
def test_counters_as_upstream_checks_them(what, sets, held, wanted, refusal):
    outcome = _outcome(sets, held, wanted)
    assert (outcome.error, outcome.undetermined) == (None, None)
    (diagnosis,) = outcome.requests
    counters = [r for r in diagnosis.rejected if r.reason == "Counters"]
    assert outcome.feasible == (refusal is None)
    if refusal is None:
        assert diagnosis.candidates == [f"{GPU}/{NODE}/want"] and counters == []
        assert [(p.pool, p.device) for p in outcome.results] == [(NODE, "want")]
    else:
        (rejection,) = counters
        assert rejection.device == f"{GPU}/{NODE}/want" and rejection.message.startswith(refusal), rejection
        assert diagnosis.candidates == [] and outcome.results == []


def test_the_overdrawn_message_names_what_is_left():
    (diagnosis,) = _outcome({"gpu": {"mem": "80Gi", "sm": "4"}}, {"gpu": {"sm": "8"}}, {"gpu": {"mem": "1Gi"}}).requests
    (rejection,) = [r for r in diagnosis.rejected if r.reason == "Counters"]
    assert rejection.message == ("shared counter gpu/sm of the pool is overdrawn (-4 left after the cluster's "
                                 "allocations): the scheduler refuses every device of the pool that consumes counters")


def test_the_attempts_own_picks_count_against_the_counters():
    """Two free partitions of 50Gi each from one 80Gi counter: either fits alone, both together do not
    (upstream's ``consumedCounters`` of the attempt)."""
    alone = _outcome({"gpu": {"mem": "80Gi"}}, {"gpu": {"mem": "50Gi"}}, {"gpu": {"mem": "50Gi"}}, allocated=False)
    assert alone.feasible and [p.device for p in alone.results] == ["held"]
    both = _outcome({"gpu": {"mem": "80Gi"}}, {"gpu": {"mem": "50Gi"}}, {"gpu": {"mem": "50Gi"}}, count=2,
                    allocated=False)
    assert not both.feasible and (both.error, both.undetermined) == (None, None)
