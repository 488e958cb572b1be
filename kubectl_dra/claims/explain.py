"""``kubectl dra explain claim``: what a claim got, who holds it, and why it may be stuck."""
from __future__ import annotations

from kubectl_dra.allocatable.devices import mapped_amounts
from kubectl_dra.allocatable.entries import unknown_inputs
from kubectl_dra.claims.findings import claim_findings
from kubectl_dra.claims.reservations import consumers, resolve
from kubectl_dra.claims.views import ClaimRef, DeviceView
from kubectl_dra.document import Finding
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.registry import NodeEnforcementReportObject
from kubectl_dra.pools.slices import slice_device
from kubectl_dra.model.claim import DeviceRequestAllocationResult, ResourceClaim
from kubectl_dra.model.resource import DeviceClass, ResourceSlice
from kubectl_dra.claims.document import ClaimExplanation, NodeView
from kubectl_dra.taints.explain import claim_taints


def node_views(claim: ResourceClaim, inventory: Inventory) -> tuple[list[NodeView], list[Finding]]:
    """What agents' reports say of this claim: the node's view and its findings (named after the node)."""
    views, findings = [], []
    entries = inventory.index("report_claims", lambda: _report_claims(inventory))
    for report, status, entry in entries.get((claim.namespace, claim.name), ()):
        if entry.get("uid") and claim.uid and entry["uid"] != claim.uid:
            continue  # about an earlier object of the same name
        views.append(NodeView(node=report.name, observed_at=status.get("observedAt"), prepared=entry.get("prepared"),
                              prepared_for=list(entry.get("preparedFor") or ()), devices=list(entry.get("devices") or ()),
                              cdi_devices=list(entry.get("cdiDevices") or ()), sources=list(entry.get("sources") or ())))
        for f in entry.get("findings") or ():
            if isinstance(f, dict) and f.get("code") and f.get("severity") in ("error", "warning", "info"):
                findings.append(Finding(code=f["code"], severity=f["severity"],
                                        message=f"on node {report.name} (agent report, {status.get('observedAt')}): "
                                                f"{f.get('message', '')}"))
    return views, findings


def _report_claims(inventory: Inventory) -> dict[tuple, list[tuple]]:
    """(namespace, claim name) -> (report, its status, the claim's entry) of every agent report, in
    report order (a list of claims asks every claim; each would walk every report's claims)."""
    index: dict[tuple, list[tuple]] = {}
    for report in inventory.all(NodeEnforcementReportObject):
        status = report.status if isinstance(report.status, dict) else {}
        for entry in status.get("claims") or ():
            if isinstance(entry, dict):
                index.setdefault((entry.get("namespace"), entry.get("name")), []).append((report, status, entry))
    return index


def _request_class(claim: ResourceClaim, request: str) -> tuple[str | None, str | None]:
    """(device class, subrequest) of an allocation result's ``request`` (``main`` or ``main/sub``)."""
    main, _, sub = request.partition("/")
    spec = next((r for r in claim.spec.devices.requests if r.name == main), None)
    if spec is None:
        return None, sub or None
    if sub:
        chosen = next((s for s in spec.first_available if s.name == sub), None)
        return (chosen.device_class_name if chosen else None), sub
    return (spec.exactly.device_class_name if spec.exactly else None), None


def _device_view(claim: ResourceClaim, result: DeviceRequestAllocationResult, inventory: Inventory,
                 amounts_unknown: bool, facts: bool = True) -> DeviceView:
    rs, device = slice_device(inventory, result.driver, result.pool, result.device)
    class_name, subrequest = _request_class(claim, result.request)
    status = next((d for d in claim.status.devices
                   if (d.driver, d.pool, d.device) == result.device_id and d.share_id == result.share_id), None)
    view = DeviceView(
        request=result.request, driver=result.driver, pool=result.pool, device=result.device,
        share_id=result.share_id, admin_access=result.admin_access,
        consumed_capacity={k: str(v) for k, v in result.consumed_capacity.items()}
        if result.consumed_capacity is not None else None,
        found=device is not None,
        device_class_name=class_name, subrequest=subrequest,
        device_class_found=(inventory.get(DeviceClass, None, class_name) is not None)
        if class_name and "DeviceClass" in inventory.read_kinds else None,
        resource_slice=rs.name if isinstance(rs, ResourceSlice) else None,
        conditions=[{"type": c.type, "status": c.status, "reason": c.reason} for c in status.conditions]
        if status and facts else [],
        network_data=status.network_data.model_dump(by_alias=True, exclude_none=True)
        if status and status.network_data and facts else None,
    )
    if device is not None:
        view.invalid_fields = rs.device_invalid(device)
        if facts:
            view.attributes = {k: a.value for k, a in device.attributes.items()}
            view.capacity = {k: str(c.value) for k, c in device.capacity.items()}
        if not amounts_unknown:
            view.node_allocatable = {k: str(v) for k, v in mapped_amounts(device, result).items()}
        view.node_allocatable_overhead = {
            k: {name: str(q) for name, q in (("perPod", e.overhead.per_pod), ("perContainer", e.overhead.per_container))
                if q is not None}
            for k, e in device.node_allocatable_resources.items() if e.overhead is not None
        }
    return view


def explain_claim(claim: ResourceClaim, inventory: Inventory, *, facts: bool = True) -> ClaimExplanation:
    """``facts=False`` leaves out what only the tree and JSON show of each device (attributes,
    capacity, conditions, network data): the claims list asks every claim for its findings."""
    results = claim.status.allocation.devices.results if claim.status.allocation else []
    amounts_unknown = bool(unknown_inputs(claim, inventory))
    devices = [_device_view(claim, r, inventory, amounts_unknown, facts) for r in results]
    reservations = [resolve(ref, claim, inventory) for ref in claim.status.reserved_for]
    users = consumers(claim, inventory)
    views, node_findings = node_views(claim, inventory)
    taints, taint_findings = claim_taints(claim, inventory)
    for device in devices:
        device.taints = [{k: v for k, v in (("key", t.key), ("value", t.value), ("effect", t.effect),
                                            ("timeAdded", t.time_added), ("source", t.source)) if v}
                         for t in taints.get((device.driver, device.pool, device.device), ())]
    deletion = claim.metadata.deletion_timestamp
    waiting = _unschedulable_consumers(claim, inventory) if claim.status.allocation is None else []
    return ClaimExplanation(
        claim=ClaimRef(namespace=claim.namespace or "", name=claim.name, uid=claim.uid, state=claim.state(),
                       node=claim.node_name, finalizers=claim.metadata.finalizers,
                       deletion_timestamp=deletion.isoformat() if deletion else None),
        devices=devices,
        reserved_for=reservations,
        consumers=users,
        node_view=views,
        findings=claim_findings(claim, devices, reservations, users, inventory) + taint_findings + node_findings
        + waiting,
        problems=[p.message for p in inventory.problems],
    )


def _unschedulable_consumers(claim: ResourceClaim, inventory: Inventory) -> list[Finding]:
    """``Unschedulable`` for each pending pod that waits for this claim, as the scheduler last said."""
    # start-up: pending - a claim not allocated; `claims -o wide` and an allocated claim never load the scheduler
    from kubectl_dra.scheduling.explain import recorded_unschedulable

    found = (recorded_unschedulable(p) for p in inventory.pods_by_claim().get((claim.namespace, claim.name), []))
    return [f for f in found if f is not None]
