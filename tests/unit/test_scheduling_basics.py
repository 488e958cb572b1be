"""The basic filters (NodeName, NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts,
NodeDeclaredFeatures) against kube-scheduler v1.37.2's own tables.

Sources (k8s.io/kubernetes@v1.37.2 pkg/scheduler/framework/plugins, k8s.io/api@v0.37.2,
k8s.io/component-helpers@v0.37.2, k8s.io/kube-scheduler@v0.37.2), cases named as upstream:

* nodename/node_name_test.go: TestNodeName, TestNodeName_PreFilter
* nodeunschedulable/node_unschedulable_test.go: TestNodeUnschedulable, TestNodeUnschedulable_DeferredResizeSkipped
* tainttoleration/taint_toleration_test.go: TestTaintTolerationFilter, TestTaintTolerationFilterWithFeatureGate,
  TestTaintToleration_DeferredResizeSkipped
* api core/v1/toleration_test.go: TestTolerationToleratesTaint, TestCompareNumericValues
* component-helpers scheduling/corev1/helpers_test.go: TestFindMatchingUntoleratedTaint
* nodeaffinity/node_affinity_test.go: TestNodeAffinity (every case), TestNodeAffinity_DeferredResizeSkipped
* nodeports/node_ports_test.go: TestNodePorts, TestPreFilterDisabled, TestFits, TestNodePorts_DeferredResizeSkipped
* kube-scheduler framework/types_test.go: TestHostPortInfo_Check
* nodedeclaredfeatures/nodedeclaredfeatures_test.go: TestPreFilter, TestFilter (with upstream's mock features)
* component-helpers nodedeclaredfeatures/features/*/…_test.go: TestInferForScheduling (restartallcontainers,
  usernamespaceshostnetwork); featureset_test.go's TryMap behaviour for unsorted input

The queueing-hint tables (isSchedulableAfter…) and scoring tables are not filters and are left out.
"""

from __future__ import annotations

import pytest

from kubectl_dra.model.node import Node, Taint
from kubectl_dra.model.pod import Pod, Toleration
from kubectl_dra.pools.nodeselector import NodeSelectorError, node_selector_matches
from kubectl_dra.scheduling import declaredfeatures as ndf
from kubectl_dra.scheduling import nodeaffinity as na
from kubectl_dra.scheduling import nodename as nn
from kubectl_dra.scheduling import nodeports as np_
from kubectl_dra.scheduling import tainttoleration as tt
from kubectl_dra.scheduling.framework import (ERROR, SKIP, SUCCESS, UNRESOLVABLE, UNSCHEDULABLE, Cycle, NodeInfo,
                                              PodInfo)

U, S = UNRESOLVABLE, UNSCHEDULABLE
DEFERRED = {"conditions": [{"type": "PodResizePending", "status": "True", "reason": "Deferred"}]}


# -- builders ------------------------------------------------------------------------------------------

def pod(spec: dict | None = None, status: dict | None = None, name: str = "p", raw: bool = False) -> Pod:
    data = {"metadata": {"name": name, "namespace": "default"}, "spec": spec or {}, "status": status or {}}
    return Pod.from_raw(data) if raw else Pod.model_validate(data)


def node(name: str = "", labels: dict | None = None, spec: dict | None = None, status: dict | None = None,
         raw: bool = False) -> Node:
    data = {"metadata": {"name": name, "labels": labels or {}}, "spec": spec or {}, "status": status or {}}
    return Node.from_raw(data) if raw else Node.model_validate(data)


def run(plugin, p: Pod, n: Node | NodeInfo | None = None, args: dict | None = None, prefilter: bool = True):
    """PreFilter (unless told not to) then Filter, as the upstream tests call them: (PreFilterResult, Status)."""
    info = n if isinstance(n, NodeInfo) else NodeInfo(n if n is not None else node())
    cycle = Cycle(PodInfo(p), [info], args=args or {})
    pre = plugin.pre_filter(cycle) if prefilter else None
    return pre, plugin.filter(cycle, pre.state if pre else None, info)


def verdict(status) -> tuple:
    """(code, message); an undetermined status is never a verdict."""
    assert status.undetermined is None, status.undetermined
    return (status.code, status.message) if status.code != SUCCESS else (SUCCESS, "")


OK = (SUCCESS, "")


# -- NodeName -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("pod_node, node_name, want", [
    ("", "", OK),                                              # no host specified
    ("foo", "foo", OK),                                        # host matches
    ("bar", "foo", (U, "node(s) didn't match the requested node name")),  # host doesn't match
])
def test_node_name(pod_node, node_name, want):
    pre, status = run(nn.NodeName(), pod({"nodeName": pod_node} if pod_node else {}), node(node_name))
    assert verdict(status) == want
    assert status.success or (status.plugin == "NodeName" and status.evidence[0].detail == 'the pod asks for node "bar"')


@pytest.mark.parametrize("spec, names", [({"nodeName": "foo"}, {"foo"}), ({}, None)])
def test_node_name_prefilter(spec, names):
    pre = nn.NodeName().pre_filter(Cycle(PodInfo(pod(spec)), []))
    assert pre.status.success and pre.node_names == names


# -- NodeUnschedulable --------------------------------------------------------------------------------

@pytest.mark.parametrize("tolerations, unschedulable, want", [
    ([], True, (U, "node(s) were unschedulable")),
    ([], False, OK),
    ([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}], True, OK),
    # beyond upstream's table: the same matching as TaintToleration
    ([{"operator": "Exists"}], True, OK),
    ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}], True,
     (U, "node(s) were unschedulable")),
    ([{"key": "node.kubernetes.io/unschedulable", "value": "true", "effect": "NoSchedule"}], True,
     (U, "node(s) were unschedulable")),  # the implied taint has no value: Equal "true" misses it
])
def test_node_unschedulable(tolerations, unschedulable, want):
    _, status = run(nn.NodeUnschedulable(), pod({"tolerations": tolerations}), node(spec={"unschedulable": unschedulable}))
    assert verdict(status) == want
    if not status.success:
        assert status.plugin == "NodeUnschedulable"
        assert "node.kubernetes.io/unschedulable:NoSchedule" in status.evidence[0].detail


@pytest.mark.parametrize("plugin", [nn.NodeUnschedulable(resize_preemption=True), tt.TaintToleration(resize_preemption=True),
                                    na.NodeAffinity(resize_preemption=True), np_.NodePorts(resize_preemption=True),
                                    ndf.NodeDeclaredFeatures(resize_preemption=True)])
def test_deferred_resize_skipped(plugin):
    """Test…_DeferredResizeSkipped: with the (alpha, default off) gate, PreFilter Skips and Filter passes."""
    p = pod({"nodeSelector": {"a": "b"}, "containers": [{"name": "c", "ports": [{"containerPort": 1, "hostPort": 1}]}]},
            DEFERRED)
    cycle = Cycle(PodInfo(p), [NodeInfo(node("node1", spec={"unschedulable": True}))])
    pre = plugin.pre_filter(cycle)
    assert pre.status.code == SKIP and pre.node_names is None
    assert plugin.filter(cycle, None, cycle.nodes[0]).success


def test_deferred_resize_counts_nothing_with_the_gate_off():
    """The 1.37 default: a deferred resize changes nothing."""
    p = pod({"nodeSelector": {"a": "b"}}, DEFERRED)
    _, status = run(na.NodeAffinity(), p, node("node1"))
    assert verdict(status) == (U, na.ERR_REASON_POD)


# -- TaintToleration ----------------------------------------------------------------------------------

UNTOLERATED = (U, "node(s) had untolerated taint(s)")


def taint(key, value="", effect="NoSchedule"):
    return {"key": key, "value": value, "effect": effect}


def tol(key="", op="", value="", effect=""):
    return {"key": key, "operator": op, "value": value, "effect": effect}


FILTER_CASES = [
    ("no tolerations, taints", [], [taint("dedicated", "user1")], False, UNTOLERATED),
    ("dedicated user1 NoSchedule", [tol("dedicated", "", "user1", "NoSchedule")], [taint("dedicated", "user1")], False, OK),
    ("dedicated user2 can't", [tol("dedicated", "Equal", "user2", "NoSchedule")], [taint("dedicated", "user1")], False,
     UNTOLERATED),
    ("Exists tolerates", [tol("foo", "Exists", "", "NoSchedule")], [taint("foo", "bar")], False, OK),
    ("multiple all tolerated", [tol("dedicated", "Equal", "user2", "NoSchedule"), tol("foo", "Exists", "", "NoSchedule")],
     [taint("dedicated", "user2"), taint("foo", "bar")], False, OK),
    ("effect doesn't match", [tol("foo", "Equal", "bar", "PreferNoSchedule")], [taint("foo", "bar")], False, UNTOLERATED),
    ("empty effect tolerates", [tol("foo", "Equal", "bar")], [taint("foo", "bar")], False, OK),
    ("PreferNoSchedule never blocks", [tol("dedicated", "Equal", "user2", "NoSchedule")],
     [taint("dedicated", "user1", "PreferNoSchedule")], False, OK),
    ("no toleration, PreferNoSchedule", [], [taint("dedicated", "user1", "PreferNoSchedule")], False, OK),
    ("Gt below threshold", [tol("node.example.com/priority-level", "Gt", "950", "NoSchedule")],
     [taint("node.example.com/priority-level", "800")], True, UNTOLERATED),
    ("Gt above threshold", [tol("node.kubernetes.io/sla", "Gt", "750", "NoSchedule")],
     [taint("node.kubernetes.io/sla", "950")], True, OK),
    ("Lt above threshold", [tol("node.example.com/priority-level", "Lt", "800", "NoSchedule")],
     [taint("node.example.com/priority-level", "950")], True, UNTOLERATED),
    ("Lt below threshold", [tol("node.kubernetes.io/sla", "Lt", "950", "NoSchedule")],
     [taint("node.kubernetes.io/sla", "800")], True, OK),
    ("Gt non-numeric taint", [tol("node.kubernetes.io/sla", "Gt", "950", "NoSchedule")],
     [taint("node.kubernetes.io/sla", "high")], True, UNTOLERATED),
    # TestTaintTolerationFilterWithFeatureGate
    ("gate on, Gt higher", [tol("node.kubernetes.io/sla", "Gt", "750", "NoSchedule")],
     [taint("node.kubernetes.io/sla", "950")], True, OK),
    ("gate off, Gt", [tol("node.kubernetes.io/sla", "Gt", "750", "NoSchedule")],
     [taint("node.kubernetes.io/sla", "950")], False, UNTOLERATED),
    ("gate on, Lt lower", [tol("node.kubernetes.io/sla", "Lt", "950", "NoSchedule")],
     [taint("node.kubernetes.io/sla", "800")], True, OK),
    ("gate off, Lt", [tol("node.kubernetes.io/sla", "Lt", "950", "NoSchedule")],
     [taint("node.kubernetes.io/sla", "800")], False, UNTOLERATED),
    ("gate off, mixed, only Equal needed", [tol("dedicated", "Equal", "user1", "NoSchedule"),
                                            tol("node.kubernetes.io/sla", "Gt", "750", "NoSchedule")],
     [taint("dedicated", "user1")], False, OK),
    ("gate off, mixed, Gt needed", [tol("dedicated", "Equal", "user1", "NoSchedule"),
                                    tol("node.kubernetes.io/sla", "Gt", "750", "NoSchedule")],
     [taint("dedicated", "user1"), taint("node.kubernetes.io/sla", "950")], False, UNTOLERATED),
    # beyond upstream's tables
    ("NoExecute filters too", [], [taint("k", "v", "NoExecute")], False, UNTOLERATED),
    ("empty key Exists tolerates all", [tol("", "Exists")], [taint("a", "1"), taint("b", "", "NoExecute")], False, OK),
    ("Exists of the key, any value", [tol("a", "Exists")], [taint("a", "1"), taint("a", "2", "NoExecute")], False, OK),
    ("unknown operator tolerates nothing", [tol("a", "Matches", "1")], [taint("a", "1")], False, UNTOLERATED),
]


@pytest.mark.parametrize("name, tolerations, taints, gate, want", FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_taint_toleration_filter(name, tolerations, taints, gate, want):
    _, status = run(tt.TaintToleration(comparison_operators=gate), pod({"tolerations": tolerations}),
                    node("nodeA", spec={"taints": taints}))
    assert verdict(status) == want


def test_taint_evidence_names_every_untolerated_taint():
    n = node("nodeA", spec={"taints": [taint("gpu", "true"), taint("soft", "x", "PreferNoSchedule"),
                                       taint("tolerated"), taint("drain", "", "NoExecute")]})
    _, status = run(tt.TaintToleration(), pod({"tolerations": [tol("tolerated", "Exists")]}), n)
    assert status.plugin == "TaintToleration"
    assert status.evidence[0].detail == "gpu=true:NoSchedule, drain:NoExecute"


T = ("NoSchedule", "NoExecute")
TOLERATES = [  # TestTolerationToleratesTaint: (toleration, taint, gate, tolerated)
    (tol("foo", "Exists", "", "NoSchedule"), taint("foo"), False, True),
    (tol("foo", "Exists", "", "NoSchedule"), taint("foo", "bar"), False, True),
    (tol("", "Exists", "", "NoSchedule"), taint("foo", "bar"), False, True),
    (tol("foo", "Equal", "bar", "NoSchedule"), taint("foo", "bar"), False, True),
    (tol("foo", "Equal", "value1", "NoSchedule"), taint("foo", "value2"), False, False),
    (tol("foo", "Equal", "bar", "NoSchedule"), taint("foo", "bar", "NoExecute"), False, False),
    (tol("node.kubernetes.io/sla", "Gt", "950", "NoSchedule"), taint("node.kubernetes.io/sla", "800"), True, False),
    (tol("node.kubernetes.io/sla", "Gt", "750", "NoSchedule"), taint("node.kubernetes.io/sla", "950"), True, True),
    (tol("node.kubernetes.io/sla", "Lt", "800", "NoSchedule"), taint("node.kubernetes.io/sla", "950"), True, False),
    (tol("node.kubernetes.io/sla", "Lt", "950", "NoSchedule"), taint("node.kubernetes.io/sla", "800"), True, True),
    (tol("node.kubernetes.io/sla", "Gt", "950", "NoSchedule"), taint("node.kubernetes.io/sla", "950"), True, False),
    (tol("node.kubernetes.io/sla", "Gt", "950", "NoSchedule"), taint("node.kubernetes.io/sla", "high"), True, False),
    (tol("test-key", "Gt", "-100", "NoSchedule"), taint("test-key", "-200"), True, False),
    (tol("test-key", "Gt", "9223372036854775806", "NoSchedule"), taint("test-key", "100"), True, False),
]


@pytest.mark.parametrize("toleration, taint_, gate, tolerated", TOLERATES)
def test_toleration_tolerates_taint(toleration, taint_, gate, tolerated):
    assert tt.tolerates(Toleration.model_validate(toleration), Taint.model_validate(taint_), gate) is tolerated


@pytest.mark.parametrize("tolerate, taint_value, op, want", [  # TestCompareNumericValues
    ("100", "200", "Gt", True), ("200", "100", "Gt", False), ("100", "100", "Gt", False),
    ("-100", "-50", "Gt", True), ("-50", "-100", "Gt", False), ("0", "1", "Gt", True),
    ("9223372036854775806", "9223372036854775807", "Gt", True),
    ("200", "100", "Lt", True), ("100", "200", "Lt", False), ("100", "100", "Lt", False),
    ("-50", "-100", "Lt", True), ("-100", "-50", "Lt", False), ("0", "-1", "Lt", True),
    ("abc", "100", "Gt", False), ("", "100", "Gt", False), ("0100", "200", "Gt", False), ("+100", "200", "Gt", False),
    ("100.5", "200", "Gt", False), ("-", "100", "Gt", False),
    ("100", "xyz", "Gt", False), ("100", "", "Gt", False), ("100", "0200", "Gt", False), ("100", "+200", "Lt", False),
    ("100", " 200 ", "Lt", False),
    ("100", "100", "Equal", True),  # Equal and Exists are not numeric: ToleratesTaint matches them itself
    ("100", "100", "Exists", True),
    ("0", "0", "Gt", False), ("0", "0", "Lt", False),
    ("0", "9223372036854775807", "Gt", True), ("0", "-9223372036854775808", "Lt", True),
    # beyond upstream: "-0" is not a decimal integer, nor is an int64 overflow
    ("-0", "5", "Gt", False), ("0", "9223372036854775808", "Gt", False), ("٣", "5", "Lt", False),
])
def test_compare_numeric_values(tolerate, taint_value, op, want):
    t = Toleration.model_validate(tol("k", op, tolerate, "NoSchedule"))
    assert tt.tolerates(t, Taint.model_validate(taint("k", taint_value)), True) is want


@pytest.mark.parametrize("tolerations, taints, effects, gate, tolerated", [  # TestFindMatchingUntoleratedTaint
    ([], [], None, False, True),
    ([tol("foo", "Exists", "", "NoSchedule")], [], None, False, True),
    ([tol("foo", "Exists", "", "NoSchedule")], [taint("foo")], None, False, True),
    ([tol("foo", "Exists", "", "NoSchedule")], [taint("bar")], (), False, True),
    ([tol("foo", "Exists", "", "NoSchedule")], [taint("bar")], None, False, False),
    ([tol("foo", "Exists", "", "NoExecute")], [taint("foo", "", "NoExecute"), taint("bar")], ("NoExecute",), False, True),
    ([tol("node.kubernetes.io/sla", "Gt", "950", "NoSchedule")], [taint("node.kubernetes.io/sla", "800")], None, True,
     False),
    ([tol("node.kubernetes.io/sla", "Gt", "750", "NoSchedule")], [taint("node.kubernetes.io/sla", "950")], None, True,
     True),
    ([tol("node.kubernetes.io/sla", "Lt", "800", "NoSchedule")], [taint("node.kubernetes.io/sla", "950")], None, True,
     False),
    ([tol("node.kubernetes.io/sla", "Gt", "950", "NoSchedule")], [taint("node.kubernetes.io/sla", "high")], None, True,
     False),
])
def test_find_matching_untolerated_taint(tolerations, taints, effects, gate, tolerated):
    found = tt.untolerated_taints([Taint.model_validate(t) for t in taints],
                                  [Toleration.model_validate(t) for t in tolerations], gate, effects)
    assert (not found) is tolerated


def test_unreadable_taints_or_tolerations_are_undetermined():
    p = pod({"tolerations": [{"key": "a", "operator": "Exists", "tolerationSeconds": "soon"}]}, raw=True)
    _, status = run(tt.TaintToleration(), p, node("n", spec={"taints": [taint("a")]}))
    assert status.undetermined and "spec.tolerations[0]" in status.undetermined and not status.success
    n = node("n", spec={"taints": [{"key": "a", "effect": ["NoSchedule"]}]}, raw=True)
    _, status = run(tt.TaintToleration(), pod(), n)
    assert status.undetermined and "spec.taints[0]" in status.undetermined
    _, status = run(nn.NodeUnschedulable(), p, node("n", spec={"unschedulable": True}))
    assert status.undetermined and not status.success


# -- NodeAffinity -------------------------------------------------------------------------------------

def expr(key, op, *values):
    return {"key": key, "operator": op, "values": list(values)}


def name_in(*values):
    return {"key": "metadata.name", "operator": "In", "values": list(values)}


def term(*expressions, fields=()):
    t = {}
    if expressions:
        t["matchExpressions"] = list(expressions)
    if fields:
        t["matchFields"] = list(fields)
    return t


def affinity(*terms, selector=None):
    spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}}
    if selector:
        spec["nodeSelector"] = selector
    return spec


def added(*terms):
    return {"NodeAffinity": {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}}


POD_ERR = (U, "node(s) didn't match Pod's node affinity/selector")
SKIPPED = (SKIP, "")
CONFLICT = (U, "pod affinity terms conflict")
# (name, pod spec, node labels, node name, want filter, want prefilter status, want node names, args, run prefilter)
AFFINITY = [
    ("missing labels", {"nodeSelector": {"foo": "bar"}}, {}, "", POD_ERR, OK, None, None, True),
    ("same labels", {"nodeSelector": {"foo": "bar"}}, {"foo": "bar"}, "", OK, OK, None, None, True),
    ("node labels are superset", {"nodeSelector": {"foo": "bar"}}, {"foo": "bar", "baz": "blah"}, "", OK, OK, None,
     None, True),
    ("node labels are subset", {"nodeSelector": {"foo": "bar", "baz": "blah"}}, {"foo": "bar"}, "", POD_ERR, OK, None,
     None, True),
    ("In matches", affinity(term(expr("foo", "In", "bar", "value2"))), {"foo": "bar"}, "", OK, OK, None, None, True),
    ("Gt matches", affinity(term(expr("kernel-version", "Gt", "0204"))), {"kernel-version": "0206"}, "", OK, OK, None,
     None, True),
    ("NotIn matches", affinity(term(expr("mem-type", "NotIn", "DDR", "DDR2"))), {"mem-type": "DDR3"}, "", OK, OK,
     None, None, True),
    ("Exists matches", affinity(term(expr("GPU", "Exists"))), {"GPU": "NVIDIA-GRID-K1"}, "", OK, OK, None, None, True),
    ("affinity doesn't match", affinity(term(expr("foo", "In", "value1", "value2"))), {"foo": "bar"}, "", POD_ERR, OK,
     None, None, True),
    ("empty MatchExpressions matches no objects", affinity({"matchExpressions": []}), {"foo": "bar"}, "", POD_ERR, OK,
     None, None, True),
    ("no Affinity", {}, {"foo": "bar"}, "", OK, SKIPPED, None, None, True),
    ("Affinity but nil NodeSelector", {"affinity": {"nodeAffinity": {}}}, {"foo": "bar"}, "", OK, SKIPPED, None, None,
     True),
    ("multiple matchExpressions ANDed match", affinity(term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))),
     {"GPU": "NVIDIA-GRID-K1"}, "", OK, OK, None, None, True),
    ("multiple matchExpressions ANDed don't match", affinity(term(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER"))),
     {"GPU": "NVIDIA-GRID-K1"}, "", POD_ERR, OK, None, None, True),
    ("multiple terms ORed", affinity(term(expr("foo", "In", "bar", "value2")), term(expr("diffkey", "In", "wrong", "value2"))),
     {"foo": "bar"}, "", OK, OK, None, None, True),
    ("Affinity and NodeSelector both satisfied", affinity(term(expr("foo", "Exists")), selector={"foo": "bar"}),
     {"foo": "bar"}, "", OK, OK, None, None, True),
    ("Affinity matches but NodeSelector not", affinity(term(expr("foo", "Exists")), selector={"foo": "bar"}),
     {"foo": "barrrrrr"}, "", POD_ERR, OK, None, None, True),
    ("invalid value in Affinity term", affinity(term(expr("foo", "NotIn", "invalid value: ___@#$%^"))), {"foo": "bar"}, "",
     POD_ERR, OK, None, None, True),
    ("matchFields In matches", affinity(term(fields=[name_in("node1")])), {}, "node1", OK, OK, {"node1"}, None, True),
    ("matchFields In does not match", affinity(term(fields=[name_in("node1")])), {}, "node2", POD_ERR, OK, {"node1"},
     None, True),
    ("two terms: matchFields no, matchExpressions yes",
     affinity(term(fields=[name_in("node1"), name_in("node2")]), term(expr("foo", "In", "bar"))), {"foo": "bar"}, "node2",
     OK, OK, None, None, True),
    ("one term: matchFields no, matchExpressions yes", affinity(term(expr("foo", "In", "bar"), fields=[name_in("node1")])),
     {"foo": "bar"}, "node2", POD_ERR, OK, {"node1"}, None, True),
    ("one term: both match", affinity(term(expr("foo", "In", "bar"), fields=[name_in("node1")])), {"foo": "bar"}, "node1",
     OK, OK, {"node1"}, None, True),
    ("two terms: neither matches", affinity(term(fields=[name_in("node1")]), term(expr("foo", "In", "not-match-to-bar"))),
     {"foo": "bar"}, "node2", POD_ERR, OK, None, None, True),
    ("two terms of node.Name affinity", affinity(term(fields=[name_in("node1")]), term(fields=[name_in("node2")])), {},
     "node2", OK, OK, {"node1", "node2"}, None, True),
    ("two conflicting match field requirements", affinity(term(fields=[name_in("node1"), name_in("node2")])),
     {"foo": "bar"}, "node2", POD_ERR, CONFLICT, None, None, True),
    ("matches added affinity and pod's", affinity(term(expr("zone", "In", "foo"))), {"zone": "foo"}, "node2", OK, OK, None,
     added(term(fields=[name_in("node2")])), True),
    ("matches added affinity but not pod's", affinity(term(expr("zone", "In", "bar"))), {"zone": "foo"}, "node2", POD_ERR,
     OK, None, added(term(fields=[name_in("node2")])), True),
    ("doesn't match added affinity", {}, {"zone": "foo"}, "node2",
     (U, "node(s) didn't match scheduler-enforced node affinity"), OK, None, added(term(expr("zone", "In", "bar"))), True),
    ("node selector without PreFilter", {"nodeSelector": {"foo": "bar"}}, {"foo": "bar", "baz": "blah"}, "", OK, None,
     None, None, False),
    ("node affinity without PreFilter", affinity(term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))),
     {"GPU": "NVIDIA-GRID-K1"}, "", OK, None, None, None, False),
    # beyond upstream's table
    ("invalid term is skipped, a valid one still matches",
     affinity(term(expr("foo", "Gt", "x")), term(expr("foo", "In", "bar"))), {"foo": "bar"}, "n", OK, OK, None, None, True),
    ("Gt bound -1 is not a label value: the term never matches", affinity(term(expr("n", "Gt", "-1"))), {"n": "5"}, "n",
     POD_ERR, OK, None, None, True),
    ("Gt compares the label as an integer", affinity(term(expr("n", "Gt", "9"))), {"n": "10"}, "n", OK, OK, None, None,
     True),
    ("Lt with a non-integer label", affinity(term(expr("n", "Lt", "9"))), {"n": "ten"}, "n", POD_ERR, OK, None, None, True),
    ("DoesNotExist", affinity(term(expr("gpu", "DoesNotExist"))), {"cpu": "x"}, "n", OK, OK, None, None, True),
    ("invalid label key", affinity(term(expr("a b", "Exists"))), {"a b": "x"}, "n", POD_ERR, OK, None, None, True),
    ("NotIn on metadata.name", affinity(term(fields=[{"key": "metadata.name", "operator": "NotIn", "values": ["n"]}])),
     {}, "n", POD_ERR, OK, None, None, True),
    ("nodeSelector value must be exact, empty included", {"nodeSelector": {"a": ""}}, {}, "n", POD_ERR, OK, None, None,
     True),
    ("In with names of a term that is invalid elsewhere narrows anyway",
     affinity(term(expr("x", "Gt", "z"), fields=[name_in("n")])), {"x": "1"}, "n", POD_ERR, OK, {"n"}, None, True),
]


@pytest.mark.parametrize("name, spec, labels, node_name, want, want_pre, want_names, args, prefilter", AFFINITY,
                         ids=[c[0] for c in AFFINITY])
def test_node_affinity(name, spec, labels, node_name, want, want_pre, want_names, args, prefilter):
    pre, status = run(na.NodeAffinity(), pod(spec), node(node_name, labels), args=args, prefilter=prefilter)
    if prefilter:
        assert verdict(pre.status) == want_pre
        assert pre.node_names == want_names
    assert verdict(status) == want


@pytest.mark.parametrize("spec, labels, detail", [
    ({"nodeSelector": {"zone": "a"}}, {"zone": "b"}, 'label zone: "b", wanted "a" (spec.nodeSelector)'),
    (affinity(term(expr("zone", "In", "a"))), {"zone": "b"}, 'nodeSelectorTerms[0]: label zone: "b", wanted In [a]'),
    (affinity(term(expr("zone", "In", "a")), term(expr("gpu", "Exists"))), {},
     "nodeSelectorTerms[0]: label zone: not set, wanted In [a]; nodeSelectorTerms[1]: label gpu: not set, wanted Exists"),
    (affinity(term(fields=[name_in("other")])), {}, 'nodeSelectorTerms[0]: metadata.name: "n", wanted In [other]'),
])
def test_node_affinity_evidence_names_the_label_and_term(spec, labels, detail):
    _, status = run(na.NodeAffinity(), pod(spec), node("n", labels))
    assert status.plugin == "NodeAffinity" and status.evidence[0].detail == detail
    assert na.required_affinity_mismatch(pod(spec), node("n", labels)) == detail
    assert na.required_affinity_mismatch(pod(spec), node("other", {"zone": "a", "gpu": "1"})) is None


@pytest.mark.parametrize("args", [
    added(term(expr("zone", "Gt", "x"))),
    {"NodeAffinity": {"addedAffinity": "zone=a"}},
    {"NodeAffinity": {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": term(expr("zone", "In"))}]}}},  # ValidateNodeAffinityArgs parses these too
    {"NodeAffinity": "x"},
])
def test_invalid_added_affinity_is_not_a_running_profile(args):
    """``New`` fails on it, so no running scheduler has it: undetermined, never a verdict."""
    pre, status = run(na.NodeAffinity(), pod(), node("n"), args=args)
    assert pre.status.undetermined and status.undetermined and not status.success


def test_unreadable_affinity_or_labels_are_undetermined():
    p = pod(affinity(term({"key": "zone", "operator": "In", "values": "a"})), raw=True)  # values not a list
    assert p.invalid_fields
    pre, status = run(na.NodeAffinity(), p, node("n", {"zone": "a"}))
    assert pre.status.undetermined and status.undetermined
    p = pod({"affinity": "zone=a"}, raw=True)
    assert run(na.NodeAffinity(), p, node("n"))[1].undetermined
    n = node("n", spec={}, status={}, raw=True)
    object.__setattr__(n, "_invalid", (type(p.invalid_fields[0])("metadata.labels.zone", "bad"),))
    assert run(na.NodeAffinity(), pod({"nodeSelector": {"zone": "a"}}), n)[1].undetermined


def test_strict_selector_now_checks_label_syntax_as_new_requirement_does():
    """``NewNodeSelector`` (DRA's slices) refuses what ``labels.NewRequirement`` refuses."""
    for bad in (expr("a b", "Exists"), expr("k", "In", "not a value"), expr("k", "Lt", "-3"), expr("", "Exists")):
        with pytest.raises(NodeSelectorError):
            node_selector_matches({"nodeSelectorTerms": [term(bad)]}, "n", {"k": "1"})
    assert node_selector_matches({"nodeSelectorTerms": [term(expr("k", "Gt", "0"))]}, "n", {"k": "+5"})
    assert node_selector_matches({"nodeSelectorTerms": [term(fields=[{"key": "x", "operator": "NotIn",
                                                                       "values": ["n"]}])]}, "n", {})


# -- NodePorts ----------------------------------------------------------------------------------------

def ports_pod(*infos: str, name: str = "p") -> Pod:
    """newPod: "PROTO/IP/PORT" host ports on one container."""
    ports = []
    for info in infos:
        proto, ip, port = info.split("/")
        ports.append({"hostIP": ip, "hostPort": int(port), "protocol": proto})
    return pod({"containers": [{"name": "c", "ports": ports}]}, name=name)


def ports_node(*pods: Pod) -> NodeInfo:
    return NodeInfo(node("m1"), [PodInfo(p) for p in pods])


PORTS_ERR = (S, "node(s) didn't have free ports for the requested pod ports")
PORTS = [  # TestNodePorts
    ("skip filter", pod(), ports_node(), SKIPPED, None),
    ("other port", ports_pod("UDP/127.0.0.1/8080"), ports_node(ports_pod("UDP/127.0.0.1/9090")), OK, OK),
    ("same udp port", ports_pod("UDP/127.0.0.1/8080"), ports_node(ports_pod("UDP/127.0.0.1/8080")), OK, PORTS_ERR),
    ("same tcp port", ports_pod("TCP/127.0.0.1/8080"), ports_node(ports_pod("TCP/127.0.0.1/8080")), OK, PORTS_ERR),
    ("different host ip", ports_pod("TCP/127.0.0.1/8080"), ports_node(ports_pod("TCP/127.0.0.2/8080")), OK, OK),
    ("different protocol", ports_pod("UDP/127.0.0.1/8080"), ports_node(ports_pod("TCP/127.0.0.1/8080")), OK, OK),
    ("second udp port conflict", ports_pod("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
     ports_node(ports_pod("UDP/127.0.0.1/8080")), OK, PORTS_ERR),
    ("first tcp port conflict", ports_pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
     ports_node(ports_pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081")), OK, PORTS_ERR),
    ("first tcp port conflict due to 0.0.0.0 hostIP", ports_pod("TCP/0.0.0.0/8001"),
     ports_node(ports_pod("TCP/127.0.0.1/8001")), OK, PORTS_ERR),
    ("TCP hostPort conflict due to 0.0.0.0 hostIP", ports_pod("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
     ports_node(ports_pod("TCP/127.0.0.1/8001")), OK, PORTS_ERR),
    ("second tcp port conflict to 0.0.0.0 hostIP", ports_pod("TCP/127.0.0.1/8001"),
     ports_node(ports_pod("TCP/0.0.0.0/8001")), OK, PORTS_ERR),
    ("second different protocol", ports_pod("UDP/127.0.0.1/8001"), ports_node(ports_pod("TCP/0.0.0.0/8001")), OK, OK),
    ("UDP hostPort conflict due to 0.0.0.0 hostIP", ports_pod("UDP/127.0.0.1/8001"),
     ports_node(ports_pod("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001")), OK, PORTS_ERR),
    ("non-sidecar initContainer using hostPort",
     pod({"initContainers": [{"name": "i", "ports": [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}]}]}),
     ports_node(ports_pod("TCP/0.0.0.0/8001")), SKIPPED, None),
    ("TCP hostPort conflict from sidecar initContainer",
     pod({"initContainers": [{"name": "i", "restartPolicy": "Always",
                              "ports": [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}]}]}),
     ports_node(ports_pod("TCP/0.0.0.0/8001")), OK, PORTS_ERR),
    # beyond upstream's table
    ("empty hostIP is 0.0.0.0", ports_pod("TCP//80"), ports_node(ports_pod("TCP/10.0.0.1/80")), OK, PORTS_ERR),
    (":: is not a wildcard", ports_pod("TCP/::/80"), ports_node(ports_pod("TCP/10.0.0.1/80")), OK, OK),
    ("empty protocol is TCP", ports_pod("/10.0.0.1/80"), ports_node(ports_pod("TCP/10.0.0.1/80")), OK, PORTS_ERR),
    ("a sidecar's port on the node counts", ports_pod("TCP/0.0.0.0/9"),
     ports_node(pod({"initContainers": [{"name": "i", "restartPolicy": "Always", "ports": [{"hostPort": 9}]}]})), OK,
     PORTS_ERR),
]


@pytest.mark.parametrize("name, p, info, want_pre, want", PORTS, ids=[c[0] for c in PORTS])
def test_node_ports(name, p, info, want_pre, want):
    plugin = np_.NodePorts()
    cycle = Cycle(PodInfo(p), [info])
    pre = plugin.pre_filter(cycle)
    assert verdict(pre.status) == want_pre
    if want is not None:
        assert verdict(plugin.filter(cycle, pre.state, info)) == want


def test_node_ports_evidence_names_the_port_and_its_pod():
    info = ports_node(ports_pod("TCP/0.0.0.0/8080", name="web"))
    _, status = run(np_.NodePorts(), ports_pod("TCP/127.0.0.1/8080"), info)
    assert status.plugin == "NodePorts" and status.evidence[0].detail == "TCP 8080 on 127.0.0.1 used by pod default/web"


def test_node_ports_prefilter_disabled():
    """TestPreFilterDisabled: Filter without PreFilter's state is an error."""
    status = np_.NodePorts().filter(Cycle(PodInfo(pod()), []), None, NodeInfo(node()))
    assert verdict(status) == (ERROR, 'reading "PreFilterNodePorts" from cycleState: not found')


@pytest.mark.parametrize("want, existing, fits", [  # TestFits
    (["TCP/127.0.0.1/80"], ["TCP/127.0.0.1/9090"], True),
    (["TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"],
     ["TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080"], True),
    (["TCP/127.0.0.1/80"], ["UDP/127.0.0.1/80"], True),
    (["TCP/127.0.0.1/80"], ["TCP/127.0.0.1/80"], False),
    (["TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"],
     ["TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080"], False),
])
def test_fits(want, existing, fits):
    _, status = run(np_.NodePorts(), ports_pod(*want), ports_node(ports_pod(*existing, name="e")))
    assert status.success is fits


@pytest.mark.parametrize("added_, check, conflict", [  # TestHostPortInfo_Check: (protocol, ip, port)
    ([("TCP", "127.0.0.1", 80)], ("", "", 81), False),
    ([("TCP", "127.0.0.1", 80)], ("", "", 80), True),
    ([("TCP", "127.0.0.1", 80)], ("", "", 0), False),
    ([("TCP", "127.0.0.1", 80)], ("TCP", "0.0.0.0", 80), True),
    ([("UDP", "127.0.0.1", 80)], ("TCP", "0.0.0.0", 80), False),
    ([("TCP", "127.0.0.1", 79), ("TCP", "127.0.0.1", 81), ("TCP", "127.0.0.1", 82)], ("TCP", "0.0.0.0", 80), False),
    ([("TCP", "0.0.0.0", 80)], ("TCP", "127.0.0.1", 80), True),
    ([("TCP", "0.0.0.0", 79), ("UDP", "0.0.0.0", 80), ("TCP", "0.0.0.0", 81), ("TCP", "0.0.0.0", 82)],
     ("TCP", "127.0.0.1", 80), False),
    ([("TCP", "127.0.0.1", 79), ("UDP", "127.0.0.1", 80), ("TCP", "127.0.0.1", 81), ("TCP", "127.0.0.1", 82)],
     ("TCP", "127.0.0.1", 80), False),
])
def test_host_port_info_check(added_, check, conflict):
    used = [(ip, proto, port) for proto, ip, port in added_]
    assert np_.conflicts(used, check[1], check[0], check[2]) is conflict


def test_unreadable_ports_are_undetermined_but_resources_are_not_ports():
    bad_ports = pod({"containers": [{"name": "c", "ports": [{"hostPort": "eighty"}]}]}, raw=True)
    assert np_.NodePorts().pre_filter(Cycle(PodInfo(bad_ports), [])).status.undetermined
    other = pod({"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}},
                                 "ports": [{"hostPort": 80}]}]}, name="o", raw=True)
    assert other.invalid_fields
    _, status = run(np_.NodePorts(), ports_pod("TCP/0.0.0.0/80"), ports_node(other))
    assert verdict(status) == PORTS_ERR
    # a pod on the node whose container was dropped whole may hold the port: never "fits"
    lost = pod({"containers": [{"ports": [{"hostPort": 80}]}]}, name="lost", raw=True)
    _, status = run(np_.NodePorts(), ports_pod("TCP/0.0.0.0/80"), ports_node(lost))
    assert status.undetermined and "default/lost" in status.undetermined
    assert np_.NodePorts().pre_filter(Cycle(PodInfo(pod({"containers": "web"}, raw=True)), [])).status.undetermined
    whole = Pod.from_raw({"metadata": {"name": "s"}, "spec": "x"})  # the whole spec dropped
    assert np_.NodePorts().pre_filter(Cycle(PodInfo(whole), [])).status.undetermined


# -- NodeDeclaredFeatures -----------------------------------------------------------------------------

def mock(name: str, infer: bool, max_version=None) -> ndf.Feature:
    return ndf.Feature(name, lambda spec: infer, max_version)


@pytest.mark.parametrize("enabled, features, version, want, state", [  # TestPreFilter
    (False, [mock("TestFeature1", True), mock("TestFeature2", False)], (1, 35, 0), SKIPPED, None),
    (True, [mock("TestFeature1", True), mock("TestFeature2", False)], (1, 35, 0), OK, ["TestFeature1"]),
    (True, [mock("TestFeature1", True, (1, 38, 0)), mock("TestFeature2", True, (1, 38, 0))], (1, 35, 0), OK,
     ["TestFeature1", "TestFeature2"]),
    (True, [mock("TestFeature1", False), mock("TestFeature2", False)], (1, 35, 0), SKIPPED, None),
    (True, [mock("TestFeature1", True, (1, 33, 0)), mock("TestFeature2", False)], (1, 34, 0), SKIPPED, None),
])
def test_declared_features_prefilter(enabled, features, version, want, state):
    plugin = ndf.NodeDeclaredFeatures(registry=tuple(features), version=version, enabled=enabled)
    pre = plugin.pre_filter(Cycle(PodInfo(pod()), []))
    assert verdict(pre.status) == want and pre.node_names is None
    assert pre.state == state


NDF_ERR = (U, "node(s) didn't match Pod's required features")


@pytest.mark.parametrize("enabled, declared, reqs, want", [  # TestFilter
    (False, ["FeatureA", "FeatureB"], None, OK),
    (True, ["FeatureA", "FeatureB"], ["FeatureA"], OK),
    (True, ["FeatureB"], ["FeatureA"], NDF_ERR),
    (True, ["FeatureA", "FeatureB", "FeatureC"], ["FeatureA", "FeatureC"], OK),
    (True, [], ["FeatureA"], NDF_ERR),  # node has no declared features
    (True, ["FeatureA"], ["FeatureA", "FeatureB"], NDF_ERR),
    (True, [], None, (ERROR, 'error reading "PreFilterNodeDeclaredFeatures" from cycle-state: not found')),
])
def test_declared_features_filter(enabled, declared, reqs, want):
    plugin = ndf.NodeDeclaredFeatures(registry=tuple(mock(n, False) for n in ("FeatureA", "FeatureB", "FeatureC")),
                                      enabled=enabled)
    info = NodeInfo(node("node-1", status={"declaredFeatures": declared}))
    assert verdict(plugin.filter(Cycle(PodInfo(pod()), [info]), reqs, info)) == want


RESTART_ALL = {"name": "container", "restartPolicy": "Never", "restartPolicyRules": [
    {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [1]}}]}
PLAIN = {"name": "name", "image": "image"}


@pytest.mark.parametrize("spec, required", [
    # restartallcontainers TestInferForScheduling
    ({"initContainers": [RESTART_ALL], "containers": [PLAIN]}, ["RestartAllContainersOnContainerExits"]),
    ({"initContainers": [PLAIN], "containers": [RESTART_ALL]}, ["RestartAllContainersOnContainerExits"]),
    ({"initContainers": [PLAIN], "containers": [{"name": "name2"}]}, []),
    # usernamespaceshostnetwork TestInferForScheduling
    ({"hostNetwork": True, "hostUsers": False}, ["UserNamespacesHostNetworkSupport"]),
    ({"hostNetwork": True}, []),
    ({"hostNetwork": True, "hostUsers": True}, []),
    ({"hostNetwork": False, "hostUsers": False}, []),
    # volumebindmountoptions (no upstream test file): any container kind
    ({"ephemeralContainers": [{"name": "e", "volumeMounts": [{"name": "v", "mountPath": "/v",
                                                              "bindMountOptions": ["ro"]}]}]},
     ["VolumeBindMountOptions"]),
    ({"containers": [{"name": "c", "restartPolicyRules": [{"action": "Restart"}],
                      "volumeMounts": [{"name": "v", "mountPath": "/v"}]}]}, []),
])
def test_declared_features_inferred_from_the_spec(spec, required):
    assert ndf.NodeDeclaredFeatures().required(pod(spec)) == required


def test_declared_features_on_real_nodes():
    p = pod({"hostNetwork": True, "hostUsers": False, "containers": [RESTART_ALL]})
    plugin = ndf.NodeDeclaredFeatures()
    both = ["RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport"]
    _, status = run(plugin, p, node("new", status={"declaredFeatures": [*both, "Unknown"]}))
    assert status.success
    _, status = run(plugin, p, node("old"))  # a kubelet that declares nothing refuses the pod
    assert verdict(status) == NDF_ERR
    assert status.evidence[0].detail == f"missing {', '.join(both)} (the node declares no features)"
    # TryMap walks a sorted list; an unsorted one (never from the API server) loses the smaller name
    _, status = run(plugin, p, node("unsorted", status={"declaredFeatures": list(reversed(both))}))
    assert verdict(status) == NDF_ERR and status.evidence[0].detail.startswith("missing RestartAll")
    assert run(plugin, pod(), node("old"))[0].status.code == SKIP  # nothing required: the filter never runs


def test_unreadable_feature_fields_are_undetermined():
    p = pod({"hostNetwork": True, "hostUsers": "maybe"}, raw=True)
    assert ndf.NodeDeclaredFeatures().pre_filter(Cycle(PodInfo(p), [])).status.undetermined
    p = pod({"containers": [{"name": "c", "restartPolicyRules": [{"action": ["RestartAllContainers"]}]}]}, raw=True)
    assert ndf.NodeDeclaredFeatures().pre_filter(Cycle(PodInfo(p), [])).status.undetermined
    p = pod({"containers": [{"name": "c", "ports": [{"hostPort": "x"}]}]}, raw=True)  # not read by any inference
    assert p.invalid_fields and ndf.NodeDeclaredFeatures().pre_filter(Cycle(PodInfo(p), [])).status.code == SKIP
    n = node("n", status={"declaredFeatures": "all"}, raw=True)
    _, status = run(ndf.NodeDeclaredFeatures(), pod({"hostNetwork": True, "hostUsers": False}), n)
    assert status.undetermined and not status.success
