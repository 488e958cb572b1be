"""resource.k8s.io claim views: ResourceClaim and ResourceClaimTemplate (slices, classes and taint
rules are in :mod:`kubectl_dra.model.resource`: a claims list builds only the views it reads).

v1, v1beta2 and v1beta1 are normalized to the v1 shape: v1beta1 puts request fields directly on
the request (v1 nests them under ``exactly``).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import AfterValidator, Field

from kubectl_dra.model.base import Condition, KubeObject, ResourceList, View, view

if TYPE_CHECKING:
    from kubectl_dra.model.pod import Pod

RESOURCE_GROUP = "resource.k8s.io"
RESOURCE_VERSIONS = ("v1", "v1beta2", "v1beta1")
RESERVED_FOR_MAX = 256
"""ResourceClaimReservedForMaxSize since Kubernetes 1.33."""

_EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity")


# ---- claims -------------------------------------------------------------------------------

@view
class CELDeviceSelector(View):
    expression: str | None = None  # required by the API server; absent, the allocator's own error says so


@view
class DeviceSelector(View):
    """A device class's or a request's selector; only ``cel`` exists (an empty one is an unsupported
    selector type, which the allocator reports)."""

    cel: CELDeviceSelector | None = None


@view
class DeviceToleration(View):
    """A request's toleration of device taints (copied into the allocation result when allocated)."""

    key: str = ""
    operator: str = ""  # empty: Equal
    value: str = ""
    effect: str = ""  # empty: every effect
    toleration_seconds: int | None = None


@view
class DeviceConstraint(View):
    """``requests`` empty: every request of the claim; neither attribute set: an unsupported
    constraint type, which the allocator reports."""

    requests: list[str] = Field(default_factory=list)
    match_attribute: str | None = None
    distinct_attribute: str | None = None


@view
class CapacityRequirements(View):
    requests: ResourceList = Field(default_factory=dict)


@view
class ExactDeviceRequest(View):
    device_class_name: str = ""
    selectors: list[DeviceSelector] = Field(default_factory=list)
    allocation_mode: str = "ExactCount"
    count: int | None = None
    admin_access: bool | None = None
    capacity: CapacityRequirements | None = None
    tolerations: list[DeviceToleration] = Field(default_factory=list)


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
    constraints: list[DeviceConstraint] = Field(default_factory=list)
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
    tolerations: list[DeviceToleration] = Field(default_factory=list)  # the request's, copied at allocation

    @property
    def device_id(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.device)


@view
class DeviceAllocationResult(View):
    results: list[DeviceRequestAllocationResult] = Field(default_factory=list)
    config: list[dict[str, Any]] = Field(default_factory=list)


def _node_selector_shape(value: dict[str, Any]) -> dict[str, Any]:
    """The shape the API server's schema guarantees (terms, requirement lists, string values): a
    selector of another shape is an invalid field, named, and the claim's node unknown."""
    terms = value.get("nodeSelectorTerms")
    if terms is not None and not isinstance(terms, list):
        raise ValueError("nodeSelectorTerms: must be a list")
    for t, term in enumerate(terms or []):
        if not isinstance(term, dict):
            raise ValueError(f"nodeSelectorTerms[{t}]: must be an object")
        for name in ("matchExpressions", "matchFields"):
            requirements = term.get(name)
            if requirements is not None and not isinstance(requirements, list):
                raise ValueError(f"nodeSelectorTerms[{t}].{name}: must be a list")
            for r, requirement in enumerate(requirements or []):
                values = requirement.get("values") if isinstance(requirement, dict) else None
                if not isinstance(requirement, dict) or not isinstance(requirement.get("key", ""), str) \
                        or not isinstance(requirement.get("operator", ""), str) \
                        or not isinstance(values or [], list) or not all(isinstance(v, str) for v in values or []):
                    raise ValueError(f"nodeSelectorTerms[{t}].{name}[{r}]: must be an object with a string key "
                                     "and operator and a list of string values")
    return value


@view
class AllocationResult(View):
    devices: DeviceAllocationResult = Field(default_factory=DeviceAllocationResult)
    node_selector: Annotated[dict[str, Any], AfterValidator(_node_selector_shape)] | None = None
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


def is_reserved_for_pod(claim: ResourceClaim, pod: Pod) -> bool:
    """The kubelet's check (``resourceclaim.IsReservedForPod``): the pod's UID is listed, or its
    PodGroup is (by name). In model, not claims/: taints/ asks it too, and claims/ imports taints/."""
    group = pod.pod_group_name
    return any(ref.uid == pod.uid or (group and ref.is_pod_group and ref.name == group)
               for ref in claim.status.reserved_for)
