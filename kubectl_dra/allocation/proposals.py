"""Would Karpenter launch a node that fits: a pod's claims allocated on each NodePool x instance type,
with the ResourceSlices its NodeOverlays predict (a proposal, not a published slice). Asked only when
no existing node can take the claims (``allocation/explain.py`` ``wants_proposals``): the overlay
evaluation it needs loads only then."""

from __future__ import annotations

from kubectl_dra.allocation.allocator import AllocatedState, Allocator
from kubectl_dra.allocation.bound import SearchBound
from kubectl_dra.allocation.document import ProposalView
from kubectl_dra.allocation.explain import node_allocation, slice_index
from kubectl_dra.allocation.gather import gather
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.karpenter import NodeOverlay, NodePool
from kubectl_dra.model.node import Node
from kubectl_dra.model.resource import DeviceClass, ResourceSlice
from kubectl_dra.overlays.explain import evaluate


def karpenter_proposals(claims: list[ResourceClaim], inventory: Inventory, karpenter: Inventory,
                        instance_types) -> list:
    """``claims`` on every NodePool x instance type that ``karpenter`` (its NodeOverlays and
    NodePools) predicts slices for; none without NodePools or NodeOverlays (nothing is predicted)."""
    if not karpenter.all(NodePool) or not karpenter.all(NodeOverlay):
        return []
    views = evaluate(karpenter.all(NodeOverlay), karpenter.all(NodePool), instance_types).instance_types
    return explain_proposals(claims, inventory, views)


def explain_proposals(claims: list[ResourceClaim], inventory: Inventory, instance_types) -> list[ProposalView]:
    """Allocate ``claims`` on each predicted node: ``instance_types`` are the overlay evaluation's
    views (``nodePool``, ``name``, ``resourceSlices``). A fresh node holds no allocations; every
    predicted slice reaches it (node-local templates by construction, selector-based ones are
    written for such nodes)."""
    classes = {c.name: c for c in inventory.all(DeviceClass)}
    bound = SearchBound()  # one total for every proposal
    out = []
    for view in instance_types:
        if not view.resource_slices:
            continue
        name = f"proposal-{view.node_pool}-{view.name}"
        node = Node.model_validate({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
        slices = []
        for index, predicted in enumerate(view.resource_slices):
            spec = {k: v for k, v in predicted.items() if k in ("driver", "pool", "devices", "sharedCounters")}
            spec["pool"] = {**(spec.get("pool") or {}), "name": (spec.get("pool") or {}).get("name") or name,
                            "generation": 0}
            spec["nodeName"] = name
            # from_raw: a template value that does not validate is dropped and named, and the
            # allocator cannot tell on that device (instead of the whole proposal failing)
            slices.append(ResourceSlice.from_raw({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                                  "metadata": {"name": f"{name}-{index}"}, "spec": spec}))
        _, _, by_pool = slice_index(slices)
        outcome = Allocator(claims, classes, AllocatedState(), bound=bound).allocate(node, gather(node, slices, by_pool))
        view_out = node_allocation(outcome)
        out.append(ProposalView(node_pool=view.node_pool, instance_type=view.name, feasible=outcome.feasible,
                                results=view_out.results, message=view_out.message))
    return out
