"""dra-node-agent scan: real directory trees written from the prediction, then perturbed; each
cause must be recognised, each tolerance must hold, and an untouched tree must match."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cgroup_tree import build_tree, set_file
from click.testing import CliRunner
from agentpods import NODE, NODE_OBJECT, agent_pod, both, node_pods
from podspec import ctr

from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.kube.snapshot import load_snapshot
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.registry import parse_object
from node_agent.__main__ import cli as agent_cli
from kubectl_dra.nodescan.cgroupfs import CgroupFS
from kubectl_dra.nodescan.scan import pods_on, scan

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster"
def inventory_of(pods):
    inv = Inventory()
    inv.extend(pods)
    return inv


def make(tmp_path, driver="systemd", runtime="containerd", formula="quadratic", runtime_hugetlb=True, **more):
    """A node whose runtime applies container hugepage limits unless told otherwise (containerd with
    disable_hugetlb_controller = false), so each test sees only what it plants."""
    pods = node_pods(runtime)
    options = NodeOptions(cgroup_driver=driver, runtime=runtime, weight_formula=formula, hugepage_sizes=[2 << 20, 1 << 30],
                          runtime_hugetlb=runtime_hugetlb, **more)
    dirs = build_tree(tmp_path, pods, options)
    return pods, dirs, CgroupFS(tmp_path / "fs" / "cgroup")


def verdicts(report):
    return {p.name: p.verdict for p in report.status.pods}


def causes(report, pod):
    return sorted((d.container or "pod", d.file, d.cause) for d in next(p for p in report.status.pods
                                                                        if p.name == pod).divergences)


@pytest.mark.parametrize("driver", ["systemd", "cgroupfs"])
@pytest.mark.parametrize("runtime", ["containerd", "crio"])
def test_untouched_tree_matches_and_layout_is_detected(tmp_path, driver, runtime):
    pods, _, fs = make(tmp_path, driver, runtime)
    report = scan(NODE, inventory_of(pods), fs, {})
    assert verdicts(report) == {"besteffort": "Match", "burstable": "Match", "guaranteed": "Match", "pod-level": "Match"}
    assert (report.status.cgroup_driver, report.status.runtime) == (driver, runtime)
    assert report.status.summary.model_dump() == {"pods": 4, "matched": 4, "diverged": 0, "unknown": 0, "claims": 0, "claim_findings": 0}


def test_kubelet_without_dra(tmp_path):
    pods, dirs, fs = make(tmp_path)
    # the whole pod as a kubelet without DRANodeAllocatableResources writes it
    burstable = pods[1]
    no_dra = build_tree(tmp_path / "other", [burstable], NodeOptions(kubelet_dra=False))
    for key in [("burstable", None), ("burstable", "encoder"), ("burstable", "reranker")]:
        for name in ("memory.max",):
            set_file(dirs[key], name, (no_dra[key] / name).read_text().strip())
    report = scan(NODE, inventory_of(pods), fs, {})
    # the pod memory.max stays "max" either way: the init container "fetch" declares no memory limit
    assert causes(report, "burstable") == [("encoder", "memory.max", "KubeletDRADisabled"),
                                           ("reranker", "memory.max", "KubeletDRADisabled")]
    assert verdicts(report)["burstable"] == "Diverged"


def test_one_container_lacks_its_dra_overhead(tmp_path):
    pods, dirs, fs = make(tmp_path)
    set_file(dirs[("burstable", "encoder")], "memory.max", str(8 << 30))
    report = scan(NODE, inventory_of(pods), fs, {})
    [d] = next(p for p in report.status.pods if p.name == "burstable").divergences
    assert (d.container, d.file, d.expected, d.observed, d.cause, d.severity) == (
        "encoder", "memory.max", str((8 << 30) + (1 << 30) + (512 << 20)), str(8 << 30), "DRAAmountMissing", "error")


def test_weight_formula_detected_from_the_tree(tmp_path):
    pods, _, fs = make(tmp_path, formula="linear")  # an older runc wrote every container weight
    report = scan(NODE, inventory_of(pods), fs, {})
    assert set(verdicts(report).values()) == {"Match"} and report.status.weight_formula == "linear"
    flagged = scan(NODE, inventory_of(pods), fs, {"weight_formula": "quadratic"})
    weights = [d for p in flagged.status.pods for d in p.divergences]
    assert weights and all((d.file, d.cause, d.severity) == ("cpu.weight", "WeightFormula", "info") for d in weights)
    assert set(verdicts(flagged).values()) == {"Match"}  # info only: the runtime's formula is a tolerance


def test_a_changed_container_value_needs_evidence_to_be_excused(tmp_path):
    """DriverOverride only where something shows an override happened; otherwise Unexplained."""
    pods, dirs, fs = make(tmp_path, cpu_manager_policy="none")
    engine = dirs[("guaranteed", "engine")]
    set_file(engine, "cpu.max", "max 100000")  # quota gone, pod bound intact
    set_file(engine, "cpuset.cpus", "")  # what the kubelet sets under the none policy
    report = scan(NODE, inventory_of(pods), fs, {"cpu_manager_policy": "none"})
    assert causes(report, "guaranteed") == [("engine", "cpu.max", "Unexplained")]
    [d] = next(p for p in report.status.pods if p.name == "guaranteed").divergences
    assert d.severity == "warning" and "nothing shows a driver or NRI plugin changed it" in d.message
    assert verdicts(report)["guaranteed"] == "Diverged"
    # an NRI plugin or DRA CPU driver pinned the container: the kubelet sets no cpuset under none
    set_file(engine, "cpuset.cpus", "4-7")
    report = scan(NODE, inventory_of(pods), fs, {"cpu_manager_policy": "none"})
    [d] = next(p for p in report.status.pods if p.name == "guaranteed").divergences
    assert (d.cause, d.severity) == ("DriverOverride", "info") and "cpuset.cpus is 4-7, the kubelet set none" in d.message
    assert verdicts(report)["guaranteed"] == "Match"
    # the policy only assumed (default): a cpuset proves nothing, the divergence stays
    assert causes(scan(NODE, inventory_of(pods), fs, {}), "guaranteed") == [("engine", "cpu.max", "Unexplained")]


def test_pod_level_fallback_not_applied(tmp_path):
    pods, dirs, fs = make(tmp_path)
    set_file(dirs[("pod-level", "a")], "memory.max", "max")
    report = scan(NODE, inventory_of(pods), fs, {})
    assert causes(report, "pod-level") == [("a", "memory.max", "PodLevelResources")]
    assert verdicts(report)["pod-level"] == "Diverged"


def test_resize_in_progress(tmp_path):
    pods, dirs, fs = make(tmp_path)
    raw = pods[1].raw
    raw["status"]["conditions"] = [{"type": "PodResizeInProgress", "status": "True"}]
    pods[1] = parse_object(raw)
    set_file(dirs[("burstable", "reranker")], "cpu.max", "300000 100000")
    report = scan(NODE, inventory_of(pods), fs, {})
    assert causes(report, "burstable") == [("reranker", "cpu.max", "ResizePending")]


def test_resize_pending_from_an_older_kubelet(tmp_path):
    """Kubelets before 1.33 say so in status.resize (deprecated) instead of a condition; the agent
    reads pods without their raw dicts, so the view must carry it."""
    pods, dirs, fs = make(tmp_path)
    raw = pods[1].raw
    raw["status"]["resize"] = "InProgress"
    pods[1] = parse_object(raw, keep_raw=False)
    set_file(dirs[("burstable", "reranker")], "cpu.max", "300000 100000")
    report = scan(NODE, inventory_of(pods), fs, {})
    assert causes(report, "burstable") == [("reranker", "cpu.max", "ResizePending")]


def test_missing_unreadable_and_unexplained(tmp_path):
    pods, dirs, fs = make(tmp_path)
    for child in dirs[("burstable", "reranker")].iterdir():
        child.unlink()
    dirs[("burstable", "reranker")].rmdir()
    set_file(dirs[("guaranteed", None)], "memory.max", "lots")
    set_file(dirs[("besteffort", None)], "cpu.weight", "7")
    report = scan(NODE, inventory_of(pods), fs, {})
    assert verdicts(report) == {"besteffort": "Diverged", "burstable": "Unknown", "guaranteed": "Unknown",
                                "pod-level": "Match"}
    assert causes(report, "burstable") == [("reranker", "-", "CgroupMissing")]
    assert causes(report, "guaranteed") == [("pod", "memory.max", "CgroupUnreadable")]
    assert causes(report, "besteffort")[0][2] == "Unexplained"


def test_pod_cgroup_missing_is_unknown(tmp_path):
    pods, dirs, fs = make(tmp_path)
    import shutil

    shutil.rmtree(dirs[("besteffort", None)])
    report = scan(NODE, inventory_of(pods), fs, {})
    assert verdicts(report)["besteffort"] == "Unknown"
    assert "does not exist" in next(p for p in report.status.pods if p.name == "besteffort").divergences[0].message


def test_tolerances(tmp_path):
    pods, dirs, fs = make(tmp_path)
    hugepages = dirs[("guaranteed", "engine")]
    set_file(hugepages, "hugetlb.2MB.max", str(4 << 20))
    (hugepages / "hugetlb.1GB.rsvd.max").unlink()  # a kernel without reservation files
    report = scan(NODE, inventory_of(pods), fs, {})
    assert verdicts(report)["guaranteed"] == "Match"
    # systemd rounds quotas up to 10 ms per second: 417m -> 42000, accepted only under systemd
    odd = agent_pod("odd", [ctr("c", both("417m", "1G"), both("417m", "1G"))],
                    qos_uid="55555555-5555-5555-5555-555555555555")
    systemd = build_tree(tmp_path / "s", [odd], NodeOptions())
    set_file(systemd[("odd", None)], "cpu.max", "42000 100000")
    set_file(systemd[("odd", None)], "memory.max", "999997440")  # 10^9 bytes, kept in whole pages
    assert verdicts(scan(NODE, inventory_of([odd]), CgroupFS(tmp_path / "s" / "fs" / "cgroup"), {}))["odd"] == "Match"
    cgroupfs = build_tree(tmp_path / "c", [odd], NodeOptions(cgroup_driver="cgroupfs"))
    set_file(cgroupfs[("odd", None)], "cpu.max", "42000 100000")
    assert verdicts(scan(NODE, inventory_of([odd]), CgroupFS(tmp_path / "c" / "fs" / "cgroup"), {}))["odd"] == "Diverged"
    set_file(systemd[("odd", None)], "memory.max", "999993344")  # one page less is a real difference
    assert verdicts(scan(NODE, inventory_of([odd]), CgroupFS(tmp_path / "s" / "fs" / "cgroup"), {}))["odd"] == "Diverged"


def test_cgroup_v1_is_reported_not_crashed(tmp_path):
    (tmp_path / "fs" / "cgroup" / "memory").mkdir(parents=True)
    (tmp_path / "fs" / "cgroup" / "unified").mkdir()
    (tmp_path / "fs" / "cgroup" / "unified" / "cgroup.controllers").write_text("hugetlb\n")
    report = scan(NODE, inventory_of(node_pods()), CgroupFS(tmp_path / "fs" / "cgroup"), {})
    assert report.status.cgroup_version == "hybrid"
    assert set(verdicts(report).values()) == {"Unknown"}
    assert "only cgroup v2 is supported" in report.status.message


def test_this_machines_cgroup_root_is_classified():
    fs = CgroupFS("/sys/fs/cgroup")
    expected = "v2" if Path("/sys/fs/cgroup/cgroup.controllers").exists() else \
        "hybrid" if Path("/sys/fs/cgroup/unified/cgroup.controllers").exists() else fs.version()
    assert fs.version() == expected


def test_hugepage_sizes_from_sysfs(tmp_path):
    make(tmp_path)
    assert CgroupFS(tmp_path / "fs" / "cgroup").hugepage_sizes() == [2 << 20, 1 << 30]


def write_snapshot(tmp_path, pods, node=True):
    import yaml

    path = tmp_path / "pods.yaml"
    items = [p.raw for p in pods] + ([NODE_OBJECT] if node else [])
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def test_cli_scan_once_exit_codes(tmp_path):
    pods, dirs, _ = make(tmp_path)
    snapshot = write_snapshot(tmp_path, pods)
    runner = CliRunner()
    args = ["scan", "--once", "--snapshot", str(snapshot), "--node", NODE, "--cgroup-root",
            str(tmp_path / "fs" / "cgroup")]
    ok = runner.invoke(agent_cli, args)
    assert ok.exit_code == 0, ok.output
    assert "1 node, 4 pods: 4 match, 0 diverged, 0 unknown\n" in ok.stdout
    set_file(dirs[("burstable", "encoder")], "memory.max", str(8 << 30))
    bad = runner.invoke(agent_cli, [*args, "-o", "json"])
    assert bad.exit_code == 1
    doc = json.loads(bad.stdout)
    assert (doc["apiVersion"], doc["kind"], doc["metadata"]["name"]) == ("kubectl-dra.io/v1alpha1",
                                                                         "NodeEnforcementReport", NODE)
    assert doc["status"]["summary"] == {"pods": 4, "matched": 3, "diverged": 1, "unknown": 0, "claims": 0, "claimFindings": 0}
    assert {"observedAt", "cgroupVersion", "cgroupDriver", "runtime", "weightFormula", "kubeletDra"} <= set(doc["status"])
    table = runner.invoke(agent_cli, args)
    assert "burstable   encoder     memory.max" in table.stdout and "DRAAmountMissing" in table.stdout
    v1 = runner.invoke(agent_cli, ["scan", "--once", "--snapshot", str(snapshot), "--node", NODE,
                                   "--cgroup-root", str(tmp_path / "nowhere")])
    assert v1.exit_code == 3 and "does not exist" in v1.stderr  # an input error, as a missing --snapshot


def test_example_cluster_node_matches_its_own_prediction(tmp_path):
    """The example's pods on worker-gpu-1, written as the kubelet should, scan clean."""
    inventory = load_snapshot(EXAMPLE)
    pods = pods_on(inventory, "worker-gpu-1")
    assert len(pods) >= 3
    build_tree(tmp_path, pods, NodeOptions())
    report = scan("worker-gpu-1", inventory, CgroupFS(tmp_path / "fs" / "cgroup"), {})
    assert {p.verdict for p in report.status.pods} == {"Match"}, [p.divergences for p in report.status.pods]
    assert report.status.runtime == "containerd"


def test_processes_of_a_diverged_container_are_named(tmp_path):
    """psutil over a /proc: the report says what runs under the diverged value."""
    import os

    pods, dirs, fs = make(tmp_path)
    set_file(dirs[("burstable", "encoder")], "memory.max", str(8 << 30))
    set_file(dirs[("burstable", "encoder")], "cgroup.procs", f"{os.getpid()}\n999999999")
    report = scan(NODE, inventory_of(pods), fs, {}, proc_root="/proc")
    burstable = next(p for p in report.status.pods if p.name == "burstable")
    import psutil

    assert burstable.processes == {"encoder": [f"{os.getpid()} {psutil.Process().name()}", "999999999 <gone>"]}
    assert all(not p.processes for p in report.status.pods if p.name != "burstable")
