"""The scheduling cycle (kubectl_dra/scheduling/cycle.py) against kube-scheduler v1.37.2:
FitError.Error (pkg/scheduler/framework/types.go, vectors of TestFitError_Error in types_test.go),
RunPreFilterPlugins and RunFilterPlugins(WithNominatedPods) (framework/runtime/framework.go), and the
profile merge (apis/config/v1/default_plugins.go mergePluginSet). Plugins here are test doubles
whose statuses are given, so what is tested is the framework's order, stops and words."""

from __future__ import annotations

import pytest

from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra.scheduling.cycle import NodeVerdict, fit_error, run
from kubectl_dra.scheduling.framework import (ERROR, SUCCESS, UNRESOLVABLE, UNSCHEDULABLE, Cycle, NodeInfo, Plugin,
                                              PodInfo, PreFilterResult, Status)
from kubectl_dra.scheduling.profile import DEFAULT_FILTERS, ProfileError, from_config


def node(name: str, memory: str = "8Gi") -> NodeInfo:
    return NodeInfo(Node.model_validate({"metadata": {"name": name}, "status": {"allocatable": {"memory": memory}}}))


def pod(name: str = "p", memory: str = "1Gi", priority: int | None = None, nominated: str | None = None) -> PodInfo:
    spec = {"containers": [{"name": "c", "resources": {"requests": {"memory": memory}}}]}
    if priority is not None:
        spec["priority"] = priority
    status = {"nominatedNodeName": nominated} if nominated else {}
    return PodInfo(Pod.model_validate({"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
                                       "spec": spec, "status": status}))


class Given(Plugin):
    """A plugin whose PreFilter and per-node Filter statuses are given."""

    def __init__(self, name: str, pre: PreFilterResult | None = None, per_node: dict | None = None):
        self.NAME = name
        self.pre = pre or PreFilterResult()
        self.per_node = per_node or {}
        self.filtered: list[str] = []

    def pre_filter(self, cycle):
        return self.pre

    def filter(self, cycle, state, node):
        self.filtered.append(node.name)
        return self.per_node.get(node.name, Status())


def verdict(node_name: str, *reasons: str) -> NodeVerdict:
    return NodeVerdict(node_name, Status(UNSCHEDULABLE, list(reasons)))


@pytest.mark.parametrize("reasons, want", [
    # TestFitError_Error: "nodes failed one Filter plugin"
    ([["Node(s) failed Filter plugin FalseFilter-1"]] * 3, "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1."),
    # "nodes failed two Filter plugins": the histogram is sorted as strings, count first
    ([["Node(s) failed Filter plugin FalseFilter-1"]] * 2 + [["Node(s) failed Filter plugin FalseFilter-2"]],
     "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, 2 Node(s) failed Filter plugin FalseFilter-1."),
    # a status with several reasons counts each ("Insufficient cpu", "Insufficient memory" from NodeResourcesFit)
    ([["Insufficient cpu", "Insufficient memory"], ["Insufficient memory"]],
     "0/2 nodes are available: 1 Insufficient cpu, 2 Insufficient memory."),
    # string order, not numeric: "10 ..." sorts before "9 ..."
    ([["b"]] * 10 + [["a"]] * 9, "0/19 nodes are available: 10 b, 9 a."),
])
def test_fit_error_message(reasons, want):
    verdicts = [verdict(f"n{i}", *r) for i, r in enumerate(reasons)]
    assert fit_error(len(verdicts), verdicts) == want


def cycle_of(nodes, p=None, nominated=None) -> Cycle:
    return Cycle(pod=p or pod(), nodes=nodes, nominated=nominated or {})


def test_no_nodes_is_the_schedulers_error():
    assert run(cycle_of([]), [Given("A")]).message == "no nodes available to schedule pods"


def test_prefilter_rejection_is_said_once_for_every_node():
    """TestFitError_Error "nodes failed Prefilter plugin": the PreFilter message, no counts."""
    a = Given("A", PreFilterResult(Status.unschedulable("Node(s) failed PreFilter plugin FalsePreFilter",
                                                        unresolvable=True)))
    b = Given("B")
    attempt = run(cycle_of([node("n1"), node("n2"), node("n3")]), [a, b])
    assert attempt.message == "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter."
    assert [v.fits for v in attempt.nodes] == [False] * 3 and b.filtered == []


def test_prefilter_unschedulable_waits_for_the_rest_and_unresolvable_wins():
    """RunPreFilterPlugins keeps an Unschedulable status while later plugins run; a later
    UnschedulableAndUnresolvable one ends PreFilter with its own message (kubernetes#119770)."""
    first = Given("A", PreFilterResult(Status.unschedulable("soft")))
    second = Given("B", PreFilterResult(Status.unschedulable("hard", unresolvable=True)))
    assert run(cycle_of([node("n1")]), [first, second]).message == "0/1 nodes are available: hard."
    assert run(cycle_of([node("n1")]), [first, Given("C")]).message == "0/1 nodes are available: soft."


def test_prefilter_skip_drops_that_plugins_filter():
    skipped = Given("A", PreFilterResult(Status("Skip")), {"n1": Status.unschedulable("never said")})
    attempt = run(cycle_of([node("n1")]), [skipped])
    assert skipped.filtered == [] and attempt.message is None and attempt.nodes[0].fits is True


def test_prefilter_node_names_narrow_and_name_the_plugins():
    a = Given("NodeAffinity", PreFilterResult(node_names={"n1", "n2"}))
    attempt = run(cycle_of([node("n1"), node("n2"), node("n3")]), [a])
    assert [v.fits for v in attempt.nodes] == [True, True, False]
    assert attempt.nodes[2].status.reasons == ["node(s) didn't satisfy plugin(s) [NodeAffinity]"]
    assert attempt.nodes[2].status.code == UNRESOLVABLE
    # two plugins whose node sets do not meet: one status for all, plugins sorted, "simultaneously"
    b = Given("InterPodAffinity", PreFilterResult(node_names={"n3"}))
    attempt = run(cycle_of([node("n1"), node("n2"), node("n3")]), [a, b])
    assert attempt.message == ("0/3 nodes are available: node(s) didn't satisfy plugin(s) "
                               "[InterPodAffinity NodeAffinity] simultaneously.")
    only = Given("NodeAffinity", PreFilterResult(node_names=set()))
    assert run(cycle_of([node("n1")]), [only]).message == \
        "0/1 nodes are available: node(s) didn't satisfy plugin NodeAffinity."


def test_a_node_reports_its_first_refusal_and_keeps_the_rest_apart():
    """RunFilterPlugins stops at the first plugin that refuses: only its reasons are counted."""
    a = Given("TaintToleration", per_node={"n1": Status.unschedulable("node(s) had untolerated taint(s)",
                                                                      unresolvable=True)})
    b = Given("NodeResourcesFit", per_node={"n1": Status.unschedulable("Insufficient memory"),
                                            "n2": Status.unschedulable("Insufficient memory")})
    attempt = run(cycle_of([node("n1"), node("n2")]), [a, b])
    assert attempt.message == "0/2 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint(s)."
    first = attempt.nodes[0]
    assert first.status.plugin == "TaintToleration" and [s.plugin for s in first.also] == ["NodeResourcesFit"]


def test_cannot_tell_is_never_fits_and_never_a_message():
    unknown = Given("VolumeBinding", per_node={"n1": Status.unknown("CSIStorageCapacity is not modelled")})
    later = Given("NodeResourcesFit", per_node={"n1": Status.unschedulable("Insufficient memory")})
    attempt = run(cycle_of([node("n1")]), [unknown, later])
    # the scheduler might have stopped at the undecided plugin: neither the node nor the message is claimed
    assert attempt.nodes[0].fits is None and attempt.message is None and attempt.known is False
    # a node already refused before the undecided plugin stays refused, and the message stands
    attempt = run(cycle_of([node("n1")]), [later, unknown])
    assert attempt.nodes[0].fits is False and attempt.message == "0/1 nodes are available: 1 Insufficient memory."
    # an undecided node beside a fitting one: the pod fits (message None, known)
    attempt = run(cycle_of([node("n1"), node("n2")]), [unknown])
    assert [v.fits for v in attempt.nodes] == [None, True] and attempt.message is None and attempt.known


def test_a_prefilter_this_tool_cannot_decide_leaves_no_node_fitting():
    unsure = Given("DynamicResources", PreFilterResult(Status.unknown("ResourceClaim ns/c not found")))
    refuses = Given("NodeResourcesFit", per_node={"n2": Status.unschedulable("Insufficient memory")})
    attempt = run(cycle_of([node("n1"), node("n2")]), [unsure, refuses])
    assert [v.fits for v in attempt.nodes] == [None, False]
    assert attempt.message is None and attempt.known is False
    assert [s.undetermined for s in attempt.undetermined] == ["ResourceClaim ns/c not found"]


def test_a_filter_error_is_the_schedulers_error_not_a_verdict():
    broken = Given("DynamicResources", per_node={"n1": Status.error("claim: CEL runtime error")})
    attempt = run(cycle_of([node("n1"), node("n2")]), [broken])
    assert attempt.message is None
    assert attempt.error == 'running "DynamicResources" filter plugin: claim: CEL runtime error'


class Memory(Plugin):
    """A minimal resource filter over NodeInfo.requested (what the nominated pods change)."""

    NAME = "Memory"

    def filter(self, cycle, state, node):
        want = cycle.pod.requests.get("memory", 0)
        free = node.allocatable.get("memory", 0) - node.requested.get("memory", 0)
        return Status() if want <= free else Status.unschedulable("Insufficient memory")


def test_nominated_pods_of_equal_or_higher_priority_hold_their_room():
    """RunFilterPluginsWithNominatedPods: pods nominated to the node with priority >= the pod's
    are added first; lower-priority ones are not (their room may be taken)."""
    n1 = node("n1", memory="8Gi")
    incoming = pod("incoming", memory="5Gi", priority=10)
    for priority, fits in ((10, False), (100, False), (5, True)):
        waiting = pod("waiting", memory="4Gi", priority=priority, nominated="n1")
        attempt = run(cycle_of([n1], incoming, {"n1": [waiting]}), [Memory()])
        assert attempt.nodes[0].fits is fits, priority
    # the pod's own nomination does not count against it
    itself = PodInfo(incoming.pod)
    assert run(cycle_of([n1], incoming, {"n1": [itself]}), [Memory()]).nodes[0].fits is True


def test_second_pass_without_nominated_pods():
    """When the first pass (with nominated pods) fits, the node must also fit without them."""

    class NeedsCompany(Plugin):  # like pod affinity: fits only while some other pod is on the node
        NAME = "NeedsCompany"

        def filter(self, cycle, state, node):
            return Status() if node.pods else Status.unschedulable("node(s) didn't match pod affinity rules")

    waiting = pod("waiting", priority=0, nominated="n1")
    attempt = run(cycle_of([node("n1")], pod(), {"n1": [waiting]}), [NeedsCompany()])
    assert attempt.nodes[0].fits is False
    assert attempt.message == "0/1 nodes are available: 1 node(s) didn't match pod affinity rules."


def config(*profiles, extenders=None):
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": list(profiles)}
    if extenders:
        doc["extenders"] = extenders
    return doc


def test_profile_merge_like_merge_plugin_set():
    profile = from_config(config({"schedulerName": "default-scheduler", "plugins": {
        "multiPoint": {"disabled": [{"name": "TaintToleration"}]},
        "filter": {"disabled": [{"name": "NodePorts"}]}},
        "pluginConfig": [{"name": "NodeResourcesFit", "args": {"ignoredResources": ["example.com/foo"]}}]}),
        "default-scheduler", "sched.yaml")
    assert profile.filters == [f for f in DEFAULT_FILTERS if f not in ("TaintToleration", "NodePorts")]
    assert profile.args["NodeResourcesFit"] == {"ignoredResources": ["example.com/foo"]}
    assert profile.unmodelled == []
    everything_off = from_config(config({"plugins": {"multiPoint": {"disabled": [{"name": "*"}]}}}),
                                 "default-scheduler", "s.yaml")
    assert everything_off.filters == []


def test_profile_what_cannot_be_modelled_is_listed():
    custom = from_config(config({"schedulerName": "default-scheduler", "plugins": {
        "filter": {"enabled": [{"name": "MyGPUFilter"}]}}}, extenders=[{"urlPrefix": "http://x"}]),
        "default-scheduler", "s.yaml")
    assert [name for name, _ in custom.unmodelled] == ["MyGPUFilter", "extender"]
    other = from_config(config({"schedulerName": "gpu-scheduler"}), "default-scheduler", "s.yaml")
    assert other.filters == [] and other.unmodelled[0][0] == "profile"


@pytest.mark.parametrize("doc, words", [
    ({"kind": "Pod"}, "not a KubeSchedulerConfiguration"),
    ({"kind": "KubeSchedulerConfiguration", "apiVersion": "v1"}, "is not kubescheduler.config.k8s.io/v1"),
    ({"kind": "KubeSchedulerConfiguration", "apiVersion": "kubescheduler.config.k8s.io/v1", "profiles": "x"},
     "profiles must be a list"),
    ([1, 2], "not a KubeSchedulerConfiguration"),
])
def test_profile_errors_name_the_file(doc, words):
    with pytest.raises(ProfileError, match=words) as caught:
        from_config(doc, "default-scheduler", "sched.yaml")
    assert str(caught.value).startswith("sched.yaml: ")


def test_status_codes_are_the_frameworks():
    assert Status().success and not Status().rejected
    assert Status.unschedulable("x").code == UNSCHEDULABLE and Status.unschedulable("x", unresolvable=True).rejected
    assert Status.error("x").code == ERROR and not Status.error("x").rejected
    assert not Status.unknown("why").success and Status.unknown("why").code == SUCCESS
    assert Status(UNSCHEDULABLE, ["a", "b"]).message == "a, b"


def test_every_filter_of_the_default_profile_is_a_loaded_plugin():
    """A filter module that fails to load is a broken install: it must raise, not become "not
    modelled" (the frozen krew build once lost the whole package that way, and every filter
    silently read as unmodelled)."""
    import sys

    from kubectl_dra.scheduling.profile import _MODULES, Profile

    profile = Profile()
    assert [p.NAME for p in profile.plugins()] == [f for f in DEFAULT_FILTERS if f in _MODULES]
    assert profile.unmodelled == []
    saved = sys.modules.pop("kubectl_dra.scheduling.fit")
    sys.modules["kubectl_dra.scheduling.fit"] = None  # import fails as if the file were missing
    try:
        with pytest.raises(ImportError):
            Profile().plugins()
    finally:
        sys.modules["kubectl_dra.scheduling.fit"] = saved
