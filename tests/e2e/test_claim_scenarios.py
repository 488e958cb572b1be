"""Every claim finding from a realistic scenario, next to its healthy twin, in both API generations,
from snapshot files (tests/cluster/test_live_reads.py runs the same scenarios against the real
API server)."""

from __future__ import annotations

import pytest
import yaml
from builders import claim, pod, pod_group, reserved_group, reserved_pod, resource_slice, uid
from generations import to_v1beta1

GPU = "gpu.example.com"
SLICE = resource_slice("worker-1", GPU, ["gpu-0", "gpu-1"])
CPU_SLICE = resource_slice("worker-1", "dra.cpu", [{
    "name": "cpudevnuma000", "allowMultipleAllocations": True, "capacity": {"dra.cpu/cpu": {"value": "32"}},
    "nodeAllocatableResources": {"cpu": {"mapping": {"capacityKey": "dra.cpu/cpu", "capacityMultiplier": "1"}}}}])


def gpu_claim(name="c", **kw):
    return claim(name, devices=[(GPU, "worker-1", "gpu-0")], **kw)


def cpu_claim(reserved):
    return claim("c", devices=[("dra.cpu", "worker-1", "cpudevnuma000")], consumed={"dra.cpu/cpu": "4"},
                 reserved_for=reserved)


def with_entry(p):
    p["status"]["nodeAllocatableResourceClaimStatuses"] = [
        {"resourceClaimName": "c", "containers": ["main"], "mapping": [{"name": "cpu", "quantity": "4"}]}]
    return p


def scenario_stale_gone():
    return [SLICE, gpu_claim(reserved_for=[{"resource": "pods", "name": "batch-1", "uid": uid("gone")}])]


def twin_stale_gone():
    p = pod("batch-1", claims={"g": "c"})
    return [SLICE, p, gpu_claim(reserved_for=[reserved_pod(p)])]


def scenario_template_replaced():
    """A template claim whose pod was replaced: same name, new UID, a new generated claim."""
    old_uid = uid("web-0/old")
    new = pod("web-0", templates={"gpu": "single-gpu"}, generated={"gpu": "web-0-gpu-new"})
    old_claim = gpu_claim("web-0-gpu-old", reserved_for=[{"resource": "pods", "name": "web-0", "uid": old_uid}])
    old_claim["metadata"]["annotations"] = {"resource.kubernetes.io/pod-claim-name": "gpu"}
    old_claim["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "web-0", "uid": old_uid,
                                                 "controller": True}]
    return [SLICE, new, old_claim,
            claim("web-0-gpu-new", devices=[(GPU, "worker-1", "gpu-1")], reserved_for=[reserved_pod(new)])]


def scenario_done():
    p = pod("job-1", claims={"g": "c"}, phase="Succeeded")
    live = pod("job-2", claims={"g": "c"})
    return [SLICE, p, live, gpu_claim(reserved_for=[reserved_pod(p), reserved_pod(live)])]


def twin_done():
    p, live = pod("job-1", claims={"g": "c"}), pod("job-2", claims={"g": "c"})
    return [SLICE, p, live, gpu_claim(reserved_for=[reserved_pod(p), reserved_pod(live)])]


def scenario_unreserved():
    a, b = pod("a", claims={"g": "c"}), pod("b", claims={"g": "c"})
    return [SLICE, a, b, gpu_claim(reserved_for=[reserved_pod(a)])]


def twin_unreserved():
    a, b = pod("a", claims={"g": "c"}), pod("b", claims={"g": "c"})
    return [SLICE, a, b, gpu_claim(reserved_for=[reserved_pod(a), reserved_pod(b)])]


def many(n):
    pods = [pod(f"w-{i}", claims={"g": "c"}) for i in range(n)]
    return [SLICE, *pods, gpu_claim(reserved_for=[reserved_pod(p) for p in pods])]


def scenario_mapped_shared():
    a, b = with_entry(pod("a", claims={"c": "c"})), with_entry(pod("b", claims={"c": "c"}))
    return [CPU_SLICE, a, b, cpu_claim([reserved_pod(a), reserved_pod(b)])]


def twin_mapped_shared():
    a = with_entry(pod("a", claims={"c": "c"}))
    return [CPU_SLICE, a, cpu_claim([reserved_pod(a)])]


def scenario_gate_off():
    a = pod("a", claims={"c": "c"})
    return [CPU_SLICE, a, cpu_claim([reserved_pod(a)])]


def scenario_device_missing():
    p = pod("a", claims={"g": "c"})
    return [resource_slice("worker-1", GPU, ["gpu-1"]), p, gpu_claim(reserved_for=[reserved_pod(p)])]


def scenario_deleted():
    return [SLICE, pod("a", claims={"g": "c"}, phase="Running"),
            gpu_claim(deleted=True, reserved_for=[reserved_pod(pod("a", claims={"g": "c"}))])]


def twin_deleted():
    return [SLICE, pod("a", claims={"g": "c"}), gpu_claim(reserved_for=[reserved_pod(pod("a", claims={"g": "c"}))])]


def scenario_pending():
    return [SLICE, claim("c", node=None)]


GPU_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": GPU},
             "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU}"'}}]}}


def twin_pending():
    """A pod waits for the claim and a node's free GPUs can take it: nothing to report."""
    return [SLICE, GPU_CLASS, claim("c", node=None), pod("waiting", node=None, claims={"g": "c"}, phase="Pending")]


def group_scenario(deleting: bool, mixed: bool = False):
    members = [pod(f"m-{i}", group="trainer", claims={"g": "c"}) for i in range(2)]
    solo = pod("solo", claims={"g": "c"})
    reserved = [reserved_group("trainer")] + ([reserved_pod(solo)] if mixed else [])
    return [SLICE, *members, *([solo] if mixed else []), pod_group("trainer", deleting=deleting),
            gpu_claim(reserved_for=reserved)]


SCENARIOS = [
    ("stale-pod-gone", scenario_stale_gone, ["DeallocationBlocked", "StaleReservation"], twin_stale_gone),
    ("template-pod-replaced", scenario_template_replaced, ["DeallocationBlocked", "StaleReservation"], None),
    ("reserved-for-finished-pod", scenario_done, ["StaleReservation"], twin_done),
    ("referenced-not-reserved", scenario_unreserved, ["ReferencedButNotReserved"], twin_unreserved),
    ("reserved-for-near-limit", lambda: many(231), ["ReservedForNearLimit"], lambda: many(230)),
    ("reserved-for-at-limit", lambda: many(256), ["ReservedForNearLimit"], None),
    ("mapped-claim-shared", scenario_mapped_shared, ["MappedClaimShared"], twin_mapped_shared),
    ("node-allocatable-gate-off", scenario_gate_off, ["NodeAllocatableGateOff"], twin_mapped_shared),
    ("allocated-device-missing", scenario_device_missing, ["AllocatedDeviceMissing"], twin_deleted),
    ("deleted-but-allocated", scenario_deleted, ["DeletedButAllocated"], twin_deleted),
    ("pending-no-consumers", scenario_pending, ["PendingNoConsumers"], twin_pending),
    ("podgroup-deleting", lambda: group_scenario(True), ["PodGroupDeleting"], lambda: group_scenario(False)),
    ("mixed-pod-and-podgroup", lambda: group_scenario(False, mixed=True), [], None),
]
CLAIM_NAME = {"template-pod-replaced": "web-0-gpu-old"}

CASES = [(name, build, codes) for name, build, codes, _ in SCENARIOS]
CASES += [(f"{name}-healthy-twin", twin, []) for name, _, _, twin in SCENARIOS if twin is not None]


@pytest.fixture(params=["v1", "v1beta1"])
def generation(request):
    return request.param


@pytest.fixture
def run_explain(tmp_path, dra, generation):
    def run(objects: list[dict], claim_name: str):
        if generation == "v1beta1":
            objects = [to_v1beta1(o) for o in objects]
        path = tmp_path / "objects.yaml"
        path.write_text(yaml.safe_dump_all(objects))
        result = dra("explain", "claim", claim_name, "--snapshot", str(path), "-n", "ml", "-o", "json")
        assert result.exit_code == 0, result
        return result.json()

    return run


@pytest.mark.parametrize("name,build,expected", CASES, ids=[c[0] for c in CASES])
def test_claim_scenario(name, build, expected, run_explain):
    doc = run_explain(build(), CLAIM_NAME.get(name.removesuffix("-healthy-twin"), "c"))
    assert sorted({f["code"] for f in doc["findings"]}) == expected
    for finding in doc["findings"]:
        assert finding["message"].endswith(".") or finding["message"].endswith(")"), finding


def test_mixed_entries_cover_members_and_the_solo_pod(run_explain):
    doc = run_explain(group_scenario(False, mixed=True), "c")
    assert [(r["resource"], r["resolved"]) for r in doc["reservedFor"]] == [("podgroups", "exists"), ("pods", "exists")]
    assert [(c["pod"], c["reserved"]) for c in doc["consumers"]] == [
        ("ml/m-0", True), ("ml/m-1", True), ("ml/solo", True)]


def test_at_limit_counts_against_256(run_explain):
    doc = run_explain(many(256), "c")
    assert len(doc["reservedFor"]) == 256 and doc["reservedForLimit"] == 256
    assert [f["severity"] for f in doc["findings"]] == ["error"]


def test_replaced_template_pod_is_named(run_explain):
    doc = run_explain(scenario_template_replaced(), "web-0-gpu-old")
    assert doc["reservedFor"][0]["resolved"] == "uidMismatch"
    stale = next(f for f in doc["findings"] if f["code"] == "StaleReservation")
    assert "pod web-0 was replaced" in stale["message"] and "kube-controller-manager" in stale["message"]


def test_finished_pod_beside_a_live_one_flaps_in_v137(run_explain):
    """kubernetes/kubernetes#141274, seen on the real v1.37.2 controller (tests/cluster): a finished
    pod still bound and referencing a claim another pod keeps allocated is removed and re-added."""
    doc = run_explain(scenario_done(), "c")
    [stale] = [f for f in doc["findings"] if f["code"] == "StaleReservation"]
    assert "kubernetes/kubernetes#141274" in stale["message"]
    assert "Deleting the finished pod ml/job-1 ends it" in stale["message"]


def test_finished_last_consumer_is_simply_removed(run_explain):
    """Alone, the finished pod's removal deallocates the claim, so nothing re-adds it."""
    p = pod("job-1", claims={"g": "c"}, phase="Succeeded")
    doc = run_explain([SLICE, p, gpu_claim(reserved_for=[reserved_pod(p)])], "c")  # exit 0: explain only reports
    # the one entry resolves to the finished pod, on the node it was bound to, not being deleted
    assert [(v["name"], v["uid"], v["resolved"], v["node"], v["deleting"]) for v in doc["reservedFor"]] == \
        [("job-1", p["metadata"]["uid"], "done", p["spec"]["nodeName"], False)]
    # No other consumer keeps the claim allocated, so this is the plain stale entry the controller
    # removes (no #141274 flapping), and since it is the only entry, every reservation (1) is stale.
    assert [(f["code"], f["severity"], f["object"], f["message"]) for f in doc["findings"]] == [
        ("StaleReservation", "warning", "resourceclaim/ml/c",
         "reservedFor entry pod/job-1: pod job-1 has finished. The resourceclaim controller in "
         "kube-controller-manager should remove it; if it stays, check that controller's logs."),
        ("DeallocationBlocked", "error", "resourceclaim/ml/c",
         "every reservation (1) is stale, so the devices stay allocated to nobody. Once the entries are removed "
         "the claim is deallocated; if kube-controller-manager does not do it, its resourceclaim controller is "
         "not running or cannot update this claim.")]


def test_finished_pod_being_deleted_is_not_re_reserved(run_explain):
    p = pod("job-1", claims={"g": "c"}, phase="Succeeded")
    p["metadata"]["deletionTimestamp"] = "2026-11-21T08:00:00Z"
    live = pod("job-2", claims={"g": "c"})
    doc = run_explain([SLICE, p, live, gpu_claim(reserved_for=[reserved_pod(p), reserved_pod(live)])], "c")
    stale = next(f for f in doc["findings"] if f["code"] == "StaleReservation")
    assert "#141274" not in stale["message"]
