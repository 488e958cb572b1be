"""The pod footprint as component-helpers computes it (PodRequests / PodLimits), with DRA.

Aggregation is sidecar-aware (KEP-753): regular containers and sidecars add up; each plain init
container peaks at its own amount plus the sidecars started before it; the pod takes the larger.
Pod-level resources replace the aggregate for cpu, memory and hugepages (DRA is then not added);
pod overhead comes last (added to limits only where the limit is non-zero).

DRA (KEP-5517, from the recorded claim entries): mapping and perPod are "pod fixed", added once
after the init/regular max; perContainer is attributed to each listed container before the max
(a listed name that is no container of the pod is charged as pod fixed). For limits, DRA is added
only to resources that some container declares a limit for; hugepages always get it.
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
    for name, q in other.items():
        target[name] = target[name] + q if name in target else q


def max_into(target: Resources, other: Mapping[str, Quantity]) -> None:
    for name, q in other.items():
        if name not in target or q > target[name]:
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


def _dra_split(pod: Pod, entries: Iterable[ClaimEntry]) -> tuple[Resources, dict[str, Resources]]:
    """(pod-fixed DRA, per-container perContainer DRA) from the kubelet-relevant (1.37) entries."""
    fixed: Resources = {}
    per_container: dict[str, Resources] = {}
    names = {c.name for c in pod.all_containers()}
    for entry in entries:
        add_into(fixed, entry.mapping)
        for resource, overhead in entry.overhead.items():
            if overhead.per_pod is not None:
                add_into(fixed, {resource: overhead.per_pod})
            if overhead.per_container is not None:
                for container in entry.containers:
                    target = per_container.setdefault(container, {}) if container in names else fixed
                    add_into(target, {resource: overhead.per_container})
        add_into(fixed, entry.resources)  # 1.36 entries: counted by that scheduler as a pod total
    return fixed, per_container


def pod_requests(pod: Pod, entries: Iterable[ClaimEntry] = (), *, include_overhead: bool = True) -> Resources:
    """PodRequests with UseDRANodeAllocatableResourceClaimStatus."""
    fixed, per_container = _dra_split(pod, entries)

    def requests(container: Container) -> Resources:
        own = dict(container.resources.requests)
        add_into(own, per_container.get(container.name, {}))
        return own

    result = aggregate(pod, requests)
    add_into(result, fixed)
    pod_level = pod.spec.resources.requests if pod.spec.resources else {}
    for name, q in pod_level.items():
        if is_pod_level_resource(name):
            result[name] = q
    if include_overhead:
        add_into(result, pod.spec.overhead)
    return result


def pod_limits(pod: Pod, entries: Iterable[ClaimEntry] = (), *, include_overhead: bool = True) -> Resources:
    """PodLimits with DRA: only declared limits (and hugepages) grow by the DRA amount."""
    fixed, per_container = _dra_split(pod, entries)
    spec = aggregate(pod, lambda c: c.resources.limits)
    dra: Resources = dict(fixed)
    for amounts in per_container.values():
        add_into(dra, amounts)
    result = dict(spec)
    for name, q in dra.items():
        if name in spec or is_hugepages(name):
            add_into(result, {name: q})
    if pod.spec.resources and (pod.spec.resources.requests or pod.spec.resources.limits):
        for name, q in pod.spec.resources.limits.items():
            if is_pod_level_resource(name):
                result[name] = q
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
            for resource in entry.resource_names():
                amount = entry.container_total(resource)
                if amount is not None:
                    add_into(total, {resource: amount})
    return total

