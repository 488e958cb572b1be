"""Claim findings from small scenarios, each next to its healthy twin (core level, no I/O)."""

from __future__ import annotations

from builders import claim, pod, pod_group, reserved_group, reserved_pod, resource_slice

from kubectl_dra.claims.explain import explain_claim
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.registry import parse_object
from kubectl_dra.model.resource import ResourceClaim

GPU = "gpu.example.com"
CPU_DEVICE = {"name": "cpudevnuma000", "allowMultipleAllocations": True,
              "capacity": {"dra.cpu/cpu": {"value": "32"}},
              "nodeAllocatableResources": {"cpu": {"mapping": {"capacityKey": "dra.cpu/cpu",
                                                               "capacityMultiplier": "1"}}}}


def codes(objects: list[dict], claim_name: str, namespace: str = "ml") -> list[str]:
    inventory = Inventory()
    inventory.extend(parse_object(o) for o in objects)
    inventory.read_kinds |= {"Pod", "ResourceSlice", "PodGroup"}
    target = inventory.get(ResourceClaim, namespace, claim_name)
    return sorted(f.code for f in explain_claim(target, inventory).findings)


def test_reserved_for_near_and_at_limit():
    pods = [pod(f"p{i}", claims={"c": "big"}) for i in range(256)]
    slice_ = resource_slice("worker-1", GPU, ["gpu-0"])
    at_limit = claim("big", devices=[(GPU, "worker-1", "gpu-0")], reserved_for=[reserved_pod(p) for p in pods])
    assert codes([*pods, slice_, at_limit], "big") == ["ReservedForNearLimit"]
    below = claim("big", devices=[(GPU, "worker-1", "gpu-0")], reserved_for=[reserved_pod(p) for p in pods[:230]])
    assert codes([*pods[:230], slice_, below], "big") == []
    near = claim("big", devices=[(GPU, "worker-1", "gpu-0")], reserved_for=[reserved_pod(p) for p in pods[:231]])
    assert codes([*pods[:231], slice_, near], "big") == ["ReservedForNearLimit"]


def test_mapped_claim_shared_and_single_pod_twin():
    a, b = pod("a", claims={"cpus": "cpus"}), pod("b", claims={"cpus": "cpus"})
    slice_ = resource_slice("worker-1", "dra.cpu", [CPU_DEVICE])
    status = lambda p: {**p, "status": {**p["status"], "nodeAllocatableResourceClaimStatuses": [  # noqa: E731
        {"resourceClaimName": "cpus", "containers": ["main"], "mapping": [{"name": "cpu", "quantity": "4"}]}]}}
    shared = claim("cpus", devices=[("dra.cpu", "worker-1", "cpudevnuma000")], consumed={"dra.cpu/cpu": "4"},
                   reserved_for=[reserved_pod(a), reserved_pod(b)])
    assert codes([status(a), status(b), slice_, shared], "cpus") == ["MappedClaimShared"]
    single = claim("cpus", devices=[("dra.cpu", "worker-1", "cpudevnuma000")], consumed={"dra.cpu/cpu": "4"},
                   reserved_for=[reserved_pod(a)])
    assert codes([status(a), slice_, single], "cpus") == []
    # the same pod without its status entry: the scheduler did not account the mapping
    assert codes([a, slice_, single], "cpus") == ["NodeAllocatableGateOff"]


def test_allocated_device_missing_from_slices():
    p = pod("p", claims={"g": "g"})
    gone = claim("g", devices=[(GPU, "worker-1", "gpu-7")], reserved_for=[reserved_pod(p)])
    assert codes([p, resource_slice("worker-1", GPU, ["gpu-0"]), gone], "g") == ["AllocatedDeviceMissing"]
    present = claim("g", devices=[(GPU, "worker-1", "gpu-0")], reserved_for=[reserved_pod(p)])
    assert codes([p, resource_slice("worker-1", GPU, ["gpu-0"]), present], "g") == []


def test_podgroup_deleting_and_gone():
    member = pod("m0", group="trainer", claims={"g": "g"})
    held = claim("g", devices=[(GPU, "worker-1", "gpu-0")], reserved_for=[reserved_group("trainer")])
    slice_ = resource_slice("worker-1", GPU, ["gpu-0"])
    assert codes([member, slice_, held, pod_group("trainer", deleting=True)], "g") == ["PodGroupDeleting"]
    assert codes([member, slice_, held, pod_group("trainer")], "g") == []
    assert codes([member, slice_, held], "g") == ["DeallocationBlocked", "StaleReservation"]


def test_unscheduled_pod_is_not_yet_expected_in_reserved_for():
    waiting = pod("w", node=None, claims={"g": "g"})
    allocated = claim("g", devices=[(GPU, "worker-1", "gpu-0")])
    assert codes([waiting, resource_slice("worker-1", GPU, ["gpu-0"]), allocated], "g") == []
    bound = pod("w", claims={"g": "g"})
    assert codes([bound, resource_slice("worker-1", GPU, ["gpu-0"]), allocated], "g") == ["ReferencedButNotReserved"]
