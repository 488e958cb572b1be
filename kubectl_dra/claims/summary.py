"""The ``kubectl dra claims`` list: one row of facts per ResourceClaim."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from kubectl_dra.document import Document, Part
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.resource import ResourceClaim, ResourceClaimConsumerReference


class ClaimSummary(Part):
    namespace: str
    name: str
    uid: str
    state: list[str]
    node: str | None = None
    devices: list[str] = Field(default_factory=list)  # driver/pool/device
    drivers: list[str] = Field(default_factory=list)
    pools: list[str] = Field(default_factory=list)
    reserved_for: list[str] = Field(default_factory=list)  # pod/NAME, podgroup/NAME, <resource>/NAME
    pods: list[str] = Field(default_factory=list)  # pods that reference the claim
    groups: list[str] = Field(default_factory=list)  # PodGroups it is reserved for
    creation_timestamp: datetime | None = None


class ClaimList(Document):
    kind: str = "ClaimList"
    items: list[ClaimSummary] = Field(default_factory=list)


def consumer_label(ref: ResourceClaimConsumerReference) -> str:
    """How a reservation is shown in one table cell: ``pod/NAME``, ``podgroup/NAME``."""
    kind = ref.resource[:-1] if ref.resource.endswith("s") else ref.resource
    return f"{kind}/{ref.name}"


def summarize(claim: ResourceClaim, inventory: Inventory) -> ClaimSummary:
    results = claim.status.allocation.devices.results if claim.status.allocation else []
    pods = inventory.pods_by_claim().get((claim.namespace, claim.name), [])
    return ClaimSummary(
        namespace=claim.namespace or "",
        name=claim.name,
        uid=claim.uid,
        state=claim.state(),
        node=claim.node_name,
        devices=[f"{r.driver}/{r.pool}/{r.device}" for r in results],
        drivers=sorted({r.driver for r in results}),
        pools=sorted({r.pool for r in results}),
        reserved_for=[consumer_label(ref) for ref in claim.status.reserved_for],
        pods=sorted(p.name for p in pods),
        groups=[ref.name for ref in claim.status.reserved_for if ref.is_pod_group],
        creation_timestamp=claim.metadata.creation_timestamp,
    )


def list_claims(inventory: Inventory) -> ClaimList:
    claims = sorted(inventory.claims(), key=lambda c: (c.namespace or "", c.name))
    return ClaimList(items=[summarize(c, inventory) for c in claims],
                     problems=[p.message for p in inventory.problems])
