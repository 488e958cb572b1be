"""QoS class from the spec alone (DRA never changes it), as the kubelet computes it."""

from __future__ import annotations

from kubectl_dra.model.pod import Container, Pod
from kubectl_dra.quantity import Quantity

QOS_RESOURCES = ("cpu", "memory")


def effective_requests(container: Container) -> dict[str, Quantity]:
    """Requests after API defaulting: a resource with a limit and no request requests its limit."""
    requests = dict(container.resources.requests)
    for name, limit in container.resources.limits.items():
        requests.setdefault(name, limit)
    return requests


def qos_class(pod: Pod) -> str:
    """Guaranteed, Burstable or BestEffort (GetPodQOS, pod-level resources first)."""
    plr = pod.spec.resources
    if plr is not None and any(k in QOS_RESOURCES for k in (*plr.requests, *plr.limits)):
        requests = {k: v for k, v in plr.requests.items() if k in QOS_RESOURCES and v.sign() > 0}
        for k, v in plr.limits.items():  # pod-level requests default to limits too
            if k in QOS_RESOURCES and v.sign() > 0:
                requests.setdefault(k, v)
        limits = {k: v for k, v in plr.limits.items() if k in QOS_RESOURCES and v.sign() > 0}
        if not requests and not limits:
            return "BestEffort"
        guaranteed = set(limits) == set(QOS_RESOURCES) and all(limits.get(k) == v for k, v in requests.items())
        return "Guaranteed" if guaranteed and len(requests) == len(limits) else "Burstable"
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}
    guaranteed = True
    for container in pod.all_containers():
        for name, q in effective_requests(container).items():
            if name in QOS_RESOURCES and q.sign() > 0:
                requests[name] = requests[name] + q if name in requests else q
        found = set()
        for name, q in container.resources.limits.items():
            if name in QOS_RESOURCES and q.sign() > 0:
                found.add(name)
                limits[name] = limits[name] + q if name in limits else q
        if not set(QOS_RESOURCES) <= found:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(name in limits and limits[name] == q for name, q in requests.items()) \
            and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"
