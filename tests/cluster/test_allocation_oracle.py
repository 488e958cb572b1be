"""The allocation explainer against the real kube-scheduler (v1.37.2) on generated scenarios.

Three nodes without kubelets; per scenario a driver publishes a random mix of devices on them
(attributes, memory capacity, some with a NoSchedule taint). Pods come one at a time, each with a
claim of random count, selector, tolerations and sometimes a matchAttribute constraint or a
firstAvailable list. Before each pod is created, the explainer (reading the live cluster through
its own client) says which nodes can take the claim; then the scheduler decides:
- a pod it binds must be on a node the explainer calls feasible, with the devices the explainer
  would pick there when only that node is feasible;
- a pod it cannot place must have no feasible node in the explainer.
Every earlier pod's allocation is in the state the next one sees (nothing is ever freed).
"""

from __future__ import annotations

import random

import pytest
from clusterobjects import ready_node, settle
from loader import load

from kubectl_dra.allocation.explain import explain_allocation
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.kube.sources import open_source
from kubectl_dra.model.node import Node
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.model.resource import DeviceClass, ResourceSlice

NODES = [f"alloc-node-{i}" for i in range(1, 4)]
NAMESPACE = "alloc-oracle"
SCENARIOS = 8
PODS_PER_SCENARIO = 6
STAMP = "2026-11-20T08:00:00Z"


def scenario(seed: int):
    rng = random.Random(seed)
    driver = f"gen{seed}.example.com"
    objects = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": driver},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}}]
    for name in NODES:
        devices = []
        for i in range(rng.randint(1, 4)):
            device = {"name": f"dev-{i}", "attributes": {"model": {"string": rng.choice(["a", "b"])},
                                                         "index": {"int": i}},
                      "capacity": {"memory": {"value": rng.choice(["8Gi", "16Gi", "32Gi"])}}}
            if rng.random() < 0.2:
                device["taints"] = [{"key": f"{driver}/unhealthy", "value": "ecc", "effect": "NoSchedule",
                                     "timeAdded": STAMP}]
            devices.append(device)
        objects.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                        "metadata": {"name": f"{name}-{driver.split('.')[0]}"},
                        "spec": {"driver": driver, "nodeName": name,
                                 "pool": {"name": name, "generation": 1, "resourceSliceCount": 1}, "devices": devices}})
    claims = []
    selectors = [None, f'device.attributes["{driver}"].model == "a"',
                 f'device.capacity["{driver}"].memory.compareTo(quantity("16Gi")) >= 0',
                 f'device.attributes["{driver}"].index < 2']
    for p in range(PODS_PER_SCENARIO):
        exactly = {"deviceClassName": driver, "count": rng.choice([1, 1, 2, 3])}
        selector = rng.choice(selectors)
        if selector:
            exactly["selectors"] = [{"cel": {"expression": selector}}]
        if rng.random() < 0.3:
            exactly["tolerations"] = [{"key": f"{driver}/unhealthy", "operator": "Exists", "effect": "NoSchedule"}]
        spec: dict = {"devices": {"requests": [{"name": "req", "exactly": exactly}]}}
        if rng.random() < 0.25:  # a prioritized list: the exact request first, one device of any model next
            spec["devices"]["requests"] = [{"name": "req", "firstAvailable": [
                {"name": "many", **exactly}, {"name": "one", "deviceClassName": driver, "count": 1}]}]
        elif exactly["count"] > 1 and rng.random() < 0.4:
            spec["devices"]["constraints"] = [{"matchAttribute": f"{driver}/model"}]
        claims.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                       "metadata": {"name": f"s{seed}-p{p}", "namespace": NAMESPACE}, "spec": spec})
    return objects, claims


def pod_for(claim: dict) -> dict:
    name = claim["metadata"]["name"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"containers": [{"name": "c", "image": "registry.example/app:1",
                                     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"},
                                                   "claims": [{"name": "dev"}]}}],
                     "resourceClaims": [{"name": "dev", "resourceClaimName": name}],
                     "tolerations": [{"operator": "Exists"}]}}


@pytest.fixture(scope="module")
def cluster(full_cluster, tmp_path_factory):
    load(full_cluster, [ready_node(n) for n in NODES])
    kubeconfig = full_cluster.kubeconfig(tmp_path_factory.mktemp("alloc") / "kubeconfig", namespace=NAMESPACE)
    return full_cluster, str(kubeconfig)


def read(kubeconfig: str):
    from kubectl_dra.kube.reads import ReadRequest

    source = open_source(KubeOptions(kubeconfig=kubeconfig)).source
    return source.read([ReadRequest(Node), ReadRequest(ResourceSlice), ReadRequest(DeviceClass),
                        ReadRequest(ResourceClaim, None)])


@pytest.mark.parametrize("seed", range(SCENARIOS))
def test_the_scheduler_agrees_with_the_explainer(cluster, seed):
    plane, kubeconfig = cluster
    objects, claims = scenario(seed)
    load(plane, objects)
    checked = {"bound": 0, "unschedulable": 0, "single": 0}
    for claim in claims:
        load(plane, [claim])
        inventory = read(kubeconfig)
        mine = inventory.get(ResourceClaim, NAMESPACE, claim["metadata"]["name"])
        explained = explain_allocation([mine], inventory, keep_infeasible=len(NODES) + 10)
        assert not [n for n in explained.nodes if n.error or n.undetermined], explained
        load(plane, [pod_for(claim)])
        pod = settle(plane, NAMESPACE, claim["metadata"]["name"])
        where = pod["spec"].get("nodeName")
        story = {n.node: n.message for n in explained.nodes}
        if where:
            checked["bound"] += 1
            assert where in explained.feasible_nodes, (where, story)
            if explained.feasible_nodes == [where]:
                checked["single"] += 1
                got = plane.request("GET", f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims/"
                                           f"{claim['metadata']['name']}")
                results = sorted((r["request"], r["driver"], r["pool"], r["device"])
                                 for r in got["status"]["allocation"]["devices"]["results"])
                picks = next(n for n in explained.nodes if n.node == where).results
                assert results == sorted((p.request, p.driver, p.pool, p.device) for p in picks)
        else:
            checked["unschedulable"] += 1
            assert explained.feasible_nodes == [], (pod["status"]["conditions"], story)
    assert checked["bound"] + checked["unschedulable"] == PODS_PER_SCENARIO
    for key, n in checked.items():
        SEEN[key] = SEEN.get(key, 0) + n


SEEN: dict[str, int] = {}


def test_the_scenarios_exercised_every_outcome():
    """Run after the scenarios (file order): bound pods, unschedulable pods and single-node device checks."""
    assert SEEN.get("bound", 0) >= 10 and SEEN.get("unschedulable", 0) >= 5 and SEEN.get("single", 0) >= 4, SEEN
