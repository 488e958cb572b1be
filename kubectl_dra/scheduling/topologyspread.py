"""kube-scheduler v1.37.2's PodTopologySpread filter (pkg/scheduler/framework/plugins/podtopologyspread).

Only ``whenUnsatisfiable: DoNotSchedule`` constraints filter; ScheduleAnyway ones are scoring
only. With feature gates at their v1.37.2 defaults: NodeInclusionPolicyInPodTopologySpread (GA,
locked on) and MatchLabelKeysInPodTopologySpread (beta, on); InPlacePodVerticalScalingScheduler-
Preemption (alpha, off), so a deferred resize never skips the plugin.

PreFilter counts, per constraint and per topology domain (a value of the topology key), the pods
that match the constraint's selector on the *eligible* nodes: nodes that carry every constraint's
topology key and pass the constraint's nodeAffinityPolicy (Honor by default: the pod's nodeSelector
and required node affinity) and nodeTaintsPolicy (Ignore by default; Honor: no untolerated
NoSchedule/NoExecute taint). Only pods in the incoming pod's namespace count, terminating pods
(deletionTimestamp set) never do, and an empty selector (``labelSelector: {}``) counts none
(``countPodsMatchSelector``) though the incoming pod and nominated pods still match it.

Filter then requires, for each constraint in order, that the node has the topology key
(else UnschedulableAndUnresolvable, "... (missing required label)") and that
``count(domain) + (1 if the pod matches the selector) - globalMin <= maxSkew`` (else
Unschedulable). ``globalMin`` is the smallest domain count, or 0 while there are fewer domains
than ``minDomains``. A node the policies excluded from counting is still filtered (its domain may
count 0); the NodeAffinity and TaintToleration filters are what reject it.

Default constraints (the pod has none): the profile's ``PodTopologySpreadArgs``. System
defaulting (the v1 default) is hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway, so
Filter skips. List defaulting with a DoNotSchedule constraint needs the selector the scheduler
builds from the Services, ReplicationControllers, ReplicaSets and StatefulSets selecting the pod;
those are not modelled, so that case is reported as undetermined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod, TopologySpreadConstraint
from kubectl_dra import labels as lbl
from kubectl_dra.scheduling.framework import (SKIP, UNRESOLVABLE, UNSCHEDULABLE, Cycle, Evidence, NodeInfo,
                                              Plugin, PodInfo, PreFilterResult, Status)

NAME = "PodTopologySpread"

# pkg/scheduler/framework/plugins/podtopologyspread/plugin.go: ErrReasonConstraintsNotMatch
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
# pkg/scheduler/framework/plugins/podtopologyspread/plugin.go: ErrReasonNodeLabelNotMatch
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

DO_NOT_SCHEDULE, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"
HONOR, IGNORE = "Honor", "Ignore"
LABEL_HOSTNAME, LABEL_ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"

# podtopologyspread/plugin.go: systemDefaultConstraints (both ScheduleAnyway: never filter)
SYSTEM_DEFAULT_CONSTRAINTS = (
    TopologySpreadConstraint(topology_key=LABEL_HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY, max_skew=3),
    TopologySpreadConstraint(topology_key=LABEL_ZONE, when_unsatisfiable=SCHEDULE_ANYWAY, max_skew=5),
)

_MAX_INT32 = 2**31 - 1


@dataclass(frozen=True)
class Constraint:
    """``topologySpreadConstraint``: the parsed form, with where it came from (for evidence)."""

    max_skew: int
    topology_key: str
    selector: lbl.Selector
    min_domains: int
    node_affinity_policy: str
    node_taints_policy: str
    index: int | None  # position in spec.topologySpreadConstraints; None for a default constraint

    def describe(self) -> str:
        where = f"topologySpreadConstraints[{self.index}]" if self.index is not None else "default constraint"
        return f"{where} (topologyKey {self.topology_key}, labelSelector {self.selector})"


class SpreadState:
    """``preFilterState``: constraints, matching-pod counts per domain, and the two critical paths
    (the two domains with the fewest matching pods, ``criticalPaths``) per constraint."""

    __slots__ = ("constraints", "counts", "paths")

    def __init__(self, constraints: list[Constraint], counts: list[dict[str, int]],
                 paths: list[list[list]]) -> None:
        self.constraints = constraints
        self.counts = counts
        self.paths = paths  # per constraint: [[value, num], [value, num]]

    def copy(self) -> "SpreadState":
        """``Clone``: constraints shared, counts and paths copied."""
        return SpreadState(self.constraints, [dict(c) for c in self.counts],
                           [[list(p[0]), list(p[1])] for p in self.paths])

    def update_path(self, i: int, value: str, num: int) -> None:
        """``criticalPaths.update``."""
        p = self.paths[i]
        j = 0 if value == p[0][0] else 1 if value == p[1][0] else -1
        if j >= 0:
            p[j][1] = num
            if p[0][1] > p[1][1]:
                p[0], p[1] = p[1], p[0]
        elif num < p[0][1]:
            p[1] = p[0]
            p[0] = [value, num]
        elif num < p[1][1]:
            p[1] = [value, num]

    def min_match(self, i: int) -> tuple[int, str | None]:
        """``minMatchNum``: the global minimum and its domain (None: forced to 0 by minDomains)."""
        if len(self.counts[i]) < self.constraints[i].min_domains:
            return 0, None
        value, num = self.paths[i][0]
        return num, value


def required_node_affinity(pod: Pod):
    """``nodeaffinity.GetRequiredNodeAffinity(pod).Match`` as a function of a node (parse errors of
    a term make that term match nothing, as upstream ignores them here)."""
    selector = lbl.from_set(pod.spec.node_selector) if pod.spec.node_selector else None
    affinity = pod.spec.affinity
    required = affinity.node_affinity.required_during_scheduling_ignored_during_execution \
        if affinity is not None and affinity.node_affinity is not None else None
    terms = None
    if required is not None:
        terms = [_node_selector_term(t) for t in required.node_selector_terms
                 if t.match_expressions or t.match_fields]

    def match(node: Node) -> bool:
        node_labels = node.metadata.labels
        if selector is not None and not selector.matches(node_labels):
            return False
        if terms is None:
            return True
        for term in terms:
            if term is not None and term(node_labels, node.metadata.name):
                return True
        return False

    return match


def _node_selector_term(term):
    """A ``nodeSelectorTerm``'s match function, or None when it does not parse."""
    try:
        exprs = None
        if term.match_expressions:
            reqs = []
            for r in term.match_expressions:
                op = lbl.NODE_OPERATORS.get(r.operator)
                if op is None:
                    return None
                reqs.append(lbl.new_requirement(r.key, op, list(r.values)))
            exprs = lbl.Selector(reqs)
    except lbl.SelectorError:
        return None
    fields = None
    if term.match_fields:
        fields = []
        for r in term.match_fields:
            if r.operator not in ("In", "NotIn") or len(r.values) != 1:
                return None
            fields.append((r.key, r.operator == "In", r.values[0]))

    def match(node_labels: dict, node_name: str) -> bool:
        if exprs is not None and not exprs.matches(node_labels):
            return False
        if fields is not None and node_name:
            node_fields = {"metadata.name": node_name}
            for key, equal, value in fields:
                if (node_fields.get(key, "") == value) != equal:
                    return False
        return True

    return match


def untolerated_taint(node: Node, pod: Pod):
    """``FindMatchingUntoleratedTaint`` with ``DoNotScheduleTaintsFilterFunc`` (NoSchedule and
    NoExecute only; comparison operators off at v1.37.2, so Lt/Gt tolerations tolerate nothing)."""
    for taint in node.spec.taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(t, taint) for t in pod.spec.tolerations):
            return taint
    return None


def _tolerates(t, taint) -> bool:
    """``Toleration.ToleratesTaint``."""
    if t.effect and t.effect != taint.effect:
        return False
    if t.key and t.key != taint.key:
        return False
    if t.operator in ("", "Equal"):
        return t.value == taint.value
    return t.operator == "Exists"


def unreadable(obj, *prefixes: str) -> list[str]:
    """Dropped fields (see ``KubeObject.invalid_fields``) at, below or *above* any of ``prefixes``:
    a dropped ``spec.affinity`` took ``spec.affinity.nodeAffinity`` with it."""
    if not obj.invalid_fields:
        return []
    return [f.path for f in obj.invalid_fields
            if any(f.path == p or f.path.startswith((p + ".", p + "[")) or p.startswith((f.path + ".", f.path + "["))
                   for p in prefixes)]


class PodTopologySpread(Plugin):
    NAME = NAME

    def pre_filter(self, cycle: Cycle) -> PreFilterResult:
        pod = cycle.pod.pod
        bad = unreadable(pod, "spec.topologySpreadConstraints", "metadata.labels", "spec.nodeSelector",
                          "spec.affinity.nodeAffinity", "spec.tolerations")
        if bad:
            return PreFilterResult(status=self._status(Status.unknown(
                f"{NAME}: the pod's {', '.join(bad)} could not be read")))
        try:
            constraints = self._constraints(pod, cycle.args.get(NAME) or {})
        except _Undetermined as why:
            return PreFilterResult(status=self._status(Status.unknown(str(why))))
        except lbl.SelectorError as err:
            return PreFilterResult(status=self._status(Status.error(
                f"get constraints from pod: obtaining pod's hard topology spread constraints: {err}")))
        if not constraints:
            return PreFilterResult(status=self._status(Status(SKIP)))
        for node_info in cycle.nodes:
            bad = unreadable(node_info.node, "metadata.labels", "spec.taints")
            if bad:
                return PreFilterResult(status=self._status(Status.unknown(
                    f"{NAME}: node {node_info.name}'s {', '.join(bad)} could not be read")))
        state, bad_pod = self._count(cycle, constraints)
        if bad_pod:
            return PreFilterResult(status=self._status(Status.unknown(
                f"{NAME}: pod {bad_pod} could count towards a spread constraint but its labels, namespace or "
                "deletionTimestamp could not be read")))
        return PreFilterResult(state=state)

    def filter(self, cycle: Cycle, state: Any, node: NodeInfo) -> Status:
        if state is None or not state.constraints:
            return self._status(Status())
        node_labels = node.node.metadata.labels
        pod_labels = cycle.pod.pod.metadata.labels
        for i, c in enumerate(state.constraints):
            value = node_labels.get(c.topology_key)
            if value is None:
                return self._status(Status.unschedulable(
                    ERR_REASON_NODE_LABEL_NOT_MATCH, unresolvable=True, evidence=[Evidence(
                        ERR_REASON_NODE_LABEL_NOT_MATCH,
                        detail=f"{c.describe()}: the node has no label {c.topology_key}")]))
            min_num, min_value = state.min_match(i)
            self_match = 1 if c.selector.matches(pod_labels) else 0
            num = state.counts[i].get(value, 0)
            if num + self_match - min_num > c.max_skew:
                if min_value is None:
                    where = f"{len(state.counts[i])} domain(s) < minDomains {c.min_domains}"
                else:
                    where = f"{c.topology_key}={min_value}"
                detail = (f"{c.describe()}: {c.topology_key}={value}: {num} matching pods"
                          f"{' + this pod' if self_match else ''}, min {min_num} ({where}), "
                          f"skew {num + self_match - min_num} > maxSkew {c.max_skew}")
                return self._status(Status.unschedulable(
                    ERR_REASON_CONSTRAINTS_NOT_MATCH,
                    evidence=[Evidence(ERR_REASON_CONSTRAINTS_NOT_MATCH, detail=detail)]))
        return self._status(Status())

    def add_pod(self, cycle: Cycle, state: Any, pod: PodInfo, node: NodeInfo) -> Any:
        """``AddPod`` (``updateWithPod`` with +1): no terminating-pod or empty-selector exemption here."""
        if state is None:
            return state
        incoming = cycle.pod.pod
        added = pod.pod
        if (added.metadata.namespace or "") != (incoming.metadata.namespace or ""):
            return state
        node_labels = node.node.metadata.labels
        if any(c.topology_key not in node_labels for c in state.constraints):
            return state
        new = state.copy()
        affinity = None
        for i, c in enumerate(state.constraints):
            if not c.selector.matches(added.metadata.labels):
                continue
            if c.node_affinity_policy == HONOR:
                affinity = affinity or required_node_affinity(incoming)
                if not affinity(node.node):
                    continue
            if c.node_taints_policy == HONOR and untolerated_taint(node.node, incoming) is not None:
                continue
            value = node_labels[c.topology_key]
            new.counts[i][value] = new.counts[i].get(value, 0) + 1
            new.update_path(i, value, new.counts[i][value])
        return new

    # -- helpers ---------------------------------------------------------------------------------

    def _status(self, status: Status) -> Status:
        status.plugin = NAME
        return status

    def _constraints(self, pod: Pod, args: dict) -> list[Constraint]:
        """``getConstraints``: the pod's DoNotSchedule constraints, or the defaults' when it has none."""
        if pod.spec.topology_spread_constraints:
            return _filter_constraints(pod.spec.topology_spread_constraints, pod.metadata.labels, indexed=True)
        defaulting = args.get("defaultingType") or "System"
        defaults = args.get("defaultConstraints") or []
        if defaulting == "System":
            if defaults:
                raise _Undetermined(f"{NAME}: the profile's args are invalid (defaultingType System with "
                                    "defaultConstraints); the scheduler would not start")
            defaults = SYSTEM_DEFAULT_CONSTRAINTS
        elif defaulting == "List":
            try:
                defaults = [c if isinstance(c, TopologySpreadConstraint) else TopologySpreadConstraint.model_validate(c)
                            for c in defaults]
            except Exception as err:  # a profile file this tool cannot read as the scheduler would
                raise _Undetermined(f"{NAME}: the profile's defaultConstraints could not be read: {err}") from None
        else:
            raise _Undetermined(f"{NAME}: the profile's defaultingType {defaulting!r} is not System or List")
        if any(c.when_unsatisfiable == DO_NOT_SCHEDULE for c in defaults):
            raise _Undetermined(
                f"{NAME}: the pod has no topologySpreadConstraints and the profile's DoNotSchedule "
                "defaultConstraints apply with a selector built from the Services, ReplicationControllers, "
                "ReplicaSets and StatefulSets selecting the pod, which this tool does not read")
        return []

    def _count(self, cycle: Cycle, constraints: list[Constraint]) -> tuple[SpreadState, str | None]:
        """``calPreFilterState``: one pass over the eligible nodes' pods."""
        pod = cycle.pod.pod
        ns = pod.metadata.namespace or ""
        counts: list[dict[str, int]] = [{} for _ in constraints]
        affinity = None
        keys = [c.topology_key for c in constraints]
        bad_pod = None
        for node_info in cycle.nodes:
            node = node_info.node
            node_labels = node.metadata.labels
            if any(k not in node_labels for k in keys):
                continue
            included = []
            for i, c in enumerate(constraints):
                if c.node_affinity_policy == HONOR:
                    affinity = affinity or required_node_affinity(pod)
                    if not affinity(node):
                        continue
                if c.node_taints_policy == HONOR and untolerated_taint(node, pod) is not None:
                    continue
                included.append(i)
            if not included:
                continue
            candidates = []
            for p in node_info.pods:
                other = p.pod
                meta = other.metadata
                if other.invalid_fields and bad_pod is None and \
                        unreadable(other, "metadata.labels", "metadata.namespace", "metadata.deletionTimestamp"):
                    bad_pod = other.key
                if meta.deletion_timestamp is None and (meta.namespace or "") == ns:
                    candidates.append(meta.labels)
            for i in included:
                c = constraints[i]
                value = node_labels[c.topology_key]
                n = 0
                if not c.selector.empty:
                    matches = c.selector.matches
                    for pod_labels in candidates:
                        if matches(pod_labels):
                            n += 1
                counts[i][value] = counts[i].get(value, 0) + n
        state = SpreadState(constraints, counts, [[["", _MAX_INT32], ["", _MAX_INT32]] for _ in constraints])
        for i, per_value in enumerate(counts):
            for value, num in per_value.items():
                state.update_path(i, value, num)
        return state, bad_pod


class _Undetermined(Exception):
    """This tool cannot decide what the scheduler would (the reason is the message)."""


def _filter_constraints(constraints, pod_labels: dict, indexed: bool) -> list[Constraint]:
    """``filterTopologySpreadConstraints`` for DoNotSchedule, with matchLabelKeys merged
    (``mergeLabelSetWithSelector``: the pod's values for those keys, ANDed; a nil selector stays
    Nothing)."""
    result = []
    for index, c in enumerate(constraints):
        if c.when_unsatisfiable != DO_NOT_SCHEDULE:
            continue
        selector = lbl.from_label_selector(c.label_selector)
        if c.match_label_keys:
            merged = {k: pod_labels[k] for k in c.match_label_keys if k in pod_labels}
            if merged and not selector.nothing:
                selector = lbl.Selector((*lbl.from_set(merged).requirements, *selector.requirements))
        result.append(Constraint(
            max_skew=c.max_skew, topology_key=c.topology_key, selector=selector,
            min_domains=c.min_domains if c.min_domains is not None else 1,
            node_affinity_policy=c.node_affinity_policy or HONOR, node_taints_policy=c.node_taints_policy or IGNORE,
            index=index if indexed else None))
    return result
