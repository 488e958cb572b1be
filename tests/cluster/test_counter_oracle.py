"""Shared counters against the real kube-scheduler (v1.37.2): an overdrawn counter refuses every
device of its pool that consumes counters, even one that does not consume the overdrawn counter
(``checkAvailableCounters`` compares every counter of the pool; docs/kubernetes/dra-apis.md §6).

One node, one pool in two slices: the counter set ``gpu`` (sm, mem) and two partitions, ``p0``
(consumes sm) and ``p1`` (consumes mem only). A first pod takes p0, using sm exactly. Then the
driver shrinks sm below what p0 holds: the explainer must call the node infeasible for a claim on
p1, and the scheduler must leave that claim's pod unschedulable; when sm grows back, both agree
that p1 fits and the scheduler binds the pod.
"""

from __future__ import annotations

import pytest
from clusterobjects import driver_class, ready_node, scheduled_false, settle, wait_for
from loader import load

from kubectl_dra.allocation.explain import explain_allocation
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.kube.sources import open_source
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.model.node import Node
from kubectl_dra.model.resource import DeviceClass, ResourceSlice

NODE, NAMESPACE, DRIVER = "counter-node-1", "counter-oracle", "counters.example.com"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"


def counter_slice(sm: str, resource_version: str | None = None) -> dict:
    meta = {"name": f"{NODE}-counters", **({"resourceVersion": resource_version} if resource_version else {})}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": meta,
            "spec": {"driver": DRIVER, "nodeName": NODE,
                     "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 2},
                     "sharedCounters": [{"name": "gpu", "counters": {"sm": {"value": sm}, "mem": {"value": "80Gi"}}}]}}


def partition(name: str, kind: str, counter: str, value: str) -> dict:
    return {"name": name, "attributes": {"kind": {"string": kind}},
            "consumesCounters": [{"counterSet": "gpu", "counters": {counter: {"value": value}}}]}


def claim_for(name: str, kind: str) -> dict:
    selector = {"cel": {"expression": f'device.attributes["{DRIVER}"].kind == "{kind}"'}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"devices": {"requests": [{"name": "req", "exactly": {
                "deviceClassName": DRIVER, "selectors": [selector]}}]}}}


def pod_for(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"containers": [{"name": "c", "image": "registry.example/app:1",
                                     "resources": {"requests": {"cpu": "10m"}, "claims": [{"name": "dev"}]}}],
                     "resourceClaims": [{"name": "dev", "resourceClaimName": name}],
                     "tolerations": [{"operator": "Exists"}]}}


@pytest.fixture(scope="module")
def cluster(full_cluster, tmp_path_factory):
    load(full_cluster, [
        ready_node(NODE),
        driver_class(DRIVER),
        counter_slice("8"),
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{NODE}-devices"},
         "spec": {"driver": DRIVER, "nodeName": NODE,
                  "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 2},
                  "devices": [partition("p0", "big", "sm", "8"), partition("p1", "small", "mem", "10Gi")]}}])
    kubeconfig = full_cluster.kubeconfig(tmp_path_factory.mktemp("counters") / "kubeconfig", namespace=NAMESPACE)
    return full_cluster, str(kubeconfig)


def feasible(kubeconfig: str, name: str) -> tuple[list[str], dict[str, str]]:
    """The nodes the explainer calls feasible for the claim, and why each device of NODE was refused."""
    source = open_source(KubeOptions(kubeconfig=kubeconfig)).source
    inventory = source.read([ReadRequest(Node), ReadRequest(ResourceSlice), ReadRequest(DeviceClass),
                             ReadRequest(ResourceClaim, None)])
    explained = explain_allocation([inventory.get(ResourceClaim, NAMESPACE, name)], inventory)
    assert not [n for n in explained.nodes if n.error or n.undetermined], explained
    (node,) = [n for n in explained.nodes if n.node == NODE]
    return explained.feasible_nodes, {r.device.rsplit("/", 1)[1]: r.message for q in node.requests for r in q.rejected}


def resize_sm(plane, sm: str) -> None:
    current = plane.request("GET", f"{SLICES}/{NODE}-counters")
    plane.request("PUT", f"{SLICES}/{NODE}-counters", counter_slice(sm, current["metadata"]["resourceVersion"]))


def test_an_overdrawn_counter_refuses_a_device_that_does_not_consume_it(cluster):
    plane, kubeconfig = cluster
    load(plane, [claim_for("big", "big"), pod_for("big")])
    assert settle(plane, NAMESPACE, "big")["spec"].get("nodeName") == NODE
    load(plane, [claim_for("small", "small")])
    # sm used exactly (8 of 8): p1, which consumes only mem, fits
    assert feasible(kubeconfig, "small")[0] == [NODE]

    resize_sm(plane, "4")  # the driver shrank sm under what p0 holds: overdrawn by 4
    nodes, story = feasible(kubeconfig, "small")
    assert nodes == [] and story == {
        "p0": 'device.attributes["counters.example.com"].kind == "small" is false',
        "p1": "shared counter gpu/sm of the pool is overdrawn (-4 left after the cluster's allocations): the "
              "scheduler refuses every device of the pool that consumes counters"}, story
    load(plane, [pod_for("small")])
    pod = settle(plane, NAMESPACE, "small")
    assert not pod["spec"].get("nodeName") and scheduled_false(pod), pod["status"]  # the real scheduler refuses it too

    resize_sm(plane, "8")  # room again: both say p1 fits, and the scheduler binds the pod
    assert feasible(kubeconfig, "small")[0] == [NODE]
    assert wait_for("the second pod bound once sm grew back", lambda: plane.request(
        "GET", f"/api/v1/namespaces/{NAMESPACE}/pods/small")["spec"].get("nodeName"), timeout=90) == NODE
