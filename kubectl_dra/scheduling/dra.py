"""DynamicResources as a filter (pkg/scheduler/framework/plugins/dynamicresources, v1.37.2):
the claims' allocation on each node, then KEP-5517's node-allocatable check.

PreFilter: no claim → Skip; a class a pending claim asks for does not exist → the pod is refused
everywhere. Filter, per node: a claim allocated elsewhere makes the claim "not available on the
node"; a claim with a mapped device reserved for another consumer cannot be shared; the pending
claims are allocated with this tool's allocator (kubectl_dra/allocation). Where devices declare
node-allocatable resources, the pod's whole demand (its containers, overhead and the DRA amounts)
must fit what the node has left, in cpu, memory, ephemeral-storage and huge pages; that is the
check that refuses a pod for "Insufficient memory" only because of a claim.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubectl_dra.allocatable.entries import compute_entry
from kubectl_dra.allocatable.requests import aggregate, container_dra, dra_total, is_pod_level_resource, pod_requests
from kubectl_dra.allocation.allocator import Allocator
from kubectl_dra.allocation.bound import SearchBound, filter_timeout
from kubectl_dra.allocation.explain import not_on_node, pod_claims, rule_taints, slice_index
from kubectl_dra.allocation.gather import gather
from kubectl_dra.allocation.state import AllocatedState
from kubectl_dra.model.claim import ResourceClaim, is_reserved_for_pod
from kubectl_dra.model.resource import DeviceClass, ResourceSlice
from kubectl_dra.pools.slices import slice_device
from kubectl_dra.scheduling.extended import (SPECIAL_NAME, ExtendedDemand, ExtendedRequest, pod_demand,
                                             is_dra_extended_resource_name, node_claim, on_node)
from kubectl_dra.scheduling.fit import fits_resources, insufficient_status
from kubectl_dra.scheduling.framework import Cycle, Evidence, NodeInfo, Plugin, PreFilterResult, Status
from kubectl_dra.scheduling.resources import to_resource
from kubectl_dra.taints.rules import RuleTaints
from kubectl_dra.versions import SCHEDULER, older

# the scheduler's words (dynamicresources.go, nodeallocatabledynamicresources.go at v1.37.2)
NOT_AVAILABLE = "resourceclaim not available on the node"
CANNOT_ALLOCATE = "cannot allocate all claims"
INVALID_POOLS = "invalid resource pools were encountered"
CLASS_MISSING = "request {request}: device class {klass} does not exist"
MAPPED_SHARED = "node allocatable resource claim {claim} has a mapped device and cannot be shared across pods"
POD_LEVEL_REQUEST = ("pod level request for {resource} is insufficient to cover the aggregated container and "
                     "node-allocatable DRA requests")
POD_LEVEL_HUGEPAGES = ("pod level limit for {resource} is insufficient to cover the aggregated container and "
                       "node-allocatable DRA limits")
POD_LEVEL_LIMIT = "pod level limit for {resource} is insufficient to cover the limit and DRA overhead for container {container}"


@dataclass
class _State:
    claims: list  # every claim of the pod, spec order (a not-yet-created template claim from its template)
    pod_claim_names: dict[str, list[str]]  # claim uid -> pod claim names
    pending: list  # those to allocate
    mapped: dict[str, bool] = field(default_factory=dict)  # claim uid -> an allocated device maps resources
    demand: ExtendedDemand | None = None  # extended resources a DeviceClass provides
    allocated_state: AllocatedState | None = None
    bound: SearchBound | None = None
    rule_taints: RuleTaints | None = None
    index: tuple = ()
    allocators: dict[tuple, Allocator] = field(default_factory=dict)  # the extended claim's requests -> allocator
    outcomes: dict[str, object] = field(default_factory=dict)  # node -> NodeOutcome (for explain's allocation)

    def allocator_for(self, cycle: Cycle, extended: list[ExtendedRequest]) -> Allocator | None:
        """The allocator of the pending claims and, last as the scheduler puts it, this node's
        variant of the claim for extended resources (one per variant: most nodes share one)."""
        if not self.pending and not extended:
            return None
        key = tuple((r.name, r.device_class_name, r.count) for r in extended)
        if key not in self.allocators:
            claims = [*self.pending, node_claim(cycle.pod.pod, extended)] if extended else self.pending
            self.allocators[key] = Allocator(claims, {c.name: c for c in cycle.inventory.all(DeviceClass)},
                                             self.allocated_state, rule_taints=self.rule_taints, bound=self.bound)
        return self.allocators[key]


class DynamicResources(Plugin):
    NAME = "DynamicResources"

    def pre_filter(self, cycle: Cycle) -> PreFilterResult:
        pod = cycle.pod.pod
        inventory = cycle.inventory
        demand, problem = _extended(cycle)
        if problem:
            return PreFilterResult(Status.unknown(problem))
        if not pod.spec.resource_claims and demand is None:
            return PreFilterResult(Status("Skip"))

        pending, allocated, problems = pod_claims(pod, inventory)
        if problems:
            return PreFilterResult(Status.unknown("; ".join(problems)))
        claims = [*allocated, *pending]
        names: dict[str, list[str]] = {}
        for pc in pod.spec.resource_claims:
            name = pod.claim_object_name(pc)
            for claim in claims:
                if claim.name == name or claim.uid == f"template:{pod.uid}:{pc.name}":
                    names.setdefault(claim.uid, []).append(pc.name)
        classes = {c.name for c in inventory.all(DeviceClass)}
        for claim in pending:
            for request in claim.spec.devices.requests:
                variants = [(request.name, request.exactly.device_class_name)] if request.exactly is not None else \
                    [(f"{request.name}/{sub.name}", sub.device_class_name) for sub in request.first_available]
                for qualified, klass in variants:
                    if klass and klass not in classes and "DeviceClass" in inventory.read_kinds:
                        return PreFilterResult(Status.unschedulable(
                            CLASS_MISSING.format(request=qualified, klass=klass), unresolvable=True,
                            evidence=[Evidence(reason=CLASS_MISSING.format(request=qualified, klass=klass),
                                               detail=f"claim {claim.namespace}/{claim.name}")]))
        state = _State(claims=claims, pod_claim_names=names, pending=pending, demand=demand)
        for claim in allocated:
            state.mapped[claim.uid] = _has_mapped_device(claim, inventory)
        if pending or demand is not None:
            skip = {c.uid for c in pending}
            state.allocated_state = AllocatedState.of(inventory.all(ResourceClaim), skip)
            state.bound = cycle.bound or SearchBound(*filter_timeout(cycle.args.get(DynamicResources.NAME) or {},
                                                                     None))
            state.rule_taints = rule_taints(inventory)
            state.index = slice_index(inventory.all(ResourceSlice))
        return PreFilterResult(state=state)

    def filter(self, cycle: Cycle, state: _State | None, node: NodeInfo) -> Status:
        if state is None:
            return Status()

        pod = cycle.pod.pod
        extended = None
        if state.demand is not None:  # filterExtendedResources comes first
            extended = on_node(state.demand, node.allocatable)
            if extended.refusal:
                what = f"resource {extended.refused_resource}: neither on the node nor provided by a DeviceClass" \
                    if extended.refused_resource else f"claim {state.demand.existing.name} from an earlier attempt " \
                    "has requests already; the scheduler deletes it in PostFilter and tries anew"
                return Status.unschedulable(extended.refusal, unresolvable=True,
                                            evidence=[Evidence(reason=extended.refusal, detail=what)])
            if not state.claims and not extended.via_dra:  # served by the node's device plugins
                return Status()
        unavailable = []
        for claim in state.claims:
            if claim.status.allocation is None:
                continue
            if not_on_node(claim, node.node):
                unavailable.append(claim)
                continue
            if state.mapped.get(claim.uid) and claim.status.reserved_for and not is_reserved_for_pod(claim, pod):
                reason = MAPPED_SHARED.format(claim=claim.name)
                return Status.unschedulable(reason, unresolvable=True, evidence=[Evidence(
                    reason=reason, detail=f"reserved for {', '.join(r.name for r in claim.status.reserved_for)}")])
        picks = []
        allocator = state.allocator_for(cycle, extended.requests if extended is not None else [])
        if allocator is not None:
            by_node, shared, by_pool = state.index
            outcome = allocator.allocate(node.node, gather(node.node, [*by_node.get(node.name, ()), *shared], by_pool))
            state.outcomes[node.name] = outcome
            if outcome.undetermined:  # a stopped search (timing) says itself why; anything else cannot be reproduced
                why = outcome.undetermined if outcome.timing else \
                    f"the allocation of the pod's claims cannot be reproduced: {outcome.undetermined}"
                return Status.unknown(why, possible_error=outcome.possible_error)
            if outcome.error == INVALID_POOLS:
                return Status.unschedulable(INVALID_POOLS, unresolvable=True,
                                            evidence=[Evidence(reason=INVALID_POOLS, detail=outcome.error)])
            if outcome.error:
                return Status.error(outcome.error)
            if outcome.possible_error:  # a verdict, but the scheduler may time out before it reaches it
                verdict = "the claims can be allocated here" if outcome.feasible else "no allocation exists here"
                return Status.unknown(f"{verdict}, but the search {outcome.timing.removeprefix('the search ')}",
                                      possible_error=outcome.possible_error)
            if not outcome.feasible:
                return Status.unschedulable(CANNOT_ALLOCATE, unresolvable=True, evidence=[Evidence(
                    reason=CANNOT_ALLOCATE, detail=_why_not(outcome))])
            picks = outcome.results
            mapped = _extended_mapped_device(cycle, picks)
            if mapped:
                return Status.unknown(f"the claim for extended resources gets device {mapped}, which declares "
                                      "node-allocatable resources: what the pod then counts for is not modelled")
        status = _node_allocatable(cycle, state, node, picks)
        if status is not None:
            return status
        if unavailable:
            return Status.unschedulable(NOT_AVAILABLE, unresolvable=True, evidence=[Evidence(
                reason=NOT_AVAILABLE, detail="; ".join(
                    f"claim {c.name} is allocated on {c.status.allocation.node_name() or 'other nodes'}"
                    for c in unavailable))])
        return Status()


def _extended(cycle: Cycle) -> tuple[ExtendedDemand | None, str | None]:
    """``preFilterExtendedResources``: the pod's extended resources a DeviceClass provides (none:
    the scheduler makes no claim for it), or why that cannot be told."""
    pod, inventory = cycle.pod.pod, cycle.inventory
    if older(SCHEDULER, "DRAExtendedResource", cycle.release):  # off: the scheduler makes no claim for them
        return None, None
    asks = [name for c in pod.all_containers() for name, q in c.resources.requests.items()
            if not q.is_zero() and is_dra_extended_resource_name(name)]
    if not asks:
        return None, None
    if "DeviceClass" not in inventory.read_kinds and not inventory.all(DeviceClass):
        return None, (f"whether a DeviceClass provides {asks[0]} through DRA is unknown: DeviceClasses were not "
                      "read")
    demand = pod_demand(pod, inventory)
    if demand is None:
        return None, None
    if demand.undecided:
        return None, (f"whether the scheduler maps {demand.undecided[0]} to its DeviceClass depends on the order it "
                      "saw the classes in: that class lost an extendedResourceName clash to a newer one")
    missing = [kind for kind in ("ResourceSlice", "ResourceClaim") if kind not in inventory.read_kinds]
    if missing:
        return None, (f"the pod asks for {', '.join(sorted(demand.provided()))} through DRA, but "
                      f"{' and '.join(missing)}s were not read")
    return demand, None


def _extended_mapped_device(cycle: Cycle, picks) -> str | None:
    """A device the claim for extended resources gets that declares node-allocatable resources."""
    for p in picks:
        if p.claim.endswith("/" + SPECIAL_NAME):
            _, device = slice_device(cycle.inventory, p.driver, p.pool, p.device)
            if device is not None and device.has_node_allocatable:
                return f"{p.driver}/{p.pool}/{p.device}"
    return None


def _has_mapped_device(claim, inventory) -> bool:
    for result in claim.status.allocation.devices.results:
        _, device = slice_device(inventory, result.driver, result.pool, result.device)
        if device is not None and any(e.mapping is not None for e in device.node_allocatable_resources.values()):
            return True
    return False


def _why_not(outcome) -> str:
    short = [r for r in outcome.requests if r.wanted != "all" and r.wanted.isdigit()
             and len(r.candidates) < int(r.wanted)]
    if short:
        r = short[0]
        reasons = sorted({x.reason for x in r.rejected})
        return (f"request {r.request} of {r.claim} needs {r.wanted} device(s), {len(r.candidates)} qualify"
                + (f" (rejected: {', '.join(reasons)})" if reasons else ""))
    return "no combination of devices satisfies the claims' constraints, counters or capacity together"


def _as_allocated(claim, picks):
    """The claim as it would be after this allocation (what the footprint is computed from)."""
    mine = [p for p in picks if p.claim == f"{claim.namespace}/{claim.name}"]
    if not mine:
        return claim
    data = claim.model_dump(mode="json", by_alias=True, exclude_none=True)
    results = []
    for p in mine:
        result = {"request": p.request, "driver": p.driver, "pool": p.pool, "device": p.device}
        if p.shared:
            result["shareID"] = "00000000-0000-0000-0000-000000000000"
            result["consumedCapacity"] = {k: str(v) for k, v in p.consumed.items()}
        results.append(result)
    data.setdefault("status", {})["allocation"] = {"devices": {"results": results}}
    return ResourceClaim.model_validate(data)


def _node_allocatable(cycle: Cycle, state: _State, node: NodeInfo, picks) -> Status | None:
    """``calculateAndCheckNodeAllocatableResources``: the pod's demand with the DRA amounts its
    claims would get on this node, against what the node has left."""
    pod = cycle.pod.pod
    entries = []
    for claim in state.claims:
        allocated = _as_allocated(claim, picks)
        if allocated.status.allocation is None:
            continue
        entry, _, unknown = compute_entry(pod, allocated, cycle.inventory, state.pod_claim_names.get(claim.uid, []))
        if unknown:
            return Status.unknown(f"claim {claim.name}: its node-allocatable amounts cannot be computed "
                                  f"({'; '.join(unknown)})")
        if entry is not None:
            entries.append(entry)
    if not entries:
        return None
    status = _pod_level_cover(pod, entries)
    if status is not None:
        return status
    demand = to_resource(pod_requests(pod, entries))
    spec = to_resource(pod_requests(pod))
    dra = {name: amount - spec.get(name, 0) for name, amount in demand.items() if amount != spec.get(name, 0)}
    short = fits_resources(demand, node, dra=True)
    if not short:
        return None
    status = insufficient_status(short, plugin=DynamicResources.NAME, overhead=to_resource(pod.spec.overhead), dra=dra)
    for e in status.evidence:
        e.detail = ("the claims' devices map node-allocatable resources (KEP-5517): the scheduler adds them to the "
                    "pod's own requests")
    return status


def _pod_level_cover(pod, entries) -> Status | None:
    """``validatePodLevelResourcesCoverDRA``."""
    plr = pod.spec.resources
    if plr is None:
        return None
    containers = aggregate(pod, lambda c: c.resources.requests)
    for name, q in dra_total(entries).items():
        containers[name] = containers[name] + q if name in containers else q
    for name, q in plr.requests.items():
        if is_pod_level_resource(name) and name in containers and containers[name] > q:
            return Status.unschedulable(POD_LEVEL_REQUEST.format(resource=name), unresolvable=True)
    if plr.limits:
        limits = aggregate(pod, lambda c: c.resources.limits)
        for name, q in dra_total(entries).items():
            if name.startswith("hugepages-"):
                limits[name] = limits[name] + q if name in limits else q
        for name, total in limits.items():
            if name.startswith("hugepages-") and name in plr.limits and total > plr.limits[name]:
                return Status.unschedulable(POD_LEVEL_HUGEPAGES.format(resource=name), unresolvable=True)
        for container in pod.spec.containers:
            dra = container_dra(entries, container.name)
            for name, limit in container.resources.limits.items():
                if name.startswith("hugepages-") or name not in plr.limits:
                    continue
                effective = limit + dra[name] if name in dra else limit
                if effective > plr.limits[name]:
                    return Status.unschedulable(POD_LEVEL_LIMIT.format(resource=name, container=container.name),
                                                unresolvable=True)
    return None
