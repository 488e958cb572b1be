"""Bad input to the agent and to `verify` (issue 23): the same flags rejected the same way by both
programs (exit 2), no spin, no hang, a prompt exit on SIGTERM, and a cause named for exactly what
could not be read, never a neighbour's.

Trees are written as the kubelet and runtime write them (tests/cgroup_tree.py), then one file is
replaced by what a wrong mount or a hostile tree holds (a FIFO, a device), and read through the
real file reads, in a child process where a hang would otherwise stall the suite.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from agentpods import NODE, NODE_OBJECT, node_pods
from cgroup_tree import build_tree
from click.testing import CliRunner

from kubectl_dra.cgroups.cpumanager import CPUManagerStateError, data_checksum, parse_cpu_manager_state
from kubectl_dra.cgroups.options import NodeOptions
from node_agent.__main__ import cli as agent_cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster"
GPU1 = ROOT / "examples" / "nodes" / "worker-gpu-1"
AGENT = [sys.executable, "-m", "node_agent"]
PLUGIN = [sys.executable, "-c", "from kubectl_dra.cli import main; main()"]


def agent(*args, env=None):
    return CliRunner().invoke(agent_cli, list(args), env=env)


def tree(tmp_path):
    """A containerd node's tree for node_pods(), and a snapshot of those pods and their Node."""
    pods = node_pods()
    dirs = build_tree(tmp_path, pods, NodeOptions(hugepage_sizes=[2 << 20, 1 << 30]))
    snapshot = tmp_path / "snap.yaml"
    snapshot.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List",
                                        "items": [p.raw for p in pods] + [NODE_OBJECT]}))
    return dirs, str(snapshot), str(tmp_path / "fs" / "cgroup")


def run(command, timeout=30, **kwargs):
    """A child process: a hang fails the test after ``timeout`` instead of stalling the suite."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env, **kwargs)


# -- 1. the same node flags, the same types, exit 2 in both programs -------------------------------------

BAD_NODE_FLAGS = [
    ("--cpu-cfs-period", "abc", "not a duration: use one such as 100ms"),
    ("--cpu-cfs-period", "100", "not a duration: use one such as 100ms"),
    ("--cpu-cfs-period", "5000h", "out of range: the kubelet takes a CFS period from 1ms to 1s, inclusive"),
    ("--cpu-cfs-period", "0", "out of range: the kubelet takes a CFS period from 1ms to 1s, inclusive"),
    ("--cpu-cfs-period", "2s", "from 1ms to 1s, inclusive"),
    ("--memory-throttling-factor", "7", "a number in (0, 1]"),
    ("--memory-throttling-factor", "nan", "a number in (0, 1]"),
    ("--memory-throttling-factor", "1/0", "a number in (0, 1]"),
    ("--hugepage-sizes", "3Mi", "a page size is a power of two"),
    ("--hugepage-sizes", "2Mi,lots", "use sizes like 2Mi,1Gi"),
]


@pytest.mark.parametrize("flag,value,words", BAD_NODE_FLAGS)
def test_node_flag_values_are_usage_errors_in_both_programs(flag, value, words, dra):
    said = set()
    for result in (agent("scan", "--once", "--snapshot", str(EXAMPLE), "--node", "worker-gpu-1", flag, value),
                   agent("run", "--snapshot", str(EXAMPLE), "--node", "worker-gpu-1", flag, value),
                   dra("verify", "--snapshot", str(EXAMPLE), flag, value),
                   dra("explain", "pod", "embedder", "-n", "ml", "--snapshot", str(EXAMPLE), flag, value)):
        stderr = getattr(result, "stderr", None) or result.output
        assert result.exit_code == 2, (flag, value, stderr)
        assert "Traceback" not in stderr
        line = next(line for line in stderr.splitlines() if line.startswith("Error:"))
        assert f"Invalid value for '{flag}'" in line and words in line
        said.add(line)
    assert len(said) == 1  # the same words from both programs


@pytest.mark.parametrize("listen,words", [
    ("garbage", "use HOST:PORT"),
    ("127.0.0.1:99999", "a port from 0 to 65535"),
    ("127.0.0.1:-1", "a port from 0 to 65535"),
    ("127.0.0.1:", "use HOST:PORT"),
    ("bad host:80", "is not a host name or an IP address"),
    ("1.2.3.4:80", 'cannot listen on "1.2.3.4:80"'),  # well formed, but no interface here has it
])
def test_bad_listen_addresses(listen, words):
    result = agent("run", "--snapshot", str(EXAMPLE), "--node", "worker-gpu-1", "--no-publish", "--listen", listen)
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--listen'" in result.output and words in result.output
    assert "Traceback" not in result.output


def test_a_port_in_use_is_named():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        result = agent("run", "--snapshot", str(EXAMPLE), "--node", "worker-gpu-1", "--no-publish",
                       "--listen", f"127.0.0.1:{port}")
    assert result.exit_code == 2 and f'cannot listen on "127.0.0.1:{port}": Address already in use' in result.output


@pytest.mark.parametrize("interval", ["0", "-1", "0.5", "nan", "inf", "1e9", "soon"])
def test_intervals_that_would_spin_or_never_scan_are_refused(interval):
    """--interval 0 spun at 100% CPU; NaN and inf broke the wait."""
    result = agent("run", "--snapshot", str(EXAMPLE), "--node", "worker-gpu-1", "--no-publish",
                   "--listen", "127.0.0.1:0", f"--interval={interval}")
    assert result.exit_code == 2 and "Invalid value for '--interval'" in result.output, result.output


# -- 3. SIGTERM ------------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_the_service_exits_within_a_second_of_sigterm(sig, tmp_path):
    """The handler set one event while the loop waited on another: measured 57 s of a 60 s interval,
    so every rollout ended in the kubelet's SIGKILL. Now: well under a second, exit 0."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([*AGENT, "run", "--snapshot", str(EXAMPLE), "--node", "worker-gpu-1",
                                "--cgroup-root", str(GPU1 / "sys" / "fs" / "cgroup"), "--no-publish",
                                "--listen", f"127.0.0.1:{port}", "--interval", "60"],
                               cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # ready: the first scan is done, the loop now waits 60 s
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("the agent never became ready")
        started = time.monotonic()
        process.send_signal(sig)
        code = process.wait(timeout=30)
        took = time.monotonic() - started
    finally:
        if process.poll() is None:
            process.kill()
    assert code == 0 and took < 1.5, (code, took)
    assert b"Traceback" not in process.stderr.read()


def test_a_scan_cut_short_by_shutdown_publishes_nothing(tmp_path):
    """What was read after SIGTERM may be half a node: it never replaces the last report."""
    from kubectl_dra.kube.options import KubeOptions
    from node_agent.service import Agent, AgentConfig

    _, snapshot, root = tree(tmp_path)
    service = Agent(AgentConfig(node=NODE, cgroup_root=root, publish=False), KubeOptions(snapshot=snapshot))
    service.connect()
    first = service.scan_once()
    assert service.report is first
    service.shutdown()
    service.scan_once()
    assert service.report is first  # kept, not replaced by the interrupted scan


def test_the_daemonset_gives_the_agent_a_short_grace_period():
    daemonset = yaml.safe_load((ROOT / "manifests" / "agent" / "daemonset.yaml").read_text())
    assert daemonset["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] <= 10


# -- 4, 5, 12. what is in the tree is not always a file ----------------------------------------------------

def _swap_for_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _swap_for_zero(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")


@pytest.mark.parametrize("swap,kind", [(_swap_for_fifo, "a FIFO"), (_swap_for_zero, "a character device")])
def test_a_cgroup_file_that_is_no_file_is_unreadable_for_that_file_only(swap, kind, tmp_path):
    """A FIFO hung `scan --once` and `verify --cgroup-root` forever; now that one file is
    CgroupUnreadable and the container's other files are still compared."""
    dirs, snapshot, root = tree(tmp_path)
    container = dirs[("guaranteed", "engine")]
    swap(container / "cpu.weight")
    (container / "memory.max").write_text("1\n")  # a real divergence beside it must still be found
    for command in ([*AGENT, "scan", "--once"], [*PLUGIN, "verify"]):
        result = run([*command, "--snapshot", snapshot, "--node", NODE, "--cgroup-root", root, "-o", "json"])
        assert result.returncode == 1, (command, result.stderr)  # the divergence beside it decides
        doc = json.loads(result.stdout)
        report = doc if doc["kind"] == "NodeEnforcementReport" else doc["items"][0]
        pod = next(p for p in report["status"]["pods"] if p["name"] == "guaranteed")
        causes = {(d["container"], d["file"]): d for d in pod["divergences"]}
        assert causes[("engine", "cpu.weight")]["cause"] == "CgroupUnreadable"
        assert f"not a regular file ({kind})" in causes[("engine", "cpu.weight")]["message"]
        assert causes[("engine", "memory.max")]["cause"] == "Unexplained"
        assert not any(d["cause"] == "CgroupMissing" for d in pod["divergences"])


def test_an_unopenable_container_cgroup_is_unreadable_not_missing(tmp_path):
    """A cgroup that exists but cannot be opened is not "missing" (that says the runtime never made it)."""
    from kubectl_dra.nodescan.cgroupfs import CgroupFS

    dirs, _, root = tree(tmp_path)
    container = dirs[("guaranteed", "engine")]
    shutil.rmtree(container)
    container.write_text("")  # a file where the directory belongs: open(O_DIRECTORY) fails, ENOTDIR
    observed = CgroupFS(root).read(str(container.relative_to(root)), ["cpu.weight"])
    assert observed.error_cause == "CgroupUnreadable" and "cannot open cgroup" in observed.error
    shutil.rmtree(dirs[("burstable", None)])
    gone = CgroupFS(root).read(str(dirs[("burstable", None)].relative_to(root)), ["cpu.weight"])
    assert gone.error_cause == "CgroupMissing" and "does not exist" in gone.error


@pytest.mark.parametrize("state_file", ["cpu_manager_state", "dra_manager_state"])
def test_a_fifo_as_a_kubelet_state_file_is_said_not_waited_on(state_file, tmp_path):
    _, snapshot, root = tree(tmp_path)
    kubelet = tmp_path / "kubelet"
    kubelet.mkdir()
    os.mkfifo(kubelet / state_file)
    result = run([*AGENT, "scan", "--once", "--snapshot", snapshot, "--node", NODE, "--cgroup-root", root,
                  "--kubelet-root", str(kubelet)])
    assert result.returncode in (0, 1), result.stderr
    assert f"{kubelet / state_file}" in result.stderr and "not a regular file (a FIFO)" in result.stderr


# -- 10, 12. a root that is no cgroup v2 tree: one check, one message, exit 3 in both (issue 37 item 10:
# a path flag naming something missing or of the wrong kind is an input error, as a missing --snapshot is)

@pytest.mark.parametrize("make,words", [
    (lambda p: p / "nonexistent", "does not exist (mount the host's /sys/fs/cgroup there)"),
    (lambda p: (p / "v1" / "memory").mkdir(parents=True) or p / "v1", "this node runs cgroup v1"),
    (lambda p: (p / "hybrid" / "unified").mkdir(parents=True) or (p / "hybrid" / "unified" / "cgroup.controllers")
     .write_text("") or p / "hybrid", "cgroup v1 controllers (hybrid mode)"),
    (lambda p: p, "is not a cgroup v2 mount"),
])
def test_a_root_that_is_no_cgroup_v2_tree(make, words, tmp_path, dra):
    root = str(make(tmp_path))
    scanned = agent("scan", "--once", "--snapshot", str(EXAMPLE), "--node", "worker-gpu-1", "--cgroup-root", root)
    verified = dra("verify", "--snapshot", str(EXAMPLE), "--node", "worker-gpu-1", "--cgroup-root", root)
    assert scanned.exit_code == verified.exit_code == 3
    assert verified.stdout == ""  # no table of pods that were never looked at
    assert verified.stderr.count("\n") == 1 and verified.stderr.startswith(f"error: --cgroup-root {root}")
    assert words in verified.stderr
    assert verified.stderr in scanned.output
    assert "CgroupUnsupported" not in verified.stderr + scanned.output


def test_the_service_names_a_missing_root_as_missing(tmp_path):
    """The DaemonSet keeps running with a wrong mount and says so in its report: CgroupMissing for a
    path that is not there, CgroupUnsupported only for cgroup v1."""
    from kubectl_dra.kube.snapshot import load_snapshot
    from kubectl_dra.nodescan.cgroupfs import CgroupFS
    from kubectl_dra.nodescan.scan import scan

    inventory = load_snapshot(EXAMPLE)
    missing = scan("worker-gpu-1", inventory, CgroupFS(tmp_path / "nope"), {})
    assert {d.cause for p in missing.status.pods for d in p.divergences} == {"CgroupMissing"}
    (tmp_path / "v1" / "memory").mkdir(parents=True)
    v1 = scan("worker-gpu-1", inventory, CgroupFS(tmp_path / "v1"), {})
    assert {d.cause for p in v1.status.pods for d in p.divergences} == {"CgroupUnsupported"}


# -- 11. a pod on another node ------------------------------------------------------------------------------

def test_verify_pod_on_another_node_says_where_it_runs(dra):
    result = dra("verify", "embedder", "-n", "ml", "--snapshot", str(EXAMPLE), "--node", "worker-cpu-1")
    assert result.exit_code == 3 and result.stdout == ""
    assert result.stderr.strip() == ('error: pod "embedder" runs on node worker-gpu-1, not on worker-cpu-1: '
                                     "drop --node, or name that node")
    assert dra("verify", "embedder", "-n", "ml", "--snapshot", str(EXAMPLE), "--node", "worker-gpu-1").exit_code == 1


# -- 13. cpu_manager_state as the kubelet checks it ---------------------------------------------------------

def test_data_checksum_matches_the_kubelets_vector():
    """state_checkpoint_test.go v1.37.2 "Restore default CPU set": this data has dataChecksum 657950972."""
    assert data_checksum('{"policyName":"none","defaultCPUSet":"4-6"}') == 657950972


def _state(data: dict, checksum=None) -> str:
    text = json.dumps(data, separators=(",", ":"))
    return json.dumps({"policyName": "none", "defaultCpuSet": "", "checksum": 1, "data": text,
                       "dataChecksum": data_checksum(text) if checksum is None else checksum})


@pytest.mark.parametrize("text,words", [
    (_state({"policyName": "static", "defaultCpuSet": "0-7"}, checksum=1234), "does not match data"),
    (json.dumps({"policyName": "none", "data": '{"policyName":"static"}'}), "without dataChecksum"),
    (_state({"policyName": "static", "defaultCpuSet": "banana"}), "defaultCpuSet 'banana' is not a cpuset"),
    (_state({"policyName": "static", "defaultCpuSet": "0-3", "entries": {"u": {"app": "5-2"}}}),
     "entries[u][app] '5-2' is not a cpuset"),
    (json.dumps({"policyName": "static", "defaultCpuSet": "x,y", "checksum": 1}), "is not a cpuset"),
])
def test_a_corrupt_cpu_manager_state_is_refused(text, words):
    with pytest.raises(CPUManagerStateError, match=words.replace("[", r"\[").replace("]", r"\]")):
        parse_cpu_manager_state(text)


def test_a_corrupt_cpu_manager_state_is_said_and_no_policy_is_taken_from_it(tmp_path):
    """It was read as "static" without a word; now the scan says the file is corrupt and the
    policy comes from elsewhere (the tree, or the default), as its source says."""
    _, snapshot, root = tree(tmp_path)
    kubelet = tmp_path / "kubelet"
    kubelet.mkdir()
    (kubelet / "cpu_manager_state").write_text(_state({"policyName": "static", "defaultCpuSet": "0-7"}, checksum=99))
    result = agent("scan", "--once", "--snapshot", snapshot, "--node", NODE, "--cgroup-root", root,
                   "--kubelet-root", str(kubelet), "-o", "json")
    assert "dataChecksum 99 does not match data" in result.stderr
    doc = json.loads(result.stdout)
    assert "cpu_manager_state" not in doc["status"]["nodeOptionsSource"]["cpuManagerPolicy"]


# -- 16. verify's document, its reasons, an unreadable CDI directory ----------------------------------------

def test_verify_json_is_one_result_document_with_problems(tmp_path, dra):
    snapshot = tmp_path / "snap"
    shutil.copytree(EXAMPLE, snapshot)
    (snapshot / "broken.yaml").write_text("kind: Pod\nmetadata: [\n")
    result = dra("verify", "--snapshot", str(snapshot), "-o", "json")
    doc = result.json()
    assert (doc["apiVersion"], doc["kind"]) == ("kubectl-dra.io/v1alpha1", "NodeEnforcementReportList")
    # a divergence in the example outranks "partial" (README: 1 before 4)
    assert any("broken.yaml" in p for p in doc["problems"]) and result.exit_code == 1


def test_verify_says_why_a_node_could_not_be_checked_on_stderr(tmp_path, dra):
    """A report from an agent on a cgroup v1 node carries its reason: a message for stderr, not a
    table row on stdout."""
    snapshot = tmp_path / "snap"
    shutil.copytree(EXAMPLE, snapshot)
    reports = [p for p in snapshot.rglob("*.yaml") if "NodeEnforcementReport" in p.read_text()]
    assert reports
    for path in reports:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        for doc in docs:
            for item in doc.get("items", [doc]):
                if item.get("kind") == "NodeEnforcementReport":
                    item["status"]["message"] = "this node runs cgroup v1; only cgroup v2 is supported"
        path.write_text(yaml.safe_dump_all(docs))
    result = dra("verify", "--snapshot", str(snapshot))
    assert "cgroup v1" not in result.stdout
    assert "warning: worker-gpu-1: this node runs cgroup v1; only cgroup v2 is supported" in result.stderr


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to drop to nobody")
def test_an_unreadable_cdi_directory_keeps_the_cgroup_results(tmp_path):
    """It was a usage error (click's "Path is not readable") that lost every result; the README
    says: those checks are not made, nothing is concluded from them."""
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="kdra-cdi-"))  # pytest's tmp_path is 0700 root: nobody cannot enter it
    base.chmod(0o755)
    copy = base / "example"
    shutil.copytree(ROOT / "examples", copy)
    cdi = base / "cdi"
    cdi.mkdir()
    cdi.chmod(0)
    for path in copy.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    node = copy / "nodes" / "worker-gpu-1"
    result = run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", *AGENT, "scan", "--once",
                  "--snapshot", str(copy / "cluster"), "--node", "worker-gpu-1",
                  "--cgroup-root", str(node / "sys" / "fs" / "cgroup"),
                  "--kubelet-root", str(node / "var" / "lib" / "kubelet"), "--cdi-dir", str(cdi)])
    assert f"{cdi}: permission denied" in result.stderr and "CDI IDs are not checked" in result.stderr
    shutil.rmtree(base)
    assert "1 node, 5 pods: 4 match, 1 diverged" in result.stdout and result.returncode == 1


def test_a_cgroup_root_that_cannot_be_entered_is_said(tmp_path, dra):
    """Path.exists() raises on EACCES: this was a traceback. Now: the root is unreadable, exit 2."""
    from kubectl_dra.nodescan.cgroupfs import CgroupFS

    class Denied(CgroupFS):
        def _stat(self, path):
            raise PermissionError(13, "Permission denied")

    assert Denied(tmp_path).unusable() == ("CgroupUnreadable", f"{tmp_path}: permission denied")


# -- found by fuzzing (tests/fuzz), kept as fixed cases ------------------------------------------------------

@pytest.mark.parametrize("text,cpus", [
    ("²", None),  # str.isdigit() says yes, int() says no: it was a ValueError
    ("0-18446744073709551616", None),  # range(...) of 2^64 CPUs: memory without bound
    ("0-3,8", frozenset({0, 1, 2, 3, 8})),
    ("65535", frozenset({65535})),
    ("65536", None),
])
def test_cpusets_that_are_no_cpuset(text, cpus):
    from kubectl_dra.cgroups.cpumanager import parse_cpuset

    assert parse_cpuset(text) == cpus


def test_a_cgroup_value_with_unicode_digits_is_unreadable_not_a_crash(tmp_path):
    dirs, snapshot, root = tree(tmp_path)
    (dirs[("guaranteed", "engine")] / "memory.max").write_text("²\n")
    result = agent("scan", "--once", "--snapshot", snapshot, "--node", NODE, "--cgroup-root", root)
    assert result.exit_code == 4 and "Traceback" not in result.output
    assert "does not hold a memory.max value" in result.stderr


def test_an_empty_node_flag_value_is_a_usage_error():
    result = agent("scan", "--once", "--snapshot", str(EXAMPLE), "--node", "worker-gpu-1", "--cpu-cfs-period", "")
    assert result.exit_code == 2 and "Invalid value for '--cpu-cfs-period'" in result.stderr


def test_a_report_with_a_bad_field_names_its_file(tmp_path, dra):
    snapshot = tmp_path / "snap"
    shutil.copytree(EXAMPLE, snapshot)
    path = snapshot / "reports" / "worker-gpu-1.yaml"
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    report = next(i for d in docs for i in d.get("items", [d]) if i.get("kind") == "NodeEnforcementReport")
    report["status"]["claims"][0]["pods"] = [None]
    path.write_text(yaml.safe_dump_all(docs))
    result = dra("verify", "--snapshot", str(snapshot))
    assert result.exit_code == 4
    assert (f"error: {path}: NodeEnforcementReport worker-gpu-1: status.claims[0].pods[0]: Input should be a "
            "valid string") in result.stderr
