"""Karpenter views: NodePool, NodeClaim (karpenter.sh/v1) and NodeOverlay (v1alpha1).

``NodeOverlay.spec.dynamicResources`` is the *proposed* DRA extension; it is kept as plain data
because the proposal's shape is still moving.
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterable, TypeVar

from pydantic import Field

from kubectl_dra.model.base import Condition, KubeObject, ResourceList, View, view

KARPENTER_GROUP = "karpenter.sh"
_Weighted = TypeVar("_Weighted", "NodePool", "NodeOverlay")


@view
class NodeSelectorRequirement(View):
    key: str
    operator: str
    values: list[str] = Field(default_factory=list)
    min_values: int | None = None


@view
class NodeClaimTemplateSpec(View):
    requirements: list[NodeSelectorRequirement] = Field(default_factory=list)
    taints: list[dict[str, Any]] = Field(default_factory=list)
    node_class_ref: dict[str, Any] | None = None


@view
class NodeClaimTemplateMetadata(View):
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


@view
class NodeClaimTemplate(View):
    metadata: NodeClaimTemplateMetadata = Field(default_factory=NodeClaimTemplateMetadata)
    spec: NodeClaimTemplateSpec = Field(default_factory=NodeClaimTemplateSpec)


@view
class NodePoolSpec(View):
    template: NodeClaimTemplate = Field(default_factory=NodeClaimTemplate)
    weight: int | None = None
    limits: ResourceList = Field(default_factory=dict)


@view
class NodePool(KubeObject):
    KIND: ClassVar[str] = "NodePool"
    GROUP: ClassVar[str] = KARPENTER_GROUP
    VERSIONS: ClassVar[tuple[str, ...]] = ("v1",)
    PLURAL: ClassVar[str] = "nodepools"
    NAMESPACED: ClassVar[bool] = False

    spec: NodePoolSpec = Field(default_factory=NodePoolSpec)


@view
class NodeClaimStatus(View):
    node_name: str | None = None
    provider_id: str | None = Field(default=None, alias="providerID")
    capacity: ResourceList = Field(default_factory=dict)
    allocatable: ResourceList = Field(default_factory=dict)
    conditions: list[Condition] = Field(default_factory=list)


@view
class NodeClaim(KubeObject):
    KIND: ClassVar[str] = "NodeClaim"
    GROUP: ClassVar[str] = KARPENTER_GROUP
    VERSIONS: ClassVar[tuple[str, ...]] = ("v1",)
    PLURAL: ClassVar[str] = "nodeclaims"
    NAMESPACED: ClassVar[bool] = False

    spec: NodeClaimTemplateSpec = Field(default_factory=NodeClaimTemplateSpec)
    status: NodeClaimStatus = Field(default_factory=NodeClaimStatus)


@view
class NodeOverlaySpec(View):
    requirements: list[NodeSelectorRequirement] | None = None
    price: str | None = None
    price_adjustment: str | None = None
    capacity: ResourceList = Field(default_factory=dict)
    weight: int | None = None
    dynamic_resources: dict[str, Any] | None = None  # proposal: resourceSliceTemplates, attributeBindings


@view
class NodeOverlayStatus(View):
    conditions: list[Condition] = Field(default_factory=list)


@view
class NodeOverlay(KubeObject):
    KIND: ClassVar[str] = "NodeOverlay"
    GROUP: ClassVar[str] = KARPENTER_GROUP
    VERSIONS: ClassVar[tuple[str, ...]] = ("v1alpha1",)
    PLURAL: ClassVar[str] = "nodeoverlays"
    NAMESPACED: ClassVar[bool] = False

    spec: NodeOverlaySpec = Field(default_factory=NodeOverlaySpec)
    status: NodeOverlayStatus = Field(default_factory=NodeOverlayStatus)


def order_by_weight(objects: Iterable[_Weighted]) -> list[_Weighted]:
    """Karpenter's ``OrderByWeight``, the same for NodePools and NodeOverlays: weight descending
    (unset = 0), ties by name descending."""
    by_name = sorted(objects, key=lambda o: o.name, reverse=True)
    return sorted(by_name, key=lambda o: -(o.spec.weight or 0))
