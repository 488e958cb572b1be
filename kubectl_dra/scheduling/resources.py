"""What a pod counts for on a node, in the scheduler's units (``framework.Resource``).

Two different sums, as kube-scheduler v1.37.2 makes them:

* :func:`scheduler_requests` is ``PodInfo.CalculateResource`` for a pod in the cache (what
  ``NodeInfo.Requested`` adds up): component-helpers ``PodRequests`` with
  ``UseStatusResources`` (InPlacePodVerticalScaling, GA), pod-level resources and their in-place
  resize (both on by default), overhead, and the KEP-5517 amounts recorded in
  ``status.nodeAllocatableResourceClaimStatuses``.
* :func:`incoming_requests` is NodeResourcesFit's ``computePodResourceRequest`` for the pod being
  scheduled: the spec only (its PreFilter passes no DRA option, and an unbound pod has no
  status resources), pod-level resources, overhead; with the overhead part kept apart for the
  reader.

Units: cpu in millicores (``MilliValue``), everything else ``Value()`` (rounded up), the pod
count as ``pods`` (``NewResource``). Names the scheduler's ``Resource`` has no place for (not
cpu, memory, ephemeral-storage, pods, nor a scalar resource) are dropped, as it drops them.

This module imports nothing from the framework (which imports it), so there is no import circle.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Iterable, Mapping

from kubectl_dra.allocatable.entries import from_status
from kubectl_dra.allocatable.requests import add_into, aggregate, is_pod_level_resource, max_into
from kubectl_dra.model.base import is_shared_quantity
from kubectl_dra.model.pod import Container, ContainerStatus, NodeAllocatableClaimStatus, Pod
from kubectl_dra.quantity import Format, Quantity

Resource = dict[str, int]  # framework.Resource: name -> amount (cpu in millicores)
Resources = dict[str, Quantity]  # a v1.ResourceList

CPU, MEMORY, EPHEMERAL_STORAGE, PODS = "cpu", "memory", "ephemeral-storage", "pods"
HUGEPAGES_PREFIX = "hugepages-"
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"  # v1.ResourceDefaultNamespacePrefix
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"  # resourceapi.ResourceDeviceClassPrefix
RESIZE_PENDING, INFEASIBLE = "PodResizePending", "Infeasible"  # v1.PodResizePending, v1.PodReasonInfeasible
BYTES = (MEMORY, EPHEMERAL_STORAGE, "storage")

_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]", re.ASCII)
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", re.ASCII)


# -- resource names (pkg/apis/core/v1/helper/helpers.go, pkg/scheduler/util/utils.go) ---------------

def is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def is_native_resource(name: str) -> bool:
    """``IsNativeResource``: unprefixed, or in the ``*kubernetes.io/`` namespace."""
    return "/" not in name or DEFAULT_NAMESPACE_PREFIX in name


def _is_qualified_name(value: str) -> bool:
    """apimachinery ``IsQualifiedName``."""
    parts = value.split("/")
    if len(parts) > 2:
        return False
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            return False
    name = parts[-1]
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME.fullmatch(name))


def is_extended_resource_name(name: str) -> bool:
    """``IsExtendedResourceName``: outside ``kubernetes.io``, not ``requests.*``, and qualified as
    ``requests.<name>`` (what ResourceQuota would call it). Only these can be ignored by the args."""
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return _is_qualified_name("requests." + name)


def is_scalar_resource_name(name: str) -> bool:
    """``IsScalarResourceName``: what ``framework.Resource`` keeps in ``ScalarResources``."""
    return is_extended_resource_name(name) or is_hugepages(name) or DEFAULT_NAMESPACE_PREFIX in name \
        or name.startswith(ATTACHABLE_VOLUMES_PREFIX)


def to_resource(resources: Mapping[str, Quantity]) -> Resource:
    """``NewResource``: cpu as ``MilliValue``, memory, ephemeral-storage, pods and scalar resources
    as ``Value()``; any other name is dropped (``Resource.Add`` has no place for it)."""
    out: Resource = {}
    for name, q in resources.items():
        if name == CPU:
            out[name] = q.milli_value()
        elif name in (MEMORY, EPHEMERAL_STORAGE, PODS) or is_scalar_resource_name(name):
            out[name] = q.value()
    return out


def _requested(resources: Mapping[str, Quantity]) -> Resource:
    """What a pod's request list counts for: ``NewResource`` without ``pods`` (``NodeInfo.update``
    and ``SetMaxResource`` have no pod-count term for a pod; a container may list ``pods: 0``)."""
    out = to_resource(resources)
    out.pop(PODS, None)
    return out


_SHARED: dict[tuple, Resource] = {}  # one container's request list -> what it counts for (see below)


def _requested_shared(resources: Mapping[str, Quantity]) -> Resource:
    """``_requested`` of a request list made of quantities the model shares (kubectl_dra.model.base
    keeps one object per text for as long as the process runs, so their ids are stable): the pods
    of one Deployment count the same, computed once. The result is shared: read it, never change it."""
    key = tuple((name, id(q)) for name, q in resources.items())
    found = _SHARED.get(key)
    if found is None:
        found = _requested(resources)

        if len(_SHARED) < 4096 and all(is_shared_quantity(q) for q in resources.values()):
            _SHARED[key] = found
    return found


def format_amount(resource: str, amount: int) -> str:
    """An amount in the scheduler's unit as a person reads it, exactly: cpu as millicores or cores
    (``1500m``, ``2``); byte resources with a binary suffix where one is exact (``3Gi``), else a
    decimal one where exact (``1500M``), else bytes; counts as plain integers."""
    if resource == CPU:
        return str(Quantity.from_milli(amount))
    if resource in BYTES or is_hugepages(resource):
        if amount and amount % 1024 == 0:
            return str(Quantity.from_int(amount, Format.BINARY_SI))
        return str(Quantity.from_int(amount, Format.DECIMAL_SI))
    return str(amount)


# -- component-helpers resource/helpers.go at v0.37.2 -----------------------------------------------

def resize_infeasible(pod: Pod) -> bool:
    """``IsPodResizeInfeasible``: the first PodResizePending condition's reason is Infeasible."""
    for condition in pod.status.conditions:
        if condition.type == RESIZE_PENDING:
            return condition.reason == INFEASIBLE
    return False


def _status_lookup(pod: Pod) -> dict[str, ContainerStatus]:
    """``findContainerStatus``: the first status of that name, regular containers' first."""
    found: dict[str, ContainerStatus] = {}
    for status in (*pod.status.container_statuses, *pod.status.init_container_statuses):
        found.setdefault(status.name, status)
    return found


def _spec(container: Container, _status: ContainerStatus | None, _infeasible: bool) -> Mapping[str, Quantity] | None:
    return container.resources.requests


def _allocated(container: Container, status: ContainerStatus | None, infeasible: bool) -> Mapping[str, Quantity] | None:
    """``containerAllocatedRequests``."""
    if status is not None and status.allocated_resources is not None:
        return status.allocated_resources
    return None if infeasible else container.resources.requests


def _actuated(container: Container, status: ContainerStatus | None, infeasible: bool) -> Mapping[str, Quantity] | None:
    """``containerActuatedRequests``."""
    if status is not None and status.resources is not None and status.resources.requests is not None:
        return status.resources.requests
    if status is not None and status.allocated_resources is not None:
        return status.allocated_resources
    return None if infeasible else container.resources.requests


def _aggregate(pod: Pod, per_container, statuses: dict[str, ContainerStatus] | None, infeasible: bool) -> Resources:
    """``aggregateContainerResourcesByFn`` (the sidecar-aware sum of requests.py's ``aggregate``)."""
    if statuses is None:
        return aggregate(pod, lambda c: per_container(c, None, infeasible) or {})
    return aggregate(pod, lambda c: per_container(c, statuses.get(c.name), infeasible) or {})


def _max(first: Mapping[str, Quantity] | None, *others: Mapping[str, Quantity] | None) -> Resources:
    """helpers.go ``max``: a copy of ``first`` (``{}`` for nil), raised to each of ``others``."""
    result: Resources = dict(first or {})
    for other in others:
        if other:
            max_into(result, other)
    return result


def dra_amounts(pod: Pod) -> Resources:
    """What the pod's recorded ``status.nodeAllocatableResourceClaimStatuses`` add (see
    :func:`claim_amounts`)."""
    return claim_amounts(pod.status.node_allocatable_resource_claim_statuses)


def claim_amounts(statuses: Iterable[NodeAllocatableClaimStatus]) -> Resources:
    """``addDRANodeAllocatableClaimResources``: Σ over the claim statuses of every mapping, perPod,
    and perContainer × |containers|, each claim once (init containers' claims too: 1.37 adds them
    flatly, after the init/regular max). The 1.36 ``resources`` map is tombstoned in v1.37's API:
    a 1.37 scheduler never sees it, so it counts for nothing here."""
    total: Resources = {}
    for status in statuses:
        entry = from_status(status)
        for name in (*entry.mapping, *(n for n in entry.overhead if n not in entry.mapping)):
            amount = entry.pod_total(name)
            if amount is not None:
                add_into(total, {name: amount})
    return total


def _pod_level_requests(pod: Pod) -> Mapping[str, Quantity] | None:
    """The pod-level requests when ``IsPodLevelRequestsSet`` (a supported name among them)."""
    plr = pod.spec.resources
    if plr is None or not any(is_pod_level_resource(n) for n in plr.requests):
        return None
    return plr.requests


def _resized(pod: Pod, spec: Resources, dra: Resources, infeasible: bool) -> Resources:
    """``AggregateContainerRequests`` with UseStatusResources: max(spec, actuated, allocated)."""
    st = pod.status
    if st.allocated_resources is not None and st.resources is not None and st.resources.requests is not None:
        allocated, actuated = st.allocated_resources, st.resources.requests
    else:
        statuses = _status_lookup(pod)
        allocated = _aggregate(pod, _allocated, statuses, infeasible)
        if dra:
            add_into(allocated, dra)
        actuated = _aggregate(pod, _actuated, statuses, infeasible)
    return _max(actuated, allocated) if infeasible else _max(spec, actuated, allocated)


def cached_pod_requests(pod: Pod) -> Resources:
    """``PodRequests`` as ``CalculateResource`` calls it: UseStatusResources,
    InPlacePodLevelResourcesVerticalScalingEnabled, pod-level resources, overhead and
    UseDRANodeAllocatableResourceClaimStatus all on.

    While a resize is pending or in progress the pod counts for the larger of what its spec asks,
    what the kubelet admitted (allocated) and what the runtime applied (actuated), per resource,
    each summed over the containers first; an Infeasible resize drops the spec from that max.
    Pod-level status (``status.allocatedResources`` with ``status.resources.requests``), when the
    kubelet wrote both, replaces the per-container status sums and already holds the DRA amounts."""
    infeasible = resize_infeasible(pod)
    st = pod.status
    dra = dra_amounts(pod)
    spec = _aggregate(pod, _spec, None, infeasible)
    if dra:
        add_into(spec, dra)
    if not infeasible and st.allocated_resources is None and st.resources is None and not any(
            s.allocated_resources is not None or s.resources is not None
            for s in (*st.container_statuses, *st.init_container_statuses)):
        requests = spec  # no resize recorded: allocated and actuated both fall back to the spec
    else:
        requests = _resized(pod, spec, dra, infeasible)
    pod_level = _pod_level_requests(pod)
    if pod_level is not None:
        effective = pod_level
        if st.resources is not None:  # effectivePodLevelResources
            effective = _max(None if infeasible else pod_level, st.resources.requests, st.allocated_resources)
        for name, q in effective.items():
            if is_pod_level_resource(name):
                requests[name] = q
    if pod.spec.overhead:
        add_into(requests, pod.spec.overhead)
    return requests


def spec_pod_requests(pod: Pod, *, include_overhead: bool = True, dra: Mapping[str, Quantity] | None = None) -> Resources:
    """``PodRequests`` without status resources: the spec's sidecar-aware sum plus ``dra`` (claim
    amounts), pod-level requests over that (so they hide what DRA adds to cpu, memory or huge
    pages), then (unless excluded) the overhead."""
    requests = _aggregate(pod, _spec, None, False)
    if dra:
        add_into(requests, dra)
    pod_level = _pod_level_requests(pod)
    if pod_level is not None:
        for name, q in pod_level.items():
            if is_pod_level_resource(name):
                requests[name] = q
    if include_overhead and pod.spec.overhead:
        add_into(requests, pod.spec.overhead)
    return requests


def scheduler_requests(pod: Pod) -> Resource:
    """``PodInfo.CalculateResource().Resource``: what a pod in the cache adds to its node's
    ``Requested``.

    Run for every pod of the cluster, so the common pod (regular containers only, no pod-level
    resources, overhead, claim amounts or resize status) takes a short path: the plain sum of its
    containers' requests, which is what the general rule gives it."""
    spec, st = pod.spec, pod.status
    if spec.init_containers or spec.resources is not None or spec.overhead \
            or st.node_allocatable_resource_claim_statuses or st.allocated_resources is not None \
            or st.resources is not None or st.init_container_statuses \
            or any(s.allocated_resources is not None or s.resources is not None for s in st.container_statuses) \
            or (st.conditions and resize_infeasible(pod)):
        return _requested(cached_pod_requests(pod))
    containers = spec.containers
    if len(containers) == 1:
        return _requested_shared(containers[0].resources.requests)
    total: Resources = {}
    for container in containers:
        for name, q in container.resources.requests.items():
            have = total.get(name)
            total[name] = q if have is None else have + q
    return _requested(total)


@dataclasses.dataclass(frozen=True, slots=True)
class IncomingRequest:
    """What a filter compares for the pod being scheduled, with its parts for the reader.

    ``total`` is what the filter compares; ``overhead`` the RuntimeClass overhead and ``dra`` the
    claims' node-allocatable amounts, each counted on its own (``dra`` only where pod-level
    requests do not hide it). NodeResourcesFit's ``dra`` is always empty."""

    total: Resource
    spec: Resource
    overhead: Resource
    dra: Resource = dataclasses.field(default_factory=dict)


def incoming_requests(pod: Pod) -> IncomingRequest:
    """``computePodResourceRequest`` as NodeResourcesFit's PreFilter calls it: pod-level resources
    on, no DRA option (so even a pod carrying stale claim statuses counts its spec only)."""
    return IncomingRequest(total=_requested(spec_pod_requests(pod)),
                           spec=_requested(spec_pod_requests(pod, include_overhead=False)),
                           overhead=_requested(pod.spec.overhead))


def demand_with_claims(pod: Pod, statuses: Iterable[NodeAllocatableClaimStatus]) -> IncomingRequest:
    """DynamicResources' ``totalPodDemand`` for a node (getPodNodeAllocatableResourceFootprint):
    ``PodRequests`` of the pod with ``statuses`` as its node-allocatable claim statuses,
    pod-level resources on, no status resources; ``NewResource`` of that."""
    dra = claim_amounts(statuses)
    pod_level = _pod_level_requests(pod) or {}
    shown = {n: q for n, q in dra.items() if not (is_pod_level_resource(n) and n in pod_level)}
    return IncomingRequest(total=_requested(spec_pod_requests(pod, dra=dra)),
                           spec=_requested(spec_pod_requests(pod, include_overhead=False)),
                           overhead=_requested(pod.spec.overhead), dra=_requested(shown))


# -- what cannot be counted -------------------------------------------------------------------------

_STATUS_RESOURCE_FIELDS = ("status.containerStatuses", "status.initContainerStatuses", "status.allocatedResources",
                           "status.resources", "status.conditions")


def unreadable_resource_fields(pod: Pod, *, cached: bool) -> list[str]:
    """Invalid fields (dropped on load) that the pod's scheduler requests are computed from: while
    any exists, what the pod counts for is unknown. ``cached``: the pod is in the cache, so its
    status (resize, DRA amounts) counts too; for the pod being scheduled only the spec does."""
    if not pod.invalid_fields:
        return []
    if cached:
        return pod.invalid_resource_fields() + pod.invalid_under(*_STATUS_RESOURCE_FIELDS)
    return [p for p in pod.invalid_resource_fields() if not p.startswith("status.")]
