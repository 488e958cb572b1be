"""The claims table an SRE reads: reservation lists (up to 256 entries) in -o wide only, pods of
the same name told apart, the node-allocatable column with overhead, and ``--sort-by findings``
in every output."""

from __future__ import annotations

import pytest
import yaml
from builders import claim, pod, reserved_pod, resource_slice, uid

GPU = "gpu.example.com"


def write(tmp_path, objects):
    (tmp_path / "objects.yaml").write_text(yaml.safe_dump_all(objects))
    return str(tmp_path)


@pytest.fixture
def crowded(tmp_path):
    """A shared claim reserved for 250 pods: the cell would be 3,500 characters."""
    pods = [pod(f"worker-{i:03d}", claims={"g": "shared"}) for i in range(250)]
    shared = claim("shared", devices=[(GPU, "worker-1", "gpu-0")], reserved_for=[reserved_pod(p) for p in pods])
    return write(tmp_path, [*pods, shared, resource_slice("worker-1", GPU, ["gpu-0"])])


def test_reservations_are_left_to_wide_in_the_table(crowded, dra):
    """The default view stays as narrow as kubectl get's: STATE says "reserved", -o wide says by whom."""
    result = dra("claims", "-n", "ml", "--snapshot", crowded)
    assert result.exit_code == 0, result
    assert result.stdout.splitlines()[0].split() == ["NAME", "STATE", "NODE", "DEVICES", "AGE"]
    assert result.stdout.splitlines()[1].split() == ["shared", "allocated,reserved", "worker-1", "gpu-0", "2d4h"]
    assert max(map(len, result.stdout.splitlines())) < 120


def test_wide_cuts_the_list_and_json_keeps_every_reservation(crowded, dra):
    """Issue 37 item 23: the wide row listed all 250 (14,651 characters); cut as kubectl's
    Endpoints printer cuts, and -o json keeps them all."""
    wide = dra("claims", "-n", "ml", "--snapshot", crowded, "-o", "wide", "--no-headers")
    fields = wide.stdout.split()
    assert fields[4].split(",") == [f"pod/worker-{i:03d}" for i in range(5)] and fields[5:8] == ["+", "245", "more..."]
    assert max(map(len, wide.stdout.splitlines())) < 300
    doc = dra("claims", "-n", "ml", "--snapshot", crowded, "-o", "json").json()
    assert len(doc["items"][0]["reservedFor"]) == 250


def test_pods_of_the_same_name_are_told_apart(tmp_path, dra):
    """A StatefulSet pod replaced while the old one's reservation is still there."""
    old = pod("web-0", claims={"g": "c"}, pod_uid=uid("web-0/old"))
    new = pod("web-0", claims={"g": "c"}, pod_uid=uid("web-0/new"))
    other = pod("web-1", claims={"g": "c"})
    snap = write(tmp_path, [new, other, resource_slice("worker-1", GPU, ["gpu-0"]),
                            claim("c", devices=[(GPU, "worker-1", "gpu-0")],
                                  reserved_for=[reserved_pod(old), reserved_pod(new), reserved_pod(other)])])
    result = dra("claims", "-n", "ml", "--snapshot", snap, "-o", "json")
    assert result.json()["items"][0]["reservedFor"] == [
        f"pod/web-0({uid('web-0/old')[:8]})", f"pod/web-0({uid('web-0/new')[:8]})", "pod/web-1"]
    table = dra("claims", "-n", "ml", "--snapshot", snap, "--no-headers", "-o", "wide")
    assert table.stdout.split()[4] == f"pod/web-0({uid('web-0/old')[:8]}),pod/web-0({uid('web-0/new')[:8]}),pod/web-1"


def test_wide_node_allocatable_shows_mappings_and_overhead(tmp_path, dra):
    device = {"name": "cpudevnuma000", "allowMultipleAllocations": True,
              "capacity": {"dra.cpu/cpu": {"value": "32"}},
              "nodeAllocatableResources": {
                  "cpu": {"mapping": {"capacityKey": "dra.cpu/cpu", "capacityMultiplier": "1"}},
                  "memory": {"overhead": {"perPod": "1Gi", "perContainer": "512Mi"}}}}
    p = pod("trainer", claims={"cpus": "cpus"})
    snap = write(tmp_path, [p, resource_slice("worker-1", "dra.cpu", [device]),
                            claim("cpus", devices=[("dra.cpu", "worker-1", "cpudevnuma000")],
                                  consumed={"dra.cpu/cpu": "10"}, reserved_for=[reserved_pod(p)])])
    result = dra("claims", "-n", "ml", "--snapshot", snap, "-o", "wide")
    header = result.stdout.splitlines()[0].split()
    row = result.stdout.splitlines()[1].split()
    assert row[header.index("NODE-ALLOCATABLE")] == "cpu=10,memory/pod=1Gi,memory/container=512Mi"
    item = dra("claims", "-n", "ml", "--snapshot", snap, "-o", "json").json()["items"][0]
    assert item["nodeAllocatable"] == {"cpu": "10"}
    assert item["nodeAllocatableOverhead"] == {"memory": {"perPod": "1Gi", "perContainer": "512Mi"}}


def test_sort_by_findings_works_in_the_plain_table(tmp_path, dra):
    """Findings are only computed for the detailed view; sorting by them must ask for it."""
    live = pod("live", claims={"g": "healthy"})
    snap = write(tmp_path, [live, resource_slice("worker-1", GPU, ["gpu-0", "gpu-1"]),
                            claim("a-stale", devices=[(GPU, "worker-1", "gpu-0")],
                                  reserved_for=[{"resource": "pods", "name": "gone", "uid": uid("gone")}]),
                            claim("healthy", devices=[(GPU, "worker-1", "gpu-1")], reserved_for=[reserved_pod(live)])])
    names = [line.split()[0] for line in
             dra("claims", "-n", "ml", "--snapshot", snap, "--sort-by", "findings", "--no-headers").stdout.splitlines()]
    assert names == ["healthy", "a-stale"]  # fewest findings first, as the wide view sorts
    wide = [line.split()[0] for line in dra("claims", "-n", "ml", "--snapshot", snap, "--sort-by", "findings",
                                            "-o", "wide", "--no-headers").stdout.splitlines()]
    assert wide == names
