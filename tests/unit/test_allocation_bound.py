"""The allocation search is bounded as kube-scheduler bounds it (docs/kubernetes/dra-apis.md §8): the
scheduler's filterTimeout per node, a total per command, a sound proof when a request cannot be met,
and the scheduler's own words (dynamicresources.go:1073 at v1.37.2) when its search may time out.

The claim of issue 37, item 4: request ``a`` wants N of a 40-device pool and request ``b`` matches
no device. The upstream allocator has no such proof: it tries every N-set for ``a`` first (C(40,6) =
3,838,380 of them), which is what makes the real scheduler time out (tests/cluster/
test_filter_timeout.py shows it does)."""

from __future__ import annotations

import time

import pytest

from kubectl_dra.allocation.allocator import AllocatedState, Allocator
from kubectl_dra.allocation.bound import SearchBound, filter_timeout
from kubectl_dra.allocation.gather import gather
from kubectl_dra.model.registry import parse_object
from kubectl_dra.scheduling.explain import explain_scheduling
from kubectl_dra.scheduling.profile import ProfileError, from_config
from kubectl_dra.model.inventory import Inventory

DRIVER = "gpu.example.com"
WORDS = "node n1: timed out trying to allocate devices"


def _node(name="n1"):
    return parse_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                         "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}})


def _class():
    return parse_object({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
                         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})


def _slice(node="n1", devices=40, numa=lambda i: 0):
    return parse_object({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-s"},
                         "spec": {"driver": DRIVER, "nodeName": node,
                                  "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                                  "devices": [{"name": f"gpu-{i}", "attributes": {"numa": {"int": numa(i)}}}
                                              for i in range(devices)]}})


def _claim(count: int, b_selector: str = 'device.driver == "none"', constraint: bool = False):
    spec = {"requests": [{"name": "a", "exactly": {"deviceClassName": "gpu", "count": count}},
                         {"name": "b", "exactly": {"deviceClassName": "gpu",
                                                   "selectors": [{"cel": {"expression": b_selector}}]}}]}
    if constraint:
        spec["constraints"] = [{"requests": ["a", "b"], "matchAttribute": f"{DRIVER}/numa"}]
    return parse_object({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                         "metadata": {"name": "c", "namespace": "ml", "uid": "c-uid"}, "spec": {"devices": spec}})


def _allocate(claim, bound: SearchBound, nodes=("n1",), **slice_args):
    allocator = Allocator([claim], {"gpu": _class()}, AllocatedState(), bound=bound)
    outcomes = []
    for name in nodes:
        rs = _slice(name, **slice_args)
        outcomes.append(allocator.allocate(_node(name), gather(_node(name), [rs], {(DRIVER, name): [rs]})))
    return outcomes


def test_a_request_that_cannot_be_met_is_proven_and_the_search_is_stopped_at_the_scheduler_bound():
    began = time.monotonic()
    [outcome] = _allocate(_claim(6), SearchBound(filter_timeout=0.05, source="filterTimeout 50ms"))
    assert time.monotonic() - began < 5  # unbounded, this search runs for minutes
    assert not outcome.feasible and outcome.undetermined is None and outcome.error is None
    assert outcome.proof == "request b of ml/c needs 1, 0 qualify"
    assert outcome.possible_error == WORDS  # what the scheduler then reports
    assert "at 0.05s, the scheduler's bound (filterTimeout 50ms)" in outcome.timing and "not known" in outcome.timing
    assert outcome.steps > 1000


def test_a_long_search_without_a_proof_is_no_verdict():
    # b's devices exist (numa 1) but a's are all numa 0: the constraint fails only after each 6-set
    [outcome] = _allocate(_claim(6, 'device.attributes["gpu.example.com"].numa == 1', constraint=True),
                          SearchBound(filter_timeout=0.05, source="filterTimeout 50ms"),
                          numa=lambda i: 1 if i == 39 else 0)
    assert outcome.proof is None and not outcome.feasible
    assert outcome.possible_error == WORDS
    assert outcome.undetermined.endswith("whether the claims can be allocated on this node is not known")


def test_a_short_search_is_a_plain_verdict():
    [outcome] = _allocate(_claim(2), SearchBound())  # 780 pairs: milliseconds
    assert not outcome.feasible and outcome.proof and outcome.possible_error is None and outcome.timing is None
    assert 0 < outcome.steps < 10_000
    [fits] = _allocate(_claim(2, "true"), SearchBound())
    assert fits.feasible and [p.device for p in fits.results] == ["gpu-0", "gpu-1", "gpu-2"]


def test_a_search_longer_than_a_quarter_of_the_bound_says_the_scheduler_may_time_out():
    [outcome] = _allocate(_claim(3), SearchBound(filter_timeout=0.02, source="filterTimeout 20ms"))
    assert not outcome.feasible and outcome.possible_error == WORDS  # the proof stands; the scheduler's words do not


def test_without_a_scheduler_bound_a_proven_node_keeps_its_verdict_and_is_not_searched():
    [outcome] = _allocate(_claim(6), SearchBound(filter_timeout=0, source="filterTimeout 0s", own_limit=5))
    assert not outcome.feasible and outcome.proof and outcome.possible_error is None and outcome.steps == 0


def test_without_a_scheduler_bound_an_unproven_long_search_is_no_verdict():
    [outcome] = _allocate(_claim(6, 'device.attributes["gpu.example.com"].numa == 1', constraint=True),
                          SearchBound(filter_timeout=0, source="filterTimeout 0s", own_limit=0.05),
                          numa=lambda i: 1 if i == 39 else 0)
    assert outcome.possible_error is None and "has no filterTimeout (filterTimeout 0s) and searches on" in outcome.timing
    assert outcome.undetermined.endswith("whether the claims can be allocated on this node is not known")


def test_one_command_total_bounds_every_node():
    bound = SearchBound(filter_timeout=10, source="x", total=0.05)
    began = time.monotonic()
    first, second = _allocate(_claim(6, 'device.attributes["gpu.example.com"].numa == 1', constraint=True), bound,
                              nodes=("n1", "n2"), numa=lambda i: 1 if i == 39 else 0)
    assert time.monotonic() - began < 5
    for outcome in (first, second):
        assert outcome.undetermined and "this command's searches used up their 0.05s" in outcome.undetermined


def test_quick_searches_never_use_up_the_total():
    bound = SearchBound(total=0.0)  # spent before it starts
    for outcome in _allocate(_claim(2), bound, nodes=("n1", "n2", "n3")):
        assert outcome.undetermined is None and outcome.proof and outcome.possible_error is None


def test_a_node_bound_below_the_quick_floor_is_kept():
    [outcome] = _allocate(_claim(6), SearchBound(filter_timeout=0.01, source="filterTimeout 10ms"))
    assert outcome.seconds < 0.09 and "at 0.01s" in outcome.timing  # 10ms of search, not the 100ms floor


@pytest.mark.parametrize("value,seconds", [(None, 10.0), ("100ms", 0.1), ("0s", 0.0), ("1m", 60.0), ("0", 0.0)])
def test_filter_timeout_is_read_as_the_scheduler_reads_it(value, seconds):
    args = {} if value is None else {"filterTimeout": value}
    assert filter_timeout(args, "profile p of f")[0] == seconds


@pytest.mark.parametrize("value,words", [("-1s", "must be zero or positive"), ("soon", "is not a duration"),
                                         (10, "is not a duration")])
def test_a_filter_timeout_the_scheduler_refuses_is_a_bad_configuration(value, words):
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
                  {"name": "DynamicResources", "args": {"filterTimeout": value}}]}]}
    with pytest.raises(ProfileError, match=words):
        from_config(config, "default-scheduler", "sched.yaml")


def _scheduling(filter_timeout: str):
    """explain pod's scheduling of a pod with the issue's claim, under a profile with that filterTimeout."""
    pod = parse_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml", "uid": "p-uid"},
                        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "d"}]}}],
                                 "resourceClaims": [{"name": "d", "resourceClaimName": "c"}]}})
    inventory = Inventory()
    for obj in (_node(), _class(), _slice(), _claim(6), pod):
        inventory.add(obj)
    for kind in ("Node", "Pod", "ResourceClaim", "ResourceSlice", "DeviceClass", "DeviceTaintRule"):
        inventory.read_kinds.add(kind)
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"pluginConfig": [{"name": "DynamicResources", "args": {"filterTimeout": filter_timeout}}]}]}
    return explain_scheduling(pod, inventory, from_config(config, "default-scheduler", "sched.yaml"))


def test_explain_pod_gives_the_scheduler_words_and_no_message_of_its_own():
    scheduling = _scheduling("50ms")
    assert scheduling.possible_error == f'running "DynamicResources" filter plugin: {WORDS}'
    assert scheduling.message is None and not scheduling.message_known and not scheduling.feasible_nodes
    [node] = scheduling.nodes
    assert node.fits is None and "no allocation exists here" in node.undetermined[0].why


def test_a_scheduler_without_a_bound_gives_its_verdict_however_long_it_searches():
    scheduling = _scheduling("0s")
    assert scheduling.possible_error is None and scheduling.message_known
    assert scheduling.message == "0/1 nodes are available: 1 cannot allocate all claims."
