"""Small builders for API objects shaped like a real server's (resource.k8s.io/v1, core/v1).

Scenario tests build exactly the objects they reason about; the realistic driver objects live in
``tests/fixtures/objects`` and ``examples/cluster``.
"""

from __future__ import annotations

import uuid
from typing import Iterable

CREATED = "2026-11-20T08:00:00Z"


def uid(name: str) -> str:
    """A stable UUID per name, so tests can compute the UID of an object they built."""
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, name))


def pod(name: str, namespace: str = "ml", *, node: str | None = "worker-1", claims: dict[str, str] | None = None,
        templates: dict[str, str] | None = None, generated: dict[str, str] | None = None, phase: str = "Running",
        pod_uid: str | None = None, group: str | None = None, labels: dict | None = None,
        owner: tuple[str, str, str] | None = None) -> dict:
    """``claims``: pod claim name -> ResourceClaim name; ``templates``: pod claim name -> template;
    ``generated``: pod claim name -> the generated claim recorded in status."""
    resource_claims = [{"name": k, "resourceClaimName": v} for k, v in (claims or {}).items()]
    resource_claims += [{"name": k, "resourceClaimTemplateName": v} for k, v in (templates or {}).items()]
    spec: dict = {"containers": [{"name": "main", "image": "registry.example/app:1",
                                  "resources": {"claims": [{"name": c["name"]} for c in resource_claims]}}],
                  "resourceClaims": resource_claims}
    if node:
        spec["nodeName"] = node
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    meta: dict = {"name": name, "namespace": namespace, "uid": pod_uid or uid(f"pod/{namespace}/{name}"),
                  "creationTimestamp": CREATED, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": owner[0], "kind": owner[1], "name": owner[2],
                                    "uid": uid(f"{owner[1]}/{namespace}/{owner[2]}"), "controller": True}]
    status: dict = {"phase": phase}  # no qosClass: it follows whatever resources a test gives the containers
    if generated:
        status["resourceClaimStatuses"] = [{"name": k, "resourceClaimName": v} for k, v in generated.items()]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def claim(name: str, namespace: str = "ml", *, devices: Iterable[tuple[str, str, str]] = (),
          node: str | None = "worker-1", reserved_for: Iterable[dict] = (), labels: dict | None = None,
          deleted: bool = False, consumed: dict | None = None) -> dict:
    devices = list(devices)
    status: dict = {}
    if devices:
        results = []
        for driver, pool, device in devices:
            result = {"request": "req", "driver": driver, "pool": pool, "device": device}
            if consumed is not None:
                result["consumedCapacity"] = consumed
                result["shareID"] = uid(f"share/{name}/{device}")
            results.append(result)
        status["allocation"] = {
            "devices": {"results": results},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]},
            "allocationTimestamp": CREATED,
        }
    reserved = list(reserved_for)
    if reserved:
        status["reservedFor"] = reserved
    meta: dict = {"name": name, "namespace": namespace, "uid": uid(f"claim/{namespace}/{name}"),
                  "creationTimestamp": CREATED, "labels": labels or {}}
    if devices:
        meta["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    if deleted:
        meta["deletionTimestamp"] = "2026-11-21T08:00:00Z"
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
            "spec": {"devices": {"requests": [{"name": "req", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
            "status": status}


def reserved_pod(p: dict) -> dict:
    return {"resource": "pods", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}


def reserved_group(name: str, group_uid: str | None = None) -> dict:
    return {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": name, "uid": group_uid or uid(f"pg/{name}")}


def resource_slice(node: str, driver: str, devices: Iterable[str | dict]) -> dict:
    devs = [d if isinstance(d, dict) else {"name": d, "attributes": {"model": {"string": "LATEST-GPU-MODEL"}},
                                          "capacity": {"memory": {"value": "80Gi"}}} for d in devices]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{driver}-x1", "uid": uid(f"slice/{node}/{driver}"), "creationTimestamp": CREATED},
            "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": devs}}


def pod_group(name: str, namespace: str = "ml", *, deleting: bool = False) -> dict:
    meta: dict = {"name": name, "namespace": namespace, "uid": uid(f"pg/{name}"), "creationTimestamp": CREATED}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-21T08:00:00Z"
        meta["finalizers"] = ["scheduling.k8s.io/podgroup-protection"]
    # the API server requires a scheduling policy: basic (no gang semantics) unless a test wants one
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": meta,
            "spec": {"schedulingPolicy": {"basic": {}}}}


def small_cluster() -> list[dict]:
    """Two PodGroup members sharing a claim, a pod with a template claim, a pending claim and the
    node's GPU slice: the live-read tests' cluster (the real control plane and the fault server)."""
    gpu = "gpu.example.com"
    trainer0 = pod("trainer-0", group="trainer", claims={"gpus": "trainer-gpus"})
    trainer1 = pod("trainer-1", group="trainer", claims={"gpus": "trainer-gpus"})
    web = pod("web", "default", generated={"gpu": "web-gpu-k2x9z"}, templates={"gpu": "single-gpu"})
    return [
        trainer0, trainer1, web, pod_group("trainer"),
        claim("trainer-gpus", devices=[(gpu, "worker-1", "gpu-0"), (gpu, "worker-1", "gpu-1")],
              reserved_for=[reserved_group("trainer")], labels={"team": "research"}),
        claim("web-gpu-k2x9z", "default", devices=[(gpu, "worker-1", "gpu-2")], reserved_for=[reserved_pod(web)]),
        claim("spare", devices=(), node=None),
        resource_slice("worker-1", gpu, ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]),
    ]
