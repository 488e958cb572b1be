"""Resolving ``status.reservedFor`` entries and finding a claim's consumers.

Every entry is looked up by name in the claim's namespace and then compared by UID, as the
resourceclaim controller does: a pod or PodGroup with the same name and another UID is a
replacement, and the entry is stale. Other references (workload objects) by resource and name.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from kubectl_dra.document import part
from kubectl_dra.model.base import KubeObject
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.registry import models
from kubectl_dra.model.claim import ResourceClaim, ResourceClaimConsumerReference, is_reserved_for_pod
from kubectl_dra.model.scheduling import PodGroup

Resolved = Literal["exists", "missing", "uidMismatch", "done", "unknown"]


@part
class ReservationView:
    api_group: str = ""
    resource: str
    name: str
    uid: str
    resolved: Resolved
    pods: list[str] = dataclasses.field(default_factory=list)  # namespace/name of the pods behind the entry
    node: str | None = None  # for a pod entry: where that pod runs
    deleting: bool = False


@part
class ConsumerView:
    pod: str  # namespace/name
    reserved: bool
    node: str | None = None
    phase: str | None = None
    via: str = "resourceClaimName"  # resourceClaimName | template | extendedResource
    # via extendedResource: container/resource -> the claim's request (status.extendedResourceClaimStatus)
    extended: list[str] = dataclasses.field(default_factory=list)


def _model_for(ref: ResourceClaimConsumerReference) -> type[KubeObject] | None:
    return next((m for m in models() if m.PLURAL == ref.resource and m.GROUP == (ref.api_group or "")), None)


def _owned_pods(inventory: Inventory, owner: KubeObject) -> list[Pod]:
    """Pods controlled by ``owner``, directly or through one ReplicaSet (Deployment), in the
    inventory's order (indexes: a list of claims reserved for workloads would walk every pod per claim)."""
    pods = inventory.controlled_by("Pod")
    owners = {owner.uid, *(rs.uid for rs in inventory.controlled_by("ReplicaSet").get(owner.uid, ()))}
    if len(owners) == 1:
        return list(pods.get(owner.uid, ()))
    order = inventory.index("order:Pod", lambda: {id(p): i for i, p in enumerate(inventory.of_kind("Pod"))})
    return sorted((p for uid in owners for p in pods.get(uid, ())), key=lambda p: order[id(p)])


def resolve(ref: ResourceClaimConsumerReference, claim: ResourceClaim, inventory: Inventory) -> ReservationView:
    base = dict(api_group=ref.api_group or "", resource=ref.resource, name=ref.name, uid=ref.uid)
    ns = claim.namespace
    if ref.is_pod:
        if "Pod" not in inventory.read_kinds:
            return ReservationView(**base, resolved="unknown")
        pod = inventory.get(Pod, ns, ref.name)
        if pod is None:
            return ReservationView(**base, resolved="missing")
        if ref.uid and pod.uid != ref.uid:
            return ReservationView(**base, resolved="uidMismatch", pods=[pod.key], node=pod.node_name)
        return ReservationView(**base, resolved="done" if pod.is_done else "exists", pods=[pod.key],
                               node=pod.node_name, deleting=pod.metadata.deletion_timestamp is not None)
    if ref.is_pod_group:
        if "PodGroup" not in inventory.read_kinds:
            return ReservationView(**base, resolved="unknown")
        group = inventory.get(PodGroup, ns, ref.name)
        members = [p.key for p in inventory.pods_by_group().get((ns, ref.name), ())]
        if group is None:
            return ReservationView(**base, resolved="missing", pods=members)
        if ref.uid and group.uid and ref.uid != group.uid:
            return ReservationView(**base, resolved="uidMismatch", pods=members)
        return ReservationView(**base, resolved="exists", pods=members, deleting=group.deleting)
    model = _model_for(ref)
    if model is None or model.KIND not in inventory.read_kinds:
        return ReservationView(**base, resolved="unknown")
    obj = inventory.get(model, ns if model.NAMESPACED else None, ref.name)
    if obj is None:
        return ReservationView(**base, resolved="missing")
    if ref.uid and obj.uid and ref.uid != obj.uid:
        return ReservationView(**base, resolved="uidMismatch")
    return ReservationView(**base, resolved="exists", pods=[p.key for p in _owned_pods(inventory, obj)],
                           deleting=obj.metadata.deletion_timestamp is not None)


def consumers(claim: ResourceClaim, inventory: Inventory) -> list[ConsumerView]:
    views = []
    for pod in inventory.pods_by_claim().get((claim.namespace, claim.name), []):
        via = "resourceClaimName"
        for pc in pod.spec.resource_claims:
            if pod.claim_object_name(pc) == claim.name:
                via = "resourceClaimName" if pc.resource_claim_name else "template"
                break
        else:
            via = "extendedResource"
        ext = pod.status.extended_resource_claim_status
        mappings = [f"{m.container_name}/{m.resource_name}={m.request_name}" for m in ext.request_mappings] \
            if via == "extendedResource" and ext is not None and ext.resource_claim_name == claim.name else []
        views.append(ConsumerView(pod=pod.key, reserved=is_reserved_for_pod(claim, pod), node=pod.node_name,
                                  phase=pod.status.phase or None, via=via, extended=mappings))
    return sorted(views, key=lambda v: v.pod)
