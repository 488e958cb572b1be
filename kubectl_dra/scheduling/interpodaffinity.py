"""kube-scheduler v1.37.2's InterPodAffinity filter (pkg/scheduler/framework/plugins/interpodaffinity).

Required terms only (preferred terms are scoring, but a preferred term that does not parse still
fails PreFilter, as ``framework.NewPodInfo`` parses them all). Feature gates at their v1.37.2
defaults: InterPodAffinityHostnameFastPath (alpha) off, so every term goes through the
cluster-wide topology-pair counts (with the gate on, hostname terms are checked node-locally and
the first-pod exception counts matching pods on every node, labelled or not; not modelled).

PreFilter counts topology pairs ``(topologyKey, value of that label on the node)``:

- ``existing``: for every pod with required anti-affinity, each of its terms that matches the
  incoming pod (its namespaces, or its namespaceSelector against the *incoming pod's namespace's
  labels*), counted on that pod's node;
- ``affinity``: pods matching *all* the incoming pod's affinity terms at once, one count per term;
- ``anti``: pods matching each of the incoming pod's anti-affinity terms.

The incoming pod's namespaceSelector is unrolled into namespace names first
(``mergeAffinityTermNamespacesIfNotEmpty``), which needs every namespace's labels
(``Cycle.namespaces``); when those were not read, the plugin is undetermined rather than guessed.
An existing pod's term whose answer hangs on the incoming pod's namespace labels makes only the
nodes in that term's domain undetermined.

Filter, in this order (the first failure is the answer):
1. affinity: the node must carry every affinity term's topology key, and each pair must count a
   pod; else the pod may still go there if *no* pod anywhere counted and it matches all its own
   terms (the first pod of a group) -> UnschedulableAndUnresolvable
   "node(s) didn't match pod affinity rules";
2. anti-affinity: no pair of the node counted for a term -> Unschedulable
   "node(s) didn't match pod anti-affinity rules";
3. existing pods' anti-affinity: no label pair of the node counted -> Unschedulable
   "node(s) didn't satisfy existing pods anti-affinity rules".

Pods count whatever their phase or deletionTimestamp (unlike PodTopologySpread); which pods are in
the snapshot at all is the cycle's business. ``matchLabelKeys``/``mismatchLabelKeys`` are not read
here: the API server merges them into ``labelSelector`` when the pod is created (KEP-3633, GA), so
the stored selector is what the scheduler matches; merging again from current labels would be wrong
for a pod whose labels changed since.
"""

from __future__ import annotations

from typing import Any

from kubectl_dra.model.pod import Pod
from kubectl_dra import labels as lbl
from kubectl_dra.scheduling.framework import (SKIP, Cycle, Evidence, NodeInfo, Plugin, PodInfo, PreFilterResult,
                                              Status)
from kubectl_dra.scheduling.topologyspread import unreadable

NAME = "InterPodAffinity"

# pkg/scheduler/framework/plugins/interpodaffinity/filtering.go: ErrReasonExistingAntiAffinityRulesNotMatch
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
# pkg/scheduler/framework/plugins/interpodaffinity/filtering.go: ErrReasonAffinityRulesNotMatch
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
# pkg/scheduler/framework/plugins/interpodaffinity/filtering.go: ErrReasonAntiAffinityRulesNotMatch
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

_EXAMPLES = 3  # pods named per topology pair in evidence


class Term:
    """``fwk.AffinityTerm``: namespaces, selector, topologyKey, namespaceSelector, and which term
    of whose pod it is (for evidence)."""

    __slots__ = ("namespaces", "selector", "topology_key", "ns_selector", "where")

    def __init__(self, namespaces: set[str], selector: lbl.Selector, topology_key: str,
                 ns_selector: lbl.Selector, where: str) -> None:
        self.namespaces, self.selector, self.topology_key = namespaces, selector, topology_key
        self.ns_selector, self.where = ns_selector, where

    def matches(self, pod: Pod, ns_labels: dict | None) -> bool | None:
        """``AffinityTerm.Matches``; None when it hangs on namespace labels that were not read."""
        if (pod.metadata.namespace or "") in self.namespaces:
            return self.selector.matches(pod.metadata.labels)
        sel = self.ns_selector
        if sel.nothing:
            return False
        if not sel.empty and ns_labels is None:
            return None if self.selector.matches(pod.metadata.labels) else False
        if sel.matches(ns_labels or {}):
            return self.selector.matches(pod.metadata.labels)
        return False

    def describe(self) -> str:
        if self.ns_selector.empty:
            ns = "all namespaces"
        else:
            ns = "namespaces " + (",".join(sorted(self.namespaces)) or "<none>")
            if not self.ns_selector.nothing:
                ns += f" or namespaceSelector {self.ns_selector}"
        return f"{self.where} (topologyKey {self.topology_key}, labelSelector {self.selector}, {ns})"


def affinity_terms(pod: Pod, terms, kind: str) -> list[Term]:
    """``GetAffinityTerms``: the first term that does not parse raises :class:`lbl.SelectorError`."""
    result = []
    ns = pod.metadata.namespace or ""
    for i, t in enumerate(terms):
        selector = lbl.from_label_selector(t.label_selector)
        if not t.namespaces and t.namespace_selector is None:
            names = {ns}
        else:
            names = set(t.namespaces)
        ns_selector = lbl.from_label_selector(t.namespace_selector)
        result.append(Term(names, selector, t.topology_key, ns_selector, f"{kind} term[{i}]"))
    return result


def _required(pod: Pod, anti: bool) -> list:
    a = pod.spec.affinity
    part = None if a is None else (a.pod_anti_affinity if anti else a.pod_affinity)
    return part.required_during_scheduling_ignored_during_execution if part is not None else []


def _existing_anti_terms(pod: Pod, cache: dict) -> list[Term]:
    """An existing pod's required anti-affinity terms as the scheduler's cache holds them: none
    when any of them does not parse (``NewPodInfo`` keeps the whole list nil)."""
    key = id(pod)
    terms = cache.get(key)
    if terms is None:
        try:
            terms = affinity_terms(pod, _required(pod, True), "podAntiAffinity")
        except lbl.SelectorError:
            terms = []
        cache[key] = terms
    return terms


class AffinityState:
    """``preFilterState`` (fast path off), with a few pod names per counted pair for evidence and
    the pairs where an existing pod's anti-affinity could not be decided."""

    __slots__ = ("affinity_terms", "anti_terms", "ns_labels", "existing", "affinity", "anti",
                 "examples", "uncertain", "self_match")

    def __init__(self) -> None:
        self.affinity_terms: list[Term] = []
        self.anti_terms: list[Term] = []
        self.ns_labels: dict | None = None
        self.existing: dict[tuple[str, str], int] = {}
        self.affinity: dict[tuple[str, str], int] = {}
        self.anti: dict[tuple[str, str], int] = {}
        self.examples: dict[tuple, list[str]] = {}  # (map, key, value[, term]) -> pod descriptions
        self.uncertain: dict[tuple[str, str], str] = {}  # pair -> why it is undetermined
        self.self_match = False

    def copy(self) -> "AffinityState":
        new = AffinityState()
        new.affinity_terms, new.anti_terms, new.ns_labels = self.affinity_terms, self.anti_terms, self.ns_labels
        new.existing, new.affinity, new.anti = dict(self.existing), dict(self.affinity), dict(self.anti)
        new.examples, new.uncertain, new.self_match = dict(self.examples), dict(self.uncertain), self.self_match
        return new

    def record(self, counts: dict, name: str, node_labels: dict, term: Term, example: str,
               term_index: int | None = None) -> None:
        value = node_labels.get(term.topology_key)
        if value is None:
            return
        pair = (term.topology_key, value)
        counts[pair] = counts.get(pair, 0) + 1
        key = (name, *pair) if term_index is None else (name, *pair, term_index)
        seen = self.examples.get(key, [])
        if len(seen) < _EXAMPLES:
            self.examples[key] = [*seen, example]

    def add(self, pod: Pod, node_name: str, node_labels: dict, cache: dict, incoming: Pod) -> None:
        """``updateWithPod`` with +1 for one pod on one node."""
        where = f"{pod.key} on {node_name}"
        for term in _existing_anti_terms(pod, cache) if _required(pod, True) else ():
            matched = term.matches(incoming, self.ns_labels)
            if matched is None:
                value = node_labels.get(term.topology_key)
                if value is not None:
                    self.uncertain.setdefault((term.topology_key, value), (
                        f"pod {where}, {term.describe()}: whether it selects this pod depends on the labels "
                        f"of namespace {incoming.metadata.namespace or ''!r}, which were not read"))
            elif matched:
                self.record(self.existing, "existing", node_labels, term, f"pod {where}, {term.describe()}")
        if self.affinity_terms and all(t.matches(pod, {}) for t in self.affinity_terms):
            for term in self.affinity_terms:
                self.record(self.affinity, "affinity", node_labels, term, where)
        for i, term in enumerate(self.anti_terms):
            if term.matches(pod, {}):
                self.record(self.anti, "anti", node_labels, term, where, i)


class InterPodAffinity(Plugin):
    NAME = NAME

    def pre_filter(self, cycle: Cycle) -> PreFilterResult:
        pod = cycle.pod.pod
        bad = unreadable(pod, "spec.affinity.podAffinity", "spec.affinity.podAntiAffinity", "metadata.labels",
                         "metadata.namespace")
        if bad:
            return self._result(Status.unknown(f"{NAME}: the pod's {', '.join(bad)} could not be read"))
        failure = _parse_errors(pod)
        if failure:
            return self._result(Status.unschedulable(f"parsing pod: {failure}", unresolvable=True))
        state = AffinityState()
        state.affinity_terms = affinity_terms(pod, _required(pod, False), "podAffinity")
        state.anti_terms = affinity_terms(pod, _required(pod, True), "podAntiAffinity")
        for term in (*state.affinity_terms, *state.anti_terms):
            if term.ns_selector.empty or term.ns_selector.nothing:
                continue
            if cycle.namespaces is None:
                return self._result(Status.unknown(
                    f"{NAME}: {term.describe()} selects namespaces by label, and the namespaces were not read"))
            term.namespaces = term.namespaces | {name for name, ns_labels in cycle.namespaces.items()
                                                 if term.ns_selector.matches(ns_labels or {})}
            term.ns_selector = lbl.NOTHING
        if cycle.namespaces is not None:
            state.ns_labels = cycle.namespaces.get(pod.metadata.namespace or "") or {}
        has_terms = bool(state.affinity_terms or state.anti_terms)
        cache: dict = {}
        bad_pod = None
        watched = ("spec.affinity.podAntiAffinity", "metadata.namespace") + \
            (("metadata.labels", "spec.affinity.podAffinity") if has_terms else ())
        for node_info in cycle.nodes:
            node_labels = node_info.node.metadata.labels
            node_name = node_info.name
            if node_info.node.invalid_fields and unreadable(node_info.node, "metadata.labels"):
                return self._result(Status.unknown(f"{NAME}: node {node_name}'s labels could not be read"))
            for p in node_info.pods:
                other = p.pod
                if other.invalid_fields and bad_pod is None and unreadable(other, *watched):
                    bad_pod = other.key
                if has_terms:
                    state.add(other, node_name, node_labels, cache, pod)
                    continue
                a = other.spec.affinity
                if a is None or a.pod_anti_affinity is None or \
                        not a.pod_anti_affinity.required_during_scheduling_ignored_during_execution:
                    continue
                state.add(other, node_name, node_labels, cache, pod)
        if bad_pod is not None:
            return self._result(Status.unknown(
                f"{NAME}: pod {bad_pod} could match an affinity rule but its labels, namespace or affinity "
                "could not be read"))
        if not state.existing and not has_terms and not state.uncertain:
            return self._result(Status(SKIP))
        state.self_match = bool(state.affinity_terms) and all(t.matches(pod, {}) for t in state.affinity_terms)
        return PreFilterResult(state=state)

    def filter(self, cycle: Cycle, state: Any, node: NodeInfo) -> Status:
        if state is None:
            return self._status(Status())
        node_labels = node.node.metadata.labels
        if state.affinity_terms:
            failed = self._affinity(state, node_labels)
            if failed is not None:
                return self._status(Status.unschedulable(
                    ERR_REASON_AFFINITY_RULES_NOT_MATCH, unresolvable=True,
                    evidence=[Evidence(ERR_REASON_AFFINITY_RULES_NOT_MATCH, detail=failed)]))
        if state.anti:
            for i, term in enumerate(state.anti_terms):
                value = node_labels.get(term.topology_key)
                if value is not None and state.anti.get((term.topology_key, value), 0) > 0:
                    # the count is per pair: another term with the same topologyKey may have made it
                    j = next((j for j in (i, *range(len(state.anti_terms)))
                              if state.examples.get(("anti", term.topology_key, value, j))), i)
                    pods = state.examples.get(("anti", term.topology_key, value, j), [])
                    detail = f"{state.anti_terms[j].describe()}: {term.topology_key}={value} has {_pods(pods)}"
                    return self._status(Status.unschedulable(
                        ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
                        evidence=[Evidence(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH, detail=detail)]))
        for (key, value), n in state.existing.items():
            if n > 0 and node_labels.get(key) == value:
                pods = state.examples.get(("existing", key, value), [])
                detail = f"{key}={value}: " + "; ".join(pods)
                return self._status(Status.unschedulable(
                    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
                    evidence=[Evidence(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, detail=detail)]))
        for (key, value), why in state.uncertain.items():
            if node_labels.get(key) == value:
                return self._status(Status.unknown(f"{NAME}: {key}={value}: {why}"))
        return self._status(Status())

    def add_pod(self, cycle: Cycle, state: Any, pod: PodInfo, node: NodeInfo) -> Any:
        if state is None:
            return state
        new = state.copy()
        new.add(pod.pod, node.name, node.node.metadata.labels, {}, cycle.pod.pod)
        return new

    # -- helpers ---------------------------------------------------------------------------------

    @staticmethod
    def _affinity(state: AffinityState, node_labels: dict) -> str | None:
        """``nodeTopologyMatchesAffinity``: None when satisfied, else why not (for evidence)."""
        missing = None
        for term in state.affinity_terms:
            value = node_labels.get(term.topology_key)
            if value is None:
                return f"{term.describe()}: the node has no label {term.topology_key}"
            if missing is None and state.affinity.get((term.topology_key, value), 0) <= 0:
                missing = (term, value)
        if missing is None:
            return None
        if not state.affinity and state.self_match:
            return None  # the first pod of a group that has affinity to itself
        term, value = missing
        n = len(state.affinity_terms)
        what = "the pod's podAffinity term" if n == 1 else f"all {n} of the pod's podAffinity terms"
        detail = f"{term.describe()}: no pod matching {what} in {term.topology_key}={value}"
        if state.affinity:
            where = sorted({f"{k}={v}" for (k, v) in state.affinity if k == term.topology_key})
            if where:
                detail += f" (there are in {', '.join(where[:_EXAMPLES])}{', ...' if len(where) > _EXAMPLES else ''})"
        else:
            detail += "; none anywhere, and the pod does not match them itself, so it cannot be the first of its group"
        return detail

    def _status(self, status: Status) -> Status:
        status.plugin = NAME
        return status

    def _result(self, status: Status) -> PreFilterResult:
        return PreFilterResult(status=self._status(status))


def _pods(pods: list[str]) -> str:
    return "pods matching it: " + ", ".join(pods) if pods else "pods matching it"


def _parse_errors(pod: Pod) -> str | None:
    """``framework.NewPodInfo``'s parse errors, aggregated as ``utilerrors.NewAggregate`` prints them."""
    a = pod.spec.affinity

    def preferred(part) -> list:
        return [w.pod_affinity_term for w in part.preferred_during_scheduling_ignored_during_execution] \
            if part is not None else []

    lists = [
        ("requiredAffinityTerms", _required(pod, False)),
        ("requiredAntiAffinityTerms", _required(pod, True)),
        ("preferredAffinityTerms", preferred(a.pod_affinity) if a is not None else []),
        ("preferredAntiAffinityTerms", preferred(a.pod_anti_affinity) if a is not None else []),
    ]
    errors = []
    for name, terms in lists:
        try:
            affinity_terms(pod, terms, name)
        except lbl.SelectorError as err:
            errors.append(f"{name}: {err}")
    errors = list(dict.fromkeys(errors))
    if not errors:
        return None
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
