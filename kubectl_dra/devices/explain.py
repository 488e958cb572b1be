"""``kubectl dra devices``: every pool's devices counted as the scheduler counts them (docs/kubernetes/
devices.md).

"Free" is the scheduler's meaning, asked of the allocator itself (``Allocator.device_refusal``):
a device is free when a new request (of ``--class``, or of no class) without tolerations could take
it now, against every claim's allocation, a claim being deleted included. A pool whose newest
generation is incomplete or invalid has nothing free, and slices of an older generation are not
counted. How many a request could take *together* is a packing over the pool's shared counters
(``packing.py``): for partitionable devices it is less than the devices free one at a time.
Whatever cannot be evaluated (a selector's CEL, an invalid field, a DeviceTaintRule) makes the
row's free count unknown, never a number that may be wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable

from kubectl_dra.allocation.allocator import Allocator, lookup_attribute
from kubectl_dra.allocation.explain import rule_taints
from kubectl_dra.allocation.gather import Pool, uses_compatibility_groups, whole_pool
from kubectl_dra.allocation.state import AllocatedState
from kubectl_dra.devices.document import (CapacityUse, CounterUse, DeviceAvailability, DeviceRow, Holder, PoolRow,
                                          ShapeFit)
from kubectl_dra.devices.packing import Need, most_at_once
from kubectl_dra.document import Finding
from kubectl_dra.model.claim import ExactDeviceRequest, ResourceClaim
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.registry import parse_object
from kubectl_dra.model.resource import Device, DeviceClass, ResourceSlice
from kubectl_dra.pools.nodeselector import NodeSelectorError
from kubectl_dra.pools.slices import reaches
from kubectl_dra.taints.explain import device_health
from kubectl_dra.taints.document import TaintView
from kubectl_dra.quantity import Quantity

ALL_NODES = "<all nodes>"
Key = tuple[str, str, str]

# the allocator's reasons -> a device's state (DeviceClassSelector: the class does not accept it)
_STATES = {"AlreadyAllocated": "Allocated", "Capacity": "CapacityUsed", "Counters": "CountersUsed",
           "Taint": "Tainted", "Undetermined": "Unknown", "BindingConditions": "Unknown",
           "NodeSelection": "Unreachable"}


class Holdings:
    """What the cluster's claims hold, folded in as the claims stream by (none of them is kept):
    the scheduler's allocated state, the devices admin access is on, who holds each device (only
    when the device rows are wanted) and the claims being deleted that still hold devices."""

    def __init__(self, keep_holders: bool):
        self.state = AllocatedState()
        self.admin: set[Key] = set()
        self.holders: dict[Key, list[Holder]] = {}
        self.deleting: list[tuple[str, list[Key]]] = []
        self.keep_holders = keep_holders

    @classmethod
    def of(cls, claims: Iterable[ResourceClaim], keep_holders: bool) -> "Holdings":
        held = cls(keep_holders)
        for claim in claims:
            held.add(claim)
        return held

    def add(self, claim: ResourceClaim) -> None:
        allocation = claim.status.allocation
        if allocation is None:
            return
        self.state.add(claim)
        results = allocation.devices.results
        self.admin.update(r.device_id for r in results if r.admin_access)
        if claim.deleted:
            self.deleting.append((claim.key, [r.device_id for r in results]))
        if not self.keep_holders:
            return
        pods = [f"{claim.namespace}/{r.name}" for r in claim.status.reserved_for if r.is_pod]
        groups = [f"{claim.namespace}/{r.name}" for r in claim.status.reserved_for if r.is_pod_group]
        for r in results:
            self.holders.setdefault(r.device_id, []).append(Holder(
                claim=claim.key, pods=pods, pod_groups=groups, admin_access=bool(r.admin_access), share_id=r.share_id,
                consumed={k: str(v) for k, v in (r.consumed_capacity or {}).items()}, deleting=claim.deleted))

    def held(self, key: Key) -> bool:
        """Held by a claim other than through admin access (whole, or shared)."""
        return key in self.state.exclusive or key in self.state.shared


@dataclass(frozen=True, slots=True)
class _Ask:
    """The one question every pool's rows answer: a new request ``spec`` (of ``klass``) against what
    ``held`` holds, asked of ``allocator``; what the rows carry besides (``health``, the device rows,
    the partition attribute)."""

    allocator: Allocator
    spec: ExactDeviceRequest
    klass: DeviceClass | None
    held: Holdings
    health: dict[str, str] | None
    devices: bool
    partition_attribute: str | None


def explain_devices(inventory: Inventory, *, device_class: DeviceClass | None = None,
                    nodes: set[str] | None = None, driver: str | None = None, pool: str | None = None,
                    free_only: bool = False, devices: bool = False, pods: Iterable[Pod] | None = None,
                    partition_attribute: str | None = None, holdings: Holdings | None = None) -> DeviceAvailability:
    """Rows per node x driver x pool; ``nodes``: only rows on these nodes (and shared pools that reach
    one); ``devices``: a row per device too; ``pods``: read for the kubelets' device health (None:
    not read, health unknown); ``partition_attribute``: the attribute naming partition types where a
    slice names none (as ResourcePoolStatusRequest's defaultPartitionTypeAttribute); ``holdings``:
    the claims folded in as they were read (default: the inventory's claims)."""
    held = holdings if holdings is not None else Holdings.of(inventory.all(ResourceClaim), devices)
    ask = _Ask(allocator=Allocator([], {c.name: c for c in inventory.all(DeviceClass)}, held.state,
                                   rule_taints=rule_taints(inventory)),
               spec=ExactDeviceRequest(device_class_name=device_class.name if device_class else ""),
               klass=device_class, held=held, health=_health(pods) if pods is not None else None,
               devices=devices, partition_attribute=partition_attribute)
    node_objects = {n.name: n for n in inventory.all(Node)}
    nodes_read = Node.KIND in inventory.read_kinds
    result = DeviceAvailability(device_class=device_class.name if device_class else None,
                                problems=[p.message for p in inventory.problems])
    by_pool: dict[tuple[str, str], list[ResourceSlice]] = {}
    for rs in inventory.all(ResourceSlice):
        if (driver is None or rs.spec.driver == driver) and (pool is None or rs.spec.pool.name == pool):
            by_pool.setdefault((rs.spec.driver, rs.spec.pool.name), []).append(rs)
    for (drv, name), slices in sorted(by_pool.items()):
        counted = _Pool(drv, name, slices, node_objects, nodes_read)
        for row in counted.rows(ask):
            if nodes is not None and not (row.node in nodes or (row.node == ALL_NODES and nodes) or set(row.nodes) & nodes):
                continue
            if free_only and not row.free:
                continue
            if devices and free_only:
                row.devices = [d for d in row.devices if d.state in ("Free", "Shared")]
            result.pools.append(row)
        result.findings += counted.findings
        ask.allocator.forget_devices()
    result.pools.sort(key=lambda r: (r.node.startswith("<"), r.node, r.driver, r.pool))
    result.findings += _deleting_findings(held, result.pools)
    return result


def _health(pods: Iterable[Pod]) -> dict[str, str]:
    """driver/pool/device -> the health a kubelet last reported for it (Unhealthy wins)."""
    out: dict[str, str] = {}
    for _, _, _, resource_id, health, _ in device_health(pods):
        if health and out.get(resource_id) != "Unhealthy":
            out[resource_id] = health
    return out


def _attribute(device: Device, driver: str, name: str) -> str | None:
    """A device attribute's value as text, by its fully qualified name (the driver's own may be
    unqualified), as a constraint reads it."""
    found = lookup_attribute(device, driver, name)
    if found is None:
        return None
    return str(found[1]).lower() if found[0] == "bool_" else str(found[1])


def _taint_text(taint: TaintView) -> str:
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"


def _need(device: Device, status: str, allocator: Allocator) -> Need:
    """What taking the device charges its pool's shared counters: nothing for a further share of a
    shareable device already in use (``Shared``), which charged them with its first share."""
    need: Need = {}
    if status == "Shared" and device.allow_multiple_allocations and "consumableCapacity" in allocator.features:
        return need
    for use in device.consumes_counters:
        for counter, spec in use.counters.items():
            key = (use.counter_set, counter)
            need[key] = need.get(key, Fraction(0)) + spec.value.as_fraction()
    return need


def _signature(device: Device) -> str:
    """A shape named by what the device consumes, when no attribute names partition types."""
    return ", ".join(f"{use.counter_set}: " + ",".join(f"{c}={spec.value}" for c, spec in sorted(use.counters.items()))
                     for use in device.consumes_counters) or "no counters"


class _Pool:
    """One pool of the cluster: its newest generation, whether it is usable, and where it reaches."""

    def __init__(self, driver: str, name: str, slices: list[ResourceSlice], node_objects: dict[str, Node],
                 nodes_read: bool):
        self.driver, self.name = driver, name
        self.node_objects, self.nodes_read = node_objects, nodes_read
        self.findings: list[Finding] = []
        considered = [rs for rs in slices if not uses_compatibility_groups(rs)]
        self.generation = max((rs.spec.pool.generation for rs in considered), default=0)
        self.current = sorted((rs for rs in considered if rs.spec.pool.generation == self.generation),
                              key=lambda rs: rs.name)
        self.old = [rs for rs in considered if rs.spec.pool.generation != self.generation]
        self.pool: Pool | None = None
        self.state = ""
        wanted = self.current[0].spec.pool.resource_slice_count if self.current else 0
        ref = f"pool/{driver}/{name}"
        if not self.current:  # only slices the scheduler ignores (compatibility groups): no devices
            self.state = "PoolIgnored"
            return
        if len(self.current) != wanted:
            self.state = "PoolIncomplete"
            self.findings.append(Finding(
                code="PoolIncomplete", severity="warning", object=ref,
                message=f"pool {driver}/{name} generation {self.generation} has {len(self.current)} of its "
                        f"{wanted} ResourceSlices: the scheduler allocates none of its devices until the driver "
                        "publishes the rest (a request for all devices fails on the nodes it reaches)"))
        self.pool = whole_pool(driver, name, self.current)  # (an incomplete one only for the class's selectors)
        if not self.state and self.pool.invalid:
            self.state = "PoolInvalid"
            self.findings.append(Finding(code="PoolInvalid", severity="error", object=ref,
                                         message=f"pool {driver}/{name} is invalid ({self.pool.invalid}): the "
                                                 "scheduler allocates none of its devices"))

    def _scope(self, rs: ResourceSlice, device: Device) -> tuple[str, list[str], str | None]:
        """(the row's node, the nodes a shared pool reaches, why the reach is unknown)."""
        spec = rs.spec
        name, all_nodes, selector = spec.node_name, spec.all_nodes, spec.node_selector
        if spec.per_device_node_selection:
            name, all_nodes, selector = device.node_name, device.all_nodes, device.node_selector
        if name:
            return name, [], None
        if all_nodes:
            return ALL_NODES, [], None
        if selector is None:
            return "<no node>", [], None
        try:
            reached = sorted(n.name for n in self.node_objects.values()
                             if reaches(n.name, n.metadata.labels, None, None, selector))
        except NodeSelectorError as exc:
            return "<node selector>", [], f"its node selector does not parse ({exc})"
        if not self.nodes_read:
            return "<node selector>", [], "the Nodes could not be read, so which nodes its node selector reaches is unknown"
        return f"<{len(reached)} node{'s' if len(reached) != 1 else ''}>", reached, None

    def _node_for(self, scope: str, reached: list[str]) -> Node | None:
        """A node the device reaches, for the allocator's per-device checks; None: no node does."""
        if not scope.startswith("<"):
            node = self.node_objects.get(scope)
            if node is None and not self.nodes_read:  # not read is not gone
                node = parse_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": scope}})
            return node
        if scope == ALL_NODES:
            return next(iter(self.node_objects.values()), None) or \
                parse_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "any"}})
        return self.node_objects.get(reached[0]) if reached else None

    def rows(self, ask: _Ask) -> list[PoolRow]:
        rows: dict[str, PoolRow] = {}
        members: dict[str, list] = {}  # row node -> (device, candidate?) of the current generation
        for rs in self.current:
            if rs.spec.shared_counters and not rs.spec.devices:
                continue
            for device in rs.spec.devices:
                scope, reached, unknown = self._scope(rs, device)
                row = rows.get(scope)
                if row is None:
                    row = rows[scope] = PoolRow(node=scope, driver=self.driver, pool=self.name,
                                                generation=self.generation, nodes=reached, state=self.state,
                                                unhealthy=0 if ask.health is not None else None)
                    members[scope] = []
                key = (self.driver, self.name, device.name)
                status, reason = self._device_state(ask, rs, device, scope, reached, unknown, key)
                if status is None:
                    continue  # the class does not accept it
                self._count(row, status, reason, key, ask)
                members[scope].append((rs, device, status))
                if ask.devices:
                    row.devices.append(self._device_row(rs, device, scope, status, reason, key, ask))
        for rs in self.old:
            for device in rs.spec.devices:
                scope, _, _ = self._scope(rs, device)
                if scope in rows:
                    rows[scope].outdated += 1
                    if ask.devices:
                        key = (self.driver, self.name, device.name)
                        rows[scope].devices.append(self._device_row(
                            rs, device, scope, "Outdated", f"generation {rs.spec.pool.generation}, the pool's is "
                            f"{self.generation}: the scheduler ignores this slice", key, ask))
        out = []
        for scope, row in rows.items():
            if not row.total and not row.outdated:
                continue
            self._free(row, members[scope], ask.allocator)
            self._counters(row, ask.allocator)
            self._shapes(row, members[scope], ask)
            self._capacity(row, members[scope], ask.allocator)
            out.append(row)
        return out

    def _device_state(self, ask: _Ask, rs: ResourceSlice, device: Device, scope: str, reached: list[str],
                      unknown: str | None, key: Key) -> tuple[str | None, str]:
        """(state, why) for a new request, the allocator's own answer; (None, "") when the class
        does not accept the device."""
        node = self._node_for(scope, reached)
        probe = node or parse_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": scope}})
        refusal = ask.allocator.device_refusal(ask.spec, ask.klass, self.pool, rs, device, probe)
        if refusal is not None and refusal[0] in ("DeviceClassSelector", "RequestSelector"):
            return None, ""  # the class does not accept it, wherever it is and whatever its pool
        if self.state:
            return self.state, "the pool is incomplete" if self.state == "PoolIncomplete" else \
                f"the pool is invalid ({self.pool.invalid})"
        if unknown:
            return "Unknown", unknown
        if node is None:
            held = ask.held.held(key)
            return ("Allocated" if held else "Unreachable"), ("" if held else
                                                             f"node {scope} does not exist" if not scope.startswith("<")
                                                             else "its node selector reaches no node")
        if refusal is None:
            return ("Shared" if key in ask.held.state.shared else "Free"), ""
        reason, message = refusal
        return _STATES.get(reason, "Unknown"), message

    @staticmethod
    def _count(row: PoolRow, status: str, reason: str, key: Key, ask: _Ask) -> None:
        row.total += 1
        if key in ask.held.admin:
            row.admin += 1
        if ask.held.held(key):
            row.allocated += 1
        if status == "Tainted":
            row.tainted += 1
        elif status in ("CountersUsed", "CapacityUsed", "PoolIncomplete", "PoolInvalid", "Unreachable"):
            row.blocked += 1
        elif status == "Unknown" and row.unknown is None:
            row.unknown = f"device {key[2]}: {reason}"
        if ask.health is not None and ask.health.get("/".join(key)) == "Unhealthy":
            row.unhealthy += 1

    def _device_row(self, rs: ResourceSlice, device: Device, scope: str, status: str, reason: str, key: Key,
                    ask: _Ask) -> DeviceRow:
        attributes = {}
        for name in sorted(device.attributes):
            value = _attribute(device, self.driver, name)
            if value is not None:
                attributes[name] = value
        return DeviceRow(device="/".join(key), node=scope, state=status, reason=reason, attributes=attributes,
                         capacity={k: str(c.value) for k, c in sorted(device.capacity.items())},
                         taints=[_taint_text(t) for t in device.taints] +
                                [f"{_taint_text(t)}({t.source})" for t in ask.allocator.rule_taints.taints.get(key, ())],
                         health=ask.health.get("/".join(key)) if ask.health is not None else None,
                         holders=ask.held.holders.get(key, []))

    def _free(self, row: PoolRow, members: list, allocator: Allocator) -> None:
        """How many a request could take together now: the devices free one at a time, packed into
        the shared counters they consume (a shareable device already in use charges none again)."""
        needs = [_need(device, status, allocator) for _, device, status in members if status in ("Free", "Shared")]
        row.available = len(needs)
        if row.unknown is not None:
            row.free = None
            return
        if not any(needs):
            row.free = len(needs)
            return
        packed = most_at_once(needs, self._left(allocator))
        if packed.exact:
            row.free = packed.best
        else:
            row.free = None
            row.unknown = (f"between {packed.best} and {packed.upper} fit together in the shared counters; the search "
                           "for the exact number stopped at its bound")

    def _left(self, allocator: Allocator) -> dict:
        return {(set_name, counter): value.as_fraction()
                for set_name, counters in allocator.pool_available(self.pool).items()
                for counter, value in counters.items()}

    def _counters(self, row: PoolRow, allocator: Allocator) -> None:
        if self.pool is None or self.state or not self.pool.counter_sets:
            return
        left = allocator.pool_available(self.pool)
        for set_name in sorted(self.pool.counter_sets):
            for counter, total in sorted(self.pool.counter_sets[set_name].items()):
                remaining = left[set_name][counter]
                row.counters.append(CounterUse(counter_set=set_name, counter=counter, total=str(total),
                                               consumed=str(total - remaining), remaining=str(remaining)))
                if remaining.sign() < 0:
                    self.findings.append(Finding(
                        code="CounterOverdrawn", severity="error", object=f"pool/{self.driver}/{self.name}",
                        message=f"shared counter {set_name}/{counter} of pool {self.driver}/{self.name} is overdrawn: "
                                f"{total} published, {total - remaining} allocated. The scheduler refuses every device "
                                "of the pool that consumes counters until it is back in range (the driver shrank it "
                                "under what is allocated)"))

    def _shapes(self, row: PoolRow, members: list, ask: _Ask) -> None:
        """Per partition type (the slice's partitionTypeAttribute, else ``attribute``, else what the
        devices consume): how many devices, and how many more fit together now."""
        groups: dict[tuple[str | None, str], list] = {}
        for rs, device, status in members:
            if not device.consumes_counters:
                continue
            name = rs.spec.partition_type_attribute or ask.partition_attribute
            value = _attribute(device, self.driver, name) if name else None
            shape = (name, value) if value is not None else (None, _signature(device))
            groups.setdefault(shape, []).append((device, status))
        if not groups or self.state:
            return
        left = self._left(ask.allocator)
        for (name, shape), items in sorted(groups.items(), key=lambda g: (g[0][0] or "", g[0][1])):
            fit = ShapeFit(shape=shape, attribute=name, devices=len(items))
            if row.unknown is not None and any(status == "Unknown" for _, status in items):
                fit.unknown = row.unknown
            else:
                packed = most_at_once([_need(d, status, ask.allocator) for d, status in items
                                       if status in ("Free", "Shared")], left)
                if packed.exact:
                    fit.fit = packed.best
                else:
                    fit.unknown = f"between {packed.best} and {packed.upper}"
            row.shapes.append(fit)

    def _capacity(self, row: PoolRow, members: list, allocator: Allocator) -> None:
        """Consumable capacity summed over the row's shareable devices."""
        if "consumableCapacity" not in allocator.features:
            return
        totals: dict[str, Quantity] = {}
        used: dict[str, Quantity] = {}
        for _, device, _ in members:
            if not device.allow_multiple_allocations:
                continue
            consumed = allocator.state.consumed.get((self.driver, self.name, device.name), {})
            if any(not q.is_zero() for q in consumed.values()):
                row.partly_free_shareable += 1
            else:
                row.fully_free_shareable += 1
            for name, cap in device.capacity.items():
                totals[name] = totals[name] + cap.value if name in totals else cap.value
                if name in consumed:
                    used[name] = used[name] + consumed[name] if name in used else consumed[name]
        for name in sorted(totals):
            consumed = used.get(name, Quantity.parse("0"))
            row.capacity.append(CapacityUse(name=name, total=str(totals[name]), consumed=str(consumed),
                                            remaining=str(totals[name] - consumed)))


def _deleting_findings(held: Holdings, rows: list[PoolRow]) -> list[Finding]:
    """A claim being deleted still holds its devices: say so for those the rows count."""
    shown = {(r.driver, r.pool) for r in rows}
    out = []
    for claim, keys in held.deleting:
        devices = ["/".join(key) for key in keys if key[:2] in shown]
        if devices:
            out.append(Finding(code="HeldByDeletedClaim", severity="info", object=f"resourceclaim/{claim}",
                               message=f"claim {claim} is being deleted but still holds {', '.join(devices)}: the "
                                       "scheduler counts them as allocated until the claim's finalizer is removed "
                                       "(its pods must stop and the driver unprepare first)"))
    return out
