"""Extended resources backed by DRA (KEP-5004) in the scheduler's model: the claim the scheduler
makes for a pod (``createRequestsAndMappings``), which nodes serve a name through DRA and which
through the node's allocatable (``filterExtendedResources``, ``shouldDelegateResourceToDRA``), and
the message. The request and mapping vectors follow extendeddynamicresources_test.go at v1.37.2;
the real scheduler confirms them in tests/cluster/test_extended_oracle.py (it compares the claim it
creates and the pod's ``status.extendedResourceClaimStatus`` with these predictions).
"""

from __future__ import annotations

import pytest

from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.registry import parse_object
from kubectl_dra.model.resource import DeviceClass
from kubectl_dra.scheduling.explain import explain_scheduling
from kubectl_dra.scheduling.extended import (CANNOT_FIT, STALE_CLAIM, class_resolver, extended_demand, on_node,
                                             requests_and_mappings)

GPU = "example.com/gpu"
DRV = "gpu.example.com"
STAMP = "2026-11-20T08:00:00Z"


def klass(name: str = "gpu", resource: str | None = GPU, created: str = STAMP, expression: str | None = None) -> dict:
    spec = {"selectors": [{"cel": {"expression": expression or f'device.driver == "{DRV}"'}}]}
    if resource:
        spec["extendedResourceName"] = resource
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": name, "creationTimestamp": created}, "spec": spec}


def node(name: str, **allocatable: str) -> dict:
    alloc = {"cpu": "8", "memory": "16Gi", "pods": "110", **{k.replace("_", "."): v for k, v in allocatable.items()}}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": alloc, "allocatable": alloc,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def slice_(node_name: str, *devices: str, taint: str | None = None) -> dict:
    devs = [{"name": d, **({"taints": [{"key": "broken", "effect": taint}]} if taint else {})} for d in devices]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node_name}-gpu"},
            "spec": {"driver": DRV, "nodeName": node_name, "pool": {"name": node_name, "generation": 1,
                                                                    "resourceSliceCount": 1},
                     "devices": devs}}


def pod(*containers: dict, init: tuple = (), name: str = "p") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
            "spec": {"containers": list(containers), "initContainers": list(init)}, "status": {"phase": "Pending"}}


def gpu(n: str) -> dict:
    return {GPU: n}


def c(name: str, restart: str | None = None, **requests) -> dict:
    out = {"name": name, "image": "app", "resources": {"requests": dict(requests)}}
    if restart:
        out["restartPolicy"] = restart
    return out


def plan(p: dict, *classes: dict, via=(GPU,)):
    resolver = class_resolver(DeviceClass.from_raw(k) for k in (classes or (klass(),)))
    model = Pod.from_raw(p)
    demand = extended_demand(model, [DeviceClass.from_raw(k) for k in (classes or (klass(),))], [])
    requests, mappings = requests_and_mappings(model, {r: demand.scalars[r] for r in via}, resolver)
    return ([(r.name, r.device_class_name, r.count) for r in requests],
            [(m.container_name, m.resource_name, m.request_name) for m in mappings])


@pytest.mark.parametrize("name,p,requests,mappings", [
    ("one container", pod(c("a", **gpu("1"))), [("container-0-request-0", "gpu", 1)],
     [("a", GPU, "container-0-request-0")]),
    ("the index of the name among the container's sorted requests",
     pod(c("a", cpu="1", memory="1Gi", **gpu("2"))), [("container-0-request-1", "gpu", 2)],
     [("a", GPU, "container-0-request-1")]),
    ("two containers", pod(c("a", **gpu("1")), c("b", **gpu("2"))),
     [("container-0-request-0", "gpu", 1), ("container-1-request-0", "gpu", 2)],
     [("a", GPU, "container-0-request-0"), ("b", GPU, "container-1-request-0")]),
    ("an init container reuses the regular container's devices",
     pod(c("main", **gpu("2")), init=(c("init", **gpu("1")),)),
     [("container-1-request-0", "gpu", 2)],
     [("main", GPU, "container-1-request-0"), ("init", GPU, "container-1-request-0")]),
    ("an init container that needs more asks for the rest",
     pod(c("main", **gpu("1")), init=(c("init", **gpu("3")),)),
     [("container-0-request-0", "gpu", 2), ("container-1-request-0", "gpu", 1)],
     [("main", GPU, "container-1-request-0"), ("init", GPU, "container-1-request-0"),
      ("init", GPU, "container-0-request-0")]),
    ("init containers share the largest of their requests",
     pod(c("main", cpu="1"), init=(c("i0", **gpu("1")), c("i1", **gpu("3")))),
     [("container-1-request-0", "gpu", 3)],
     [("i0", GPU, "container-1-request-0"), ("i1", GPU, "container-1-request-0")]),
    ("a sidecar is long-lived: its own request, and the init container before it reuses it",
     pod(c("main", **gpu("1")), init=(c("setup", **gpu("1")), c("side", "Always", **gpu("1")))),
     [("container-1-request-0", "gpu", 1), ("container-2-request-0", "gpu", 1)],
     [("side", GPU, "container-1-request-0"), ("main", GPU, "container-2-request-0"),
      ("setup", GPU, "container-1-request-0")]),
    ("a container without the resource makes no request",
     pod(c("a", cpu="1"), c("b", **gpu("1"))), [("container-1-request-0", "gpu", 1)],
     [("b", GPU, "container-1-request-0")]),
])
def test_requests_and_mappings(name, p, requests, mappings):
    assert plan(p) == (requests, mappings)


def test_two_resources_each_get_their_class_and_requests_sort_by_name():
    other = "example.com/nic"
    p = pod(c("a", **{GPU: "1", other: "1"}), c("b", **{other: "2"}))
    got = plan(p, klass(), klass("nic", other, expression='device.driver == "nic"'), via=(GPU, other))
    assert got == ([("container-0-request-0", "gpu", 1), ("container-0-request-1", "nic", 1),
                    ("container-1-request-0", "nic", 2)],
                   [("a", GPU, "container-0-request-0"), ("a", other, "container-0-request-1"),
                    ("b", other, "container-1-request-0")])


@pytest.mark.parametrize("allocatable,via_dra,via_node,refusal", [
    ({}, {GPU: 1}, [], None),  # not advertised: DRA
    ({GPU: 0}, {GPU: 1}, [], None),  # advertised at 0: DRA too (allocatable == 0)
    ({GPU: 2}, {}, [GPU], None),  # advertised: the device plugin, whatever the slices
])
def test_which_nodes_serve_through_dra(allocatable, via_dra, via_node, refusal):
    demand = extended_demand(Pod.from_raw(pod(c("a", **gpu("1")))), [DeviceClass.from_raw(klass())], [])
    got = on_node(demand, allocatable)
    assert (got.via_dra, got.via_node, got.refusal) == (via_dra, via_node, refusal)


def test_a_name_no_class_provides_and_the_node_lacks_cannot_fit():
    p = Pod.from_raw(pod(c("a", **{GPU: "1", "vendor.example/fpga": "1"})))
    demand = extended_demand(p, [DeviceClass.from_raw(klass())], [])
    assert on_node(demand, {}).refusal == CANNOT_FIT
    assert on_node(demand, {"vendor.example/fpga": 0}).refusal is None  # listed: NodeResourcesFit's to refuse


def test_no_class_no_claim_and_a_zero_request_asks_nothing():
    assert extended_demand(Pod.from_raw(pod(c("a", **gpu("1")))), [DeviceClass.from_raw(klass(resource=None))],
                           []) is None
    assert extended_demand(Pod.from_raw(pod(c("a", **gpu("0")))), [DeviceClass.from_raw(klass())], []) is None
    implicit = {"deviceclass.resource.kubernetes.io/gpu": "1"}
    assert extended_demand(Pod.from_raw(pod(c("a", **implicit))), [DeviceClass.from_raw(klass(resource=None))],
                           []).provided()["deviceclass.resource.kubernetes.io/gpu"].name == "gpu"


def test_a_claim_from_an_earlier_attempt_is_refused_on_every_node():
    p = pod(c("a", **gpu("1")))
    stale = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "p-extended-resources-x", "namespace": "ns", "uid": "c1",
                          "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
                          "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-p",
                                               "controller": True}]},
             "spec": {"devices": {"requests": [{"name": "container-0-request-0", "exactly": {
                 "deviceClassName": "gpu", "count": 1}}]}}}
    demand = extended_demand(Pod.from_raw(p), [DeviceClass.from_raw(klass())], [parse_object(stale)])
    assert demand.existing is not None and on_node(demand, {}).refusal == STALE_CLAIM
    other = {**stale, "metadata": {**stale["metadata"], "ownerReferences": [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-other", "controller": True}]}}
    assert extended_demand(Pod.from_raw(p), [DeviceClass.from_raw(klass())], [parse_object(other)]).existing is None


# -- the whole filter chain ----------------------------------------------------------------------


def explain(p: dict, *objects: dict):
    inv = Inventory()
    inv.extend(parse_object(o) for o in objects)
    inv.read_kinds |= {"Node", "Pod", "ResourceSlice", "ResourceClaim", "DeviceClass", "Namespace"}
    return explain_scheduling(Pod.from_raw(p), inv)


def test_mixed_cluster_message_in_the_schedulers_words():
    plugin_node = node("dp", **{GPU: "1"})
    full = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "user", "namespace": "ns", "uid": "u"},
            "spec": {"nodeName": "dp", "containers": [c("x", **gpu("1"))]}, "status": {"phase": "Running"}}
    got = explain(pod(c("a", **gpu("1"))), klass(), plugin_node, node("dra"), full)
    assert got.message == "0/2 nodes are available: 1 Insufficient example.com/gpu, 1 cannot allocate all claims."
    got = explain(pod(c("a", **gpu("1"))), klass(), plugin_node, node("dra"), slice_("dra", "g0"), full)
    assert got.message is None and [n.node for n in got.nodes if n.fits] == ["dra"]
    got = explain(pod(c("a", **gpu("2"))), klass(), node("dra"), slice_("dra", "g0"))
    assert got.message == "0/1 nodes are available: 1 cannot allocate all claims."


def test_a_tainted_device_is_not_allocated():
    got = explain(pod(c("a", **gpu("1"))), klass(), node("dra"), slice_("dra", "g0", taint="NoSchedule"))
    assert got.message == "0/1 nodes are available: 1 cannot allocate all claims."


def test_without_a_class_the_name_is_the_node_resources_fits_alone():
    got = explain(pod(c("a", **gpu("1"))), klass(resource=None), node("dra"), slice_("dra", "g0"))
    assert got.message == "0/1 nodes are available: 1 Insufficient example.com/gpu."


def test_containers_using_the_schedulers_claim_come_from_the_mappings():
    """What the node-side check (nodestate/reconcile.py, ReservedNotPrepared) expects the kubelet to
    have prepared for each container: the mapped ones, as the kubelet's GetResources gives them."""
    p = pod(c("a", **gpu("1")), c("b", cpu="1"), init=(c("setup", **gpu("1")),))
    p["status"]["extendedResourceClaimStatus"] = {"resourceClaimName": "p-extended-resources-x", "requestMappings": [
        {"containerName": "a", "resourceName": GPU, "requestName": "container-1-request-0"},
        {"containerName": "setup", "resourceName": GPU, "requestName": "container-1-request-0"}]}
    model = Pod.from_raw(p)
    assert model.containers_using_object("p-extended-resources-x") == ["setup", "a"]
    assert model.containers_using_object("other") == []


def test_own_claims_and_a_node_serving_the_resource_itself_fail_in_prebind():
    """The real scheduler's answer in tests/cluster/test_extended_oracle.py (``claimdp``): the
    filters pass, PreBind writes no request mappings and fails; on a node serving the resource
    through DRA the same pod binds."""
    from kubectl_dra.scheduling.explain import pod_scheduling

    p = pod(c("a", **gpu("1")))
    p["spec"]["resourceClaims"] = [{"name": "mine", "resourceClaimName": "mine"}]
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "mine"}]
    mine = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "mine", "namespace": "ns", "uid": "cm"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "user"}}]}}}
    objects = (klass(), klass("user", resource=None), node("dp", **{GPU: "1"}), slice_("dp", "g0"), mine)
    got = explain(p, *objects)
    assert got.message is None and got.feasible_nodes == ["dp"]
    assert got.bind_errors == {"dp": 'running PreBind plugin "DynamicResources": nil or empty request mappings, '
                                     'no update of pod ns/p ExtendedResourceClaimStatus'}
    inv = Inventory()
    inv.extend(parse_object(o) for o in objects)
    inv.read_kinds |= {"Node", "Pod", "ResourceSlice", "ResourceClaim", "DeviceClass", "Namespace"}
    _, findings = pod_scheduling(Pod.from_raw(p), inv)
    assert [f.code for f in findings] == ["BindFails"]
    two = explain(p, *objects, node("dra"), {**slice_("dra", "g0", "g1"), "metadata": {"name": "dra-gpu"}})
    assert two.feasible_nodes == ["dp", "dra"] and list(two.bind_errors) == ["dp"]
