"""The real kube-scheduler and resourceclaim controller (v1.37.2) as the oracle.

Nodes are objects without kubelets; ResourceSlices are written as a driver would, with
node-allocatable ``mapping`` and ``overhead``. The scheduler allocates, binds and records
``status.nodeAllocatableResourceClaimStatuses``: for the worked examples of KEP-5517
(docs/kubernetes/dra-apis.md §1.9) what it recorded must equal what `explain pod` computes, with no
NodeAllocatableStatusMismatch. The resourceclaim controller creates template claims and cleans
``reservedFor``: `explain claim` must agree with what it did and did not clean.
"""

from __future__ import annotations

import time

import pytest
from clusterobjects import wait_for
from loader import load

NODE = "dra-node-1"
SNAPSHOT_TIME = "2026-11-20T08:00:00Z"


def node():
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux"}},
            "status": {"capacity": {"cpu": "64", "memory": "256Gi", "pods": "110", "hugepages-2Mi": "2Gi"},
                       "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110", "hugepages-2Mi": "2Gi"},
                       "declaredFeatures": ["DRANodeAllocatableResources"],
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "lastHeartbeatTime": SNAPSHOT_TIME, "lastTransitionTime": SNAPSHOT_TIME}],
                       "nodeInfo": {"kubeletVersion": "v1.37.2", "containerRuntimeVersion": "containerd://2.1.0",
                                    "architecture": "amd64", "operatingSystem": "linux"}}}


def device_class(driver: str):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": driver},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}}


def slice_of(driver: str, devices: list[dict]):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{NODE}-{driver}"},
            "spec": {"driver": driver, "nodeName": NODE, "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


# KEP-5517 worked examples as drivers would publish them
PER_CPU = "percpu.example.com"      # E1: one device per CPU, deviceMultiplier 1
SOCKET = "socket.example.com"       # E2: cores x 2 and memory x 1 from consumed capacity
XPU = "xpu.example.com"             # E3: memory overhead perPod 1Gi, perContainer 500Mi
L3 = "l3.example.com"               # E4: an L3-cache device worth 8 CPUs (capacityKey x 1)
HUGE = "huge.example.com"           # hugepages overhead
DRIVERS = {
    PER_CPU: [{"name": f"cpu{i}", "nodeAllocatableResources": {"cpu": {"mapping": {"deviceMultiplier": "1"}}}}
              for i in range(8)],
    SOCKET: [{"name": "socket0", "allowMultipleAllocations": True,
              "capacity": {"cores": {"value": "64", "requestPolicy": {"default": "1", "validRange": {"min": "1"}}},
                           "memory": {"value": "256Gi", "requestPolicy": {"default": "0",
                                                                          "validRange": {"min": "0"}}}},
              "nodeAllocatableResources": {
                  "cpu": {"mapping": {"capacityKey": "cores", "capacityMultiplier": "2"}},
                  "memory": {"mapping": {"capacityKey": "memory", "capacityMultiplier": "1"}}}}],
    XPU: [{"name": "xpu0", "nodeAllocatableResources": {"memory": {"overhead": {"perPod": "1Gi", "perContainer": "500Mi"}}}},
          {"name": "xpu1", "nodeAllocatableResources": {"memory": {"overhead": {"perPod": "1Gi", "perContainer": "500Mi"}}}}],
    L3: [{"name": "l3-0", "allowMultipleAllocations": True, "capacity": {"cpu": {"value": "8"}},
          "nodeAllocatableResources": {"cpu": {"mapping": {"capacityKey": "cpu", "capacityMultiplier": "1"}}}}],
    HUGE: [{"name": "hp0", "nodeAllocatableResources": {
        "hugepages-2Mi": {"overhead": {"perPod": "64Mi", "perContainer": "32Mi"}}}}],
}


def container(name, cpu="100m", memory="128Mi", claims=(), limits=None):
    c = {"name": name, "image": "registry.example/app:1",
         "resources": {"requests": {"cpu": cpu, "memory": memory}, "claims": [{"name": n} for n in claims]}}
    if limits:
        c["resources"]["limits"] = limits
    return c


def template(name, namespace, driver, *, count=1, capacity=None):
    exactly = {"deviceClassName": driver, "count": count}
    if capacity:
        exactly["capacity"] = {"requests": capacity}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": [{"name": "req", "exactly": exactly}]}}}}


def pod(name, namespace, containers, claims):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": containers, "terminationGracePeriodSeconds": 0,
                     "resourceClaims": [{"name": n, "resourceClaimTemplateName": t} for n, t in claims.items()]}}


EXAMPLES = {  # pod name -> (templates, pod)
    "e1": ([template("two-cpus", "oracle", PER_CPU, count=2)],
           pod("e1", "oracle", [container("c1", claims=["cpus"])], {"cpus": "two-cpus"})),
    "e2": ([template("two-cores", "oracle", SOCKET, capacity={"cores": "2"})],
           pod("e2", "oracle", [container("c1", claims=["socket"])], {"socket": "two-cores"})),
    "e3": ([template("one-xpu", "oracle", XPU)],
           pod("e3", "oracle", [container("app-c1", claims=["xpu"]), container("app-c2", claims=["xpu"])],
               {"xpu": "one-xpu"})),
    "e4": ([template("l3", "oracle", L3)], pod("e4", "oracle", [container("c1", claims=["cache"])], {"cache": "l3"})),
    "hp": ([template("hp", "oracle", HUGE)],
           pod("hp", "oracle", [container("c1", claims=["h"], limits={"hugepages-2Mi": "16Mi", "memory": "128Mi",
                                                                      "cpu": "100m"})], {"h": "hp"})),
}


@pytest.fixture(scope="module")
def scheduled(full_cluster, tmp_path_factory):
    """Every example pod, allocated and bound by the real scheduler."""
    plane = full_cluster
    objects = [node(), *(device_class(d) for d in DRIVERS), *(slice_of(d, devs) for d, devs in DRIVERS.items())]
    for templates, p in EXAMPLES.values():
        objects += [*templates, p]
    load(plane, objects)  # (the loader lifts the not-ready taint admission puts on new nodes)
    bound = {}
    for name in EXAMPLES:
        def is_bound(name=name):
            got = plane.request("GET", f"/api/v1/namespaces/oracle/pods/{name}")
            return got if got["spec"].get("nodeName") and got["status"].get("nodeAllocatableResourceClaimStatuses") \
                is not None or _unschedulable(got) else None
        got = wait_for(f"pod {name} to be bound", is_bound)
        assert got["spec"].get("nodeName") == NODE, f"{name}: {_unschedulable(got)}"
        bound[name] = got
    return plane, bound, str(plane.kubeconfig(tmp_path_factory.mktemp("oracle") / "kubeconfig", namespace="oracle"))


def _unschedulable(pod) -> str | None:
    for condition in pod.get("status", {}).get("conditions", []):
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            return condition.get("message", "unschedulable")
    return None


EXPECTED = {  # what docs/kubernetes/dra-apis.md §1.9 says the scheduler records, per example
    "e1": {"mapping": {"cpu": "2"}, "overhead": {}},
    "e2": {"mapping": {"cpu": "4"}, "overhead": {}},
    "e3": {"mapping": {}, "overhead": {"memory": {"perPod": "1Gi", "perContainer": "500Mi"}}},
    "e4": {"mapping": {"cpu": "8"}, "overhead": {}},
    "hp": {"mapping": {}, "overhead": {"hugepages-2Mi": {"perPod": "64Mi", "perContainer": "32Mi"}}},
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_explain_pod_computes_what_the_scheduler_recorded(scheduled, dra, name):
    _, bound, kubeconfig = scheduled
    result = dra("explain", "pod", name, "--kubeconfig", kubeconfig, "-o", "json")
    assert result.exit_code == 0, result
    doc = result.json()
    codes = [f["code"] for f in doc["findings"]]
    assert "NodeAllocatableStatusMismatch" not in codes, doc["findings"]
    [claim] = doc["claims"]
    recorded = bound[name]["status"]["nodeAllocatableResourceClaimStatuses"]
    assert claim["source"] == "podStatus" and claim["name"] == recorded[0]["resourceClaimName"]
    nonzero = {k: v for k, v in claim["mapping"].items() if v != "0"}
    assert {"mapping": nonzero, "overhead": claim["overhead"]} == EXPECTED[name], recorded
    assert claim["containers"] == recorded[0].get("containers", [])
    # what the scheduler counts equals the pod's allocatedResources-to-be: spec + DRA
    assert doc["scheduler"]["dra"] == {k: v for k, v in _dra_total(recorded).items() if v != "0"}


def _dra_total(statuses) -> dict[str, str]:
    from kubectl_dra.quantity import Quantity

    total: dict[str, Quantity] = {}

    def add(name, q):
        total[name] = total[name] + q if name in total else q

    for s in statuses:
        for m in s.get("mapping", []):
            add(m["name"], Quantity.parse(m["quantity"]))
        for o in s.get("overhead", []):
            if o.get("perPod"):
                add(o["name"], Quantity.parse(o["perPod"]))
            if o.get("perContainer"):
                add(o["name"], Quantity.parse(o["perContainer"]) * len(s.get("containers", [])))
    return {k: str(v) for k, v in total.items()}



def claim_of(plane, namespace, name):
    return plane.request("GET", f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}")


def test_explain_claim_agrees_with_what_the_controller_cleans(scheduled, dra):
    """A shared overhead-only claim and a template claim, through done pods and deleted pods."""
    plane, _, kubeconfig = scheduled
    shared = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
              "metadata": {"name": "shared-xpu", "namespace": "oracle"},
              "spec": {"devices": {"requests": [{"name": "req", "exactly": {"deviceClassName": XPU}}]}}}
    users = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": n, "namespace": "oracle"},
              "spec": {"containers": [container("c", claims=["x"])], "terminationGracePeriodSeconds": 0,
                       "resourceClaims": [{"name": "x", "resourceClaimName": "shared-xpu"}]}} for n in ("alpha", "beta")]
    load(plane, [shared, *users])
    reserved = wait_for("both pods reserved", lambda: len((claim_of(plane, "oracle", "shared-xpu").get("status") or {})
                                                          .get("reservedFor", [])) == 2)
    assert reserved
    doc = dra("explain", "claim", "shared-xpu", "--kubeconfig", kubeconfig, "-o", "json").json()
    assert [r["resolved"] for r in doc["reservedFor"]] == ["exists", "exists"] and doc["findings"] == []

    # beta finished. The v1.37.2 controller drops its reservation (isPodDone) and, because beta is still
    # bound and references the claim alpha keeps allocated, adds it back: the entry flaps
    # (kubernetes/kubernetes#141274). Whichever state a read catches, explain must say it.
    mark = plane.audit_mark()
    beta = plane.request("GET", "/api/v1/namespaces/oracle/pods/beta")
    beta["status"]["phase"] = "Succeeded"
    plane.request("PUT", "/api/v1/namespaces/oracle/pods/beta/status", beta)
    wait_for("beta's reservation to go", lambda: [r["name"] for r in claim_of(plane, "oracle", "shared-xpu")
                                                  ["status"]["reservedFor"]] == ["alpha"])
    seen = set()
    for _ in range(12):
        doc = dra("explain", "claim", "shared-xpu", "--kubeconfig", kubeconfig, "-o", "json").json()
        entries = [(r["name"], r["resolved"]) for r in doc["reservedFor"]]
        seen.add(tuple(entries))
        if entries == [("alpha", "exists")]:
            assert doc["findings"] == []  # a finished pod that is not reserved is no finding
            assert ("oracle/beta", False) in [(c["pod"], c["reserved"]) for c in doc["consumers"]]
        else:
            assert entries == [("alpha", "exists"), ("beta", "done")]
            [finding] = doc["findings"]
            assert finding["code"] == "StaleReservation" and "kubernetes/kubernetes#141274" in finding["message"]
            assert "Deleting the finished pod oracle/beta ends it" in finding["message"]
        time.sleep(0.2)
    rewrites = [e for e in plane.requests_since(mark, "system:serviceaccount:kube-system:resource-claim-controller")
                if e["verb"] == "update" and e["objectRef"].get("name") == "shared-xpu"]
    assert len(rewrites) > 4, "the controller rewrites the claim's status over and over while beta exists"

    # deleting the finished pod ends the loop: only alpha stays
    plane.request("DELETE", "/api/v1/namespaces/oracle/pods/beta")
    # The controller may still write once from a cache that has beta (re-adding it for a moment), so wait
    # until only alpha is reserved and the claim has not changed for 1.5 s.
    def settled():
        first = claim_of(plane, "oracle", "shared-xpu")
        if [r["name"] for r in first["status"]["reservedFor"]] != ["alpha"]:
            return False
        time.sleep(1.5)
        return claim_of(plane, "oracle", "shared-xpu")["metadata"]["resourceVersion"] == \
            first["metadata"]["resourceVersion"]
    wait_for("beta's reservation to stay gone", settled)
    doc = dra("explain", "claim", "shared-xpu", "--kubeconfig", kubeconfig, "-o", "json").json()
    assert [(r["name"], r["resolved"]) for r in doc["reservedFor"]] == [("alpha", "exists")]
    assert doc["findings"] == []

    # alpha deleted: the last reservation goes, and so does the allocation (deallocated)
    plane.request("DELETE", "/api/v1/namespaces/oracle/pods/alpha")
    wait_for("the claim to be deallocated", lambda: not (claim_of(plane, "oracle", "shared-xpu").get("status") or {})
             .get("allocation"))
    doc = dra("explain", "claim", "shared-xpu", "--kubeconfig", kubeconfig, "-o", "json").json()
    assert doc["claim"]["state"] == ["pending"] and doc["reservedFor"] == []
    assert not {"StaleReservation", "DeallocationBlocked"} & {f["code"] for f in doc["findings"]}

    # a template claim goes with its pod
    generated = scheduled[1]["e4"]["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    plane.request("DELETE", "/api/v1/namespaces/oracle/pods/e4")
    def gone():
        try:
            claim_of(plane, "oracle", generated)
            return False
        except Exception:  # noqa: BLE001 - 404 once the controller deleted it
            return True
    wait_for("the generated claim to be deleted", gone)
    missing = dra("explain", "claim", generated, "--kubeconfig", kubeconfig)
    assert missing.exit_code == 3 and "not found" in missing.stderr
