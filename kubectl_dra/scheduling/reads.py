"""What the scheduling explanation reads: what the scheduler's cache holds.

Every node and every pod (bound pods use the nodes' room, ports and topology; nominated ones are
counted as the scheduler counts them), the namespaces (inter-pod affinity's namespaceSelector),
and what the DynamicResources filter needs (kubectl_dra/commands/inputs.allocation_requests). Volume
kinds are read only when the pod has a volume the volume filters look at.
"""

from __future__ import annotations

import dataclasses

from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.model.claim import ResourceClaim, ResourceClaimTemplate
from kubectl_dra.model.namespace import Namespace
from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.podcache import CachedPod
from kubectl_dra.model.resource import DeviceClass, DeviceTaintRule, ResourceSlice
from kubectl_dra.model.storage import CSIDriver, CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass
from kubectl_dra.scheduling.extended import is_dra_extended_resource_name
from kubectl_dra.scheduling.resources import is_scalar_resource_name


def scheduling_reads(pod, namespace: str | None = None) -> list:
    requests = [ReadRequest(Node, keep_raw=False), ReadRequest(Pod, keep_raw=False, view=CachedPod),
                ReadRequest(Namespace, required=False, keep_raw=False)]
    if pod is not None and (pod.spec.resource_claims or pod.status.extended_resource_claim_status):
        requests += _dra_reads(namespace or pod.namespace)
    elif pod is not None and _asks_extended_resource(pod):
        # a DeviceClass may provide it through DRA (KEP-5004): the scheduler then allocates a claim
        # of its own, so DynamicResources needs what it needs for any claim; none of it is required
        # (a cluster without DRA, or a user who may not read it, still gets every other filter)
        requests += [dataclasses.replace(r, required=False) for r in _dra_reads(pod.namespace)]
    elif pod is not None and _asks_scalar_resource(pod):
        # NodeResourcesFit asks whether a DeviceClass provides a scalar resource (extended, huge
        # pages) a node does not advertise (shouldDelegateResourceToDRA, noderesources/fit.go):
        # without the classes every such node would be undetermined
        requests.append(ReadRequest(DeviceClass, required=False, keep_raw=False))
    if pod is not None and any(v.persistent_volume_claim is not None or v.ephemeral is not None
                               for v in pod.spec.volumes):
        requests += _volume_reads(namespace or pod.namespace)
    return requests


def _asks_extended_resource(pod) -> bool:
    return any(is_dra_extended_resource_name(name) for c in pod.all_containers() for name in c.resources.requests)


def _asks_scalar_resource(pod) -> bool:
    requirements = [c.resources for c in pod.all_containers()]
    if pod.spec.resources is not None:
        requirements.append(pod.spec.resources)
    return any(is_scalar_resource_name(name) for r in requirements for name in (*r.requests, *r.limits))


def _dra_reads(namespace: str | None) -> list:
    return [ReadRequest(ResourceSlice, keep_raw=False), ReadRequest(DeviceClass, keep_raw=False),
            ReadRequest(DeviceTaintRule, required=False, keep_raw=False),
            ReadRequest(ResourceClaim, None, keep_raw=False),
            ReadRequest(ResourceClaimTemplate, namespace, required=False, keep_raw=False)]


def _volume_reads(namespace: str | None) -> list:
    """PVCs of the namespace, PVs, StorageClasses, CSINodes and CSIDrivers."""
    return [ReadRequest(PersistentVolumeClaim, namespace, required=False, keep_raw=False),
            *(ReadRequest(model, None, required=False, keep_raw=False)
              for model in (PersistentVolume, StorageClass, CSINode, CSIDriver))]
