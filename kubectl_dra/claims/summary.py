"""The ``kubectl dra claims`` list: one row of facts per ResourceClaim."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from typing import TYPE_CHECKING, Callable, Iterable

from pydantic import Field, PrivateAttr

from kubectl_dra.claims.sorting import SORT_KEYS, sort_key
from kubectl_dra.document import Document, part
from kubectl_dra.gcpause import gc_paused
from kubectl_dra.model.claim import ResourceClaim, ResourceClaimConsumerReference
from kubectl_dra.quantity import Quantity
from kubectl_dra.versions import Versions

if TYPE_CHECKING:
    from kubectl_dra.model.inventory import Inventory


@part
class ClaimSummary:
    """One claim's row (a list of 50,000 is held until it is sorted and printed)."""

    namespace: str
    name: str
    uid: str
    state: list[str]
    node: str | None = None
    devices: list[str] = dataclasses.field(default_factory=list)  # driver/pool/device
    drivers: list[str] = dataclasses.field(default_factory=list)
    pools: list[str] = dataclasses.field(default_factory=list)
    reserved_for: list[str] = dataclasses.field(default_factory=list)  # pod/NAME, podgroup/NAME, <resource>/NAME
    pods: list[str] = dataclasses.field(default_factory=list)  # pods that reference the claim
    groups: list[str] = dataclasses.field(default_factory=list)  # PodGroups it is reserved for
    node_allocatable: dict[str, str] = dataclasses.field(default_factory=dict)  # mapped amounts over the devices
    node_allocatable_overhead: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)  # resource -> perPod/perContainer
    findings: list[str] = dataclasses.field(default_factory=list)  # finding codes (filled by the detailed view)
    creation_timestamp: datetime | None = None


class ClaimList(Document):
    kind: str = "ClaimList"
    items: list[ClaimSummary] = Field(default_factory=list)
    versions: Versions | None = None  # the releases the answer was modelled on and found (versions.py)
    # pending claims that pods wait for, with what every claim holds: for the allocation findings
    _waiting: list = PrivateAttr(default_factory=list)
    _state: object = PrivateAttr(default=None)
    _sort: object = PrivateAttr(default=None)  # the --sort-by key, applied again when findings are added

    @property
    def waiting(self) -> list:
        return self._waiting


def consumer_label(ref: ResourceClaimConsumerReference, ambiguous: bool = False) -> str:
    """How a reservation is shown in one table cell: ``pod/NAME``, ``podgroup/NAME``; with the UID's
    first 8 characters when another entry has the same name (a replaced pod next to its successor)."""
    kind = ref.resource[:-1] if ref.resource.endswith("s") else ref.resource
    return f"{kind}/{ref.name}" + (f"({ref.uid[:8]})" if ambiguous and ref.uid else "")


def reservation_labels(refs: list[ResourceClaimConsumerReference]) -> list[str]:
    names = [(r.resource, r.name) for r in refs]
    return [consumer_label(r, names.count((r.resource, r.name)) > 1) for r in refs]


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
        reserved_for=reservation_labels(claim.status.reserved_for),
        pods=sorted(p.name for p in pods),
        groups=[ref.name for ref in claim.status.reserved_for if ref.is_pod_group],
        creation_timestamp=claim.metadata.creation_timestamp,
    )


def detailed_view(full_output: bool, only_findings: bool, sort_by: str) -> bool:
    """Whether the rows need the detailed view (pods, slices and PodGroups read, each claim
    explained): for -o wide/json/yaml (``full_output``), --findings and --sort-by findings; the plain
    table and -o name show only what a claim says of itself."""
    return full_output or only_findings or sort_key(sort_by) is SORT_KEYS["findings"]


def list_claims(claims: Iterable[ResourceClaim], inventory: Inventory, *, detailed: bool = False,
                only_findings: bool = False, sort_by: str = "namespace") -> ClaimList:
    """One summary per claim, taken as the claims arrive (nothing of a claim is kept but its row).
    ``detailed`` also joins devices and reservations (``inventory`` then holds the slices, pods and
    PodGroups) to fill the node-allocatable amounts and the finding codes."""
    waiting: list = []
    state = explain = None
    if detailed:
        # start-up: light - the plain table and -o name explain no claim (model.pod, model.resource)
        from kubectl_dra.allocation.state import AllocatedState
        from kubectl_dra.claims.explain import explain_claim as explain

        state = AllocatedState()
    with gc_paused():
        items = _summaries(claims, inventory, explain, only_findings, waiting, state)
    key = sort_key(sort_by) or SORT_KEYS["namespace"]
    items.sort(key=key)
    result = ClaimList(items=items, problems=[p.message for p in inventory.problems])
    result._waiting, result._state, result._sort = waiting, state, key
    return result


def waiting_pods(claim: ResourceClaim, inventory: Inventory) -> list:
    """Unscheduled pods that reference a pending claim: what makes the scheduler try to allocate it."""
    pods = inventory.pods_by_claim().get((claim.namespace, claim.name), [])
    return [p for p in pods if not p.node_name and not p.is_done]


def add_allocation_findings(result: ClaimList, inventory: Inventory) -> None:
    """``Unsatisfiable`` (no node can take the claim now) and ``UnsatisfiableOnNode`` (a waiting pod's
    nominated node cannot) on the pending claims that pods wait for; ``inventory`` holds the nodes,
    slices and classes."""
    # start-up: pending
    from kubectl_dra.allocation.bound import SearchBound
    from kubectl_dra.allocation.explain import allocation_findings, explain_allocation

    bound = SearchBound()  # one total for every claim of the list
    for item, claim, nominated in result._waiting:
        allocation = explain_allocation([claim], inventory, state=result._state, bound=bound)
        codes = set()
        for node in nominated or [None]:
            codes |= {f.code for f in allocation_findings(allocation, node)}
        if codes:
            item.findings = sorted(set(item.findings) | codes)
    if result._sort is not None:  # the rows were ordered before these findings existed
        result.items.sort(key=result._sort)


def keep_with_findings(result: ClaimList) -> None:
    """--findings: drop the rows without findings, once the allocation findings are in (a claim
    pods wait for is kept by ``list_claims`` until then)."""
    result.items = [item for item in result.items if item.findings]


def _add(totals: dict, key: str, q: Quantity) -> None:
    totals[key] = totals[key] + q if key in totals else q


def _summaries(claims: Iterable[ResourceClaim], inventory: Inventory, explain: Callable | None,
               only_findings: bool, waiting: list | None = None, state=None) -> list[ClaimSummary]:
    """The rows; ``explain`` (the claim explanation, None for the plain view) fills the detailed columns."""
    items = []
    detailed = explain is not None
    for claim in claims:
        item = summarize(claim, inventory)
        if state is not None:
            state.add(claim)
        if detailed and claim.status.allocation is None and not claim.deleted and waiting is not None:
            pods = waiting_pods(claim, inventory)
            if pods:
                waiting.append((item, claim, sorted({p.status.nominated_node_name for p in pods
                                                     if p.status.nominated_node_name})))
        if detailed:
            explanation = explain(claim, inventory, facts=False)
            item.findings = sorted({f.code for f in explanation.findings})
            totals: dict = {}
            overhead: dict = {}
            for device in explanation.devices:
                for resource, q in device.node_allocatable.items():
                    _add(totals, resource, Quantity.parse(q))
                for resource, parts in device.node_allocatable_overhead.items():
                    for share, q in parts.items():
                        _add(overhead.setdefault(resource, {}), share, Quantity.parse(q))
            item.node_allocatable = {k: str(v) for k, v in sorted(totals.items())}
            item.node_allocatable_overhead = {r: {k: str(v) for k, v in parts.items()}
                                              for r, parts in sorted(overhead.items())}
        if only_findings and not item.findings and not (waiting and waiting[-1][0] is item):
            continue  # (a claim pods wait for stays until its allocation findings are in)
        items.append(item)
    return items
