"""Extended resources backed by DRA (KEP-5004, ``DRAExtendedResource``, GA and on in 1.37), as
kube-scheduler v1.37.2 serves them. The rules and their upstream lines are in
docs/kubernetes/extended-resources.md.

A pod that asks for ``example.com/gpu: 1`` without any claim is served through DRA on a node that
does not advertise that resource, when a DeviceClass provides the name (its
``spec.extendedResourceName``, or the implicit ``deviceclass.resource.kubernetes.io/<class>``). The
scheduler then allocates one claim of its own for the pod: in memory while it filters (named
``<extended-resources>``), with one ExactCount request per container that asks, and created in
PreBind with ``generateName: <pod>-extended-resources-``. Each node gets its own variant: only the
resources it does not advertise go through DRA there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Iterable

from kubectl_dra.allocation.document import ExtendedClaimView, ExtendedMappingView, ExtendedRequestView

from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Container, Pod
from kubectl_dra.model.resource import DeviceClass
from kubectl_dra.scheduling.resources import (DEVICE_CLASS_PREFIX, Resource, incoming_requests,
                                              is_extended_resource_name, to_resource)

SPECIAL_NAME = "<extended-resources>"  # specialClaimInMemName: the claim before PreBind creates it
ANNOTATION = "resource.kubernetes.io/extended-resource-claim"  # resourceapi.ExtendedResourceClaimAnnotation
# the scheduler's words (extendeddynamicresources.go filterExtendedResources)
STALE_CLAIM = "cannot schedule extended resource claim"
# patchPodExtendedResourceClaimStatus's error, wrapped by the framework as the PodScheduled message
NO_MAPPINGS = ('running PreBind plugin "DynamicResources": nil or empty request mappings, no update of pod '
               '{namespace}/{name} ExtendedResourceClaimStatus')
CANNOT_FIT = "cannot fit resource"

_EPOCH = datetime(1, 1, 1, tzinfo=timezone.utc)  # Go's zero time: a class without creationTimestamp


def is_dra_extended_resource_name(name: str) -> bool:
    """``IsDRAExtendedResourceName`` (pkg/scheduler/util/utils.go): an extended resource name, or
    one under the DeviceClass prefix."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_PREFIX)


def _created(klass: DeviceClass) -> datetime:
    ts = klass.metadata.creation_timestamp
    if ts is None:
        return _EPOCH
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=timezone.utc)


def class_resolver(classes: Iterable[DeviceClass]) -> dict[str, DeviceClass | None]:
    """The scheduler's ``ExtendedResourceCache`` (dynamic-resource-allocation
    deviceclass/extendedresourcecache): resource name -> the DeviceClass that provides it, ``None``
    when that depends on the order the scheduler saw the classes in.

    Every ``spec.extendedResourceName`` maps to its newest class (equal timestamps: the lowest
    name). Every class also maps ``deviceclass.resource.kubernetes.io/<name>``, except that a class
    losing such a clash may have been refused before its implicit name was added
    (``updateResourceName2class`` returns early): that name is undecided. Assumed: no class that
    won a clash was deleted since the scheduler started (the cache then drops the name, and the
    older class no longer provides it until a restart).
    """
    classes = list(classes)
    winners: dict[str, DeviceClass] = {}
    for klass in classes:
        name = klass.spec.extended_resource_name
        if not name:
            continue
        best = winners.get(name)
        if best is None or _created(klass) > _created(best) or (
                _created(klass) == _created(best) and klass.name < best.name):
            winners[name] = klass
    mapped: dict[str, DeviceClass | None] = dict(winners)
    for klass in classes:
        name = klass.spec.extended_resource_name
        mapped[DEVICE_CLASS_PREFIX + klass.name] = None if name and winners[name] is not klass else klass
    return mapped


def is_extended_claim(claim: ResourceClaim) -> bool:
    """Made by the scheduler for a pod's extended resources (the annotation it sets)."""
    return claim.metadata.annotations.get(ANNOTATION) == "true"


def find_extended_claim(pod: Pod, claims: Iterable[ResourceClaim]) -> ResourceClaim | None:
    """``findExtendedResourceClaim``: the claim annotated as the pod's extended-resource claim and
    controlled by the pod (name and uid)."""
    for claim in claims:
        if not is_extended_claim(claim):
            continue
        for ref in claim.metadata.owner_references:
            if ref.name == pod.name and ref.uid == pod.uid and ref.controller:
                return claim
    return None


# the claim's requests and mappings are the document's own views (kubectl_dra/allocation/document.py)
ExtendedRequest, RequestMapping = ExtendedRequestView, ExtendedMappingView


@dataclass
class ExtendedDemand:
    """``preFilterExtendedResources``: what the pod asks for (``PodRequests``, in ``Value()``) of
    the names a DeviceClass provides; ``existing``: a claim of the pod's from an earlier cycle."""

    pod: Pod
    scalars: Resource  # podScalarResources: every scalar the pod asks for
    resolver: dict[str, DeviceClass | None]
    existing: ResourceClaim | None = None
    undecided: list[str] = field(default_factory=list)  # names whose class depends on history

    def provided(self) -> dict[str, DeviceClass]:
        """Requested (non-zero) names a class provides, with that class."""
        return {name: klass for name, amount in self.scalars.items()
                if amount and is_dra_extended_resource_name(name) and (klass := self.resolver.get(name)) is not None}


def extended_demand(pod: Pod, classes: Iterable[DeviceClass], claims: Iterable[ResourceClaim]) -> ExtendedDemand | None:
    """The pod's demand for extended resources through DRA, or ``None`` when none of its requested
    extended resources is provided by a DeviceClass (then the scheduler makes no claim)."""
    resolver = class_resolver(classes)
    total = incoming_requests(pod).total
    scalars = {name: amount for name, amount in total.items() if name not in ("cpu", "memory", "ephemeral-storage",
                                                                             "pods")}
    demand = ExtendedDemand(pod=pod, scalars=scalars, resolver=resolver)
    demand.undecided = sorted(name for name, amount in scalars.items()
                              if amount and name in resolver and resolver[name] is None)
    if not demand.provided() and not demand.undecided:
        return None
    demand.existing = find_extended_claim(pod, claims)
    return demand


def pod_demand(pod: Pod, inventory: Inventory) -> ExtendedDemand | None:
    """:func:`extended_demand` over the inventory, computed once for the pod however many steps ask
    (the filters, the bind check, the allocation); the earlier claim is looked for among the
    claims the pod controls."""
    return inventory.index(f"extended:{pod.namespace}/{pod.name}/{pod.uid}", lambda: extended_demand(
        pod, inventory.all(DeviceClass), inventory.controlled_by("ResourceClaim").get(pod.uid, [])))


@dataclass
class NodeDemand:
    """``filterExtendedResources`` on one node: ``refusal`` (the scheduler's reason), or the
    requests and mappings of the node's claim (none: nothing goes through DRA here)."""

    refusal: str | None = None
    refused_resource: str | None = None
    via_dra: dict[str, int] = field(default_factory=dict)
    via_node: list[str] = field(default_factory=list)  # names the node advertises (device plugin)
    requests: list[ExtendedRequest] = field(default_factory=list)
    mappings: list[RequestMapping] = field(default_factory=list)


def on_node(demand: ExtendedDemand, node_allocatable: Resource) -> NodeDemand:
    """What the scheduler's claim asks for on a node with this allocatable (``NodeInfo``'s
    scalar resources, ``Value()``; a name the node lists is present even at 0)."""
    out = NodeDemand()
    if demand.existing is not None and demand.existing.spec.devices.requests:
        out.refusal = STALE_CLAIM
        return out
    for name in sorted(demand.scalars):
        amount = demand.scalars[name]
        if not is_dra_extended_resource_name(name) or amount == 0:
            continue
        klass = demand.resolver.get(name)
        allocatable = node_allocatable.get(name, 0)
        if klass is not None and allocatable == 0:
            out.via_dra[name] = amount
        elif name not in node_allocatable:
            out.refusal, out.refused_resource = CANNOT_FIT, name
            return out
        elif klass is not None:
            out.via_node.append(name)
    out.requests, out.mappings = requests_and_mappings(demand.pod, out.via_dra, demand.resolver)
    return out


def _as_int64(container: Container, name: str) -> int:
    """``AsInt64`` of the container's request: 0 when absent or not a whole number."""
    q = container.resources.requests.get(name)
    if q is None:
        return 0
    fraction = q.as_fraction()
    return int(fraction) if fraction.denominator == 1 else 0


def _container_request(index: int, container: Container, name: str, class_name: str,
                       reusable: list[ExtendedRequest | None]) -> tuple[ExtendedRequest | None, list[RequestMapping]]:
    """``createResourceRequestAndMappings``: the container's request (none when the requests it may
    reuse cover it) and its mappings; named ``container-<index>-request-<index of the name among
    the container's sorted request names>``."""
    wanted = _as_int64(container, name)
    if wanted == 0:
        return None, []
    mappings, covered = [], 0
    for request in reusable:
        if request is None:
            continue
        covered += request.count
        mappings.append(RequestMapping(container_name=container.name, resource_name=name, request_name=request.name))
        if covered >= wanted:
            return None, mappings
    ridx = sorted(container.resources.requests).index(name)
    request = ExtendedRequest(name=f"container-{index}-request-{ridx}", device_class_name=class_name,
                              count=wanted - covered)
    mappings.append(RequestMapping(container_name=container.name, resource_name=name, request_name=request.name))
    return request, mappings


def requests_and_mappings(pod: Pod, via_dra: dict[str, int], resolver: dict[str, DeviceClass | None]
                          ) -> tuple[list[ExtendedRequest], list[RequestMapping]]:
    """``createRequestsAndMappings``: per resource (sorted), one request per long-lived container
    (regular containers and sidecars); the init containers that run to completion reuse the
    requests of the long-lived containers listed after them, and share one request, the largest
    of theirs. Requests come sorted by name; mappings long-lived first."""
    containers = [*pod.spec.init_containers, *pod.spec.containers]
    n_init = len(pod.spec.init_containers)
    long_lived = [i for i, c in enumerate(containers) if i >= n_init or c.restart_policy == "Always"]
    short_lived = [i for i in range(n_init) if containers[i].restart_policy != "Always"]
    requests: list[ExtendedRequest] = []
    mappings: list[RequestMapping] = []
    for name in sorted(via_dra):
        klass = resolver.get(name)
        if klass is None:
            continue
        long_requests: list[ExtendedRequest | None] = [None] * len(containers)
        long_mappings: list[RequestMapping] = []
        for i in long_lived:
            long_requests[i], made = _container_request(i, containers[i], name, klass.name, [])
            long_mappings += made
        largest: ExtendedRequest | None = None
        short_names: set[str] = set()
        short_mappings: list[RequestMapping] = []
        for i in short_lived:
            request, made = _container_request(i, containers[i], name, klass.name, long_requests[i:])
            if request is not None:
                short_names.add(request.name)
                if largest is None or largest.count < request.count:
                    largest = request
            short_mappings += made
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest.name)
            short_mappings = [RequestMapping(container_name=m.container_name, resource_name=m.resource_name,
                                             request_name=largest.name)
                              if m.request_name in short_names else m for m in short_mappings]
        if largest is not None:
            requests.append(largest)
        requests += [r for r in long_requests if r is not None]
        mappings += long_mappings + short_mappings
    requests.sort(key=lambda r: r.name)
    return requests, mappings


def node_claim(pod: Pod, requests: list[ExtendedRequest]) -> ResourceClaim:
    """The scheduler's in-memory claim for one node's requests (what PreBind creates)."""
    return ResourceClaim.model_validate({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": SPECIAL_NAME, "namespace": pod.namespace, "uid": f"extended:{pod.uid}",
                     "generateName": f"{pod.name}-extended-resources-", "annotations": {ANNOTATION: "true"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid,
                                          "controller": True}]},
        "spec": {"devices": {"requests": [
            {"name": r.name, "exactly": {"deviceClassName": r.device_class_name, "allocationMode": "ExactCount",
                                         "count": r.count}} for r in requests]}}})


def node_scalars(node: Node) -> Resource:
    """The node's allocatable as the scheduler's ``NodeInfo`` holds it (scalars in ``Value()``)."""
    return to_resource(node.status.allocatable)


def claims_on(demand: ExtendedDemand) -> Callable[[Node], list[ResourceClaim] | str | None]:
    """For the allocation explanation: the node's variant of the claim (``None``: the node serves
    every resource from its allocatable), or the scheduler's reason the node is refused first."""
    def on(node: Node) -> list[ResourceClaim] | str | None:
        wanted = on_node(demand, node_scalars(node))
        if wanted.refusal:
            return f"{wanted.refusal}" + (f" {wanted.refused_resource}: no DeviceClass provides it and the node does "
                                          "not list it" if wanted.refused_resource else
                                          f": claim {demand.existing.name} from an earlier attempt is deleted first")
        return [node_claim(demand.pod, wanted.requests)] if wanted.requests else None
    return on


def claim_view(demand: ExtendedDemand, nodes: Iterable[Node]) -> ExtendedClaimView:
    """The claim on a node that advertises none of the resources, and the nodes that advertise one."""
    provided = demand.provided()
    requests, mappings = requests_and_mappings(demand.pod, {n: demand.scalars[n] for n in provided}, demand.resolver)
    advertise = sorted(n.name for n in nodes if any(node_scalars(n).get(name, 0) > 0 for name in provided))
    return ExtendedClaimView(
        resources={n: demand.scalars[n] for n in sorted(provided)}, classes={n: k.name for n, k in sorted(provided.items())},
        requests=requests, mappings=mappings,
        device_plugin_nodes=advertise, existing_claim=demand.existing.name if demand.existing is not None else None)


def bind_errors(pod: Pod, demand: ExtendedDemand | None, nodes: Iterable[Node]) -> dict[str, str]:
    """Nodes the filters let through where PreBind fails: the pod has claims of its own, so the
    scheduler's claim is allocated (empty) and created there although the node serves every
    extended resource from its allocatable; then it has no mapping to write on the pod, and
    ``patchPodExtendedResourceClaimStatus`` fails. Seen on the real v1.37.2 scheduler
    (tests/cluster/test_extended_oracle.py, ``claimdp``): the pod is retried and never binds there."""
    if not pod.spec.resource_claims or demand is None or demand.undecided or demand.existing is not None:
        return {}
    out = {}
    for node in nodes:
        wanted = on_node(demand, node_scalars(node))
        if wanted.refusal is None and not wanted.via_dra:
            out[node.name] = NO_MAPPINGS.format(namespace=pod.namespace, name=pod.name)
    return out
