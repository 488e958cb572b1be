"""``kubectl dra overlays``: the result document (docs/contracts.md §3.5 ``OverlayExplanation``).

Besides the required keys it says what Karpenter's own status cannot: which overlay an overlay
conflicts with, which overlay set each offering's price and each capacity key, which overlays
are shadowed, and what the proposed DRA templates would publish (marked ``proposal``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kubectl_dra.document import Document, Finding, Part

OverlayStatus = Literal["Ready", "Conflict", "RuntimeValidation"]


class OverlayMatch(Part):
    node_pool: str
    instance_type: str


class KarpenterStatus(Part):
    """What the object's own ``Ready`` condition says (Karpenter's verdict, possibly stale)."""

    status: str
    reason: str = ""
    message: str = ""
    observed_generation: int | None = None


class OverlayView(Part):
    name: str
    weight: int | None  # as written; unset sorts as 0
    order: int  # 1 = processed first (weight descending, then name descending)
    status: OverlayStatus
    message: str
    conflicts_with: list[str] = Field(default_factory=list)
    matches: list[OverlayMatch] = Field(default_factory=list)
    sets: list[str] = Field(default_factory=list)  # price, priceAdjustment, capacity, dynamicResources
    shadowed_by: list[str] = Field(default_factory=list)  # won a slot this overlay also targets
    undetected_conflicts_with: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    karpenter_status: KarpenterStatus | None = None


class OfferingView(Part):
    zone: str | None
    capacity_type: str | None
    base_price: float | None  # None: unknown (instance type inferred from the cluster)
    price: float | None
    overlay: str | None  # the overlay that set the price, if any
    available: bool = True
    requirements: dict[str, list[str]] | None = None  # provider keys beyond zone and capacity type


class InstanceTypeEffect(Part):
    """What the overlays would do to one instance type in one NodePool."""

    offerings: list[OfferingView]
    capacity: dict[str, str]
    capacity_overlays: dict[str, str] = Field(default_factory=dict)
    allocatable_memory: str | None = None
    resource_slices: list[dict[str, Any]] = Field(default_factory=list)


class InstanceTypeView(Part):
    node_pool: str
    name: str
    source: Literal["catalog", "inferred"] = "catalog"
    offerings: list[OfferingView]
    capacity: dict[str, str]
    capacity_overlays: dict[str, str] = Field(default_factory=dict)
    replaced_capacity: dict[str, str] = Field(default_factory=dict)  # provider value an overlay replaced
    allocatable_memory: str | None = None  # capacity memory - overhead (when known) - hugepages-*
    allocatable_memory_before_overlays: str | None = None  # only when overlays change it
    resource_slices: list[dict[str, Any]] = Field(default_factory=list)  # proposal: true on each
    if_enabled: InstanceTypeEffect | None = None  # set when the NodeOverlay feature gate is off


class OverlayExplanation(Document):
    kind: str = "OverlayExplanation"
    feature_gate: bool | None = None  # NodeOverlay gate: True/False, None when unknown
    overlays: list[OverlayView] = Field(default_factory=list)
    instance_types: list[InstanceTypeView] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)

    def overlay(self, name: str) -> OverlayView | None:
        return next((o for o in self.overlays if o.name == name), None)

    def instance_type(self, node_pool: str, name: str) -> InstanceTypeView | None:
        return next((t for t in self.instance_types if t.node_pool == node_pool and t.name == name), None)


class LaunchOffering(Part):
    """One offering of an instance type the NodeClaim allows: the price Karpenter counts (after
    overlays: its order, its NodePool cost) beside the provider's own price."""

    instance_type: str
    zone: str | None
    capacity_type: str | None
    base_price: float | None
    price: float | None
    overlay: str | None = None


class LaunchInstanceType(Part):
    name: str
    price: float | None = None  # its cheapest compatible offering after overlays: Karpenter's order
    overlay: str | None = None  # the overlay that set that price, if any


class LaunchRejection(Part):
    name: str
    reason: str


class NodePoolLaunch(Part):
    """One NodePool in Karpenter's order: what the NodeClaim for the pod would ask for, or why the
    NodePool cannot take the pod."""

    name: str
    weight: int | None
    refused: str | None = None  # the NodePool as a whole cannot take the pod (taint, requirements, none fits)
    requests: dict[str, str] = Field(default_factory=dict)  # the NodeClaim's spec.resources.requests
    instance_types: list[LaunchInstanceType] = Field(default_factory=list)  # the NodeClaim's, cheapest first
    rejected: list[LaunchRejection] = Field(default_factory=list)
    provider_pick: list[LaunchOffering] = Field(default_factory=list)  # cheapest by the provider's own price (ties)
    capacity_from_overlays: dict[str, list[str]] = Field(default_factory=dict)  # resource -> overlays that give it


class KarpenterLaunch(Part):
    """What Karpenter would launch for a pod no node can take (``explain pod``)."""

    node_pool: str | None = None  # the NodePool Karpenter uses: the first in its order that can launch
    known: bool = True  # False: what Karpenter does depends on what kubectl-dra cannot read (message says what)
    message: str = ""
    node_pools: list[NodePoolLaunch] = Field(default_factory=list)
    assumptions: list[str] = Field(default_factory=list)
