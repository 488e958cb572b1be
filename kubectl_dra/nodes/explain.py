"""``kubectl dra explain node``: devices, allocations, DRA totals, and overlay predictions vs reality."""
from __future__ import annotations

import re
from kubectl_dra.allocatable.entries import from_status
from kubectl_dra.allocatable.requests import add_into, difference, pod_requests
from kubectl_dra.document import Finding
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.karpenter import NodeClaim, NodeOverlay, NodePool
from kubectl_dra.model.node import Node
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.model.resource import ResourceSlice
from kubectl_dra.overlays.explain import evaluate, slices_for_node
from kubectl_dra.overlays.templates import compare_slices
from kubectl_dra.pools.slices import for_node
from kubectl_dra.quantity import Quantity
from kubectl_dra.verify.crosscheck import pods_on
from kubectl_dra.nodes.document import ClaimOnNode, DeviceSummary, NodeExplanation, NodeRef, PodOnNode, SliceSummary

NODEPOOL_LABEL = "karpenter.sh/nodepool"
TYPE_LABEL = "node.kubernetes.io/instance-type"


def _reached_by(rs: ResourceSlice, node_name: str) -> str:
    spec = rs.spec
    if spec.node_name:
        return "nodeName"
    if spec.all_nodes:
        return "allNodes"
    return "nodeSelector" if spec.node_selector is not None else "perDeviceNodeSelection"


def explain_node(node: Node, inventory: Inventory, instance_types, gate_enabled: bool | None) -> NodeExplanation:
    findings: list[Finding] = []
    ref = f"node/{node.name}"
    labels = node.metadata.labels
    pool, itype = labels.get(NODEPOOL_LABEL), labels.get(TYPE_LABEL)
    reachable = for_node(inventory.all(ResourceSlice), node.name, labels)
    for problem in reachable.problems:
        findings.append(Finding(code="NodeSelectionInvalid", severity="warning", object=ref, message=problem))
    device_ids = {(rs.spec.driver, rs.spec.pool.name, d.name) for rs, d in reachable.devices()}
    holders: dict[tuple[str, str, str], list[str]] = {}
    claims = []
    for claim in inventory.all(ResourceClaim):
        results = claim.status.allocation.devices.results if claim.status.allocation else []
        if claim.node_name == node.name or any(r.device_id in device_ids for r in results):
            claims.append(claim)
            for r in results:
                holders.setdefault(r.device_id, []).append(claim.key)
    slices = [rs for rs, _ in reachable.slices]
    slice_views = []
    for rs, reached in sorted(reachable.slices, key=lambda item: (item[0].spec.driver, item[0].name)):
        devices = []
        for device in reached:
            nar = {k: {n: str(q) for n, q in (("capacityKey", e.mapping.capacity_key if e.mapping else None),
                                               ("capacityMultiplier", e.mapping.capacity_multiplier if e.mapping else None),
                                               ("deviceMultiplier", e.mapping.device_multiplier if e.mapping else None),
                                               ("perPod", e.overhead.per_pod if e.overhead else None),
                                               ("perContainer", e.overhead.per_container if e.overhead else None))
                       if q is not None} for k, e in device.node_allocatable_resources.items()}
            devices.append(DeviceSummary(name=device.name, node_allocatable=nar,
                                         allocated_to=holders.get((rs.spec.driver, rs.spec.pool.name, device.name), [])))
        slice_views.append(SliceSummary(name=rs.name, driver=rs.spec.driver, pool=rs.spec.pool.name, devices=devices,
                                        reached_by=_reached_by(rs, node.name)))

    pods = pods_on(inventory, node.name)
    pod_views, requested, dra_total, unknown = [], {}, {}, []
    for pod in pods:
        invalid = pod.invalid_resource_fields()
        if invalid:
            unknown.append(pod.key)
            pod_views.append(PodOnNode(namespace=pod.namespace or "", name=pod.name, requests={},
                                       unknown=f"invalid field {', '.join(invalid)}"))
            continue
        entries = [from_status(s) for s in pod.status.node_allocatable_resource_claim_statuses]
        with_dra, spec = pod_requests(pod, entries), pod_requests(pod)
        dra = difference(with_dra, spec)
        add_into(requested, with_dra)
        add_into(dra_total, dra)
        pod_views.append(PodOnNode(namespace=pod.namespace or "", name=pod.name,
                                   requests={k: str(v) for k, v in sorted(with_dra.items())},
                                   dra={k: str(v) for k, v in sorted(dra.items())}))
    if pods:  # every pod takes one of the node's pod slots, whatever it requests
        requested["pods"] = Quantity.from_int(len(pods))
    if unknown:
        findings.append(Finding(code="PodRequestsUnknown", severity="warning", object=ref,
                                message=f"the requests of {', '.join(unknown)} are unknown (an invalid field, see "
                                        "the problems on stderr): the totals below leave them out, so free is an "
                                        "upper bound"))
    free = {}
    for name, amount in node.status.allocatable.items():
        left = amount - requested.get(name, Quantity.parse("0"))
        free[name] = str(left)
        if left.sign() < 0:
            findings.append(Finding(code="NodeOvercommitted", severity="error", object=ref,
                                    message=f"pods request {requested[name]} {name} (incl. DRA) but the node has "
                                            f"{amount} allocatable"))

    claim_views = [ClaimOnNode(namespace=c.namespace or "", name=c.name,
                               devices=[f"{r.driver}/{r.pool}/{r.device}" for r in c.status.allocation.devices.results],
                               pods=sorted(p.key for p in inventory.pods_by_claim().get((c.namespace, c.name), [])))
                   for c in sorted(claims, key=lambda c: (c.namespace or "", c.name))]

    overlays_view, predicted, view = [], [], None
    if pool and itype:
        result = evaluate(inventory.all(NodeOverlay), inventory.all(NodePool), instance_types,
                          gate_enabled=gate_enabled)
        for o in result.overlays:
            if any(m.node_pool == pool and m.instance_type == itype for m in o.matches):
                overlays_view.append({"name": o.name, "weight": o.weight, "status": o.status, "sets": o.sets})
        view = next((it for it in result.instance_types if it.node_pool == pool and it.name == itype), None)
        if view is None:
            findings.append(Finding(code="InstanceTypeUnknown", severity="info", object=ref,
                                    message=f"{pool} x {itype} is not in the instance types evaluated (no catalog entry"
                                            "), so overlay predictions cannot be compared"))
        else:
            for key, overlay in view.capacity_overlays.items():
                if key not in node.status.capacity or node.status.capacity[key].is_zero():
                    findings.append(Finding(code="OverlayPredictionMismatch", severity="warning", object=ref,
                                            message=f"overlay {overlay} promised {key}={view.capacity[key]} for "
                                                    f"{pool} x {itype}, but the node has no {key}"))
                elif str(node.status.capacity[key]) != view.capacity[key]:
                    findings.append(Finding(code="OverlayPredictionMismatch", severity="warning", object=ref,
                                            message=f"overlay {overlay} promised {key}={view.capacity[key]}, the node "
                                                    f"has {node.status.capacity[key]}"))
        predicted = slices_for_node(inventory.all(NodeOverlay), inventory.all(NodePool), instance_types,
                                    nodepool=pool, instance_type=itype, node_name=node.name, node_labels=labels,
                                    gate_enabled=gate_enabled)
        for mismatch in compare_slices(predicted, slices) if predicted else []:
            findings.append(Finding(code="OverlayPredictionMismatch", severity="warning", object=ref,
                                    message=f"(proposal) predicted ResourceSlices vs published: {mismatch}"))
    findings += _nodeclaim_findings(node, inventory, pool, itype, view if pool and itype else None, predicted, slices)
    return NodeExplanation(
        node=NodeRef(name=node.name, node_pool=pool, instance_type=itype,
                     zone=labels.get("topology.kubernetes.io/zone"),
                     capacity={k: str(v) for k, v in sorted(node.status.capacity.items())},
                     allocatable={k: str(v) for k, v in sorted(node.status.allocatable.items())}),
        resource_slices=slice_views, claims=claim_views, pods=pod_views,
        requested={k: str(v) for k, v in sorted(requested.items())},
        dra={k: str(v) for k, v in sorted(dra_total.items())}, free=dict(sorted(free.items())),
        overlays=overlays_view, predicted_resource_slices=predicted, findings=findings,
        problems=[p.message for p in inventory.problems])


_NOT_REGISTERED = re.compile(r'Resource "([^"]+)" was requested but not registered')
_NOT_PUBLISHED = re.compile(r'DRA driver "([^"]+)" has not published a complete resource pool')


def _nodeclaim_findings(node: Node, inventory: Inventory, pool: str | None, itype: str | None, view, predicted,
                        slices) -> list[Finding]:
    """Why Karpenter has not initialized the node (its NodeClaim's ``Initialized=Unknown``), traced to the
    overlay and the NodePool behind the missing resource or DRA pool."""
    claim = next((c for c in inventory.all(NodeClaim) if c.status.node_name == node.name), None)
    if claim is None:
        return []
    condition = next((c for c in claim.status.conditions if c.type == "Initialized"), None)
    if condition is None or condition.status != "Unknown":
        return []
    ref, where = f"nodeclaim/{claim.name}", f"NodePool {pool or '<unknown>'}, instance type {itype or '<unknown>'}"
    if condition.reason == "ResourceNotRegistered":
        match = _NOT_REGISTERED.search(condition.message or "")
        resource = match.group(1) if match else "<unknown>"
        overlay = (view.capacity_overlays.get(resource) if view is not None else None)
        promised = f"; overlay {overlay} promised {resource}={view.capacity.get(resource)} for {where}" if overlay else \
            f" ({where}; no NodeOverlay promised it)"
        return [Finding(code="ResourceNotRegistered", severity="error", object=ref, message=(
            f"Karpenter has not initialized node {node.name} (NodeClaim {claim.name}: Initialized=Unknown, "
            f"ResourceNotRegistered): {resource} was requested for it but node.status.allocatable has none{promised}. "
            f"Next: check the device plugin or driver that provides {resource} on this node"
            + (f"; if {overlay}'s capacity is wrong for this instance type, fix or remove that overlay" if overlay
               else "") + "; pods waiting for it stay pending until then"))]
    if condition.reason == "DRADriverPoolsNotPublished":
        match = _NOT_PUBLISHED.search(condition.message or "")
        driver = match.group(1) if match else "<unknown>"
        expected = sorted({(s.get("pool") or {}).get("name") or node.name for s in predicted if s.get("driver") == driver})
        overlays = sorted({s.get("overlay") for s in predicted if s.get("driver") == driver and s.get("overlay")})
        published = sorted({f"{rs.spec.pool.name} (generation {rs.spec.pool.generation}, "
                            f"{sum(1 for x in slices if x.spec.driver == driver and x.spec.pool.name == rs.spec.pool.name)}"
                            f"/{rs.spec.pool.resource_slice_count} slices)" for rs in slices if rs.spec.driver == driver})
        return [Finding(code="DRADriverPoolsNotPublished", severity="error", object=ref, message=(
            f"Karpenter has not initialized node {node.name} (NodeClaim {claim.name}: Initialized=Unknown, "
            f"DRADriverPoolsNotPublished): DRA driver {driver} has no complete resource pool on it "
            f"({where}); " + (f"predicted pools {', '.join(expected)} from overlay {', '.join(overlays)}; " if expected
                              else "no overlay predicts its pools; ")
            + (f"published: {', '.join(published)}" if published else "published: none")
            + f". Next: check that {driver}'s kubelet plugin runs on the node and publishes every slice of its pool"))]
    return []
