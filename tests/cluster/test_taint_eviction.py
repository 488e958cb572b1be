"""`kubectl dra taints --dry-run` against the real device taint eviction controller (v1.37.2
kube-controller-manager): pods scheduled and allocated by the real scheduler on two nodes, a
DeviceTaintRule dry-run, then applied to the real API server: the pods the controller evicts are
exactly the ones the dry run predicted (a pod tolerating the taint forever stays, pods on the other
node stay)."""

from __future__ import annotations

import json
import time

import pytest
import yaml
from clusterobjects import driver_class, ready_node, wait_for
from loader import load

NAMESPACE = "taint-oracle"
DRIVER = "evict.example.com"
NODES = ["taint-node-1", "taint-node-2"]


def objects() -> list[dict]:
    out = [ready_node(n) for n in NODES]
    out.append(driver_class(DRIVER))
    for n in NODES:
        out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{n}-evict"},
                    "spec": {"driver": DRIVER, "nodeName": n, "pool": {"name": n, "generation": 1, "resourceSliceCount": 1},
                             "devices": [{"name": f"dev-{i}"} for i in range(3)]}})
    for i, n in enumerate(NODES * 3):
        name = f"p{i}"
        exactly: dict = {"deviceClassName": DRIVER}
        if i == 2:  # tolerates the maintenance taint forever: never evicted
            exactly["tolerations"] = [{"key": "example.com/maintenance", "operator": "Exists", "effect": "NoExecute"}]
        out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                    "metadata": {"name": name, "namespace": NAMESPACE},
                    "spec": {"devices": {"requests": [{"name": "dev", "exactly": exactly}]}}})
        out.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
                    "spec": {"nodeSelector": {"kubernetes.io/hostname": n}, "terminationGracePeriodSeconds": 0,
                             "tolerations": [{"operator": "Exists"}],
                             "containers": [{"name": "c", "image": "registry.example/app:1",
                                             "resources": {"claims": [{"name": "dev"}]}}],
                             "resourceClaims": [{"name": "dev", "resourceClaimName": name}]}})
    return out


RULE = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "drain-taint-node-1"},
        "spec": {"deviceSelector": {"driver": DRIVER, "pool": "taint-node-1"},
                 "taint": {"key": "example.com/maintenance", "value": "firmware", "effect": "NoExecute"}}}


def pods(plane) -> dict[str, dict]:
    return {p["metadata"]["name"]: p for p in plane.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]}


@pytest.fixture(scope="module")
def scheduled(full_cluster, tmp_path_factory):
    load(full_cluster, objects())
    wait_for("every pod bound with its claim reserved",
         lambda: all(p["spec"].get("nodeName") for p in pods(full_cluster).values()) and all(
             c.get("status", {}).get("reservedFor") for c in full_cluster.request(
                 "GET", f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims")["items"]))
    work = tmp_path_factory.mktemp("taint")
    return full_cluster, str(full_cluster.kubeconfig(work / "kubeconfig", namespace=NAMESPACE)), work


def test_the_controller_evicts_exactly_what_the_dry_run_predicted(scheduled, dra):
    plane, kubeconfig, work = scheduled
    rule_file = work / "rule.yaml"
    rule_file.write_text(yaml.safe_dump(RULE))
    dry = dra("taints", "--dry-run", "-f", str(rule_file), "--kubeconfig", kubeconfig, "-o", "json")
    assert dry.exit_code == 1, dry  # pods would be evicted
    doc = dry.json()
    predicted = {p.split("/")[1] for d in doc["devices"] for c in d["consumers"] if c["outcome"] == "WouldEvict"
                 for p in c["pods"]}
    tolerated = {p.split("/")[1] for d in doc["devices"] for c in d["consumers"] if c["outcome"] == "Tolerated"
                 for p in c["pods"]}
    on_node_1 = {name for name, p in pods(plane).items() if p["spec"]["nodeName"] == "taint-node-1"}
    assert predicted == on_node_1 - {"p2"} and tolerated == {"p2"} and len(predicted) == 2
    before = set(pods(plane))
    plane.request("POST", "/apis/resource.k8s.io/v1/devicetaintrules", RULE)
    wait_for("the controller to evict", lambda: predicted.isdisjoint(
        {n for n, p in pods(plane).items() if not p["metadata"].get("deletionTimestamp")}), timeout=60)
    time.sleep(3)  # nothing more goes
    remaining = {n for n, p in pods(plane).items() if not p["metadata"].get("deletionTimestamp")}
    assert before - remaining == predicted
    # what the controller says on the rule, and after the fact `taints` sees the rule and no pod left to evict
    stored = plane.request("GET", f"/apis/resource.k8s.io/v1/devicetaintrules/{RULE['metadata']['name']}")
    conditions = {c["type"]: c for c in stored.get("status", {}).get("conditions", [])}
    assert "EvictionInProgress" in conditions, json.dumps(stored.get("status"))
    after = dra("taints", "--kubeconfig", kubeconfig, "-o", "json").json()
    sources = {t["source"] for d in after["devices"] for t in d["taints"]}
    assert "rule/drain-taint-node-1" in sources
    still = {p.split("/")[1] for d in after["devices"] for c in d["consumers"] for p in c["pods"]
             if c["outcome"] in ("Evicted", "EvictionPending")}
    assert still == set()  # evicted pods are gone; p2 tolerates it
