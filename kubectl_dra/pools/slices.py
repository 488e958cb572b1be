"""Which ResourceSlices count, and which of their devices a node can reach.

Only the highest ``spec.pool.generation`` of a pool counts: a driver replacing a pool publishes a
new generation and then deletes the old slices, and everything in between is outdated. A slice
reaches a node by ``nodeName``, ``allNodes`` or ``nodeSelector``; with ``perDeviceNodeSelection``
each device says so itself (the allocator's ``GatherPools``/``NodeMatches``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.resource import Device, ResourceSlice
from kubectl_dra.pools.nodeselector import NodeSelectorError, node_selector_matches

PoolKey = tuple[str, str]  # (driver, pool name)


def pool_key(rs: ResourceSlice) -> PoolKey:
    return (rs.spec.driver, rs.spec.pool.name)


def current_generations(slices: Iterable[ResourceSlice]) -> dict[PoolKey, int]:
    """The highest generation of every pool."""
    highest: dict[PoolKey, int] = {}
    for rs in slices:
        key = pool_key(rs)
        if rs.spec.pool.generation > highest.get(key, -1):
            highest[key] = rs.spec.pool.generation
    return highest


def current_slices(slices: Iterable[ResourceSlice]) -> list[ResourceSlice]:
    """The slices of each pool's highest generation (outdated ones dropped)."""
    slices = list(slices)
    highest = current_generations(slices)
    return [rs for rs in slices if rs.spec.pool.generation == highest[pool_key(rs)]]


def slice_device(inventory: Inventory, driver: str, pool: str, device: str):
    """The ResourceSlice and device an allocation result points at, or (None, None). Only a
    pool's highest generation counts: a device left only in an outdated slice is gone."""
    current, _, _ = inventory.index("devices", lambda: _devices(inventory))
    found = current.get((driver, pool, device))
    return (found[0], found[1]) if found else (None, None)


def outdated_generation(inventory: Inventory, driver: str, pool: str, device: str) -> tuple[int, int] | None:
    """(generation it was last published in, the pool's current generation) for a device that
    only an outdated slice still lists."""
    current, outdated, highest = inventory.index("devices", lambda: _devices(inventory))
    found = outdated.get((driver, pool, device))
    if found is None or (driver, pool, device) in current:
        return None
    return found[2], highest[(driver, pool)]


def _devices(inventory: Inventory) -> tuple[dict, dict, dict]:
    """(device -> (slice, device, generation) in the pool's highest generation; the same for
    devices only an outdated slice lists, newest first; each pool's highest generation)."""
    slices = inventory.of_kind("ResourceSlice")
    highest = current_generations(slices)
    current, outdated = {}, {}
    for rs in slices:
        generation = rs.spec.pool.generation
        target = current if generation == highest[pool_key(rs)] else outdated
        for dev in rs.spec.devices:
            key = (rs.spec.driver, rs.spec.pool.name, dev.name)
            if target is current or generation > outdated.get(key, (None, None, -1))[2]:
                target[key] = (rs, dev, generation)
    return current, outdated, highest


def reaches(node_name: str, labels: Mapping[str, str], name: str | None, all_nodes: bool | None,
            selector: Mapping | None) -> bool | None:
    """``NodeMatches``: True/False, or None when nothing is set (per-device selection, or a future
    field this tool does not know). Raises :class:`NodeSelectorError` for a selector that does not parse."""
    if name:
        return name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return node_selector_matches(selector, node_name, labels)
    return None


@dataclass
class NodeDevices:
    """The slices (current generation) that give a node devices, and the devices it reaches."""

    slices: list[tuple[ResourceSlice, list[Device]]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # selectors that do not parse

    def devices(self) -> list[tuple[ResourceSlice, Device]]:
        return [(rs, device) for rs, devices in self.slices for device in devices]


def for_node(slices: Iterable[ResourceSlice], node_name: str, labels: Mapping[str, str]) -> NodeDevices:
    """What ``node_name`` can be allocated from, as the scheduler gathers it."""
    result = NodeDevices()
    for rs in current_slices(slices):
        spec = rs.spec
        try:
            whole = reaches(node_name, labels, spec.node_name, spec.all_nodes, spec.node_selector)
            if whole is True:
                result.slices.append((rs, list(spec.devices)))
            elif whole is None and spec.per_device_node_selection:
                devices = [d for d in spec.devices
                           if reaches(node_name, labels, d.node_name, d.all_nodes, d.node_selector)]
                if devices:
                    result.slices.append((rs, devices))
        except NodeSelectorError as exc:
            result.problems.append(f"ResourceSlice {rs.name}: node selection cannot be evaluated: {exc}")
    return result
