"""Pod and container cgroup predictions against the reference vectors
(docs/kubernetes/kubelet-cgroups.md §5, docs/kubernetes/dra-apis.md §1.9), through the public functions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from podspec import GI, MI, ctr, entries_of, entry, spec_pod

from kubectl_dra.allocatable.requests import pod_limits, pod_requests
from kubectl_dra.cgroups import formulas as f
from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.cgroups.predict import hugepage_limits, predict_pod
from kubectl_dra.cgroups.qos import qos_class
from kubectl_dra.quantity import Quantity

NO_HUGEPAGES = NodeOptions(hugepage_sizes=[])


def predict(pod, **options):
    return predict_pod(pod, entries_of(pod), NodeOptions(**{"hugepage_sizes": [], **options}))


def pod_files(pod, **options):
    return predict(pod, **options).pod.files


def container_files(pod, name, **options):
    return next(c for c in predict(pod, **options).containers if c.name == name).files


R = lambda cpu, mem: {k: v for k, v in (("cpu", cpu), ("memory", mem)) if v}  # noqa: E731

# docs/kubernetes/kubelet-cgroups.md §5.3 TestResourceConfigForPod:
# (containers, init, plr, period) -> (shares, quota or None, period, memory or None)
RESOURCE_CONFIG_FOR_POD = [
    ("besteffort", [ctr("a")], [], None, 100000, 2, None, None),
    ("burstable-no-limits", [ctr("a", R("100m", "100Mi"))], [], None, 100000, 102, None, None),
    ("burstable-with-limits", [ctr("a", R("100m", "100Mi"), R("200m", "200Mi"))], [], None, 100000, 102, 20000,
     209715200),
    ("burstable-partial-limits", [ctr("a", R("100m", "100Mi"), R("200m", "200Mi")), ctr("b", R("100m", "100Mi"))],
     [], None, 100000, 204, None, None),
    ("burstable-with-limits-with-tuned-quota", [ctr("a", R("100m", "100Mi"), R("200m", "200Mi"))], [], None, 5000,
     102, 1000, 209715200),
    ("burstable-partial-limits-with-tuned-quota",
     [ctr("a", R("100m", "100Mi"), R("200m", "200Mi")), ctr("b", R("100m", "100Mi"))], [], None, 5000, 204, None,
     None),
    ("guaranteed", [ctr("a", R("100m", "100Mi"), R("100m", "100Mi"))], [], None, 100000, 102, 10000, 104857600),
    ("guaranteed-with-tuned-quota", [ctr("a", R("100m", "100Mi"), R("100m", "100Mi"))], [], None, 5000, 102, 1000,
     104857600),
    ("burstable-partial-limits-with-init-containers",
     [ctr("app1", R("100m", "100m"), R("100m", "100Mi")), ctr("app2", R("100m", "100m"))],
     [ctr("init1", R("100m", "100m"), R("100m", "100Mi")), ctr("init2", R("100m", "100m"))], None, 100000, 204,
     None, None),
    ("besteffort-with-pod-level-resources-enabled", [ctr("a")], [], {}, 100000, 2, None, None),
    ("burstable-with-pod-level-requests", [ctr("a")], [], {"requests": R("100m", "100Mi")}, 100000, 102, None, None),
    ("burstable-with-pod-and-container-level-requests", [ctr("a", R("10m", "50Mi"))], [],
     {"requests": R("100m", "100Mi")}, 100000, 102, None, None),
    ("burstable-with-pod-level-resources", [ctr("a")], [],
     {"requests": R("100m", "100Mi"), "limits": R("200m", "200Mi")}, 100000, 102, 20000, 209715200),
    ("burstable-with-pod-and-container-level-resources", [ctr("a", R("10m", "50Mi"), R("50m", "100Mi"))], [],
     {"requests": R("100m", "100Mi"), "limits": R("200m", "200Mi")}, 100000, 102, 20000, 209715200),
    ("burstable-with-partial-pod-level-resources-limits", [ctr("a", R("200m", "200Mi"), R("200m", "200Mi"))], [],
     {"requests": R("200m", "300Mi")}, 100000, 204, 20000, 209715200),
    ("guaranteed-with-pod-level-resources", [ctr("a")], [],
     {"requests": R("100m", "100Mi"), "limits": R("100m", "100Mi")}, 100000, 102, 10000, 104857600),
    ("guaranteed-with-pod-and-container-level-resources", [ctr("a", R("10m", "50Mi"), R("50m", "100Mi"))], [],
     {"requests": R("100m", "100Mi"), "limits": R("100m", "100Mi")}, 100000, 102, 10000, 104857600),
    ("guaranteed-pod-level-resources-with-init-containers", [ctr("a", R("10m", "50Mi"), R("50m", "100Mi"))],
     [ctr("i", R("10m", "50Mi"), R("50m", "50Mi"))],
     {"requests": R("100m", "100Mi"), "limits": R("100m", "100Mi")}, 100000, 102, 10000, 104857600),
]


@pytest.mark.parametrize("case,containers,init,plr,period,shares,quota,memory", RESOURCE_CONFIG_FOR_POD,
                         ids=[c[0] for c in RESOURCE_CONFIG_FOR_POD])
def test_resource_config_for_pod(case, containers, init, plr, period, shares, quota, memory):
    files = pod_files(spec_pod(containers, init=init, plr=plr), cpu_cfs_period=period)
    assert files["cpu.weight"] == str(f.weight_linear(shares))
    assert files["cpu.max"] == (f"{quota} {period}" if quota else "max 100000")
    assert files["memory.max"] == (str(memory) if memory else "max")


# docs/kubernetes/kubelet-cgroups.md §5.6 calculateLinuxResources: (req, lim, plr limits) -> (shares, quota, memory)
CONTAINER_CASES = [
    ("Request128MBLimit256MB", R("1", "128Mi"), R("2", "128Mi"), None, 1024, 200000, 134217728),
    ("RequestNoMemory", R("2", None), R("8", None), None, 2048, 800000, 0),
    ("RequestNilCPU", {}, R("2", None), None, 2048, 200000, 0),
    ("RequestZeroCPU", R("0", None), R("2", None), None, 2, 200000, 0),
    ("128M/1C|256M/3C", R("1", "128Mi"), R("3", "256Mi"), None, 1024, 300000, 268435456),
    ("128M/2C no limit", R("2", "128Mi"), {}, None, 2048, 0, 0),
    ("pod-level limit fallback", R("1", "128Mi"), {}, R("3", "256Mi"), 1024, 300000, 268435456),
]


@pytest.mark.parametrize("case,req,lim,plr,shares,quota,memory", CONTAINER_CASES, ids=[c[0] for c in CONTAINER_CASES])
@pytest.mark.parametrize("formula", ["linear", "quadratic"])
def test_container_cri_values(case, req, lim, plr, shares, quota, memory, formula):
    pod = spec_pod([ctr("c", req, lim)], plr={"limits": plr} if plr else None)
    files = container_files(pod, "c", weight_formula=formula)
    assert files["cpu.weight"] == str(f.WEIGHT_FORMULAS[formula](shares))
    assert files["cpu.max"] == (f"{quota} 100000" if quota else "max 100000")
    assert files["memory.max"] == (str(memory) if memory else "max")


def test_hugepage_limits_vectors():
    q = Quantity.parse
    assert hugepage_limits({"2Mi": q("128")}) == {}
    assert hugepage_limits({"hugepages-2Mi": q("128")}) == {2097152: 128}
    assert hugepage_limits({"hugepages-2Mi": q("128"), "hugepages-2097152": q("256"), "hugepages-4Mi": q("512"),
                            "4Mi": q("1024")}) == {2097152: 384, 4194304: 512}
    assert hugepage_limits({"hugepages-2MB": q("1")}) == {}


def test_container_hugepages_every_host_size_listed():
    pod = spec_pod([ctr("c", {"hugepages-2Mi": "2Mi", "cpu": "1"}, {"hugepages-2Mi": "2Mi", "hugepages-1Gi": "2Gi",
                                                                     "hugepages-2MB": "2Mi"})])
    files = container_files(pod, "c", hugepage_sizes=[2 * MI, GI], runtime_hugetlb=True)
    assert {k: v for k, v in files.items() if k.startswith("hugetlb")} == {
        "hugetlb.2MB.max": "2097152", "hugetlb.2MB.rsvd.max": "2097152",
        "hugetlb.1GB.max": "2147483648", "hugetlb.1GB.rsvd.max": "2147483648"}
    crio = container_files(pod, "c", hugepage_sizes=[2 * MI, GI], runtime="crio")
    assert "hugetlb.2MB.rsvd.max" not in crio and crio["hugetlb.1GB.max"] == "2147483648"
    pod_level = pod_files(pod, hugepage_sizes=[2 * MI, GI])
    assert pod_level["hugetlb.2MB.max"] == "2097152" and pod_level["hugetlb.1GB.max"] == "0"  # requests


# docs/kubernetes/kubelet-cgroups.md §5.9 PodRequests with DRA: (containers, init, plr, entries) -> expected requests
Q = Quantity.parse
PODREQUESTS_DRA = [
    ("no claims", [ctr("c1", R("100m", "1Gi"))], [], None, [], {"cpu": "100m", "memory": "1Gi"}),
    ("mapping with hugepages", [ctr("c1", {"cpu": "100m", "memory": "1Gi", "hugepages-1Gi": "2"}, claims=["a"])], [],
     None, [entry("a", ["c1"], {"cpu": "50m", "hugepages-1Gi": "1"})],
     {"cpu": "150m", "memory": "1Gi", "hugepages-1Gi": "3"}),
    ("two claims", [ctr("c1", R("100m", "1Gi"))], [], None,
     [entry("a", ["c1"], {"cpu": "50m"}), entry("b", ["c1"], {"cpu": "25m", "memory": "512Mi"})],
     {"cpu": "175m", "memory": "1536Mi"}),
    ("claim shared by two containers counted once", [ctr("c1", R("100m", None)), ctr("c2", R("200m", None))], [], None,
     [entry("a", ["c1", "c2"], {"cpu": "50m"})], {"cpu": "350m"}),
    ("two claims two containers",
     [ctr("c1", {"cpu": "100m", "hugepages-1Gi": "1"}), ctr("c2", {"cpu": "200m", "memory": "1Gi", "hugepages-1Gi": "2"})],
     [], None, [entry("a", ["c1"], {"cpu": "50m", "hugepages-1Gi": "1"}),
                entry("b", ["c2"], {"cpu": "25m", "memory": "512Mi", "hugepages-1Gi": "2"})],
     {"cpu": "375m", "memory": "1536Mi", "hugepages-1Gi": "6"}),
    ("init container claim", [ctr("c1", R("50m", None))], [ctr("ic1", R("100m", None))], None,
     [entry("a", ["ic1"], {"cpu": "25m"})], {"cpu": "125m"}),
    ("pod-level request replaces", [ctr("c1", R("1", "1Gi"))], [], {"requests": R("2", None)},
     [entry("a", ["c1"], {"cpu": "3"})], {"cpu": "2", "memory": "1Gi"}),
    ("overhead per pod and per container", [ctr("c1", R("100m", "1Gi")), ctr("c2", R("100m", "1Gi"))], [], None,
     [entry("x", ["c1", "c2"], overhead={"memory": ("1Gi", "500Mi")})], {"cpu": "200m", "memory": "4072Mi"}),
    ("overhead per pod", [ctr("c1", R(None, "1Gi"))], [], None, [entry("x", ["c1"], overhead={"memory": ("1Gi", None)})],
     {"memory": "2Gi"}),
    ("overhead per container", [ctr("c1", R(None, "1Gi"))], [], None,
     [entry("x", ["c1"], overhead={"memory": (None, "500Mi")})], {"memory": "1524Mi"}),
    # docs/kubernetes/dra-apis.md §1.9: ClaimA 4 CPU (c1,c2), ClaimB 2 CPU (c1), c1 request 1, c2 request 2 -> 9
    ("scheduler accounting", [ctr("c1", R("1", None)), ctr("c2", R("2", None))], [], None,
     [entry("A", ["c1", "c2"], {"cpu": "4"}), entry("B", ["c1"], {"cpu": "2"})], {"cpu": "9"}),
]


@pytest.mark.parametrize("case,containers,init,plr,entries,expected", PODREQUESTS_DRA, ids=[c[0] for c in PODREQUESTS_DRA])
def test_pod_requests_with_dra(case, containers, init, plr, entries, expected):
    pod = spec_pod(containers, init=init, plr=plr, entries=entries)
    got = pod_requests(pod, entries_of(pod))
    assert {k: v for k, v in got.items()} == {k: Q(v) for k, v in expected.items()}


def test_option_off_ignores_claims():
    pod = spec_pod([ctr("c1", R("100m", None))], entries=[entry("a", ["c1"], {"cpu": "50m"})])
    assert pod_requests(pod) == {"cpu": Q("100m")}


# KEP-5517 cgroup walkthroughs W1-W6 (docs/kubernetes/dra-apis.md §1.9). CPU in cores, memory in GiB.
def cores(n) -> str:
    return f"{int(Q(str(n)).milli_value() * 100000 // 1000)} 100000"


def gib(n) -> str:
    return str(int(Q(f"{n}Gi").value()))


def weight_of_cores(n, formula=f.weight_linear) -> str:
    return str(formula(f.milli_cpu_to_shares(Q(str(n)).milli_value())))


def both(cpu, mem):
    return {"cpu": str(cpu), "memory": f"{mem}Gi"}


W1 = spec_pod([ctr("c1", both(2, 2), both(4, 4), claims=["x"])], entries=[entry("x", ["c1"], both(5, 5))])
W2 = spec_pod([ctr("c1", claims=["x"])], entries=[entry("x", ["c1"], {"cpu": "5"})])
W3 = spec_pod([ctr("c1", both(2, 2), both(4, 4), claims=["x"]), ctr("c2", both(4, 4), both(8, 8), claims=["x"])],
              entries=[entry("x", ["c1", "c2"], both(5, 5))])
W4 = spec_pod([ctr("c1", claims=["x"]), ctr("c2", claims=["x"])], plr={"requests": both(5, 5), "limits": both(5, 5)},
              entries=[entry("x", ["c1", "c2"], both(5, 5))])
W5 = spec_pod([ctr("c1", both(2, 2), both(4, 4), claims=["x"]), ctr("c2", both(4, 4), both(8, 8), claims=["x"])],
              init=[ctr("sidecar", sidecar=True)], plr={"requests": both(8, 8), "limits": both(15, 15)},
              entries=[entry("x", ["c1", "c2"], both(5, 5))])
W6 = spec_pod([ctr("c1", both(2, 2), both(2, 4), claims=["x"]), ctr("c2", both(2, 2), both(4, 8), claims=["x"])],
              entries=[entry("x", ["c1", "c2"], overhead={"cpu": ("1", "500m"), "memory": ("1Gi", "512Mi")})])

WALKTHROUGHS = [
    # pod: (weight cores, cpu.max cores or None, memory GiB or None); containers: name -> (weight cores, cpu, mem)
    ("W1", W1, (7, 9, 9), {"c1": (2, 9, 9)}),
    ("W2", W2, (None, None, None), {"c1": (0, None, None)}),
    ("W3", W3, (11, 17, 17), {"c1": (2, 9, 9), "c2": (4, 13, 13)}),
    # W4/W5: the KEP text says "min shares" for containers without requests, but 1.37's
    # generateLinuxContainerResources takes the cpu limit they inherit from the pod level (as the DRA
    # e2e case "pod-level resources specified, container-level limits omitted" expects): 5 and 15 CPUs
    ("W4", W4, (5, 5, 5), {"c1": (5, 5, 5), "c2": (5, 5, 5)}),
    ("W5", W5, (8, 15, 15), {"c1": (2, 9, 9), "c2": (4, 13, 13), "sidecar": (15, 15, 15)}),
    ("W6", W6, (6, 8, 14), {"c1": (2, 3.5, 5.5), "c2": (2, 5.5, 9.5)}),
]


@pytest.mark.parametrize("name,pod,pod_expect,containers", WALKTHROUGHS, ids=[w[0] for w in WALKTHROUGHS])
def test_kep_5517_walkthroughs_give_the_documented_cgroup_values(name, pod, pod_expect, containers):
    """KEP-5517's walkthroughs W1-W6 (docs/kubernetes/dra-apis.md §1.9): pod and container cpu.weight, cpu.max
    and memory.max."""
    prediction = predict(pod)
    weight, cpu, mem = pod_expect
    files = prediction.pod.files
    assert files["cpu.weight"] == (weight_of_cores(weight) if weight is not None else "1")  # W2: BestEffort
    assert files["cpu.max"] == (cores(cpu) if cpu is not None else "max 100000")
    assert files["memory.max"] == (gib(mem) if mem is not None else "max")
    for c in prediction.containers:
        weight, cpu, mem = containers[c.name]
        assert c.files["cpu.weight"] == weight_of_cores(weight, f.weight_quadratic), c.name
        assert c.files["cpu.max"] == (cores(cpu) if cpu is not None else "max 100000"), c.name
        assert c.files["memory.max"] == (gib(mem) if mem is not None else "max"), c.name


def test_walkthrough_without_requests_stays_best_effort_and_unlimited():
    """Walkthrough W2 (docs/kubernetes/dra-apis.md §1.9): DRA amounts never change the QoS class."""
    prediction = predict(W2)
    assert prediction.qos_class == "BestEffort"
    assert prediction.pod.path.startswith("kubepods.slice/kubepods-besteffort.slice/")


def test_kubelet_dra_off_gives_spec_only_values():
    assert pod_files(W1, kubelet_dra=False)["cpu.max"] == cores(4)
    assert container_files(W1, "c1", kubelet_dra=False)["memory.max"] == gib(4)


def test_136_entries_do_not_change_cgroups():
    pod = spec_pod([ctr("c1", both(2, 2), both(4, 4), claims=["x"])],
                   entries=[{"resourceClaimName": "x", "containers": ["c1"], "resources": {"cpu": "4"}}])
    assert pod_files(pod)["cpu.max"] == cores(4)
    assert pod_requests(pod, entries_of(pod))["cpu"] == Q("6")  # the 1.36 scheduler counted it


def test_dra_memory_undeclared_limit_is_dropped_but_hugepages_kept():
    pod = spec_pod([ctr("c1", {"cpu": "1", "memory": "1Gi"}, {"cpu": "2"}, claims=["x"])],
                   entries=[entry("x", ["c1"], {"memory": "2Gi", "hugepages-2Mi": "4Mi"})])
    files = pod_files(pod, hugepage_sizes=[2 * MI])
    assert files["memory.max"] == "max"
    assert files["hugetlb.2MB.max"] == str(4 * MI)
    c = container_files(pod, "c1", hugepage_sizes=[2 * MI], runtime_hugetlb=True)
    assert c["memory.max"] == "max" and c["hugetlb.2MB.max"] == str(4 * MI)


def test_nvidia_overhead_example():
    """mem limit 128Mi + GPU perPod 256Mi + perContainer 64Mi -> pod memory.max 448Mi; cpu perPod 500m."""
    pod = spec_pod([ctr("c", {"cpu": "100m", "memory": "128Mi"}, {"memory": "128Mi"}, claims=["g"])],
                   entries=[entry("g", ["c"], overhead={"memory": ("256Mi", "64Mi"), "cpu": ("500m", None)})])
    files = pod_files(pod)
    assert files["memory.max"] == str(448 * MI)
    assert files["cpu.weight"] == str(f.weight_linear(f.milli_cpu_to_shares(600)))


def test_dra_driver_cpu_example():
    """container req=lim cpu 1m, claim dra.cpu/cpu 10 -> pod and container cpu.max 1000100/100000."""
    pod = spec_pod([ctr("engine", {"cpu": "1m", "memory": "1Gi"}, {"cpu": "1m", "memory": "1Gi"}, claims=["cpus"])],
                   entries=[entry("cpus", ["engine"], {"cpu": "10"})])
    prediction = predict(pod)
    assert prediction.qos_class == "Guaranteed"
    assert prediction.pod.files["cpu.max"] == "1000100 100000"
    assert prediction.containers[0].files["cpu.max"] == "1000100 100000"
    assert prediction.containers[0].files["cpu.weight"] == "1"  # 1m -> 2 shares: DRA never adds shares


def test_pod_overhead_added_to_nonzero_limits_only():
    pod = spec_pod([ctr("c", R("1", "1Gi"), R("1", "1Gi"))], overhead={"cpu": "250m", "memory": "160Mi"})
    files = pod_files(pod)
    assert files["cpu.max"] == "125000 100000" and files["memory.max"] == str((1024 + 160) * MI)
    assert files["cpu.weight"] == str(f.weight_linear(f.milli_cpu_to_shares(1250)))
    burstable = spec_pod([ctr("c", R("1", "1Gi"))], overhead={"cpu": "250m"})
    assert pod_files(burstable)["cpu.max"] == "max 100000"


def test_memory_qos_with_dra():
    """req 1Gi, lim 2Gi, DRA 5Gi, factor 0.9 -> memory.max 7Gi, memory.high 6.4Gi in whole pages."""
    pod = spec_pod([ctr("c", {"cpu": "1", "memory": "1Gi"}, {"memory": "2Gi"}, claims=["x"])],
                   entries=[entry("x", ["c"], {"memory": "5Gi"})])
    c = container_files(pod, "c", memory_qos="legacy")
    assert c["memory.max"] == str(7 * GI)
    assert c["memory.high"] == str(int(Q("6.4Gi").value()) // 4096 * 4096)
    assert c["memory.min"] == str(GI)
    without = container_files(pod, "c", memory_qos="legacy", kubelet_dra=False)
    assert without["memory.high"] == str(int(Q("1.9Gi").value()) // 4096 * 4096)
    tiered = pod_files(pod, memory_qos="tiered")
    assert tiered["memory.low"] == str(6 * GI) and "memory.min" not in tiered


def test_sidecar_and_init_aggregation():
    pod = spec_pod([ctr("app", R("1", None))], init=[ctr("proxy", R("500m", None), sidecar=True),
                                                     ctr("setup", R("2", None))])
    # max(app 1 + proxy 0.5, setup 2 + proxy 0.5) = 2.5
    assert pod_requests(pod)["cpu"] == Q("2500m")


def test_limits_declared_container_by_container():
    """1.37's ResourceConfigForPod checks every init and regular container's own limit (1.33-1.36
    counted earlier sidecars' limits for a plain init container; 1.37.2 no longer does)."""
    after_sidecar = spec_pod([ctr("app", R("1", "1Gi"), R("1", "1Gi"))],
                             init=[ctr("proxy", R("1", "1Gi"), R("1", "1Gi"), sidecar=True), ctr("setup", R("1", "1Gi"))])
    assert pod_files(after_sidecar)["cpu.max"] == "max 100000"
    all_limited = spec_pod([ctr("app", R("1", "1Gi"), R("1", "1Gi"))],
                           init=[ctr("proxy", R("1", "1Gi"), R("1", "1Gi"), sidecar=True),
                                 ctr("setup", R("1", "1Gi"), R("2", "1Gi"))])
    # limits: max(app 1 + proxy 1, setup 2 + the proxy started before it 1) = 3 CPUs
    assert pod_files(all_limited)["cpu.max"] == "300000 100000"
    without = spec_pod([ctr("app", R("1", "1Gi"), R("1", "1Gi")), ctr("other", R("1", "1Gi"))])
    assert pod_files(without)["cpu.max"] == "max 100000"


@pytest.mark.parametrize("kubelet, cpu_max", [
    ("v1.37.2", "max 100000"),  # setup's own limit is missing: no pod limit
    ("v1.36.3", "200000 100000"),  # PodLimits hands setup the proxy's 1 CPU: max(app 1 + proxy 1, 0 + 1) = 2
    ("v1.34.4", "200000 100000"),
    (None, "max 100000"),  # a kubelet not known: 1.37's rule
])
def test_limits_declared_by_the_kubelets_release(kubelet, cpu_max):
    """Kubelets up to 1.36 decide "limits declared" in PodLimits' container callback, which gives a
    plain init container its limits plus the sidecars' started before it (component-helpers v0.36.3
    resource/helpers.go AggregateContainerLimits; docs/kubernetes/versions.md §5)."""
    after_sidecar = spec_pod([ctr("app", R("1", "1Gi"), R("1", "1Gi"))],
                             init=[ctr("proxy", R("1", "1Gi"), R("1", "1Gi"), sidecar=True), ctr("setup", R("1", "1Gi"))])
    assert pod_files(after_sidecar, kubelet_version=kubelet)["cpu.max"] == cpu_max
    no_sidecar_limit = spec_pod([ctr("app", R("1", "1Gi"), R("1", "1Gi"))],
                                init=[ctr("proxy", R("1", "1Gi"), sidecar=True), ctr("setup", R("1", "1Gi"))])
    assert pod_files(no_sidecar_limit, kubelet_version=kubelet)["cpu.max"] == "max 100000"


@pytest.mark.parametrize("kubelet, qos, factor", [
    ("v1.37.2", "none", None), ("v1.36.3", "none", "0.9"), ("v1.36.3", "off", None), ("v1.34.4", "legacy", "0.9"),
    ("v1.37.2", "legacy", "0.9"),
])
def test_the_throttling_factor_defaults_to_0_9_up_to_1_36(kubelet, qos, factor):
    """defaults.go: memoryThrottlingFactor 0.9 in 1.34-1.36, no default in 1.37 (docs/kubernetes/versions.md §5)."""
    assert NodeOptions(kubelet_version=kubelet, memory_qos=qos).throttling_factor == factor


@pytest.mark.parametrize("qos,containers,plr", [
    ("BestEffort", [ctr("a")], None),
    ("Burstable", [ctr("a", R("1", None))], None),
    ("Guaranteed", [ctr("a", R("1", "1Gi"), R("1", "1Gi"))], None),
    ("Guaranteed", [ctr("a", {}, R("1", "1Gi"))], None),  # requests default to limits
    ("Burstable", [ctr("a", R("1", "1Gi"), R("1", "1Gi")), ctr("b")], None),
    ("Guaranteed", [ctr("a")], {"limits": R("1", "1Gi")}),
    ("Burstable", [ctr("a")], {"requests": R("1", None)}),
])
def test_qos_class(qos, containers, plr):
    assert qos_class(spec_pod(containers, plr=plr)) == qos


quantities = st.integers(min_value=1, max_value=64000).map(lambda m: f"{m}m")
memories = st.integers(min_value=1, max_value=64 * 1024).map(lambda m: f"{m}Mi")


@st.composite
def dra_pods(draw):
    n = draw(st.integers(min_value=1, max_value=3))
    containers = []
    for i in range(n):
        cpu, mem = draw(st.integers(1, 64000)), draw(st.integers(1, 64 * 1024))
        req = {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}
        # a limit is at least the request, as the API server requires
        lim = ({"cpu": f"{cpu + draw(st.integers(0, 64000))}m", "memory": f"{mem + draw(st.integers(0, 1024))}Mi"}
               if draw(st.booleans()) else {})
        containers.append(ctr(f"c{i}", req, lim, claims=["x"]))
    listed = [c["name"] for c in containers if draw(st.booleans())] or [containers[0]["name"]]
    mapping = {"cpu": draw(quantities)} if draw(st.booleans()) else {}
    overhead = {"memory": (draw(memories), draw(memories))} if draw(st.booleans()) else None
    return spec_pod(containers, entries=[entry("x", listed, mapping or None, overhead)])


@settings(max_examples=60, deadline=None)
@given(dra_pods())
def test_property_pod_limit_covers_every_container_and_dra_keeps_qos(pod):
    with_dra = predict(pod)
    without = predict(pod, kubelet_dra=False)
    assert with_dra.qos_class == without.qos_class == qos_class(pod)
    assert with_dra.pod.path == without.pod.path
    pod_cpu = with_dra.pod.files["cpu.max"].split()[0]
    pod_mem = with_dra.pod.files["memory.max"]
    for c in with_dra.containers:
        if pod_cpu != "max":
            assert c.files["cpu.max"].split()[0] != "max" and int(c.files["cpu.max"].split()[0]) <= int(pod_cpu)
        if pod_mem != "max":
            assert c.files["memory.max"] != "max" and int(c.files["memory.max"]) <= int(pod_mem)
        assert c.files["cpu.weight"] == next(x for x in without.containers if x.name == c.name).files["cpu.weight"]
    assert pod_limits(pod, entries_of(pod)).keys() >= pod_limits(pod).keys()


def test_memory_qos_without_a_limit_uses_node_allocatable():
    pod = spec_pod([ctr("c", {"cpu": "1", "memory": "1Gi"})])
    assert "memory.high" not in container_files(pod, "c", memory_qos="legacy")
    files = container_files(pod, "c", memory_qos="legacy", node_allocatable_memory=11 * GI)
    assert files["memory.high"] == str((GI + int(Q("0.9").as_fraction() * 10 * GI)) // 4096 * 4096)


# ---- static CPU manager, cpuCFSQuota and CFS period (docs/kubernetes/node-state.md §2, §7) ----------------

def static(pod, **options):
    return predict(pod, cpu_manager_policy="static", **options)


def test_worked_example_a_static_policy():
    """Worked example A (docs/kubernetes/node-state.md §2.8): Guaranteed, app 2 CPUs (exclusive) + side 500m
    (shared)."""
    pod = spec_pod([ctr("app", R("2", "1Gi"), R("2", "1Gi")), ctr("side", R("500m", "256Mi"), R("500m", "256Mi"))])
    gate_on = static(pod)
    files = {c.name: c.files for c in gate_on.containers}
    assert gate_on.pod.files["cpu.max"] == "max 100000" and gate_on.pod.files["memory.max"] == "1342177280"
    assert files["app"]["cpu.max"] == "max 100000" and files["side"]["cpu.max"] == "50000 100000"
    assert gate_on.exclusive_cpus == {"app": ""}
    # weights are unchanged by exclusivity: pod 2560 shares linear 98; containers quadratic 174 and 59
    assert (gate_on.pod.files["cpu.weight"], files["app"]["cpu.weight"], files["side"]["cpu.weight"]) == ("98", "174", "59")
    # the same pod under the none policy ("gate off / 1.32" column): every quota stays
    none = predict(pod)
    assert none.pod.files["cpu.max"] == "250000 100000"
    assert {c.name: c.files["cpu.max"] for c in none.containers} == {"app": "200000 100000", "side": "50000 100000"}


def test_upstream_cpu_manager_e2e_only_the_exclusive_container_loses_its_quota():
    """test/e2e_node/cpu_manager_test.go: 500m + 1 CPU, gate on -> pod max, 50000, max."""
    pod = spec_pod([ctr("frac", R("500m", "100Mi"), R("500m", "100Mi")), ctr("whole", R("1", "100Mi"), R("1", "100Mi"))])
    result = static(pod)
    assert result.pod.files["cpu.max"] == "max 100000"
    assert {c.name: c.files["cpu.max"] for c in result.containers} == {"frac": "50000 100000", "whole": "max 100000"}


def test_exclusive_cpus_need_guaranteed_whole_cpus_and_no_pod_level_resources():
    init_only = spec_pod([ctr("app", R("500m", "1Gi"), R("500m", "1Gi"))],
                         init=[ctr("warm", R("1", "1Gi"), R("1", "1Gi"))])
    result = static(init_only)  # an init container with whole CPUs puts the pod at max
    assert result.pod.files["cpu.max"] == "max 100000" and result.exclusive_cpus == {"warm": ""}
    assert [c.files["cpu.max"] for c in result.containers] == ["max 100000", "50000 100000"]
    burstable = spec_pod([ctr("app", R("2", "1Gi"), R("2", "2Gi"))])
    assert static(burstable).exclusive_cpus == {} and static(burstable).pod.files["cpu.max"] == "200000 100000"
    fractional = spec_pod([ctr("app", R("1500m", "1Gi"), R("1500m", "1Gi"))])
    assert static(fractional).exclusive_cpus == {}
    # PodLevelResourceManagers is off by default in 1.37: the static policy skips pod-level pods
    plr = spec_pod([ctr("app", R("2", "1Gi"), R("2", "1Gi"))], plr={"requests": R("2", "1Gi"), "limits": R("2", "1Gi")})
    assert static(plr).exclusive_cpus == {} and static(plr).pod.files["cpu.max"] == "200000 100000"


def test_exact_assignments_win_over_the_policy_rule():
    """From cpu_manager_state: a container is exclusive iff its entry holds a cpuset."""
    pod = spec_pod([ctr("app", R("2", "1Gi"), R("2", "1Gi")), ctr("side", R("500m", "256Mi"), R("500m", "256Mi"))])
    options = NodeOptions(hugepage_sizes=[], cpu_manager_policy="static")
    none_pinned = predict_pod(pod, [], options, {})  # admitted before the policy changed: nothing pinned
    assert none_pinned.pod.files["cpu.max"] == "250000 100000" and none_pinned.exclusive_cpus == {}
    pinned = predict_pod(pod, [], options, {"app": "1-2"}, explain=True)
    assert pinned.exclusive_cpus == {"app": "1-2"} and "exclusive CPUs 1-2" in pinned.containers[0].because["cpu.max"]


SHAPES = {
    "dra": lambda: spec_pod([ctr("app", R("2", "1Gi"), R("3", "2Gi"), claims=["x"]), ctr("side", R("500m", "256Mi"))],
                            entries=[entry("x", ["app"], {"cpu": "1"}, {"memory": ("1Gi", "512Mi")})]),
    "hugepages": lambda: spec_pod([ctr("c", {"hugepages-2Mi": "4Mi", "cpu": "1", "memory": "1Gi"},
                                       {"hugepages-2Mi": "4Mi", "cpu": "1", "memory": "1Gi"}), ctr("d", R("1", "1Gi"))],
                                  init=[ctr("i", {"hugepages-1Gi": "1Gi", "memory": "2Gi"}, {"hugepages-1Gi": "1Gi"})]),
    "pod-level": lambda: spec_pod([ctr("a", R("1", "1Gi")), ctr("b", {})],
                                  plr={"limits": {"cpu": "4", "memory": "8Gi", "hugepages-2Mi": "8Mi"}}),
    "dra-hugepages": lambda: spec_pod([ctr("a", R("1", "1Gi"), R("1", "1Gi"), claims=["x"])],
                                      entries=[entry("x", ["a"], {"hugepages-2Mi": "2Mi"}, {})]),
    "odd-name": lambda: spec_pod([ctr("a", {"cpu": "1", "example.com/hugepages-x": "1"},
                                      {"cpu": "1", "example.com/hugepages-x": "1"})]),
}


@pytest.mark.parametrize("options", [{}, {"runtime": "crio"}, {"hugepage_sizes": []}, {"memory_qos": "tiered"}],
                         ids=["containerd", "crio", "no-hugepages", "memory-qos"])
@pytest.mark.parametrize("shape", SHAPES)
def test_reasons_only_when_asked_and_the_values_do_not_depend_on_it(shape, options):
    """The agent asks for values only; explain pod for the reasons too. Same files, in the same
    order, either way (the values-only path sets pages-free hugetlb files in one step)."""
    pod = SHAPES[shape]()
    options = NodeOptions(**options)
    bare, told = predict_pod(pod, entries_of(pod), options), predict_pod(pod, entries_of(pod), options, explain=True)
    assert list(bare.pod.files.items()) == list(told.pod.files.items())
    assert [list(c.files.items()) for c in bare.containers] == [list(c.files.items()) for c in told.containers]
    assert [c.cri_hugepages for c in bare.containers] == [c.cri_hugepages for c in told.containers]
    assert bare.pod.because == {} and all(c.because == {} for c in bare.containers)
    assert set(told.pod.because) == set(told.pod.files)
    assert all(set(c.because) == set(c.files) and all(c.because.values()) for c in told.containers)


def test_worked_example_d_cfs_period_and_quota_switch():
    """Worked example D (docs/kubernetes/node-state.md §7): cpuCFSQuotaPeriod 50ms, exclusive CPUs, cpuCFSQuota
    false."""
    half = spec_pod([ctr("a", R("500m", "100Mi"), R("500m", "100Mi")), ctr("b", R("500m", "100Mi"), R("500m", "100Mi"))])
    tuned = predict(half, cpu_cfs_period=50000)
    assert tuned.pod.files["cpu.max"] == "50000 50000" and tuned.containers[0].files["cpu.max"] == "25000 50000"
    whole = spec_pod([ctr("a", R("500m", "100Mi"), R("500m", "100Mi")), ctr("b", R("1", "100Mi"), R("1", "100Mi"))])
    pinned = static(whole, cpu_cfs_period=50000)
    assert pinned.pod.files["cpu.max"] == "max 50000" and pinned.containers[1].files["cpu.max"] == "max 50000"
    off = predict(half, cpu_cfs_quota=False)
    assert off.pod.files["cpu.max"] == "max 100000" and {c.files["cpu.max"] for c in off.containers} == {"max 100000"}
    off_tuned = predict(half, cpu_cfs_quota=False, cpu_cfs_period=50000)
    # the pod gets quota -1 with the kubelet's period; containers get nothing, so the kernel default shows
    assert off_tuned.pod.files["cpu.max"] == "max 50000" and off_tuned.containers[0].files["cpu.max"] == "max 100000"


def test_pod_level_hugepages_are_inherited_by_containers_without_their_own():
    """GetHugepageLimitsFromResources (1.37): pod-level limit, own limit over it, DRA cases A/B/C."""
    pod = spec_pod([ctr("own", R("1", "1Gi"), {"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "4Mi"}, claims=["x"]),
                    ctr("bare", R("1", "1Gi"), claims=["x"]), ctr("none", R("1", "1Gi"))],
                   plr={"requests": {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "10Mi"},
                        "limits": {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "10Mi"}},
                   entries=[entry("x", ["own", "bare"], {"hugepages-2Mi": "2Mi", "hugepages-1Gi": "1Gi"})])
    files = {c.name: c.files for c in predict(pod, hugepage_sizes=[2 * MI, GI], runtime_hugetlb=True).containers}
    assert files["own"]["hugetlb.2MB.max"] == str(6 * MI)  # case A: own limit + DRA
    assert files["bare"]["hugetlb.2MB.max"] == str(10 * MI)  # case C: the pod-level limit, DRA not added
    assert files["bare"]["hugetlb.1GB.max"] == str(GI)  # case B: no limit at either level -> the DRA amount
    assert files["none"]["hugetlb.2MB.max"] == str(10 * MI) and files["none"]["hugetlb.1GB.max"] == "0"


def test_memory_qos_reservation_policy_none_protects_nothing():
    """1.36+ default memoryReservationPolicy None: containers get memory.min = memory.low = 0 and the
    pod no protection; with a throttling factor, memory.high is set where request != limit
    (kuberuntime_container_linux.go)."""
    pod = spec_pod([ctr("c", {"cpu": "1", "memory": "1Gi"}, {"memory": "2Gi"}),
                    ctr("flat", {"cpu": "1", "memory": "1Gi"}, {"memory": "1Gi"})])
    prediction = predict(pod, memory_qos="none", memory_throttling_factor="0.9")
    files = {c.name: c.files for c in prediction.containers}
    assert (files["c"]["memory.min"], files["c"]["memory.low"]) == ("0", "0")
    assert files["c"]["memory.high"] == str(int(Q("1.9Gi").value()) // 4096 * 4096)
    assert "memory.high" not in files["flat"]  # request == limit: nothing to throttle before the limit
    assert not {"memory.min", "memory.low", "memory.high"} & set(prediction.pod.files)


def test_memory_qos_without_a_throttling_factor_sets_no_memory_high():
    """The 1.37 kubelet's memoryThrottlingFactor defaults to nil, and then it writes no memory.high
    (kuberuntime_container_linux.go "m.memoryThrottlingFactor != nil"; pod_container_manager_linux.go).
    Confirmed on a real v1.37.2 kubelet with the MemoryQoS gate on (tests/node): every container and
    pod reads memory.high "max". Kubelets before 1.36 defaulted to 0.9 (legacy)."""
    pod = spec_pod([ctr("c", {"cpu": "1", "memory": "1Gi"}, {"memory": "2Gi"}), ctr("none", {"cpu": "1"})],
                   plr={"requests": {"memory": "1Gi"}, "limits": {"memory": "3Gi"}})
    for qos in ("none", "tiered"):
        prediction = predict(pod, memory_qos=qos, node_allocatable_memory=8 * GI)
        assert not any("memory.high" in c.files for c in prediction.containers), qos
        assert "memory.high" not in prediction.pod.files
    legacy = predict(pod, memory_qos="legacy", node_allocatable_memory=8 * GI)
    assert "memory.high" in next(c for c in legacy.containers if c.name == "c").files


def test_memory_qos_node_allocatable_is_the_nodes_capacity():
    """A container without a memory limit gets memory.high from the kubelet's node allocatable, which
    is capacity minus kube- and system-reserved (GetNodeAllocatableAbsolute): huge pages and the
    eviction threshold are not subtracted. The real v1.37.2 kubelet wrote 3692515328 = floor(0.9 x
    capacity 4102795264, whole pages) on a node whose status.allocatable was 2842406912."""
    from kubectl_dra.cgroups.options import resolve
    from kubectl_dra.model.node import Node

    node = Node.model_validate({"metadata": {"name": "n"}, "status": {
        "capacity": {"memory": "4006636Ki", "hugepages-1Gi": "1Gi", "hugepages-2Mi": "128Mi"},
        "allocatable": {"memory": "2775788Ki"}}})
    options, sources = resolve({"memory_qos": "tiered", "memory_throttling_factor": "0.9"}, node)
    assert options.node_allocatable_memory == 4102795264
    assert "status.capacity" in sources["nodeAllocatableMemory"] and "assumed none" in sources["nodeAllocatableMemory"]
    pod = spec_pod([ctr("app")])
    assert predict_pod(pod, [], options).containers[0].files["memory.high"] == "3692515328"


def test_container_hugetlb_files_stay_max_when_the_runtime_does_not_apply_them():
    """containerd's CRI skips container hugepage limits by default (disable_hugetlb_controller = true):
    the kubelet still sends every host size (0 when not requested), but nothing is written, so the
    files read max. A real containerd 2.4.2 node showed exactly that for every container, .rsvd.max
    included; with disable_hugetlb_controller = false it wrote the kubelet's values (tests/node)."""
    pod = spec_pod([ctr("c", {"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "8Mi"},
                        {"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "8Mi"}), ctr("plain")])
    for explain in (True, False):
        prediction = predict_pod(pod, [], NodeOptions(hugepage_sizes=[2 * MI, GI]), explain=explain)
        for c in prediction.containers:
            assert {k: v for k, v in c.files.items() if k.startswith("hugetlb.")} == dict.fromkeys(
                ("hugetlb.2MB.max", "hugetlb.2MB.rsvd.max", "hugetlb.1GB.max", "hugetlb.1GB.rsvd.max"), "max")
        asked = {c.name: c.cri_hugepages for c in prediction.containers}
        assert asked["c"]["hugetlb.2MB.max"] == str(8 * MI) and asked["c"]["hugetlb.1GB.max"] == "0"
        assert asked["plain"]["hugetlb.2MB.max"] == "0"
        assert prediction.pod.files["hugetlb.2MB.max"] == str(8 * MI)  # the kubelet writes the pod's itself
    applied = predict_pod(pod, [], NodeOptions(hugepage_sizes=[2 * MI, GI], runtime_hugetlb=True))
    assert applied.containers[0].files["hugetlb.2MB.rsvd.max"] == str(8 * MI)
    assert applied.containers[1].files["hugetlb.1GB.max"] == "0"
