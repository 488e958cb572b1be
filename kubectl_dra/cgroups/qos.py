"""QoS class from the spec alone (DRA never changes it), as the kubelet reads it.

``GetPodQOS`` (1.37): the class the API server stored in ``status.qosClass`` wins; otherwise
``ComputePodQOS``: pod-level resources decide when set, else each container is classified on its
own (cpu and memory: request == limit != 0 Guaranteed, both zero BestEffort, else Burstable) and
the pod is Guaranteed or BestEffort only if every container is.
"""

from __future__ import annotations

from kubectl_dra.model.pod import Pod, ResourceRequirements
from kubectl_dra.quantity import Quantity

QOS_RESOURCES = ("cpu", "memory")
CLASSES = ("Guaranteed", "Burstable", "BestEffort")
_ZERO = Quantity.parse("0")


def _requirements_qos(requests: dict[str, Quantity], limits: dict[str, Quantity]) -> str:
    """``requirementsQOS`` after API defaulting (a limit without a request requests the limit)."""
    if not requests and not limits:
        return "BestEffort"
    found = None
    for name in QOS_RESOURCES:
        limit = limits.get(name, _ZERO)
        request = requests.get(name, limit)
        if request != limit:
            return "Burstable"
        own = "BestEffort" if request.is_zero() else "Guaranteed"
        if found is not None and own != found:
            return "Burstable"
        found = own
    return found or "BestEffort"


def _of(resources: ResourceRequirements) -> str:
    return _requirements_qos(resources.requests, resources.limits)


def pod_level_resources_set(pod: Pod) -> bool:
    """``IsPodLevelResourcesSet``: a supported resource (cpu, memory, hugepages) at pod level."""
    plr = pod.spec.resources
    return plr is not None and any(name in QOS_RESOURCES or name.startswith("hugepages-")
                                   for name in (*plr.requests, *plr.limits))


def compute_qos(pod: Pod) -> str:
    if pod_level_resources_set(pod):
        return _of(pod.spec.resources)
    found = None
    for container in pod.all_containers():
        own = _of(container.resources)
        if own == "Burstable":
            return own
        if found is not None and own != found:
            return "Burstable"
        found = own
    return found or "BestEffort"


def qos_class(pod: Pod) -> str:
    """Guaranteed, Burstable or BestEffort: ``status.qosClass`` when the API server set it."""
    stored = pod.status.qos_class
    return stored if stored in CLASSES else compute_qos(pod)
