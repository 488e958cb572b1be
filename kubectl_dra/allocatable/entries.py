"""Per-claim node-allocatable entries: what the scheduler records in the pod status (KEP-5517).

An entry says, for one ResourceClaim of a pod, which node resources its devices stand for
(``mapping``, counted once per claim) and what host overhead they cost (``overhead``: perPod
once per pod, perContainer once per listed container). The kubelet reads only the recorded
entries; this module also recomputes them from the allocation and the ResourceSlices so the two
can be compared.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Annotated, Literal

from pydantic import Field

from kubectl_dra.document import Finding, part
from kubectl_dra.model.base import Qty
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.pools.slices import slice_device
from kubectl_dra.model.pod import NodeAllocatableClaimStatus, Pod
from kubectl_dra.model.claim import DeviceRequestAllocationResult, ResourceClaim
from kubectl_dra.model.resource import Device
from kubectl_dra.quantity import Quantity

ALLOWED_RESOURCE = re.compile(r"^(cpu|memory|hugepages-.+)$")


@part
class Overhead:
    per_pod: Qty | None = None
    per_container: Qty | None = None


@part
class ClaimEntry:
    """One claim's node-allocatable amounts, in the 1.37 shape (1.36 ``resources`` kept apart).
    Built from already validated objects, so a plain slotted dataclass."""

    name: str  # the ResourceClaim object name
    pod_claim_name: str | None = None
    containers: list[str] = dataclasses.field(default_factory=list)
    mapping: dict[str, Qty] = dataclasses.field(default_factory=dict)
    overhead: dict[str, Overhead] = dataclasses.field(default_factory=dict)
    resources: dict[str, Qty] = dataclasses.field(default_factory=dict)  # 1.36 alpha shape: no kubelet effect
    source: Literal["podStatus", "computed"] = "podStatus"
    _each: Annotated[dict | None, Field(exclude=True)] = dataclasses.field(default=None, repr=False, compare=False)

    def per_container(self) -> dict[str, Quantity]:
        """What each listed container's limit gains, per resource (computed once)."""
        if self._each is None:
            self._each = {r: q for r in self.resource_names() if (q := self.container_total(r)) is not None}
        return self._each

    @property
    def generation(self) -> str:
        return "v1.36" if self.resources and not (self.mapping or self.overhead) else "v1.37"

    def is_empty(self) -> bool:
        return not (self.mapping or self.overhead or self.resources)

    def pod_total(self, resource: str) -> Quantity | None:
        """mapping + perPod + perContainer x |containers| (what the pod cgroup gains)."""
        total = []
        if resource in self.mapping:
            total.append(self.mapping[resource])
        if resource in self.overhead:
            o = self.overhead[resource]
            if o.per_pod is not None:
                total.append(o.per_pod)
            if o.per_container is not None and self.containers:
                total.append(o.per_container * len(self.containers))
        return sum(total[1:], total[0]) if total else None

    def container_total(self, resource: str) -> Quantity | None:
        """mapping + perPod + perContainer (what each listed container's limit gains)."""
        parts = [self.mapping.get(resource)]
        if resource in self.overhead:
            parts += [self.overhead[resource].per_pod, self.overhead[resource].per_container]
        parts = [p for p in parts if p is not None]
        return sum(parts[1:], parts[0]) if parts else None

    def resource_names(self) -> list[str]:
        return sorted({*self.mapping, *self.overhead, *self.resources})


def from_status(status: NodeAllocatableClaimStatus) -> ClaimEntry:
    return ClaimEntry(
        name=status.resource_claim_name,
        containers=list(status.containers),
        mapping={m.name: m.quantity for m in status.mapping},
        overhead={o.name: Overhead(per_pod=o.per_pod, per_container=o.per_container) for o in status.overhead},
        resources=dict(status.resources),
        source="podStatus",
    )


def validate_device(device: Device) -> list[str]:
    """KEP-5517 API validation of one device's node-allocatable declarations."""
    problems = []
    for resource, entry in device.node_allocatable_resources.items():
        where = f"device {device.name}: nodeAllocatableResources[{resource}]"
        if not ALLOWED_RESOURCE.match(resource):
            problems.append(f"{where}: only cpu, memory and hugepages-<size> may be mapped")
        if entry.mapping is None and entry.overhead is None:
            problems.append(f"{where}: needs a mapping or an overhead")
        if entry.mapping is not None:
            m = entry.mapping
            by_key = m.capacity_key is not None or m.capacity_multiplier is not None
            if (m.device_multiplier is not None) == by_key:
                problems.append(f"{where}: mapping needs exactly one of deviceMultiplier or "
                                "capacityKey with capacityMultiplier")
            elif by_key and (m.capacity_key is None or m.capacity_multiplier is None):
                problems.append(f"{where}: capacityKey and capacityMultiplier go together")
            elif m.capacity_key and m.capacity_key not in device.capacity:
                problems.append(f"{where}: capacityKey {m.capacity_key} is not a capacity of the device")
        if entry.overhead is not None:
            values = [v for v in (entry.overhead.per_pod, entry.overhead.per_container) if v is not None]
            if not values:
                problems.append(f"{where}: overhead needs perPod or perContainer")
            elif any(v.sign() < 0 for v in values):
                problems.append(f"{where}: overhead values must not be negative")
    return problems


def _add(target: dict[str, Quantity], resource: str, amount: Quantity | None) -> None:
    if amount is not None:
        target[resource] = target[resource] + amount if resource in target else amount


NODE_ALLOCATABLE_FIELDS = ("nodeAllocatableResources", "nodeAllocatableResourceMappings", "capacity")


def unknown_inputs(claim: ResourceClaim, inventory: Inventory) -> list[str]:
    """Invalid fields the amounts of ``claim`` would be computed from (its allocation results, and
    the node-allocatable declarations and capacities of its devices): while any exists, the
    amounts are unknown rather than computed from what is left."""
    where = [f"{claim.KIND} {claim.key}: {path}" for path in claim.invalid_under("status.allocation")]
    for result in claim.status.allocation.devices.results if claim.status.allocation else []:
        rs, device = slice_device(inventory, result.driver, result.pool, result.device)
        if device is not None:
            bad = [p for p in rs.device_invalid(device)
                   if any(f".{name}" in p for name in NODE_ALLOCATABLE_FIELDS)]
            where += [f"ResourceSlice {rs.name}: {path}" for path in bad]
    return where


def compute_entry(pod: Pod, claim: ResourceClaim, inventory: Inventory,
                  pod_claim_names: list[str]) -> tuple[ClaimEntry | None, list[Finding], list[str]]:
    """What the scheduler would record for ``claim`` in ``pod``'s status, what got in the way, and
    the invalid fields that make it unknown (then no entry and no findings are computed)."""
    findings: list[Finding] = []
    ref = f"resourceclaim/{claim.namespace}/{claim.name}"
    if claim.status.allocation is None:
        return None, findings, []
    unknown = unknown_inputs(claim, inventory)
    if unknown:
        return None, findings, unknown
    mapping: dict[str, Quantity] = {}
    per_pod: dict[str, Quantity] = {}
    per_container: dict[str, Quantity] = {}
    resources: dict[str, Quantity] = {}
    declares = False
    for result in claim.status.allocation.devices.results:
        _, device = slice_device(inventory, result.driver, result.pool, result.device)
        if device is None:
            continue
        declares = declares or device.has_node_allocatable
        for problem in validate_device(device):
            findings.append(Finding(code="InvalidNodeAllocatableMapping", severity="error", object=ref,
                                    message=f"{result.driver}/{result.pool}/{problem}; the API server rejects "
                                            "such a ResourceSlice, so the driver and the cluster disagree"))
        _device_amounts(device, result, mapping, per_pod, per_container, resources, findings, ref)
    if not declares:
        return None, findings, []
    containers = _containers(pod, claim, pod_claim_names)
    overhead = {r: Overhead(per_pod=per_pod.get(r), per_container=per_container.get(r))
                for r in sorted({*per_pod, *per_container})}
    entry = ClaimEntry(name=claim.name, pod_claim_name=pod_claim_names[0] if pod_claim_names else None,
                       containers=containers, mapping=mapping, overhead=overhead, resources=resources,
                       source="computed")
    return entry, findings, []


def _device_amounts(device: Device, result: DeviceRequestAllocationResult, mapping, per_pod, per_container,
                    resources, findings: list[Finding], ref: str) -> None:
    consumed = result.consumed_capacity
    for resource, entry in device.node_allocatable_resources.items():
        m = entry.mapping
        if m is not None:
            if m.device_multiplier is not None and m.capacity_key is None:
                _add(mapping, resource, m.device_multiplier)
            elif m.capacity_key:
                if consumed is None:
                    findings.append(Finding(
                        code="ConsumedCapacityMissing", severity="error", object=ref,
                        message=f"device {result.driver}/{result.pool}/{result.device} maps {resource} from "
                                f"capacity {m.capacity_key}, but the allocation has no consumedCapacity (the "
                                "device does not allow multiple allocations); the scheduler fails such a pod"))
                elif m.capacity_key in consumed:
                    multiplier = m.capacity_multiplier.as_fraction() if m.capacity_multiplier else 1
                    _add(mapping, resource, consumed[m.capacity_key] * multiplier)
        if entry.overhead is not None:
            _add(per_pod, resource, entry.overhead.per_pod)
            _add(per_container, resource, entry.overhead.per_container)
    for resource, old in device.node_allocatable_resource_mappings.items():
        multiplier = old.allocation_multiplier.as_fraction() if old.allocation_multiplier else 1
        if old.capacity_key:
            if consumed and old.capacity_key in consumed:
                _add(resources, resource, consumed[old.capacity_key] * multiplier)
        else:
            _add(resources, resource, old.allocation_multiplier or Quantity.parse("1"))


def _containers(pod: Pod, claim: ResourceClaim, pod_claim_names: list[str]) -> list[str]:
    """Init then regular containers that reference the claim (directly or as extended resources)."""
    names = []
    ext = pod.status.extended_resource_claim_status
    extended = {m.container_name for m in ext.request_mappings} \
        if ext is not None and ext.resource_claim_name == claim.name else set()
    for container in pod.all_containers():
        if container.name in extended or any(c.name in pod_claim_names for c in container.resources.claims):
            names.append(container.name)
    return names


def pod_claim_objects(pod: Pod) -> dict[str, list[str]]:
    """ResourceClaim object name -> the pod claim names that resolve to it."""
    objects: dict[str, list[str]] = {}
    for pod_claim_name, object_name in pod.referenced_claim_names().items():
        if object_name:
            objects.setdefault(object_name, []).append(pod_claim_name)
    return objects


def compare(recorded: ClaimEntry, computed: ClaimEntry) -> list[str]:
    """Human differences between the recorded and recomputed entries (empty when they agree)."""
    diffs = []
    if recorded.generation == "v1.36":
        if recorded.resources != computed.resources:
            diffs.append(f"resources {_fmt(recorded.resources)} recorded, {_fmt(computed.resources)} computed")
    else:
        if recorded.mapping != computed.mapping:
            diffs.append(f"mapping {_fmt(recorded.mapping)} recorded, {_fmt(computed.mapping)} computed")
        if _overhead_key(recorded) != _overhead_key(computed):
            diffs.append(f"overhead {_fmt_overhead(recorded)} recorded, {_fmt_overhead(computed)} computed")
    if sorted(recorded.containers) != sorted(computed.containers):
        diffs.append(f"containers [{', '.join(recorded.containers)}] recorded, "
                     f"[{', '.join(computed.containers)}] reference the claim")
    return diffs


def _fmt(amounts: dict[str, Quantity]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(amounts.items())) + "}"


def _overhead_key(entry: ClaimEntry) -> dict:
    return {k: (v.per_pod, v.per_container) for k, v in entry.overhead.items()}


def _fmt_overhead(entry: ClaimEntry) -> str:
    return "{" + ", ".join(f"{k}: perPod {v.per_pod or 0}, perContainer {v.per_container or 0}"
                           for k, v in sorted(entry.overhead.items())) + "}"
