"""NodeAffinity, as kube-scheduler v1.37.2 runs it: ``spec.nodeSelector`` AND the required node
affinity, plus the profile's ``addedAffinity`` (NodeAffinityArgs).

Two parse rules, both upstream's: the pod's affinity is a *lazy* selector (an invalid term never
matches, the other terms still may, and Filter ignores the parse error: the pod is refused
UnschedulableAndUnresolvable on a node no valid term matches); ``addedAffinity`` is parsed
strictly when the scheduler starts, so an invalid one means this is not the running profile
(undetermined here). The matcher is :mod:`kubectl_dra.pools.nodeselector`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from kubectl_dra.pools.nodeselector import NodeSelectorError, Term, parse_terms
from kubectl_dra.scheduling.checks import rejected, resize_deferred, resize_pre_filter, undetermined, unreadable
from kubectl_dra.scheduling.framework import SKIP, UNRESOLVABLE, Cycle, NodeInfo, Plugin, PreFilterResult, Status

NAME = "NodeAffinity"
# pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go (ErrReasonPod)
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
# pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go (errReasonEnforced)
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
# pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go (errReasonConflict)
ERR_REASON_CONFLICT = "pod affinity terms conflict"
OBJECT_NAME_FIELD = "metadata.name"  # metav1.ObjectNameField
_REQUIRED = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


@dataclass
class _State:
    """``preFilterState`` (the pod's RequiredNodeAffinity) and the plugin's parsed addedAffinity."""
    node_selector: dict[str, str]
    terms: list[Term] | None  # None: no required node affinity
    added: list[Term] | None  # None: no addedAffinity.requiredDuringSchedulingIgnoredDuringExecution


class _Undetermined(Exception):
    pass


def added_terms(args: Any) -> list[Term] | None:
    """``NodeAffinityArgs.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution`` parsed as
    ``New`` parses it (``NewNodeSelector``: any invalid term fails the plugin, and the scheduler)."""
    if args is None:
        return None
    if not isinstance(args, Mapping):
        raise _Undetermined(f"{NAME}: the profile's args are not an object")
    added = args.get("addedAffinity")
    if added is None:
        return None
    if not isinstance(added, Mapping):
        raise _Undetermined(f"{NAME}: the profile's addedAffinity is not an object")
    errors = []
    preferred = added.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    if not isinstance(preferred, list):  # ValidateNodeAffinityArgs parses the preferred terms too
        errors.append("preferredDuringSchedulingIgnoredDuringExecution: must be a list")
    else:
        for i, pref in enumerate(preferred):
            if not isinstance(pref, Mapping):
                errors.append(f"preferredDuringSchedulingIgnoredDuringExecution[{i}]: not an object")
            elif pref.get("weight"):  # NewPreferredSchedulingTerms skips a zero weight unparsed
                term = parse_terms({"nodeSelectorTerms": [pref.get("preference") or {}]})
                errors += [f"preferredDuringSchedulingIgnoredDuringExecution[{i}]: {t.error}" for t in term if t.error]
    required = added.get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = None
    if required is not None:
        try:
            terms = parse_terms(required)
        except NodeSelectorError as exc:
            errors.append(str(exc))
        else:
            errors += [t.error for t in terms if t.error]
    if errors:
        raise _Undetermined(f"{NAME}: the profile's addedAffinity is invalid ({'; '.join(errors)}): a scheduler "
                            "with it does not start")
    return terms


def _required(pod: Any) -> Any:
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return None
    return affinity.node_affinity.required_during_scheduling_ignored_during_execution


def _state(cycle: Cycle) -> _State:
    pod = cycle.pod.pod
    bad = unreadable(pod, "spec.nodeSelector", _REQUIRED)
    if bad:
        raise _Undetermined(f"{NAME}: the pod's {', '.join(bad)} could not be read")
    required = _required(pod)
    terms = None
    if required is not None:
        terms = parse_terms(required.model_dump(by_alias=True))  # the typed view always has a terms list
    return _State(dict(pod.spec.node_selector), terms, added_terms(cycle.args.get(NAME)))


def _selector_mismatch(selector: Mapping[str, str], labels: Mapping[str, str]) -> str | None:
    """``labels.SelectorFromSet(spec.nodeSelector)``: every key present with exactly that value."""
    for key in sorted(selector):
        if labels.get(key) != selector[key] or key not in labels:
            have = f'"{labels[key]}"' if key in labels else "not set"
            return f'label {key}: {have}, wanted "{selector[key]}" (spec.nodeSelector)'
    return None


def _terms_mismatch(terms: list[Term], name: str, labels: Mapping[str, str]) -> str | None:
    """None when a term matches (terms are ORed), else why each failed."""
    why = []
    for term in terms:
        miss = term.mismatch(name, labels)
        if miss is None:
            return None
        why.append(f"nodeSelectorTerms[{term.index}]: {miss}")
    return "; ".join(why) or "no nodeSelectorTerms (an empty one matches no node)"


def required_affinity_mismatch(pod: Any, node: Any) -> str | None:
    """``GetRequiredNodeAffinity(pod).Match(node)`` (parse errors ignored: an invalid term never
    matches): None when the node satisfies the pod's nodeSelector and required node affinity, else
    why not. For other plugins that ask the same question (PodTopologySpread's nodeAffinityPolicy).
    The caller checks the pod's and node's fields were readable (:func:`checks.unreadable`)."""
    labels = node.metadata.labels
    miss = _selector_mismatch(pod.spec.node_selector, labels)
    required = _required(pod)
    if miss is None and required is not None:
        miss = _terms_mismatch(parse_terms(required.model_dump(by_alias=True)), node.name, labels)
    return miss


class NodeAffinity(Plugin):
    NAME = NAME

    def __init__(self, *, resize_preemption: bool = False) -> None:
        self.resize_preemption = resize_preemption  # InPlacePodVerticalScalingSchedulerPreemption

    def pre_filter(self, cycle: Cycle) -> PreFilterResult:
        pod = cycle.pod.pod
        if self.resize_preemption and (early := resize_pre_filter(NAME, pod)) is not None:
            return PreFilterResult(status=early)
        try:
            state = _state(cycle)
        except _Undetermined as why:
            return PreFilterResult(status=self._status(Status.unknown(str(why))))
        if state.terms is None and state.added is None and not state.node_selector:
            return PreFilterResult(status=self._status(Status(SKIP)))  # nothing to do with the pod
        required = _required(pod)
        if required is None or not required.node_selector_terms:
            return PreFilterResult(state=state)
        # Affinity to specific nodes: the union over terms of each term's metadata.name In sets
        # (intersected within a term, ANDed); one term without them means every node.
        names: set[str] = set()
        for term in required.node_selector_terms:
            term_names: set[str] | None = None
            for req in term.match_fields:
                if req.key == OBJECT_NAME_FIELD and req.operator == "In":
                    term_names = set(req.values) if term_names is None else term_names & set(req.values)
            if term_names is None:
                return PreFilterResult(state=state)
            names |= term_names
        if not names:
            return PreFilterResult(status=self._status(Status(UNRESOLVABLE, [ERR_REASON_CONFLICT])), state=state)
        return PreFilterResult(node_names=names, state=state)

    def filter(self, cycle: Cycle, state: Any, node: NodeInfo) -> Status:
        if self.resize_preemption and resize_deferred(cycle.pod.pod):
            return Status()
        if not isinstance(state, _State):  # PreFilter skipped or not run: compute it here, as upstream does
            try:
                state = _state(cycle)
            except _Undetermined as why:
                return self._status(Status.unknown(str(why)))
        bad = unreadable(node.node, "metadata.labels")
        if bad:
            return undetermined(NAME, f"node {node.name}'s", bad)
        labels = node.node.metadata.labels
        if state.added is not None:
            miss = _terms_mismatch(state.added, node.name, labels)
            if miss is not None:
                return rejected(NAME, ERR_REASON_ENFORCED, f"addedAffinity: {miss}", unresolvable=True)
        miss = _selector_mismatch(state.node_selector, labels)
        if miss is None and state.terms is not None:
            miss = _terms_mismatch(state.terms, node.name, labels)
        if miss is not None:
            return rejected(NAME, ERR_REASON_POD, miss, unresolvable=True)
        return Status()

    @staticmethod
    def _status(status: Status) -> Status:
        status.plugin = NAME
        return status
