"""What Karpenter would launch for a pod that no node can take, read in sigs.k8s.io/karpenter v1.14.1
and checked against the real controller (docs/kubernetes/nodeoverlay.md §8):

- NodePools in ``OrderByWeight`` order (weight descending, ties by name descending); the first that
  can launch is the one used.
- A NodePool whose template taints the pod does not tolerate, or whose requirements (template
  requirements and labels, ``karpenter.sh/nodepool``) the pod's node selector and first required
  node-affinity term cannot meet (``Compatible``, undefined well-known keys allowed), is refused.
- An instance type stays when its requirements intersect the combined ones, the requests (the
  pod's, plus ``pods: 1``) fit its capacity after overlays minus its overhead
  (``resources.Fits``), and one available offering is compatible
  (``filterInstanceTypesByRequirements``); kept cheapest first by the price after overlays
  (``OrderByPrice``), at most 600 (``MaxInstanceTypes``).
- The node the provider launches is its choice among them: the kwok provider takes the cheapest
  offering by its own price (``toNode``), never the overlay's. Karpenter counts the overlay's price
  for it (``karpenter_nodepools_cost_total``).
"""

from __future__ import annotations

from kubectl_dra.document import Finding
from kubectl_dra.model.karpenter import NodePool, order_by_weight
from kubectl_dra.model.node import Taint
from kubectl_dra.model.pod import Pod
from kubectl_dra.overlays.catalog import InstanceType
from kubectl_dra.overlays.document import (InstanceTypeView, KarpenterLaunch, LaunchInstanceType, LaunchOffering,
                                           LaunchRejection, NodePoolLaunch)
from kubectl_dra.overlays.requirements import IN, NODEPOOL, WELL_KNOWN_LABELS, Requirement, Requirements
from kubectl_dra.quantity import Quantity
from kubectl_dra.scheduling.resources import spec_pod_requests
from kubectl_dra.scheduling.tainttoleration import tolerating

KARPENTER_SKIPS_DRA = ("Failed to schedule pod, pod has Dynamic Resource Allocation requirements that are not yet "
                       "supported by Karpenter")  # its event (scheduling/scheduler.go, events.go)
IGNORE_DRA_ASSUMED = "Karpenter's IGNORE_DRA_REQUESTS at its default, true"
MAX_INSTANCE_TYPES = 600  # pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go
ASSUMPTIONS = (
    "DaemonSet pods are not counted: Karpenter adds the requests of those that would run on the node",
    "NodePool limits, NodeClass readiness and nodes already launching are not checked",
)


def pod_requirements(pod: Pod) -> Requirements:
    """``NewPodRequirements``: the node selector and the first required node-affinity term."""
    reqs = Requirements.from_labels(pod.spec.node_selector)
    affinity = pod.spec.affinity.node_affinity if pod.spec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    if required and required.node_selector_terms:
        reqs.add(*Requirements.from_selector(required.node_selector_terms[0].match_expressions))
    return reqs


def launch_requests(pod: Pod) -> dict[str, Quantity]:
    """What the NodeClaim requests for one pod: its requests (init containers, sidecars, overhead
    as ``resources.Ceiling``) and one pod."""
    requests = {name: q for name, q in spec_pod_requests(pod).items() if not q.is_zero()}
    requests["pods"] = Quantity.from_int(1)
    return requests


def _shortfall(requests: dict[str, Quantity], view: InstanceTypeView, it: InstanceType) -> str | None:
    """``resources.Fits`` against capacity after overlays minus overhead: the first request over."""
    for name, wanted in sorted(requests.items()):
        capacity = view.capacity.get(name)
        allocatable = Quantity.parse(capacity) if capacity is not None else Quantity.from_int(0)
        if name in it.overhead:
            allocatable = allocatable - it.overhead[name]
        if wanted > allocatable:
            have = f"allocatable {allocatable}" if capacity is not None else "no such capacity"
            return f"{name}: needs {wanted}, {have}"
    return None


def _offerings(view: InstanceTypeView, it: InstanceType, combined: Requirements) -> list[LaunchOffering]:
    out = []
    for offering, priced in zip(it.offerings, view.offerings):
        if offering.available and combined.compatible(offering.requirement_set(), strict=False):
            out.append(LaunchOffering(instance_type=view.name, zone=priced.zone, capacity_type=priced.capacity_type,
                                      base_price=priced.base_price, price=priced.price, overlay=priced.overlay))
    return out


def _cheapest(offerings: list[LaunchOffering], key) -> list[LaunchOffering]:
    priced = [o for o in offerings if key(o) is not None]
    if not priced or len(priced) < len(offerings):
        return []  # a price unknown: no claim about which is cheapest
    low = min(key(o) for o in priced)
    return [o for o in priced if key(o) == low]


def _pool(pool: NodePool, pod: Pod, podreqs: Requirements, requests: dict[str, Quantity],
          views: list[tuple[InstanceTypeView, InstanceType]], well_known: frozenset[str]) -> NodePoolLaunch:
    out = NodePoolLaunch(name=pool.name, weight=pool.spec.weight,
                         requests={k: str(v) for k, v in sorted(requests.items())})
    template = pool.spec.template
    for raw in template.spec.taints:
        taint = Taint.model_validate(raw)
        if taint.effect in ("NoSchedule", "NoExecute") and tolerating(pod.spec.tolerations, taint) is None:
            out.refused = f"the pod does not tolerate the NodePool's taint {taint}"
            return out
    reqs = Requirements([Requirement.of(NODEPOOL, IN, (pool.name,))])
    reqs.add(*Requirements.from_labels(template.metadata.labels))
    reqs.add(*Requirements.from_selector(template.spec.requirements))
    problem = reqs.incompatibility(podreqs, well_known)
    if problem:
        out.refused = f"the pod's node selector or affinity does not match the NodePool: {problem}"
        return out
    combined = reqs.intersection(podreqs)
    kept: list[tuple[LaunchInstanceType, list[LaunchOffering], InstanceTypeView]] = []
    for view, it in views:
        if view.node_pool != pool.name:
            continue
        conflict = it.requirement_set().conflict(combined)  # filterInstanceTypesByRequirements' compatible
        reason = f"{conflict[0].key}: {conflict[1]} is not {conflict[0]}" if conflict else None
        offerings = [] if reason else _offerings(view, it, combined)
        if reason is None and not offerings:
            reason = "no available offering meets the requirements"
        reason = reason or _shortfall(requests, view, it)
        if reason:
            out.rejected.append(LaunchRejection(name=view.name, reason=reason))
            continue
        cheapest = _cheapest(offerings, lambda o: o.price)
        price = cheapest[0].price if cheapest else None
        kept.append((LaunchInstanceType(name=view.name, price=price,
                                        overlay=cheapest[0].overlay if cheapest else None), offerings, view))
    # OrderByPrice (a stable sort; an unknown price sorts last, as MaxFloat64 does)
    kept.sort(key=lambda k: float("inf") if k[0].price is None else k[0].price)
    kept = kept[:MAX_INSTANCE_TYPES]
    out.instance_types = [k[0] for k in kept]
    out.provider_pick = _cheapest([o for k in kept for o in k[1]], lambda o: o.base_price)
    for name in requests:
        givers = sorted({view.capacity_overlays[name] for _, _, view in kept if name in view.capacity_overlays})
        if givers:
            out.capacity_from_overlays[name] = givers
    if not out.instance_types:
        out.refused = "no instance type meets the requirements and fits the requests"
    return out


def predict_launch(pod: Pod, pools: list[NodePool], views: list[InstanceTypeView],
                   instance_types: list[InstanceType]) -> KarpenterLaunch:
    """Every NodePool's answer for ``pod`` and the one Karpenter uses. ``views`` are the overlay
    evaluation's instance types (capacity and prices after overlays), ``instance_types`` the
    catalog they came from. A pod with claims: :func:`dra_answer`."""
    by_name = {it.name: it for it in instance_types}
    paired = [(v, by_name[v.name]) for v in views if v.name in by_name]
    podreqs, requests = pod_requirements(pod), launch_requests(pod)
    result = KarpenterLaunch(assumptions=list(ASSUMPTIONS))
    # a provider registers its instance-type labels as well-known (kwok: apis/v1alpha1/labels.go), so a
    # pod may select them though no NodePool names them
    well_known = WELL_KNOWN_LABELS.union(*(it.requirement_set().keys() for it in instance_types))
    for pool in order_by_weight(pools):
        launch = _pool(pool, pod, podreqs, requests, paired, well_known)
        result.node_pools.append(launch)
        if result.node_pool is None and launch.refused is None:
            result.node_pool = pool.name
    result.message = _message(result)
    return result


def has_claims(pod: Pod) -> bool:
    """``HasDRARequirements``: pod claims, or a container's ``resources.claims``."""
    return bool(pod.spec.resource_claims) or any(c.resources.claims for c in [*pod.spec.init_containers,
                                                                               *pod.spec.containers])


def dra_answer(ignore_dra_requests: bool | None) -> KarpenterLaunch:
    """Karpenter's answer for a pod with claims. At its default (``ignore_dra_requests`` None or
    True): no NodeClaim, and its event. With False it allocates the claims against the slices its
    cloud provider says each instance type will publish (``InstanceType.DynamicResources``), which
    no API shows: cannot tell."""
    if ignore_dra_requests is False:
        return KarpenterLaunch(known=False, message=(
            "cannot tell: with IGNORE_DRA_REQUESTS=false Karpenter allocates the pod's claims against the "
            "ResourceSlices its cloud provider says each instance type will publish, which no API shows, "
            "and the slices of initialized nodes"))
    return KarpenterLaunch(message=f"launches nothing for a pod with ResourceClaims: {KARPENTER_SKIPS_DRA}",
                           assumptions=[IGNORE_DRA_ASSUMED] if ignore_dra_requests is None else [])


def _message(result: KarpenterLaunch) -> str:
    if result.node_pool is None:
        if not result.node_pools:
            return "no NodePool: Karpenter launches nothing"
        return f"no NodePool of {len(result.node_pools)} can launch a node for the pod"
    [launch] = [p for p in result.node_pools if p.name == result.node_pool]
    names = ", ".join(t.name for t in launch.instance_types)
    text = f"NodePool {launch.name} would launch one of {len(launch.instance_types)} instance types: {names}"
    if launch.provider_pick:
        pick = launch.provider_pick[0]
        text += (f"; the provider picks by its own price, the cheapest being {pick.instance_type} "
                 f"{pick.capacity_type} at {pick.base_price:g}")
        if pick.price != pick.base_price:
            text += f" (Karpenter counts {pick.price:g}, after overlay {pick.overlay})"
    return text


def launch_findings(launch: KarpenterLaunch, pod: Pod) -> list[Finding]:
    """``KarpenterLaunchesNothing`` when no NodePool would launch a node for the pod (each one's
    reason), or Karpenter skips it for its claims: it stays Pending until something changes."""
    if launch.node_pool is not None or not launch.known:
        return []
    reasons = "; ".join(f"{p.name}: {p.refused}" for p in launch.node_pools)
    if launch.node_pools:
        message = f"{launch.message} ({reasons})"
    else:  # Karpenter's own answer, and the setting it assumes
        assumed = f" (assumed: {'; '.join(launch.assumptions)})" if launch.assumptions else ""
        message = f"Karpenter {launch.message}{assumed}"
    return [Finding(code="KarpenterLaunchesNothing", severity="error", message=message,
                    object=f"Pod/{pod.namespace}/{pod.name}")]
