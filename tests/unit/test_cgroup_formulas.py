"""Unit conversions against the reference vectors
(docs/kubernetes/kubelet-cgroups.md §3, §5.1, §5.2, §5.10, §5.11)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubectl_dra.cgroups import formulas as f
from kubectl_dra.cgroups.paths import container_cgroup, pod_cgroup, qos_cgroup


@pytest.mark.parametrize("milli,shares", [(0, 2), (1, 2), (2, 2), (3, 3), (100, 102), (500, 512), (1000, 1024),
                                          (255999, 262142), (256000, 262144), (256001, 262144), (1000000, 262144),
                                          (-1, 2), (-1000000, 2), (300, 307)])
def test_milli_cpu_to_shares(milli, shares):
    assert f.milli_cpu_to_shares(milli) == shares


@pytest.mark.parametrize("shares,milli", [(0, 0), (1, 0), (2, 2), (3, 3), (102, 100), (512, 500), (1024, 1000),
                                          (262144, 256000), (-1, 0)])
def test_shares_to_milli_cpu(shares, milli):
    assert f.shares_to_milli_cpu(shares) == milli


@pytest.mark.parametrize("milli", [100, 250, 500, 1000, 2000, 4000])
def test_shares_round_trip(milli):
    assert f.shares_to_milli_cpu(f.milli_cpu_to_shares(milli)) == milli


@pytest.mark.parametrize("milli,period,quota", [(0, 100000, 0), (5, 100000, 1000), (9, 100000, 1000),
                                                (10, 100000, 1000), (200, 100000, 20000), (500, 100000, 50000),
                                                (1000, 100000, 100000), (1500, 100000, 150000), (200, 5000, 1000),
                                                (10001, 100000, 1000100)])
def test_milli_cpu_to_quota(milli, period, quota):
    assert f.milli_cpu_to_quota(milli, period) == quota


@pytest.mark.parametrize("quota,period,milli", [(-1, 100000, 0), (0, 100000, 0), (1000, 100000, 10),
                                                (5000, 100000, 50), (50000, 100000, 500), (100000, 100000, 1000),
                                                (200000, 100000, 2000), (5000, 5000, 1000), (1, 100000, 0),
                                                (100, 100000, 1)])
def test_quota_to_milli_cpu(quota, period, milli):
    assert f.quota_to_milli_cpu(quota, period) == milli


@pytest.mark.parametrize("shares,linear,quadratic", [
    (2, 1, 1), (3, 1, 2), (51, 2, 11), (102, 4, 17), (256, 10, 35), (512, 20, 59), (1024, 39, 100),
    (2000, 77, 170), (2048, 79, 174), (4096, 157, 303), (5120, 196, 363), (7168, 274, 477), (11264, 430, 691),
    (262143, 9999, 10000), (262144, 10000, 10000),
])
def test_weight_table(shares, linear, quadratic):
    assert f.weight_linear(shares) == linear
    assert f.weight_quadratic(shares) == quadratic


@pytest.mark.parametrize("shares,weight", [(0, 0), (1, 1), (2, 1), (3, 2), (1024, 100), (262143, 10000),
                                           (262144, 10000), (262145, 10000), (500000, 10000)])
def test_quadratic_runtime_vectors(shares, weight):
    assert f.weight_quadratic(shares) == weight


def test_linear_runtime_vectors():
    assert [f.weight_linear(s) for s in (0, 2, 262144, 500000)] == [0, 1, 10000, 10000]


@pytest.mark.parametrize("weight,shares", [(1, 2), (2, 28), (3, 54), (4, 80), (245, 6398), (10000, 262144)])
def test_weight_to_shares_read_back(weight, shares):
    assert f.weight_to_shares_linear(weight) == shares


def test_shares_equal_after_v2_round_trip():
    """TestCPUSharesEqualAfterV2RoundTrip: 50m -> 51 shares -> weight 2 -> reads back as 28."""
    assert f.weight_to_shares_linear(f.weight_linear(f.milli_cpu_to_shares(50))) == 28
    assert f.weight_to_shares_linear(f.weight_linear(f.milli_cpu_to_shares(100))) == 80


@pytest.mark.parametrize("quota,period,written", [(500000, 1000000, 500000), (123456, 100000, 124000),
                                                  (500000, 900000, 504000), (41700, 100000, 42000),
                                                  (409600, 100000, 410000), (100000, 100000, 100000)])
def test_systemd_quota_rounding(quota, period, written):
    assert f.systemd_rounded_quota(quota, period) == written


@pytest.mark.parametrize("size,name", [(2097152, "2MB"), (1073741824, "1GB"), (65536, "64KB"), (512, "512B"),
                                       (1 << 40, "1TB")])
def test_hugepage_names(size, name):
    assert f.hugepage_size_name(size) == name


@given(st.integers(min_value=0, max_value=300000), st.integers(min_value=0, max_value=300000))
def test_weights_are_monotone_in_shares(a, b):
    lo, hi = sorted((a, b))
    for formula in (f.weight_linear, f.weight_quadratic):
        assert formula(lo) <= formula(hi)
        assert 0 <= formula(hi) <= 10000


@given(st.integers(min_value=1, max_value=10**7), st.sampled_from([1000, 5000, 100000, 1000000]))
def test_quota_never_below_kernel_minimum(milli, period):
    assert f.milli_cpu_to_quota(milli, period) >= 1000


def test_page_rounding():
    assert f.page_rounded(10**9) == 999997440


# -- paths (docs/kubernetes/kubelet-cgroups.md §4) -----------------------------------------------------------

UID = "abc123-def456"


@pytest.mark.parametrize("qos,driver,root,path", [
    ("Guaranteed", "systemd", "/", "kubepods.slice/kubepods-podabc123_def456.slice"),
    ("Burstable", "systemd", "/", "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabc123_def456.slice"),
    ("BestEffort", "systemd", "/",
     "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podabc123_def456.slice"),
    ("Guaranteed", "cgroupfs", "/", "kubepods/podabc123-def456"),
    ("Burstable", "cgroupfs", "/", "kubepods/burstable/podabc123-def456"),
    ("BestEffort", "cgroupfs", "/", "kubepods/besteffort/podabc123-def456"),
    ("Burstable", "systemd", "/kubelet",
     "kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
     "kubelet-kubepods-burstable-podabc123_def456.slice"),
    ("Guaranteed", "cgroupfs", "/custom", "custom/kubepods/podabc123-def456"),
])
def test_pod_cgroup_paths(qos, driver, root, path):
    assert pod_cgroup(qos, UID, driver, root) == path


def test_qos_parents():
    assert qos_cgroup("Guaranteed", "systemd") == "kubepods.slice"
    assert qos_cgroup("Burstable", "cgroupfs") == "kubepods/burstable"
    assert qos_cgroup("Guaranteed", "cgroupfs", "/custom") == "custom/kubepods"


@pytest.mark.parametrize("driver,runtime,leaf", [("systemd", "containerd", "cri-containerd-0abc.scope"),
                                                 ("systemd", "crio", "crio-0abc.scope"),
                                                 ("cgroupfs", "containerd", "0abc"), ("cgroupfs", "crio", "crio-0abc")])
def test_container_leaves(driver, runtime, leaf):
    assert container_cgroup("P", "0abc", driver, runtime) == f"P/{leaf}"
