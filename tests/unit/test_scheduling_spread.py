"""PodTopologySpread's filter against kube-scheduler v1.37.2's own tables
(pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go: TestSingleConstraint,
TestMultipleConstraints, TestPreFilterState, TestPreFilterStateAddPod), plus the messages, the
evidence, the profile defaults and the quirks the code has (empty selector, constraint order)."""

from __future__ import annotations

import time

import pytest

from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra import labels as lbl
from kubectl_dra.scheduling.framework import (ERROR, SKIP, SUCCESS, UNRESOLVABLE, UNSCHEDULABLE, Cycle, NodeInfo,
                                              PodInfo)
from kubectl_dra.scheduling.topologyspread import (ERR_REASON_CONSTRAINTS_NOT_MATCH, ERR_REASON_NODE_LABEL_NOT_MATCH,
                                                   PodTopologySpread)

OK, UNS, UNR = SUCCESS, UNSCHEDULABLE, UNRESOLVABLE
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}  # fooSelector
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}  # barSelector
UNSCHEDULABLE_TAINT = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]


def sc(max_skew, key, selector, min_domains=None, affinity_policy=None, taints_policy=None, match_label_keys=None,
       when="DoNotSchedule"):
    """``st.SpreadConstraint(maxSkew, key, when, selector, minDomains, nodeAffinityPolicy, nodeTaintsPolicy, mlk)``."""
    c = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": selector}
    if min_domains is not None:
        c["minDomains"] = min_domains
    if affinity_policy:
        c["nodeAffinityPolicy"] = affinity_policy
    if taints_policy:
        c["nodeTaintsPolicy"] = taints_policy
    if match_label_keys:
        c["matchLabelKeys"] = match_label_keys
    return c


def mkpod(name="p", labels=None, node=None, ns=None, constraints=(), node_selector=None, affinity_in=None,
          affinity_not_in=None, tolerations=None, terminating=False) -> Pod:
    meta = {"name": name, "labels": labels or {}}
    if ns:
        meta["namespace"] = ns
    if terminating:
        meta["deletionTimestamp"] = "2026-11-20T08:00:00Z"
    spec: dict = {"containers": [{"name": "c"}], "topologySpreadConstraints": list(constraints)}
    if node:
        spec["nodeName"] = node
    if node_selector:
        spec["nodeSelector"] = node_selector
    exprs = []
    if affinity_in:
        exprs.append({"key": affinity_in[0], "operator": "In", "values": affinity_in[1]})
    if affinity_not_in:
        exprs.append({"key": affinity_not_in[0], "operator": "NotIn", "values": affinity_not_in[1]})
    if exprs:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": exprs}]}}}
    if tolerations:
        spec["tolerations"] = tolerations
    return Pod.model_validate({"metadata": meta, "spec": spec})


def mknode(name, taints=None, **node_labels) -> Node:
    return Node.model_validate({"metadata": {"name": name, "labels": node_labels},
                                "spec": {"taints": taints or []}})


def zn(name, zone, **extra):
    """A node labelled zone=<zone>, node=<name> (the upstream tables' node-a .. node-y)."""
    return mknode(name, zone=zone, node=name, **extra)


FOUR = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"), zn("node-y", "zone2")]


def ex(name, node, ns=None, terminating=False, **pod_labels):
    """An existing pod with labels (``foo=""`` by keyword ``foo=""``)."""
    return mkpod(name, labels=pod_labels, node=node, ns=ns, terminating=terminating)


def cycle(pod, nodes, pods=(), args=None, nominated=None) -> Cycle:
    infos = [NodeInfo(n, [PodInfo(p) for p in pods if p.spec.node_name == n.name]) for n in nodes]
    return Cycle(pod=PodInfo(pod), nodes=infos, args=args or {}, nominated=nominated or {})


def run(pod, nodes, pods=(), args=None):
    """PreFilter, then Filter on every node: {node: code} (or the PreFilter status when not Success)."""
    c = cycle(pod, nodes, pods, args)
    plugin = PodTopologySpread()
    pre = plugin.pre_filter(c)
    if not pre.status.success:
        return pre.status
    return {n.name: plugin.filter(c, pre.state, n).code for n in c.nodes}


def codes(**by_node):
    return by_node


P = "p"
SINGLE = [
    ("no existing pods",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO)]), FOUR, [],
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("no existing pods, incoming pod doesn't match itself",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", BAR)]), FOUR, [],
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("existing pods in a different namespace do not count",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO)]), FOUR,
     [ex("p-a1", "node-a", ns="ns1", foo=""), ex("p-b1", "node-a", ns="ns2", foo=""), ex("p-x1", "node-x", foo=""),
      ex("p-y1", "node-y", foo="")],
     {"node-a": OK, "node-b": OK, "node-x": UNS, "node-y": UNS}),
    ("existing pods do not match null selector",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", None)]), FOUR,
     [ex("p-x1", "node-x", foo=""), ex("p-y1", "node-y", foo="")],
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("pods spread across zones as 3/3, all nodes fit",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO)]), FOUR,
     [ex("p-a1", "node-a", foo=""), ex("p-a2", "node-a", foo=""), ex("p-b1", "node-b", foo=""),
      ex("p-y1", "node-y", foo=""), ex("p-y2", "node-y", foo=""), ex("p-y3", "node-y", foo="")],
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO)]),
     [zn("node-a", "zone1"), mknode("node-b", zon="zone1", node="node-b"), zn("node-x", "zone2"),
      zn("node-y", "zone2")],
     [ex("p-a1", "node-a", foo=""), ex("p-b1", "node-b", foo=""), ex("p-x1", "node-x", foo=""),
      ex("p-y1", "node-y", foo="")],
     {"node-a": OK, "node-b": UNR, "node-x": UNS, "node-y": UNS}),
    ("pod cannot be scheduled as all nodes don't have label 'rack'",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "rack", FOO)]), [zn("node-a", "zone1"), zn("node-x", "zone2")], [],
     {"node-a": UNR, "node-x": UNR}),
    ("pods spread across nodes as 2/1/0/3, only node-x fits",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "node", FOO)]), FOUR,
     [ex("p-a1", "node-a", foo=""), ex("p-a2", "node-a", foo=""), ex("p-b1", "node-b", foo=""),
      ex("p-y1", "node-y", foo=""), ex("p-y2", "node-y", foo=""), ex("p-y3", "node-y", foo="")],
     {"node-a": UNS, "node-b": UNS, "node-x": OK, "node-y": UNS}),
    ("pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
     mkpod(labels={"foo": ""}, constraints=[sc(2, "node", FOO)]), FOUR,
     [ex("p-a1", "node-a", foo=""), ex("p-a2", "node-a", foo=""), ex("p-b1", "node-b", foo=""),
      ex("p-y1", "node-y", foo=""), ex("p-y2", "node-y", foo=""), ex("p-y3", "node-y", foo="")],
     {"node-a": UNS, "node-b": OK, "node-x": OK, "node-y": UNS}),
    ("pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
     mkpod(labels={"bar": ""}, constraints=[sc(1, "node", FOO)]), FOUR,
     [ex("p-a1", "node-a", foo=""), ex("p-a2", "node-a", foo=""), ex("p-b1", "node-b", foo=""),
      ex("p-y1", "node-y", foo=""), ex("p-y2", "node-y", foo=""), ex("p-y3", "node-y", foo="")],
     {"node-a": UNS, "node-b": OK, "node-x": OK, "node-y": UNS}),
    ("incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
     mkpod(labels={"foo": ""}, affinity_in=("node", ["node-a", "node-y"]), constraints=[sc(1, "node", FOO)]), FOUR,
     [ex("p-a1", "node-a", foo=""), ex("p-a2", "node-a", foo=""), ex("p-b1", "node-b", foo=""),
      ex("p-y1", "node-y", foo=""), ex("p-y2", "node-y", foo=""), ex("p-y3", "node-y", foo="")],
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": UNS}),
    ("terminating Pods should be excluded",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "node", FOO)]),
     [mknode("node-a", node="node-a"), mknode("node-b", node="node-b")],
     [ex("p-a", "node-a", terminating=True, foo=""), ex("p-b", "node-b", foo="")],
     {"node-a": OK, "node-b": UNS}),
    ("incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
     mkpod(labels={"foo": ""}, affinity_not_in=("node", ["node-b"]), constraints=[sc(1, "zone", FOO)]), FOUR,
     [ex("p-b1", "node-b", foo=""), ex("p-b2", "node-b", foo=""), ex("p-y1", "node-y", foo="")],
     {"node-a": OK, "node-b": OK, "node-x": UNS, "node-y": UNS}),
    ("pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the third node fits",
     mkpod(labels={"foo": ""}, constraints=[sc(2, "node", FOO, min_domains=4)]),
     [mknode("node-a", node="node-a"), mknode("node-b", node="node-b"), mknode("node-c", node="node-c")],
     [ex("p-a1", "node-a", foo=""), ex("p-a2", "node-a", foo=""), ex("p-b1", "node-b", foo=""),
      ex("p-b2", "node-b", foo=""), ex("p-c1", "node-c", foo="")],
     {"node-a": UNS, "node-b": UNS, "node-c": OK}),
    ("pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, then the all nodes fit",
     mkpod(labels={"foo": ""}, constraints=[sc(2, "node", FOO, min_domains=2)]),
     [mknode("node-a", node="node-a"), mknode("node-b", node="node-b"), mknode("node-c", node="node-c")],
     [ex("p-a1", "node-a", foo=""), ex("p-a2", "node-a", foo=""), ex("p-b1", "node-b", foo=""),
      ex("p-b2", "node-b", foo=""), ex("p-c1", "node-c", foo="")],
     {"node-a": OK, "node-b": OK, "node-c": OK}),
    ("pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the third and fourth "
     "nodes fit",
     mkpod(labels={"foo": ""}, constraints=[sc(2, "zone", FOO, min_domains=3)]), FOUR,
     [ex("p-b1", "node-a", foo=""), ex("p-b2", "node-b", foo=""), ex("p-y1", "node-y", foo="")],
     {"node-a": UNS, "node-b": UNS, "node-x": OK, "node-y": OK}),
    ("pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then the all nodes fit",
     mkpod(labels={"foo": ""}, constraints=[sc(2, "zone", FOO, min_domains=1)]), FOUR,
     [ex("p-b1", "node-a", foo=""), ex("p-b2", "node-b", foo=""), ex("p-y1", "node-y", foo="")],
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("NodeAffinityPolicy honored with labelSelectors",
     mkpod(labels={"foo": ""}, node_selector={"foo": ""}, constraints=[sc(1, "node", FOO)]),
     [mknode("node-a", node="node-a", foo=""), mknode("node-b", node="node-b", foo=""),
      mknode("node-x", node="node-x", foo=""), mknode("node-y", node="node-y")],
     [ex("p-b1", "node-a", foo=""), ex("p-b2", "node-b", foo=""), ex("p-y1", "node-y", foo="")],
     {"node-a": UNS, "node-b": UNS, "node-x": OK, "node-y": OK}),
    ("NodeAffinityPolicy ignored with labelSelectors",
     mkpod(labels={"foo": ""}, node_selector={"foo": ""}, constraints=[sc(1, "node", FOO, affinity_policy="Ignore")]),
     [mknode("node-a", node="node-a", foo=""), mknode("node-b", node="node-b", foo=""),
      mknode("node-x", node="node-x", foo=""), mknode("node-y", node="node-y")],
     [ex("p-b1", "node-a", foo=""), ex("p-b2", "node-b", foo=""), ex("p-y1", "node-y", foo="")],
     {"node-a": UNS, "node-b": UNS, "node-x": OK, "node-y": UNS}),
    ("NodeAffinityPolicy honored with nodeAffinity",
     mkpod(labels={"foo": ""}, affinity_in=("foo", [""]), constraints=[sc(1, "node", FOO)]),
     [mknode("node-a", node="node-a", foo=""), mknode("node-b", node="node-b", foo=""),
      mknode("node-x", node="node-x", foo=""), mknode("node-y", node="node-y")],
     [ex("p-b1", "node-a", foo=""), ex("p-b2", "node-b", foo=""), ex("p-y1", "node-y", foo="")],
     {"node-a": UNS, "node-b": UNS, "node-x": OK, "node-y": OK}),
    ("NodeAffinityPolicy ignored with nodeAffinity",
     mkpod(labels={"foo": ""}, affinity_in=("foo", [""]), constraints=[sc(1, "node", FOO, affinity_policy="Ignore")]),
     [mknode("node-a", node="node-a", foo=""), mknode("node-b", node="node-b", foo=""),
      mknode("node-x", node="node-x", foo=""), mknode("node-y", node="node-y")],
     [ex("p-b1", "node-a", foo=""), ex("p-b2", "node-b", foo=""), ex("p-y1", "node-y", foo="")],
     {"node-a": UNS, "node-b": UNS, "node-x": OK, "node-y": UNS}),
    ("NodeTaintsPolicy honored",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "node", FOO, taints_policy="Honor")]),
     [mknode("node-a", node="node-a", foo=""), mknode("node-b", node="node-b", foo=""),
      mknode("node-x", node="node-x", foo=""), mknode("node-y", UNSCHEDULABLE_TAINT, node="node-y")],
     [ex("p-b1", "node-a", foo=""), ex("p-b2", "node-b", foo=""), ex("p-y1", "node-y", foo="")],
     {"node-a": UNS, "node-b": UNS, "node-x": OK, "node-y": OK}),
    ("NodeTaintsPolicy ignored",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "node", FOO)]),
     [mknode("node-a", node="node-a", foo=""), mknode("node-b", node="node-b", foo=""),
      mknode("node-x", node="node-x", foo=""), mknode("node-y", UNSCHEDULABLE_TAINT, node="node-y")],
     [ex("p-b1", "node-a", foo=""), ex("p-b2", "node-b", foo=""), ex("p-y1", "node-y", foo="")],
     {"node-a": UNS, "node-b": UNS, "node-x": OK, "node-y": UNS}),
]

FOO_BAR = dict(foo="", bar="")
MULTIPLE = [
    ("two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO), sc(1, "node", FOO)]), FOUR,
     [ex("p-a1", "node-a", foo=""), ex("p-a2", "node-a", foo=""), ex("p-b1", "node-b", foo=""),
      ex("p-y1", "node-y", foo=""), ex("p-y2", "node-y", foo=""), ex("p-y3", "node-y", foo="")],
     {"node-a": UNS, "node-b": UNS, "node-x": OK, "node-y": UNS}),
    ("two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO), sc(1, "node", FOO)]), FOUR,
     [ex("p-a1", "node-a", foo=""), ex("p-a2", "node-a", foo=""), ex("p-b1", "node-b", foo=""),
      ex("p-y1", "node-y", foo=""), ex("p-y2", "node-y", foo=""), ex("p-y3", "node-y", foo=""),
      ex("p-y4", "node-y", foo="")],
     {"node-a": UNS, "node-b": UNS, "node-x": UNS, "node-y": UNS}),
    ("Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
     mkpod(labels=FOO_BAR, constraints=[sc(1, "zone", FOO), sc(1, "node", BAR)]), FOUR,
     [ex("p-a1", "node-a", foo=""), ex("p-y1", "node-y", bar="")],
     {"node-a": UNS, "node-b": UNS, "node-x": OK, "node-y": UNS}),
    ("Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
     mkpod(labels=FOO_BAR, constraints=[sc(1, "zone", FOO), sc(1, "node", BAR)]), FOUR,
     [ex("p-a1", "node-a", foo=""), ex("p-x1", "node-x", bar=""), ex("p-y1", "node-y", bar="")],
     {"node-a": UNS, "node-b": UNS, "node-x": UNS, "node-y": UNS}),
    ("Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
     mkpod(labels=FOO_BAR, constraints=[sc(1, "zone", FOO), sc(1, "node", BAR)]), FOUR,
     [ex("p-a1", "node-a", foo=""), ex("p-a2", "node-a", foo="", bar=""), ex("p-y1", "node-y", foo=""),
      ex("p-y2", "node-y", foo="", bar=""), ex("p-y3", "node-y", foo="")],
     {"node-a": UNS, "node-b": OK, "node-x": UNS, "node-y": UNS}),
    ("Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
     mkpod(labels={"bar": ""}, constraints=[sc(1, "zone", FOO), sc(1, "node", BAR)]), FOUR,
     [ex("p-a1", "node-a", foo=""), ex("p-x1", "node-x", bar=""), ex("p-y1", "node-y", bar="")],
     {"node-a": OK, "node-b": OK, "node-x": UNS, "node-y": UNS}),
    ("two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO), sc(1, "node", FOO)]),
     [zn("node-a", "zone1"), zn("node-b", "zone1"), mknode("node-x", zone="zone2"), zn("node-y", "zone2")],
     [ex("p-a1", "node-a", foo=""), ex("p-y3", "node-y", foo="")],
     {"node-a": UNS, "node-b": OK, "node-x": UNR, "node-y": UNS}),
    ("two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
     mkpod(labels={"foo": ""}, node_selector={"foo": ""},
           constraints=[sc(1, "zone", FOO), sc(1, "node", FOO, affinity_policy="Ignore")]),
     [zn("node-a", "zone1", foo=""), zn("node-b", "zone1", foo=""), zn("node-x", "zone2", foo=""),
      zn("node-y", "zone2")],
     [ex("p-a1", "node-a", foo=""), ex("p-b1", "node-b", foo=""), ex("p-y1", "node-y", foo="")],
     {"node-a": UNS, "node-b": UNS, "node-x": OK, "node-y": UNS}),
    ("two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO, taints_policy="Honor"), sc(1, "node", FOO)]),
     [zn("node-a", "zone1", foo=""), zn("node-b", "zone1", foo=""), zn("node-x", "zone2", foo=""),
      zn("node-y", "zone2", taints=UNSCHEDULABLE_TAINT)],
     [ex("p-a1", "node-a", foo=""), ex("p-b1", "node-b", foo=""), ex("p-y1", "node-y", foo="")],
     {"node-a": UNS, "node-b": UNS, "node-x": OK, "node-y": UNS}),
    ("two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
     mkpod(labels={"foo": ""}, node_selector={"foo": ""}, constraints=[sc(1, "zone", FOO), sc(1, "node", FOO)]),
     [zn("node-a", "zone1", foo=""), zn("node-b", "zone1"), zn("node-x", "zone2", foo=""),
      zn("node-y", "zone2", taints=UNSCHEDULABLE_TAINT, foo="")],
     [ex("p-a1", "node-a", foo=""), ex("p-b1", "node-b", foo=""), ex("p-y1", "node-y", foo="")],
     {"node-a": UNS, "node-b": OK, "node-x": OK, "node-y": UNS}),
    ("two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
     mkpod(labels={"foo": ""}, node_selector={"foo": ""},
           constraints=[sc(1, "zone", FOO, taints_policy="Honor"), sc(1, "node", FOO, affinity_policy="Ignore")]),
     [zn("node-a", "zone1", foo=""), zn("node-b", "zone1"), zn("node-x", "zone2", foo=""),
      zn("node-y", "zone2", taints=UNSCHEDULABLE_TAINT, foo="")],
     [ex("p-a1", "node-a", foo=""), ex("p-b1", "node-b", foo=""), ex("p-y1", "node-y", foo="")],
     {"node-a": UNS, "node-b": UNS, "node-x": OK, "node-y": UNS}),
    ("two Constraints on zone, spreads = [3/3, 2/1]",
     mkpod(labels=FOO_BAR, constraints=[sc(1, "zone", BAR), sc(1, "zone", FOO)]), FOUR,
     [ex("p-a1", "node-a", foo="", bar=""), ex("p-a2", "node-a", foo=""), ex("p-b1", "node-b", foo="", bar=""),
      ex("p-y1", "node-y", foo=""), ex("p-y2", "node-y", foo="", bar=""), ex("p-y3", "node-y", foo="")],
     {"node-a": UNS, "node-b": UNS, "node-x": OK, "node-y": OK}),
    ("two Constraints on zone, spreads = [3/4, 2/1]",
     mkpod(labels=FOO_BAR, constraints=[sc(1, "zone", BAR), sc(1, "zone", FOO)]), FOUR,
     [ex("p-a1", "node-a", foo="", bar=""), ex("p-a2", "node-a", foo=""), ex("p-b1", "node-b", foo="", bar=""),
      ex("p-y1", "node-y", foo=""), ex("p-y2", "node-y", foo="", bar=""), ex("p-y3", "node-y", foo=""),
      ex("p-y4", "node-y", foo="")],
     {"node-a": UNS, "node-b": UNS, "node-x": UNS, "node-y": UNS}),
]


@pytest.mark.parametrize("name, pod, nodes, pods, want", SINGLE + MULTIPLE, ids=[t[0] for t in SINGLE + MULTIPLE])
def test_upstream_filter_tables(name, pod, nodes, pods, want):
    assert run(pod, nodes, pods) == want


def prefilter_state(pod, nodes, pods=(), args=None):
    c = cycle(pod, nodes, pods, args)
    pre = PodTopologySpread().pre_filter(c)
    return c, pre


PREFILTER = [
    # TestPreFilterState: (name, pod, nodes, pods, counts per constraint, global minimum per constraint)
    ("clean cluster with one spreadConstraint",
     mkpod(labels={"foo": ""}, constraints=[sc(5, "zone", {"matchLabels": {"foo": "bar"}})]), FOUR, [],
     [{"zone1": 0, "zone2": 0}], [0]),
    ("normal case with one spreadConstraint",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO)]), FOUR,
     [ex("p-a1", "node-a", foo=""), ex("p-a2", "node-a", foo=""), ex("p-b1", "node-b", foo=""),
      ex("p-y1", "node-y", foo=""), ex("p-y2", "node-y", foo="")],
     [{"zone1": 3, "zone2": 2}], [2]),
    ("normal case with null label selector",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", None)]), FOUR,
     [ex("p-a1", "node-a", foo=""), ex("p-y1", "node-y", foo="")],
     [{"zone1": 0, "zone2": 0}], [0]),
    ("namespace mismatch doesn't count",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO)]), FOUR,
     [ex("p-a1", "node-a", foo=""), ex("p-a2", "node-a", ns="ns1", foo=""), ex("p-b1", "node-b", foo=""),
      ex("p-y1", "node-y", ns="ns2", foo=""), ex("p-y2", "node-y", foo="")],
     [{"zone1": 2, "zone2": 1}], [1]),
    ("matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
     mkpod(labels={"foo": "", "bar": "a"}, constraints=[sc(1, "zone", FOO, match_label_keys=["bar"])]), FOUR,
     [ex("p-a1", "node-a", foo=""), ex("p-a2", "node-a", foo="", bar="a"), ex("p-b1", "node-b", foo=""),
      ex("p-y1", "node-y", foo="", bar="a"), ex("p-y2", "node-y", bar="")],
     [{"zone1": 1, "zone2": 1}], [1]),
    ("matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
     mkpod(labels={"foo": "a"}, constraints=[sc(1, "zone", {}, match_label_keys=["foo"])]), FOUR,
     [ex("p-a1", "node-a", foo="a"), ex("p-a2", "node-a", foo="a"), ex("p-b1", "node-b", foo="a"),
      ex("p-y1", "node-y", foo="a"), ex("p-y2", "node-y", foo="a")],
     [{"zone1": 3, "zone2": 2}], [2]),
    ("key in matchLabelKeys is ignored when LabelSelector is nil when feature gate enabled",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", None, match_label_keys=["bar"])]), FOUR,
     [ex("p-a1", "node-a", foo="a"), ex("p-y1", "node-y", foo="a")],
     [{"zone1": 0, "zone2": 0}], [0]),
    ("key in matchLabelKeys is ignored when it isn't exist in pod.labels",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO, match_label_keys=["bar"])]), FOUR,
     [ex("p-a1", "node-a", foo="a"), ex("p-a2", "node-a", foo="a"), ex("p-b1", "node-b", foo="a"),
      ex("p-y1", "node-y", foo="a"), ex("p-y2", "node-y", foo="a")],
     [{"zone1": 3, "zone2": 2}], [2]),
    ("soft spreadConstraints should be bypassed",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO, when="ScheduleAnyway"), sc(1, "node", FOO)]), FOUR,
     [ex("p-a1", "node-a", foo=""), ex("p-a2", "node-a", foo=""), ex("p-b1", "node-b", foo="")],
     [{"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 0}], [0]),
    ("NodeTaintsPolicy honored with tolerated taints",
     mkpod(labels={"foo": ""}, tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}],
           constraints=[sc(1, "node", FOO, taints_policy="Honor")]),
     [mknode("node-a", node="node-a", foo=""), mknode("node-y", UNSCHEDULABLE_TAINT, node="node-y")],
     [ex("p-a1", "node-a", foo=""), ex("p-y1", "node-y", foo="")],
     [{"node-a": 1, "node-y": 1}], [1]),
]


@pytest.mark.parametrize("name, pod, nodes, pods, want_counts, want_min", PREFILTER, ids=[t[0] for t in PREFILTER])
def test_upstream_prefilter_state(name, pod, nodes, pods, want_counts, want_min):
    _, pre = prefilter_state(pod, nodes, pods)
    assert pre.status.success
    assert pre.state.counts == want_counts
    assert [pre.state.min_match(i)[0] for i in range(len(want_counts))] == want_min


@pytest.mark.parametrize("pod, args", [
    (mkpod(labels={"foo": ""}), None),  # "skip if not specified" (System defaulting: both defaults ScheduleAnyway)
    (mkpod(labels={"foo": ""}), {"PodTopologySpread": {"defaultingType": "System"}}),
    (mkpod(labels={"foo": "bar"}), {"PodTopologySpread": {  # "default soft constraints and a service"
        "defaultingType": "List",
        "defaultConstraints": [{"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "ScheduleAnyway"}]}}),
    (mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO, when="ScheduleAnyway")]), None),
])
def test_prefilter_skips_without_do_not_schedule_constraints(pod, args):
    _, pre = prefilter_state(pod, FOUR, [], args)
    assert pre.status.code == SKIP and pre.state is None


def test_list_defaulting_with_hard_defaults_is_undetermined_not_guessed():
    """The default selector comes from Services/RCs/RSs/StatefulSets, which are not read."""
    args = {"PodTopologySpread": {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"}]}}
    _, pre = prefilter_state(mkpod(labels={"foo": "bar"}), FOUR, [], args)
    assert pre.status.undetermined and "Services" in pre.status.undetermined and not pre.status.rejected
    # ... but a pod with constraints of its own never uses the defaults
    _, pre = prefilter_state(mkpod(labels={"foo": "bar"}, constraints=[sc(1, "zone", FOO)]), FOUR, [], args)
    assert pre.status.success and pre.state.constraints[0].topology_key == "zone"


AB = [zn("node-a", "zone1"), zn("node-b", "zone1")]
AX = [zn("node-a", "zone1"), zn("node-x", "zone2")]
FOO_BAR_NODES = [mknode("node-a", zone="zone1", node="node-a", foo="bar"),
                 mknode("node-b", zone="zone2", node="node-b", foo="")]
TOLERATES = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]
ADD_POD = [
    # TestPreFilterStateAddPod: (name, preemptor, added pod, existing, nodes, node index, counts, min after)
    ("node a and b both impact current min match",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "node", FOO)]), ex("p-a1", "node-a", foo=""), [], AB, 0,
     [{"node-a": 1, "node-b": 0}], [(0, "node-b")]),
    ("only node a impacts current min match",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "node", FOO)]), ex("p-a1", "node-a", foo=""),
     [ex("p-b1", "node-b", foo="")], AB, 0, [{"node-a": 1, "node-b": 1}], [(1, None)]),
    ("add a pod in a different namespace doesn't change topologyKeyToMinPodsMap",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "node", FOO)]), ex("p-a1", "node-a", ns="ns1", foo=""),
     [ex("p-b1", "node-b", foo="")], AB, 0, [{"node-a": 0, "node-b": 1}], [(0, "node-a")]),
    ("add pod on non-critical node won't trigger re-calculation",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "node", FOO)]), ex("p-b2", "node-b", foo=""),
     [ex("p-b1", "node-b", foo="")], AB, 1, [{"node-a": 0, "node-b": 2}], [(0, "node-a")]),
    ("node a and x both impact topologyKeyToMinPodsMap on zone and node",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO), sc(1, "node", FOO)]), ex("p-a1", "node-a", foo=""),
     [], AX, 0, [{"zone1": 1, "zone2": 0}, {"node-a": 1, "node-x": 0}], [(0, "zone2"), (0, "node-x")]),
    ("only node a impacts topologyKeyToMinPodsMap on zone and node",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO), sc(1, "node", FOO)]), ex("p-a1", "node-a", foo=""),
     [ex("p-x1", "node-x", foo="")], AX, 0,
     [{"zone1": 1, "zone2": 1}, {"node-a": 1, "node-x": 1}], [(1, None), (1, None)]),
    ("add a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy enabled",
     mkpod(labels={"foo": ""}, affinity_not_in=("foo", ["bar"]), constraints=[sc(1, "zone", FOO)]),
     ex("p-a1", "node-a", foo="", zone="zone1"),
     [ex("p-a2", "node-a", foo="", zone="zone1"), ex("p-b1", "node-b", foo="", zone="zone2")], FOO_BAR_NODES, 0,
     [{"zone2": 1}], [(1, "zone2")]),
    ("add a pod when scheduling node affinity matched pod with NodeInclusionPolicy enabled",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO)]), ex("p-b1", "node-b", foo="", zone="zone2"),
     [ex("p-a1", "node-a", foo="", zone="zone1"), ex("p-b2", "node-b", foo="", zone="zone2")], FOO_BAR_NODES, 1,
     [{"zone1": 1, "zone2": 2}], [(1, "zone1")]),
    ("add a label selector not matched pod when with NodeInclusionPolicy enabled",
     mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO)]), ex("p-b1", "node-b", zone="zone2"),
     [ex("p-a1", "node-a", foo="", zone="zone1"), ex("p-b2", "node-b", foo="", zone="zone2")], FOO_BAR_NODES, 1,
     [{"zone1": 1, "zone2": 1}], [(1, None)]),
    ("add a pod when scheduling taint tolerated pod with NodeInclusionPolicy enabled",
     mkpod(labels={"foo": ""}, tolerations=TOLERATES, constraints=[sc(1, "zone", FOO)]),
     ex("p-b1", "node-b", foo="", zone="zone2"),
     [ex("p-a1", "node-a", foo="", zone="zone1"), ex("p-b2", "node-b", foo="", zone="zone2")],
     [zn("node-a", "zone1", taints=UNSCHEDULABLE_TAINT), zn("node-b", "zone2")], 1,
     [{"zone1": 1, "zone2": 2}], [(1, "zone1")]),
]


@pytest.mark.parametrize("name, pod, added, pods, nodes, node_index, want_counts, want_min", ADD_POD,
                         ids=[t[0] for t in ADD_POD])
def test_upstream_add_pod(name, pod, added, pods, nodes, node_index, want_counts, want_min):
    c, pre = prefilter_state(pod, nodes, pods)
    before = [dict(x) for x in pre.state.counts]
    new = PodTopologySpread().add_pod(c, pre.state, PodInfo(added), c.nodes[node_index])
    assert new.counts == want_counts
    for i, (num, value) in enumerate(want_min):
        got = new.min_match(i)
        assert got[0] == num and (value is None or got[1] == value)
    assert pre.state.counts == before, "AddPod must not change the state it was given"


def test_nominated_pod_decides_the_node():
    """Filter with the state AddPod returned: two nominated matching pods on node-x make it too full."""
    pod = mkpod(labels={"foo": ""}, constraints=[sc(1, "node", FOO)])
    nodes = [mknode("node-a", node="node-a"), mknode("node-x", node="node-x")]
    c, pre = prefilter_state(pod, nodes, [ex("p-a1", "node-a", foo="")])
    plugin = PodTopologySpread()
    assert plugin.filter(c, pre.state, c.nodes[1]).success
    one = plugin.add_pod(c, pre.state, PodInfo(ex("n1", None, foo="")), c.nodes[1])
    assert plugin.filter(c, one, c.nodes[1]).success  # 1 + 1 - 1 <= 1
    two = plugin.add_pod(c, one, PodInfo(ex("n2", None, foo="")), c.nodes[1])
    assert plugin.filter(c, two, c.nodes[1]).code == UNSCHEDULABLE  # 2 + 1 - 1 > 1
    assert two.min_match(0) == (1, "node-a")
    assert plugin.filter(c, pre.state, c.nodes[1]).success


def test_empty_selector_counts_no_existing_pod_but_matches_the_pod_and_nominated_pods():
    """``labelSelector: {}`` is Everything: countPodsMatchSelector skips it (Empty()), but selfMatch
    is 1 and AddPod counts nominated pods."""
    pod = mkpod(labels={"foo": ""}, constraints=[sc(1, "node", {})])
    nodes = [mknode("node-a", node="node-a"), mknode("node-b", node="node-b")]
    pods = [ex("p-a1", "node-a", foo=""), ex("p-a2", "node-a", foo=""), ex("p-a3", "node-a")]
    c, pre = prefilter_state(pod, nodes, pods)
    assert pre.state.counts == [{"node-a": 0, "node-b": 0}]
    plugin = PodTopologySpread()
    assert [plugin.filter(c, pre.state, n).code for n in c.nodes] == [OK, OK]
    state = plugin.add_pod(c, pre.state, PodInfo(ex("n1", None)), c.nodes[0])
    state = plugin.add_pod(c, state, PodInfo(ex("n2", None)), c.nodes[0])
    assert state.counts == [{"node-a": 2, "node-b": 0}]
    assert plugin.filter(c, state, c.nodes[0]).code == UNSCHEDULABLE


def test_constraints_are_checked_in_order_skew_before_a_later_missing_label():
    pod = mkpod(labels={"foo": ""}, constraints=[sc(1, "node", FOO), sc(1, "rack", FOO)])
    nodes = [mknode("node-a", node="x1", rack="r1"), mknode("node-b", node="x2", rack="r1"),
             mknode("node-c", node="x1"), mknode("node-d", node="x3")]
    result = run(pod, nodes, [ex("p-a1", "node-a", foo=""), ex("p-a2", "node-a", foo="")])
    # node-c and node-d lack 'rack' (so their pods never count); node-c shares domain x1 with node-a
    # and fails the first constraint's skew before its missing label is looked at
    assert result == {"node-a": UNS, "node-b": OK, "node-c": UNS, "node-d": UNR}


def test_messages_codes_and_evidence():
    pod = mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO, when="ScheduleAnyway"), sc(1, "zone", FOO)])
    nodes = [zn("node-a", "a"), zn("node-b", "b"), mknode("node-c", node="node-c")]
    pods = [ex("p1", "node-a", foo=""), ex("p2", "node-a", foo=""), ex("p3", "node-a", foo=""),
            ex("p4", "node-b", foo="")]
    c, pre = prefilter_state(pod, nodes, pods)
    plugin = PodTopologySpread()
    skew = plugin.filter(c, pre.state, c.nodes[0])
    assert (skew.code, skew.reasons, skew.plugin) == (UNSCHEDULABLE, [ERR_REASON_CONSTRAINTS_NOT_MATCH],
                                                      "PodTopologySpread")
    assert skew.reasons == ["node(s) didn't match pod topology spread constraints"]
    assert skew.evidence[0].detail == ("topologySpreadConstraints[1] (topologyKey zone, labelSelector foo): "
                                       "zone=a: 3 matching pods + this pod, min 1 (zone=b), skew 3 > maxSkew 1")
    missing = plugin.filter(c, pre.state, c.nodes[2])
    assert (missing.code, missing.reasons) == (UNRESOLVABLE, [ERR_REASON_NODE_LABEL_NOT_MATCH])
    assert missing.reasons == ["node(s) didn't match pod topology spread constraints (missing required label)"]
    assert "has no label zone" in missing.evidence[0].detail
    assert plugin.filter(c, pre.state, c.nodes[1]).success


def test_min_domains_evidence_says_the_minimum_was_forced_to_zero():
    pod = mkpod(labels={"foo": ""}, constraints=[sc(1, "node", FOO, min_domains=3)])
    nodes = [mknode("node-a", node="node-a"), mknode("node-b", node="node-b")]
    c, pre = prefilter_state(pod, nodes, [ex("p1", "node-a", foo=""), ex("p2", "node-b", foo="")])
    status = PodTopologySpread().filter(c, pre.state, c.nodes[0])
    assert status.code == UNSCHEDULABLE
    assert "min 0 (2 domain(s) < minDomains 3)" in status.evidence[0].detail


def test_invalid_selector_is_the_schedulers_error_not_a_verdict():
    bad = {"matchExpressions": [{"key": "foo", "operator": "In", "values": []}]}
    _, pre = prefilter_state(mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", bad)]), FOUR)
    assert pre.status.code == ERROR
    assert pre.status.message == ("get constraints from pod: obtaining pod's hard topology spread constraints: "
                                  "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty")


def test_an_unreadable_label_on_a_counted_pod_is_undetermined():
    pod = mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO)])
    broken = Pod.from_raw({"metadata": {"name": "broken", "labels": {"foo": ["x"]}}, "spec": {"nodeName": "node-a"}})
    assert broken.invalid_fields
    c = Cycle(pod=PodInfo(pod), nodes=[NodeInfo(FOUR[0], [PodInfo(broken)]), NodeInfo(FOUR[2])])
    pre = PodTopologySpread().pre_filter(c)
    assert pre.status.undetermined and "broken" in pre.status.undetermined


def test_label_selector_nil_versus_empty():
    nothing, everything = lbl.from_label_selector(None), lbl.from_label_selector(Pod.model_validate(
        {"metadata": {"name": "x"}, "spec": {"topologySpreadConstraints": [{"labelSelector": {}}]}}
    ).spec.topology_spread_constraints[0].label_selector)
    assert (nothing.matches({}), nothing.empty) == (False, False)
    assert (everything.matches({"a": "b"}), everything.empty) == (True, True)


def test_a_thousand_nodes_of_a_hundred_pods_stay_fast():
    nodes = [mknode(f"n{i}", zone=f"z{i % 3}", **{"kubernetes.io/hostname": f"n{i}"}) for i in range(1000)]
    template = [mkpod(f"p{j}", labels={"app": f"a{j % 7}"}, node="x") for j in range(100)]
    infos = []
    for n in nodes:
        info = NodeInfo(n)
        info.pods = [PodInfo(p) for p in template]  # the cache's pods; requests are not what is measured
        infos.append(info)
    plugin = PodTopologySpread()
    plain = Cycle(pod=PodInfo(mkpod(labels={"app": "a1"})), nodes=infos)
    start = time.perf_counter()
    assert plugin.pre_filter(plain).status.code == SKIP
    assert time.perf_counter() - start < 0.05
    spread = Cycle(pod=PodInfo(mkpod(labels={"app": "a1"}, constraints=[sc(1, "zone", {"matchLabels": {"app": "a1"}})])),
                   nodes=infos)
    start = time.perf_counter()
    pre = plugin.pre_filter(spread)
    results = [plugin.filter(spread, pre.state, n) for n in infos]
    elapsed = time.perf_counter() - start
    assert pre.state.counts == [{"z0": 334 * 15, "z1": 333 * 15, "z2": 333 * 15}]
    assert sum(r.success for r in results) == 666
    assert elapsed < 2.0, elapsed


def test_unreadable_incoming_fields_or_node_labels_are_undetermined():
    raw = {"metadata": {"name": "p", "labels": {"foo": ""}},
           "spec": {"affinity": ["bad"], "topologySpreadConstraints": [sc(1, "zone", FOO)]}}
    pod = Pod.from_raw(raw)
    _, pre = prefilter_state(pod, FOUR)
    assert pre.status.undetermined and "spec.affinity" in pre.status.undetermined
    bad_node = Node.from_raw({"metadata": {"name": "node-z", "labels": {"zone": ["x"]}}})
    _, pre = prefilter_state(mkpod(labels={"foo": ""}, constraints=[sc(1, "zone", FOO)]), [*FOUR, bad_node])
    assert pre.status.undetermined and "node-z" in pre.status.undetermined
