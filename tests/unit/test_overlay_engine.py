"""NodeOverlay evaluation: Karpenter's controller cases V1-V14 (docs/kubernetes/nodeoverlay.md §4.2) and
every rule of docs/kubernetes/nodeoverlay.md §6.

Inputs are built the way the command builds them: NodeOverlay / NodePool views and InstanceType
catalog entries. Fixture names follow docs/kubernetes/nodeoverlay.md §4 (F1, F3, ...; zN = test-zone-N).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubectl_dra.errors import InputError
from kubectl_dra.kube.snapshot import load_snapshot
from kubectl_dra.model.karpenter import NodeClaim, NodeOverlay, NodePool, order_by_weight
from kubectl_dra.model.node import Node
from kubectl_dra.overlays.catalog import InstanceType, from_catalog, infer_from_cluster
from kubectl_dra.overlays.explain import evaluate
from kubectl_dra.overlays.requirements import Requirement, Requirements, offering_compatible
from kubectl_dra.overlays.validation import runtime_errors, validate_overlay

IT = "node.kubernetes.io/instance-type"
CT = "karpenter.sh/capacity-type"
ZONE = "topology.kubernetes.io/zone"
NP = "karpenter.sh/nodepool"
DEFAULT = "default-instance-type"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "cluster"


def z(n: int) -> str:
    return f"test-zone-{n}"


def instance_type(name: str = DEFAULT, offerings=(("spot", 1, 1.020),), labels=None, capacity=None,
                  node_pools=None, requirements=None, overhead=None) -> InstanceType:
    """Like Karpenter's fake provider: zone / capacity-type requirements come from the offerings."""
    return InstanceType.model_validate({
        "name": name, "nodePools": node_pools,
        "labels": {IT: name, "kubernetes.io/arch": "amd64", **(labels or {})},
        "requirements": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux", "windows", "darwin"]},
                         *(requirements or [])],
        "capacity": capacity if capacity is not None else {"cpu": "4", "memory": "4Gi", "pods": "5"},
        "overhead": overhead or {},
        "offerings": [{"capacityType": ct, "zone": z(zone), "price": price} for ct, zone, price in offerings],
    })


def pool(name: str = "np-1", labels=None, requirements=None) -> NodePool:
    return NodePool.model_validate({"metadata": {"name": name}, "spec": {"template": {
        "metadata": {"labels": labels or {}}, "spec": {"requirements": requirements or []}}}})


def req(key: str, operator: str = "In", *values: str) -> dict:
    return {"key": key, "operator": operator, "values": list(values)}


def overlay(name: str, weight: int | None = 10, requirements=(), price=None, adjustment=None, capacity=None,
            conditions=None, raw_spec=None, uid: str | None = None) -> NodeOverlay:
    spec: dict = {"requirements": list(requirements)}
    if weight is not None:
        spec["weight"] = weight
    if price is not None:
        spec["price"] = price
    if adjustment is not None:
        spec["priceAdjustment"] = adjustment
    if capacity is not None:
        spec["capacity"] = capacity
    spec.update(raw_spec or {})
    raw = {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": name, "generation": 1},
           "spec": spec}
    if uid:
        raw["metadata"]["uid"] = uid
    if conditions:
        raw["status"] = {"conditions": conditions}
    return NodeOverlay.from_raw(raw)


def prices(result, node_pool: str = "np-1", name: str = DEFAULT) -> dict[str, float | None]:
    """{"spot/test-zone-1": price, ...} for one instance type in one NodePool."""
    view = result.instance_type(node_pool, name)
    return {f"{o.capacity_type}/{o.zone}": o.price for o in view.offerings}


def status(result, name: str) -> str:
    return result.overlay(name).status


def findings(result):
    """Findings, minus the "no overlay has a status" note every hand-built input triggers."""
    return [f for f in result.findings if f.code != "OverlayNotReconciled"]


def codes(result) -> list[str]:
    return [f.code for f in findings(result)]


F1 = [instance_type()]
F3 = [instance_type(offerings=(("spot", 1, 1.020), ("on-demand", 2, 2.020), ("reserved", 4, 4.020)))]
ON_DEFAULT = [req(IT, "In", DEFAULT)]


# -- docs/kubernetes/nodeoverlay.md §4.2: Karpenter's controller cases ---------------------------------------

def test_no_overlays_keeps_the_provider_price():
    """Karpenter's controller case V1 (docs/kubernetes/nodeoverlay.md §4.2)."""
    result = evaluate([], [pool()], F1)
    assert prices(result) == {"spot/test-zone-1": 1.020}
    assert result.findings == []  # nothing to say, not even about reconciling


def test_overlay_without_price_or_capacity_is_ready():
    """Karpenter's controller case V2 (docs/kubernetes/nodeoverlay.md §4.2)."""
    result = evaluate([overlay("o", requirements=ON_DEFAULT)], [pool()], F1)
    assert status(result, "o") == "Ready"
    assert prices(result) == {"spot/test-zone-1": 1.020}
    assert [m.instance_type for m in result.overlay("o").matches] == [DEFAULT]


@pytest.mark.parametrize("field,value,want", [("price", "13234.223", 13234.223), ("adjustment", "+1000", 1001.020)])
def test_price_and_adjustment_replace_the_provider_price(field, value, want):
    """Karpenter's controller cases V3 (price) and V4 (adjustment), docs/kubernetes/nodeoverlay.md §4.2."""
    result = evaluate([overlay("o", requirements=ON_DEFAULT, **{field: value})], [pool()], F1)
    assert prices(result) == {"spot/test-zone-1": pytest.approx(want)}
    assert result.instance_type("np-1", DEFAULT).offerings[0].overlay == "o"
    assert result.instance_type("np-1", DEFAULT).offerings[0].base_price == 1.020


@pytest.mark.parametrize("field,value,want", [("price", "13234.223", 13234.223), ("adjustment", "+1000", 1001.020)])
def test_nodepool_requirement_scopes_the_price(field, value, want):
    """Karpenter's controller case V5 (docs/kubernetes/nodeoverlay.md §4.2)."""
    result = evaluate([overlay("o", requirements=[req(NP, "In", "np-1")], **{field: value})],
                      [pool("np-1"), pool("np-2")], F1)
    assert prices(result, "np-1") == {"spot/test-zone-1": pytest.approx(want)}
    assert prices(result, "np-2") == {"spot/test-zone-1": 1.020}


@pytest.mark.parametrize("field,a,b,want_a,want_b", [
    ("price", "13234.223", "232.11", 13234.223, 232.11),
    ("adjustment", "+1000", "+2500", 1001.020, 2501.020),
])
def test_equal_weights_on_different_nodepools_both_apply(field, a, b, want_a, want_b):
    """Karpenter's controller case V6 (docs/kubernetes/nodeoverlay.md §4.2)."""
    result = evaluate([overlay("a", requirements=[req(NP, "In", "np-1")], **{field: a}),
                       overlay("b", requirements=[req(NP, "In", "np-2")], **{field: b})],
                      [pool("np-1"), pool("np-2")], F1)
    assert prices(result, "np-1") == {"spot/test-zone-1": pytest.approx(want_a)}
    assert prices(result, "np-2") == {"spot/test-zone-1": pytest.approx(want_b)}
    assert status(result, "a") == status(result, "b") == "Ready"


@pytest.mark.parametrize("field,value,want", [("price", "13234.223", 13234.223), ("adjustment", "+1000", 1001.020)])
def test_template_label_selects_the_nodepool(field, value, want):
    """Karpenter's controller case V7 (docs/kubernetes/nodeoverlay.md §4.2)."""
    result = evaluate([overlay("o", requirements=[req("test-label", "In", "test-value")], **{field: value})],
                      [pool("np-1"), pool("np-2", labels={"test-label": "test-value"})], F1)
    assert prices(result, "np-1") == {"spot/test-zone-1": 1.020}
    assert prices(result, "np-2") == {"spot/test-zone-1": pytest.approx(want)}


@pytest.mark.parametrize("kwargs", [{"price": "13234.223"}, {"adjustment": "+1000"},
                                    {"capacity": {"smarter-devices/fuse": "1"}}])
def test_over_long_key_is_a_runtime_validation_failure(kwargs):
    """Karpenter's controller case V8 (docs/kubernetes/nodeoverlay.md §4.2)."""
    key = "example.com/" + "a" * 251
    result = evaluate([overlay("o", requirements=[req(key, "Exists")], **kwargs)], [pool()], F1)
    view = result.overlay("o")
    assert view.status == "RuntimeValidation"
    assert "name part must be no more than 63 characters" in view.message
    assert view.message.startswith(f"invalid value: key {key} is not a qualified name")
    assert prices(result) == {"spot/test-zone-1": 1.020}
    assert "smarter-devices/fuse" not in result.instance_type("np-1", DEFAULT).capacity
    assert codes(result) == ["OverlayRuntimeValidation"]


def test_no_such_instance_type_matches_nothing_but_stays_ready():
    """Karpenter's controller case V9 (docs/kubernetes/nodeoverlay.md §4.2)."""
    result = evaluate([overlay("o", requirements=[req(IT, "In", "default-instance-type-not-found")],
                               price="13234.223")], [pool()], F1)
    assert status(result, "o") == "Ready"
    assert prices(result) == {"spot/test-zone-1": 1.020}
    [finding] = findings(result)
    assert finding.code == "OverlayMatchesNothing"
    assert f"no instance type has {IT} in ['default-instance-type-not-found']" in finding.message
    assert DEFAULT in finding.message  # the values that do exist


@pytest.mark.parametrize("field,value,want", [("price", "12321.32", 12321.32), ("adjustment", "+1000", 1005.020)])
def test_capacity_type_requirement_scopes_the_price(field, value, want):
    """Karpenter's controller case V10 (docs/kubernetes/nodeoverlay.md §4.2)."""
    its = [instance_type(offerings=(("spot", 1, 1.020), ("on-demand", 1, 5.020)))]
    result = evaluate([overlay("o", requirements=[req(CT, "In", "on-demand")], **{field: value})], [pool()], its)
    assert prices(result) == {"spot/test-zone-1": 1.020, "on-demand/test-zone-1": pytest.approx(want)}


@pytest.mark.parametrize("field,value,want", [("price", "121.421", 121.421), ("adjustment", "+1000", 1001.020)])
def test_zone_requirement_scopes_the_price(field, value, want):
    """Karpenter's controller case V11 (docs/kubernetes/nodeoverlay.md §4.2)."""
    its = [instance_type(offerings=(("spot", 1, 1.020), ("spot", 2, 5.020)))]
    result = evaluate([overlay("o", requirements=[req(ZONE, "In", z(1))], **{field: value})], [pool()], its)
    assert prices(result) == {"spot/test-zone-1": pytest.approx(want), "spot/test-zone-2": 5.020}


@pytest.mark.parametrize("field,a,b,want", [
    ("price", "121.421", "165.421", (121.421, 121.421, 165.421)),
    ("adjustment", "+201", "-0.5", (203.020, 205.020, 0.52)),
])
def test_disjoint_offerings_at_equal_weight_do_not_conflict(field, a, b, want):
    """Karpenter's controller case V12 (docs/kubernetes/nodeoverlay.md §4.2)."""
    result = evaluate([overlay("a", requirements=[req(ZONE, "In", z(2), z(4))], **{field: a}),
                       overlay("b", requirements=[req(CT, "In", "spot")], **{field: b})], [pool()], F3)
    assert prices(result) == {"on-demand/test-zone-2": pytest.approx(want[0]),
                              "reserved/test-zone-4": pytest.approx(want[1]),
                              "spot/test-zone-1": pytest.approx(want[2])}
    assert status(result, "a") == status(result, "b") == "Ready"
    assert result.overlay("a").conflicts_with == []


@pytest.mark.parametrize("field,a,b,want", [
    ("price", "121.421", "165.421", (121.421, 165.421)),
    ("adjustment", "+201", "-1.5", (203.020, 2.520)),  # no stacking: z2 gets only the heavier adjustment
])
def test_higher_weight_wins_the_shared_offering(field, a, b, want):
    """Karpenter's controller case V13 (docs/kubernetes/nodeoverlay.md §4.2)."""
    result = evaluate([overlay("a-test-100", 20, [req(ZONE, "In", z(2))], **{field: a}),
                       overlay("b-test-100", 10, [req(ZONE, "In", z(2), z(4))], **{field: b})], [pool()], F3)
    got = prices(result)
    assert got["on-demand/test-zone-2"] == pytest.approx(want[0])
    assert got["reserved/test-zone-4"] == pytest.approx(want[1])
    assert got["spot/test-zone-1"] == 1.020
    view = result.instance_type("np-1", DEFAULT)
    assert [o.overlay for o in view.offerings] == [None, "a-test-100", "b-test-100"]
    assert result.overlay("b-test-100").shadowed_by == ["a-test-100"]
    assert "OverlayShadowed" not in codes(result)  # b still wins z4


def test_price_and_capacity_overlays_at_equal_weight_both_apply():
    """Karpenter's controller case V14 (docs/kubernetes/nodeoverlay.md §4.2)."""
    result = evaluate([overlay("p", requirements=ON_DEFAULT, adjustment="+1000.0"),
                       overlay("c", requirements=ON_DEFAULT, capacity={"smarter-devices/fuse": "1"})], [pool()], F1)
    assert prices(result) == {"spot/test-zone-1": pytest.approx(1001.020)}
    view = result.instance_type("np-1", DEFAULT)
    assert view.capacity["smarter-devices/fuse"] == "1"
    assert view.capacity_overlays == {"smarter-devices/fuse": "c"}
    assert status(result, "p") == status(result, "c") == "Ready"


# -- docs/kubernetes/nodeoverlay.md §6.1 ordering ------------------------------------------------------------

def test_processing_order_weight_descending_unset_as_zero_ties_by_name_descending():
    overlays = [overlay("b", None), overlay("a", 5), overlay("c", 5), overlay("d", 1), overlay("e", None)]
    assert [o.name for o in order_by_weight(overlays)] == ["c", "a", "d", "e", "b"]


def test_equal_weight_tie_the_alphabetically_earlier_name_is_rejected():
    result = evaluate([overlay("alpha", requirements=ON_DEFAULT, price="1"),
                       overlay("beta", requirements=ON_DEFAULT, price="1")], [pool()], F1)  # same value: still a clash
    assert status(result, "beta") == "Ready" and status(result, "alpha") == "Conflict"
    assert result.overlay("alpha").conflicts_with == ["beta"]
    assert result.overlay("beta").conflicts_with == ["alpha"]
    assert prices(result)["spot/test-zone-1"] == 1.0
    [finding] = findings(result)
    assert finding.code == "OverlayConflict" and finding.object == "nodeoverlay/alpha"
    assert "conflicts with beta" in finding.message and "spot test-zone-1" in finding.message


def test_unset_weight_sorts_below_weight_one_and_two_unset_weights_conflict():
    result = evaluate([overlay("unset-a", None, ON_DEFAULT, price="3"), overlay("unset-b", None, ON_DEFAULT, price="4"),
                       overlay("one", 1, ON_DEFAULT, price="2")], [pool()], F1)
    assert prices(result)["spot/test-zone-1"] == 2.0
    assert [o.name for o in result.overlays] == ["one", "unset-b", "unset-a"]
    assert status(result, "unset-b") == "Ready" and status(result, "unset-a") == "Conflict"
    assert result.overlay("unset-a").weight is None


# -- docs/kubernetes/nodeoverlay.md §6.2 matching context ----------------------------------------------------

def test_template_requirements_are_not_part_of_the_matching_context():
    pools = [pool("by-requirement", requirements=[req("team", "In", "ml")]), pool("by-label", labels={"team": "ml"})]
    result = evaluate([overlay("o", requirements=[req("team", "In", "ml")], price="9")], pools, F1)
    assert [(m.node_pool, m.instance_type) for m in result.overlay("o").matches] == [("by-label", DEFAULT)]
    assert prices(result, "by-requirement") == {"spot/test-zone-1": 1.020}
    assert prices(result, "by-label") == {"spot/test-zone-1": 9.0}


def test_key_only_in_template_requirements_is_explained_when_nothing_matches():
    result = evaluate([overlay("o", requirements=[req("team", "In", "ml")], price="9")],
                      [pool(requirements=[req("team", "In", "ml")])], F1)
    [finding] = findings(result)
    assert finding.code == "OverlayMatchesNothing"
    assert "spec.template.spec.requirements" in finding.message


@pytest.mark.parametrize("requirement,matches", [
    (req("undefined.example.com/key", "Exists"), False),  # undefined key fails unless negative
    (req("undefined.example.com/key", "In", "x"), False),
    (req("undefined.example.com/key", "NotIn", "x"), True),
    (req("undefined.example.com/key", "DoesNotExist"), True),
    (req("kubernetes.io/arch", "DoesNotExist"), False),  # defined key
    (req("kubernetes.io/arch", "NotIn", "amd64"), False),
    (req("kubernetes.io/arch", "NotIn", "arm64"), True),
    (req("kubernetes.io/arch", "Exists"), True),
    (req("beta.kubernetes.io/arch", "In", "amd64"), True),  # legacy alias normalized
    (req("example.com/cpu", "Gt", "3"), True),
    (req("example.com/cpu", "Gt", "4"), False),  # Gt 4 == Gte 5
    (req("example.com/cpu", "Gte", "4"), True),
    (req("example.com/cpu", "Lt", "4"), False),  # Lt 4 == Lte 3
    (req("example.com/cpu", "Lte", "4"), True),
    (req(NP, "In", "np-1"), True),
    (req(NP, "In", "np-2"), False),
    (req(ZONE, "In", z(9)), False),  # the instance type's zone set does not intersect
])
def test_strict_compatibility_rules(requirement, matches):
    its = [instance_type(labels={"example.com/cpu": "4"})]
    result = evaluate([overlay("o", requirements=[requirement], price="9")], [pool()], its)
    assert status(result, "o") == "Ready"
    assert bool(result.overlay("o").matches) is matches
    assert prices(result)["spot/test-zone-1"] == (9.0 if matches else 1.020)


def test_conflicting_template_label_and_instance_type_requirement_intersect_to_nothing():
    pools = [pool(labels={ZONE: z(2)})]  # the pool pins zone 2; the type only offers zone 1
    result = evaluate([overlay("o", requirements=[req(ZONE, "In", z(1))], price="9")], pools, F1)
    assert result.overlay("o").matches == []


# -- docs/kubernetes/nodeoverlay.md §6.3 per-offering price, per-type capacity -------------------------------

def test_zone_scoped_capacity_applies_to_the_whole_instance_type():
    its = [instance_type(offerings=(("spot", 1, 1.0), ("spot", 2, 2.0)))]
    result = evaluate([overlay("o", requirements=[req(ZONE, "In", z(1))], capacity={"example.com/fuse": "2"})],
                      [pool()], its)
    view = result.instance_type("np-1", DEFAULT)
    assert view.capacity["example.com/fuse"] == "2"
    assert [o.price for o in view.offerings] == [1.0, 2.0]


def test_reserved_offering_keys_must_intersect_when_mentioned():
    its = [InstanceType.model_validate({
        "name": DEFAULT, "labels": {IT: DEFAULT},
        "offerings": [{"zone": z(1), "capacityType": "reserved", "price": 1.0,
                       "requirements": {"karpenter.k8s.aws/capacity-reservation-id": "cr-1"}},
                      {"zone": z(1), "capacityType": "reserved", "price": 2.0,
                       "requirements": {"karpenter.k8s.aws/capacity-reservation-id": "cr-2"}}]})]
    result = evaluate([overlay("o", requirements=[req(CT, "In", "reserved"),
                                                  req("karpenter.k8s.aws/capacity-reservation-id", "In", "cr-2")],
                               price="0.5")], [pool()], its)
    view = result.instance_type("np-1", DEFAULT)
    assert [o.price for o in view.offerings] == [1.0, 0.5]
    assert view.offerings[1].requirements == {"karpenter.k8s.aws/capacity-reservation-id": ["cr-2"]}


# -- docs/kubernetes/nodeoverlay.md §6.4 / §6.5 merge --------------------------------------------------------

def test_no_stacking_highest_weight_adjustment_only():
    its = [instance_type(offerings=(("spot", 1, 10.0),))]
    result = evaluate([overlay("ten", 10, ON_DEFAULT, adjustment="-20%"),
                       overlay("five", 5, ON_DEFAULT, adjustment="-10%")], [pool()], its)
    assert prices(result)["spot/test-zone-1"] == 8.0  # not 7.2


def test_price_and_price_adjustment_share_one_slot():
    result = evaluate([overlay("absolute", 20, ON_DEFAULT, price="3"),
                       overlay("relative", 10, ON_DEFAULT, adjustment="-50%")], [pool()], F1)
    assert prices(result)["spot/test-zone-1"] == 3.0
    assert result.overlay("relative").shadowed_by == ["absolute"]


def test_capacity_merges_per_key_highest_weight_first():
    result = evaluate([overlay("high", 20, ON_DEFAULT, capacity={"a.example.com/x": "1"}),
                       overlay("low", 10, ON_DEFAULT, capacity={"a.example.com/x": "2", "a.example.com/y": "3"})],
                      [pool()], F1)
    view = result.instance_type("np-1", DEFAULT)
    assert view.capacity["a.example.com/x"] == "1" and view.capacity["a.example.com/y"] == "3"
    assert view.capacity_overlays == {"a.example.com/x": "high", "a.example.com/y": "low"}
    assert view.capacity["cpu"] == "4"  # provider capacity kept
    assert status(result, "low") == "Ready" and result.overlay("low").shadowed_by == ["high"]
    assert codes(result) == []


def test_overlay_capacity_replaces_a_provider_value():
    result = evaluate([overlay("o", requirements=ON_DEFAULT, capacity={"nvidia.com/gpu": "8"})], [pool()],
                      [instance_type(capacity={"cpu": "4", "memory": "4Gi", "nvidia.com/gpu": "4"})])
    view = result.instance_type("np-1", DEFAULT)
    assert view.capacity["nvidia.com/gpu"] == "8" and view.replaced_capacity == {"nvidia.com/gpu": "4"}


# -- docs/kubernetes/nodeoverlay.md §6.6 / §6.7 conflicts ----------------------------------------------------

def test_equal_weight_capacity_on_the_same_key_conflicts():
    result = evaluate([overlay("x-cap", requirements=ON_DEFAULT, capacity={"a.example.com/k": "1"}),
                       overlay("y-cap", requirements=ON_DEFAULT, capacity={"a.example.com/k": "1"})], [pool()], F1)
    assert status(result, "y-cap") == "Ready" and status(result, "x-cap") == "Conflict"
    assert result.overlay("x-cap").conflicts_with == ["y-cap"]
    assert result.instance_type("np-1", DEFAULT).capacity_overlays == {"a.example.com/k": "y-cap"}


def test_equal_weight_capacity_on_different_keys_merges():
    result = evaluate([overlay("x", requirements=ON_DEFAULT, capacity={"a.example.com/k": "1"}),
                       overlay("y", requirements=ON_DEFAULT, capacity={"a.example.com/j": "1"})], [pool()], F1)
    assert status(result, "x") == status(result, "y") == "Ready"


def test_price_conflict_is_detected_even_among_overlays_shadowed_by_a_heavier_one():
    result = evaluate([overlay("heavy", 20, ON_DEFAULT, price="5"), overlay("a", 10, ON_DEFAULT, price="6"),
                       overlay("b", 10, ON_DEFAULT, price="7")], [pool()], F1)
    assert prices(result)["spot/test-zone-1"] == 5.0
    assert status(result, "b") == "Ready" and status(result, "a") == "Conflict"
    assert result.overlay("a").conflicts_with == ["b"]
    conflict = next(f for f in findings(result) if f.code == "OverlayConflict")
    assert "already held by higher-weight heavy" in conflict.message
    shadowed = next(f for f in findings(result) if f.code == "OverlayShadowed")
    assert shadowed.object == "nodeoverlay/b" and "heavy" in shadowed.message


def test_conflict_rejects_the_overlay_atomically_across_nodepools_and_fields():
    pools = [pool("np-1"), pool("np-2")]
    result = evaluate([overlay("wide", 10, ON_DEFAULT, price="5", capacity={"a.example.com/k": "1"}),
                       overlay("zz-np2", 10, [req(NP, "In", "np-2")], price="7")], pools, F1)
    assert status(result, "wide") == "Conflict" and result.overlay("wide").conflicts_with == ["zz-np2"]
    assert prices(result, "np-1")["spot/test-zone-1"] == 1.020  # no clash in np-1, still not applied
    assert prices(result, "np-2")["spot/test-zone-1"] == 7.0
    assert "a.example.com/k" not in result.instance_type("np-1", DEFAULT).capacity
    conflict = next(f for f in findings(result) if f.code == "OverlayConflict")
    assert "capacity, which conflicts with nothing, is dropped too" in conflict.message  # D4
    assert len(result.overlay("wide").matches) == 2  # where it would have applied


def test_capacity_clash_hidden_by_the_last_stored_overlay_is_reported_as_undetected():
    # Karpenter remembers only the keys of the most recently stored overlay at a weight (D2).
    result = evaluate([overlay("a", requirements=ON_DEFAULT, capacity={"a.example.com/k": "1"}),
                       overlay("b", requirements=ON_DEFAULT, capacity={"a.example.com/other": "1"}),
                       overlay("c", requirements=ON_DEFAULT, capacity={"a.example.com/k": "2"})], [pool()], F1)
    assert [status(result, n) for n in "abc"] == ["Ready", "Ready", "Ready"]
    view = result.instance_type("np-1", DEFAULT)
    assert view.capacity["a.example.com/k"] == "2" and view.capacity_overlays["a.example.com/k"] == "c"
    assert result.overlay("a").undetected_conflicts_with == ["c"]
    [finding] = [f for f in findings(result) if f.code == "OverlayConflictUndetected"]
    assert finding.severity == "warning" and finding.object == "nodeoverlay/a"
    assert "c and a both have weight 10" in finding.message and "np-1/default-instance-type" in finding.message


def test_same_value_clash_behind_the_blind_spot_is_not_reported():
    result = evaluate([overlay("a", requirements=ON_DEFAULT, capacity={"a.example.com/k": "2"}),
                       overlay("b", requirements=ON_DEFAULT, capacity={"a.example.com/other": "1"}),
                       overlay("c", requirements=ON_DEFAULT, capacity={"a.example.com/k": "2"})], [pool()], F1)
    assert "OverlayConflictUndetected" not in codes(result)


def test_empty_capacity_map_resets_what_karpenter_remembers():
    # `capacity: {}` is a non-nil map in Go: stored, it makes the next equal-weight clash invisible.
    with_empty = [overlay("a", requirements=ON_DEFAULT, capacity={"a.example.com/k": "1"}),
                  overlay("b", requirements=ON_DEFAULT, raw_spec={"capacity": {}}),
                  overlay("c", requirements=ON_DEFAULT, capacity={"a.example.com/k": "2"})]
    result = evaluate(with_empty, [pool()], F1)
    assert status(result, "a") == "Ready" and "OverlayConflictUndetected" in codes(result)
    without = evaluate([with_empty[0], with_empty[2]], [pool()], F1)
    assert status(without, "a") == "Conflict"


# -- docs/kubernetes/nodeoverlay.md §6.7 runtime validation, §6.9 --------------------------------------------

@pytest.mark.parametrize("requirements,capacity,expected", [
    ([req(CT, "In", "bogus")], None, "no valid values found in [bogus] for karpenter.sh/capacity-type"),
    ([req("example.com/k", "In", "-bad-")], None, "invalid value -bad- for key example.com/k"),
])
def test_runtime_validation_failures(requirements, capacity, expected):
    """What the v1.14.1 CRD admits (the real API server took these) and the runtime check refuses."""
    result = evaluate([overlay("o", requirements=requirements, price="1", capacity=capacity)], [pool()], F1)
    view = result.overlay("o")
    assert view.status == "RuntimeValidation" and expected in view.message
    assert prices(result)["spot/test-zone-1"] == 1.020
    assert findings(result)[0].code == "OverlayRuntimeValidation" and findings(result)[0].severity == "error"
    assert "Karpenter skips" in findings(result)[0].message


# what the v1.14.1 CRD refuses at admission, in the real API server's words (each one sent to it in
# tests/karpenter/test_overlay_oracle.py or read from the refusal it gave): such an object never
# reaches Karpenter, so it can only come from a file, and is named as one the API server refuses
PATTERN = ("'^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?"
           "[A-Za-z0-9]$'")


@pytest.mark.parametrize("requirements,capacity,expected", [
    ([req("karpenter.sh/foo", "Exists")], None,
     'spec.requirements[0].key: Invalid value: "karpenter.sh/foo": label domain "karpenter.sh" is restricted'),
    ([req("sub.karpenter.sh/foo", "Exists")], None,
     'spec.requirements[0].key: Invalid value: "sub.karpenter.sh/foo": label domain "karpenter.sh" is restricted'),
    ([req("kubernetes.io/hostname", "In", "n1")], None,
     'spec.requirements[0].key: Invalid value: "kubernetes.io/hostname": label "kubernetes.io/hostname" is restricted'),
    ([req("example.com/k", "In")], None,
     "spec.requirements: Invalid value: requirements with operator 'In' must have a value defined"),
    ([req("example.com/k", "NotIn")], None,
     "spec.requirements: Invalid value: requirements with operator 'NotIn' must have a value defined"),
    ([req("example.com/k", "Gt", "-1")], None, "spec.requirements: Invalid value: requirements operator 'Gt', 'Lt', "
                                                "'Gte' or 'Lte' must have a single positive integer value"),
    ([req("example.com/k", "Lte", "abc")], None, "must have a single positive integer value"),
    ([req("example.com/k", "Gte", "1", "2")], None, "must have a single positive integer value"),
    ([req("example.com/k", "Near", "1")], None, 'spec.requirements[0].operator: Unsupported value: "Near": supported '
                                                'values: "Gte", "Lte", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"'),
    ([req("Example.com/k", "Exists")], None,
     f'spec.requirements[0].key: Invalid value: "Example.com/k": spec.requirements[0].key in body should match {PATTERN}'),
    ([], {"cpu": "1"}, "spec.capacity: Invalid value: invalid resource restricted"),
    ([], {"pods": "1"}, "spec.capacity: Invalid value: invalid resource restricted"),
])
def test_what_the_crd_refuses_is_named_as_refused(requirements, capacity, expected):
    result = evaluate([overlay("o", requirements=requirements, price="1", capacity=capacity)], [pool()], F1)
    view = result.overlay("o")
    assert expected in view.message and "restricted in requirements" not in view.message  # no runtime words
    assert prices(result)["spot/test-zone-1"] == 1.020
    [finding] = [f for f in findings(result) if f.code == "OverlayRuntimeValidation"]
    assert "API server's CRD validation would refuse this object" in finding.message


@pytest.mark.parametrize("capacity", [{"cpu": "1"}, {"example.com/gpu": "1"}])
def test_an_overlay_a_cluster_admitted_is_not_called_refused(capacity):
    """Read from a cluster (it has a uid), the object got past that cluster's CRDs, whatever version
    they are: only the controller's runtime check decides, and the version skew is named."""
    admitted = overlay("o", requirements=[req("example.com/k", "Gt", "-1")], price="1", capacity=capacity,
                       uid="0b7c2f1e-5d7a-4c3e-9f10-3a2b1c0d9e8f")
    result = evaluate([admitted], [pool()], F1)
    codes = [f.code for f in findings(result)]
    assert "OverlayCRDSkew" in codes
    [skew] = [f for f in findings(result) if f.code == "OverlayCRDSkew"]
    assert "must have a single positive integer value" in skew.message
    refused = [f for f in findings(result) if f.code == "OverlayRuntimeValidation"]
    assert all("CRD validation would refuse" not in f.message for f in refused)


@pytest.mark.parametrize("requirement", [
    req(CT, "In", "spot", "bogus"),  # one known value is enough
    req(NP, "In", "np-1"), req("example.com/k", "Gt", "0"), req("example.com/k", "Gte", "5"),
    req("failure-domain.beta.kubernetes.io/zone", "In", z(1)), req("team", "Exists"),
    req("node.kubernetes.io/instance-type", "NotIn", "x"), req("kubernetes.io/arch", "DoesNotExist"),
])
def test_valid_requirements(requirement):
    assert validate_overlay(overlay("o", requirements=[requirement])) == []


def test_signed_bound_is_an_integer_but_not_a_label_value():
    errors = runtime_errors(overlay("o", requirements=[req("example.com/k", "Gte", "+5")]))
    assert len(errors) == 1 and "invalid value +5 for key example.com/k" in errors[0]


@pytest.mark.parametrize("spec,expected", [
    ({"weight": 0}, "spec.weight: Invalid value: 0"),
    ({"weight": 10001}, "spec.weight: Invalid value: 10001"),
    ({"requirements": [req("example.com/k", "Exists")] * 101}, "spec.requirements: Too many: 101"),
    ({"requirements": None}, "spec.requirements: Required value"),
    ({"requirements": [req("a" * 60 + ".example.com/" + "b" * 250, "Exists")]}, "Too long: may not be more than 316"),
    ({"price": "1", "priceAdjustment": "+1"}, "cannot set both"),
])
def test_schema_failures_are_reported(spec, expected):
    obj = NodeOverlay.model_validate({"metadata": {"name": "o"}, "spec": {"requirements": [], **spec}})
    assert any(expected in e for e in validate_overlay(obj))
    result = evaluate([obj], [pool()], F1)
    assert result.overlay("o").status == "RuntimeValidation"
    assert "CRD validation would refuse" in findings(result)[0].message


def test_runtime_errors_use_karpenters_wrapping():
    errors = runtime_errors(overlay("o", requirements=[req("karpenter.sh/x", "In")], capacity={"memory": "1Gi"}))
    assert errors[0].startswith("invalid value: using label karpenter.sh/x is not allowed")
    assert errors[0].endswith("; key karpenter.sh/x with operator In must have a value defined in requirements, "
                              "restricted")
    assert errors[1] == "invalid capacity: memory in resource, restricted"


# -- shadowed, matches nothing, status ------------------------------------------------------------------

def test_fully_shadowed_overlay_is_flagged_with_the_winner():
    result = evaluate([overlay("winner", 20, ON_DEFAULT, price="5"), overlay("loser", 10, ON_DEFAULT, price="6")],
                      [pool()], F1)
    assert status(result, "loser") == "Ready" and result.overlay("loser").shadowed_by == ["winner"]
    [finding] = findings(result)
    assert finding.code == "OverlayShadowed" and "winner" in finding.message
    assert "no effect" in result.overlay("loser").message


@pytest.mark.parametrize("karpenter,ours,disagree", [
    (("False", "Conflict"), "Ready", True),
    (("True", "Ready"), "Ready", False),
    (("True", "Ready"), "Conflict", True),
    (("False", "RuntimeValidation"), "RuntimeValidation", False),
])
def test_status_disagreement(karpenter, ours, disagree):
    conditions = [{"type": "Ready", "status": karpenter[0], "reason": karpenter[1], "observedGeneration": 1,
                   "message": "conflict with another overlay" if karpenter[1] == "Conflict" else ""}]
    subject = overlay("a", requirements=ON_DEFAULT, price="1", conditions=conditions,
                      raw_spec={"weight": 0} if ours == "RuntimeValidation" else None)
    ready = [{"type": "Ready", "status": "True", "reason": "Ready"}]
    others = [overlay("b", requirements=ON_DEFAULT, price="2", conditions=ready)] if ours == "Conflict" else []
    result = evaluate([subject, *others], [pool()], F1)
    assert status(result, "a") == ours
    assert ("OverlayStatusDisagrees" in codes(result)) is disagree
    assert result.overlay("a").karpenter_status.reason == karpenter[1]


@pytest.mark.parametrize("reason", ["Conflict", "RuntimeValidation"])
def test_the_verdict_is_read_from_validation_succeeded_not_ready(reason):
    """The real v1.14.1 controller puts the reason on ValidationSucceeded only; Ready says
    UnhealthyDependents (tests/karpenter caught the project reading Ready first)."""
    conditions = [{"type": "ValidationSucceeded", "status": "False", "reason": reason, "observedGeneration": 1,
                   "message": "conflict with another overlay"},
                  {"type": "Ready", "status": "False", "reason": "UnhealthyDependents", "observedGeneration": 1,
                   "message": "ValidationSucceeded=False"}]
    subject = overlay("a", requirements=ON_DEFAULT, price="1", conditions=conditions,
                      raw_spec={"weight": 0} if reason == "RuntimeValidation" else None)
    ready = [{"type": "Ready", "status": "True", "reason": "Ready"}]
    others = [overlay("b", requirements=ON_DEFAULT, price="2", conditions=ready)] if reason == "Conflict" else []
    result = evaluate([subject, *others], [pool()], F1)
    assert status(result, "a") == reason and result.overlay("a").karpenter_status.reason == reason
    assert "OverlayStatusDisagrees" not in codes(result)


def test_no_status_anywhere_suggests_the_controller_is_not_running():
    bare = [overlay("o", requirements=ON_DEFAULT, price="1")]
    result = evaluate(bare, [pool()], F1)
    [finding] = result.findings
    assert finding.code == "OverlayNotReconciled" and finding.severity == "info" and "feature gate" in finding.message
    assert result.overlay("o").karpenter_status is None
    ready = [{"type": "Ready", "status": "True", "reason": "Ready"}]
    assert evaluate(bare + [overlay("p", conditions=ready)], [pool()], F1).findings == []  # one was reconciled
    assert "OverlayNotReconciled" not in [f.code for f in evaluate(bare, [pool()], F1, gate_enabled=False).findings]


# -- docs/kubernetes/nodeoverlay.md §6.10 hugepages, §6.11 gate ----------------------------------------------

@pytest.mark.parametrize("capacity,allocatable,before", [
    ({"hugepages-2Mi": "1Gi"}, "3Gi", "4Gi"),
    ({"hugepages-2Mi": "1Gi", "hugepages-1Gi": "2Gi"}, "1Gi", "4Gi"),
    ({"hugepages-1Gi": "8Gi"}, "0", "4Gi"),  # floored at zero
    ({"hugepage-1Gi": "1Gi"}, "4Gi", None),  # no "s": an opaque extended resource
])
def test_hugepages_capacity_lowers_predicted_allocatable_memory(capacity, allocatable, before):
    result = evaluate([overlay("o", requirements=ON_DEFAULT, capacity=capacity)], [pool()], F1)
    view = result.instance_type("np-1", DEFAULT)
    assert view.allocatable_memory == allocatable
    assert view.allocatable_memory_before_overlays == before


def test_catalog_overhead_is_subtracted_before_hugepages():
    its = [instance_type(overhead={"memory": "512Mi"})]
    result = evaluate([overlay("o", requirements=ON_DEFAULT, capacity={"hugepages-2Mi": "1Gi"})], [pool()], its)
    assert result.instance_type("np-1", DEFAULT).allocatable_memory == "2560Mi"


def test_feature_gate_off_applies_nothing_and_shows_what_would_apply():
    result = evaluate([overlay("o", requirements=ON_DEFAULT, price="7", capacity={"hugepages-2Mi": "1Gi"})],
                      [pool()], F1, gate_enabled=False)
    view = result.instance_type("np-1", DEFAULT)
    assert prices(result) == {"spot/test-zone-1": 1.020} and view.offerings[0].overlay is None
    assert "hugepages-2Mi" not in view.capacity and view.allocatable_memory == "4Gi"
    assert view.if_enabled.offerings[0].price == 7.0 and view.if_enabled.offerings[0].overlay == "o"
    assert view.if_enabled.capacity_overlays == {"hugepages-2Mi": "o"}
    assert view.if_enabled.allocatable_memory == "3Gi"
    assert result.feature_gate is False
    assert codes(result)[0] == "OverlayFeatureGateOff"
    on = evaluate([overlay("o", requirements=ON_DEFAULT, price="7")], [pool()], F1, gate_enabled=True)
    assert on.instance_type("np-1", DEFAULT).if_enabled is None and "OverlayFeatureGateOff" not in codes(on)


# -- requirement algebra ---------------------------------------------------------------------------------

@pytest.mark.parametrize("existing,incoming,strict,ok", [
    ([req("k", "In", "a", "b")], [req("k", "In", "b", "c")], True, True),
    ([req("k", "In", "a")], [req("k", "In", "b")], True, False),
    ([req("k", "NotIn", "a")], [req("k", "NotIn", "a")], True, True),  # two negatives
    ([req("k", "DoesNotExist")], [req("k", "NotIn", "a")], True, True),
    ([req("k", "In", "a")], [req("k", "DoesNotExist")], True, False),
    ([], [req(ZONE, "In", "z")], True, False),
    ([], [req(ZONE, "In", "z")], False, True),  # undefined well-known key allowed when not strict
    ([], [req("custom", "In", "z")], False, False),
    ([req("k", "In", "5", "x")], [req("k", "Gt", "4")], True, True),
    ([req("k", "In", "4", "x")], [req("k", "Gt", "4")], True, False),  # only integer-parsable values count
    ([req("k", "Gt", "5")], [req("k", "Lt", "6")], True, False),  # Gte 6 vs Lte 5
    ([req("k", "Gt", "5")], [req("k", "Lt", "7")], True, True),
    ([req("k", "Exists")], [req("k", "Gte", "1")], True, True),
])
def test_requirements_compatibility(existing, incoming, strict, ok):
    assert Requirements.from_selector(existing).compatible(Requirements.from_selector(incoming), strict) is ok


def test_requirement_canonical_bounds_and_intersection():
    assert Requirement.of("k", "Gt", ["4"]).gte == 5 and Requirement.of("k", "Lt", ["4"]).lte == 3
    merged = Requirements.from_selector([req("k", "Gt", "1"), req("k", "Lt", "10"), req("k", "NotIn", "5")]).get("k")
    assert (merged.gte, merged.lte, merged.operator) == (2, 9, "NotIn")
    assert merged.has("3") and not merged.has("5") and not merged.has("10") and not merged.has("x")
    assert Requirement.of("k", "In", ["a"]).intersection(Requirement.of("k", "NotIn", ["a"])).operator == "DoesNotExist"


def test_offering_compatibility_ignores_offering_keys_the_overlay_does_not_mention():
    offering = Requirements.from_selector([req(ZONE, "In", "z1"), req(CT, "In", "spot"), req("res-id", "In", "r1")])
    assert offering_compatible(Requirements.from_selector([req(CT, "In", "spot")]), offering)
    assert not offering_compatible(Requirements.from_selector([req(ZONE, "In", "z2")]), offering)
    assert offering_compatible(Requirements(), offering)


# -- catalog and inference -----------------------------------------------------------------------------------

@pytest.mark.parametrize("item,expected", [
    ({"name": "m5.large", "capacity": {"memory": "lots"}}, "instance type m5.large: capacity.memory: invalid quantity"),
    ({"name": "m5.large", "offerings": [{"zone": "a", "price": "cheap"}]},
     "instance type m5.large: offerings[0].price: price 'cheap' is not a number"),
    ({"name": "m5.large", "requirements": [{"key": "k", "operator": "Near"}]}, "unsupported operator 'Near'"),
    ({"name": "m5.large", "labels": {IT: "m5.xlarge"}}, "label node.kubernetes.io/instance-type is 'm5.xlarge'"),
    ({"capacity": {}}, "instanceTypes[0]: name: Field required"),
])
def test_catalog_errors_name_the_instance_type(item, expected):
    with pytest.raises(InputError) as raised:
        from_catalog({"kind": "InstanceTypeCatalog", "metadata": {"name": "cat"}, "instanceTypes": [item]})
    assert expected in str(raised.value) and str(raised.value).startswith("InstanceTypeCatalog cat: ")


def test_catalog_duplicates_and_label_coercion():
    its = from_catalog({"instanceTypes": [{"name": "a", "nodePools": ["x"], "labels": {"example.com/cpu": 8}},
                                          {"name": "a", "nodePools": ["y"]}]})
    assert its[0].labels["example.com/cpu"] == "8"
    with pytest.raises(InputError, match="listed twice"):
        from_catalog({"instanceTypes": [{"name": "a"}, {"name": "a", "nodePools": ["y"]}]})


def test_inference_falls_back_to_the_node_capacity_and_groups_by_nodepool():
    labels = {IT: "m5.large", NP: "a", ZONE: z(1), CT: "spot", "kubernetes.io/arch": "amd64"}
    claim = NodeClaim.model_validate({"metadata": {"name": "a-x", "labels": labels}, "status": {"nodeName": "n1"}})
    node = Node.model_validate({"metadata": {"name": "n1", "labels": labels}, "status": {"capacity": {"cpu": "2"}}})
    other = Node.model_validate({"metadata": {"name": "n2", "labels": {**labels, NP: "b", ZONE: z(2),
                                                                        "kubernetes.io/arch": "arm64"}}})
    plain = Node.model_validate({"metadata": {"name": "n3", "labels": {IT: "m5.large"}}})  # not Karpenter's
    its = infer_from_cluster([node, other, plain], [claim], [])
    assert [(it.node_pools, str(it.capacity.get("cpu")), it.labels["kubernetes.io/arch"]) for it in its] == [
        (["a"], "2", "amd64"), (["b"], "None", "arm64")]
    assert [(o.zone, o.capacity_type, o.price) for o in its[0].offerings] == [(z(1), "spot", None)]


def test_inferred_instance_types_have_unknown_prices():
    inventory = load_snapshot(EXAMPLES)
    pools = inventory.all(NodePool)
    its = infer_from_cluster(inventory.all(Node), inventory.all(NodeClaim), pools)
    by_key = {(it.node_pools[0], it.name): it for it in its}
    gpu = by_key[("gpu", "g6e.12xlarge")]
    assert gpu.source == "inferred" and {(o.zone, o.capacity_type) for o in gpu.offerings} == {
        ("us-west-2a", "on-demand"), ("us-west-2b", "on-demand")}
    assert all(o.price is None for o in gpu.offerings)
    assert "workload-class" not in gpu.labels and "kubernetes.io/hostname" not in gpu.labels  # template label
    assert str(gpu.capacity["nvidia.com/gpu"]) == "4"
    result = evaluate(inventory.all(NodeOverlay), pools, its)
    view = result.instance_type("gpu", "g6e.12xlarge")
    assert {o.price for o in view.offerings} == {None}  # -10% of an unknown price
    assert {o.overlay for o in view.offerings} == {"gpu-savings-plan"}
    unknown = next(f for f in findings(result) if f.code == "PricesUnknown")
    assert unknown.severity == "warning" and "inferred from the cluster" in unknown.message
    absolute = evaluate([overlay("flat", 10, [req(IT, "In", "g6e.12xlarge")], price="8.25")], pools, its)
    assert {o.price for o in absolute.instance_type("gpu", "g6e.12xlarge").offerings} == {8.25}


# -- the example cluster (examples/cluster/README.md, "Karpenter overlays") ------------------------------

def test_example_cluster_matches_the_readme():
    inventory = load_snapshot(EXAMPLES)
    assert inventory.problems == []
    its = [it for doc in inventory.documents["InstanceTypeCatalog"] for it in from_catalog(doc)]
    result = evaluate(inventory.all(NodeOverlay), inventory.all(NodePool), its)

    assert status(result, "gpu-negotiated-rate") == "Conflict"
    assert result.overlay("gpu-negotiated-rate").conflicts_with == ["gpu-savings-plan"]
    assert result.overlay("gpu-savings-plan").conflicts_with == ["gpu-negotiated-rate"]
    assert status(result, "gpu-savings-plan") == status(result, "cpu-hugepages") == "Ready"
    conflict = next(f for f in findings(result) if f.code == "OverlayConflict")
    assert conflict.object == "nodeoverlay/gpu-negotiated-rate" and "gpu-savings-plan" in conflict.message
    assert "OverlayStatusDisagrees" not in codes(result)  # Karpenter's status says the same

    def by_offering(pool_name, name):
        return {(o.capacity_type, o.zone): (o.base_price, o.price, o.overlay)
                for o in result.instance_type(pool_name, name).offerings}

    g12 = by_offering("gpu", "g6e.12xlarge")
    for zone in ("us-west-2a", "us-west-2b"):
        base, price, source = g12[("on-demand", zone)]
        assert (base, source) == (10.49264, "gpu-savings-plan") and price == pytest.approx(9.443376)
    assert g12[("spot", "us-west-2a")] == (4.1971, 4.1971, None)
    g24 = by_offering("gpu", "g6e.24xlarge")
    assert g24[("on-demand", "us-west-2a")][1] == pytest.approx(13.559031)
    assert g24[("on-demand", "us-west-2b")][1] == pytest.approx(13.559031)
    assert g24[("spot", "us-west-2b")] == (6.0262, 6.0262, None)
    for name in ("m7i.2xlarge", "c7i.16xlarge"):
        assert all(base == price and source is None for base, price, source in by_offering("default", name).values())

    c7i = result.instance_type("default", "c7i.16xlarge")
    assert c7i.capacity["hugepages-2Mi"] == "8Gi" and c7i.capacity_overlays == {"hugepages-2Mi": "cpu-hugepages"}
    assert c7i.allocatable_memory == "113049Mi" and c7i.allocatable_memory_before_overlays == "121241Mi"
    assert result.instance_type("gpu", "c7i.16xlarge") is None  # catalog offers it to `default` only

    document = result.model_dump(by_alias=True, mode="json")
    assert document["kind"] == "OverlayExplanation" and document["apiVersion"] == "kubectl-dra.io/v1alpha1"
    assert set(document["overlays"][0]) >= {"name", "weight", "status", "message", "conflictsWith", "matches"}
    assert set(document["instanceTypes"][0]) >= {"nodePool", "name", "offerings", "capacity", "capacityOverlays",
                                                 "resourceSlices"}
    assert set(document["instanceTypes"][0]["offerings"][0]) >= {"zone", "capacityType", "basePrice", "price",
                                                                 "overlay"}


# -- requirement shapes (issue 23) ---------------------------------------------------------------

@pytest.mark.parametrize("operator,values,ok", [
    ("In", ["a"], True), ("In", [], False), ("NotIn", ["a", "b"], True), ("NotIn", [], False),
    ("Exists", [], True), ("Exists", ["a"], False), ("DoesNotExist", [], True), ("DoesNotExist", ["a"], False),
    ("Gt", ["0"], True), ("Gt", ["abc"], False), ("Gt", ["-1"], False), ("Gt", ["1", "2"], False), ("Gt", [], False),
    ("Lt", ["9223372036854775807"], True), ("Lt", ["9223372036854775808"], False), ("Gte", ["1.5"], False),
    ("Lte", [" 1"], False), ("Near", ["a"], False),
])
def test_shape_problem_accepts_exactly_what_requirement_of_can_build(operator, values, ok):
    from kubectl_dra.overlays.requirements import shape_problem

    assert (shape_problem(operator, values) is None) == ok
    if ok:
        Requirement.of("example.com/k", operator, values)  # never raises on a checked shape


def test_catalog_collects_problems_and_keeps_the_rest():
    problems: list[str] = []
    its = from_catalog({"kind": "InstanceTypeCatalog", "metadata": {"name": "cat"}, "instanceTypes": [
        {"name": "a", "requirements": [{"key": "example.com/cpu", "operator": "Gt", "values": ["x"]}]},
        {"name": "b", "offerings": [{"zone": "z1", "price": -1}, {"zone": "z2", "price": 0.5}]},
        {"name": "c"},
        "not an object",
    ]}, problems)
    assert [it.name for it in its] == ["b", "c"]
    assert [o.price for o in its[0].offerings] == [None, 0.5]
    assert len(problems) == 3 and all(p.startswith("InstanceTypeCatalog cat: ") for p in problems)
    assert "instance type a: requirements[0]" in problems[0] and "offerings[0].price" in problems[1]
