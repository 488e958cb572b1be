"""Why a claim or an unbound pod cannot be allocated: the allocation for every node (or one),
the document of docs/contracts.md §3.9 "Allocation", and the findings that say the next step."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable

from kubectl_dra.allocation.allocator import AllocatedState, Allocator, NodeOutcome
from kubectl_dra.allocation.bound import SearchBound
from kubectl_dra.allocation.gather import gather
from kubectl_dra.allocation.document import Allocation, NodeAllocation, RejectedDevice, RequestView, ResultView
from kubectl_dra.document import Finding
from kubectl_dra.model.base import InvalidField
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.claim import ResourceClaim, ResourceClaimTemplate
from kubectl_dra.model.resource import DeviceClass, DeviceTaintRule, ResourceSlice
from kubectl_dra.pools.nodeselector import NodeSelectorError, node_selector_matches
from kubectl_dra.taints.explain import device_taints
from kubectl_dra.taints.rules import RuleTaints, split_rules


def template_claim(pod: Pod, pod_claim_name: str, template: ResourceClaimTemplate) -> ResourceClaim:
    """The claim the resourceclaim controller would create from a template, before it exists; the
    template's fields that did not validate are the claim's (what depends on them stays unknown)."""
    claim = ResourceClaim.model_validate({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": f"{pod.name}-{pod_claim_name}-<template>", "namespace": pod.namespace,
                     "uid": f"template:{pod.uid}:{pod_claim_name}"},
        "spec": template.spec.spec.model_dump(mode="json", by_alias=True, exclude_none=True)})
    invalid = tuple(InvalidField(f.path.removeprefix("spec."), f.reason) for f in template.invalid_fields
                    if f.path.startswith("spec.spec."))
    if invalid:
        object.__setattr__(claim, "_invalid", invalid)
    return claim


def pod_claims(pod: Pod, inventory: Inventory) -> tuple[list[ResourceClaim], list[ResourceClaim], list[str]]:
    """(claims to allocate, already-allocated claims, problems), in ``spec.resourceClaims`` order as
    the scheduler takes them; template claims not made yet come from their template."""
    pending, allocated, problems = [], [], []
    for pc in pod.spec.resource_claims:
        name = pod.claim_object_name(pc)
        claim = inventory.get(ResourceClaim, pod.namespace, name) if name else None
        if claim is None and pc.resource_claim_template_name and not name:
            template = inventory.get(ResourceClaimTemplate, pod.namespace, pc.resource_claim_template_name)
            if template is None:
                problems.append(f"pod claim {pc.name}: ResourceClaimTemplate {pod.namespace}/"
                                f"{pc.resource_claim_template_name} not found")
                continue
            claim = template_claim(pod, pc.name, template)
        elif claim is None:
            problems.append(f"pod claim {pc.name}: ResourceClaim {pod.namespace}/{name} not found")
            continue
        (allocated if claim.status.allocation is not None else pending).append(claim)
    return pending, allocated, problems


def slice_index(slices: list[ResourceSlice]):
    by_node: dict[str, list[ResourceSlice]] = {}
    shared: list[ResourceSlice] = []
    by_pool: dict[tuple[str, str], list[ResourceSlice]] = {}
    for rs in slices:
        (by_node.setdefault(rs.spec.node_name, []) if rs.spec.node_name else shared).append(rs)
        by_pool.setdefault((rs.spec.driver, rs.spec.pool.name), []).append(rs)
    return by_node, shared, by_pool


def rule_taints(inventory: Inventory) -> RuleTaints:
    """DeviceTaintRule taints that keep new allocations off, per selected device: the same matching
    ``taints`` uses (the driver's own taints are on the devices already); and the rules that cannot
    be evaluated, whose devices the allocator calls undetermined (taints/rules.py)."""
    applied, unevaluated = split_rules(inventory.all(DeviceTaintRule), allocation=True)
    rules = [r for r in applied if r.spec.taint.effect in ("NoSchedule", "NoExecute")]
    if not rules:
        return RuleTaints(unevaluated=unevaluated)
    out: dict = {}
    for key, taints in device_taints(inventory, rules, datetime.now(timezone.utc)).items():
        out[key] = [t for t in taints if t.source != "slice"]
    return RuleTaints({key: taints for key, taints in out.items() if taints}, unevaluated)


def not_on_node(claim: ResourceClaim, node: Node) -> bool:
    selector = claim.status.allocation.node_selector if claim.status.allocation else None
    if not selector:
        return False
    try:
        return not node_selector_matches(selector, node.name, node.metadata.labels)
    except NodeSelectorError:
        return True


def explain_allocation(claims: list[ResourceClaim], inventory: Inventory, *, allocated: list[ResourceClaim] = (),
                       only_node: str | None = None, keep_infeasible: int = 8,
                       state: AllocatedState | None = None, bound: SearchBound | None = None,
                       first: frozenset[str] = frozenset(),
                       extended: Callable[[Node], list[ResourceClaim] | str | None] | None = None) -> Allocation:
    """Allocate ``claims`` together on every node (or ``only_node``), as the scheduler's Filter
    would; ``allocated``: the pod's claims that already have an allocation (the node must be theirs);
    ``state``: what every claim holds, when the claims are not in ``inventory`` (a streamed list);
    ``bound``: how long each node's search may run (the scheduler's filterTimeout by default);
    ``first``: nodes to show first among those that cannot take the claims (when only
    ``keep_infeasible`` of them are shown: for a pod, the nodes no other filter refuses);
    ``extended(node)``: the scheduler's claim for extended resources on that node (it differs by
    node: only what the node does not advertise goes through DRA), or why the node is refused; ``None``:
    the node serves them all from its allocatable (a node with no claim to allocate is left out)."""
    classes = {c.name: c for c in inventory.all(DeviceClass)}
    skip = {c.uid for c in claims}
    state = state or AllocatedState.of(inventory.all(ResourceClaim), skip)
    by_node, shared, by_pool = slice_index(inventory.all(ResourceSlice))
    nodes = sorted(inventory.all(Node), key=lambda n: n.name)
    if only_node is not None:
        nodes = [n for n in nodes if n.name == only_node]
    taints = rule_taints(inventory)
    allocators: dict[tuple, Allocator] = {}
    together: set[str] = set()
    skipped = 0  # nodes with nothing to allocate: their device plugins serve the extended resources
    views: list[NodeAllocation] = []
    for node in nodes:
        elsewhere = [c for c in allocated if not_on_node(c, node)]
        if elsewhere:
            views.append(NodeAllocation(node=node.name, feasible=False, message="; ".join(
                f"resourceclaim {c.namespace}/{c.name} is allocated on another node (not available on this one)"
                for c in elsewhere)))
            continue
        extra = extended(node) if extended is not None else []
        if isinstance(extra, str):
            views.append(NodeAllocation(node=node.name, feasible=False, message=extra))
            continue
        if extra is None:
            if not claims and not allocated:
                skipped += 1
                continue
            extra = []
        here = [*claims, *extra]
        if not here:
            views.append(NodeAllocation(node=node.name, feasible=True))
            continue
        together.update(f"{c.namespace}/{c.name}" for c in extra)
        key = tuple((r.name, r.exactly.device_class_name, r.exactly.count) for c in extra
                    for r in c.spec.devices.requests)
        if key not in allocators:
            allocators[key] = Allocator(here, classes, state, rule_taints=taints, bound=bound)
        gathered = gather(node, [*by_node.get(node.name, ()), *shared], by_pool)
        views.append(node_allocation(allocators[key].allocate(node, gathered)))
    result = Allocation(claims=[f"{c.namespace}/{c.name}" for c in claims] + sorted(together),
                        nodes_checked=len(nodes) - skipped)
    result.feasible_nodes = [v.node for v in views if v.feasible]
    # of the nodes that cannot take the claims, those the pod could go to otherwise (``first``) come first
    shown = [v for v in views if v.feasible] + sorted((v for v in views if not v.feasible),
                                                      key=lambda v: v.node not in first)
    if only_node is None and len(shown) > keep_infeasible + len(result.feasible_nodes):
        result.omitted_nodes = len(shown) - keep_infeasible - len(result.feasible_nodes)
        shown = shown[:keep_infeasible + len(result.feasible_nodes)]
    result.nodes = shown
    return result


def node_allocation(outcome: NodeOutcome) -> NodeAllocation:
    """The allocator's outcome on one node as the document shows it, with the one-line reason it fails."""
    view = NodeAllocation(node=outcome.node, feasible=outcome.feasible, error=outcome.error,
                          undetermined=outcome.undetermined, possible_error=outcome.possible_error, timing=outcome.timing)
    view.results = [ResultView(claim=p.claim, request=p.request, driver=p.driver, pool=p.pool, device=p.device)
                    for p in outcome.results]
    view.requests = [RequestView(claim=r.claim, request=r.request, wanted=r.wanted, candidates=list(r.candidates),
                                 rejected=[RejectedDevice(device=x.device, reason=x.reason, message=x.message)
                                           for x in r.rejected]) for r in outcome.requests]
    if outcome.feasible:
        return view
    if outcome.undetermined:
        view.message = f"kubectl-dra cannot tell: {outcome.undetermined}"
    elif outcome.error:
        view.message = f"the scheduler fails on this node with an error: {outcome.error}"
    else:
        short = [r for r in view.requests if r.wanted != "all" and len(r.candidates) < int(r.wanted)]
        if short:
            r = short[0]
            view.message = (f"request {r.request} of {r.claim} needs {r.wanted}, "
                            f"{len(r.candidates)} device{'' if len(r.candidates) == 1 else 's'} qualif"
                            f"{'ies' if len(r.candidates) == 1 else 'y'}")
        else:
            view.message = "every request has candidates, but no combination satisfies the claims' constraints, " \
                           "shared counters or capacity together"
    return view


def wants_proposals(allocation: Allocation, only_node: str | None) -> bool:
    """Karpenter's proposals answer "no node fits"; with ``--node`` the question is that one node."""
    return not allocation.feasible_nodes and only_node is None


def allocation_findings(allocation: Allocation, nominated: str | None = None) -> list[Finding]:
    """``Unsatisfiable`` when no node can take the claims now (with the most telling reasons), and
    ``UnsatisfiableOnNode`` when the nominated node cannot."""
    findings = []
    if nominated:
        node = next((n for n in allocation.nodes if n.node == nominated), None)
        if node is not None and not node.feasible:
            findings.append(Finding(code="UnsatisfiableOnNode", severity="error",
                                    message=f"nominated node {nominated} cannot take the claims: {node.message}"))
    unknown = [n for n in allocation.nodes if n.undetermined]
    if unknown:
        findings.append(Finding(code="AllocationUnknown", severity="warning",
                                message=f"on {len(unknown)} node(s) kubectl-dra cannot reproduce the allocation: "
                                        f"{unknown[0].undetermined}; no verdict is given for them"))
        return findings
    slow = [n for n in allocation.nodes if n.timing]
    if slow:
        findings.append(Finding(code="AllocationSearchSlow", severity="warning",
                                message=f"on {len(slow)} node(s) the scheduler's allocation search may run past its "
                                        f"filterTimeout ({slow[0].node}: {slow[0].timing}). Next: fewer devices per "
                                        "request, narrower selectors or requests that can be met make the search "
                                        "short; or raise filterTimeout"))
    if allocation.nodes_checked and not allocation.feasible_nodes:
        reasons: dict[str, int] = {}
        for node in allocation.nodes:
            for request in node.requests:
                for rejected in request.rejected:
                    reasons[rejected.reason] = reasons.get(rejected.reason, 0) + 1
        errors = [n for n in allocation.nodes if n.error]
        message = f"no node of {allocation.nodes_checked} can allocate {', '.join(allocation.claims)} now"
        if errors:
            message += f"; on {len(errors)} the scheduler fails with an error ({errors[0].error})"
        if reasons:
            top = sorted(reasons.items(), key=lambda kv: -kv[1])[:3]
            message += "; devices rejected: " + ", ".join(f"{reason} x{n}" for reason, n in top)
        message += ". " + _next_step(allocation, reasons)
        fits = [p for p in allocation.proposals if p.feasible]
        if fits:
            message += (" A node Karpenter could launch would fit (predicted slices, a proposal): "
                        + ", ".join(f"NodePool {p.node_pool}, instance type {p.instance_type}" for p in fits[:3]) + ".")
        findings.append(Finding(code="Unsatisfiable", severity="error", message=message))
    return findings


_SELECTION = ("DeviceClassSelector", "RequestSelector", "NodeSelection")
_STEPS = {  # for devices the claims would take but cannot have now, closest first
    "Taint": "{message} on {devices}: repair the device (the driver lifts its own taint) or, if the taint is "
             "expected, add a matching toleration to the request",
    "Capacity": "{devices} {verb} no capacity left for the request ({message}): ask for less, or wait for a holder "
                "to finish",
    "Counters": "{devices} {verb} part of a partitionable device whose shared counters other partitions use up",
    "AlreadyAllocated": "{devices} {verb} {message}: freed when the pods using those claims finish (or are "
                        "deleted); or add devices",
    "AdminAccess": "{devices}: {message}",
    "BindingConditions": "{devices}: {message}",
    "PoolIncomplete": "pool {devices} is still being published by its driver: wait, or check the driver",
    "PoolStale": "pool {devices} is being replaced by its driver (a newer generation exists): wait, or check the driver",
    "PoolInvalid": "pool {devices} is invalid ({message}): fix the driver's ResourceSlices",
}


def _next_step(allocation: Allocation, reasons: dict[str, int]) -> str:
    """What to change, from the devices that pass the selectors but cannot be had now; when there
    are none, the selector that matches nothing."""
    if not reasons:
        return "Next: no driver publishes devices for these nodes (no ResourceSlice reaches them)."
    rejected = [x for n in allocation.nodes for r in n.requests for x in r.rejected]
    blockers = [x for x in rejected if x.reason not in _SELECTION]
    if blockers:
        steps = []
        for reason in _STEPS:
            hits = [x for x in blockers if x.reason == reason]
            if not hits:
                continue
            devices = sorted({x.device for x in hits})
            shown = ", ".join(devices[:3]) + (f" and {len(devices) - 3} more" if len(devices) > 3 else "")
            message = hits[0].message
            if reason == "AlreadyAllocated":
                holders = sorted({x.message.removeprefix("allocated to claim ") for x in hits})
                message = f"allocated to {'claim' if len(holders) == 1 else 'claims'} " + ", ".join(holders[:3]) + (
                    f" and {len(holders) - 3} more" if len(holders) > 3 else "")
            steps.append(_STEPS[reason].format(devices=shown, message=message,
                                               verb="is" if len(devices) == 1 else "are"))
        return "Next: " + "; ".join(steps) + "."
    request = next((x for x in rejected if x.reason == "RequestSelector"), None)
    if request is not None:
        return f"Next: no device matches the claim's selector ({request.message}); change the selector or add " \
               "devices that match it."
    klass = next((x for x in rejected if x.reason == "DeviceClassSelector"), None)
    if klass is not None:
        return f"Next: no device matches the DeviceClass ({klass.message}); check the class and the drivers."
    return "Next: the devices are not reachable from these nodes (their node selection excludes them)."


def waiting_findings(allocation: Allocation, waiting: list[Pod], known: list[Finding]) -> list[Finding]:
    """The findings of a pending claim's allocation that ``known`` lacks (by code), for each node the
    pods that wait for it were nominated to (none nominated: any node). No pod waiting, no verdict:
    nothing asks the scheduler to allocate the claim then."""
    found: list[Finding] = []
    for nominated in sorted({p.status.nominated_node_name for p in waiting}, key=lambda n: n or ""):
        codes = {f.code for f in [*known, *found]}
        found += [f for f in allocation_findings(allocation, nominated) if f.code not in codes]
    return found
