"""resource.k8s.io views: ResourceClaim, ResourceClaimTemplate, ResourceSlice, DeviceClass.

v1, v1beta2 and v1beta1 are normalized to the v1 shape: v1beta1 puts request fields directly on
the request (v1 nests them under ``exactly``) and device fields under ``basic``; old capacity
values may be bare quantities instead of ``{value: ...}``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from pydantic import Field

from kubectl_dra.model.base import Condition, KubeObject, Qty, ResourceList, View, view

RESOURCE_GROUP = "resource.k8s.io"
RESOURCE_VERSIONS = ("v1", "v1beta2", "v1beta1")
RESERVED_FOR_MAX = 256
"""ResourceClaimReservedForMaxSize since Kubernetes 1.33."""

_EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity")


# ---- claims -------------------------------------------------------------------------------

@view
class CapacityRequirements(View):
    requests: ResourceList = Field(default_factory=dict)


@view
class ExactDeviceRequest(View):
    device_class_name: str = ""
    selectors: list[dict[str, Any]] = Field(default_factory=list)
    allocation_mode: str = "ExactCount"
    count: int | None = None
    admin_access: bool | None = None
    capacity: CapacityRequirements | None = None
    tolerations: list[dict[str, Any]] = Field(default_factory=list)


@view
class DeviceSubRequest(ExactDeviceRequest):
    name: str


@view
class DeviceRequest(View):
    name: str
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] = Field(default_factory=list)


@view
class DeviceClaim(View):
    requests: list[DeviceRequest] = Field(default_factory=list)
    constraints: list[dict[str, Any]] = Field(default_factory=list)
    config: list[dict[str, Any]] = Field(default_factory=list)


@view
class ResourceClaimSpec(View):
    devices: DeviceClaim = Field(default_factory=DeviceClaim)


@view
class DeviceRequestAllocationResult(View):
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    share_id: str | None = Field(default=None, alias="shareID")
    consumed_capacity: ResourceList | None = None  # None ("nil map") differs from {} for the scheduler
    tolerations: list[dict[str, Any]] = Field(default_factory=list)  # the request's, copied at allocation

    @property
    def device_id(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.device)


@view
class DeviceAllocationResult(View):
    results: list[DeviceRequestAllocationResult] = Field(default_factory=list)
    config: list[dict[str, Any]] = Field(default_factory=list)


@view
class AllocationResult(View):
    devices: DeviceAllocationResult = Field(default_factory=DeviceAllocationResult)
    node_selector: dict[str, Any] | None = None
    allocation_timestamp: datetime | None = None

    def node_name(self) -> str | None:
        """The node of a node-local allocation (``matchFields metadata.name In [node]``)."""
        for term in (self.node_selector or {}).get("nodeSelectorTerms") or []:
            for field in term.get("matchFields") or []:
                values = field.get("values") or []
                if field.get("key") == "metadata.name" and field.get("operator") == "In" and len(values) == 1:
                    return values[0]
        return None


@view
class ResourceClaimConsumerReference(View):
    api_group: str = ""
    resource: str = ""
    name: str = ""
    uid: str = ""

    @property
    def is_pod(self) -> bool:
        return self.api_group in ("", None) and self.resource == "pods"

    @property
    def is_pod_group(self) -> bool:
        return self.api_group == "scheduling.k8s.io" and self.resource == "podgroups"


@view
class NetworkDeviceData(View):
    interface_name: str | None = None
    ips: list[str] = Field(default_factory=list)
    hardware_address: str | None = None


@view
class AllocatedDeviceStatus(View):
    driver: str
    pool: str
    device: str
    share_id: str | None = Field(default=None, alias="shareID")
    conditions: list[Condition] = Field(default_factory=list)
    data: Any = None
    network_data: NetworkDeviceData | None = None


@view
class ResourceClaimStatus(View):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] = Field(default_factory=list)
    devices: list[AllocatedDeviceStatus] = Field(default_factory=list)


def _normalize_request(request: dict) -> dict:
    """v1beta1 -> v1: move the exact-request fields of a flat request under ``exactly``."""
    if "exactly" in request:
        return request
    moved = {k: request[k] for k in _EXACT_FIELDS if k in request}
    if not moved:
        return request
    rest = {k: v for k, v in request.items() if k not in _EXACT_FIELDS}
    rest["exactly"] = moved
    return rest


def _normalize_claim_spec(spec: dict | None) -> dict | None:
    if not isinstance(spec, dict):
        return spec
    devices = spec.get("devices")
    if isinstance(devices, dict) and isinstance(devices.get("requests"), list):
        spec = {**spec, "devices": {**devices, "requests": [
            _normalize_request(r) if isinstance(r, dict) else r for r in devices["requests"]
        ]}}
    return spec


@view
class ResourceClaim(KubeObject):
    KIND: ClassVar[str] = "ResourceClaim"
    GROUP: ClassVar[str] = RESOURCE_GROUP
    VERSIONS: ClassVar[tuple[str, ...]] = RESOURCE_VERSIONS
    PLURAL: ClassVar[str] = "resourceclaims"

    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = Field(default_factory=ResourceClaimStatus)

    @classmethod
    def normalize(cls, raw: dict) -> dict:
        if isinstance(raw.get("spec"), dict):
            raw = {**raw, "spec": _normalize_claim_spec(raw["spec"])}
        return raw

    @property
    def allocated(self) -> bool:
        return self.status.allocation is not None

    @property
    def deleted(self) -> bool:
        return self.metadata.deletion_timestamp is not None

    def state(self) -> list[str]:
        """The STATE column of ``kubectl get resourceclaim``: deleted, pending|allocated, reserved."""
        states = []
        if self.deleted:
            states.append("deleted")
        if self.status.allocation is None:
            if not self.deleted:
                states.append("pending")
        else:
            states.append("allocated")
        if self.status.reserved_for:
            states.append("reserved")
        return states

    @property
    def node_name(self) -> str | None:
        return self.status.allocation.node_name() if self.status.allocation else None


@view
class ResourceClaimTemplateSpec(View):
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)


@view
class ResourceClaimTemplate(KubeObject):
    KIND: ClassVar[str] = "ResourceClaimTemplate"
    GROUP: ClassVar[str] = RESOURCE_GROUP
    VERSIONS: ClassVar[tuple[str, ...]] = RESOURCE_VERSIONS
    PLURAL: ClassVar[str] = "resourceclaimtemplates"

    spec: ResourceClaimTemplateSpec = Field(default_factory=ResourceClaimTemplateSpec)

    @classmethod
    def normalize(cls, raw: dict) -> dict:
        spec = raw.get("spec")
        if isinstance(spec, dict) and isinstance(spec.get("spec"), dict):
            raw = {**raw, "spec": {**spec, "spec": _normalize_claim_spec(spec["spec"])}}
        return raw


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
class DeviceCapacity(View):
    value: Qty
    request_policy: dict[str, Any] | None = None


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
    consumes_counters: list[dict[str, Any]] = Field(default_factory=list)
    node_allocatable_resources: dict[str, NodeAllocatableResource] = Field(default_factory=dict)
    node_allocatable_resource_mappings: dict[str, NodeAllocatableResourceMapping] = Field(default_factory=dict)
    taints: list[dict[str, Any]] = Field(default_factory=list)
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
    shared_counters: list[dict[str, Any]] = Field(default_factory=list)


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
    selectors: list[dict[str, Any]] = Field(default_factory=list)
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
class DeviceTaint(View):
    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: datetime | None = None


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
