"""Why is it Pending: the ``scheduling`` part of ``explain pod`` (docs/contracts.md §3.9 ``Scheduling``).

Builds the scheduler's view of the cluster from an inventory (nodes, the non-terminal pods bound
to them, the nominated pods), runs one attempt of the profile's filters (cycle.py) and turns it
into a document: the message the scheduler would write now, every node's verdict in the
scheduler's words with the numbers behind them, what this tool could not decide, and the next
step. Preemption is never evaluated, and the document says so.
"""
from __future__ import annotations

from kubectl_dra.document import Finding
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.resource import DeviceClass
from kubectl_dra.scheduling.cycle import Attempt, NodeVerdict, run
from kubectl_dra.scheduling.framework import Cycle, NodeInfo, PodInfo
from kubectl_dra.scheduling.profile import DEFAULT_SCHEDULER, Profile, default_profile
from kubectl_dra.scheduling.document import NodeScheduling, NotEvaluated, PluginReasons, Scheduling
from kubectl_dra.scheduling.extended import bind_errors, pod_demand
from kubectl_dra.versions import MODELLED, MODELLED_MINOR, SCHEDULER, differences, older

PREEMPTION = ("preemption is not evaluated: when the pod has a priority above pods on a node, the scheduler may "
              "evict them to make room (its message then goes on after \" preemption:\")")
GATED = "Scheduling is blocked due to non-empty scheduling gates"  # the PodScheduled message for a gated pod


def build_cycle(pod: Pod, inventory: Inventory, profile: Profile) -> Cycle:
    """The scheduler cache as a snapshot: each node with its non-terminal bound pods, and the
    pods nominated to each node (not yet bound)."""
    nodes = {n.name: NodeInfo(n) for n in sorted(inventory.all(Node), key=lambda n: n.name)}
    nominated: dict[str, list[PodInfo]] = {}
    for other in inventory.every("Pod"):
        if other.uid == pod.uid and other.namespace == pod.namespace and other.name == pod.name:
            continue
        if other.status.phase in ("Succeeded", "Failed"):
            continue  # the scheduler's pod informer leaves terminal pods out
        if other.spec.node_name:
            info = nodes.get(other.spec.node_name)
            if info is not None:
                info.add_pod(PodInfo(other))
        elif other.status.nominated_node_name and other.metadata.deletion_timestamp is None:
            nominated.setdefault(other.status.nominated_node_name, []).append(PodInfo(other))
    namespaces = None
    if "Namespace" in inventory.read_kinds:
        namespaces = {ns.name: dict(ns.metadata.labels) for ns in inventory.of_kind("Namespace")}
    return Cycle(pod=PodInfo(pod), nodes=list(nodes.values()), nominated=nominated, inventory=inventory,
                 args=profile.args, namespaces=namespaces, bound=profile.search_bound(), release=profile.release)


def explain_scheduling(pod: Pod, inventory: Inventory, profile: Profile | None = None) -> Scheduling:
    profile = profile or default_profile()
    result = Scheduling(profile=profile.source, nominated_node=pod.status.nominated_node_name or None,
                        release=MODELLED if profile.release == MODELLED_MINOR else f"1.{profile.release}",
                        recorded=_recorded(pod))
    if pod.spec.scheduler_name != profile.name and not profile.source.startswith("profile "):
        result.not_evaluated.append(NotEvaluated(
            plugin="profile", why=f'the pod asks for scheduler "{pod.spec.scheduler_name}"; only the default '
                                  f'profile ("{DEFAULT_SCHEDULER}") is known without --scheduler-config'))
    missing = [kind for kind in ("Node", "Pod") if kind not in inventory.read_kinds]
    if missing:
        result.not_evaluated.append(NotEvaluated(plugin="snapshot", why=f"{' and '.join(missing)} objects were not "
                                                 "read: what the scheduler sees is unknown"))
    partial = [p.message for p in inventory.problems if p.kind in ("Node", "Pod") and p.kind not in missing]
    if partial:  # a pod or node not read (or a snapshot of one namespace) may hold what refuses the pod
        result.not_evaluated.append(NotEvaluated(plugin="snapshot", why="not every node and pod was read, so what "
                                                 f"they use is unknown: {partial[0]}"))
    if pod.spec.scheduling_gates:
        result.waiting.append(NotEvaluated(plugin="SchedulingGates", why=(
            f"{GATED}: {', '.join(g.name for g in pod.spec.scheduling_gates)}; the nodes below are what the "
            "scheduler would find once they are removed")))
    result.waiting += _claims_waiting(pod, inventory)
    plugins = profile.plugins()
    result.not_evaluated += [NotEvaluated(plugin=name, why=why) for name, why in profile.unmodelled]
    cycle = build_cycle(pod, inventory, profile)
    attempt = run(cycle, plugins)
    unknown_everywhere = list(result.not_evaluated)  # the profile, the scheduler, the snapshot: every node
    _fill(result, attempt)
    _bind_errors(result, pod, inventory)
    if unknown_everywhere:
        # a filter not run (or another scheduler) might refuse what passed here: no fit, no message
        result.message, result.message_known = None, False
        for node in result.nodes:
            if node.fits:
                node.fits = None
                node.undetermined = [NotEvaluated(plugin=u.plugin, why=u.why) for u in unknown_everywhere]
        result.feasible_nodes = []
    _not_claimed(result, profile.release)
    _post_filter_words(result, pod, inventory, profile.release)
    if pod.spec.scheduling_gates and result.message_known:
        result.message = GATED
    result.not_evaluated.append(NotEvaluated(plugin="DefaultPreemption", why=PREEMPTION))
    result.next_step = next_step(result)
    return result


# what an older kube-scheduler says otherwise, found by the words 1.37 would write (rule -> those words)
_OLDER_WORDS = {
    "DRA filter timeout": ("timed out trying to allocate devices",),
    "invalid pools": ("invalid resource pools were encountered",),
    "claim owner": ("(Pod is not owner)", "is not in the same namespace as Pod"),
    "allocator errors": ("CEL runtime error", "exceeds the claim limit"),
}


def _not_claimed(result: Scheduling, release: int) -> None:
    """Where the scheduler of ``release`` decides or words this answer otherwise and its own rule is
    not encoded (docs/kubernetes/versions.md §4.3): the nodes stay as 1.37 decides them, the message
    is not claimed, and ``not_evaluated`` says which rule."""
    texts = [result.error or "", result.possible_error or "", *_reasons(result)]
    texts += [u.why for n in result.nodes for u in n.undetermined]
    for difference in differences(SCHEDULER, release):
        words = _OLDER_WORDS.get(difference.rule)
        if difference.applied or not words or not any(w in t for w in words for t in texts):
            continue
        result.not_evaluated.append(NotEvaluated(plugin="DynamicResources", why=(
            f"kube-scheduler 1.{release} differs here: {difference.text} ({difference.section}); what it writes "
            f"is not known to this tool, which models {MODELLED}")))
        result.message, result.message_known = None, False


UNAVAILABLE = "resourceclaim not available on the node"  # dynamicresources.go: an allocated claim elsewhere


def _reasons(result: Scheduling) -> list[str]:
    """Every node's reasons, the later filters' that refuse it too included."""
    return [r for n in result.nodes for r in (*n.reasons, *(r for a in n.also for r in a.reasons))]


def _post_filter_words(result: Scheduling, pod: Pod, inventory: Inventory, release: int) -> None:
    """Before 1.37 DynamicResources' PostFilter gives a reason, which FitError.Error() adds after the
    filters' (joined with the next PostFilter's by ", ", so it ends in "," before " preemption:"):
    "no new claims to deallocate" for a pod without claims, "still not schedulable" when no claim of
    its could be deallocated (dynamicresources.go PostFilter at v1.34.4 lines 1063-1117; the same at
    v1.35.4 and v1.36.3). Where one could be (an allocated claim some node cannot use), the
    scheduler deallocates it instead: not claimed here (docs/kubernetes/versions.md §4.3)."""
    if not older(SCHEDULER, "DRA PostFilter", release) or not result.message or not result.message_known:
        return
    reasons = _reasons(result)
    # the claim for extended resources, which the scheduler makes only with DRAExtendedResource on
    demand = None if older(SCHEDULER, "DRAExtendedResource", release) else pod_demand(pod, inventory)
    extended = demand is not None and bool(demand.provided())
    if UNAVAILABLE in reasons or (demand is not None and (demand.existing is not None or demand.undecided)):
        result.not_evaluated.append(NotEvaluated(plugin="DynamicResources", why=(
            f"kube-scheduler 1.{release} differs here: its DynamicResources PostFilter may deallocate a claim and "
            "says so in the message (docs/kubernetes/versions.md §4.3); what it writes is not known to this "
            f"tool, which models {MODELLED}")))
        result.message, result.message_known = None, False
        return
    words = "still not schedulable" if pod.spec.resource_claims or extended else "no new claims to deallocate"
    result.message = f"{result.message} {words},"


def _bind_errors(result: Scheduling, pod: Pod, inventory: Inventory) -> None:
    """Feasible nodes where the scheduler's PreBind then fails (extended resources through DRA with
    claims of the pod's own, on a node serving them from its allocatable)."""
    if not result.feasible_nodes or not pod.spec.resource_claims or "DeviceClass" not in inventory.read_kinds:
        return
    demand = pod_demand(pod, inventory)
    feasible = [n for name in result.feasible_nodes if (n := inventory.get(Node, None, name)) is not None]
    result.bind_errors = bind_errors(pod, demand, feasible)


def _recorded(pod: Pod) -> str | None:
    for condition in pod.status.conditions:
        if condition.type == "PodScheduled" and condition.status == "False" and condition.message:
            return condition.message
    return None


def recorded_unschedulable(pod: Pod) -> Finding | None:
    """``Unschedulable`` from what the scheduler last wrote on a pending pod (PodScheduled False,
    reason Unschedulable): where a pod is listed but its scheduling is not recomputed."""
    if pod.node_name or pod.is_done:
        return None
    for condition in pod.status.conditions:
        if condition.type == "PodScheduled" and condition.status == "False" and condition.reason == "Unschedulable":
            return Finding(code="Unschedulable", severity="error", object=f"pod/{pod.namespace}/{pod.name}",
                           message=f"pod {pod.namespace}/{pod.name} is Pending; the scheduler last wrote: "
                                   f"{condition.message or '(no message)'} (`kubectl dra explain pod {pod.name} -n "
                                   f"{pod.namespace}` says why, node by node)")
    return None


def _claims_waiting(pod: Pod, inventory: Inventory) -> list[NotEvaluated]:
    """DynamicResources' PreEnqueue: every claim must exist (not being deleted) before the pod is
    tried at all."""
    out = []
    for pc in pod.spec.resource_claims:
        name = pod.claim_object_name(pc)
        if name is None and pc.resource_claim_template_name:
            out.append(NotEvaluated(plugin="DynamicResources", why=(
                f"pod claim {pc.name}: the resourceclaim controller has not created its ResourceClaim from template "
                f"{pc.resource_claim_template_name} yet (the nodes below assume the claim the template makes)")))
            continue
        claim = inventory.get(ResourceClaim, pod.namespace, name) if name else None
        if claim is None and "ResourceClaim" in inventory.read_kinds and name:
            out.append(NotEvaluated(plugin="DynamicResources", why=f"ResourceClaim {pod.namespace}/{name} does not "
                                    "exist: the scheduler does not try the pod until it does"))
        elif claim is not None and claim.metadata.deletion_timestamp is not None:
            out.append(NotEvaluated(plugin="DynamicResources", why=f'resourceclaim "{claim.name}" is being deleted'))
    return out


def _fill(result: Scheduling, attempt: Attempt) -> None:
    result.nodes_checked = len(attempt.nodes)
    result.error = attempt.error
    result.possible_error = attempt.possible_error if not attempt.error else None
    result.message = attempt.message if attempt.known and not attempt.error else None
    result.message_known = attempt.known and not attempt.error
    for status in attempt.undetermined:
        result.not_evaluated.append(NotEvaluated(plugin=status.plugin, why=status.undetermined or ""))
    seen: set[tuple[str, str]] = set()
    for verdict in attempt.nodes:
        view = _node_view(verdict)
        result.nodes.append(view)
        if view.fits:
            result.feasible_nodes.append(view.node)
        for u in view.undetermined:
            if (u.plugin, u.why) not in seen:
                seen.add((u.plugin, u.why))
                result.not_evaluated.append(NotEvaluated(plugin=u.plugin, why=f"{u.why} (node {view.node})"))


def _node_view(verdict: NodeVerdict) -> NodeScheduling:
    status = verdict.status
    return NodeScheduling(
        node=verdict.node, fits=verdict.fits, plugin=status.plugin or None if not status.success else None,
        reasons=list(status.reasons) if not status.success else [],
        evidence=list(status.evidence) if not status.success else [],
        also=[PluginReasons(plugin=s.plugin, reasons=list(s.reasons)) for s in verdict.also],
        undetermined=[NotEvaluated(plugin=s.plugin, why=s.undetermined or "") for s in verdict.undetermined])


_STEPS = {  # plugin -> what to change, for a person
    "NodeResourcesFit": "the node(s) lack free {resources}: lower the pod's requests, free capacity (pods bound there "
                        "hold it), or add nodes",
    "DynamicResources": "the pod's claims cannot be allocated there ({reasons}); the allocation says device by "
                        "device why",
    "TaintToleration": "add a toleration for the taint, or remove the taint from the node",
    "NodeAffinity": "no such node matches the pod's nodeSelector / required node affinity: fix the selector or "
                    "label a node",
    "NodePorts": "the host port is taken there: pick another hostPort, or drop it",
    "PodTopologySpread": "placing it there would break a topology spread constraint (maxSkew): relax the "
                         "constraint, or add capacity in the other domains",
    "InterPodAffinity": "a required pod (anti-)affinity rule refuses it: check the rule and where the matching "
                        "pods run",
    "NodeUnschedulable": "the node is cordoned (spec.unschedulable): uncordon it, or tolerate "
                         "node.kubernetes.io/unschedulable",
}


def next_step(result: Scheduling) -> str | None:
    if result.error:
        return f"the scheduler fails with an error, not a verdict: {result.error}"
    if result.possible_error:
        return ("a node's allocation search runs about as long as the scheduler's filterTimeout, so the scheduler may "
                f"fail with \"{result.possible_error}\" and retry the pod with backoff: make the claims' search "
                "shorter (fewer devices per request, narrower selectors, a request that can be met) or raise "
                "filterTimeout")
    if result.binds_nowhere():
        return ("every node the filters let through fails when the scheduler binds the pod there: the pod has "
                "claims of its own and the node serves its extended resources from its allocatable (kube-scheduler "
                "v1.37.2 then writes no request mappings); drop the extended resource from the pod (ask for the "
                "device in a claim), or run it where the resource is not advertised")
    if result.feasible_nodes:
        return None
    if not result.message_known:
        return "some nodes cannot be decided by kubectl-dra (see notEvaluated); check them by hand"
    by_plugin: dict[str, list[NodeScheduling]] = {}
    for node in result.nodes:
        if node.plugin:
            by_plugin.setdefault(node.plugin, []).append(node)
    steps = []
    for plugin, nodes in sorted(by_plugin.items(), key=lambda kv: -len(kv[1])):
        template = _STEPS.get(plugin)
        if template is None:
            continue
        reasons = sorted({r for n in nodes for r in n.reasons})
        resources = sorted({r.removeprefix("Insufficient ") for r in reasons if r.startswith("Insufficient ")})
        dra = any(e.dra and e.dra not in ("0", "0m") for n in nodes for e in n.evidence)
        text = template.format(resources=", ".join(resources) or "capacity", reasons="; ".join(reasons))
        if plugin == "DynamicResources" and dra:
            text = (f"the pod's claims add node-allocatable {', '.join(resources)} (KEP-5517) on top of its own "
                    "requests, and the node(s) lack room for the sum: free capacity there, or use devices "
                    "without a node-allocatable mapping")
        steps.append(f"{len(nodes)} node(s): {text}")
    return "; ".join(steps) + "." if steps else None


def unschedulable_finding(pod: Pod, scheduling: Scheduling) -> Finding | None:
    """``Unschedulable``: the scheduler cannot place the pod now, with its message; ``BindFails``:
    the filters let it through, but binding fails on every such node."""
    if scheduling.message is None and scheduling.binds_nowhere():
        error = scheduling.bind_errors[scheduling.feasible_nodes[0]]
        return Finding(code="BindFails", severity="error", object=f"pod/{pod.namespace}/{pod.name}",
                       message=f"the scheduler places the pod, then fails to bind it on every node it can go to "
                               f"({', '.join(scheduling.feasible_nodes)}): {error}. Next: {scheduling.next_step}")
    if scheduling.message is None or scheduling.message == GATED:
        return None
    text = f"the scheduler cannot place the pod now: {scheduling.message}"
    if scheduling.next_step:
        text += f" Next: {scheduling.next_step}"
    return Finding(code="Unschedulable", severity="error", message=text, object=f"pod/{pod.namespace}/{pod.name}")


def pod_scheduling(pod: Pod, inventory: Inventory, profile: Profile | None = None,
                   only_node: str | None = None) -> tuple[Scheduling, list[Finding]]:
    """The scheduling section of a pod not bound to a node, and its ``Unschedulable`` finding (none or
    one). ``only_node`` narrows the nodes shown, never the message or the finding: those are the
    scheduler's, over every node."""
    scheduling = explain_scheduling(pod, inventory, profile)
    finding = unschedulable_finding(pod, scheduling)
    if only_node is not None:
        scheduling.nodes = [n for n in scheduling.nodes if n.node == only_node]
    return scheduling, [finding] if finding is not None else []
