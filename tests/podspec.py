"""Compact pod specs for prediction tests: ``ctr("c1", req={"cpu": "2"}, lim=..., claims=["a"])``."""

from __future__ import annotations

from kubectl_dra.allocatable.entries import from_status
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.registry import parse_object

GI = 1 << 30
MI = 1 << 20


def ctr(name: str, req: dict | None = None, lim: dict | None = None, claims=(), sidecar: bool = False) -> dict:
    c: dict = {"name": name, "image": "registry.example/app:1",  # the API server requires an image
               "resources": {"requests": req or {}, "limits": lim or {}, "claims": [{"name": n} for n in claims]}}
    if not req:
        del c["resources"]["requests"]
    if not lim:
        del c["resources"]["limits"]
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


def entry(claim: str, containers, mapping: dict | None = None, overhead: dict | None = None) -> dict:
    """A 1.37 ``nodeAllocatableResourceClaimStatuses`` entry; overhead: {res: (perPod, perContainer)}."""
    e: dict = {"resourceClaimName": claim, "containers": list(containers)}
    if mapping:
        e["mapping"] = [{"name": k, "quantity": v} for k, v in mapping.items()]
    if overhead:
        e["overhead"] = [{"name": k, **({"perPod": pp} if pp else {}), **({"perContainer": pc} if pc else {})}
                         for k, (pp, pc) in overhead.items()]
    return e


def spec_pod(containers, *, init=(), plr: dict | None = None, overhead: dict | None = None, entries=(),
             uid: str = "11111111-2222-3333-4444-555555555555", claims=()) -> Pod:
    spec: dict = {"containers": list(containers), "initContainers": list(init),
                  "resourceClaims": [{"name": n, "resourceClaimName": n} for n in claims]}
    if plr:
        spec["resources"] = plr
    if overhead:
        spec["overhead"] = overhead
    raw = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": uid},
           "spec": spec, "status": {"nodeAllocatableResourceClaimStatuses": list(entries)}}
    return parse_object(raw)


def entries_of(pod: Pod):
    return [from_status(s) for s in pod.status.node_allocatable_resource_claim_statuses]
