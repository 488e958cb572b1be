"""NodeResourcesFit and the scheduler's pod requests against kube-scheduler v1.37.2's own tables.

Sources (k8s.io/kubernetes@v1.37.2, k8s.io/component-helpers@v0.37.2):

* pkg/scheduler/framework/plugins/noderesources/fit_test.go: TestEnoughRequests (every case),
  TestNotEnoughRequests, TestStorageRequests, TestRestartableInitContainers, TestIsFit,
  TestComputePodResourceRequestWithNodeAllocatableDRA, TestDeferredResizeFit (the cases with
  InPlacePodVerticalScalingSchedulerPreemption off, its 1.37 default). Cases are named as upstream.
  Upstream's ``draExtendedResourceEnabled: false`` cases run here with no DeviceClass naming the
  resource: DRAExtendedResource is GA and locked on in 1.37, and without a class the outcome is
  the one upstream expects.
* component-helpers resource/helpers_test.go: TestPodResourceRequests, TestPodLevelResourceRequests,
  TestPodRequestsAndLimitsWithDRA, TestAggregateContainerRequestsAndLimits,
  TestPodRequestsAndLimitsVerticalScalingWrappers (their request halves), under the options
  ``CalculateResource`` passes (status resources, pod-level resources and their resize, DRA
  statuses all on); cases whose options differ from those are the ones whose pods make the
  difference invisible (no status), or are left out.
"""

from __future__ import annotations

import pytest

from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.resource import DeviceClass
from kubectl_dra.quantity import Quantity
from kubectl_dra.scheduling import resources as res
from kubectl_dra.scheduling.extended import class_resolver
from kubectl_dra.scheduling.fit import NAME, NodeResourcesFit, fits_resources, insufficient_status
from kubectl_dra.scheduling.framework import UNRESOLVABLE, UNSCHEDULABLE, Cycle, NodeInfo, PodInfo

A, B = "example.com/aaa", "example.com/bbb"  # extendedResourceA, extendedResourceB
KA, KB = "kubernetes.io/something", "subdomain.kubernetes.io/something"
HP = "hugepages-2Mi"
DRA_ER = "extended.resource.dra.io/something"  # extendedResourceDRA
CLASS = "device-class-name"
U, S = UNRESOLVABLE, UNSCHEDULABLE


# -- builders (the upstream helpers, as raw objects) -------------------------------------------------

def use(cpu: int = 0, mem: int = 0, eph: int = 0, scalars: dict | None = None) -> dict:
    """newResourcePod's container requests for one framework.Resource (cpu in millicores)."""
    r = {"cpu": f"{cpu}m", "memory": str(mem), "pods": "0", "ephemeral-storage": str(eph)}
    r.update({k: str(v) for k, v in (scalars or {}).items()})
    return r


def make_pod(*usages: dict, init=(), overhead: dict | None = None, plr: dict | None = None, name: str = "p",
             sidecars=(), status: dict | None = None, containers: list | None = None) -> Pod:
    spec: dict = {"containers": containers if containers is not None else
                  [{"name": f"c{i}", "resources": {"requests": u}} for i, u in enumerate(usages)]}
    inits = [{"name": f"i{i}", "resources": {"requests": u}} for i, u in enumerate(init)]
    inits += [{"name": f"s{i}", "restartPolicy": "Always", "resources": {"requests": u}} for i, u in enumerate(sidecars)]
    if inits:
        spec["initContainers"] = inits
    if overhead:
        spec["overhead"] = overhead
    if plr is not None:
        spec["resources"] = plr
    return Pod.from_raw({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"},
                         "spec": spec, "status": status or {}})


def alloc(cpu: int = 10, mem: int = 20, pods: int = 32, a: int = 5, eph: int = 20, hp: int = 5) -> dict:
    """makeAllocatableResources."""
    return {"cpu": f"{cpu}m", "memory": str(mem), "pods": str(pods), A: str(a), "ephemeral-storage": str(eph),
            HP: str(hp)}


def make_node(allocatable: dict, name: str = "n1") -> Node:
    return Node.from_raw({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                          "status": {"allocatable": allocatable, "capacity": allocatable}})


def inventory(*classes: dict, read: bool = True) -> Inventory:
    inv = Inventory()
    if read:
        inv.read_kinds.add("DeviceClass")
    for c in classes:
        inv.add(DeviceClass.from_raw({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", **c}))
    return inv


def klass(name: str = CLASS, ext: str | None = DRA_ER, created: str | None = None) -> dict:
    meta = {"name": name, **({"creationTimestamp": created} if created else {})}
    return {"metadata": meta, "spec": {"extendedResourceName": ext} if ext else {}}


def run(pod: Pod, node: NodeInfo, *, args: dict | None = None, inv: Inventory | None = None):
    cycle = Cycle(pod=PodInfo(pod), nodes=[node], inventory=inv if inv is not None else inventory(),
                  args={NAME: args} if args is not None else {})
    plugin = NodeResourcesFit()
    pre = plugin.pre_filter(cycle)
    assert pre.status.success and pre.node_names is None
    return plugin.filter(cycle, pre.state, node)


def node_with(*bound: Pod, allocatable: dict | None = None) -> NodeInfo:
    return NodeInfo(make_node(allocatable if allocatable is not None else alloc()), [PodInfo(p) for p in bound])


def triples(status) -> list:
    return [(e.resource, e.reason, e.requested, e.used, e.allocatable) for e in status.evidence]


# -- fit_test.go TestEnoughRequests ------------------------------------------------------------------

def ins(resource, requested, used, capacity, unresolvable=False):
    return (resource, f"Insufficient {resource}", requested, used, capacity, unresolvable)


ENOUGH = [
    # name, pod, bound pod on the node, args, device classes, want code, want insufficient resources
    ("no resources requested always fits", make_pod(), make_pod(use(10, 20)), None, True, None, []),
    ("too many resources fails", make_pod(use(1, 1)), make_pod(use(10, 20)), None, True, S,
     [ins("cpu", 1, 10, 10), ins("memory", 1, 20, 20)]),
    ("too many resources fails due to init container cpu", make_pod(use(1, 1), init=[use(3, 1)]),
     make_pod(use(8, 19)), None, True, S, [ins("cpu", 3, 8, 10)]),
    ("too many resources fails due to highest init container cpu", make_pod(use(1, 1), init=[use(3, 1), use(2, 1)]),
     make_pod(use(8, 19)), None, True, S, [ins("cpu", 3, 8, 10)]),
    ("too many resources fails due to init container memory", make_pod(use(1, 1), init=[use(1, 3)]),
     make_pod(use(9, 19)), None, True, S, [ins("memory", 3, 19, 20)]),
    ("too many resources fails due to highest init container memory",
     make_pod(use(1, 1), init=[use(1, 3), use(1, 2)]), make_pod(use(9, 19)), None, True, S, [ins("memory", 3, 19, 20)]),
    ("init container fits because it's the max, not sum, of containers and init containers",
     make_pod(use(1, 1), init=[use(1, 1)]), make_pod(use(9, 19)), None, True, None, []),
    ("multiple init containers fit because it's the max, not sum, of containers and init containers",
     make_pod(use(1, 1), init=[use(1, 1), use(1, 1)]), make_pod(use(9, 19)), None, True, None, []),
    ("both resources fit", make_pod(use(1, 1)), make_pod(use(5, 5)), None, True, None, []),
    ("one resource memory fits", make_pod(use(2, 1)), make_pod(use(9, 5)), None, True, S, [ins("cpu", 2, 9, 10)]),
    ("one resource cpu fits", make_pod(use(1, 2)), make_pod(use(5, 19)), None, True, S, [ins("memory", 2, 19, 20)]),
    ("equal edge case", make_pod(use(5, 1)), make_pod(use(5, 19)), None, True, None, []),
    ("equal edge case for init container", make_pod(use(4, 1), init=[use(5, 1)]), make_pod(use(5, 19)), None, True,
     None, []),
    ("extended resource fits", make_pod(use(scalars={A: 1})), make_pod(use()), None, True, None, []),
    ("extended resource fits for init container", make_pod(use(), init=[use(scalars={A: 1})]), make_pod(use()),
     None, True, None, []),
    ("extended resource capacity enforced", make_pod(use(1, 1, scalars={A: 10})), make_pod(use(scalars={A: 0})),
     None, True, U, [ins(A, 10, 0, 5, True)]),
    ("extended resource capacity enforced for init container", make_pod(use(), init=[use(1, 1, scalars={A: 10})]),
     make_pod(use(scalars={A: 0})), None, True, U, [ins(A, 10, 0, 5, True)]),
    ("extended resource allocatable enforced", make_pod(use(1, 1, scalars={A: 1})), make_pod(use(scalars={A: 5})),
     None, True, S, [ins(A, 1, 5, 5)]),
    ("extended resource allocatable enforced for init container", make_pod(use(), init=[use(1, 1, scalars={A: 1})]),
     make_pod(use(scalars={A: 5})), None, True, S, [ins(A, 1, 5, 5)]),
    ("extended resource allocatable enforced for multiple containers",
     make_pod(use(1, 1, scalars={A: 3}), use(1, 1, scalars={A: 3})), make_pod(use(scalars={A: 2})), None, True, U,
     [ins(A, 6, 2, 5, True)]),
    ("extended resource allocatable admits multiple init containers",
     make_pod(use(), init=[use(1, 1, scalars={A: 3}), use(1, 1, scalars={A: 3})]), make_pod(use(scalars={A: 2})),
     None, True, None, []),
    ("extended resource allocatable enforced for multiple init containers",
     make_pod(use(), init=[use(1, 1, scalars={A: 6}), use(1, 1, scalars={A: 3})]), make_pod(use(scalars={A: 2})),
     None, True, U, [ins(A, 6, 2, 5, True)]),
    ("extended resource allocatable enforced for unknown resource", make_pod(use(1, 1, scalars={B: 1})),
     make_pod(use()), None, True, U, [ins(B, 1, 0, 0, True)]),
    ("extended resource allocatable enforced for unknown resource for init container",
     make_pod(use(), init=[use(1, 1, scalars={B: 1})]), make_pod(use()), None, True, U, [ins(B, 1, 0, 0, True)]),
    ("kubernetes.io resource capacity enforced", make_pod(use(1, 1, scalars={KA: 10})), make_pod(use()), None, True,
     U, [ins(KA, 10, 0, 0, True)]),
    ("kubernetes.io resource capacity enforced for init container", make_pod(use(), init=[use(1, 1, scalars={KB: 10})]),
     make_pod(use()), None, True, U, [ins(KB, 10, 0, 0, True)]),
    ("hugepages resource capacity enforced", make_pod(use(1, 1, scalars={HP: 10})), make_pod(use(scalars={HP: 0})),
     None, True, U, [ins(HP, 10, 0, 5, True)]),
    ("hugepages resource capacity enforced for init container", make_pod(use(), init=[use(1, 1, scalars={HP: 10})]),
     make_pod(use(scalars={HP: 0})), None, True, U, [ins(HP, 10, 0, 5, True)]),
    ("hugepages resource allocatable enforced for multiple containers",
     make_pod(use(1, 1, scalars={HP: 3}), use(1, 1, scalars={HP: 3})), make_pod(use(scalars={HP: 2})), None, True, U,
     [ins(HP, 6, 2, 5, True)]),
    ("skip checking ignored extended resource", make_pod(use(1, 1, scalars={B: 1})), make_pod(use()),
     {"ignoredResources": ["example.com/bbb"]}, True, None, []),
    ("resources + pod overhead fits", make_pod(use(1, 1), overhead={"cpu": "3m", "memory": "13"}), make_pod(use(5, 5)),
     None, True, None, []),
    ("requests + overhead does not fit for memory", make_pod(use(1, 1), overhead={"cpu": "1m", "memory": "15"}),
     make_pod(use(5, 5)), None, True, S, [ins("memory", 16, 5, 20)]),
    ("skip checking ignored extended resource via resource groups", make_pod(use(1, 1, scalars={B: 1, KA: 1})),
     make_pod(use()), {"ignoredResourceGroups": ["example.com"]}, True, U, [ins(KA, 1, 0, 0, True)]),
    ("skip checking extended resource request with quantity zero via resource groups",
     make_pod(use(1, 1, scalars={A: 0})), make_pod(use(scalars={A: 6})), None, True, None, []),
    ("skip checking resource request with quantity zero", make_pod(use(scalars={A: 1})),
     make_pod(use(20, 30, scalars={A: 1})), None, True, None, []),
    ("both pod-level and container-level resources fit",
     make_pod(use(1, 1), plr={"requests": {"cpu": "1m", "memory": "2"}}), make_pod(use(5, 5)), None, True, None, []),
    ("pod-level cpu resource not fit", make_pod(use(1, 1), plr={"requests": {"cpu": "7m", "memory": "2"}}),
     make_pod(use(5, 5)), None, True, S, [ins("cpu", 7, 5, 10)]),
    ("pod-level memory resource not fit", make_pod(use(1, 1), plr={"requests": {"cpu": "3m", "memory": "2"}}),
     make_pod(use(5, 19)), None, True, S, [ins("memory", 2, 19, 20)]),
    ("pod-level hugepages resource fit", make_pod(plr={"requests": {"cpu": "3m", "memory": "2", HP: "5"}}), None,
     None, True, None, []),
    ("both pod-level and container-level hugepages resource fit",
     make_pod(use(1, 1, scalars={HP: 3}), plr={"requests": {"cpu": "3m", "memory": "2", HP: "5"}}), None, None, True,
     None, []),
    ("pod-level hugepages resource not fit", make_pod(plr={"requests": {"cpu": "3m", "memory": "2", HP: "10"}}), None,
     None, True, U, [ins(HP, 10, 0, 5, True)]),
    ("one pod-level cpu resource fits and all init and non-init containers resources fit",
     make_pod(use(1, 1), init=[use(1, 1)], plr={"requests": {"cpu": "3m", "memory": "2"}}), make_pod(use(5, 19)),
     None, True, S, [ins("memory", 2, 19, 20)]),
    ("extended resource backed by device plugin", make_pod(use(scalars={A: 1})), make_pod(use()), None, True, None,
     []),
    ("extended resource backed by DRA", make_pod(use(1, 1, scalars={DRA_ER: 1})), make_pod(use()), None, True, None,
     []),
    ("extended resource backed by DRA, nil draManager", make_pod(use(1, 1, scalars={A: 1})), make_pod(use()), None,
     False, None, []),
    ("extended resource backed by DRA not enabled", make_pod(use(1, 1, scalars={DRA_ER: 1})), make_pod(use()), None,
     False, U, [ins(DRA_ER, 1, 0, 0, True)]),
    ("extended resource NOT backed by DRA", make_pod(use(1, 1, scalars={B: 1})), make_pod(use()), None, True, U,
     [ins(B, 1, 0, 0, True)]),
    ("extended resource was backed by Device Plugin (Allocatable: 0)", make_pod(use(scalars={DRA_ER: 1})),
     make_pod(use(scalars={DRA_ER: 0})), None, True, None, []),
    ("extended resource was backed by Device Plugin (Allocatable: 0), global cache", make_pod(use(scalars={A: 1})),
     make_pod(use(scalars={A: 0})), None, True, None, []),
]


@pytest.mark.parametrize("name, pod, bound, args, with_class, code, want", ENOUGH, ids=[c[0] for c in ENOUGH])
def test_enough_requests(name, pod, bound, args, with_class, code, want):
    node = node_with(*([bound] if bound is not None else []))
    inv = inventory(klass()) if with_class else inventory()
    status = run(pod, node, args=args, inv=inv)
    if code is None:
        assert status.success and status.reasons == [], status
    else:
        assert (status.code, status.reasons) == (code, [w[1] for w in want])
        assert status.plugin == NAME
    # fitsRequest's InsufficientResource list, numbers included
    request = res.incoming_requests(pod).total
    cls = {n: c is not None for n, c in class_resolver(inv.all(DeviceClass)).items()}
    got = fits_resources(request, node, ignored_resources=(args or {}).get("ignoredResources", ()),
                         ignored_groups=(args or {}).get("ignoredResourceGroups", ()),
                         delegated=lambda n: cls.get(n, False))
    assert [(i.resource, i.reason, i.requested, i.used, i.capacity, i.unresolvable) for i in got] == want


# -- fit_test.go TestNotEnoughRequests, TestStorageRequests, TestRestartableInitContainers ---------------

NOT_ENOUGH = [
    ("even without specified resources, predicate fails when there's no space for additional pod", make_pod(),
     make_pod(use(10, 20))),
    ("even if both resources fit, predicate fails when there's no space for additional pod", make_pod(use(1, 1)),
     make_pod(use(5, 5))),
    ("even for equal edge case, predicate fails when there's no space for additional pod", make_pod(use(5, 1)),
     make_pod(use(5, 19))),
    ("even for equal edge case, predicate fails when there's no space for additional pod due to init container",
     make_pod(use(5, 1), init=[use(5, 1)]), make_pod(use(5, 19))),
]


@pytest.mark.parametrize("name, pod, bound", NOT_ENOUGH, ids=[c[0] for c in NOT_ENOUGH])
def test_not_enough_requests(name, pod, bound):
    status = run(pod, node_with(bound, allocatable=alloc(10, 20, 1, 0, 0, 0)))
    assert (status.code, status.reasons) == (S, ["Too many pods"])
    assert triples(status) == [("pods", "Too many pods", "1", "1", "1")]


STORAGE = [
    ("empty storage requested, and pod fits", make_pod(use(1, 1)), make_pod(use(2, 10)), None),
    ("storage ephemeral local storage request exceeds allocatable", make_pod(use(eph=25)), make_pod(use(2, 2)),
     (U, ["Insufficient ephemeral-storage"])),
    ("ephemeral local storage is sufficient", make_pod(use(eph=5)), make_pod(use(2, 2, 10)), None),
    ("pod fits", make_pod(use(eph=10)), make_pod(use(2, 2)), None),
]


@pytest.mark.parametrize("name, pod, bound, want", STORAGE, ids=[c[0] for c in STORAGE])
def test_storage_requests(name, pod, bound, want):
    status = run(pod, node_with(bound))
    assert (status.code, status.reasons) == want if want else status.success


SIDECARS = [
    ("allow pod without restartable init containers", make_pod(containers=[{"name": "regular"}]), None),
    ("allow pod with restartable init containers", make_pod(containers=[{"name": "regular"}], sidecars=[{}]), None),
    ("allow pod if the total requested resources do not exceed the node's allocatable resources",
     make_pod(containers=[{"name": "regular", "resources": {"requests": {"cpu": "1m"}}}], sidecars=[{"cpu": "1m"}]),
     None),
    ("not allow pod if the total requested resources do exceed the node's allocatable resources",
     make_pod(containers=[{"name": "regular", "resources": {"requests": {"cpu": "1m"}}}], sidecars=[{"cpu": "2m"}]),
     (U, ["Insufficient cpu"])),
]


@pytest.mark.parametrize("name, pod, want", SIDECARS, ids=[c[0] for c in SIDECARS])
def test_restartable_init_containers(name, pod, want):
    status = run(pod, node_with(allocatable=alloc(2, 0, 1, 0, 0, 0)))
    assert (status.code, status.reasons) == want if want else status.success


# -- fit_test.go TestIsFit, TestDeferredResizeFit, TestComputePodResourceRequestWithNodeAllocatableDRA ----

def st_node(capacity: dict) -> NodeInfo:
    """st.MakeNode().Capacity(...): pods 32 plus the given, as capacity and allocatable."""
    return node_with(allocatable={"pods": "32", **capacity})


IS_FIT = [
    ("insufficient resource", make_pod({"cpu": "2"}), {"cpu": "1"}, False),
    ("sufficient resource", make_pod({"cpu": "1"}), {"cpu": "2"}, True),
    ("insufficient pod-level resource", make_pod(plr={"requests": {"cpu": "2"}}), {"cpu": "1"}, False),
    ("sufficient pod-level resource", make_pod(plr={"requests": {"cpu": "2"}}), {"cpu": "2"}, True),
    ("sufficient pod-level resource hugepages", make_pod(plr={"requests": {HP: "2Mi"}}), {HP: "2Mi"}, True),
    ("insufficient pod-level resource hugepages", make_pod(plr={"requests": {HP: "4Mi"}}), {HP: "2Mi"}, False),
]


@pytest.mark.parametrize("name, pod, capacity, fits", IS_FIT, ids=[c[0] for c in IS_FIT])
def test_is_fit(name, pod, capacity, fits):
    assert run(pod, st_node(capacity)).success is fits


def resize_pod(cpu: str, mem: str | None = None, *, pending: str | None = None, name: str = "pod1") -> Pod:
    req = {"cpu": cpu, **({"memory": mem} if mem else {})}
    status = {"conditions": [{"type": "PodResizePending", "status": "True", "reason": pending}]} if pending else {}
    return make_pod(req, name=name, status=status)


DEFERRED = [
    ("feature gate is false - double counting causes fit failure", resize_pod("800m", "1600", pending="Deferred"),
     [resize_pod("500m", "1000")], {"cpu": "1000m", "memory": "2000", "pods": "32"},
     (S, ["Insufficient cpu", "Insufficient memory"])),
    ("feature gate is false, pod is not in cache, resize fits", resize_pod("800m", "1600", pending="Deferred"), [],
     {"cpu": "1000m", "memory": "2000", "pods": "32"}, None),
]


@pytest.mark.parametrize("name, pod, bound, allocatable, want", DEFERRED, ids=[c[0] for c in DEFERRED])
def test_deferred_resize_fit(name, pod, bound, allocatable, want):
    status = run(pod, node_with(*bound, allocatable=allocatable))
    assert (status.code, status.reasons) == want if want else status.success


def claim_status(claim: str, containers, mapping: dict | None = None, overhead: dict | None = None) -> dict:
    e: dict = {"resourceClaimName": claim, "containers": list(containers)}
    if mapping:
        e["mapping"] = [{"name": k, "quantity": v} for k, v in mapping.items()]
    if overhead:
        e["overhead"] = [{"name": k, **({"perPod": pp} if pp else {}), **({"perContainer": pc} if pc else {})}
                         for k, (pp, pc) in overhead.items()]
    return e


def dra_pod(*statuses: dict, plr: dict | None = None) -> Pod:
    return make_pod(containers=[{"name": "c1", "resources": {"requests": {"cpu": "100m", "memory": "1Gi"},
                                                             "claims": [{"name": "node-allocatable-claim"}]}}],
                    plr=plr, status={"nodeAllocatableResourceClaimStatuses": list(statuses)})


COMPUTE_DRA = [
    # name, claim status, PreFilter's request (DRA off there), DynamicResources' demand (DRA on)
    ("Pod with DRA claim and EnableDRANodeAllocatableResources",
     claim_status("node-allocatable-claim", ["c1"], mapping={"cpu": "50m"}), 150),
    ("Pod with DRA claim specifying Overhead and EnableDRANodeAllocatableResources",
     claim_status("node-allocatable-claim", ["c1"], overhead={"cpu": ("50m", "50m")}), 200),
    ("Pod with DRA claim specifying both Mapping and Overhead and EnableDRANodeAllocatableResources",
     claim_status("node-allocatable-claim", ["c1"], mapping={"cpu": "50m"}, overhead={"cpu": ("50m", "50m")}), 250),
]


@pytest.mark.parametrize("name, status, with_dra", COMPUTE_DRA, ids=[c[0] for c in COMPUTE_DRA])
def test_compute_pod_resource_request_with_node_allocatable_dra(name, status, with_dra):
    pod = dra_pod(status)
    assert res.incoming_requests(pod).total == {"cpu": 100, "memory": 1 << 30}  # "disabled": PreFilter's
    demand = res.demand_with_claims(pod, pod.status.node_allocatable_resource_claim_statuses)
    assert demand.total == {"cpu": with_dra, "memory": 1 << 30}
    assert demand.dra == {"cpu": with_dra - 100}


def test_pod_level_requests_hide_what_dra_adds_to_the_demand():
    pod = dra_pod(claim_status("c", ["c1"], mapping={"cpu": "3", "memory": "1Gi"}), plr={"requests": {"cpu": "2"}})
    demand = res.demand_with_claims(pod, pod.status.node_allocatable_resource_claim_statuses)
    assert demand.total == {"cpu": 2000, "memory": 2 << 30}
    assert demand.dra == {"memory": 1 << 30}


# -- our own: the numbers, the rules upstream's tables leave implicit ------------------------------------

GI = 1 << 30


def test_evidence_is_in_quantity_notation_with_the_overhead_apart():
    pod = make_pod({"cpu": "1250m", "memory": "3Gi"}, overhead={"cpu": "250m", "memory": "512Mi"})
    bound = make_pod({"cpu": "3", "memory": "6Gi"}, name="b")
    status = run(pod, node_with(bound, allocatable={"cpu": "4", "memory": "8Gi", "pods": "110"}))
    assert status.code == S and status.reasons == ["Insufficient cpu", "Insufficient memory"]
    cpu, mem = status.evidence
    assert (cpu.resource, cpu.requested, cpu.overhead, cpu.allocatable, cpu.used, cpu.dra) == \
        ("cpu", "1500m", "250m", "4", "3", None)
    assert (mem.resource, mem.requested, mem.overhead, mem.allocatable, mem.used) == \
        ("memory", "3584Mi", "512Mi", "8Gi", "6Gi")


def test_a_bound_pod_counts_its_allocated_resources_while_a_resize_is_in_progress():
    """The used amount is what the scheduler's cache holds: max(spec, allocated, actuated)."""
    resizing = make_pod({"memory": "1Gi"}, name="r", status={"containerStatuses": [
        {"name": "c0", "allocatedResources": {"memory": "4Gi"}, "resources": {"requests": {"memory": "2Gi"}}}]})
    status = run(make_pod({"memory": "5Gi"}), node_with(resizing, allocatable={"memory": "8Gi", "pods": "10"}))
    assert (status.code, triples(status)) == (S, [("memory", "Insufficient memory", "5Gi", "4Gi", "8Gi")])


def test_bound_pods_count_their_dra_amounts_but_the_incoming_pod_does_not():
    bound = make_pod({"memory": "1Gi"}, name="b", status={"nodeAllocatableResourceClaimStatuses": [
        claim_status("c", ["c0"], mapping={"memory": "2Gi"}, overhead={"memory": ("512Mi", "256Mi")})]})
    node = node_with(bound, allocatable={"memory": "8Gi", "pods": "10"})
    assert node.requested == {"memory": 1 * GI + 2 * GI + 768 * (1 << 20)}
    incoming = make_pod({"memory": "4Gi"}, status={"nodeAllocatableResourceClaimStatuses": [
        claim_status("d", ["c0"], mapping={"memory": "4Gi"})]})
    assert run(incoming, node).success  # 4Gi <= 8Gi - 3.75Gi; its own 4Gi mapping is DynamicResources' to check
    status = run(make_pod({"memory": "4353Mi"}), node)  # 1Mi more than is left
    assert triples(status) == [("memory", "Insufficient memory", "4353Mi", "3840Mi", "8Gi")]


def test_the_pod_count_is_checked_whatever_the_pod_asks_and_alone_is_never_unresolvable():
    status = run(make_pod(), node_with(allocatable={"cpu": "1"}))  # no pods in allocatable: 0 allowed
    assert (status.code, status.reasons) == (S, ["Too many pods"])
    assert triples(status) == [("pods", "Too many pods", "1", "0", "0")]


def test_a_zero_request_never_fails_even_on_an_overcommitted_node():
    over = make_pod({"cpu": "2", "memory": "2Gi", "ephemeral-storage": "2Gi", A: "7"}, name="o")
    node = node_with(over, allocatable={"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi", A: "5",
                                        "pods": "10"})
    assert run(make_pod({"cpu": "0", "memory": "0", A: "0"}), node).success
    status = run(make_pod({"cpu": "1m", A: "1"}), node)
    assert (status.code, status.reasons) == (S, ["Insufficient cpu", f"Insufficient {A}"])


def test_reason_order_is_pods_cpu_memory_storage_then_scalars_by_name():
    pod = make_pod({"cpu": "2", "memory": "2Gi", "ephemeral-storage": "2Gi", B: "1", A: "9", HP: "4Mi", KA: "1"})
    status = run(pod, node_with(allocatable={"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi", A: "5",
                                             HP: "2Mi"}))
    assert status.reasons == ["Too many pods", "Insufficient cpu", "Insufficient memory",
                              "Insufficient ephemeral-storage", f"Insufficient {A}", f"Insufficient {B}",
                              f"Insufficient {HP}", f"Insufficient {KA}"]
    assert status.code == U
    assert [e.requested for e in status.evidence] == ["1", "2", "2Gi", "2Gi", "9", "1", "4Mi", "1"]


def test_ignored_resource_groups_never_cover_hugepages_or_kubernetes_io_names():
    pod = make_pod({HP: "2Mi", KB: "1", B: "1"})
    status = run(pod, node_with(allocatable={"pods": "10"}),
                 args={"ignoredResources": [HP, KB], "ignoredResourceGroups": ["hugepages-2Mi", "subdomain.kubernetes.io",
                                                                               "example.com"]})
    assert status.reasons == [f"Insufficient {HP}", f"Insufficient {KB}"]


def test_a_resource_the_node_advertises_is_checked_even_when_a_device_class_provides_it():
    pod = make_pod({DRA_ER: "3"})
    status = run(pod, node_with(allocatable={DRA_ER: "2", "pods": "10"}), inv=inventory(klass()))
    assert (status.code, triples(status)) == (U, [(DRA_ER, f"Insufficient {DRA_ER}", "3", "0", "2")])


def test_the_implicit_device_class_name_is_left_to_dynamic_resources():
    implicit = f"deviceclass.resource.kubernetes.io/{CLASS}"
    assert run(make_pod({implicit: "1"}), node_with(allocatable={"pods": "10"}), inv=inventory(klass(ext=None))).success
    other = run(make_pod({"deviceclass.resource.kubernetes.io/none": "1"}), node_with(allocatable={"pods": "10"}),
                inv=inventory(klass(ext=None)))
    assert other.reasons == ["Insufficient deviceclass.resource.kubernetes.io/none"]


def test_without_device_classes_read_a_resource_the_node_lacks_is_undetermined():
    node = node_with(allocatable={A: "5", "pods": "10"})
    status = run(make_pod({DRA_ER: "1"}), node, inv=inventory(read=False))
    assert status.undetermined and DRA_ER in status.undetermined and "not read" in status.undetermined
    assert not status.success
    assert run(make_pod({A: "1"}), node, inv=inventory(read=False)).success  # advertised: no class question


def test_a_class_losing_an_extended_resource_name_clash_may_lack_its_implicit_name():
    old = klass("old", created="2026-01-01T00:00:00Z")
    new = klass("new", created="2026-02-01T00:00:00Z")
    tie = klass("a-tie", created="2026-02-01T00:00:00Z")
    mapped = {n: c and c.name for n, c in class_resolver(DeviceClass.from_raw(
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", **c}) for c in (old, new)).items()}
    assert mapped == {DRA_ER: "new", "deviceclass.resource.kubernetes.io/new": "new",
                      "deviceclass.resource.kubernetes.io/old": None}
    mapped = class_resolver(DeviceClass.from_raw({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", **c})
                            for c in (new, tie))
    assert mapped["deviceclass.resource.kubernetes.io/a-tie"].name == "a-tie"  # same age: the lower name wins
    assert mapped["deviceclass.resource.kubernetes.io/new"] is None
    status = run(make_pod({"deviceclass.resource.kubernetes.io/old": "1"}), node_with(allocatable={"pods": "10"}),
                 inv=inventory(old, new))
    assert status.undetermined and "clash" in status.undetermined and not status.success


def test_unreadable_inputs_make_the_node_undetermined_never_fitting():
    node = node_with(allocatable={"cpu": "4", "pods": "10"})
    bad_pod = make_pod({"cpu": "-1"})
    assert bad_pod.invalid_fields
    assert run(bad_pod, node).undetermined
    bad_bound = make_pod({"cpu": "-1"}, name="b")
    status = run(make_pod({"cpu": "1"}), node_with(bad_bound, allocatable={"cpu": "4", "pods": "10"}))
    assert status.undetermined and "ns/b" in status.undetermined
    assert run(make_pod(), node_with(bad_bound, allocatable={"cpu": "4", "pods": "10"})).success  # count only
    bad_node = NodeInfo(make_node({"cpu": "-4", "pods": "10"}))
    assert run(make_pod({"cpu": "1"}), bad_node).undetermined
    assert run(make_pod({"cpu": "1"}), node, args={"ignoredResources": "example.com/aaa"}).undetermined


def test_the_dynamic_resources_rules_of_the_shared_comparison():
    """nodeFitsResources: no pod count, no extended resources, and huge pages compared even at zero."""
    over = make_pod({HP: "4Mi", A: "9"}, name="o")
    node = node_with(over, allocatable={HP: "2Mi", A: "5", "cpu": "1"})  # no room for pods at all
    request = {"cpu": 0, HP: 0, A: 7}
    items = fits_resources(request, node, dra=True)
    assert [(i.reason, i.requested, i.used, i.capacity, i.unresolvable) for i in items] == \
        [(f"Insufficient {HP}", 0, 4 << 20, 2 << 20, False)]
    assert fits_resources(request, node) != items  # NodeResourcesFit: pods and the extended resource instead
    status = insufficient_status(fits_resources({"cpu": 2000, "memory": 3 * GI}, node, dra=True),
                                 plugin="DynamicResources", dra={"memory": GI}, overhead={})
    assert (status.code, status.plugin, status.reasons) == (U, "DynamicResources",
                                                             ["Insufficient cpu", "Insufficient memory"])
    assert [(e.requested, e.dra) for e in status.evidence] == [("2", None), ("3Gi", "1Gi")]
    assert insufficient_status([], plugin="DynamicResources").success


# -- units --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, text, want", [
    ("cpu", "1.5", 1500), ("cpu", "0.1m", 1), ("memory", "1.5", 2), ("memory", "1Gi", GI), (HP, "2Mi", 2 << 20),
    ("pods", "110", 110), ("ephemeral-storage", "1k", 1000), (A, "2", 2), ("attachable-volumes-csi-x", "3", 3),
    (KB, "1", 1),
])
def test_to_resource_counts_as_new_resource(name, text, want):
    assert res.to_resource({name: Quantity.parse(text)}) == {name: want}


@pytest.mark.parametrize("name", ["storage", "foo", "requests.example.com/x", "example.com/a/b"])
def test_to_resource_drops_names_the_scheduler_has_no_place_for(name):
    assert res.to_resource({name: Quantity.parse("1")}) == {}


@pytest.mark.parametrize("resource, amount, text", [
    ("cpu", 1500, "1500m"), ("cpu", 2000, "2"), ("cpu", 0, "0"), ("memory", 3 * GI, "3Gi"),
    ("memory", 1_500_000_000, "1500M"), ("memory", 123_456_789, "123456789"), (HP, 2 << 20, "2Mi"),
    ("ephemeral-storage", 1000, "1k"), (A, 1000, "1000"), ("pods", 110, "110"),
])
def test_format_amount(resource, amount, text):
    assert res.format_amount(resource, amount) == text


# -- component-helpers PodRequests under CalculateResource's options -------------------------------------

def q(d: dict) -> dict:
    return {k: Quantity.parse(v) for k, v in d.items()}


def c(name: str, req: dict | None = None, sidecar: bool = False, **extra) -> dict:
    out: dict = {"name": name, "resources": {"requests": req or {}}, **extra}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def cs(name: str, allocated: dict | None = None, actual: dict | None = None) -> dict:
    out: dict = {"name": name}
    if allocated is not None:
        out["allocatedResources"] = allocated
    if actual is not None:
        out["resources"] = {"requests": actual}
    return out


def helper_pod(containers=(), init=(), statuses=(), init_statuses=(), overhead=None, plr=None, conditions=(),
               claims=(), pod_allocated=None, pod_actual=None) -> Pod:
    spec: dict = {"containers": list(containers), "initContainers": list(init)}
    if overhead:
        spec["overhead"] = overhead
    if plr is not None:
        spec["resources"] = plr
    status: dict = {"containerStatuses": list(statuses), "initContainerStatuses": list(init_statuses),
                    "conditions": list(conditions), "nodeAllocatableResourceClaimStatuses": list(claims)}
    if pod_allocated is not None:
        status["allocatedResources"] = pod_allocated
    if pod_actual is not None:
        status["resources"] = {"requests": pod_actual}
    return Pod.from_raw({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
                         "spec": spec, "status": status})


INFEASIBLE = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]

POD_REQUESTS = [
    # TestPodResourceRequests
    ("nil options, larger init container", helper_pod([c("c", {"cpu": "1"})], [c("i", {"cpu": "4"})]), {"cpu": "4"}),
    ("nil options, larger containers", helper_pod([c("a", {"cpu": "2"}), c("b", {"cpu": "3"})], [c("i", {"cpu": "2"})]),
     {"cpu": "5"}),
    ("pod overhead included", helper_pod([c("a", {"cpu": "2"}), c("b", {"cpu": "3"})], [c("i", {"cpu": "2"})],
                                         overhead={"cpu": "1", "memory": "1Gi"}), {"cpu": "6", "memory": "1Gi"}),
    ("resized, infeasible", helper_pod([c("container-1", {"cpu": "4"})], statuses=[cs("container-1", actual={"cpu": "2"})],
                                       conditions=INFEASIBLE), {"cpu": "2"}),
    ("resized, infeasible & in-progress",
     helper_pod([c("container-1", {"cpu": "6"})], statuses=[cs("container-1", {"cpu": "4"}, {"cpu": "2"})],
                conditions=INFEASIBLE), {"cpu": "4"}),
    ("resized, no resize status", helper_pod([c("container-1", {"cpu": "4"})],
                                             statuses=[cs("container-1", actual={"cpu": "2"})]), {"cpu": "4"}),
    ("resized: per-resource 3-way maximum",
     helper_pod([c("container-1", {"cpu": "30m", "memory": "20M", "ephemeral-storage": "10G"})],
                statuses=[cs("container-1", {"cpu": "20m", "memory": "10M", "ephemeral-storage": "30G"},
                             {"cpu": "10m", "memory": "30M", "ephemeral-storage": "20G"})]),
     {"cpu": "30m", "memory": "30M", "ephemeral-storage": "30G"}),
    ("resized, restartable init container, infeasible",
     helper_pod(init=[c("restartable-init-1", {"cpu": "4"}, sidecar=True)],
                init_statuses=[cs("restartable-init-1", actual={"cpu": "2"})], conditions=INFEASIBLE), {"cpu": "2"}),
    ("resized, restartable init container, no resize status",
     helper_pod(init=[c("restartable-init-1", {"cpu": "4"}, sidecar=True)],
                init_statuses=[cs("restartable-init-1", actual={"cpu": "2"})]), {"cpu": "4"}),
    ("restartable init container", helper_pod([c("container-1", {"cpu": "1"})],
                                              [c("restartable-init-1", {"cpu": "1"}, sidecar=True)]), {"cpu": "2"}),
    ("multiple restartable init containers",
     helper_pod([c("container-1", {"cpu": "1"})],
                [c("init-1", {"cpu": "5"}), c("r1", {"cpu": "1"}, True), c("r2", {"cpu": "2"}, True),
                 c("r3", {"cpu": "3"}, True)]), {"cpu": "7"}),
    ("multiple restartable and regular init containers",
     helper_pod([c("container-1", {"cpu": "1"})],
                [c("init-1", {"cpu": "5"}), c("r1", {"cpu": "1"}, True), c("r2", {"cpu": "2"}, True),
                 c("init-2", {"cpu": "5"}), c("r3", {"cpu": "3"}, True)]), {"cpu": "8"}),
    ("restartable-init, init and regular",
     helper_pod([c("container-1", {"cpu": "100"})], [c("r1", {"cpu": "10"}, True), c("init-1", {"cpu": "200"})]),
     {"cpu": "210"}),
    ("aggregate request resolves max of sums instead of sum of maxes",
     helper_pod([c("c1", {"cpu": "1"}), c("c2", {"cpu": "2"})],
                statuses=[cs("c1", {"cpu": "2"}), cs("c2", {"cpu": "1"})]), {"cpu": "3"}),
    # TestAggregateContainerRequestsAndLimits
    ("regularcontainers with empty requests, but status with non-empty requests",
     helper_pod([c("container-1")], statuses=[cs("container-1", actual={"cpu": "2"})]), {"cpu": "2"}),
    ("always-restart init containers with empty requests, but status with non-empty requests",
     helper_pod(init=[c("container-1", sidecar=True)], init_statuses=[cs("container-1", actual={"cpu": "2"})]),
     {"cpu": "2"}),
    ("aggregate container request/limit resolves directly from pod status when PLR vertical scaling enabled",
     helper_pod([c("c1", {"cpu": "1"})], pod_allocated={"cpu": "4"}, pod_actual={"cpu": "3"}), {"cpu": "4"}),
    ("falls back to container status aggregation when PLR vertical scaling enabled but podAllocatedResources is nil",
     helper_pod([c("c1", {"cpu": "1"})], statuses=[cs("c1", {"cpu": "6"}, {"cpu": "5"})], pod_actual={"cpu": "3"}),
     {"cpu": "6"}),
    # TestPodRequestsAndLimitsVerticalScalingWrappers
    ("pod level requests/limits with PLR vertical scaling enabled and status populated",
     helper_pod([c("c1", {"cpu": "1"})], plr={"requests": {"cpu": "2"}}, pod_allocated={"cpu": "3"},
                pod_actual={"cpu": "3.5"}), {"cpu": "3.5"}),
    ("pod level requests/limits with PLR vertical scaling enabled and infeasible resize",
     helper_pod([c("c1", {"cpu": "1"})], plr={"requests": {"cpu": "10"}}, pod_allocated={"cpu": "3"},
                pod_actual={"cpu": "4"}, conditions=INFEASIBLE), {"cpu": "4"}),
    # TestPodLevelResourceRequests
    ("nil", helper_pod(), {}),
    ("pod level memory resource with SkipPodLevelResources false", helper_pod(plr={"requests": {"memory": "2Mi"}}),
     {"memory": "2Mi"}),
    ("pod level memory and container level cpu resources",
     helper_pod([c("a", {"cpu": "2m"})], plr={"requests": {"memory": "2Mi"}}), {"memory": "2Mi", "cpu": "2m"}),
    ("pod level unsupported resources set at both pod-level and container-level",
     helper_pod([c("a", {"storage": "3Mi"})], plr={"requests": {"storage": "2Mi"}}), {"storage": "3Mi"}),
    ("pod level unsupported resources set at pod-level",
     helper_pod([c("a", {"memory": "3Mi"})], plr={"requests": {"storage": "2Mi"}}), {"memory": "3Mi"}),
    ("both container-level and pod-level resources set",
     helper_pod([c("a", {"memory": "3Mi", "cpu": "2m"})], plr={"requests": {"memory": "6Mi", "cpu": "8m"}}),
     {"memory": "6Mi", "cpu": "8m"}),
    ("container-level resources and init container set",
     helper_pod([c("a", {"memory": "3Mi", "cpu": "2m"})], [c("i", {"memory": "5Mi", "cpu": "4m"})]),
     {"memory": "5Mi", "cpu": "4m"}),
    ("container-level resources and sidecar container set",
     helper_pod([c("a", {"memory": "3Mi", "cpu": "2m"})], [c("s", {"memory": "5Mi", "cpu": "4m"}, True)]),
     {"memory": "8Mi", "cpu": "6m"}),
    ("container-level resources, init and sidecar container set",
     helper_pod([c("a", {"memory": "3Mi", "cpu": "2m"})],
                [c("s", {"memory": "5Mi", "cpu": "4m"}, True), c("i", {"memory": "6Mi", "cpu": "8m"})]),
     {"memory": "11Mi", "cpu": "12m"}),
    ("pod-level resources, container-level resources, init and sidecar container set",
     helper_pod([c("a", {"memory": "3Mi", "cpu": "2m"})],
                [c("s", {"memory": "5Mi", "cpu": "4m"}, True), c("i", {"memory": "6Mi", "cpu": "8m"})],
                plr={"requests": {"memory": "15Mi", "cpu": "18m"}}), {"memory": "15Mi", "cpu": "18m"}),
    ("pod-level resources, hugepage request/limit single page size",
     helper_pod(plr={"requests": {"memory": "10Mi", HP: "2Mi"}, "limits": {HP: "2Mi"}}),
     {"memory": "10Mi", HP: "2Mi"}),
    ("pod-level resources, container-level resources, hugepage request/limit multiple page sizes between "
     "pod-level and container-level",
     helper_pod([c("a", {"memory": "4Mi", "hugepages-1Gi": "1Gi"})],
                plr={"requests": {"cpu": "1", HP: "10Mi"}, "limits": {HP: "10Mi"}}),
     {"cpu": "1", "memory": "4Mi", HP: "10Mi", "hugepages-1Gi": "1Gi"}),
    # TestPodRequestsAndLimitsWithDRA
    ("Single claim on one container",
     helper_pod([c("c1", {"cpu": "100m", "memory": "1Gi", "hugepages-1Gi": "2"})],
                claims=[claim_status("node-allocatable-claim-1", ["c1"], mapping={"cpu": "50m", "hugepages-1Gi": "1"})]),
     {"cpu": "150m", "memory": "1Gi", "hugepages-1Gi": "3"}),
    ("Multiple claims on one container",
     helper_pod([c("c1", {"cpu": "100m", "memory": "1Gi"})],
                claims=[claim_status("n1", ["c1"], mapping={"cpu": "50m"}),
                        claim_status("n2", ["c1"], mapping={"cpu": "25m", "memory": "512Mi"})]),
     {"cpu": "175m", "memory": "1.5Gi"}),
    ("Same claim referenced in multiple containers",
     helper_pod([c("c1", {"cpu": "100m"}), c("c2", {"cpu": "200m"})],
                claims=[claim_status("n1", ["c1", "c2"], mapping={"cpu": "50m"})]), {"cpu": "350m"}),
    ("Different claims on multiple containers",
     helper_pod([c("c1", {"cpu": "100m", "hugepages-1Gi": "1"}),
                 c("c2", {"cpu": "200m", "memory": "1Gi", "hugepages-1Gi": "2"})],
                claims=[claim_status("n1", ["c1"], mapping={"cpu": "50m", "hugepages-1Gi": "1"}),
                        claim_status("n2", ["c2"], mapping={"cpu": "25m", "memory": "512Mi", "hugepages-1Gi": "2"})]),
     {"cpu": "375m", "memory": "1.5Gi", "hugepages-1Gi": "6"}),
    ("Claim on init container",
     helper_pod([c("c1", {"cpu": "50m"})], [c("ic1", {"cpu": "100m"})],
                claims=[claim_status("n", ["ic1"], mapping={"cpu": "25m"})]), {"cpu": "125m"}),
    ("Pod Level Resources overrides the claim request/limit",
     helper_pod([c("c1", {"cpu": "1", "memory": "1Gi"})], plr={"requests": {"cpu": "2"}, "limits": {"cpu": "2"}},
                claims=[claim_status("n", ["c1"], mapping={"cpu": "3"})]), {"cpu": "2", "memory": "1Gi"}),
    ("Pod with DRA claim specifying Overhead mapping",
     helper_pod([c("c1", {"cpu": "100m", "memory": "1Gi"}), c("c2", {"cpu": "100m", "memory": "1Gi"})],
                claims=[claim_status("n", ["c1", "c2"], overhead={"memory": ("1Gi", "500Mi")})]),
     {"cpu": "200m", "memory": "4072Mi"}),
    ("Pod with DRA claim specifying both Mapping and Overhead mapping",
     helper_pod([c("c1", {"memory": "1Gi"}), c("c2", {"memory": "1Gi"})],
                claims=[claim_status("n", ["c1", "c2"], mapping={"memory": "2Gi"},
                                     overhead={"memory": ("1Gi", "500Mi")})]), {"memory": "6120Mi"}),
    ("Pod with DRA claim specifying Overhead mapping, PerPod only",
     helper_pod([c("c1", {"memory": "1Gi"})], claims=[claim_status("n", ["c1"], overhead={"memory": ("1Gi", None)})]),
     {"memory": "2Gi"}),
    ("Pod with DRA claim specifying Overhead mapping, PerContainer only",
     helper_pod([c("c1", {"memory": "1Gi"})], claims=[claim_status("n", ["c1"], overhead={"memory": (None, "500Mi")})]),
     {"memory": "1524Mi"}),
    ("Pod with unreferenced DRA claim specifying Mapping",
     helper_pod([c("c1", {"memory": "1Gi"})], claims=[claim_status("u", [], mapping={"memory": "2Gi"})]),
     {"memory": "3Gi"}),
    ("Pod with unreferenced DRA claim specifying Overhead mapping",
     helper_pod([c("c1", {"memory": "1Gi"})], claims=[claim_status("u", [], overhead={"memory": ("1Gi", "500Mi")})]),
     {"memory": "2Gi"}),
    ("Pod with unreferenced DRA claim specifying Overhead mapping, PerContainer only",
     helper_pod([c("c1", {"memory": "1Gi"})], claims=[claim_status("u", [], overhead={"memory": (None, "500Mi")})]),
     {"memory": "1Gi"}),
    ("shared DRA claim + memory resize (spec != status) + UseStatusResources",
     helper_pod([c("c1", {"memory": "1Gi"}), c("c2", {"memory": "2Gi"})],
                statuses=[cs("c1", {"memory": "1Gi"}, {"memory": "2Gi"}), cs("c2", {"memory": "2Gi"}, {"memory": "2Gi"})],
                pod_actual={"memory": "6Gi"}, pod_allocated={"memory": "5Gi"},
                claims=[claim_status("s", ["c1", "c2"], overhead={"memory": (None, "1Gi")})]), {"memory": "6Gi"}),
    ("Pod Level Resources for CPU + shared DRA claims + UseStatusResources",
     helper_pod([c("c1", {"memory": "1Gi"}), c("c2", {"memory": "2Gi"})], plr={"requests": {"cpu": "3"}},
                statuses=[cs("c1", {"memory": "1Gi"}, {"memory": "1Gi"}), cs("c2", {"memory": "2Gi"}, {"memory": "2Gi"})],
                pod_actual={"cpu": "3", "memory": "5Gi"}, pod_allocated={"cpu": "3", "memory": "5Gi"},
                claims=[claim_status("sc", ["c1", "c2"], mapping={"cpu": "1"}),
                        claim_status("sm", ["c1", "c2"], overhead={"memory": (None, "1Gi")})]),
     {"cpu": "3", "memory": "5Gi"}),
    ("Pod Level Resources + shared DRA claim during resize (spec != status) + UseStatusResources",
     helper_pod([c("c1", {"memory": "1Gi"}), c("c2", {"memory": "2Gi"})], plr={"requests": {"cpu": "4"}},
                statuses=[cs("c1", {"memory": "1Gi"}, {"memory": "1Gi"}), cs("c2", {"memory": "2Gi"}, {"memory": "2Gi"})],
                pod_actual={"cpu": "3", "memory": "5Gi"}, pod_allocated={"cpu": "3", "memory": "5Gi"},
                claims=[claim_status("sc", ["c1", "c2"], mapping={"cpu": "1"}),
                        claim_status("sm", ["c1", "c2"], overhead={"memory": (None, "1Gi")})]),
     {"cpu": "4", "memory": "5Gi"}),
    ("Container Level Resources + shared DRA claim during memory resize + UseStatusResources",
     helper_pod([c("c1", {"memory": "4Gi"}), c("c2", {"memory": "2Gi"})],
                statuses=[cs("c1", {"memory": "4Gi"}, {"memory": "2Gi"}), cs("c2", {"memory": "2Gi"}, {"memory": "2Gi"})],
                claims=[claim_status("s", ["c1", "c2"], overhead={"memory": (None, "1Gi")})]), {"memory": "8Gi"}),
]


@pytest.mark.parametrize("name, pod, want", POD_REQUESTS, ids=[c[0] for c in POD_REQUESTS])
def test_pod_requests_as_the_cache_counts_them(name, pod, want):
    assert res.cached_pod_requests(pod) == q(want)
    assert res.scheduler_requests(pod) == res.to_resource(q(want))
    assert PodInfo(pod).requests == res.to_resource(q(want))


def test_an_infeasible_resize_without_any_status_counts_nothing_but_overhead():
    """helpers.go: allocated and actuated fall back to nothing (not the spec) when Infeasible."""
    pod = helper_pod([c("c", {"cpu": "2", "memory": "1Gi"})], conditions=INFEASIBLE, overhead={"cpu": "100m"})
    assert res.scheduler_requests(pod) == {"cpu": 100}


def test_the_1_36_resources_map_is_not_counted_by_a_1_37_scheduler():
    pod = helper_pod([c("c1", {"memory": "1Gi"})], claims=[{"resourceClaimName": "old", "containers": ["c1"],
                                                           "resources": {"memory": "2Gi"}}])
    assert res.scheduler_requests(pod) == {"memory": GI}


def test_a_pods_request_is_not_a_node_resource():
    """newResourcePod lists pods: 0 in every container: it never reaches Requested."""
    assert res.scheduler_requests(make_pod(use(1, 2))) == {"cpu": 1, "memory": 2, "ephemeral-storage": 0}
    assert res.incoming_requests(make_pod(use(1, 2))).total == {"cpu": 1, "memory": 2, "ephemeral-storage": 0}


@pytest.mark.parametrize("pod", [case[1] for case in ENOUGH] + [case[1] for case in POD_REQUESTS] + [
    make_pod({"cpu": "1.0005", "memory": "0.5"}, {"cpu": "0.0005", "memory": "0.5"}),  # rounding after the sum
    make_pod({"cpu": "1"}, status={"conditions": [{"type": "Ready", "status": "True"}],
                                   "containerStatuses": [{"name": "c0", "ready": True}]}),
])
def test_the_short_path_for_plain_pods_agrees_with_the_general_rule(pod):
    general = res.to_resource(res.cached_pod_requests(pod))
    general.pop("pods", None)
    assert res.scheduler_requests(pod) == general


def test_sums_are_rounded_once_as_quantities_not_per_container():
    pod = make_pod({"cpu": "1.0005", "memory": "0.5"}, {"cpu": "0.0005", "memory": "0.5"})
    assert res.scheduler_requests(pod) == {"cpu": 1001, "memory": 1}
