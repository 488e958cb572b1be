"""The resource pools the allocator sees from one node, as the 1.37 default ("incubating")
allocator gathers them (k8s.io/dynamic-resource-allocation structured/internal/incubating
pools_incubating.go @ v0.37.2).

Per driver and pool, only the highest generation among the slices that reach the node is kept;
a pool with fewer slices than ``resourceSliceCount`` is incomplete (no devices; an ``All``
request that sees it fails), and one with a newer generation elsewhere is dropped as stale.
Pools are ordered by (driver, pool) with pools holding devices with binding conditions last;
slices by name; devices in slice order. A pool with a duplicate device, a duplicate counter set
or a device consuming an unknown counter is invalid.

A field the allocator reads that did not validate when the slice was read (a counter value that is
no quantity, a taint effect that is no string) leaves the pool or the device unreadable: the
allocator says it cannot tell instead of deciding on what is left of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kubectl_dra.model.node import Node
from kubectl_dra.model.resource import Device, ResourceSlice
from kubectl_dra.pools.nodeselector import NodeSelectorError
from kubectl_dra.pools.slices import reaches


@dataclass(slots=True)
class Pool:
    driver: str
    name: str
    generation: int
    incomplete: bool = False
    invalid: str | None = None  # why the pool is invalid
    slices: list[ResourceSlice] = field(default_factory=list)  # targeting the node, by name
    others: list[ResourceSlice] = field(default_factory=list)  # same pool and generation, other nodes
    counter_sets: dict[str, dict[str, object]] = field(default_factory=dict)  # set -> counter -> Quantity
    binding: bool = False
    unreadable: str | None = None  # a counter field of the pool's slices did not validate: its counters are unknown
    unreadable_devices: dict[str, str] = field(default_factory=dict)  # device name -> its field that did not validate
    unselectable_devices: dict[str, str] = field(default_factory=dict)  # the same, for a field selectors read

    @property
    def key(self) -> str:
        return f"{self.driver}/{self.name}"

    def unreadable_for(self, device: Device, *, selected: bool) -> str | None:
        """Why what the allocator would decide on ``device`` is unknown (an invalid field), or None:
        before its selectors are evaluated, a field they read (or its node selection); once they
        select it, any field the allocator reads."""
        if not selected:
            return self.unselectable_devices.get(device.name)
        return self.unreadable_devices.get(device.name) or self.unreadable

    def devices(self):
        """(slice, device) in the allocator's order."""
        for rs in self.slices:
            for device in rs.spec.devices:
                yield rs, device


@dataclass(slots=True)
class Gathered:
    pools: list[Pool]
    stale: list[tuple[str, int, int]]  # (driver/pool, generation seen here, newer generation)
    errors: list[str]  # node selectors that do not parse (fatal for the scheduler)


def node_matches(node: Node, name: str | None, all_nodes: bool | None, selector: dict | None) -> bool:
    """``NodeMatches``: a node name, all nodes, or a node selector; nothing set matches nothing.
    A selector that does not parse raises :class:`NodeSelectorError`."""
    return bool(reaches(node.name, node.metadata.labels, name, all_nodes, selector))


def uses_compatibility_groups(rs: ResourceSlice) -> bool:
    """A slice DRADeviceCompatibilityGroups (alpha, off) would need: the scheduler ignores it."""
    return any(use.compatibility_groups for device in rs.spec.devices for use in device.consumes_counters)


def _relevant(rs: ResourceSlice, node: Node) -> bool:
    spec = rs.spec
    whole = reaches(node.name, node.metadata.labels, spec.node_name, spec.all_nodes, spec.node_selector)
    if whole is not None:
        return whole
    if spec.per_device_node_selection:
        return any(node_matches(node, d.node_name, d.all_nodes, d.node_selector) for d in spec.devices)
    return False


def _counter_sets(slices: list[ResourceSlice]) -> tuple[dict, str | None]:
    sets: dict[str, dict[str, object]] = {}
    for rs in slices:
        for counter_set in rs.spec.shared_counters:
            name = counter_set.name
            if name is None:
                continue
            if name in sets:
                return sets, f"duplicate counter set {name!r}"
            sets[name] = {counter: spec.value for counter, spec in counter_set.counters.items()}
    return sets, None


def _consumption_problem(device: Device, sets: dict) -> str | None:
    for use in device.consumes_counters:
        name = use.counter_set
        if name not in sets:
            return f"device {device.name} consumes unknown counter set {name!r}"
        for counter in use.counters:
            if counter not in sets[name]:
                return f"device {device.name} consumes unknown counter {name}/{counter}"
    return None


DEVICE_FIELDS = frozenset({"attributes", "capacity", "allowMultipleAllocations", "taints", "bindingConditions",
                           "bindingFailureConditions", "bindsToNode", "nodeName", "nodeSelector", "allNodes"})
"""The device fields the allocator reads for that device alone: one that did not validate leaves
the device unreadable (its name, or its counter consumption, the whole pool)."""

_DEVICE_PATH = re.compile(r"spec\.devices\[(\d+)\](?:\.(\w+))?")


def _selectors_read(field: str, rest: str) -> bool:
    """Whether a device's selectors (its attributes and capacity values) or its node selection read
    the invalid field ``field`` + ``rest`` (a capacity's request policy is read only once selected)."""
    return field in ("attributes", "nodeName", "nodeSelector", "allNodes") or \
        field == "capacity" and ".requestPolicy" not in rest


def _unreadable(slices: list[ResourceSlice], pool: Pool) -> None:
    """Record the fields of the pool's slices that did not validate: a device field the allocator
    reads for that device; anything else of the spec it reads (counters, which partitions share; a
    device that was dropped, which shifts the rest; the pool and node fields) for the whole pool."""
    for rs in slices:
        for invalid in rs.invalid_fields:
            where = f"ResourceSlice {rs.name}: {invalid.path} did not validate"
            device = _DEVICE_PATH.match(invalid.path)
            if device is None:
                if invalid.path.startswith("spec.") and pool.unreadable is None:
                    pool.unreadable = where
            elif device[2] == "taints" and invalid.path.endswith(".timeAdded"):
                continue  # the allocator reads a taint's key, value and effect; when it was added is the evictions'
            elif device[2] in DEVICE_FIELDS and int(device[1]) < len(rs.spec.devices):
                name = rs.spec.devices[int(device[1])].name
                pool.unreadable_devices.setdefault(name, where)
                if _selectors_read(device[2], invalid.path[device.end(2):]):
                    pool.unselectable_devices.setdefault(name, where)
            elif device[2] in (None, "name", "consumesCounters") and pool.unreadable is None:
                pool.unreadable = where


def _build(driver: str, name: str, kept: list[ResourceSlice], pool_slices: list[ResourceSlice] | None,
           partitionable: bool = True) -> Pool:
    kept = sorted(kept, key=lambda rs: rs.name)
    pool = Pool(driver=driver, name=name, generation=kept[0].spec.pool.generation)
    kept_names = {rs.name for rs in kept}
    counter_slices = [rs for rs in kept if rs.spec.shared_counters]
    pool.slices = [rs for rs in kept if not rs.spec.shared_counters]
    for rs in pool_slices or ():
        if rs.name in kept_names:
            continue
        (counter_slices if rs.spec.shared_counters else pool.others).append(rs)
    _unreadable([*kept, *(pool_slices or ())], pool)
    pool.counter_sets, problem = _counter_sets(counter_slices)
    seen: set[str] = set()
    for rs in pool.slices:
        for device in rs.spec.devices:
            if device.name in seen:
                problem = problem or f"duplicate device name {device.name!r}"
            seen.add(device.name)
    for rs in (*pool.slices, *pool.others) if partitionable and pool.unreadable is None else ():
        for device in rs.spec.devices:
            problem = problem or _consumption_problem(device, pool.counter_sets)
    pool.invalid = problem
    pool.binding = any(d.binding_conditions for rs in pool.slices for d in rs.spec.devices)
    return pool


def whole_pool(driver: str, name: str, current: list[ResourceSlice], partitionable: bool = True) -> Pool:
    """A complete pool from the slices of its newest generation (every node's), as the allocator
    builds it: its counters, its validity, its devices in order (``devices/explain.py`` counts a
    cluster's pools with it; a node's view is :func:`gather`)."""
    return _build(driver, name, current, None, partitionable)


def gather(node: Node, slices: list[ResourceSlice], by_pool: dict[tuple[str, str], list[ResourceSlice]],
           partitionable: bool = True) -> Gathered:
    """``slices``: those that can reach the node (node-local ones of this node and every shared
    one), in the API's order; ``by_pool``: every slice of the cluster by (driver, pool);
    ``partitionable``: DRAPartitionableDevices (off: slices with per-device node selection or
    shared counters are ignored)."""
    kept: dict[tuple[str, str], list[ResourceSlice]] = {}
    errors: list[str] = []
    for rs in slices:
        if not partitionable and (rs.spec.per_device_node_selection is not None or rs.spec.shared_counters):
            continue
        if uses_compatibility_groups(rs):  # DRADeviceCompatibilityGroups is alpha and off: such slices are ignored
            continue
        try:
            if not _relevant(rs, node):
                continue
        except NodeSelectorError as exc:
            errors.append(f"ResourceSlice {rs.name}: node selector: {exc}")
            continue
        key = (rs.spec.driver, rs.spec.pool.name)
        current = kept.get(key)
        generation = rs.spec.pool.generation
        if current is None or generation > current[0].spec.pool.generation:
            kept[key] = [rs]
        elif generation == current[0].spec.pool.generation:
            current.append(rs)
    normal, binding, stale = [], [], []
    for (driver, name), pool_slices in kept.items():
        count = pool_slices[0].spec.pool.resource_slice_count
        generation = pool_slices[0].spec.pool.generation
        if len(pool_slices) == count:
            pool = _build(driver, name, pool_slices, None, partitionable)
        else:
            everything = by_pool.get((driver, name), [])
            newer = max((rs.spec.pool.generation for rs in everything), default=generation)
            if newer > generation:
                stale.append((f"{driver}/{name}", generation, newer))
                continue
            same = [rs for rs in everything if rs.spec.pool.generation == generation
                    and not uses_compatibility_groups(rs)]  # ignored slices do not complete a pool
            if len(same) != count:
                pool = Pool(driver=driver, name=name, generation=generation, incomplete=True)
            else:
                pool = _build(driver, name, pool_slices, same, partitionable)
        (binding if pool.binding else normal).append(pool)
    order = lambda p: (p.driver, p.name)  # noqa: E731
    return Gathered(pools=sorted(normal, key=order) + sorted(binding, key=order), stale=stale, errors=errors)
