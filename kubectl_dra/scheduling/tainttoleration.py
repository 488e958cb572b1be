"""TaintToleration, as kube-scheduler v1.37.2 runs it, and toleration matching as
``v1.Toleration.ToleratesTaint`` (k8s.io/api v0.37.2) decides it.

Only NoSchedule and NoExecute taints filter; PreferNoSchedule (and any other effect) only scores.
The scheduler's reason names no taint; the evidence does.
"""

from __future__ import annotations

from typing import Any, Iterable

from kubectl_dra.model.node import Taint
from kubectl_dra.model.pod import Toleration
from kubectl_dra.scheduling.checks import rejected, resize_deferred, resize_pre_filter, undetermined, unreadable
from kubectl_dra.scheduling.framework import Cycle, NodeInfo, Plugin, PreFilterResult, Status

# pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go (Filter writes this literal;
# its ErrReasonNotMatch constant, "node(s) had taints that the pod didn't tolerate", is unused)
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"
# pkg/scheduler/framework/plugins/helper/taint.go (DoNotScheduleTaintsFilterFunc)
FILTERED_EFFECTS = ("NoSchedule", "NoExecute")
_INT64 = 2**63


def _decimal_int64(text: str) -> int | None:
    """``content.IsDecimalInteger`` then ``strconv.ParseInt(s, 10, 64)``: an optional '-', no '+',
    no leading zeros ("0" itself is fine, "-0" is not), within int64."""
    digits = text[1:] if text.startswith("-") else text
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    if digits[0] == "0" and (len(digits) > 1 or text.startswith("-")):
        return None
    value = int(text)
    return value if -_INT64 <= value < _INT64 else None


def tolerates(toleration: Toleration, taint: Taint, comparison_operators: bool = False) -> bool:
    """``Toleration.ToleratesTaint``: an empty effect matches every effect, an empty key every key;
    "" is Equal (values equal), Exists matches any value, Gt/Lt compare the taint's value with the
    toleration's as integers (only with the TaintTolerationComparisonOperators gate, alpha, off by
    default: without it they tolerate nothing); any other operator tolerates nothing."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    operator = toleration.operator
    if operator in ("", "Equal"):
        return toleration.value == taint.value
    if operator == "Exists":
        return True
    if operator in ("Lt", "Gt") and comparison_operators:
        bound, value = _decimal_int64(toleration.value), _decimal_int64(taint.value)
        if bound is None or value is None:
            return False
        return value < bound if operator == "Lt" else value > bound
    return False


def tolerating(tolerations: Iterable[Toleration], taint: Taint, comparison_operators: bool = False
               ) -> Toleration | None:
    """``TolerationsTolerateTaint``, returning the first toleration that does (None: none does)."""
    for toleration in tolerations:
        if tolerates(toleration, taint, comparison_operators):
            return toleration
    return None


def untolerated_taints(taints: Iterable[Taint], tolerations: list[Toleration], comparison_operators: bool = False,
                       effects: tuple[str, ...] | None = FILTERED_EFFECTS) -> list[Taint]:
    """The taints ``FindMatchingUntoleratedTaint`` would find, in the node's order (it stops at the
    first; all are listed so a person sees every one to tolerate). ``effects=None``: every taint."""
    return [t for t in taints if (effects is None or t.effect in effects)
            and tolerating(tolerations, t, comparison_operators) is None]


class TaintToleration(Plugin):
    NAME = "TaintToleration"

    def __init__(self, *, resize_preemption: bool = False, comparison_operators: bool = False) -> None:
        self.resize_preemption = resize_preemption  # InPlacePodVerticalScalingSchedulerPreemption
        self.comparison_operators = comparison_operators  # TaintTolerationComparisonOperators

    def pre_filter(self, cycle: Cycle) -> PreFilterResult:
        pod = cycle.pod.pod
        if self.resize_preemption and (early := resize_pre_filter(self.NAME, pod)) is not None:
            return PreFilterResult(status=early)
        return PreFilterResult()

    def filter(self, cycle: Cycle, state: Any, node: NodeInfo) -> Status:
        pod = cycle.pod.pod
        if self.resize_preemption and resize_deferred(pod):
            return Status()
        bad = unreadable(node.node, "spec.taints")
        if bad:
            return undetermined(self.NAME, f"node {node.name}'s", bad)
        taints = node.node.spec.taints
        if not any(t.effect in FILTERED_EFFECTS for t in taints):
            return Status()
        bad = unreadable(pod, "spec.tolerations")
        if bad:
            return undetermined(self.NAME, "the pod's", bad)
        untolerated = untolerated_taints(taints, pod.spec.tolerations, self.comparison_operators)
        if not untolerated:
            return Status()
        return rejected(self.NAME, ERR_REASON_UNTOLERATED, ", ".join(map(str, untolerated)), unresolvable=True)
