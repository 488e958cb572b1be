"""Real kernel cgroups and network namespaces, where this machine allows them (root); skipped
cleanly elsewhere."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.verify.compare import equivalent
from kubectl_dra.nodescan.cgroupfs import CgroupFS

pytestmark = pytest.mark.kernel


def unified_mount() -> Path | None:
    for candidate in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
        controllers = candidate / "cgroup.controllers"
        if controllers.exists() and "hugetlb" in controllers.read_text().split():
            return candidate
    return None


@pytest.fixture
def hugetlb_cgroup():
    root = unified_mount()
    if root is None or os.geteuid() != 0:
        pytest.skip("needs root and a cgroup v2 hierarchy with the hugetlb controller")
    if not any(Path("/sys/kernel/mm/hugepages").glob("hugepages-2048kB")):
        pytest.skip("no 2 MiB huge pages on this kernel")
    try:
        if "hugetlb" not in (root / "cgroup.subtree_control").read_text().split():
            (root / "cgroup.subtree_control").write_text("+hugetlb")
        child = root / f"kubectl-dra-test-{os.getpid()}"
        child.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot create a cgroup here: {exc}")
    try:
        yield root, child
    finally:
        child.rmdir()


def test_kernel_rounds_hugetlb_limits_and_the_reader_accepts_it(hugetlb_cgroup):
    root, child = hugetlb_cgroup
    (child / "hugetlb.2MB.max").write_text(str(3 << 20))  # 1.5 huge pages
    observed = CgroupFS(root).read(child.name, ["hugetlb.2MB.max", "hugetlb.2MB.rsvd.max", "cpu.weight"])
    assert observed.error is None
    assert observed.files["hugetlb.2MB.max"] == str(2 << 20)  # the kernel keeps whole huge pages
    assert observed.files["cpu.weight"] is None or observed.files["cpu.weight"].isdigit()
    assert equivalent("hugetlb.2MB.max", str(3 << 20), observed.files["hugetlb.2MB.max"], NodeOptions())
    assert not equivalent("hugetlb.2MB.max", str(5 << 20), observed.files["hugetlb.2MB.max"], NodeOptions())
    rsvd = observed.files["hugetlb.2MB.rsvd.max"]
    if rsvd is not None:  # kernels >= 5.7; unset, it reads "max" or the page counter's ceiling
        assert rsvd == "max" or int(rsvd) >= 1 << 62
    assert CgroupFS(root).read(f"{child.name}/gone", ["hugetlb.2MB.max"]).error == \
        f"cgroup {child.name}/gone does not exist"


@pytest.fixture
def netns_with_veth():
    if os.geteuid() != 0 or subprocess.run(["ip", "-V"], capture_output=True).returncode != 0:
        pytest.skip("needs root and iproute2")
    name = f"dra-test-{os.getpid()}"
    host_if, pod_if = f"drah{os.getpid() % 10000}", f"drap{os.getpid() % 10000}"
    try:
        subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot create a network namespace: {exc.stderr.decode().strip()}")
    try:
        subprocess.run(["ip", "link", "add", host_if, "type", "veth", "peer", "name", pod_if], check=True,
                       capture_output=True)
        subprocess.run(["ip", "link", "set", pod_if, "netns", name], check=True, capture_output=True)
        yield name, host_if, pod_if
    finally:
        subprocess.run(["ip", "link", "del", host_if], capture_output=True)
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def test_interfaces_seen_in_a_real_network_namespace(netns_with_veth):
    from node_agent.netns import interfaces

    name, host_if, pod_if = netns_with_veth
    inside = interfaces(f"/var/run/netns/{name}")
    host = interfaces()
    assert pod_if in inside and pod_if not in host  # moved into the namespace
    assert host_if in host and host_if not in inside  # its peer stayed in the host
    assert "lo" in inside
