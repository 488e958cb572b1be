"""Claims, pods and nodes as the upstream controllers see them (issue items 9-15): each scenario
is a snapshot a user could have saved, run through the CLI, next to the twin that must stay quiet."""

from __future__ import annotations

import yaml
from builders import claim, pod, pod_group, reserved_group, reserved_pod, resource_slice, uid

GPU = "gpu.example.com"


def write(tmp_path, objects) -> str:
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    return str(path)


def node(name="worker-1", labels=None, pods="110"):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": uid(f"node/{name}"), "labels": {"kubernetes.io/hostname": name,
                                                                               **(labels or {})}},
            "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": pods},
                       "allocatable": {"cpu": "8", "memory": "32Gi", "pods": pods},
                       "nodeInfo": {"kubeletVersion": "v1.37.2", "containerRuntimeVersion": "containerd://2.1.0"}}}


def codes(doc) -> list[str]:
    return sorted(f["code"] for f in doc["findings"])


def explain_claim(dra, snapshot, name="c", namespace="ml"):
    result = dra("explain", "claim", name, "-n", namespace, "--snapshot", snapshot, "-o", "json")
    return result, result.json() if result.stdout else None


# ---- 9: one bad field is not a missing object -------------------------------------------------

def test_a_pod_with_an_unparsable_quantity_still_holds_its_claim(tmp_path, dra):
    live = pod("trainer", claims={"g": "c"})
    live["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "two"}
    snapshot = write(tmp_path, [live, claim("c", devices=[(GPU, "worker-1", "gpu-0")], reserved_for=[reserved_pod(live)]),
                                resource_slice("worker-1", GPU, ["gpu-0"])])
    result, doc = explain_claim(dra, snapshot)
    assert result.exit_code == 4  # partial: the field is named on stderr
    assert 'Pod ml/trainer: spec.containers[0].resources.requests.cpu: invalid quantity "two"' in result.stderr
    assert [r["resolved"] for r in doc["reservedFor"]] == ["exists"]
    assert codes(doc) == []  # no StaleReservation, no DeallocationBlocked: the pod is there
    pod_doc = dra("explain", "pod", "trainer", "-n", "ml", "--snapshot", snapshot, "-o", "json").json()
    assert pod_doc["cgroups"]["unknown"].startswith("the pod has invalid fields (spec.containers[0].resources")
    assert pod_doc["cgroups"]["pod"]["files"] == {} and pod_doc["scheduler"]["requests"] == {}
    assert pod_doc["scheduler"]["note"].startswith("unknown:")


def test_one_bad_device_capacity_does_not_hide_its_siblings(tmp_path, dra):
    rs = resource_slice("worker-1", GPU, ["gpu-0", "gpu-1"])
    rs["spec"]["devices"][0]["capacity"]["memory"]["value"] = "80GB!"
    holder = pod("p", claims={"g": "c"})
    sibling = pod("q", claims={"g": "d"})
    snapshot = write(tmp_path, [rs, holder, sibling,
                                claim("c", devices=[(GPU, "worker-1", "gpu-0")], reserved_for=[reserved_pod(holder)]),
                                claim("d", devices=[(GPU, "worker-1", "gpu-1")], reserved_for=[reserved_pod(sibling)])])
    for name, invalid in (("d", []), ("c", ["spec.devices[0].capacity.memory.value"])):
        result, doc = explain_claim(dra, snapshot, name)
        assert result.exit_code == 4 and "spec.devices[0].capacity.memory.value" in result.stderr
        assert "AllocatedDeviceMissing" not in codes(doc)
        [device] = doc["devices"]
        assert device["found"] is True and device["invalidFields"] == invalid
    wide = dra("claims", "-A", "-o", "wide", "--snapshot", snapshot)
    assert "AllocatedDeviceMissing" not in wide.stdout


# ---- 10-12: reservations as the resourceclaim controller sees them -----------------------------

def test_a_deleted_pod_that_was_never_scheduled_is_done(tmp_path, dra):
    gone = pod("batch-7", claims={"g": "c"}, node=None, phase="Pending")
    gone["metadata"]["deletionTimestamp"] = "2026-11-21T08:00:00Z"
    snapshot = write(tmp_path, [gone, claim("c", devices=[(GPU, "worker-1", "gpu-0")], reserved_for=[reserved_pod(gone)]),
                                resource_slice("worker-1", GPU, ["gpu-0"])])
    _, doc = explain_claim(dra, snapshot)
    assert [r["resolved"] for r in doc["reservedFor"]] == ["done"]
    assert codes(doc) == ["DeallocationBlocked", "StaleReservation"]
    # its twin is terminating on a node: still running, still a real holder
    running = pod("batch-7", claims={"g": "c"}, phase="Running")
    running["metadata"]["deletionTimestamp"] = "2026-11-21T08:00:00Z"
    snapshot = write(tmp_path, [running, claim("c", devices=[(GPU, "worker-1", "gpu-0")],
                                               reserved_for=[reserved_pod(running)]),
                                resource_slice("worker-1", GPU, ["gpu-0"])])
    _, doc = explain_claim(dra, snapshot)
    assert [r["resolved"] for r in doc["reservedFor"]] == ["exists"] and codes(doc) == []


def test_pod_entries_resolve_only_in_the_claims_namespace(tmp_path, dra):
    """Same answer whatever was read: a pod of another namespace never satisfies an entry."""
    elsewhere = pod("web", namespace="other", claims={"g": "c"}, pod_uid=uid("pod/ml/web"))
    snapshot = write(tmp_path, [elsewhere, claim("c", devices=[(GPU, "worker-1", "gpu-0")],
                                                 reserved_for=[{"resource": "pods", "name": "web",
                                                                "uid": uid("pod/ml/web")}]),
                                resource_slice("worker-1", GPU, ["gpu-0"])])
    _, doc = explain_claim(dra, snapshot)
    assert [r["resolved"] for r in doc["reservedFor"]] == ["missing"] and "StaleReservation" in codes(doc)
    everything = dra("claims", "-A", "-o", "json", "--snapshot", snapshot, "--findings").json()
    assert [i["findings"] for i in everything["items"]] == [["DeallocationBlocked", "StaleReservation"]]


def test_a_replaced_podgroup_is_a_stale_reservation(tmp_path, dra):
    group = pod_group("trainer")
    group["metadata"]["uid"] = uid("pg/trainer/v2")  # deleted and created again under the same name
    member = pod("trainer-0", claims={"gpus": "c"}, group="trainer")
    snapshot = write(tmp_path, [group, member, resource_slice("worker-1", GPU, ["gpu-0"]),
                                claim("c", devices=[(GPU, "worker-1", "gpu-0")], reserved_for=[reserved_group("trainer")])])
    _, doc = explain_claim(dra, snapshot)
    assert [r["resolved"] for r in doc["reservedFor"]] == ["uidMismatch"]
    assert codes(doc) == ["DeallocationBlocked", "StaleReservation"]
    message = next(f["message"] for f in doc["findings"] if f["code"] == "StaleReservation")
    assert "PodGroup was replaced" in message and "KEP-5729" in message
    twin = write(tmp_path, [pod_group("trainer"), member, resource_slice("worker-1", GPU, ["gpu-0"]),
                            claim("c", devices=[(GPU, "worker-1", "gpu-0")], reserved_for=[reserved_group("trainer")])])
    assert codes(explain_claim(dra, twin)[1]) == []


# ---- 13-14: pools and the nodes they reach ----------------------------------------------------

def generation(rs, number, devices):
    rs = yaml.safe_load(yaml.safe_dump(rs))
    rs["metadata"]["name"] += f"-g{number}"
    rs["spec"]["pool"]["generation"] = number
    rs["spec"]["devices"] = [d for d in rs["spec"]["devices"] if d["name"] in devices]
    return rs


def test_only_the_highest_pool_generation_counts(tmp_path, dra):
    base = resource_slice("worker-1", GPU, ["gpu-0", "gpu-1"])
    holder = pod("p", claims={"g": "c"})
    objects = [holder, claim("c", devices=[(GPU, "worker-1", "gpu-0")], reserved_for=[reserved_pod(holder)])]
    snapshot = write(tmp_path, objects + [generation(base, 1, ["gpu-0", "gpu-1"]), generation(base, 2, ["gpu-1"])])
    _, doc = explain_claim(dra, snapshot)
    assert codes(doc) == ["AllocatedDeviceMissing"] and doc["devices"][0]["found"] is False
    message = doc["findings"][0]["message"]
    assert "only in an outdated generation (1) of pool worker-1, whose current generation 2 no longer lists it" in message
    twin = write(tmp_path, objects + [generation(base, 1, ["gpu-0", "gpu-1"])])
    assert codes(explain_claim(dra, twin)[1]) == []


def test_slices_reach_nodes_by_selector_all_nodes_and_per_device(tmp_path, dra):
    rack = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "rack-a-nics", "uid": uid("rack")},
            "spec": {"driver": "dra.net", "pool": {"name": "rack-a", "generation": 1, "resourceSliceCount": 1},
                     "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "example.com/rack", "operator": "In", "values": ["a"]}]}]},
                     "devices": [{"name": "nic-0"}]}}
    fabric = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
              "metadata": {"name": "fabric", "uid": uid("fabric")},
              "spec": {"driver": "fabric.example.com", "pool": {"name": "fabric", "generation": 1,
                                                                "resourceSliceCount": 1},
                       "allNodes": True, "devices": [{"name": "link-0"}]}}
    partitioned = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                   "metadata": {"name": "chassis", "uid": uid("chassis")},
                   "spec": {"driver": GPU, "pool": {"name": "chassis", "generation": 1, "resourceSliceCount": 1},
                            "perDeviceNodeSelection": True,
                            "devices": [{"name": "gpu-a", "nodeName": "worker-1"}, {"name": "gpu-b", "nodeName": "worker-2"},
                                        {"name": "gpu-c", "allNodes": True}]}}
    holder = pod("p", claims={"n": "c"})
    held = claim("c", devices=[("dra.net", "rack-a", "nic-0")], reserved_for=[reserved_pod(holder)])
    held["status"]["allocation"]["nodeSelector"] = rack["spec"]["nodeSelector"]  # as the scheduler copies it
    snapshot = write(tmp_path, [node("worker-1", {"example.com/rack": "a"}), node("worker-2", {"example.com/rack": "b"}),
                                rack, fabric, partitioned, holder, held])
    one = dra("explain", "node", "worker-1", "--snapshot", snapshot, "-o", "json").json()
    slices = {s["name"]: (s["reachedBy"], [d["name"] for d in s["devices"]]) for s in one["resourceSlices"]}
    assert slices == {"rack-a-nics": ("nodeSelector", ["nic-0"]), "fabric": ("allNodes", ["link-0"]),
                      "chassis": ("perDeviceNodeSelection", ["gpu-a", "gpu-c"])}
    assert [c["name"] for c in one["claims"]] == ["c"]
    assert one["resourceSlices"][[s["name"] for s in one["resourceSlices"]].index("rack-a-nics")]["devices"][0][
        "allocatedTo"] == ["ml/c"]
    two = dra("explain", "node", "worker-2", "--snapshot", snapshot, "-o", "json").json()
    assert {s["name"]: [d["name"] for d in s["devices"]] for s in two["resourceSlices"]} == {
        "fabric": ["link-0"], "chassis": ["gpu-b", "gpu-c"]}
    assert two["claims"] == []
    _, doc = explain_claim(dra, snapshot)
    assert doc["devices"][0]["found"] is True and codes(doc) == []


def test_a_selector_that_does_not_parse_is_said(tmp_path, dra):
    bad = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "odd", "uid": uid("odd")},
           "spec": {"driver": "x.example.com", "pool": {"name": "odd", "generation": 1, "resourceSliceCount": 1},
                    "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "size", "operator": "Gt", "values": ["big"]}]}]}, "devices": [{"name": "d"}]}}
    doc = dra("explain", "node", "worker-1", "--snapshot", write(tmp_path, [node(), bad]), "-o", "json").json()
    assert doc["resourceSlices"] == []
    [finding] = doc["findings"]
    assert finding["code"] == "NodeSelectionInvalid" and "Gt needs exactly one integer value" in finding["message"]


# ---- 15: what blocks a stuck pod; nothing silently empty --------------------------------------

def test_explain_pod_names_the_claim_that_blocks_it(tmp_path, dra):
    reserved = pod("notebook", claims={"g": "c"})
    stuck = pod("debug-shell", claims={"g": "c"}, phase="Pending")  # nodeName set by hand: no scheduler
    snapshot = write(tmp_path, [reserved, stuck, resource_slice("worker-1", GPU, ["gpu-0"]),
                                claim("c", devices=[(GPU, "worker-1", "gpu-0")], reserved_for=[reserved_pod(reserved)])])
    doc = dra("explain", "pod", "debug-shell", "-n", "ml", "--snapshot", snapshot, "-o", "json").json()
    [finding] = [f for f in doc["findings"] if f["severity"] == "error"]
    assert finding["code"] == "ReferencedButNotReserved"
    assert f"is not allowed to use ResourceClaim c ({uid('claim/ml/c')})" in finding["message"]
    assert dra("explain", "pod", "notebook", "-n", "ml", "--snapshot", snapshot, "-o", "json").json()["findings"] == []
    # bound, but the claim was never allocated
    unallocated = write(tmp_path, [stuck, claim("c", devices=[])])
    doc = dra("explain", "pod", "debug-shell", "-n", "ml", "--snapshot", unallocated, "-o", "json").json()
    assert {f["code"] for f in doc["findings"]} == {"ClaimNotAllocated", "ReferencedButNotReserved"}
    tree = dra("explain", "pod", "debug-shell", "-n", "ml", "--snapshot", unallocated).stdout
    assert "Scheduler counts" in tree and "nothing: no container requests anything" in tree


def test_explain_node_counts_pods_against_pod_capacity(tmp_path, dra):
    pods = [pod(f"p{i}", claims={}) for i in range(3)] + [pod("done", claims={}, phase="Succeeded")]
    doc = dra("explain", "node", "worker-1", "--snapshot", write(tmp_path, [node(pods="3"), *pods]), "-o", "json").json()
    assert doc["requested"]["pods"] == "3" and doc["free"]["pods"] == "0"
    assert "NodeOvercommitted" not in codes(doc)
    over = dra("explain", "node", "worker-1", "--snapshot",
               write(tmp_path, [node(pods="2"), *pods]), "-o", "json").json()
    assert over["free"]["pods"] == "-1" and "NodeOvercommitted" in codes(over)
