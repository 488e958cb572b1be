"""Device taints as the device taint eviction controller decides (pkg/controller/devicetainteviction
@ v1.37.2): the cases of its unit test table that API objects express (device_taint_eviction_test.go),
through the TaintExplanation."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from builders import claim, pod, reserved_pod, resource_slice, uid

from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.registry import parse_object
from kubectl_dra.taints.explain import explain_taints

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=timezone.utc)
STAMP = "2026-11-20T09:00:00Z"
DRIVER, NODE = "gpu.example.com", "worker-1"
TAINT = {"key": "example.com/taint", "value": "something", "effect": "NoExecute", "timeAdded": STAMP}


def world(*, taints=(TAINT,), tolerations=None, node=NODE, reserved=True, generation=None, rules=(), slices=True,
          extra=()):
    """One pod using one claim allocated gpu-0 (tainted as given), as in the controller's fixtures."""
    p = pod("my-pod", claims={"gpu": "my-claim"}, node=node)
    c = claim("my-claim", devices=[(DRIVER, NODE, "gpu-0")], reserved_for=[reserved_pod(p)] if reserved else [])
    if tolerations is not None:
        c["status"]["allocation"]["devices"]["results"][0]["tolerations"] = tolerations
    s = resource_slice(NODE, DRIVER, [{"name": "gpu-0", "taints": list(taints)}, {"name": "gpu-1"}])
    objects = [p, c, *([s] if slices else []), *rules, *extra]
    if generation is not None:  # a newer generation of the pool without the taint
        newer = resource_slice(NODE, DRIVER, [{"name": "gpu-0"}, {"name": "gpu-1"}])
        newer["metadata"]["name"] += "-new"
        newer["spec"]["pool"]["generation"] = generation
        objects.append(newer)
    inventory = Inventory()
    inventory.extend(parse_object(o) for o in objects)
    return inventory


def rule(name="rule", selector=None, effect="NoExecute", time_added=STAMP, key="example.com/taint", value="something"):
    spec = {"taint": {"key": key, "value": value, "effect": effect, **({"timeAdded": time_added} if time_added else {})}}
    if selector is not None:
        spec["deviceSelector"] = selector
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name}, "spec": spec}


def outcome(inventory, now=T0, dry_run=None):
    result = explain_taints(inventory, now, dry_run=parse_object(dry_run) if dry_run else None)
    return {(d.device, c.claim): (c.outcome, c.pods, c.evict_at) for d in result.devices for c in d.consumers}, result


GPU0 = f"{DRIVER}/{NODE}/gpu-0"
MINE = (GPU0, "ml/my-claim")


def tol(seconds=None, key=None, operator="Exists", effect="NoExecute", value=None):
    t = {"operator": operator, "effect": effect}
    if key:
        t["key"] = key
    if value is not None:
        t["value"] = value
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    return t


@pytest.mark.parametrize("name, kwargs, now, expected", [
    ("evict-pod-resourceclaim", {}, T0, ("Evicted", ["ml/my-pod"], STAMP)),
    ("evict-pod-later", {"tolerations": [tol(3600, key="example.com/taint")]}, T0,
     ("EvictionPending", ["ml/my-pod"], "2026-11-20T10:00:00Z")),
    ("evict-pod-later-many", {"tolerations": [tol(20, key="other"), tol(60), tol(30)]}, T0,
     ("EvictionPending", ["ml/my-pod"], "2026-11-20T09:00:30Z")),
    ("evict-pod-later-due", {"tolerations": [tol(60)]}, T0 + timedelta(seconds=61),
     ("Evicted", ["ml/my-pod"], "2026-11-20T09:01:00Z")),
    ("evict-pod-toleration-mismatch", {"tolerations": [tol(3600, key="other")]}, T0, ("Evicted", ["ml/my-pod"], STAMP)),
    ("no-evict-pod-toleration-forever", {"tolerations": [tol()]}, T0, ("Tolerated", ["ml/my-pod"], None)),
    ("no-evict-pod-toleration-forever-many", {"tolerations": [tol(60), tol()]}, T0, ("Tolerated", ["ml/my-pod"], None)),
    ("empty-effect-toleration-does-not-protect", {"tolerations": [tol(effect="")]}, T0,
     ("Evicted", ["ml/my-pod"], STAMP)),
    ("equal-operator-needs-the-value", {"tolerations": [tol(operator="Equal", key="example.com/taint", value="x")]}, T0,
     ("Evicted", ["ml/my-pod"], STAMP)),
    ("negative-seconds-count-as-zero", {"tolerations": [tol(-5)]}, T0, ("Evicted", ["ml/my-pod"], STAMP)),
    ("no-evict-pod-not-scheduled", {"node": None}, T0, ("Evicted", [], STAMP)),
    ("no-evict-wrong-pod", {"reserved": False}, T0, ("Evicted", [], STAMP)),
    ("no-schedule-blocks-new-allocations-only", {"taints": [{**TAINT, "effect": "NoSchedule"}]}, T0,
     ("BlocksNewAllocations", ["ml/my-pod"], None)),
])
def test_eviction_outcomes(name, kwargs, now, expected):
    outcomes, _ = outcome(world(**kwargs), now)
    assert outcomes[MINE] == expected


@pytest.mark.parametrize("effect", ["None", "unknown-effect"])
def test_ignored_effects(effect):
    outcomes, result = outcome(world(taints=[{**TAINT, "effect": effect}]))
    assert outcomes == {} and [d.device for d in result.devices] == [GPU0]  # listed, touching nobody


def test_highest_generation_only():
    """cancel-eviction-remove-taint-in-new-slice: the newer generation has no taint."""
    outcomes, result = outcome(world(generation=2))
    assert outcomes == {} and result.devices == []


def test_tainted_claim_through_rule_without_slices():
    outcomes, result = outcome(world(slices=False, taints=(), rules=[rule(selector={"driver": DRIVER})]))
    assert outcomes[MINE] == ("Evicted", ["ml/my-pod"], STAMP)
    assert result.devices[0].published is False and result.devices[0].taints[0].source == "rule/rule"


@pytest.mark.parametrize("selector, hits", [
    (None, set()),  # no deviceSelector: nothing
    ({}, {GPU0, f"{DRIVER}/{NODE}/gpu-1"}),  # {}: everything
    ({"device": "gpu-1"}, {f"{DRIVER}/{NODE}/gpu-1"}),
    ({"driver": DRIVER, "pool": NODE, "device": "gpu-0"}, {GPU0}),
    ({"pool": "other"}, set()),
])
def test_rule_selectors(selector, hits):
    _, result = outcome(world(taints=(), rules=[rule(selector=selector)]))
    assert {d.device for d in result.devices} == hits


def test_template_claim_must_be_the_pods():
    p = pod("web", templates={"gpu": "tmpl"}, generated={"gpu": "web-gpu-x"})
    owned = claim("web-gpu-x", devices=[(DRIVER, NODE, "gpu-0")], reserved_for=[reserved_pod(p)])
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "web",
                                             "uid": p["metadata"]["uid"], "controller": True}]
    s = resource_slice(NODE, DRIVER, [{"name": "gpu-0", "taints": [TAINT]}])
    inventory = Inventory()
    inventory.extend(parse_object(o) for o in (p, owned, s))
    assert outcome(inventory)[0][(GPU0, "ml/web-gpu-x")][1] == ["ml/web"]
    owned["metadata"]["ownerReferences"][0]["uid"] = uid("someone-else")
    inventory = Inventory()
    inventory.extend(parse_object(o) for o in (p, owned, s))
    assert outcome(inventory)[0][(GPU0, "ml/web-gpu-x")][1] == []  # no-evict-extended/template-wrong-owner


def test_dry_run_predicts_and_warns():
    inventory = world(taints=())
    outcomes, result = outcome(inventory, dry_run=rule(name="drain", selector={"pool": NODE}, time_added=None))
    assert result.dry_run and result.rule == "drain"
    assert outcomes[MINE] == ("WouldEvict", ["ml/my-pod"], None)  # at once: no toleration delays it
    assert [f.code for f in result.findings] == ["DeviceTaintedNoExecute"]
    _, broad = outcome(inventory, dry_run=rule(name="all", selector={}))
    (finding,) = [f for f in broad.findings if f.code == "DeviceTaintRuleTooBroad"]
    assert finding.severity == "error" and "2 published devices" in finding.message and "1 pod at stake" in finding.message
    _, none = outcome(inventory, dry_run=rule(name="none"))
    assert [f.code for f in none.findings] == ["DeviceTaintRuleSelectsNothing"] and none.devices == []
    delayed, _ = outcome(world(taints=(), tolerations=[tol(300)]), dry_run=rule(name="d", selector={}, time_added=None))
    assert delayed[MINE] == ("WouldEvict", ["ml/my-pod"], "2026-11-20T09:05:00Z")


def test_unhealthy_device_reported_by_the_kubelet():
    inventory = world(taints=())
    p = next(iter(inventory.all(type(next(o for o in inventory.objects() if o.kind == "Pod")))))
    raw = p.model_dump(mode="json", by_alias=True)
    raw["status"]["containerStatuses"] = [{"name": "main", "allocatedResourcesStatus": [
        {"name": "claim:gpu", "resources": [{"resourceID": GPU0, "health": "Unhealthy", "message": "XID 79"}]}]}]
    inventory.add(parse_object({"apiVersion": "v1", "kind": "Pod", **{k: v for k, v in raw.items()
                                                                       if k not in ("apiVersion", "kind")}}))
    _, result = outcome(inventory)
    (finding,) = [f for f in result.findings if f.code == "DeviceUnhealthy"]
    assert GPU0 in finding.message and "XID 79" in finding.message and finding.severity == "warning"


def test_a_claims_list_costs_each_claim_its_own_devices_and_pods(monkeypatch):
    """``claims -o wide`` asks every claim for its taints and health: the slices are indexed once per
    list and each claim looks at its own pods only (it was claims x pods and claims x slices)."""
    import kubectl_dra.taints.explain as taints
    from kubectl_dra.claims.summary import list_claims

    n = 40
    objects = []
    for i in range(n):
        node = f"node-{i}"
        p = pod(f"p-{i}", claims={"gpu": f"c-{i}"}, node=node)
        p["status"]["containerStatuses"] = [{"name": "main", "allocatedResourcesStatus": [
            {"name": f"claim:gpu/{DRIVER}", "resources": [{"resourceID": "gpu-0", "health": "Unhealthy"}]}]}]
        objects += [p, claim(f"c-{i}", devices=[(DRIVER, node, "gpu-0")], reserved_for=[reserved_pod(p)]),
                    resource_slice(node, DRIVER, [{"name": "gpu-0", "taints": [TAINT]}])]
    inventory = Inventory()
    inventory.extend(parse_object(o) for o in objects)
    built, pods_seen = [], []
    index, health = taints._published, taints.device_health
    monkeypatch.setattr(taints, "_published", lambda slices: built.append(1) or index(slices))
    monkeypatch.setattr(taints, "device_health", lambda pods: (pods_seen.extend(pods := list(pods)), health(pods))[1])
    result = list_claims(inventory.claims(), inventory, detailed=True)
    assert len(built) == 1 and len(pods_seen) == n
    assert all({"DeviceTaintedNoExecute", "DeviceUnhealthy"} <= set(item.findings) for item in result.items)


def test_a_device_held_twice_by_one_claim_shows_each_rule_taint_once():
    """Two shares of one device in a claim's results: the device's taints are listed once."""
    from kubectl_dra.taints.explain import claim_taints

    inventory = world(taints=(), rules=[rule(selector={"driver": DRIVER})])
    c = inventory.claims()[0]
    raw = c.raw
    first = raw["status"]["allocation"]["devices"]["results"][0]
    raw["status"]["allocation"]["devices"]["results"] = [{**first, "shareID": "a"}, {**first, "shareID": "b"}]
    twice = parse_object(raw)
    taints, _ = claim_taints(twice, inventory, T0)
    assert [t.source for t in taints[(DRIVER, NODE, "gpu-0")]] == ["rule/rule"]
