"""The pod footprint as component-helpers computes it (PodRequests / PodLimits), with DRA.

Aggregation is sidecar-aware (KEP-753): regular containers and sidecars add up; each plain init
container peaks at its own amount plus the sidecars started before it; the pod takes the larger.
Pod-level resources replace the aggregate for cpu, memory and hugepages (DRA is then not added);
pod overhead comes last (added to limits only where the limit is non-zero).

DRA (KEP-5517, from the recorded claim entries), as component-helpers v0.37.2 adds it: every
claim's mapping + perPod + perContainer x (number of listed containers), once, after the
init/regular max. (A later revision attributes perContainer to init containers inside their
peak; 1.37 does not, and the scheduler and kubelet of 1.37 agree with this module.) For limits,
DRA is added only to resources some container declares a limit for; hugepages always get it.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping

from kubectl_dra.allocatable.entries import ClaimEntry
from kubectl_dra.model.pod import Container, Pod
from kubectl_dra.quantity import Quantity

Resources = dict[str, Quantity]
POD_LEVEL = ("cpu", "memory")


def is_pod_level_resource(name: str) -> bool:
    return name in POD_LEVEL or name.startswith("hugepages-")


def is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def add_into(target: Resources, other: Mapping[str, Quantity]) -> None:
    if not target:  # the first summand (most sums here have one or two): taken as it is
        target.update(other)
        return
    for name, q in other.items():
        have = target.get(name)
        target[name] = q if have is None else have + q


def max_into(target: Resources, other: Mapping[str, Quantity]) -> None:
    for name, q in other.items():
        have = target.get(name)
        if have is None or q > have:
            target[name] = q


def aggregate(pod: Pod, per_container: Callable[[Container], Mapping[str, Quantity]]) -> Resources:
    """max(Σ regular + Σ sidecars, max over init i of (init_i + sidecars before i))."""
    result: Resources = {}
    for container in pod.spec.containers:
        add_into(result, per_container(container))
    sidecars: Resources = {}
    init_peak: Resources = {}
    for container in pod.spec.init_containers:
        own = per_container(container)
        if container.restart_policy == "Always":
            add_into(result, own)
            add_into(sidecars, own)
            candidate = dict(sidecars)
        else:
            candidate = dict(own)
            add_into(candidate, sidecars)
        max_into(init_peak, candidate)
    max_into(result, init_peak)
    return result


def dra_total(entries: Iterable[ClaimEntry]) -> Resources:
    """``addDRANodeAllocatableClaimResources``: what the claim entries add to the pod, flatly."""
    total: Resources = {}
    for entry in entries:
        add_into(total, entry.mapping)
        for resource, overhead in entry.overhead.items():
            if overhead.per_pod is not None:
                add_into(total, {resource: overhead.per_pod})
            if overhead.per_container is not None and entry.containers:
                add_into(total, {resource: overhead.per_container * len(entry.containers)})
        if entry.resources:
            add_into(total, entry.resources)  # 1.36 entries: counted by that scheduler as a pod total
    return total


def _pod_level(pod: Pod, kind: str) -> dict[str, Quantity]:
    """Pod-level requests or limits, when ``IsPodLevelResourcesSet`` (a supported resource)."""
    plr = pod.spec.resources
    if plr is None or not any(is_pod_level_resource(n) for n in (*plr.requests, *plr.limits)):
        return {}
    return {n: q for n, q in getattr(plr, kind).items() if is_pod_level_resource(n)}


def pod_requests(pod: Pod, entries: Iterable[ClaimEntry] = (), *, include_overhead: bool = True) -> Resources:
    """PodRequests with UseDRANodeAllocatableResourceClaimStatus."""
    return _requests(pod, dra_total(entries), include_overhead)


def pod_limits(pod: Pod, entries: Iterable[ClaimEntry] = (), *, include_overhead: bool = True) -> Resources:
    """PodLimits with DRA: only declared limits (and hugepages) grow by the DRA amount."""
    return _limits(pod, dra_total(entries), include_overhead)


def pod_requests_and_limits(pod: Pod, entries: Iterable[ClaimEntry] = ()) -> tuple[Resources, Resources]:
    """Both, with the claim entries summed once (what the pod cgroup is sized from)."""
    dra = dra_total(entries)
    return _requests(pod, dra, True), _limits(pod, dra, True)


def _requests(pod: Pod, dra: Resources, include_overhead: bool) -> Resources:
    result = aggregate(pod, lambda c: c.resources.requests)
    add_into(result, dra)
    result.update(_pod_level(pod, "requests"))
    if include_overhead and pod.spec.overhead:
        add_into(result, pod.spec.overhead)
    return result


def _limits(pod: Pod, dra: Resources, include_overhead: bool) -> Resources:
    spec = aggregate(pod, lambda c: c.resources.limits)
    result = dict(spec)
    for name, q in dra.items():
        if name in spec or is_hugepages(name):
            add_into(result, {name: q})
    result.update(_pod_level(pod, "limits"))
    if include_overhead:
        for name, q in pod.spec.overhead.items():
            if name in result and not result[name].is_zero():
                result[name] = result[name] + q
    return result


def difference(with_dra: Mapping[str, Quantity], spec: Mapping[str, Quantity]) -> Resources:
    """The part of ``with_dra`` that ``spec`` lacks, per resource (what DRA adds)."""
    return {k: v - spec[k] if k in spec else v for k, v in with_dra.items() if v != spec.get(k)}


def container_dra(entries: Iterable[ClaimEntry], container: str) -> Resources:
    """GetContainerDRAAllocations: Σ over entries listing the container of mapping + perPod + perContainer."""
    total: Resources = {}
    for entry in entries:
        if container in entry.containers:
            add_into(total, entry.per_container())
    return total

