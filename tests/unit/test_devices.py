"""``devices``: the packing of partitions into shared counters, and the counts of explain_devices in
the cases the real-scheduler scenarios (tests/cluster/test_devices_oracle.py) cannot build: fields
that did not validate, selectors this tool cannot evaluate, an overdrawn counter, an invalid pool,
a node that is gone or could not be read (docs/kubernetes/devices.md)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kubectl_dra.devices.explain import explain_devices
from kubectl_dra.devices.packing import most_at_once
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.registry import parse_object
from kubectl_dra.model.resource import DeviceClass

DRV = "gpu.example.com"
F = Fraction


@pytest.mark.parametrize("items,available,best,upper", [
    ([], {}, 0, 0),
    ([{}, {}], {}, 2, 2),  # nothing consumed: all fit
    ([{("g", "m"): F(20)}] * 4 + [{("g", "m"): F(40)}] * 2 + [{("g", "m"): F(80)}], {("g", "m"): F(80)}, 4, 4),
    ([{("g", "m"): F(20)}] * 4, {("g", "m"): F(40)}, 2, 2),
    # MIG-like: 1g partitions take one slice each, a 2g two; slice s0 is taken
    ([{("g", "s1"): F(1)}, {("g", "s2"): F(1)}, {("g", "s3"): F(1)}, {("g", "s2"): F(1), ("g", "s3"): F(1)}],
     {("g", "s0"): F(0), ("g", "s1"): F(1), ("g", "s2"): F(1), ("g", "s3"): F(1)}, 3, 3),
    # greedy by size takes the wide one first and gets 1; the search finds the 2 narrow ones
    ([{("g", "a"): F(1), ("g", "b"): F(1)}, {("g", "a"): F(1)}, {("g", "b"): F(1)}],
     {("g", "a"): F(1), ("g", "b"): F(1)}, 2, 2),
    ([{("g", "m"): F(10)}], {("g", "m"): F(-5)}, 0, 0),  # overdrawn: nothing fits
    ([{("g", "m"): F(1)}, {}], {("g", "x"): F(3)}, 1, 1),  # a counter the pool lacks: the item never fits
])
def test_most_at_once(items, available, best, upper):
    packed = most_at_once(items, available)
    assert (packed.best, packed.upper) == (best, upper)


def test_a_search_past_its_budget_is_a_range_never_a_guess():
    # 12 items, each two of 12 counters in a ring (each counter has room for one): the most is 6,
    # and the per-counter bound says 12; a budget of 3 steps cannot close the gap
    ring = [{("g", f"c{i}"): F(1), ("g", f"c{(i + 1) % 12}"): F(1)} for i in range(12)]
    room = {("g", f"c{i}"): F(1) for i in range(12)}
    assert most_at_once(ring, room).best == 6 and most_at_once(ring, room).exact
    cut = most_at_once(ring, room, budget=3)
    assert not cut.exact and cut.best <= 6 <= cut.upper


def node(name: str, **labels) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                                                      **labels}}}


def slice_(name: str, devices: list[dict], *, node_name: str | None = "n1", pool: str = "n1", generation: int = 1,
           count: int = 1, counters: dict | None = None, **spec) -> dict:
    body = {"driver": DRV, "pool": {"name": pool, "generation": generation, "resourceSliceCount": count}, **spec}
    if node_name:
        body["nodeName"] = node_name
    if counters is not None:
        body["sharedCounters"] = [{"name": "gpu", "counters": {k: {"value": v} for k, v in counters.items()}}]
    else:
        body["devices"] = devices
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": body}


def part(name: str, **consumes) -> dict:
    return {"name": name, "consumesCounters": [{"counterSet": "gpu", "counters": {
        k: {"value": v} for k, v in consumes.items()}}]}


def allocated(name: str, *devices: str, pool: str = "n1", admin: bool = False, deleting: bool = False) -> dict:
    meta = {"name": name, "namespace": "ml", "uid": f"uid-{name}"}
    if deleting:
        meta |= {"deletionTimestamp": "2026-11-22T11:00:00Z", "finalizers": ["resource.kubernetes.io/delete-protection"]}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": DRV}}]}},
            "status": {"allocation": {"devices": {"results": [
                {"request": "r", "driver": DRV, "pool": pool, "device": d, **({"adminAccess": True} if admin else {})}
                for d in devices]}},
                "reservedFor": [{"resource": "pods", "name": f"{name}-0", "uid": f"pod-{name}"}]}}


def klass(name: str, expression: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def inventory(*objects: dict, read=("Node", "ResourceSlice", "ResourceClaim", "DeviceClass")) -> Inventory:
    inv = Inventory()
    inv.extend(parse_object(o) for o in objects)
    inv.read_kinds |= set(read)
    return inv


def rows(inv: Inventory, **kw) -> dict[str, dict]:
    result = explain_devices(inv, **kw)
    return {f"{r.node} {r.pool}": r for r in result.pools}, result


def plain(*names: str, **kw) -> dict:
    return slice_("s", [{"name": n} for n in names], **kw)


@pytest.mark.parametrize("objects,expect", [
    # (objects, {field: value} of the one row)
    ([node("n1"), plain("a", "b", "c")], {"total": 3, "allocated": 0, "free": 3}),
    ([node("n1"), plain("a", "b"), allocated("c1", "a")], {"allocated": 1, "free": 1}),
    ([node("n1"), plain("a", "b"), allocated("c1", "a", deleting=True)], {"allocated": 1, "free": 1}),
    ([node("n1"), plain("a", "b"), allocated("c1", "a", admin=True)], {"allocated": 0, "admin": 1, "free": 2}),
    ([node("n1"), plain("a", "b", count=2)], {"total": 2, "free": 0, "blocked": 2, "state": "PoolIncomplete"}),
    ([node("n1"), plain("a", "a")], {"free": 0, "state": "PoolInvalid"}),
    ([node("n1"), plain("a", generation=1), slice_("s2", [{"name": "b"}], generation=2)],
     {"total": 1, "outdated": 1, "free": 1}),
    # partitions: one counter of 80, halves of 40; one half held: one more half fits, the whole does not
    ([node("n1"), slice_("c", [], counters={"m": "80"}, count=2),
      slice_("d", [part("whole", m="80"), part("h0", m="40"), part("h1", m="40")], count=2), allocated("c1", "h0")],
     {"free": 1, "available": 1, "blocked": 1}),
    # the driver shrank the counter under what is allocated: every device that consumes counters is refused
    ([node("n1"), slice_("c", [], counters={"m": "30"}, count=2),
      slice_("d", [part("h0", m="40"), part("h1", m="1"), {"name": "plain"}], count=2), allocated("c1", "h0")],
     {"free": 1, "blocked": 1}),
    # the slice's node is gone (and the Nodes were read): nothing of it can be allocated
    ([plain("a")], {"free": 0, "blocked": 1}),
])
def test_counts(objects, expect):
    (row,), _ = rows(inventory(*objects))[0].values(), None
    for key, value in expect.items():
        assert getattr(row, key) == value, (key, row)


def test_not_read_is_not_gone():
    """Nodes forbidden: a slice's node is not called missing, its devices stay free."""
    got, _ = rows(inventory(plain("a"), read=("ResourceSlice", "ResourceClaim", "DeviceClass")))
    assert got["n1 n1"].free == 1 and got["n1 n1"].blocked == 0


def test_an_overdrawn_counter_is_an_error_finding():
    inv = inventory(node("n1"), slice_("c", [], counters={"m": "30"}, count=2),
                    slice_("d", [part("h0", m="40")], count=2), allocated("c1", "h0"))
    _, result = rows(inv)
    (finding,) = [f for f in result.findings if f.code == "CounterOverdrawn"]
    assert finding.severity == "error" and "30 published, 40 allocated" in finding.message


def test_a_class_counts_only_what_its_selectors_accept():
    inv = inventory(node("n1"), slice_("s", [{"name": "a", "attributes": {"model": {"string": "h100"}}},
                                             {"name": "b", "attributes": {"model": {"string": "a100"}}},
                                             {"name": "c", "attributes": {"model": {"string": "h100"}}}]),
                    klass("h100", f'device.attributes["{DRV}"].model == "h100"'), allocated("c1", "b"))
    got, result = rows(inv, device_class=inv.get(DeviceClass, None, "h100"))
    assert (got["n1 n1"].total, got["n1 n1"].allocated, got["n1 n1"].free) == (2, 0, 2)
    assert result.device_class == "h100"


@pytest.mark.parametrize("slice_extra,why", [
    # a counter value that is no quantity: what the partitions may take is unknown
    ({"sharedCounters": [{"name": "gpu", "counters": {"m": {"value": "lots"}}}]}, "did not validate"),
])
def test_an_invalid_field_makes_free_unknown(slice_extra, why):
    counters = slice_("c", [], count=2)
    counters["spec"].update(slice_extra)
    inv = inventory(node("n1"), counters, slice_("d", [part("h0", m="40")], count=2))
    (row,) = explain_devices(inv).pools
    assert row.free is None and why in row.unknown


def test_a_selector_this_tool_cannot_evaluate_makes_free_unknown():
    inv = inventory(node("n1"), plain("a", "b"), klass("odd", 'device.attributes["x"].name.matches("^a") && '
                                                              'ip("10.0.0.1").family() == 4'))
    (row,) = explain_devices(inv, device_class=inv.all(DeviceClass)[0]).pools
    assert row.free is None and row.unknown


def test_a_pool_several_nodes_reach_is_one_row():
    selector = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["yes"]}]}]}
    inv = inventory(node("n1", gpu="yes"), node("n2", gpu="yes"), node("n3"),
                    plain("a", "b", node_name=None, pool="fabric", nodeSelector=selector),
                    slice_("every", [{"name": "x"}], node_name=None, pool="shared", allNodes=True))
    got, _ = rows(inv)
    assert got["<2 nodes> fabric"].nodes == ["n1", "n2"] and got["<2 nodes> fabric"].free == 2
    assert got["<all nodes> shared"].free == 1
    only, _ = rows(inv, nodes={"n3"})
    assert set(only) == {"<all nodes> shared"}  # the selector does not reach n3


def test_health_is_what_a_pod_reports_and_unknown_when_not_read():
    pod = parse_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "c1-0", "namespace": "ml"},
                        "status": {"containerStatuses": [{"name": "c", "allocatedResourcesStatus": [{
                            "name": "claim:gpu", "resources": [{"resourceID": f"{DRV}/n1/a", "health": "Unhealthy"}]}]}]}})
    inv = inventory(node("n1"), plain("a", "b"), allocated("c1", "a"))
    (row,) = explain_devices(inv, devices=True, pods=[pod]).pools
    assert row.unhealthy == 1 and [d.health for d in row.devices] == ["Unhealthy", None]
    (row,) = explain_devices(inv).pools
    assert row.unhealthy is None


def test_shapes_use_the_partition_type_attribute():
    devices = [{**part(f"q{i}", m="20"), "attributes": {"profile": {"string": "quarter"}}} for i in range(4)] + \
        [{**part("h0", m="40"), "attributes": {"profile": {"string": "half"}}}]
    inv = inventory(node("n1"), slice_("c", [], counters={"m": "80"}, count=2),
                    slice_("d", devices, count=2, partitionTypeAttribute=f"{DRV}/profile"), allocated("c1", "h0"))
    (row,) = explain_devices(inv).pools
    assert [(s.shape, s.devices, s.fit) for s in row.shapes] == [("half", 1, 0), ("quarter", 4, 2)]
    assert row.free == 2


def test_a_class_is_asked_even_of_an_unusable_pool():
    """An incomplete pool's devices the class does not accept are no part of its count."""
    inv = inventory(node("n1"), slice_("s", [{"name": "a", "attributes": {"model": {"string": "h100"}}},
                                             {"name": "b", "attributes": {"model": {"string": "a100"}}}], count=2),
                    klass("h100", f'device.attributes["{DRV}"].model == "h100"'))
    (row,) = explain_devices(inv, device_class=inv.all(DeviceClass)[0]).pools
    assert (row.total, row.free, row.state) == (1, 0, "PoolIncomplete")


def test_a_pool_of_slices_the_scheduler_ignores_has_no_row():
    ignored = slice_("s", [{**part("a", m="1"), "consumesCounters": [{"counterSet": "gpu", "counters": {
        "m": {"value": "1"}}, "compatibilityGroups": ["g1"]}]}])
    assert explain_devices(inventory(node("n1"), ignored)).pools == []
