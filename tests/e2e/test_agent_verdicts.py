"""Verdicts a node can trust: the static CPU manager (from cpu_manager_state or the tree),
containerd's hugetlb default, and exit codes that say what was and was not checked.

Every tree is written as the kubelet and runtime would, then scanned through the real file
reads; state files are written in the kubelet's JSON shapes by the test itself.
"""

from __future__ import annotations

import json
import shutil

import yaml
from agentpods import NODE, NODE_OBJECT, agent_pod, both, node_pods
from cgroup_tree import build_tree, set_file
from click.testing import CliRunner
from podspec import ctr

from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.model.inventory import Inventory
from node_agent.__main__ import cli as agent_cli
from kubectl_dra.nodescan.cgroupfs import CgroupFS
from kubectl_dra.nodescan.kubeletstate import read_kubelet_state
from kubectl_dra.nodescan.scan import scan

PINNED_UID = "5b1c0e2a-7d3f-4c1e-9a8b-2f6d4e1c0a99"


def pinned_pod():
    """Worked example A (docs/kubernetes/node-state.md §2.8): Guaranteed, app 2 CPUs (exclusive), side 500m
    (shared)."""
    return agent_pod("pinned", [ctr("app", both(2, "1Gi"), both(2, "1Gi")),
                                ctr("side", both("500m", "256Mi"), both("500m", "256Mi"))], qos_uid=PINNED_UID)


def inventory_of(pods):
    inv = Inventory()
    inv.extend(pods)
    return inv


def by_name(report):
    return {p.name: p for p in report.status.pods}


def legacy_state(policy="static", entries=None):
    return {"policyName": policy, "defaultCpuSet": "0,3-7",
            "entries": entries if entries is not None else {PINNED_UID: {"app": "1-2"}}, "checksum": 1467113090}


def write_state(directory, document):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "cpu_manager_state").write_text(json.dumps(document))
    return read_kubelet_state(str(directory))


def static_tree(tmp_path, pods):
    options = NodeOptions(cpu_manager_policy="static", hugepage_sizes=[2 << 20, 1 << 30], runtime_hugetlb=True)
    return build_tree(tmp_path / "sys", pods, options, exclusive={PINNED_UID: {"app": "1-2"}}, cpusets=True)


def test_static_policy_and_assignments_from_cpu_manager_state(tmp_path):
    pods = [pinned_pod()]
    dirs = static_tree(tmp_path, pods)
    assert (dirs[("pinned", None)] / "cpu.max").read_text() == "max 100000\n"  # the pod: exclusive CPUs
    assert (dirs[("pinned", "app")] / "cpu.max").read_text() == "max 100000\n"
    assert (dirs[("pinned", "side")] / "cpu.max").read_text() == "50000 100000\n"  # shared: keeps its quota
    fs = CgroupFS(tmp_path / "sys" / "fs" / "cgroup")
    kubelet = write_state(tmp_path / "kubelet", legacy_state())
    report = scan(NODE, inventory_of(pods), fs, {}, kubelet=kubelet)
    verdict = by_name(report)["pinned"]
    assert verdict.verdict == "Match" and verdict.divergences == [] and verdict.exclusive_cpus == {"app": "1-2"}
    assert report.status.node_options["cpuManagerPolicy"] == "static"
    assert report.status.node_options_source["cpuManagerPolicy"] == \
        f"{tmp_path / 'kubelet' / 'cpu_manager_state'} (legacy form)"


def test_the_1_37_data_form_wins_over_the_legacy_fields(tmp_path):
    pods = [pinned_pod()]
    static_tree(tmp_path, pods)
    fs = CgroupFS(tmp_path / "sys" / "fs" / "cgroup")
    data = {"policyName": "static", "defaultCpuSet": "0,3-7", "entries": {PINNED_UID: {"app": "1-2"}},
            "podEntries": {}, "baselines": {}}
    # the legacy checksum is not verifiable (a Go struct dump); dataChecksum is, and must match
    from kubectl_dra.cgroups.cpumanager import data_checksum

    document = {"policyName": "none", "defaultCpuSet": "", "checksum": 1, "data": json.dumps(data),
                "dataChecksum": data_checksum(json.dumps(data))}
    report = scan(NODE, inventory_of(pods), fs, {}, kubelet=write_state(tmp_path / "kubelet", document))
    assert by_name(report)["pinned"].verdict == "Match"
    assert report.status.node_options_source["cpuManagerPolicy"].endswith("(data form)")


def test_state_that_disagrees_with_the_tree_is_a_divergence(tmp_path):
    """The kubelet's state says app is exclusive, yet its cgroup carries a quota."""
    pods = [pinned_pod()]
    dirs = static_tree(tmp_path, pods)
    set_file(dirs[("pinned", "app")], "cpu.max", "200000 100000")
    fs = CgroupFS(tmp_path / "sys" / "fs" / "cgroup")
    report = scan(NODE, inventory_of(pods), fs, {}, kubelet=write_state(tmp_path / "kubelet", legacy_state()))
    verdict = by_name(report)["pinned"]
    assert verdict.verdict == "Diverged"
    assert [(d.container, d.file, d.expected, d.observed) for d in verdict.divergences] == [
        ("app", "cpu.max", "max 100000", "200000 100000")]


def test_policy_detected_from_the_tree_without_the_state_file(tmp_path):
    pods = [pinned_pod()]
    static_tree(tmp_path, pods)
    fs = CgroupFS(tmp_path / "sys" / "fs" / "cgroup")
    report = scan(NODE, inventory_of(pods), fs, {}, kubelet=read_kubelet_state(str(tmp_path / "no-kubelet")))
    assert by_name(report)["pinned"].verdict == "Match"
    assert (report.status.node_options["cpuManagerPolicy"], report.status.node_options_source["cpuManagerPolicy"]) == (
        "static", "cgroup tree")
    # the same pod under the none policy: quotas everywhere, detected as none
    none_tree = build_tree(tmp_path / "none", pods, NodeOptions(hugepage_sizes=[2 << 20, 1 << 30], runtime_hugetlb=True))
    assert (none_tree[("pinned", "app")] / "cpu.max").read_text() == "200000 100000\n"
    report = scan(NODE, inventory_of(pods), CgroupFS(tmp_path / "none" / "fs" / "cgroup"), {})
    assert by_name(report)["pinned"].verdict == "Match"
    assert report.status.node_options_source["cpuManagerPolicy"] == "cgroup tree"
    # told static by a flag while the tree says none: the flag is trusted, the values diverge
    flagged = scan(NODE, inventory_of(pods), CgroupFS(tmp_path / "none" / "fs" / "cgroup"),
                   {"cpu_manager_policy": "static"})
    assert by_name(flagged)["pinned"].verdict == "Diverged"


def test_unreadable_or_garbage_state_is_said_not_guessed(tmp_path):
    kubelet = tmp_path / "kubelet"
    kubelet.mkdir()
    (kubelet / "cpu_manager_state").write_text("{not json")
    state = read_kubelet_state(str(kubelet))
    assert state.cpu_manager is None and "not a CPU manager checkpoint" in state.problems[0]
    assert read_kubelet_state(str(tmp_path / "absent")).problems == []  # not mounted: nothing to say
    (kubelet / "cpu_manager_state").write_text(json.dumps(legacy_state()))
    (kubelet / "cpu_manager_state").chmod(0)
    state = read_kubelet_state(str(kubelet))
    import os

    if os.geteuid() != 0:  # root reads it anyway
        assert "permission denied" in state.problems[0] and "manifests/kubelet-state" in state.problems[0]


def containerd_default_tree(tmp_path):
    pods = node_pods()
    options = NodeOptions(hugepage_sizes=[2 << 20, 1 << 30])  # containerd, disable_hugetlb_controller default
    return pods, build_tree(tmp_path, pods, options), CgroupFS(tmp_path / "fs" / "cgroup")


def test_containerd_hugetlb_default_is_info_and_keeps_the_match(tmp_path):
    pods, dirs, fs = containerd_default_tree(tmp_path)
    assert (dirs[("guaranteed", "engine")] / "hugetlb.2MB.max").read_text() == "max\n"
    assert (dirs[("guaranteed", None)] / "hugetlb.2MB.max").read_text() == str(4 << 20) + "\n"  # the kubelet's own
    report = scan(NODE, inventory_of(pods), fs, {})
    assert {p.verdict for p in report.status.pods} == {"Match"}
    assert (report.status.node_options["runtimeHugetlb"], report.status.node_options_source["runtimeHugetlb"]) == (
        False, "cgroup tree")
    rows = [(p.name, d.container, d.file, d.expected, d.observed, d.cause, d.severity)
            for p in report.status.pods for d in p.divergences]
    # only where the kubelet asked for pages: files it sets to 0 are bounded by the pod's 0 anyway
    assert rows == [("guaranteed", "engine", "hugetlb.2MB.max", str(4 << 20), "max", "RuntimeHugetlbDisabled", "info"),
                    ("guaranteed", "engine", "hugetlb.2MB.rsvd.max", str(4 << 20), "max", "RuntimeHugetlbDisabled",
                     "info")]


def test_a_number_elsewhere_proves_the_runtime_applies_them(tmp_path):
    pods, dirs, fs = containerd_default_tree(tmp_path)
    set_file(dirs[("burstable", "encoder")], "hugetlb.1GB.max", "0")  # this runtime does write container limits
    report = scan(NODE, inventory_of(pods), fs, {})
    assert report.status.node_options["runtimeHugetlb"] is True
    assert by_name(report)["guaranteed"].verdict == "Diverged"
    forced = scan(NODE, inventory_of(pods), fs, {"runtime_hugetlb": True})
    engine = [d for d in by_name(forced)["guaranteed"].divergences if d.container == "engine"]
    assert engine and all(d.cause == "Unexplained" and "applies container hugepage limits" in d.message for d in engine)
    assert by_name(forced)["guaranteed"].verdict == "Diverged"


def test_some_other_container_hugetlb_number_stays_a_divergence(tmp_path):
    pods, dirs, fs = containerd_default_tree(tmp_path)
    set_file(dirs[("guaranteed", "engine")], "hugetlb.2MB.max", str(2 << 20))  # half of what the kubelet sent
    report = scan(NODE, inventory_of(pods), fs, {"runtime_hugetlb": False})
    assert by_name(report)["guaranteed"].verdict == "Diverged"
    assert ("engine", "hugetlb.2MB.max", "Unexplained") in [(d.container, d.file, d.cause)
                                                             for d in by_name(report)["guaranteed"].divergences]


def test_a_kubelet_restarted_without_dra_keeps_old_cgroups_and_starves_new_containers(tmp_path):
    """What a real v1.37.2 kubelet did when restarted with DRANodeAllocatableResources off (tests/node):
    status.declaredFeatures lost the feature, the pod cgroup and running containers kept the DRA amounts
    written at creation, and a container that restarted got limits without them. The verdict holds the
    node to what the scheduler recorded: the old cgroups match, the restarted container is
    KubeletDRADisabled (never a false Unexplained on the values that are right)."""
    from kubectl_dra.model.registry import parse_object

    pods = node_pods()
    options = NodeOptions(hugepage_sizes=[2 << 20, 1 << 30])
    dirs = build_tree(tmp_path, pods, options)
    without = build_tree(tmp_path / "no-dra", pods, options.model_copy(update={"kubelet_dra": False}))
    restarted = dirs[("burstable", "encoder")]
    for name in ("cpu.max", "memory.max"):
        set_file(restarted, name, (without[("burstable", "encoder")] / name).read_text().strip())
    node = parse_object({**NODE_OBJECT, "status": {**NODE_OBJECT["status"], "declaredFeatures": ["Other"]}})
    inventory = inventory_of([*pods, node])
    report = scan(NODE, inventory, CgroupFS(tmp_path / "fs" / "cgroup"), {})
    assert report.status.kubelet_dra is False and report.status.node_options["kubeletDra"] is False
    verdicts = by_name(report)
    assert {name: v.verdict for name, v in verdicts.items()} == {
        "guaranteed": "Match", "burstable": "Diverged", "besteffort": "Match", "pod-level": "Match"}
    rows = [(d.scope, d.container, d.file, d.cause) for d in verdicts["burstable"].divergences]
    assert rows == [("container", "encoder", "memory.max", "KubeletDRADisabled")]  # encoder's cpu has no DRA
    message = verdicts["burstable"].divergences[0].message
    assert "status.declaredFeatures lacks DRANodeAllocatableResources" in message


# ---- exit codes and node names through the CLIs -----------------------------------------------

def write_snapshot(tmp_path, pods, *, node=True):
    items = [p.raw for p in pods] + ([NODE_OBJECT] if node else [])
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


def agent(*args, env=None):
    result = CliRunner().invoke(agent_cli, list(args), env=env)
    return result


def test_scan_once_refuses_a_node_that_is_not_a_node(tmp_path):
    pods, _, _ = containerd_default_tree(tmp_path)
    snapshot, root = write_snapshot(tmp_path, pods), str(tmp_path / "fs" / "cgroup")
    wrong = agent("scan", "--once", "--snapshot", snapshot, "--node", "worker-9", "--cgroup-root", root)
    assert wrong.exit_code == 3 and 'node "worker-9" not found' in wrong.stderr and wrong.stdout == ""
    # no --node: NODE_NAME wins; this machine's hostname is no Node, so without it: ask for --node
    named = agent("scan", "--once", "--snapshot", snapshot, "--cgroup-root", root, env={"NODE_NAME": NODE})
    assert named.exit_code == 0 and "1 node, 4 pods: 4 match" in named.stdout
    host = agent("scan", "--once", "--snapshot", snapshot, "--cgroup-root", root, env={"NODE_NAME": ""})
    assert host.exit_code == 3 and "is not a Node" in host.stderr and "pass --node NAME" in host.stderr


def test_a_node_without_pods_checks_nothing_and_says_so(tmp_path):
    (tmp_path / "fs" / "cgroup").mkdir(parents=True)
    (tmp_path / "fs" / "cgroup" / "cgroup.controllers").write_text("cpu memory hugetlb\n")
    snapshot = write_snapshot(tmp_path, [])
    result = agent("scan", "--once", "--snapshot", snapshot, "--node", NODE, "--cgroup-root",
                   str(tmp_path / "fs" / "cgroup"))
    assert result.exit_code == 0 and "1 node: no pods to check (nothing was verified)" in result.stdout


def test_unreadable_pods_are_not_success(tmp_path, dra):
    pods, dirs, _ = containerd_default_tree(tmp_path)
    shutil.rmtree(dirs[("besteffort", None)])
    snapshot, root = write_snapshot(tmp_path, pods), str(tmp_path / "fs" / "cgroup")
    scanned = agent("scan", "--once", "--snapshot", snapshot, "--node", NODE, "--cgroup-root", root)
    # partial, as verify says it (exit 4), and the pod named with its cause on stderr, not only in a row
    assert scanned.exit_code == 4 and "1 node, 4 pods: 3 match, 0 diverged, 1 unknown" in scanned.stdout
    assert "1 pod not verified: the result is partial: ml/besteffort (CgroupMissing: cgroup" in scanned.stderr
    verified = dra("verify", "--snapshot", snapshot, "--node", NODE, "--cgroup-root", root)
    assert verified.exit_code == 4 and "3 match, 0 diverged, 1 unknown" in verified.stdout
    assert "1 pod was not verified" in verified.stderr and "ml/besteffort (CgroupMissing" in verified.stderr
    set_file(dirs[("burstable", "encoder")], "memory.max", str(8 << 30))  # a divergence beats "partial"
    assert agent("scan", "--once", "--snapshot", snapshot, "--node", NODE, "--cgroup-root", root).exit_code == 1
    assert dra("verify", "--snapshot", snapshot, "--node", NODE, "--cgroup-root", root).exit_code == 1


def test_verify_names_what_does_not_exist(tmp_path, dra):
    pods, _, _ = containerd_default_tree(tmp_path)
    snapshot, root = write_snapshot(tmp_path, pods), str(tmp_path / "fs" / "cgroup")
    local = dra("verify", "--snapshot", snapshot, "--node", "worker-9", "--cgroup-root", root)
    assert local.exit_code == 3 and 'node "worker-9" not found' in local.stderr
    nameless = dra("verify", "--snapshot", snapshot, "--cgroup-root", root, env={"NODE_NAME": ""})
    assert nameless.exit_code == 3 and "pass --node NAME" in nameless.stderr
    kubelet, cdi = tmp_path / "kubelet", tmp_path / "cdi"
    pod = dra("verify", "nope", "-n", "ml", "--snapshot", snapshot, "--node", NODE, "--cgroup-root", root,
              "--kubelet-root", str(kubelet), "--cdi-dir", str(cdi))
    *said, last = pod.stderr.splitlines()
    assert pod.exit_code == 3 and last == f'error: pod "nope" not found in namespace ml on node {NODE}'
    # before it, as dra-node-agent scan --once says them: the node DRA sources that are not there
    assert said == [f"warning: {kubelet}/dra_manager_state: not there (not mounted, or the kubelet never prepared a "
                    f"claim)", f"warning: {cdi}: no CDI spec directory there (not mounted)"]
    fine = dra("verify", "burstable", "-n", "ml", "--snapshot", snapshot, "--node", NODE, "--cgroup-root", root)
    assert fine.exit_code == 0 and "1 node, 1 pod: 1 match, 0 diverged, 0 unknown" in fine.stdout
    assert "runtime hugetlb off (cgroup tree)" in fine.stdout  # every option says where it came from


def test_verify_trusts_a_report_made_with_the_kubelets_assignments(tmp_path):
    """The cross-check re-predicts with the cpusets the agent used, so a current verdict is not stale."""
    from kubectl_dra.verify.crosscheck import crosscheck

    pods = [pinned_pod()]
    static_tree(tmp_path, pods)
    fs = CgroupFS(tmp_path / "sys" / "fs" / "cgroup")
    report = scan(NODE, inventory_of(pods), fs, {}, kubelet=write_state(tmp_path / "kubelet", legacy_state()))
    inventory = inventory_of(pods)
    inventory.read_kinds.add("Pod")
    crosscheck(report, inventory)
    assert [p.stale for p in report.status.pods] == [False]
    detected = scan(NODE, inventory_of(pods), fs, {})  # policy from the tree: the rule, no cpusets
    crosscheck(detected, inventory)
    assert [p.stale for p in detected.status.pods] == [False]
    # admitted before the node switched to static: the state pins nothing, so quotas stay
    quota_tree = build_tree(tmp_path / "before", pods, NodeOptions(hugepage_sizes=[2 << 20, 1 << 30], runtime_hugetlb=True))
    assert (quota_tree[("pinned", "app")] / "cpu.max").read_text() == "200000 100000\n"
    unpinned = scan(NODE, inventory_of(pods), CgroupFS(tmp_path / "before" / "fs" / "cgroup"), {},
                    kubelet=write_state(tmp_path / "kubelet2", legacy_state(entries={})))
    assert [p.verdict for p in unpinned.status.pods] == ["Match"]
    crosscheck(unpinned, inventory)
    assert [p.stale for p in unpinned.status.pods] == [False]


def test_the_service_cache_follows_the_options_and_the_pod(tmp_path):
    """The service keeps predictions between scans by pod UID, resourceVersion and options: a
    rescan must give the verdicts a fresh scan gives, also when the options detected from the tree
    differ from the first guess (static policy) or between trees, and a changed pod is predicted again."""
    def pinned(rv):
        return agent_pod("pinned", [ctr("app", both(2, "1Gi"), both(2, "1Gi")),
                                    ctr("side", both("500m", "256Mi"), both("500m", "256Mi"))],
                         qos_uid=PINNED_UID, resource_version=rv)

    static_tree(tmp_path, [pinned("1")])
    build_tree(tmp_path / "none", [pinned("1")], NodeOptions(hugepage_sizes=[2 << 20, 1 << 30], runtime_hugetlb=True))
    static_fs, none_fs = CgroupFS(tmp_path / "sys" / "fs" / "cgroup"), CgroupFS(tmp_path / "none" / "fs" / "cgroup")
    cache: dict = {}
    for fs, policy in [(static_fs, "static"), (static_fs, "static"), (none_fs, "none"), (static_fs, "static")]:
        cached = scan(NODE, inventory_of([pinned("1")]), fs, {}, cache=cache)
        fresh = scan(NODE, inventory_of([pinned("1")]), fs, {})
        assert by_name(cached)["pinned"].verdict == "Match", policy
        assert cached.status.node_options["cpuManagerPolicy"] == policy
        assert by_name(cached)["pinned"].expected_hash == by_name(fresh)["pinned"].expected_hash
    assert cache and all(key[1] == "1" for key in cache)
    # the pod changed (a new resourceVersion): its old predictions are dropped, the new one kept
    scan(NODE, inventory_of([pinned("2")]), static_fs, {}, cache=cache)
    assert cache and all(key[1] == "2" for key in cache)
    # told static by a flag while the tree says none: the cached static prediction diverges, as a fresh one does
    flagged = scan(NODE, inventory_of([pinned("2")]), none_fs, {"cpu_manager_policy": "static"}, cache=cache)
    assert by_name(flagged)["pinned"].verdict == "Diverged"


def test_a_rescan_reuses_a_match_only_while_every_file_reads_the_same(tmp_path):
    """The service does not compare again a pod whose prediction and files are those of a scan that
    found nothing; any file that changes (or disappears) is compared again, as a fresh scan would."""
    pods = [agent_pod("pinned", [ctr("app", both(2, "1Gi"), both(2, "1Gi")),
                                 ctr("side", both("500m", "256Mi"), both("500m", "256Mi"))],
                      qos_uid=PINNED_UID, resource_version="7")]
    dirs = static_tree(tmp_path, pods)
    fs = CgroupFS(tmp_path / "sys" / "fs" / "cgroup")
    cache: dict = {}

    def both_ways():
        cached = by_name(scan(NODE, inventory_of(pods), fs, {}, cache=cache))["pinned"]
        fresh = by_name(scan(NODE, inventory_of(pods), fs, {}))["pinned"]
        assert cached == fresh
        return cached

    assert both_ways().verdict == "Match" and any(key[-1] == "matched" for key in cache)
    assert both_ways().verdict == "Match"  # from the cache
    original = (dirs[("pinned", "side")] / "memory.max").read_text()
    set_file(dirs[("pinned", "side")], "memory.max", str(128 << 20))
    changed = both_ways()
    assert changed.verdict == "Diverged" and [d.file for d in changed.divergences] == ["memory.max"]
    set_file(dirs[("pinned", "side")], "memory.max", original.strip())
    assert both_ways().verdict == "Match"
    (dirs[("pinned", "app")] / "cpu.weight").unlink()
    assert both_ways().divergences[0].cause == "CgroupMissing"
