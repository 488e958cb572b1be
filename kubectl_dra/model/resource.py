"""resource.k8s.io views: ResourceSlice, DeviceClass and DeviceTaintRule (the claim views are in
:mod:`kubectl_dra.model.claim`: a claims list builds only those).

v1, v1beta2 and v1beta1 are normalized to the v1 shape: v1beta1 puts device fields under ``basic``;
old capacity values may be bare quantities instead of ``{value: ...}``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from pydantic import Field

from kubectl_dra.model.base import Condition, KubeObject, Qty, View, view
from kubectl_dra.model.claim import RESOURCE_GROUP, RESOURCE_VERSIONS, DeviceSelector


# ---- slices -------------------------------------------------------------------------------

@view
class DeviceAttribute(View):
    int_: int | None = Field(default=None, alias="int")
    bool_: bool | None = Field(default=None, alias="bool")
    string: str | None = None
    version: str | None = None
    # list-type attributes (DRAListTypeAttributes, alpha in 1.36)
    ints: list[int] | None = None
    bools: list[bool] | None = None
    strings: list[str] | None = None
    versions: list[str] | None = None

    @property
    def value(self) -> Any:
        for v in (self.int_, self.bool_, self.string, self.version, self.ints, self.bools, self.strings, self.versions):
            if v is not None:
                return v
        return None


@view
class CapacityRequestPolicyRange(View):
    min: Qty | None = None
    max: Qty | None = None
    step: Qty | None = None


@view
class CapacityRequestPolicy(View):
    """How much of a consumable capacity one request may take (DRAConsumableCapacity): the
    default, and either a range (with a step) or a list of valid values."""

    default: Qty | None = None
    valid_values: list[Qty] = Field(default_factory=list)
    valid_range: CapacityRequestPolicyRange | None = None


@view
class DeviceCapacity(View):
    value: Qty
    request_policy: CapacityRequestPolicy | None = None


@view
class Counter(View):
    value: Qty


@view
class CounterSet(View):
    """A slice's ``sharedCounters`` entry: what the pool's partitions draw from."""

    name: str | None = None  # required by the API server; a set without one is ignored
    counters: dict[str, Counter] = Field(default_factory=dict)


@view
class DeviceCounterConsumption(View):
    """What a device takes from one counter set while allocated."""

    counter_set: str = ""
    counters: dict[str, Counter] = Field(default_factory=dict)
    compatibility_groups: list[str] = Field(default_factory=list)  # DRADeviceCompatibilityGroups (alpha, off)


@view
class DeviceTaint(View):
    """A taint on a device, from its slice or from a DeviceTaintRule."""

    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: datetime | None = None


@view
class NodeAllocatableMapping(View):
    capacity_key: str | None = None
    capacity_multiplier: Qty | None = None
    device_multiplier: Qty | None = None


@view
class NodeAllocatableOverhead(View):
    per_pod: Qty | None = None
    per_container: Qty | None = None


@view
class NodeAllocatableResource(View):
    """1.37 ``Device.nodeAllocatableResources[resource]``."""

    mapping: NodeAllocatableMapping | None = None
    overhead: NodeAllocatableOverhead | None = None


@view
class NodeAllocatableResourceMapping(View):
    """1.36 ``Device.nodeAllocatableResourceMappings[resource]`` (tombstoned in 1.37)."""

    capacity_key: str | None = None
    allocation_multiplier: Qty | None = None


@view
class Device(View):
    name: str
    attributes: dict[str, DeviceAttribute] = Field(default_factory=dict)
    capacity: dict[str, DeviceCapacity] = Field(default_factory=dict)
    allow_multiple_allocations: bool | None = None
    consumes_counters: list[DeviceCounterConsumption] = Field(default_factory=list)
    node_allocatable_resources: dict[str, NodeAllocatableResource] = Field(default_factory=dict)
    node_allocatable_resource_mappings: dict[str, NodeAllocatableResourceMapping] = Field(default_factory=dict)
    taints: list[DeviceTaint] = Field(default_factory=list)
    binding_conditions: list[str] = Field(default_factory=list)
    binding_failure_conditions: list[str] = Field(default_factory=list)
    binds_to_node: bool | None = None
    # with spec.perDeviceNodeSelection, each device says which nodes reach it
    node_name: str | None = None
    node_selector: dict[str, Any] | None = None
    all_nodes: bool | None = None

    @property
    def has_node_allocatable(self) -> bool:
        return bool(self.node_allocatable_resources or self.node_allocatable_resource_mappings)


@view
class ResourcePool(View):
    name: str = ""
    generation: int = 0
    resource_slice_count: int = 1


@view
class ResourceSliceSpec(View):
    driver: str = ""
    pool: ResourcePool = Field(default_factory=ResourcePool)
    node_name: str | None = None
    all_nodes: bool | None = None
    node_selector: dict[str, Any] | None = None
    per_device_node_selection: bool | None = None
    devices: list[Device] = Field(default_factory=list)
    shared_counters: list[CounterSet] = Field(default_factory=list)
    partition_type_attribute: str | None = None  # 1.37: the attribute naming each device's partition type


def _normalize_device(data: Any) -> Any:
    """v1beta1 nests everything under ``basic``; old capacities are bare quantities."""
    if not isinstance(data, dict):
        return data
    if isinstance(data.get("basic"), dict):
        data = {**{k: v for k, v in data.items() if k != "basic"}, **data["basic"]}
    capacity = data.get("capacity")
    if isinstance(capacity, dict) and any(not isinstance(v, dict) for v in capacity.values()):
        data = {**data, "capacity": {k: v if isinstance(v, dict) else {"value": v} for k, v in capacity.items()}}
    return data


@view
class ResourceSlice(KubeObject):
    KIND: ClassVar[str] = "ResourceSlice"
    GROUP: ClassVar[str] = RESOURCE_GROUP
    VERSIONS: ClassVar[tuple[str, ...]] = RESOURCE_VERSIONS
    PLURAL: ClassVar[str] = "resourceslices"
    NAMESPACED: ClassVar[bool] = False

    spec: ResourceSliceSpec = Field(default_factory=ResourceSliceSpec)

    @classmethod
    def normalize(cls, raw: dict) -> dict:
        spec = raw.get("spec")
        if isinstance(spec, dict) and isinstance(spec.get("devices"), list):
            raw = {**raw, "spec": {**spec, "devices": [_normalize_device(d) for d in spec["devices"]]}}
        return raw

    def device_invalid(self, device: "Device") -> list[str]:
        """Invalid fields of one of this slice's devices (what depends on them is unknown)."""
        if not self.invalid_fields:
            return []
        for index, candidate in enumerate(self.spec.devices):
            if candidate is device:
                return self.invalid_under(f"spec.devices[{index}]")
        return []


@view
class DeviceClassSpec(View):
    selectors: list[DeviceSelector] = Field(default_factory=list)
    config: list[dict[str, Any]] = Field(default_factory=list)
    extended_resource_name: str | None = None


@view
class DeviceClass(KubeObject):
    KIND: ClassVar[str] = "DeviceClass"
    GROUP: ClassVar[str] = RESOURCE_GROUP
    VERSIONS: ClassVar[tuple[str, ...]] = RESOURCE_VERSIONS
    PLURAL: ClassVar[str] = "deviceclasses"
    NAMESPACED: ClassVar[bool] = False

    spec: DeviceClassSpec = Field(default_factory=DeviceClassSpec)


# ---- device taint rules -------------------------------------------------------------------

@view
class DeviceTaintSelector(View):
    """Each field set must equal the device's (exact match); ``{}`` selects every device."""
    driver: str | None = None
    pool: str | None = None
    device: str | None = None

    def matches(self, driver: str, pool: str, device: str) -> bool:
        return (self.driver is None or self.driver == driver) and (self.pool is None or self.pool == pool) \
            and (self.device is None or self.device == device)


@view
class DeviceTaintRuleSpec(View):
    device_selector: DeviceTaintSelector | None = None  # absent: selects no device
    taint: DeviceTaint = Field(default_factory=DeviceTaint)


@view
class DeviceTaintRuleStatus(View):
    conditions: list[Condition] = Field(default_factory=list)


@view
class DeviceTaintRule(KubeObject):
    """Admin-side taints on devices (resource.k8s.io/v1 in 1.37; v1beta2 and v1alpha3 off by default)."""

    KIND: ClassVar[str] = "DeviceTaintRule"
    GROUP: ClassVar[str] = RESOURCE_GROUP
    VERSIONS: ClassVar[tuple[str, ...]] = ("v1", "v1beta2", "v1alpha3")
    PLURAL: ClassVar[str] = "devicetaintrules"
    NAMESPACED: ClassVar[bool] = False

    spec: DeviceTaintRuleSpec = Field(default_factory=DeviceTaintRuleSpec)
    status: DeviceTaintRuleStatus = Field(default_factory=DeviceTaintRuleStatus)
