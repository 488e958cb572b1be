"""InterPodAffinity's filter against kube-scheduler v1.37.2's own tables
(pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go: TestRequiredAffinitySingleNode,
TestRequiredAffinityMultipleNodes, TestPreFilterStateAddRemovePod,
TestMultipleAffinityTermsRequireSingleMatchingPod), plus the messages, the evidence, namespaces
that were not read, and what stays fast."""

from __future__ import annotations

import time

import pytest

from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra.scheduling.framework import (SKIP, SUCCESS, UNRESOLVABLE, UNSCHEDULABLE, Cycle, NodeInfo, PodInfo,
                                              Status)
from kubectl_dra.scheduling.interpodaffinity import (ERR_REASON_AFFINITY_RULES_NOT_MATCH,
                                                     ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
                                                     ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
                                                     InterPodAffinity)

AFF = (UNRESOLVABLE, ERR_REASON_AFFINITY_RULES_NOT_MATCH)
ANTI = (UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
EXIST = (UNSCHEDULABLE, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
OK = None
_ABSENT = object()

# scoring_test.go: namespaces (the informer's Namespace objects in TestRequiredAffinitySingleNode)
NAMESPACES = {"subteam1.team1": {"team": "team1"}, "subteam2.team1": {"team": "team1"},
              "subteam1.team2": {"team": "team2"}, "subteam2.team2": {"team": "team2"}}


def term(key, op, topology, values=None, namespaces=None, ns_selector=_ABSENT, **extra):
    """``st.PodAffinityIn/NotIn/Exists``: one matchExpression on ``key``."""
    expr = {"key": key, "operator": op}
    if values is not None:
        expr["values"] = values
    t = {"labelSelector": {"matchExpressions": [expr]}, "topologyKey": topology, **extra}
    if namespaces is not None:
        t["namespaces"] = namespaces
    if ns_selector is not _ABSENT:
        t["namespaceSelector"] = ns_selector
    return t


def In(key, topology, values, **kw):
    return term(key, "In", topology, values, **kw)


def NotIn(key, topology, values, **kw):
    return term(key, "NotIn", topology, values, **kw)


def Exists(key, topology, **kw):
    return term(key, "Exists", topology, **kw)


def mkpod(name="p", ns=None, node=None, labels=None, aff=(), anti=(), pref_aff=(), terminating=False) -> Pod:
    meta = {"name": name, "labels": labels or {}}
    if ns:
        meta["namespace"] = ns
    if terminating:
        meta["deletionTimestamp"] = "2026-11-20T08:00:00Z"
    spec: dict = {"containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    affinity = {}
    if aff or pref_aff:
        affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(aff),
                                   "preferredDuringSchedulingIgnoredDuringExecution": [
                                       {"weight": 1, "podAffinityTerm": t} for t in pref_aff]}
    if anti:
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(anti)}
    if affinity:
        spec["affinity"] = affinity
    return Pod.model_validate({"metadata": meta, "spec": spec})


def mknode(name, **node_labels) -> Node:
    return Node.model_validate({"metadata": {"name": name, "labels": node_labels}})


def cycle(pod, nodes, pods=(), namespaces=NAMESPACES) -> Cycle:
    infos = [NodeInfo(n, [PodInfo(p) for p in pods if p.spec.node_name == n.name]) for n in nodes]
    return Cycle(pod=PodInfo(pod), nodes=infos, namespaces=namespaces)


def outcome(status: Status):
    return None if status.success else (status.code, status.message)


def run(pod, nodes, pods=(), namespaces=NAMESPACES):
    """The PreFilter status when it is not Success, else Filter's (code, message) per node (None: fits)."""
    c = cycle(pod, nodes, pods, namespaces)
    plugin = InterPodAffinity()
    pre = plugin.pre_filter(c)
    if not pre.status.success:
        return pre.status
    return [outcome(plugin.filter(c, pre.state, n)) for n in c.nodes]


SECURITYSCAN = {"service": "securityscan"}
S1 = {"security": "S1"}
NODE1 = mknode("node1", region="r1", zone="z11")
EXISTING = mkpod("existing", labels=SECURITYSCAN, node="node1")
TEAM1 = {"matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]}

SINGLE = [
    ("satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches "
     "the existing pod",
     mkpod(labels=S1, aff=[In("service", "region", ["securityscan", "value2"])]), [EXISTING], OK),
    ("satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator in "
     "labelSelector that matches the existing pod",
     mkpod(labels=S1, aff=[NotIn("service", "region", ["securityscan3", "value3"])]), [EXISTING], OK),
    ("Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
     mkpod(labels=S1, aff=[In("service", "", ["securityscan", "value2"], namespaces=["DiffNameSpace"])]),
     [mkpod("e", ns="ns", labels=SECURITYSCAN, node="node1")], AFF),
    ("Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
     mkpod(labels=SECURITYSCAN, aff=[In("service", "", ["antivirusscan", "value2"])]), [EXISTING], AFF),
    ("satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuring"
     "Execution",
     mkpod(labels=S1, aff=[
         {"labelSelector": {"matchExpressions": [{"key": "service", "operator": "Exists"},
                                                 {"key": "wrongkey", "operator": "DoesNotExist"}]},
          "topologyKey": "region"},
         {"labelSelector": {"matchExpressions": [{"key": "service", "operator": "In", "values": ["securityscan"]},
                                                 {"key": "service", "operator": "NotIn", "values": ["WrongValue"]}]},
          "topologyKey": "region"}]), [EXISTING], OK),
    ("The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node "
     "because one of the matchExpression item don't match.",
     mkpod(labels=S1, aff=[
         {"labelSelector": {"matchExpressions": [{"key": "service", "operator": "Exists"},
                                                 {"key": "wrongkey", "operator": "DoesNotExist"}]},
          "topologyKey": "region"},
         {"labelSelector": {"matchExpressions": [{"key": "service", "operator": "In", "values": ["securityscan2"]},
                                                 {"key": "service", "operator": "NotIn", "values": ["WrongValue"]}]},
          "topologyKey": "region"}]), [EXISTING], AFF),
    ("satisfies the PodAffinity and PodAntiAffinity with the existing pod",
     mkpod(labels=S1, aff=[In("service", "region", ["securityscan", "value2"])],
           anti=[In("service", "node", ["antivirusscan", "value2"])]), [EXISTING], OK),
    ("satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
     mkpod(labels=S1, aff=[In("service", "region", ["securityscan", "value2"])],
           anti=[In("service", "node", ["antivirusscan", "value2"])]),
     [mkpod("e", node="node1", labels=SECURITYSCAN, anti=[In("service", "node", ["antivirusscan", "value2"])])], OK),
    ("satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
     mkpod(labels=S1, aff=[In("service", "region", ["securityscan", "value2"])],
           anti=[In("service", "zone", ["securityscan", "value2"])]), [EXISTING], ANTI),
    ("satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing "
     "pod",
     mkpod(labels=SECURITYSCAN, aff=[In("service", "region", ["securityscan", "value2"])],
           anti=[In("service", "node", ["antivirusscan", "value2"])]),
     [mkpod("e", node="node1", labels=SECURITYSCAN, anti=[In("service", "zone", ["securityscan", "value2"])])], EXIST),
    ("pod matches its own Label in PodAffinity and that matches the existing pod Labels",
     mkpod(labels=SECURITYSCAN, aff=[NotIn("service", "region", ["securityscan", "value2"])]),
     [mkpod("e", labels=SECURITYSCAN, node="node2")], AFF),
    ("verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't "
     "satisfy PodAntiAffinity symmetry with the existing pod",
     mkpod(labels=SECURITYSCAN),
     [mkpod("e", node="node1", labels=SECURITYSCAN, anti=[In("service", "zone", ["securityscan", "value2"])])], EXIST),
    ("satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming pod",
     mkpod(labels=SECURITYSCAN, anti=[Exists("service", "region"), Exists("security", "region")]),
     [mkpod("e", node="node1", labels=S1, anti=[Exists("security", "zone")])], ANTI),
    ("PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on AffinityTerms",
     mkpod(labels=SECURITYSCAN, anti=[Exists("service", "zone"), Exists("security", "zone")]),
     [mkpod("e", node="node1", labels=S1, anti=[Exists("security", "zone")])], ANTI),
    ("PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms",
     mkpod(labels=S1, anti=[Exists("security", "zone")]),
     [mkpod("e", node="node1", labels=SECURITYSCAN, anti=[Exists("service", "zone"), Exists("security", "zone")])],
     EXIST),
    ("PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on AffinityTerms",
     mkpod(labels={"abc": "", "xyz": ""}, anti=[Exists("abc", "zone"), Exists("def", "zone")]),
     [mkpod("e", node="node1", labels={"def": "", "xyz": ""}, anti=[Exists("abc", "zone"), Exists("def", "zone")])],
     ANTI),
    ("PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on AffinityTerms",
     mkpod(labels={"def": "", "xyz": ""}, anti=[Exists("abc", "zone"), Exists("def", "zone")]),
     [mkpod("e", node="node1", labels={"abc": "", "xyz": ""}, anti=[Exists("abc", "zone"), Exists("def", "zone")])],
     ANTI),
    ("affinity with NamespaceSelector",
     mkpod(labels=S1, aff=[In("service", "region", ["securityscan", "value2"], ns_selector=TEAM1)]),
     [mkpod("e", ns="subteam1.team1", labels=SECURITYSCAN, node="node1")], OK),
    ("affinity with non-matching NamespaceSelector",
     mkpod(labels=S1, aff=[In("service", "region", ["securityscan", "value2"], ns_selector=TEAM1)]),
     [mkpod("e", ns="subteam1.team2", labels=SECURITYSCAN, node="node1")], AFF),
    ("anti-affinity with matching NamespaceSelector",
     mkpod(ns="subteam1.team1", labels=S1, anti=[In("service", "zone", ["securityscan", "value2"], ns_selector=TEAM1)]),
     [mkpod("e", ns="subteam2.team1", labels=SECURITYSCAN, node="node1")], ANTI),
    ("anti-affinity with matching all NamespaceSelector",
     mkpod(ns="subteam1.team1", labels=S1, anti=[In("service", "zone", ["securityscan", "value2"], ns_selector={})]),
     [mkpod("e", ns="subteam2.team1", labels=SECURITYSCAN, node="node1")], ANTI),
    ("anti-affinity with non-matching NamespaceSelector",
     mkpod(ns="subteam1.team1", labels=S1, anti=[In("service", "zone", ["securityscan", "value2"], ns_selector=TEAM1)]),
     [mkpod("e", ns="subteam1.team2", labels=SECURITYSCAN, node="node1")], OK),
]


@pytest.mark.parametrize("name, pod, pods, want", SINGLE, ids=[t[0][:90] for t in SINGLE])
def test_upstream_single_node(name, pod, pods, want):
    assert run(pod, [NODE1], pods) == [want]


@pytest.mark.parametrize("pod, pods", [
    # "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods"
    (mkpod(), []),
    # "... PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy ..."
    (mkpod(labels=SECURITYSCAN),
     [mkpod("e", node="node1", labels=SECURITYSCAN, anti=[NotIn("service", "zone", ["securityscan", "value2"])])]),
    # preferred terms never filter
    (mkpod(labels=S1, pref_aff=[In("service", "region", ["nothing-has-this"])]), [EXISTING]),
])
def test_upstream_prefilter_skip(pod, pods):
    status = run(pod, [NODE1], pods)
    assert isinstance(status, Status) and status.code == SKIP


BAD_VALUE = ("parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: \"{{.bad-value.}}\": a valid "
             "label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
             "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
             "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


@pytest.mark.parametrize("pod", [
    # "PodAffinity fails PreFilter with an invalid affinity label syntax"
    mkpod(labels=SECURITYSCAN, aff=[In("service", "region", ["{{.bad-value.}}"]),
                                    In("service", "node", ["antivirusscan", "value2"])]),
    # "PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax"
    mkpod(labels=SECURITYSCAN, aff=[In("service", "region", ["foo"]), In("service", "node", ["{{.bad-value.}}"])]),
])
def test_upstream_parse_errors_refuse_the_pod_in_prefilter(pod):
    status = run(pod, [NODE1], [])
    assert (status.code, status.message) == (UNRESOLVABLE, BAD_VALUE)


def test_a_preferred_term_that_does_not_parse_also_refuses_the_pod():
    status = run(mkpod(pref_aff=[In("service", "region", [])]), [NODE1], [])
    assert (status.code, status.message) == (UNRESOLVABLE, "parsing pod: preferredAffinityTerms: values: Invalid "
                                             "value: null: for 'in', 'notin' operators, values set can't be empty")


CHINA, CHINA_AZ1, INDIA = dict(region="China"), dict(region="China", az="az1"), dict(region="India")
RZH = lambda name, zone, region="r1": mknode(name, region=region, zone=zone, hostname=name)  # noqa: E731
HOST = "kubernetes.io/hostname"
MULTIPLE = [
    ("A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them has "
     "an existing pod that matches the affinity rules",
     mkpod(aff=[In("foo", "region", ["bar"])]), [mkpod("p1", node="node1", labels={"foo": "bar"})],
     [mknode("node1", **CHINA), mknode("node2", **CHINA_AZ1), mknode("node3", **INDIA)], [OK, OK, AFF]),
    ("The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of the "
     "collection should not be blocked from being scheduled onto any node, even there's no existing pod that matches "
     "the rule anywhere.",
     mkpod(labels={"foo": "bar", "service": "securityscan"},
           aff=[In("foo", "zone", ["bar"]), In("service", "zone", ["securityscan"])]),
     [mkpod("p1", node="nodeA", labels={"foo": "bar"})],
     [mknode("nodeA", zone="az1", hostname="h1"), mknode("nodeB", zone="az2", hostname="h2")], [OK, OK]),
    ("The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
     mkpod(labels={"foo": "bar", "service": "securityscan"},
           aff=[In("foo", "zone", ["bar"]), In("service", "zone", ["securityscan"])]),
     [mkpod("p1", node="nodeA", labels={"foo": "bar"})],
     [mknode("nodeA", zoneLabel="az1", hostname="h1"), mknode("nodeB", zoneLabel="az2", hostname="h2")], [AFF, AFF]),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod "
     "affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
     mkpod(anti=[In("foo", "region", ["abc"])]), [mkpod("e", node="nodeA", labels={"foo": "abc"})],
     [mknode("nodeA", region="r1", hostname="nodeA"), mknode("nodeB", region="r1", hostname="nodeB")], [ANTI, ANTI]),
    ("This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
     mkpod(anti=[In("foo", "region", ["abc"]), In("service", "zone", ["securityscan"])]),
     [mkpod("e", node="nodeA", labels={"foo": "abc", "service": "securityscan"})],
     [RZH("nodeA", "z1"), RZH("nodeB", "z2")], [ANTI, ANTI]),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod "
     "affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
     mkpod(anti=[In("foo", "region", ["abc"])]), [mkpod("e", node="nodeA", labels={"foo": "abc"})],
     [mknode("nodeA", **CHINA), mknode("nodeB", **CHINA_AZ1), mknode("nodeC", **INDIA)], [ANTI, ANTI, OK]),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod "
     "affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC (NodeC has an "
     "existing pod that match the inter pod affinity rule but in different namespace)",
     mkpod(ns="NS1", labels={"foo": "123"}, anti=[In("foo", "region", ["bar"])]),
     [mkpod("a", node="nodeA", ns="NS1", labels={"foo": "bar"}),
      mkpod("c", node="nodeC", ns="NS2", anti=[In("foo", "region", ["123"])])],
     [mknode("nodeA", **CHINA), mknode("nodeB", **CHINA_AZ1), mknode("nodeC", **INDIA)], [ANTI, ANTI, OK]),
    ("Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
     mkpod(node="nodeA", anti=[Exists("foo", "invalid-node-label")]), [mkpod("e", node="nodeA", labels={"foo": ""})],
     [RZH("nodeA", "z1"), RZH("nodeB", "z1")], [OK, OK]),
    ("Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each existingPod's "
     "terms on all nodes",
     mkpod(labels={"foo": "", "bar": ""}),
     [mkpod("e1", node="nodeA", anti=[Exists("foo", "zone")]), mkpod("e2", node="nodeA", anti=[Exists("bar", "region")])],
     [RZH("nodeA", "z1"), RZH("nodeB", "z2")], [EXIST, EXIST]),
    ("Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one "
     "anti-affinity rule of existingPod",
     mkpod(anti=[Exists("foo", "zone"), Exists("bar", "region")]),
     [mkpod("e1", node="nodeA", labels={"foo": ""}), mkpod("e2", node="nodeB", labels={"bar": ""})],
     [RZH("nodeA", "z1"), RZH("nodeB", "z2")], [ANTI, ANTI]),
    ("Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single "
     "term match - case when one term has invalid topologyKey",
     mkpod(labels={"foo": "", "bar": ""}),
     [mkpod("e", node="nodeA", anti=[Exists("foo", "invalid-node-label"), Exists("bar", "zone")])],
     [RZH("nodeA", "z1"), RZH("nodeB", "z2")], [EXIST, OK]),
    ("Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single "
     "term match - case when one term has invalid topologyKey",
     mkpod(anti=[Exists("foo", "invalid-node-label"), Exists("bar", "zone")]),
     [mkpod("podA", node="nodeA", labels={"foo": "", "bar": ""})],
     [RZH("nodeA", "z1"), RZH("nodeB", "z2")], [ANTI, OK]),
    ("Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single "
     "term match - case when all terms have valid topologyKey",
     mkpod(labels={"foo": "", "bar": ""}),
     [mkpod("e", node="nodeA", anti=[Exists("foo", "region"), Exists("bar", "zone")])],
     [RZH("nodeA", "z1"), RZH("nodeB", "z2")], [EXIST, EXIST]),
    ("Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single "
     "term match - case when all terms have valid topologyKey",
     mkpod(anti=[Exists("foo", "region"), Exists("bar", "zone")]),
     [mkpod("e", node="nodeA", labels={"foo": "", "bar": ""})],
     [RZH("nodeA", "z1"), RZH("nodeB", "z2")], [ANTI, ANTI]),
    ("Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term matches "
     "incoming pod, so incoming pod can only be scheduled to nodeC",
     mkpod(labels={"foo": "", "bar": ""}),
     [mkpod("e1", node="nodeA", anti=[Exists("foo", "zone"), Exists("labelA", "zone")]),
      mkpod("e2", node="nodeB", anti=[Exists("bar", "zone"), Exists("labelB", "zone")])],
     [RZH("nodeA", "z1"), RZH("nodeB", "z2"), RZH("nodeC", "z3")], [EXIST, EXIST, OK]),
    ("Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match",
     mkpod(aff=[Exists("foo", "region"), Exists("bar", "zone")]),
     [mkpod("pod1", node="nodeA", labels={"foo": "", "bar": ""})],
     [RZH("nodeA", "z1"), RZH("nodeB", "z1")], [OK, OK]),
    ("Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys "
     "match, and the match logic should be satisfied on the same pod",
     mkpod(aff=[Exists("foo", "region"), Exists("bar", "zone")]),
     [mkpod("pod1", node="nodeA", labels={"foo": ""}), mkpod("pod2", node="nodeB", labels={"bar": ""})],
     [RZH("nodeA", "z1"), RZH("nodeB", "z2")], [AFF, AFF]),
    ("Test incoming pod's host-scoped affinity (fast path)",
     mkpod(aff=[Exists("foo", HOST)]), [mkpod("pod1", node="nodeA", labels={"foo": ""})],
     [mknode("nodeA", **{HOST: "nodeA"}), mknode("nodeB", **{HOST: "nodeB"})], [OK, AFF]),
    ("Test incoming pod's host-scoped anti-affinity (fast path)",
     mkpod(anti=[Exists("foo", HOST)]), [mkpod("pod1", node="nodeA", labels={"foo": ""})],
     [mknode("nodeA", **{HOST: "nodeA"}), mknode("nodeB", **{HOST: "nodeB"})], [ANTI, OK]),
]


@pytest.mark.parametrize("name, pod, pods, nodes, want", MULTIPLE, ids=[t[0][:90] for t in MULTIPLE])
def test_upstream_multiple_nodes(name, pod, pods, nodes, want):
    assert run(pod, nodes, pods, namespaces={"NS1": {}}) == want


def test_upstream_existing_term_on_a_missing_topology_key_skips():
    """"Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector of
    the term is firstly checked, and then topologyKey of the term is also checked" (PreFilter Skip)."""
    status = run(mkpod(labels={"foo": ""}), [RZH("nodeA", "z1"), RZH("nodeB", "z1")],
                 [mkpod("e", node="nodeA", anti=[Exists("foo", "invalid-node-label")])])
    assert status.code == SKIP


def test_upstream_multiple_affinity_terms_require_a_single_matching_pod():
    """TestMultipleAffinityTermsRequireSingleMatchingPod."""
    incoming = mkpod("pod-1", ns="default", aff=[In("foo", HOST, ["bar"]), In("baz", HOST, ["qux"])])
    a = mkpod("podA", ns="default", labels={"foo": "bar"}, node="node-1")
    b = mkpod("podB", ns="default", labels={"baz": "qux"}, node="node-1")
    c = mkpod("podC", ns="default", labels={"foo": "bar", "baz": "qux"}, node="node-3")
    nodes = [mknode(n, **{HOST: n}) for n in ("node-1", "node-2", "node-3")]
    assert run(incoming, nodes, [a, b, c], namespaces={"default": {}}) == [AFF, AFF, OK]
    itself = mkpod("pod-1", ns="default", labels={"foo": "bar", "baz": "qux"},
                   aff=[In("foo", HOST, ["bar"]), In("baz", HOST, ["qux"])])
    assert run(itself, nodes, [a, b], namespaces={"default": {}})[0] is OK


FOO_BAR = {"foo": "bar"}
ANTI_FOO_BAR = [In("foo", "region", ["bar"])]
ANTI_COMPLEX = [In("foo", "region", ["bar", "buzz"]), NotIn("service", "zone", ["bar", "security", "test"])]
L1, L2, L3 = dict(region="r1", zone="z11"), dict(region="r1", zone="z12"), dict(region="r2", zone="z21")
ADD_REMOVE = [
    # TestPreFilterStateAddRemovePod: (name, pending, added, existing, nodes, want anti, want affinity)
    ("anti-affinity terms are updated correctly after adding a pod",
     mkpod("pending", labels=FOO_BAR, anti=ANTI_FOO_BAR), mkpod("addedPod", labels=FOO_BAR, node="nodeB",
                                                                anti=ANTI_FOO_BAR),
     [mkpod("p1", labels=FOO_BAR, node="nodeA"), mkpod("p2", node="nodeC", anti=ANTI_FOO_BAR)],
     [mknode("nodeA", **L1), mknode("nodeB", **L2), mknode("nodeC", **L3)], {("region", "r1"): 2}, {}),
    ("complex anti-affinity terms are updated correctly after adding a pod",
     mkpod("pending", labels=FOO_BAR, anti=ANTI_COMPLEX), mkpod("addedPod", labels=FOO_BAR, node="nodeA",
                                                                anti=ANTI_COMPLEX),
     [mkpod("p1", labels=FOO_BAR, node="nodeA"), mkpod("p2", node="nodeC", anti=ANTI_FOO_BAR)],
     [mknode("nodeA", **L1), mknode("nodeB", **L2), mknode("nodeC", **L3)],
     {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1}, {}),
    ("matching pod affinity and anti-affinity are updated correctly after adding a pod",
     mkpod("pending", labels=FOO_BAR, aff=ANTI_COMPLEX), mkpod("addedPod", labels=FOO_BAR, node="nodeA",
                                                               anti=ANTI_COMPLEX),
     [mkpod("p1", labels=FOO_BAR, node="nodeA"), mkpod("p2", node="nodeC", anti=ANTI_FOO_BAR, aff=ANTI_COMPLEX)],
     [mknode("nodeA", **L1), mknode("nodeB", **L2), mknode("nodeC", **L3)],
     {}, {("region", "r1"): 2, ("zone", "z11"): 2}),
    ("anti-affinity terms with both hostname and non-hostname are updated correctly after adding a pod",
     mkpod("pending", labels=FOO_BAR, anti=ANTI_FOO_BAR),
     mkpod("addedPod", labels=FOO_BAR, node="nodeA", anti=[In("foo", "region", ["bar"]), In("foo", HOST, ["bar"])]),
     [mkpod("p1", labels=FOO_BAR, node="nodeA")],
     [mknode("nodeA", region="r1", zone="z11", **{HOST: "nodeA"}),
      mknode("nodeB", region="r1", zone="z12", **{HOST: "nodeB"})], {("region", "r1"): 2}, {}),
]


@pytest.mark.parametrize("name, pending, added, existing, nodes, want_anti, want_affinity", ADD_REMOVE,
                         ids=[t[0] for t in ADD_REMOVE])
def test_upstream_add_pod(name, pending, added, existing, nodes, want_anti, want_affinity):
    plugin = InterPodAffinity()
    c = cycle(pending, nodes, existing, namespaces={})
    pre = plugin.pre_filter(c)
    before = (dict(pre.state.existing), dict(pre.state.affinity), dict(pre.state.anti))
    node = next(n for n in c.nodes if n.name == added.spec.node_name)
    new = plugin.add_pod(c, pre.state, PodInfo(added), node)
    assert (new.anti, new.affinity) == (want_anti, want_affinity)
    everything = plugin.pre_filter(cycle(pending, nodes, [*existing, added], namespaces={})).state
    assert (new.existing, new.affinity, new.anti) == (everything.existing, everything.affinity, everything.anti)
    assert (pre.state.existing, pre.state.affinity, pre.state.anti) == before, "AddPod changed the state it was given"


def test_a_nominated_pod_with_anti_affinity_refuses_the_node():
    plugin = InterPodAffinity()
    nodes = [RZH("nodeA", "z1"), RZH("nodeB", "z2")]
    nominated = PodInfo(mkpod("n", anti=[In("app", "zone", ["web"])]))
    # the incoming pod has a term of its own, so PreFilter keeps state and AddPod counts the nominated pod
    c = cycle(mkpod(labels={"app": "web"}, anti=[Exists("db", "zone")]), nodes, [])
    pre = plugin.pre_filter(c)
    state = plugin.add_pod(c, pre.state, nominated, c.nodes[1])
    assert outcome(plugin.filter(c, state, c.nodes[1])) == EXIST
    assert state.existing == {("zone", "z2"): 1} and pre.state.existing == {}
    assert outcome(plugin.filter(c, pre.state, c.nodes[1])) is OK
    # upstream quirk: with nothing to check, PreFilter says Skip, and the framework then runs neither
    # AddPod nor Filter for the plugin, so a nominated pod's anti-affinity is not seen at all
    c = cycle(mkpod(labels={"app": "web"}), nodes, [])
    pre = plugin.pre_filter(c)
    assert pre.status.code == SKIP and pre.state is None
    assert plugin.add_pod(c, pre.state, nominated, c.nodes[1]) is None


def test_first_pod_of_a_group_when_the_only_match_sits_on_a_node_without_the_key():
    """A pod matching the terms on a node lacking the topology label records no pair, so the map
    stays empty and the self-affinity exception still applies."""
    incoming = mkpod(labels={"app": "db"}, aff=[In("app", "zone", ["db"])])
    nodes = [mknode("nodeA", zone="z1"), mknode("nodeB")]
    assert run(incoming, nodes, [mkpod("e", node="nodeB", labels={"app": "db"})]) == [OK, AFF]
    # with the match on a labelled node the exception is gone: only zone z1 fits
    nodes = [mknode("nodeA", zone="z1"), mknode("nodeC", zone="z2")]
    assert run(incoming, nodes, [mkpod("e", node="nodeA", labels={"app": "db"})]) == [OK, AFF]


def test_terminating_pods_still_count():
    nodes = [RZH("nodeA", "z1"), RZH("nodeB", "z2")]
    status = run(mkpod(anti=[Exists("foo", "zone")]), nodes,
                 [mkpod("e", node="nodeA", labels={"foo": ""}, terminating=True)])
    assert status == [ANTI, OK]


def test_incoming_namespace_selector_without_namespaces_is_undetermined():
    pod = mkpod(labels=S1, aff=[In("service", "region", ["securityscan"], ns_selector=TEAM1)])
    status = run(pod, [NODE1], [EXISTING], namespaces=None)
    assert status.undetermined and "namespaces were not read" in status.undetermined and not status.rejected
    # an empty namespaceSelector (all namespaces) or none at all needs no namespace labels
    assert run(mkpod(labels=S1, aff=[In("service", "region", ["securityscan"], ns_selector={})]), [NODE1],
               [EXISTING], namespaces=None) == [OK]


def test_existing_namespace_selector_without_namespaces_leaves_only_its_domain_undetermined():
    nodes = [RZH("nodeA", "z1"), RZH("nodeB", "z1"), RZH("nodeC", "z2")]
    existing = mkpod("guard", ns="other", node="nodeA", anti=[Exists("app", "zone", ns_selector=TEAM1)])
    c = cycle(mkpod(ns="web", labels={"app": "x"}), nodes, [existing], namespaces=None)
    plugin = InterPodAffinity()
    pre = plugin.pre_filter(c)
    got = [plugin.filter(c, pre.state, n) for n in c.nodes]
    assert [bool(s.undetermined) for s in got] == [True, True, False]
    assert got[2].success and "namespace 'web'" in got[0].undetermined
    # with the namespaces read, the answer is known either way
    assert run(mkpod(ns="web", labels={"app": "x"}), nodes, [existing],
               namespaces={"web": {"team": "team1"}, "other": {}}) == [EXIST, EXIST, OK]
    assert run(mkpod(ns="web", labels={"app": "x"}), nodes, [existing],
               namespaces={"web": {"team": "team2"}, "other": {}}).code == SKIP
    # a namespace that does not exist has no labels (GetNamespaceLabelsSnapshot), it is not undetermined
    assert run(mkpod(ns="web", labels={"app": "x"}), nodes, [existing], namespaces={}).code == SKIP


def test_messages_codes_and_evidence():
    nodes = [RZH("nodeA", "z1"), RZH("nodeB", "z2"), RZH("nodeC", "z3")]
    pods = [mkpod("db", ns="ml", node="nodeA", labels={"app": "db"}),
            mkpod("web", ns="ml", node="nodeB", labels={"app": "web"}),
            mkpod("guard", ns="ml", node="nodeC", anti=[In("app", "zone", ["cache"])])]
    pod = mkpod(ns="ml", labels={"app": "cache"}, aff=[In("app", "region", ["db"])], anti=[In("app", "zone", ["web"])])
    c = cycle(pod, nodes + [mknode("nodeD", zone="z4")], pods)
    plugin = InterPodAffinity()
    pre = plugin.pre_filter(c)
    a, b, cc, d = (plugin.filter(c, pre.state, n) for n in c.nodes)
    assert a.success
    assert (b.code, b.reasons, b.plugin) == (UNSCHEDULABLE, ["node(s) didn't match pod anti-affinity rules"],
                                             "InterPodAffinity")
    assert b.evidence[0].detail == ("podAntiAffinity term[0] (topologyKey zone, labelSelector app in (web), "
                                    "namespaces ml): zone=z2 has pods matching it: ml/web on nodeB")
    assert (cc.code, cc.reasons) == (UNSCHEDULABLE, ["node(s) didn't satisfy existing pods anti-affinity rules"])
    assert cc.evidence[0].detail == ("zone=z3: pod ml/guard on nodeC, podAntiAffinity term[0] (topologyKey zone, "
                                     "labelSelector app in (cache), namespaces ml)")
    assert (d.code, d.reasons) == (UNRESOLVABLE, ["node(s) didn't match pod affinity rules"])
    assert d.evidence[0].detail.endswith("the node has no label region")


def test_affinity_evidence_names_where_matching_pods_are():
    nodes = [mknode("nodeA", zone="z1"), mknode("nodeB", zone="z2")]
    status = run(mkpod(aff=[In("app", "zone", ["db"])]), nodes, [mkpod("db", node="nodeA", labels={"app": "db"})])
    assert status == [OK, AFF]
    c = cycle(mkpod(aff=[In("app", "zone", ["db"])]), nodes, [mkpod("db", node="nodeA", labels={"app": "db"})])
    plugin = InterPodAffinity()
    detail = plugin.filter(c, plugin.pre_filter(c).state, c.nodes[1]).evidence[0].detail
    assert detail.endswith("no pod matching the pod's podAffinity term in zone=z2 (there are in zone=z1)")


def test_a_thousand_nodes_of_a_hundred_pods_stay_fast():
    nodes = [mknode(f"n{i}", zone=f"z{i % 3}", **{HOST: f"n{i}"}) for i in range(1000)]
    template = [mkpod(f"p{j}", labels={"app": f"a{j % 7}"}, node="x") for j in range(100)]
    guard = mkpod("guard", labels={"app": "guard"}, node="x", anti=[In("app", HOST, ["a1"])])
    infos = []
    for i, n in enumerate(nodes):
        info = NodeInfo(n)
        info.pods = [PodInfo(p) for p in template] + ([PodInfo(guard)] if i == 5 else [])
        infos.append(info)
    plugin = InterPodAffinity()
    start = time.perf_counter()
    assert plugin.pre_filter(Cycle(pod=PodInfo(mkpod(labels={"app": "a2"})), nodes=infos)).status.code == SKIP
    assert time.perf_counter() - start < 0.5
    c = Cycle(pod=PodInfo(mkpod(labels={"app": "a1"}, anti=[In("app", "zone", ["a3"])],
                                aff=[In("app", HOST, ["a1"])])), nodes=infos, namespaces={})
    start = time.perf_counter()
    pre = plugin.pre_filter(c)
    results = [plugin.filter(c, pre.state, n) for n in infos]
    elapsed = time.perf_counter() - start
    assert all(r.code == UNSCHEDULABLE for r in results)  # every zone holds an a3 pod
    assert elapsed < 3.0, elapsed


def test_an_existing_pod_whose_affinity_could_not_be_read_is_undetermined_not_ignored():
    broken = Pod.from_raw({"metadata": {"name": "broken", "namespace": "ml"},
                           "spec": {"nodeName": "nodeA", "affinity": "not-an-object"}})
    assert [f.path for f in broken.invalid_fields] == ["spec.affinity"]
    nodes = [RZH("nodeA", "z1")]
    status = run(mkpod(ns="ml", labels={"app": "x"}), nodes, [broken])
    assert status.undetermined and "ml/broken" in status.undetermined
    bad_node = Node.from_raw({"metadata": {"name": "nodeA", "labels": {"zone": 7}}})
    c = Cycle(pod=PodInfo(mkpod(anti=[Exists("foo", "zone")])), nodes=[NodeInfo(bad_node)], namespaces={})
    assert "labels could not be read" in InterPodAffinity().pre_filter(c).status.undetermined


def test_anti_affinity_counts_are_per_topology_pair_and_the_evidence_names_the_term_that_matched():
    """Upstream checks each term's pair in one count map: a pod matching term[1] refuses the node
    already at term[0] when both use the same topologyKey (same reason either way)."""
    nodes = [RZH("nodeA", "z1"), RZH("nodeB", "z2")]
    pod = mkpod(ns="ml", anti=[In("app", "zone", ["web"]), In("app", "zone", ["db"])])
    c = cycle(pod, nodes, [mkpod("db", ns="ml", node="nodeB", labels={"app": "db"})])
    plugin = InterPodAffinity()
    pre = plugin.pre_filter(c)
    assert [outcome(plugin.filter(c, pre.state, n)) for n in c.nodes] == [OK, ANTI]
    detail = plugin.filter(c, pre.state, c.nodes[1]).evidence[0].detail
    assert detail.startswith("podAntiAffinity term[1] (topologyKey zone, labelSelector app in (db)")
    assert detail.endswith("zone=z2 has pods matching it: ml/db on nodeB")
