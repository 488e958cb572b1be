"""NodeName and NodeUnschedulable, as kube-scheduler v1.37.2 runs them."""

from __future__ import annotations

from typing import Any

from kubectl_dra.model.node import Taint
from kubectl_dra.scheduling.checks import rejected, resize_deferred, resize_pre_filter, undetermined, unreadable
from kubectl_dra.scheduling.framework import Cycle, NodeInfo, Plugin, PreFilterResult, Status
from kubectl_dra.scheduling.tainttoleration import tolerating

# pkg/scheduler/framework/plugins/nodename/node_name.go (ErrReason)
ERR_REASON_NODE_NAME = "node(s) didn't match the requested node name"
# pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go (ErrReasonUnschedulable)
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
# k8s.io/api/core/v1/well_known_taints.go (TaintNodeUnschedulable)
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


class NodeName(Plugin):
    """``spec.nodeName`` set: only that node. PreFilter narrows to it; Filter refuses any other
    UnschedulableAndUnresolvable, so preemption never tries them."""

    NAME = "NodeName"

    def pre_filter(self, cycle: Cycle) -> PreFilterResult:
        pod = cycle.pod.pod
        bad = unreadable(pod, "spec.nodeName")
        if bad:
            return PreFilterResult(status=undetermined(self.NAME, "the pod's", bad))
        if pod.spec.node_name:
            return PreFilterResult(node_names={pod.spec.node_name})
        return PreFilterResult()

    def filter(self, cycle: Cycle, state: Any, node: NodeInfo) -> Status:
        pod = cycle.pod.pod
        bad = unreadable(pod, "spec.nodeName")
        if bad:
            return undetermined(self.NAME, "the pod's", bad)
        wanted = pod.spec.node_name
        if not wanted or wanted == node.name:  # Fits
            return Status()
        return rejected(self.NAME, ERR_REASON_NODE_NAME, f'the pod asks for node "{wanted}"', unresolvable=True)


class NodeUnschedulable(Plugin):
    """A cordoned node (``spec.unschedulable``) refuses every pod that does not tolerate the taint
    ``node.kubernetes.io/unschedulable:NoSchedule``, whether or not the node carries that taint.
    It has no PreFilter work (Skip only for a deferred resize, with the alpha gate on)."""

    NAME = "NodeUnschedulable"

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
        bad = unreadable(node.node, "spec.unschedulable")
        if bad:
            return undetermined(self.NAME, f"node {node.name}'s", bad)
        if not node.node.spec.unschedulable:
            return Status()
        bad = unreadable(pod, "spec.tolerations")
        if bad:
            return undetermined(self.NAME, "the pod's", bad)
        taint = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect="NoSchedule")
        if tolerating(pod.spec.tolerations, taint, self.comparison_operators) is not None:
            return Status()
        return rejected(self.NAME, ERR_REASON_UNSCHEDULABLE,
                        f"spec.unschedulable is true and no toleration of the pod tolerates {taint}",
                        unresolvable=True)
