"""Allocation -> recorded entry (KEP-5517 examples E1-E7, docs/kubernetes/dra-apis.md §1.9) and the findings around it."""

from __future__ import annotations

import pytest
from builders import claim, pod, reserved_pod, resource_slice

from kubectl_dra.allocatable.entries import compute_entry, validate_device
from kubectl_dra.cgroups.formulas import milli_cpu_to_shares, weight_linear
from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.registry import parse_object
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.pods.explain import explain_pod
from kubectl_dra.quantity import Quantity

Q = Quantity.parse


def dev(name, *, capacity=None, nar=None, multi=False, old=None):
    d: dict = {"name": name}
    if capacity:
        d["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if nar:
        d["nodeAllocatableResources"] = nar
    if old:
        d["nodeAllocatableResourceMappings"] = old
    if multi:
        d["allowMultipleAllocations"] = True
    return d


def setup(devices: list[dict], allocated: list[str], *, consumed=None, containers=("main",), driver="d.example.com"):
    """One slice, one claim allocated to ``allocated`` devices, one pod whose containers use it."""
    p = pod("p", claims={"c": "c"})
    p["spec"]["containers"] = [{"name": n, "resources": {"requests": {"cpu": "100m"}, "claims": [{"name": "c"}]}}
                               for n in containers]
    c = claim("c", devices=[(driver, "worker-1", d) for d in allocated], reserved_for=[reserved_pod(p)])
    if consumed is not None:
        for result in c["status"]["allocation"]["devices"]["results"]:
            result["consumedCapacity"] = consumed
    inventory = Inventory()
    inventory.extend(parse_object(o) for o in (p, c, resource_slice("worker-1", driver, devices)))
    inventory.read_kinds |= {"Pod", "ResourceSlice"}
    return inventory.all(Pod)[0], inventory.get(ResourceClaim, "ml", "c"), inventory


def entry_for(*args, **kwargs):
    p, c, inventory = setup(*args, **kwargs)
    entry, findings, unknown = compute_entry(p, c, inventory, ["c"])
    assert unknown == []
    return entry, findings


def test_device_multiplier_counts_per_device():
    """KEP-5517 example E1 (docs/kubernetes/dra-apis.md §1.9)."""
    cpus = [dev(f"cpu{i}", nar={"cpu": {"mapping": {"deviceMultiplier": "1"}}}) for i in range(4)]
    entry, findings = entry_for(cpus, ["cpu0", "cpu1"])
    assert entry.mapping == {"cpu": Q("2")} and findings == []


def test_capacity_key_with_multiplier_and_zero_entries():
    """KEP-5517 example E2 (docs/kubernetes/dra-apis.md §1.9)."""
    socket = dev("socket0", multi=True, capacity={"cores": "64", "memory": "256Gi"},
                 nar={"cpu": {"mapping": {"capacityKey": "cores", "capacityMultiplier": "2"}},
                      "memory": {"mapping": {"capacityKey": "memory", "capacityMultiplier": "1"}}})
    entry, _ = entry_for([socket], ["socket0"], consumed={"cores": "2"})
    assert entry.mapping == {"cpu": Q("4")}  # a key missing from consumedCapacity contributes nothing
    entry, _ = entry_for([socket], ["socket0"], consumed={"cores": "2", "memory": "0"})
    assert entry.mapping == {"cpu": Q("4"), "memory": Q("0")}  # v1 lists every capacity, even zero


def test_overhead_summed_and_containers_listed():
    """KEP-5517 example E3 (docs/kubernetes/dra-apis.md §1.9)."""
    xpu = dev("xpu0", nar={"memory": {"overhead": {"perPod": "1Gi", "perContainer": "500Mi"}}})
    entry, _ = entry_for([xpu], ["xpu0"], containers=("app-c1", "app-c2"))
    assert entry.containers == ["app-c1", "app-c2"]
    assert (entry.overhead["memory"].per_pod, entry.overhead["memory"].per_container) == (Q("1Gi"), Q("500Mi"))
    # The KEP text says "2Gi", reading 500Mi as half a GiB; exact arithmetic gives 1Gi + 2 x 500Mi.
    assert entry.pod_total("memory") == Q("2024Mi")
    two, _ = entry_for([xpu, dev("xpu1", nar={"memory": {"overhead": {"perPod": "1Gi"}}})], ["xpu0", "xpu1"])
    assert two.overhead["memory"].per_pod == Q("2Gi")  # summed across the claim's devices


def test_capacity_key_needs_consumed_capacity():
    """KEP-5517 example E4 (docs/kubernetes/dra-apis.md §1.9)."""
    l3 = dev("l3-0", capacity={"cpu": "8"}, nar={"cpu": {"mapping": {"capacityKey": "cpu", "capacityMultiplier": "1"}}})
    entry, findings = entry_for([l3], ["l3-0"], consumed={"cpu": "8"})
    assert entry.mapping == {"cpu": Q("8")}
    entry, findings = entry_for([l3], ["l3-0"])
    assert entry.mapping == {} and [f.code for f in findings] == ["ConsumedCapacityMissing"]


def test_first_available_gpu_has_no_entry():
    """KEP-5517 example E5 (docs/kubernetes/dra-apis.md §1.9)."""
    gpu = dev("gpu-0", capacity={"memory": "80Gi"})
    entry, findings = entry_for([gpu], ["gpu-0"])
    assert entry is None and findings == []
    cpus = [dev(f"cpu{i}", nar={"cpu": {"mapping": {"deviceMultiplier": "1"}}}) for i in range(30)]
    entry, _ = entry_for(cpus, [f"cpu{i}" for i in range(30)])
    assert entry.mapping == {"cpu": Q("30")}


def test_capacity_and_device_multipliers():
    """KEP-5517 example E6 (docs/kubernetes/dra-apis.md §1.9)."""
    cores = dev("s0", multi=True, capacity={"cores": "32"},
                nar={"cpu": {"mapping": {"capacityKey": "cores", "capacityMultiplier": "2"}}})
    assert entry_for([cores], ["s0"], consumed={"cores": "8"})[0].mapping == {"cpu": Q("16")}
    ccx = [dev(f"ccx{i}", nar={"cpu": {"mapping": {"deviceMultiplier": "8"}}}) for i in range(4)]
    assert entry_for(ccx, ["ccx0", "ccx1"])[0].mapping == {"cpu": Q("16")}


def test_allocation_multiplier_of_1_36_per_gpu():
    """KEP-5517 example E7 (docs/kubernetes/dra-apis.md §1.9)."""
    gpus = [dev(f"gpu-{i}", old={"memory": {"allocationMultiplier": "2Gi"}}) for i in range(2)]
    entry, _ = entry_for(gpus, ["gpu-0", "gpu-1"])
    assert entry.resources == {"memory": Q("4Gi")} and entry.generation == "v1.36"


@pytest.mark.parametrize("nar,message", [
    ({"ephemeral-storage": {"overhead": {"perPod": "1Gi"}}}, "only cpu, memory and hugepages-<size>"),
    ({"example.com/gpu": {"mapping": {"deviceMultiplier": "1"}}}, "only cpu, memory"),
    ({"cpu": {}}, "needs a mapping or an overhead"),
    ({"cpu": {"mapping": {"deviceMultiplier": "1", "capacityKey": "cores", "capacityMultiplier": "1"}}},
     "exactly one of"),
    ({"cpu": {"mapping": {"capacityKey": "cores"}}}, "go together"),
    ({"cpu": {"mapping": {"capacityKey": "threads", "capacityMultiplier": "1"}}}, "not a capacity"),
    ({"memory": {"overhead": {}}}, "perPod or perContainer"),
    ({"memory": {"overhead": {"perPod": "-1Gi"}}}, "must not be negative"),
])
def test_device_mapping_validation(nar, message):
    device = parse_object(resource_slice("n", "d", [dev("x", capacity={"cores": "4"}, nar=nar)])).spec.devices[0]
    problems = validate_device(device)
    assert len(problems) == 1 and message in problems[0]


def test_valid_mappings_have_no_problems():
    device = parse_object(resource_slice("n", "d", [dev("x", capacity={"cores": "4"}, nar={
        "cpu": {"mapping": {"capacityKey": "cores", "capacityMultiplier": "1"}},
        "hugepages-2Mi": {"mapping": {"deviceMultiplier": "4Mi"}, "overhead": {"perContainer": "2Mi"}}})])).spec.devices[0]
    assert validate_device(device) == []


# ---- explain pod findings, each next to its healthy twin ------------------------------------

CPU_DEV = dev("cpu0", nar={"cpu": {"mapping": {"deviceMultiplier": "2"}}})


def explain(p, c, inventory):
    return explain_pod(p, inventory, NodeOptions(hugepage_sizes=[]))


def with_status(p: Pod, entries: list[dict]) -> Pod:
    raw = {**p.raw, "status": {**p.raw["status"], "nodeAllocatableResourceClaimStatuses": entries}}
    return parse_object(raw)


def codes(result):
    return sorted(f.code for f in result.findings)


def test_status_matches_allocation():
    p, c, inv = setup([CPU_DEV], ["cpu0"])
    good = with_status(p, [{"resourceClaimName": "c", "containers": ["main"], "mapping": [{"name": "cpu", "quantity": "2"}]}])
    result = explain(good, c, inv)
    assert codes(result) == ["DRALimitNotEnforced"]  # no cpu limit: the 2 CPUs are a request only
    assert result.claims[0].source == "podStatus" and result.claims[0].mapping == {"cpu": "2"}
    assert result.scheduler.requests == {"cpu": "2100m"} and result.scheduler.dra == {"cpu": "2"}
    bad = with_status(p, [{"resourceClaimName": "c", "containers": ["main"], "mapping": [{"name": "cpu", "quantity": "3"}]}])
    result = explain(bad, c, inv)
    assert "NodeAllocatableStatusMismatch" in codes(result)
    mismatch = next(f for f in result.findings if f.code == "NodeAllocatableStatusMismatch")
    assert "mapping {cpu: 3} recorded, {cpu: 2} computed" in mismatch.message


def test_missing_status_entry_means_gate_off():
    p, c, inv = setup([CPU_DEV], ["cpu0"])
    result = explain(p, c, inv)
    assert codes(result) == ["NodeAllocatableGateOff"]
    assert result.claims[0].source == "computed" and not result.claims[0].kubelet_applies
    assert result.scheduler.dra == {}


def test_unreferenced_status_entry():
    p, c, inv = setup([CPU_DEV], ["cpu0"])
    stray = with_status(p, [{"resourceClaimName": "c", "containers": ["main"], "mapping": [{"name": "cpu", "quantity": "2"}]},
                            {"resourceClaimName": "other", "containers": [], "mapping": [{"name": "cpu", "quantity": "1"}]}])
    assert "NodeAllocatableStatusUnreferenced" in codes(explain(stray, c, inv))


def test_claim_missing_from_the_data_still_explains_the_pod():
    p, _, _ = setup([CPU_DEV], ["cpu0"])
    recorded = with_status(p, [{"resourceClaimName": "c", "containers": ["main"], "mapping": [{"name": "cpu", "quantity": "2"}]}])
    empty = Inventory()
    result = explain_pod(recorded, empty, NodeOptions(hugepage_sizes=[]))
    assert "ClaimMissing" in codes(result)
    assert result.claims[0].mapping == {"cpu": "2"}  # what the status says is still shown and used
    # 100m + 2 CPUs of DRA -> 2150 shares -> linear weight
    assert result.cgroups.pod.files["cpu.weight"] == str(weight_linear(milli_cpu_to_shares(2100)))


def test_pod_level_resources_must_cover_dra():
    p, c, inv = setup([CPU_DEV], ["cpu0"])
    raw = p.raw
    raw = {**raw, "spec": {**raw["spec"], "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "4"}}}}
    raw["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m"}, "limits": {"cpu": "3"},
                                                 "claims": [{"name": "c"}]}
    raw["status"] = {**raw["status"], "nodeAllocatableResourceClaimStatuses": [
        {"resourceClaimName": "c", "containers": ["main"], "mapping": [{"name": "cpu", "quantity": "2"}]}]}
    result = explain(parse_object(raw), c, inv)
    messages = [f.message for f in result.findings if f.code == "PodLevelResourcesInsufficient"]
    assert len(messages) == 2
    assert "pod level request for cpu is 1 but containers plus DRA need 2500m" in messages[0]
    assert "insufficient to cover the limit and DRA overhead for container main (3 + 2)" in messages[1]


def test_mapped_claim_reserved_for_two_pods():
    p, c, inv = setup([CPU_DEV], ["cpu0"])
    raw = c.raw
    raw["status"]["reservedFor"].append({"resource": "pods", "name": "q", "uid": "other"})
    inv.add(parse_object(raw))
    recorded = with_status(p, [{"resourceClaimName": "c", "containers": ["main"], "mapping": [{"name": "cpu", "quantity": "2"}]}])
    assert "MappedClaimShared" in codes(explain(recorded, c, inv))
